//! PGN import: `.pgn` / `.pgn.zst` files -> a position store.
//!
//! [`PgnGames`] reads one (decompressed) PGN stream game by game and yields
//! each game replayed into position records (`game::GameVisitor`), with
//! the game's exact byte range and text in the stream, or the reason it was
//! skipped. [`import_files`] drives it over several input files into one
//! [`StoreWriter`]; [`append_files_with`] adds games to an existing store.
//!
//! Games are found as CQL 6.2 finds them (`CqlLines`), so game numbers
//! are CQL's. A game with a non-chess variant, more than
//! [`game::MAX_GAME_POSITIONS`] positions, a text over [`MAX_GAME_BYTES`],
//! a tag name or value over [`game::MAX_TAG_BYTES`] or more than
//! `game::MAX_TAGS` tags is skipped and reported ([`Report`]); the import
//! continues. An illegal move cuts its line (mainline or variation) short,
//! as CQL 6.2 does, with a warning. Text that is no game at all is skipped
//! input without a game number.
//!
//! Replaying a game is a pure function of its bytes ([`parse_game`]); the
//! reader only finds game boundaries, so a threaded importer can split the
//! stream and parse games in parallel.

#![warn(missing_docs)]

pub mod comments;
pub mod game;
pub(crate) mod plain;
mod report;

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cqlj_runtime::store::{StoreError, StoreWriter};
use game::GameVisitor;
pub use game::{MAX_GAME_POSITIONS, MAX_TAG_BYTES, ParsedGame};
pub use report::{BadMove, GameWarning, Line, Place, Report, SkipReason};

/// The text the importer stores for a game whose source text is plain
/// and ends with a result (the game then has
/// `game_flags::EXPORT_TEXT`): the bytes cqlj's PGN writer writes for it
/// without notes. `None` where the source text is stored as read.
pub fn export_form(text: &[u8]) -> Option<Vec<u8>> {
    plain::plain_form(text).and_then(|(_, export)| export)
}

/// What stops an import (as opposed to a skipped game).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// An input file cannot be opened or read (or the import's thread
    /// pool cannot be built: `path` is then the store).
    #[error("cannot read {path}: {source}")]
    Io {
        /// The input file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Writing the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Totals of an import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Games stored.
    pub games: u64,
    /// Positions stored (variations included).
    pub positions: u64,
    /// Games and stretches of input skipped ([`Report::is_skipped`]).
    pub skipped: u64,
    /// Warnings reported (a game may have several).
    pub warnings: u64,
    /// Decompressed PGN bytes read.
    pub pgn_bytes: u64,
}

/// Progress of an import, for a progress bar.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Index of the file being read.
    pub file: usize,
    /// Bytes of that file read from disk (compressed bytes for `.zst`).
    pub file_bytes_read: u64,
    /// Bytes read from disk over all files so far.
    pub total_bytes_read: u64,
    /// Games stored so far.
    pub games: u64,
    /// Positions stored so far.
    pub positions: u64,
}

/// Most bytes of one game's text (from its first byte to the end of its
/// movetext). A longer game is skipped with a reason, so the text kept in
/// memory for one game stays bounded (CQL 6.2 itself stops at 1 MB).
pub const MAX_GAME_BYTES: u64 = 16 << 20;

/// Byte that stands in for a `"` inside a tag value while the PGN reader
/// parses the tag line (see `CqlLines`); the visitor maps it back.
pub(crate) const TAG_QUOTE: u8 = 0x01;

/// Longest line [`Tee`] holds back to repair (a longer one is passed on as
/// it is; the PGN reader rejects such a tag line anyway).
const MAX_REPAIR_LINE: usize = 64 << 10;

/// Where a line of PGN text is, for `CqlLines`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum LineState {
    /// Before a game's tags (start of the stream, or after a result).
    #[default]
    Between,
    Tags,
    /// In a game's movetext, before its result.
    Movetext,
}

/// Rewrites PGN text, line by line and without changing its length, so that
/// the PGN reader finds the games CQL 6.2 finds:
///
/// - a tag value runs to the *last* `"` of its line (CQL 6.2 reads
///   `[Event "reti =" Black to move #61"]` as one tag): every unescaped `"`
///   strictly between the first and the last quote of a tag line becomes
///   `TAG_QUOTE`;
/// - a game ends at its result token, not at a blank line: a blank line in
///   movetext before the result (outside comments) becomes spaces.
///
/// The state carries over from one call to the next (a comment may span
/// lines).
#[derive(Clone, Debug, Default)]
pub(crate) struct CqlLines {
    state: LineState,
    in_comment: bool,
}

impl CqlLines {
    /// Rewrites the lines of `text` (which must start at a line start),
    /// pushing the offset and original byte of each change to `fixes`.
    /// Returns how many bytes are final: blank lines of movetext at the end
    /// of `text` are not (whether they end the game depends on the next
    /// line), unless `at_end`; the caller passes them again with more text.
    pub(crate) fn fix(
        &mut self,
        text: &mut [u8],
        at_end: bool,
        fixes: &mut Vec<(usize, u8)>,
    ) -> usize {
        // Blank lines of movetext seen last: (start, end) of the run.
        let mut run: Option<(usize, usize)> = None;
        let mut line_start = 0;
        while line_start < text.len() {
            let line_end = memchr::memchr(b'\n', &text[line_start..])
                .map_or(text.len(), |p| line_start + p + 1);
            let line = &text[line_start..line_end];
            let blank = line.trim_ascii().is_empty();
            if blank && !self.in_comment && self.state == LineState::Movetext {
                run = Some((run.map_or(line_start, |r| r.0), line_end));
            } else {
                if let Some((a, b)) = run.take() {
                    // A game ends at a blank line only before a tag line.
                    if self.in_comment || line.trim_ascii_start().first() != Some(&b'[') {
                        soften(&mut text[a..b], a, fixes);
                    }
                }
                self.line(&mut text[line_start..line_end], line_start, fixes);
            }
            line_start = line_end;
        }
        match run {
            Some((a, _)) if !at_end => a,
            _ => text.len(),
        }
    }

    fn line(&mut self, line: &mut [u8], at: usize, fixes: &mut Vec<(usize, u8)>) {
        let trimmed = line.trim_ascii_start();
        if !self.in_comment {
            if trimmed.is_empty() {
                return;
            }
            if trimmed[0] == b'[' {
                self.state = LineState::Tags;
                repair_tag_line(line, at, fixes);
                return;
            }
            if line[0] == b'%' {
                return;
            }
            if self.state != LineState::Movetext {
                self.state = LineState::Movetext;
            }
        }
        // Movetext: follow comments, find the result token.
        let mut i = 0;
        while i < line.len() {
            let c = line[i];
            if self.in_comment {
                if c == b'}' {
                    self.in_comment = false;
                }
                i += 1;
                continue;
            }
            match c {
                b'{' => self.in_comment = true,
                b';' => return,
                c if c.is_ascii_whitespace() || c == b'(' || c == b')' => {}
                _ => {
                    let end = line[i..]
                        .iter()
                        .position(|&c| {
                            c.is_ascii_whitespace() || matches!(c, b'{' | b'(' | b')' | b';')
                        })
                        .map_or(line.len(), |p| i + p);
                    if matches!(&line[i..end], b"1-0" | b"0-1" | b"1/2-1/2" | b"*") {
                        self.state = LineState::Between;
                    }
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
    }
}

/// Turns the line breaks of blank lines into spaces.
fn soften(lines: &mut [u8], at: usize, fixes: &mut Vec<(usize, u8)>) {
    for (i, b) in lines.iter_mut().enumerate() {
        if *b == b'\n' || *b == b'\r' {
            fixes.push((at + i, *b));
            *b = b' ';
        }
    }
}

/// The tag-quote part of `CqlLines` for one tag line.
fn repair_tag_line(line: &mut [u8], at: usize, fixes: &mut Vec<(usize, u8)>) {
    let (Some(first), Some(last)) = (memchr::memchr(b'"', line), memchr::memrchr(b'"', line))
    else {
        return;
    };
    let mut i = first + 1;
    while i < last {
        match line[i] {
            b'\\' => i += 2,
            b'"' => {
                fixes.push((at + i, b'"'));
                line[i] = TAG_QUOTE;
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// `CqlLines` over a whole text from a fresh state (one game's stored
/// text, read again by the PGN writer). Returns whether a tag quote was
/// rewritten to `TAG_QUOTE`.
pub(crate) fn cql_lines(text: &mut [u8]) -> bool {
    let mut fixes = Vec::new();
    CqlLines::default().fix(text, true, &mut fixes);
    fixes.iter().any(|&(_, b)| b == b'"')
}

/// Hands the PGN reader whole lines rewritten by `CqlLines`
/// and keeps the original bytes it hands out, so a
/// game's text can be cut out byte for byte.
struct Tee<R> {
    inner: R,
    kept: Rc<RefCell<Kept>>,
    /// Bytes read from `inner`: `pending[done..ready]` are repaired and
    /// ready to hand out, `pending[ready..]` is an incomplete line.
    pending: Vec<u8>,
    done: usize,
    ready: usize,
    /// Stream offset of `pending[0]`.
    pending_start: u64,
    lines: CqlLines,
    /// Stream offsets and original bytes of rewritten bytes not yet handed
    /// out (ascending).
    fixes: std::collections::VecDeque<(u64, u8)>,
    eof: bool,
}

impl<R: Read> Tee<R> {
    fn new(inner: R, kept: Rc<RefCell<Kept>>) -> Tee<R> {
        Tee {
            inner,
            kept,
            pending: Vec::new(),
            done: 0,
            ready: 0,
            pending_start: 0,
            lines: CqlLines::default(),
            fixes: Default::default(),
            eof: false,
        }
    }

    /// Makes `pending[done..ready]` non-empty unless the input is at its end.
    fn fill(&mut self) -> io::Result<()> {
        self.pending.drain(..self.done);
        self.pending_start += self.done as u64;
        self.ready -= self.done;
        self.done = 0;
        while self.ready == 0 && !self.eof {
            let old = self.pending.len();
            self.pending.resize(old + (64 << 10), 0);
            let n = match self.inner.read(&mut self.pending[old..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    self.pending.truncate(old);
                    continue;
                }
                Err(e) => {
                    self.pending.truncate(old);
                    return Err(e);
                }
            };
            self.pending.truncate(old + n);
            let end = if n == 0 {
                self.eof = true;
                self.pending.len()
            } else if let Some(p) = memchr::memrchr(b'\n', &self.pending[old..]) {
                old + p + 1
            } else if self.pending.len() > MAX_REPAIR_LINE {
                self.pending.len()
            } else {
                continue;
            };
            let base = self.pending_start + self.ready as u64;
            let mut fixes = Vec::new();
            let mut done = self
                .lines
                .fix(&mut self.pending[self.ready..end], self.eof, &mut fixes);
            if done == 0 && end - self.ready > MAX_REPAIR_LINE {
                // A long run of blank lines: passed on as it is.
                fixes.clear();
                done = self
                    .lines
                    .fix(&mut self.pending[self.ready..end], true, &mut fixes);
            }
            // Fixes of lines passed again later are made again then.
            self.fixes.extend(
                fixes
                    .into_iter()
                    .filter(|&(i, _)| i < done)
                    .map(|(i, b)| (base + i as u64, b)),
            );
            self.ready += done;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    /// Stream offset of `bytes[0]`.
    start: u64,
    /// Stream offset just past the last byte read.
    end: u64,
    /// Stream offset where the current game starts.
    game_start: u64,
    /// The current game's text grew over [`MAX_GAME_BYTES`]: its bytes
    /// were dropped.
    overflow: bool,
    /// Newlines counted up to `counted_to`.
    lines: u64,
    counted_to: u64,
    /// Stream offsets of the tag quotes rewritten to `TAG_QUOTE` in the
    /// bytes handed out (ascending; those before `start` are dropped).
    tag_quotes: std::collections::VecDeque<u64>,
}

impl Kept {
    fn slice(&self, from: u64, to: u64) -> &[u8] {
        let a = (from.saturating_sub(self.start) as usize).min(self.bytes.len());
        let b = (to.saturating_sub(self.start) as usize).clamp(a, self.bytes.len());
        &self.bytes[a..b]
    }
    /// Forgets bytes before stream offset `upto` (amortised).
    fn discard(&mut self, upto: u64) {
        let n = (upto.saturating_sub(self.start) as usize).min(self.bytes.len());
        if n >= 1 << 20 || n == self.bytes.len() {
            self.bytes.drain(..n);
            self.start += n as u64;
        }
    }
    fn count_lines_to(&mut self, to: u64) {
        let s = self.slice(self.counted_to, to);
        self.lines += memchr::memchr_iter(b'\n', s).count() as u64;
        self.counted_to = to.max(self.counted_to);
    }
    /// Appends bytes handed to the reader; drops the current game's text
    /// once it is over [`MAX_GAME_BYTES`] (its newlines still counted).
    fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.end += bytes.len() as u64;
        if self.end - self.game_start.max(self.start) > MAX_GAME_BYTES
            || (self.overflow && !self.bytes.is_empty())
        {
            self.overflow = true;
            self.count_lines_to(self.end);
            self.bytes.clear();
            self.start = self.end;
        }
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done == self.ready {
            self.fill()?;
        }
        let n = buf.len().min(self.ready - self.done);
        let from = self.pending_start + self.done as u64;
        buf[..n].copy_from_slice(&self.pending[self.done..self.done + n]);
        self.done += n;
        let mut k = self.kept.borrow_mut();
        let at = k.bytes.len();
        k.push(&buf[..n]);
        // The kept text is the original: undo the repairs in it.
        while let Some(&(f, orig)) = self.fixes.front() {
            if f >= from + n as u64 {
                break;
            }
            self.fixes.pop_front();
            if orig == b'"' {
                k.tag_quotes.push_back(f);
            }
            if !k.overflow
                && let Some(b) = k.bytes.get_mut(at + (f - from) as usize)
            {
                *b = orig;
            }
        }
        Ok(n)
    }
}

/// Counts bytes read from the underlying file (for progress).
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// One game read from a stream, or a stretch of text that is not a game.
#[derive(Debug)]
pub struct GameItem {
    /// 1-based number of the game in its stream (CQL's game number); for
    /// text that is not a game, the number of the last game before it.
    pub number: u64,
    /// The text is not PGN (no tag and no legal move; garbage or binary
    /// data): skipped input, not a game (`game` is the reason).
    pub not_a_game: bool,
    /// 1-based line where the game starts.
    pub line: u64,
    /// Byte range of the game in the (decompressed) stream, trailing
    /// whitespace excluded.
    pub start: u64,
    /// End of that range (exclusive).
    pub end: u64,
    /// The replayed game (its `meta.text` is the stream's bytes
    /// `start..end`), or why it was skipped.
    pub game: Result<ParsedGame, SkipReason>,
}

/// Iterator over the games of a PGN byte stream.
pub struct PgnGames<R: Read> {
    reader: pgn_reader::Reader<Tee<R>>,
    kept: Rc<RefCell<Kept>>,
    visitor: GameVisitor,
    number: u64,
    done: bool,
    /// A game read while looking for the end of a stretch of garbage.
    pending: Option<GameItem>,
    /// Keep the text read (the rest of a game whose tag line was rejected
    /// is being read).
    hold: bool,
}

impl<R: Read> PgnGames<R> {
    /// Reads the games of `inner` from its first byte; game numbers start
    /// at 1.
    pub fn new(inner: R) -> PgnGames<R> {
        let kept = Rc::new(RefCell::new(Kept::default()));
        let tee = Tee::new(inner, kept.clone());
        PgnGames {
            reader: pgn_reader::Reader::new(tee),
            kept,
            visitor: GameVisitor::new(),
            number: 0,
            done: false,
            pending: None,
            hold: false,
        }
    }

    /// Stream offset of the reader's next unread byte.
    fn offset(&self) -> u64 {
        self.kept.borrow().end - self.reader.buffer().len() as u64
    }

    fn count_lines_to(&mut self, to: u64) {
        self.kept.borrow_mut().count_lines_to(to);
    }

    fn next_game(&mut self) -> io::Result<Option<GameItem>> {
        if self.done || !self.reader.has_more()? {
            self.done = true;
            return Ok(None);
        }
        let start = self.offset();
        self.count_lines_to(start);
        let line = {
            let mut k = self.kept.borrow_mut();
            k.game_start = start;
            k.overflow = false;
            k.lines + 1
        };
        let read = self.reader.read_game(&mut self.visitor);
        let mut end = self.offset();
        let repaired_quotes = {
            let mut k = self.kept.borrow_mut();
            while k.tag_quotes.front().is_some_and(|&q| q < start) {
                k.tag_quotes.pop_front();
            }
            k.tag_quotes.front().is_some_and(|&q| q < end)
        };
        let overflow = self.kept.borrow().overflow;
        let game = match read {
            Ok(Some(_)) if overflow => Err(SkipReason::TextTooLong { bytes: end - start }),
            Ok(Some(Ok(mut g))) => {
                if repaired_quotes {
                    restore_tag_quotes(&mut g);
                }
                let k = self.kept.borrow();
                let text = k.slice(start, end);
                let trimmed = text.trim_ascii_end();
                end = start + trimmed.len() as u64;
                g.meta.text = trimmed.to_vec();
                g.meta.source_start = start;
                g.meta.source_len = end - start;
                Ok(g)
            }
            Ok(Some(Err(reason))) => Err(reason),
            Ok(None) => {
                self.done = true;
                return Ok(None);
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                if self.offset() <= start {
                    // No progress possible: stop rather than loop.
                    self.done = true;
                }
                Err(SkipReason::Syntax(e.to_string()))
            }
            Err(e) => return Err(e),
        };
        self.count_lines_to(end.max(start));
        let mut k = self.kept.borrow_mut();
        let upto = k.counted_to;
        // Keep a game whose tag line was rejected: its rest follows.
        if !self.hold && !matches!(&game, Err(r) if r.is_unterminated_tag()) {
            k.discard(upto);
        }
        k.overflow = false;
        drop(k);
        let not_a_game = matches!(&game, Err(SkipReason::NotAGame));
        if !not_a_game {
            self.number += 1;
        }
        Ok(Some(GameItem {
            number: self.number,
            not_a_game,
            line,
            start,
            end,
            game,
        }))
    }
}

impl<R: Read> PgnGames<R> {
    /// The next game, or one item for a whole stretch of text that is not
    /// a game (consecutive pieces of garbage are reported once).
    pub(crate) fn next_item(&mut self) -> io::Result<Option<GameItem>> {
        let item = match self.pending.take() {
            Some(item) => item,
            None => match self.next_game()? {
                Some(item) => item,
                None => return Ok(None),
            },
        };
        if matches!(&item.game, Err(r) if r.is_unterminated_tag()) {
            // The reader resumes at the next line: what follows (the rest
            // of the tags and the movetext) is the same game. CQL 6.2 reads
            // it with the tag it cannot read left out, and so does cqlj.
            let tags = self.visitor.take_tags();
            self.visitor.resume_tags(tags);
            let head_start = item.start;
            self.hold = true;
            let next = self.next_game();
            self.hold = false;
            if let Some(mut rest) = next? {
                rest.start = head_start;
                if let Ok(g) = &mut rest.game {
                    let k = self.kept.borrow();
                    g.meta.text = k.slice(head_start, rest.end).to_vec();
                    g.meta.source_start = head_start;
                    g.meta.source_len = rest.end - head_start;
                }
                if !rest.not_a_game {
                    self.number -= 1;
                }
                rest.number = item.number;
                match &mut rest.game {
                    Ok(g) => {
                        g.warnings.insert(0, GameWarning::UnterminatedTag);
                        rest.line = item.line;
                        return Ok(Some(rest));
                    }
                    Err(_) if rest.not_a_game => {
                        rest.not_a_game = false;
                        rest.line = item.line;
                        rest.game = Err(SkipReason::UnterminatedTagNoMove);
                        return Ok(Some(rest));
                    }
                    Err(_) => {
                        rest.line = item.line;
                        return Ok(Some(rest));
                    }
                }
            }
        }
        if !item.not_a_game {
            return Ok(Some(item));
        }
        let mut item = item;
        while let Some(next) = self.next_game()? {
            if next.not_a_game {
                item.end = next.end;
            } else {
                self.pending = Some(next);
                break;
            }
        }
        item.game = Err(SkipReason::NotPgn {
            bytes: item.end.saturating_sub(item.start).max(1),
        });
        Ok(Some(item))
    }
}

impl<R: Read> Iterator for PgnGames<R> {
    type Item = io::Result<GameItem>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}

/// Turns the `TAG_QUOTE`s of a game's tag values back into `"` and
/// warns about each such tag.
fn restore_tag_quotes(g: &mut ParsedGame) {
    for (name, value) in &mut g.meta.tags {
        if !value.contains(&TAG_QUOTE) {
            continue;
        }
        for b in value.iter_mut() {
            if *b == TAG_QUOTE {
                *b = b'"';
            }
        }
        g.warnings.push(GameWarning::UnescapedQuote {
            name: String::from_utf8_lossy(name).into_owned(),
        });
    }
}

/// Replays the first game of `text` (a pure function of the bytes).
pub fn parse_game(text: &[u8]) -> Result<ParsedGame, SkipReason> {
    match PgnGames::new(text).next() {
        Some(Ok(item)) => item.game,
        Some(Err(e)) => Err(SkipReason::Read(e.to_string())),
        None => Err(SkipReason::NoGameInText),
    }
}

/// Opens a PGN file, decompressing zstd (detected by its magic number).
pub(crate) fn open_pgn(path: &Path, counter: Rc<Cell<u64>>) -> io::Result<Box<dyn Read>> {
    let mut file = File::open(path)?;
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut file, &mut magic)?;
    file.rewind()?;
    let counted = Counting {
        inner: file,
        count: counter,
    };
    if n == 4 && magic == [0x28, 0xB5, 0x2F, 0xFD] {
        Ok(Box::new(zstd::stream::read::Decoder::new(counted)?))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, counted)))
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Callbacks of [`import_files`].
pub trait ImportObserver {
    /// A game was skipped, or imported with a warning.
    fn report(&mut self, report: &Report);
    /// Called every few hundred games and at the end of each file.
    fn progress(&mut self, _progress: &Progress) {}
}

/// Collects reports in a vector (tests, quiet runs).
#[derive(Default, Debug)]
pub struct CollectReports(pub Vec<Report>);

impl ImportObserver for CollectReports {
    fn report(&mut self, report: &Report) {
        self.0.push(report.clone());
    }
}

/// How [`import_files_with`] imports.
#[derive(Clone, Copy, Debug)]
pub struct ImportOptions {
    /// Threads parsing and replaying games (1 = serial, in the caller).
    pub threads: usize,
    /// Target size of the blocks of decompressed PGN handed to the threads
    /// (a block always ends at a game boundary).
    pub block_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            threads: 1,
            block_bytes: 4 << 20,
        }
    }
}

/// Imports `inputs` (in order) into a new store at `output` (replaced
/// atomically when complete), serially.
pub fn import_files(
    inputs: &[PathBuf],
    output: &Path,
    observer: &mut dyn ImportObserver,
) -> Result<ImportSummary, ImportError> {
    import_files_with(inputs, output, &ImportOptions::default(), observer)
}

/// `item` with its game marked plain (`game_flags::PLAIN_TEXT`) when its
/// text is plain and all its moves are stored, and then its text in
/// export form (`game_flags::EXPORT_TEXT`) when it has one
/// ([`export_form`]). Each game read for the store passes here once: in
/// the parallel import's workers, else as it is read.
fn marked(mut item: GameItem) -> GameItem {
    use cqlj_runtime::store::game_flags::{EXPORT_TEXT, PLAIN_TEXT};
    if let Ok(g) = &mut item.game
        && let Some((moves, export)) = plain::plain_form(&g.meta.text)
        && moves as usize + 1 == g.positions.len()
    {
        g.meta.flags |= PLAIN_TEXT;
        if let Some(text) = export {
            g.meta.text = text;
            g.meta.flags |= EXPORT_TEXT;
        }
    }
    item
}

/// Adds each game read to the store, in input order, and reports.
struct Accept<'a> {
    writer: StoreWriter,
    summary: ImportSummary,
    observer: &'a mut dyn ImportObserver,
}

impl Accept<'_> {
    fn game(&mut self, item: GameItem, name: &str, source: u32) -> Result<(), ImportError> {
        match item.game {
            Ok(mut g) => {
                g.meta.source_file = source;
                self.writer.add_game(&g.meta, &g.positions)?;
                self.summary.games += 1;
                self.summary.positions += g.positions.len() as u64;
                for w in g.warnings {
                    self.summary.warnings += 1;
                    self.observer.report(&Report::Warning {
                        at: Place {
                            file: name.to_owned(),
                            line: item.line,
                        },
                        game: item.number,
                        warning: w,
                    });
                }
            }
            Err(reason) => {
                self.summary.skipped += 1;
                let at = Place {
                    file: name.to_owned(),
                    line: item.line,
                };
                self.observer.report(&if item.not_a_game {
                    Report::SkippedInput { at, reason }
                } else {
                    Report::Skipped {
                        at,
                        game: item.number,
                        reason,
                    }
                });
            }
        }
        Ok(())
    }
}

/// Imports `inputs` (in order) into one new store at `output` (replaced
/// atomically when complete). With `threads > 1` each decompressed input is
/// cut into blocks at game boundaries ([`block_cut`]) that are parsed and
/// replayed in parallel; the games are written in input order, so the
/// store is the same as a serial import's.
pub fn import_files_with(
    inputs: &[PathBuf],
    output: &Path,
    opts: &ImportOptions,
    observer: &mut dyn ImportObserver,
) -> Result<ImportSummary, ImportError> {
    import_into(StoreWriter::create(output)?, inputs, output, opts, observer)
}

/// Appends the games of `inputs` (in order) to the existing store at
/// `output`, numbered after its games, in place
/// ([`StoreWriter::append`]: until the import completes, and after a crash
/// or a kill at any moment, the store opens with its old content). When
/// `output` does not exist, a new store is written as by
/// [`import_files_with`]. The summary counts the games added.
pub fn append_files_with(
    inputs: &[PathBuf],
    output: &Path,
    opts: &ImportOptions,
    observer: &mut dyn ImportObserver,
) -> Result<ImportSummary, ImportError> {
    import_into(
        StoreWriter::append_or_create(output)?,
        inputs,
        output,
        opts,
        observer,
    )
}

/// Reads `inputs` into `writer` and finishes it (`output` names the store
/// in errors).
fn import_into(
    writer: StoreWriter,
    inputs: &[PathBuf],
    output: &Path,
    opts: &ImportOptions,
    observer: &mut dyn ImportObserver,
) -> Result<ImportSummary, ImportError> {
    let mut acc = Accept {
        writer,
        summary: ImportSummary::default(),
        observer,
    };
    let pool = (opts.threads > 1)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(opts.threads)
                .build()
        })
        .transpose()
        .map_err(|e| ImportError::Io {
            path: output.to_path_buf(),
            source: io::Error::other(e.to_string()),
        })?;
    let mut progress = Progress::default();
    for (fi, input) in inputs.iter().enumerate() {
        let name = input.display().to_string();
        let source = acc.writer.add_source(&name);
        let counter = Rc::new(Cell::new(0));
        let io_err = |source| ImportError::Io {
            path: input.clone(),
            source,
        };
        let mut reader = open_pgn(input, counter.clone()).map_err(io_err)?;
        let games_before = acc.summary.games;
        progress.file = fi;
        let before = progress.total_bytes_read;
        let mut report_progress = |acc: &mut Accept<'_>| {
            progress.file_bytes_read = counter.get();
            progress.total_bytes_read = before + counter.get();
            progress.games = acc.summary.games;
            progress.positions = acc.summary.positions;
            acc.observer.progress(&progress);
        };
        if let Some(pool) = &pool {
            let bytes = parallel_file(&mut reader, pool, opts, |items| {
                for item in items {
                    acc.game(item, &name, source)?;
                }
                report_progress(&mut acc);
                Ok(())
            })
            .map_err(|e| match e {
                Failure::Io(e) => io_err(e),
                Failure::Import(e) => e,
            })?;
            acc.summary.pgn_bytes += bytes;
        } else {
            let mut games = PgnGames::new(reader);
            while let Some(item) = games.next_item().map_err(io_err)? {
                let number = item.number;
                acc.game(marked(item), &name, source)?;
                if number % 512 == 0 {
                    report_progress(&mut acc);
                }
            }
            acc.summary.pgn_bytes += games.offset();
        }
        report_progress(&mut acc);
        if acc.summary.games == games_before {
            acc.summary.warnings += 1;
            acc.observer.report(&Report::NoGame { file: name.clone() });
        }
    }
    acc.writer.finish()?;
    Ok(acc.summary)
}

/// An I/O error reading the input, or an error from the consumer.
enum Failure {
    Io(io::Error),
    Import(ImportError),
}

impl From<ImportError> for Failure {
    fn from(e: ImportError) -> Failure {
        Failure::Import(e)
    }
}

/// Incremental search for game boundaries in a growing buffer that starts
/// at a game boundary: each byte is scanned once however the buffer grows
/// (see [`block_cut`] for the rule).
#[derive(Clone, Debug, Default)]
pub(crate) struct CutScanner {
    /// Offset of the next line to scan.
    pos: usize,
    in_comment: bool,
    blank_lines: usize,
    last_was_tag: bool,
    seen_text: bool,
    /// The last boundary found.
    cut: Option<usize>,
}

impl CutScanner {
    /// Scans the complete lines of `buf` not scanned yet (and the last,
    /// unterminated line too when `at_end`). `buf` must extend the buffer
    /// of the earlier calls.
    pub(crate) fn scan(&mut self, buf: &[u8], at_end: bool) {
        while self.pos < buf.len() {
            let line_end = match memchr::memchr(b'\n', &buf[self.pos..]) {
                Some(p) => self.pos + p + 1,
                None if at_end => buf.len(),
                None => return,
            };
            self.line(&buf[self.pos..line_end], self.pos);
            self.pos = line_end;
        }
    }

    fn line(&mut self, line: &[u8], line_start: usize) {
        if !self.in_comment {
            let text = line.trim_ascii_start();
            if text.is_empty() {
                self.blank_lines += 1;
            } else {
                let tag = text[0] == b'[';
                if tag
                    && line[0] == b'['
                    && line.get(1).is_some_and(u8::is_ascii_alphabetic)
                    && self.blank_lines > 0
                    && !self.last_was_tag
                    && self.seen_text
                {
                    self.cut = Some(line_start);
                }
                self.last_was_tag = tag;
                self.seen_text = true;
                self.blank_lines = 0;
            }
            // A tag line's value may hold braces, and a `%` line is an
            // escape: neither opens a comment.
            if text.first() == Some(&b'[') || line.first() == Some(&b'%') {
                return;
            }
        }
        for &c in line {
            match (self.in_comment, c) {
                (true, b'}') => self.in_comment = false,
                (false, b'{') => self.in_comment = true,
                // The rest of the line is a comment.
                (false, b';') => break,
                _ => {}
            }
        }
    }

    /// The last game boundary found so far.
    pub(crate) fn cut(&self) -> Option<usize> {
        self.cut
    }

    /// Whether any non-blank text was scanned.
    pub(crate) fn seen_text(&self) -> bool {
        self.seen_text
    }
}

/// Where to cut `buf` so that `buf[..cut]` holds whole games: at the start
/// of the last line at or after `from` that opens a tag pair (`[` and a
/// letter) after a blank line, where the last non-blank line before it is
/// not itself a tag pair (so a blank line inside a tag section is not taken
/// for a game boundary). `None` if there is no such line.
///
/// `buf` must start at a game boundary (the start of a stream or an earlier
/// cut): it is scanned forward from there, so a line inside a `{}` comment
/// (which may span lines and hold blank lines and `[`) or after a `;`
/// comment is never taken for a boundary, as the PGN reader would not.
pub fn block_cut(buf: &[u8], from: usize) -> Option<usize> {
    let mut s = CutScanner::default();
    s.scan(buf, true);
    s.cut().filter(|&c| c >= from)
}

/// Reads `reader` in blocks cut at game boundaries, parses the blocks of a
/// window in parallel on `pool`, and hands each block's games to `consume`
/// in input order, with game numbers, lines and byte offsets relative to
/// the whole stream. Returns the stream's length.
///
/// Each byte is scanned for boundaries once (`CutScanner`), so the work
/// is linear in the input. Memory is bounded by the window of blocks: a
/// stretch without a boundary longer than [`MAX_GAME_BYTES`] is either
/// blank (dropped, only counted) or holds an over-long game, and then the
/// rest of the stream is read serially by [`PgnGames`], which skips that
/// game with a reason (the same games as a serial import).
fn parallel_file(
    reader: &mut impl Read,
    pool: &rayon::ThreadPool,
    opts: &ImportOptions,
    mut consume: impl FnMut(Vec<GameItem>) -> Result<(), ImportError>,
) -> Result<u64, Failure> {
    use rayon::prelude::*;
    let block = opts.block_bytes.max(1024);
    let window = opts.threads * 2;
    let mut carry: Vec<u8> = Vec::new();
    let (mut offset, mut lines, mut number) = (0u64, 0u64, 0u64);
    let mut eof = false;
    let mut serial_rest: Option<Vec<u8>> = None;
    while !eof && serial_rest.is_none() {
        // Fill a window of blocks, each ending at a game boundary, with the
        // blank bytes and lines dropped before it.
        let mut blocks: Vec<(Vec<u8>, u64, u64)> = Vec::with_capacity(window);
        while blocks.len() < window && !eof && serial_rest.is_none() {
            let mut buf = std::mem::take(&mut carry);
            let mut scan = CutScanner::default();
            let (mut skipped_bytes, mut skipped_lines) = (0u64, 0u64);
            loop {
                let old = buf.len();
                buf.resize(old + block, 0);
                let n = read_up_to(reader, &mut buf[old..]).map_err(Failure::Io)?;
                buf.truncate(old + n);
                if n < block {
                    eof = true;
                    break;
                }
                scan.scan(&buf, false);
                if let Some(cut) = scan.cut() {
                    carry = buf.split_off(cut);
                    break;
                }
                if buf.len() as u64 > MAX_GAME_BYTES {
                    if scan.seen_text() {
                        serial_rest = Some(std::mem::take(&mut buf));
                        break;
                    }
                    // Only blank lines so far: count and drop them (the
                    // incomplete last line is kept).
                    let keep = scan.pos;
                    skipped_lines += memchr::memchr_iter(b'\n', &buf[..keep]).count() as u64;
                    skipped_bytes += keep as u64;
                    buf.drain(..keep);
                    scan = CutScanner::default();
                }
            }
            blocks.push((buf, skipped_bytes, skipped_lines));
        }
        let parsed: Vec<Result<Vec<GameItem>, io::Error>> = pool.install(|| {
            blocks
                .par_iter()
                .map(|(b, _, _)| {
                    PgnGames::new(&b[..])
                        .map(|item| item.map(marked))
                        .collect::<io::Result<Vec<GameItem>>>()
                })
                .collect()
        });
        for ((b, skipped_bytes, skipped_lines), items) in blocks.iter().zip(parsed) {
            offset += skipped_bytes;
            lines += skipped_lines;
            let mut items = items.map_err(Failure::Io)?;
            shift_items(&mut items, number, lines, offset);
            number += items.iter().filter(|i| !i.not_a_game).count() as u64;
            lines += memchr::memchr_iter(b'\n', b).count() as u64;
            offset += b.len() as u64;
            consume(items)?;
        }
    }
    if let Some(rest) = serial_rest {
        let mut games = PgnGames::new(io::Cursor::new(rest).chain(reader));
        while let Some(item) = games.next_item().map_err(Failure::Io)? {
            let mut items = vec![marked(item)];
            shift_items(&mut items, number, lines, offset);
            consume(items)?;
        }
        offset += games.offset();
    }
    Ok(offset)
}

/// Makes the numbers, lines and offsets of a block's games relative to
/// the whole stream.
fn shift_items(items: &mut [GameItem], number: u64, lines: u64, offset: u64) {
    for it in items {
        it.number += number;
        it.line += lines;
        it.start += offset;
        it.end += offset;
        if let Ok(g) = &mut it.game {
            g.meta.source_start += offset;
        }
    }
}
