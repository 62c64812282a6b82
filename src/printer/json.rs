//! The JSON-lines form of a matching game, for scripts.
//!
//! The object is written directly into the output buffer, keys in sorted
//! order and without spaces (the compact form `serde_json` gives a
//! `Value`), each string escaped by `serde_json`.

use shakmaty::fen::{Fen, LossyFenError};
use shakmaty::san::San;
use shakmaty::{CastlingSide, Color, Move, Position, Square};

use crate::runtime::layout::chess::{chess_of, role_of, setup_of};
use crate::runtime::layout::{MoveKind, PositionRecord, flags};
use crate::runtime::store::{Store, StoreError};
use crate::scan::{GameMatch, SortValue};

/// The tags a JSON line carries (when the game has them), in key order.
const JSON_TAGS: [&str; 5] = ["Black", "Date", "Event", "Result", "White"];

/// Appends one JSON object and a newline for a matching game: game number
/// (1-based), each matching position with its ply, FEN and the move that
/// led to it (SAN; `null` at the first position), comments, messages, sort
/// keys and the tags White, Black, Event, Date and Result it has.
///
/// # Errors
/// The game's positions cannot be read from the store.
pub(crate) fn match_json(
    out: &mut Vec<u8>,
    store: &Store,
    m: &GameMatch,
) -> Result<(), StoreError> {
    let positions = store.game_positions(m.game)?;
    // The record's ply counts from the game's initial position; the FEN's
    // move number continues the setup's (`[FEN]` tag), as a PGN reader would.
    let start_half = store
        .game_tag(m.game, "FEN")?
        .and_then(|f| Fen::from_ascii(f.as_bytes()).ok())
        .map_or(0, |f| {
            let s = f.as_setup();
            (s.fullmoves.get() - 1) * 2 + u32::from(s.turn == Color::Black)
        });
    out.extend_from_slice(b"{\"comments\":[");
    for (k, (i, t)) in m.comments.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"index\":");
        push_integer(out, i64::from(*i));
        out.extend_from_slice(b",\"text\":");
        push_string(out, t);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"game\":");
    push_integer(out, i64::from(m.game) + 1);
    out.extend_from_slice(b",\"matches\":[");
    let mut first = true;
    for (i, p) in m
        .positions
        .iter()
        .filter_map(|i| positions.get(i as usize).map(|p| (i, p)))
    {
        if !first {
            out.push(b',');
        }
        first = false;
        // The record is the position as imported: its en-passant square
        // is set only where a capture is legal and its castling rights are
        // shakmaty's, so its setup is the position's (`EnPassantMode::
        // Legal`) without replaying it; a position shakmaty cannot play (a
        // setup CQL 6.2 reads with the side not to move in check) is
        // written as it stands too.
        let mut setup = setup_of(p).0;
        let half = start_half + u32::from(p.ply);
        setup.fullmoves = std::num::NonZeroU32::new(half / 2 + 1).unwrap_or(setup.fullmoves);
        // A FEN holds no character JSON escapes.
        out.extend_from_slice(b"{\"fen\":\"");
        Fen::try_from_setup(setup)
            .unwrap_or_else(LossyFenError::ignore)
            .append_ascii_to(out);
        out.extend_from_slice(b"\",\"index\":");
        push_integer(out, i64::from(i));
        out.extend_from_slice(b",\"move\":");
        let parent = (p.parent_delta != 0)
            .then(|| positions.get((i as usize).wrapping_sub(usize::from(p.parent_delta))))
            .flatten();
        match parent.and_then(|parent| san_of(parent, p)) {
            Some(san) => push_string(out, &san),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"ply\":");
        push_integer(out, i64::from(p.ply));
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"messages\":[");
    for (k, t) in m.messages.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        push_string(out, t);
    }
    out.extend_from_slice(b"],\"sort\":[");
    for (k, key) in m.sort_keys.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"label\":");
        match &key.label {
            Some(l) => push_string(out, l),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(if key.min {
            b",\"min\":true,\"value\":"
        } else {
            b",\"min\":false,\"value\":"
        });
        match &key.value {
            Some(SortValue::Number(n)) => push_integer(out, *n),
            Some(SortValue::Text(s)) => push_string(out, s),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"tags\":{");
    let tags = store.game_tags_raw(m.game)?;
    let mut first = true;
    for name in JSON_TAGS {
        if let Some((_, value)) = tags.iter().find(|(n, _)| *n == name.as_bytes()) {
            if !first {
                out.push(b',');
            }
            first = false;
            push_string(out, name);
            out.push(b':');
            push_string(out, &String::from_utf8_lossy(value));
        }
    }
    out.extend_from_slice(b"}}\n");
    Ok(())
}

/// The move from `parent` to `child` in SAN with its check or mate sign
/// (`--` for a null move); `None` where the records give no move (a setup
/// without moves, a damaged record). The move is rebuilt from the packed
/// move (no move generation) and the sign read from the child's flags.
fn san_of(parent: &PositionRecord, child: &PositionRecord) -> Option<String> {
    let mv = child.mv;
    if mv.is_null() {
        return Some("--".to_owned());
    }
    let pos = chess_of(parent).ok()?;
    let from = Square::try_from(mv.from()).ok()?;
    let to = Square::try_from(mv.to()).ok()?;
    let m = match mv.kind() {
        MoveKind::Normal => Move::Normal {
            role: role_of(mv.role())?,
            from,
            capture: role_of(mv.captured()),
            to,
            promotion: role_of(mv.promotion()),
        },
        MoveKind::EnPassant => Move::EnPassant { from, to },
        kind => {
            let side = if kind == MoveKind::CastleKingside {
                CastlingSide::KingSide
            } else {
                CastlingSide::QueenSide
            };
            Move::Castle {
                king: from,
                rook: pos.castles().rook(pos.turn(), side)?,
            }
        }
    };
    let mut san = San::from_move(&pos, m).to_string();
    if child.has(flags::MATE) {
        san.push('#');
    } else if child.has(flags::CHECK) {
        san.push('+');
    }
    Some(san)
}

/// Appends `s` as a JSON string (quoted and escaped by `serde_json`).
fn push_string(out: &mut Vec<u8>, s: &str) {
    // Writing a `str` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Appends the decimal form of `n`.
fn push_integer(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_and_integers_are_written_as_serde_json_writes_them() {
        for s in [
            "",
            "plain",
            "q\"uote",
            "back\\slash",
            "nl\n\ttab\u{1}",
            "é♖",
        ] {
            let mut out = Vec::new();
            push_string(&mut out, s);
            assert_eq!(out, json!(s).to_string().into_bytes());
        }
        for n in [0, 1, -1, 42, -90, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_integer(&mut out, n);
            assert_eq!(out, json!(n).to_string().into_bytes());
        }
    }
}
