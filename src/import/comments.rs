//! The PGN comment of each position of a game, as CQL 6.2 reads them
//! (`originalcomment`, `hascomment`, the `hhdb` markers).
//!
//! CQL 6.2 keeps one comment per position: the comment after the move that
//! leads to it (for the initial position, the comment before the first
//! move); of several comments in a row the last one wins, and a comment at
//! the start of a variation, before its first move, belongs to no
//! position. Its text is trimmed and each run of white space becomes one
//! space; an empty one (`{}`, `{ }`) is no comment, so a position whose
//! last comment is empty has none (CQL 6.2 oracle). Moves are numbered as the importer numbered them
//! (`ParsedGame::san_index`), so a comment lands on the position the store
//! holds for its move.

use std::io;
use std::ops::ControlFlow;

use pgn_reader::{RawComment, RawTag, Reader, SanPlus, Skip, Visitor};

/// The comment of each position of the game in `text` (one stored game's
/// text), indexed by store order; `None` where a position has none. Empty
/// when the text holds no game the importer reads.
pub fn position_comments(text: &[u8]) -> Vec<Option<String>> {
    let Ok(parsed) = super::parse_game(text) else {
        return Vec::new();
    };
    let mut fixed = text.to_vec();
    super::cql_lines(&mut fixed);
    let mut reader = Reader::build(io::Cursor::new(&fixed[..]))
        .set_supported_tag_line_length(fixed.len().clamp(255, 1 << 20))
        .set_supported_comment_length(fixed.len().clamp(255, 1 << 20))
        .finish();
    let mut visitor = CommentVisitor {
        san_index: &parsed.san_index,
        out: vec![None; parsed.positions.len()],
    };
    match reader.read_game(&mut visitor) {
        Ok(Some(())) => visitor.out,
        _ => Vec::new(),
    }
}

/// Collapses white space runs to one space and trims the ends.
fn normalize(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .split_ascii_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

struct CommentVisitor<'a> {
    san_index: &'a [Option<u32>],
    out: Vec<Option<String>>,
}

/// Where the reader is in the movetext.
struct Line {
    /// Ordinal (0-based, text order) of the last move read.
    moves: usize,
    /// The position the next comment belongs to: the last move's of the
    /// current line, the initial one before the first move, none at the
    /// start of a variation.
    current: Option<u32>,
    /// `current` of the enclosing lines.
    stack: Vec<Option<u32>>,
    /// The comment read so far (a long comment comes in parts).
    partial: Vec<u8>,
}

impl Visitor for CommentVisitor<'_> {
    type Tags = ();
    type Movetext = Line;
    type Output = ();

    fn begin_tags(&mut self) -> ControlFlow<(), ()> {
        ControlFlow::Continue(())
    }

    fn tag(&mut self, _: &mut (), _: &[u8], _: RawTag<'_>) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, _: ()) -> ControlFlow<(), Line> {
        ControlFlow::Continue(Line {
            moves: 0,
            current: Some(0),
            stack: Vec::new(),
            partial: Vec::new(),
        })
    }

    fn san(&mut self, line: &mut Line, _: SanPlus) -> ControlFlow<()> {
        line.current = self.san_index.get(line.moves).copied().flatten();
        line.moves += 1;
        ControlFlow::Continue(())
    }

    fn partial_comment(&mut self, line: &mut Line, comment: RawComment<'_>) -> ControlFlow<()> {
        line.partial.extend_from_slice(comment.as_bytes());
        ControlFlow::Continue(())
    }

    fn comment(&mut self, line: &mut Line, comment: RawComment<'_>) -> ControlFlow<()> {
        line.partial.extend_from_slice(comment.as_bytes());
        let text = normalize(&line.partial);
        line.partial.clear();
        if let Some(slot) = line.current.and_then(|p| self.out.get_mut(p as usize)) {
            // An empty last comment leaves the position without one.
            *slot = (!text.is_empty()).then_some(text);
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, line: &mut Line) -> ControlFlow<(), Skip> {
        line.stack.push(line.current);
        line.current = None;
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, line: &mut Line) -> ControlFlow<()> {
        if let Some(c) = line.stack.pop() {
            line.current = c;
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, _: Line) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_comment_of_a_move_wins_and_variation_starts_have_none() {
        let text = b"[Event \"a\"]\n[Result \"*\"]\n\n{start} 1. e4 {A} {A2\n  x} e5 ({B} 1... c5 {C}) 2. Nf3 {E} *\n";
        let c = position_comments(text);
        assert_eq!(
            c,
            vec![
                Some("start".to_string()),
                Some("A2 x".to_string()),
                None,
                Some("C".to_string()),
                Some("E".to_string()),
            ]
        );
    }

    #[test]
    fn an_empty_last_comment_is_none() {
        let text =
            b"[Event \"a\"]\n[Result \"*\"]\n\n{x} {} 1. e4 {y} { } e5 {} 2. Nf3 {  } {z} *\n";
        let c = position_comments(text);
        assert_eq!(c, vec![None, None, None, Some("z".to_string())]);
    }
}
