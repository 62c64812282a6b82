//! The JSON-lines form of a matching game, for scripts.
//!
//! The object is written directly into the output buffer, keys in sorted
//! order and without spaces (the compact form `serde_json` gives a
//! `Value`), each string escaped by `serde_json`.

use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{CastlingSide, Color, Move, Position, Square};

use crate::runtime::bitboard::{LINE_SQUARES, file_mask, rank_mask};
use crate::runtime::layout::chess::{chess_of, role_of};
use crate::runtime::layout::{
    BB_BISHOP, BB_BLACK, BB_COUNT, BB_KING, BB_KNIGHT, BB_PAWN, BB_QUEEN, BB_ROOK, BB_WHITE,
    MoveKind, PositionRecord, flags,
};
use crate::runtime::store::{Store, StoreError, TextReader};
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
    texts: &mut TextReader<'_>,
    m: &GameMatch,
) -> Result<(), StoreError> {
    // Only the matching positions and their parents are decoded from the
    // columns, not the whole game.
    let (first, n) = store.game_span(m.game)?;
    let mut cursor = store.position_cursor();
    // The record's ply counts from the game's initial position; the FEN's
    // move number continues the setup's (`[FEN]` tag), as a PGN reader would.
    let tags = texts.game_tags(m.game)?;
    let fen = tags.iter().find(|(n, _)| *n == b"FEN").map(|(_, v)| *v);
    // Every position of a game from the standard start without null moves
    // was reached by legal moves: shakmaty takes each as it stands (what
    // `push_plain_san` relies on). A match's moves come before it (store
    // order), so the moves up to the last match are looked at.
    let mut legal_play = fen.is_none();
    let last = m.positions.last().map_or(0, |l| l.min(n.saturating_sub(1)));
    for k in 1..=last {
        if !legal_play {
            break;
        }
        let mv = cursor.position_move(first + u64::from(k))?;
        legal_play = !(mv.is_null() || mv.is_none());
    }
    let start_half = fen.and_then(|f| Fen::from_ascii(f).ok()).map_or(0, |f| {
        let s = f.as_setup();
        (s.fullmoves.get() - 1) * 2 + u32::from(s.turn == Color::Black)
    });
    out.extend_from_slice(b"{\"comments\":[");
    for (k, (i, t)) in m.comments().iter().enumerate() {
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
    let mut first_match = true;
    // The last record decoded (a match's parent is most often the match
    // before it).
    let mut last: Option<(u32, PositionRecord)> = None;
    let mut board = BoardText::new();
    let setup_halfmoves = store.game(m.game)?.setup_halfmoves;
    // The last match's halfmove clock (the clock is counted back to it).
    let mut clock: Option<(u32, u16)> = None;
    for i in m.positions.iter().filter(|&i| i < n) {
        let p = cursor.position(first + u64::from(i))?;
        // Counted back to the last match's clock (most often the parent's).
        let halfmoves = cursor.halfmove_clock(first, i, setup_halfmoves, clock)?;
        clock = Some((i, halfmoves));
        // The record is the position as imported: its en-passant square
        // is set only where a capture is legal and its castling rights are
        // shakmaty's, so its FEN is the position's (`EnPassantMode::Legal`)
        // without replaying it; a position shakmaty cannot play (a setup
        // CQL 6.2 reads with the side not to move in check) is written as
        // it stands too. A FEN holds no character JSON escapes.
        let half = start_half + u32::from(p.ply);
        out.extend_from_slice(if first_match {
            b"{\"fen\":\""
        } else {
            b",{\"fen\":\""
        });
        first_match = false;
        push_fen(out, &mut board, &p, halfmoves, half / 2 + 1);
        out.extend_from_slice(b"\",\"index\":");
        push_integer(out, i64::from(i));
        out.extend_from_slice(b",\"move\":");
        let fetched;
        let parent = match i.checked_sub(u32::from(p.parent_delta)) {
            Some(j) if p.parent_delta != 0 => match &last {
                Some((k, r)) if *k == j => Some(r),
                _ => {
                    fetched = cursor.position(first + u64::from(j))?;
                    Some(&fetched)
                }
            },
            _ => None,
        };
        match parent {
            Some(parent) if legal_play && push_plain_san(out, parent, &p) => {}
            Some(parent) => match san_of(parent, &p) {
                Some(san) => push_string(out, &san),
                None => out.extend_from_slice(b"null"),
            },
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"ply\":");
        push_integer(out, i64::from(p.ply));
        out.push(b'}');
        last = Some((i, p));
    }
    out.extend_from_slice(b"],\"messages\":[");
    for (k, t) in m.messages().iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        push_string(out, t);
    }
    out.extend_from_slice(b"],\"sort\":[");
    for (k, key) in m.sort_keys().iter().enumerate() {
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
    let mut first = true;
    for name in JSON_TAGS {
        if let Some((_, value)) = tags.iter().find(|(n, _)| *n == name.as_bytes()) {
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            push_bytes(out, value);
        }
    }
    out.extend_from_slice(b"}}\n");
    Ok(())
}

/// The board field of FENs written one after another (the positions of a
/// game): each rank's text is kept and rebuilt only where some bitboard
/// changed on that rank, most often two ranks of eight from one position
/// to the next.
struct BoardText {
    /// The bitboards `ranks` were built from.
    bb: [u64; BB_COUNT],
    /// Each rank's FEN text (rank 0 = rank 1 of the board), as eight bytes
    /// of which the first `.1` are the text.
    ranks: [([u8; 8], u8); 8],
    /// Each rank's letters ([`rank_letters`]), from which `ranks` was
    /// made.
    letters: [u64; 8],
    /// Whether `ranks` was built at all.
    built: bool,
    /// The castling field written last and what decides it: the
    /// castling rights, the kings, and the rooks of both back ranks.
    castling: Option<(CastlingKey, FenField)>,
}

/// What a FEN's castling field is a function of ([`push_fen`]).
type CastlingKey = (u16, u64, u64, u64, u64);

/// A short FEN field: its bytes (the first `.1`).
type FenField = ([u8; 16], u8);

impl BoardText {
    fn new() -> Self {
        BoardText {
            bb: [0; BB_COUNT],
            ranks: [([0; 8], 0); 8],
            letters: [0; 8],
            built: false,
            castling: None,
        }
    }

    /// Brings the ranks up to `rec`'s board: for a plain move from the
    /// board held (most often the parent's), only its two squares'
    /// letters are made ([`BoardText::play`], which checks that they are
    /// the only squares that changed), else the changed ranks' letters
    /// from the bitboards.
    fn update(&mut self, rec: &PositionRecord) {
        // Word by word: the record was just stored a word at a time, and
        // a wider load of two of its words would wait for both stores
        // (no store-to-load forwarding across them).
        let mut changed = if self.built { 0 } else { u64::MAX };
        for k in 0..BB_COUNT {
            let new = rec.bb[k];
            changed |= self.bb[k] ^ new;
            self.bb[k] = new;
        }
        // One bit per changed rank, visited in a loop of as many steps
        // (most often two): no branch per rank to mispredict.
        let mut ranks = changed_ranks(changed);
        if self.built && self.play(rec, changed) {
            return;
        }
        while ranks != 0 {
            let rank = ranks.trailing_zeros() as usize;
            ranks &= ranks - 1;
            let letters = rank_letters(&rec.bb, rank);
            self.letters[rank] = letters;
            self.ranks[rank] = rank_text(letters, occupancy(&rec.bb, rank));
        }
        self.built = true;
    }

    /// The letters and texts of the ranks of `rec`'s move, brought from
    /// the board held to `rec`'s where the two differ on the move's two
    /// squares alone (`changed`: the squares where some bitboard
    /// changed) and the origin is empty in every bitboard: the origin's
    /// letter cleared, the target's read from the bitboards. The letters
    /// are then [`rank_letters`]'s for `rec`, whatever its move says.
    /// `false`, with nothing changed, otherwise (castling, en passant,
    /// a null move, a board not one move from the one held).
    fn play(&mut self, rec: &PositionRecord, changed: u64) -> bool {
        let mv = rec.mv;
        let (from, to) = (usize::from(mv.from()), usize::from(mv.to()));
        if mv.kind() != MoveKind::Normal || from == to || from >= 64 || to >= 64 {
            return false;
        }
        let (origin, target) = (1u64 << from, 1u64 << to);
        let bb = &rec.bb;
        if changed != origin | target || bb.iter().fold(0, |acc, b| acc | b) & origin != 0 {
            return false;
        }
        let (fr, tr) = (from / 8, to / 8);
        self.letters[fr] &= !(0xff << (8 * (from % 8)));
        let to_letters =
            self.letters[tr] & !(0xff << (8 * (to % 8))) | square_letter(bb, to) << (8 * (to % 8));
        self.letters[tr] = to_letters;
        self.ranks[fr] = rank_text(self.letters[fr], occupancy(bb, fr));
        self.ranks[tr] = rank_text(to_letters, occupancy(bb, tr));
        true
    }
}

/// The letter [`rank_letters`] gives square `sq` of `bb`: each role's
/// letter there or-ed, lower case where black.
#[inline]
fn square_letter(bb: &[u64; BB_COUNT], sq: usize) -> u64 {
    let bit = |b: u64| (b >> sq) & 1;
    LETTERS
        .iter()
        .enumerate()
        .fold(bit(bb[BB_BLACK]) * 0x20, |acc, (role, &letter)| {
            acc | (bit(bb[role]) * u64::from(letter))
        })
}

/// The letters of the roles, by role (pawn first), upper case.
const LETTERS: [u8; 6] = *b"PNBRQK";

/// The occupied files of rank `rank` of `bb` (bit `f`: file `f`).
#[inline]
fn occupancy(bb: &[u64; BB_COUNT], rank: usize) -> usize {
    ((bb[BB_WHITE] | bb[BB_BLACK]) >> (8 * rank) & 0xff) as usize
}

/// Bit `r` set where byte `r` of `x` (rank `r + 1` of a bitboard) is not
/// zero.
fn changed_ranks(x: u64) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Each byte's bits or-ed into its low bit, then the eight low bits
    // gathered into the top byte by one multiplication (no carries: the
    // partial products land on distinct bits).
    let mut y = x | (x >> 4);
    y |= y >> 2;
    y |= y >> 1;
    y &= ONES;
    (y.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// Rank `rank`'s letters from the bitboards `bb`: byte `f` the letter of
/// the piece on file `f` (lower case where black), 0 where it is empty.
fn rank_letters(bb: &[u64; BB_COUNT], rank: usize) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let byte = |b: u64| ((b >> (8 * rank)) & 0xff) as usize;
    let mut letters = SPREAD[byte(bb[BB_BLACK])] & (0x20 * ONES);
    for (role, letter) in LETTERS.iter().enumerate() {
        letters |= SPREAD[byte(bb[role])] & (u64::from(*letter) * ONES);
    }
    letters
}

/// A rank's FEN text from its letters ([`rank_letters`]) and occupied
/// files: each piece's letter, each run of empty squares a digit, in one
/// fixed-length step with no branch per square.
#[inline]
fn rank_text(letters: u64, occupied: usize) -> ([u8; 8], u8) {
    let RankItems {
        files,
        digits,
        count,
    } = RANK_ITEMS[occupied & 0xff];
    (select_letters(letters, files, digits).to_le_bytes(), count)
}

/// Byte `j` of the result: byte `files[j]` of `letters` where `files[j]`
/// is a file (below 8), else byte `j` of `digits` (`files[j]` is 0x80
/// there): one byte shuffle where the processor has it (SSSE3's `pshufb`,
/// found at run time), else a step per byte.
#[inline]
fn select_letters(letters: u64, files: u64, digits: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the processor has SSSE3 (checked just above), the only
        // requirement of `shuffle_ssse3`.
        return unsafe { shuffle_ssse3(letters, files) } | digits;
    }
    select_bytewise(letters, files, digits)
}

/// [`select_letters`] a byte at a time.
fn select_bytewise(letters: u64, files: u64, digits: u64) -> u64 {
    let mut word = digits;
    for j in 0..8 {
        let file = (files >> (8 * j)) as u8;
        if file < 8 {
            word |= ((letters >> (8 * file)) & 0xff) << (8 * j);
        }
    }
    word
}

/// Byte `j`: byte `files[j]` of `letters`, or 0 where `files[j]` has its
/// top bit set (`pshufb` on the low eight bytes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
fn shuffle_ssse3(letters: u64, files: u64) -> u64 {
    use std::arch::x86_64::{_mm_cvtsi64_si128, _mm_cvtsi128_si64, _mm_shuffle_epi8};
    let shuffled = _mm_shuffle_epi8(
        _mm_cvtsi64_si128(letters as i64),
        _mm_cvtsi64_si128(files as i64),
    );
    _mm_cvtsi128_si64(shuffled) as u64
}

/// For each byte, the word whose byte f is 0xff where the byte's bit f is
/// set, else 0.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut f = 0;
        while f < 8 {
            if b >> f & 1 != 0 {
                t[b] |= 0xff << (8 * f);
            }
            f += 1;
        }
        b += 1;
    }
    t
};

/// Appends the FEN of `rec` with halfmove clock `halfmoves` and move
/// number `fullmoves`: what shakmaty writes for its setup
/// (`chess::setup_of`; X-FEN castling: `K`/`Q` for the outermost rook on
/// the king's side of the back rank, else the rook's file), built from the
/// bitboards directly; `board` holds the ranks of the FEN written before
/// (any position's), brought up to `rec`'s.
fn push_fen(
    out: &mut Vec<u8>,
    board: &mut BoardText,
    rec: &PositionRecord,
    halfmoves: u16,
    fullmoves: u32,
) {
    board.update(rec);
    // Built in place at the end of `out` (128 bytes made room for, then
    // cut to the FEN): no copy from a buffer of its own.
    let start = out.len();
    out.resize(start + FEN_ROOM, 0);
    let Some(buf) = out
        .get_mut(start..)
        .and_then(|b| b.first_chunk_mut::<FEN_ROOM>())
    else {
        // Not reached: the room was just made.
        out.truncate(start);
        return;
    };
    let mut fen = FenBuf { buf, len: 0 };
    let (white, black) = (rec.bb[BB_WHITE], rec.bb[BB_BLACK]);
    for rank in (0..8).rev() {
        let (word, count) = board.ranks[rank];
        let at = fen.len;
        fen.buf[at..at + 8].copy_from_slice(&word);
        fen.len = at + usize::from(count);
        if rank > 0 {
            fen.push(b'/');
        }
    }
    fen.extend(if rec.white_to_move() { b" w " } else { b" b " });
    const BACK_RANKS: u64 = 0xff00_0000_0000_00ff;
    let key = (
        rec.castling,
        rec.bb[BB_KING] & white,
        rec.bb[BB_KING] & black,
        rec.bb[BB_ROOK] & white & BACK_RANKS,
        rec.bb[BB_ROOK] & black & BACK_RANKS,
    );
    // Most often the field of the position before: the rights change a
    // few times a game.
    let (field, len) = match board.castling {
        Some((k, field)) if k == key => field,
        _ => {
            let field = castling_field(rec);
            board.castling = Some((key, field));
            field
        }
    };
    fen.extend(&field[..usize::from(len)]);
    fen.push(b' ');
    if rec.ep < 64 {
        fen.extend(&[b'a' + rec.ep % 8, b'1' + rec.ep / 8]);
    } else {
        fen.push(b'-');
    }
    fen.push(b' ');
    fen.decimal(u32::from(halfmoves));
    fen.push(b' ');
    fen.decimal(fullmoves.max(1));
    let len = fen.len;
    out.truncate(start + len);
}

/// The FENs [`push_fen`] writes for `records` (halfmove clocks and move
/// numbers `counters`) visited in `order`, with one board text.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fens_in_order(
    records: &[PositionRecord],
    counters: &[(u16, u32)],
    order: &[usize],
) -> Vec<String> {
    let mut board = BoardText::new();
    order
        .iter()
        .map(|&i| {
            let mut out = Vec::new();
            let (halfmoves, fullmoves) = counters[i];
            push_fen(&mut out, &mut board, &records[i], halfmoves, fullmoves);
            String::from_utf8_lossy(&out).into_owned()
        })
        .collect()
}

/// The castling field of `rec`'s FEN (see [`push_fen`]): `-` without
/// rights.
fn castling_field(rec: &PositionRecord) -> FenField {
    let (white, black) = (rec.bb[BB_WHITE], rec.bb[BB_BLACK]);
    let mut field = ([0u8; 16], 0u8);
    for (is_white, colour, rank) in [(true, white, 0u32), (false, black, 7)] {
        let back = 0xffu64 << (8 * rank);
        // The king, if there is one of that colour and it is on its
        // back rank.
        let kings = rec.bb[BB_KING] & colour;
        let king = if kings.count_ones() == 1 {
            kings & back
        } else {
            0
        };
        let rooks = rec.bb[BB_ROOK] & colour & back;
        let rights = if is_white {
            u64::from(rec.castling & 0xff)
        } else {
            u64::from(rec.castling >> 8)
        } << (8 * rank);
        // Highest file first, as shakmaty writes them.
        for f in (0..8).rev().filter(|f| rights >> (8 * rank + f) & 1 != 0) {
            let sq = 8 * rank + f;
            let k = (king != 0).then(|| king.trailing_zeros());
            let c = if rooks != 0 && sq == rooks.trailing_zeros() && k.is_some_and(|k| sq < k) {
                b'Q'
            } else if rooks != 0 && sq == 63 - rooks.leading_zeros() && k.is_some_and(|k| k < sq) {
                b'K'
            } else {
                b'A' + f as u8
            };
            field.0[usize::from(field.1)] = if is_white { c } else { c.to_ascii_lowercase() };
            field.1 += 1;
        }
    }
    if field.1 == 0 {
        field = (*b"-_______________", 1);
    }
    field
}

/// A rank's FEN items for one occupancy ([`RANK_ITEMS`]).
#[derive(Clone, Copy)]
struct RankItems {
    /// Byte `j`: the file whose piece is item `j`, or 0x80 where item `j`
    /// is a run of empty squares (or past the last item).
    files: u64,
    /// Byte `j`: the digit of item `j` where it is a run of empty
    /// squares, else 0.
    digits: u64,
    /// The number of items.
    count: u8,
}

/// For each occupancy of a rank (bit `f`: file `f` occupied), the rank's
/// FEN items in order (a piece, by its file; a run of empty squares, by
/// its length as a digit).
static RANK_ITEMS: [RankItems; 256] = {
    let mut t = [RankItems {
        files: 0,
        digits: 0,
        count: 0,
    }; 256];
    let mut o = 0;
    while o < 256 {
        let (mut files, mut digits, mut n, mut empty) = (0x8080_8080_8080_8080u64, 0u64, 0, 0u64);
        let mut f = 0;
        while f < 8 {
            if o >> f & 1 != 0 {
                if empty > 0 {
                    digits |= (b'0' as u64 + empty) << (8 * n);
                    n += 1;
                    empty = 0;
                }
                files &= !(0xff << (8 * n));
                files |= (f as u64) << (8 * n);
                n += 1;
            } else {
                empty += 1;
            }
            f += 1;
        }
        if empty > 0 {
            digits |= (b'0' as u64 + empty) << (8 * n);
            n += 1;
        }
        t[o] = RankItems {
            files,
            digits,
            count: n as u8,
        };
        o += 1;
    }
    t
};

/// Room for a FEN (longest: 71 bytes of board, 16 castling letters, 2
/// numbers of 10 digits and separators, under 128).
const FEN_ROOM: usize = 128;

/// A FEN built in place: its first `len` bytes of `buf`.
struct FenBuf<'b> {
    buf: &'b mut [u8; FEN_ROOM],
    len: usize,
}

impl FenBuf<'_> {
    #[inline]
    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    #[inline]
    fn extend(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn decimal(&mut self, n: u32) {
        // Clocks and move numbers: most often under 100.
        if n < 10 {
            self.push(b'0' + n as u8);
            return;
        }
        if n < 100 {
            self.extend(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
            return;
        }
        let width = n.checked_ilog10().unwrap_or(0) as usize + 1;
        let mut v = n;
        for d in self.buf[self.len..self.len + width].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.len += width;
    }
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

/// Appends the move from `parent` to `child` as [`san_of`] gives it (a
/// JSON string), without building a position: `parent` is a position
/// shakmaty takes as it stands, with one king of the side to move (the
/// caller knows). A move of a knight, bishop, rook or queen gets the file
/// and rank shakmaty gives it from the other pieces of its kind that could
/// legally go to the same square. Returns false, writing nothing, where
/// the records give no move.
fn push_plain_san(out: &mut Vec<u8>, parent: &PositionRecord, child: &PositionRecord) -> bool {
    const FILES: &[u8; 8] = b"abcdefgh";
    const LETTERS: &[u8; 6] = b"PNBRQK";
    let mv = child.mv;
    if mv.is_none() || mv.is_null() {
        return false;
    }
    let (from, to) = (mv.from(), mv.to());
    if to >= 64 || from >= 64 {
        return false;
    }
    let square = [FILES[usize::from(to % 8)], b'1' + to / 8];
    let start = out.len();
    out.push(b'"');
    match mv.kind() {
        MoveKind::CastleKingside => out.extend_from_slice(b"O-O"),
        MoveKind::CastleQueenside => out.extend_from_slice(b"O-O-O"),
        MoveKind::EnPassant => {
            out.extend_from_slice(&[FILES[usize::from(from % 8)], b'x']);
            out.extend_from_slice(&square);
        }
        MoveKind::Normal => {
            let Some(role) = role_of(mv.role()) else {
                out.truncate(start);
                return false;
            };
            let capture = role_of(mv.captured()).is_some();
            let index = role as usize - 1;
            if role == shakmaty::Role::Pawn {
                if capture {
                    out.push(FILES[usize::from(from % 8)]);
                }
            } else {
                out.push(LETTERS[index]);
                if role != shakmaty::Role::King {
                    let Some(others) = rivals(parent, role, from, to) else {
                        out.truncate(start);
                        return false;
                    };
                    // shakmaty's rule (`San::disambiguate`): the file unless
                    // a rival shares it and none shares the rank.
                    let (on_file, on_rank) = (
                        others & file_mask(from % 8) != 0,
                        others & rank_mask(from / 8) != 0,
                    );
                    if others != 0 && (!on_file || on_rank) {
                        out.push(FILES[usize::from(from % 8)]);
                    }
                    if on_file {
                        out.push(b'1' + from / 8);
                    }
                }
            }
            if capture {
                out.push(b'x');
            }
            out.extend_from_slice(&square);
            if let Some(p) = role_of(mv.promotion()) {
                out.extend_from_slice(&[b'=', LETTERS[p as usize - 1]]);
            }
        }
    }
    if child.has(flags::MATE) {
        out.push(b'#');
    } else if child.has(flags::CHECK) {
        out.push(b'+');
    }
    out.push(b'"');
    true
}

/// The squares of the other pieces of `role` (a knight, bishop, rook or
/// queen) of the side to move in `parent` that could legally go to `to`
/// (squares below 64), as shakmaty's `san_candidates` finds them, without
/// generating moves: each attacks `to` and leaves its king unattacked.
/// `None` when the side to move has not exactly one king.
fn rivals(parent: &PositionRecord, role: shakmaty::Role, from: u8, to: u8) -> Option<u64> {
    use shakmaty::attacks::{
        bishop_attacks, king_attacks, knight_attacks, pawn_attacks, queen_attacks, rook_attacks,
    };
    use shakmaty::{Bitboard, Role};
    let bb = &parent.bb;
    let (us, them) = if parent.white_to_move() {
        (bb[BB_WHITE], bb[BB_BLACK])
    } else {
        (bb[BB_BLACK], bb[BB_WHITE])
    };
    let occupied = us | them;
    let to_sq = Square::new(u32::from(to));
    let others = bb[role as usize - 1] & us & !(1u64 << from);
    // The lines through `to` first: a slider's attack lookup (a large
    // table) only where a rival stands on one.
    let lines = |k: usize| LINE_SQUARES[k][usize::from(to)];
    let reach = match role {
        Role::Knight => knight_attacks(to_sq),
        Role::Bishop if others & lines(1) == 0 => return Some(0),
        Role::Bishop => bishop_attacks(to_sq, Bitboard(occupied)),
        Role::Rook if others & lines(0) == 0 => return Some(0),
        Role::Rook => rook_attacks(to_sq, Bitboard(occupied)),
        Role::Queen if others & lines(2) == 0 => return Some(0),
        Role::Queen => queen_attacks(to_sq, Bitboard(occupied)),
        Role::Pawn | Role::King => return Some(0),
    };
    let mut candidates = others & reach.0;
    if candidates == 0 {
        return Some(0);
    }
    let king = bb[BB_KING] & us;
    if king.count_ones() != 1 {
        return None;
    }
    let king = Square::new(king.trailing_zeros());
    let colour = if parent.white_to_move() {
        Color::White
    } else {
        Color::Black
    };
    // Their pieces after a move to `to` (a piece there is captured).
    let theirs = |k: usize| bb[k] & them & !(1u64 << to);
    let leapers = (knight_attacks(king).0 & theirs(BB_KNIGHT))
        | (pawn_attacks(colour, king).0 & theirs(BB_PAWN))
        | (king_attacks(king).0 & theirs(BB_KING));
    let diagonal = theirs(BB_BISHOP) | theirs(BB_QUEEN);
    let straight = theirs(BB_ROOK) | theirs(BB_QUEEN);
    let mut legal = 0;
    while candidates != 0 {
        let sq = candidates & candidates.wrapping_neg();
        candidates ^= sq;
        let after = Bitboard((occupied & !sq) | (1u64 << to));
        let attacked = leapers
            | (bishop_attacks(king, after).0 & diagonal)
            | (rook_attacks(king, after).0 & straight);
        if attacked == 0 {
            legal |= sq;
        }
    }
    Some(legal)
}

/// Appends `s` as a JSON string (quoted and escaped by `serde_json`).
fn push_string(out: &mut Vec<u8>, s: &str) {
    // Writing a `str` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Appends `bytes` (a tag's value: most often printable ASCII) as a JSON
/// string: quoted as they are where no byte needs escaping or is not
/// ASCII, else as [`push_string`] writes them read as UTF-8 (each
/// invalid sequence U+FFFD).
fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes
        .iter()
        .all(|&b| (b' '..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        push_string(out, &String::from_utf8_lossy(bytes));
    }
}

/// Appends the decimal form of `n`.
#[inline]
fn push_integer(out: &mut Vec<u8>, n: i64) {
    // Indices and plies: most often under 1000.
    if (0..1000).contains(&n) {
        let n = n as usize;
        let (h, t, u) = (
            b'0' + (n / 100) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
        );
        if n >= 100 {
            out.extend_from_slice(&[h, t, u]);
        } else if n >= 10 {
            out.extend_from_slice(&[t, u]);
        } else {
            out.push(u);
        }
        return;
    }
    push_integer_long(out, n);
}

/// [`push_integer`] for any `n`.
fn push_integer_long(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    let mut v = n.unsigned_abs();
    let width = v.checked_ilog10().unwrap_or(0) as usize + 1;
    // The digits left-aligned in a fixed-length buffer, appended whole (a
    // copy of known length, not a call to `memcpy`) and then cut.
    let mut digits = [0u8; 20];
    for d in digits[..width].iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let end = out.len() + width;
    out.extend_from_slice(&digits);
    out.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `push_fen` writes what shakmaty writes for the position, X-FEN
    /// castling included (inner rooks of Chess960 by file letter).
    #[test]
    fn fen_from_the_record_is_shakmatys() {
        use crate::runtime::layout::chess::record_of;
        use shakmaty::{CastlingMode, EnPassantMode};
        for (fen, mode) in [
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                CastlingMode::Standard,
            ),
            (
                "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                CastlingMode::Standard,
            ),
            (
                "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 12 40",
                CastlingMode::Standard,
            ),
            ("8/8/8/4k3/8/8/8/4K3 w - - 0 70", CastlingMode::Standard),
            (
                "1r2k1rr/8/8/8/8/8/8/RR2K1R1 w BGbg - 0 1",
                CastlingMode::Chess960,
            ),
            (
                "rr2k2r/8/8/8/8/8/8/R3K1RR w AGbh - 0 1",
                CastlingMode::Chess960,
            ),
            (
                "2rkr3/8/8/8/8/8/8/2RKR3 b CEce - 3 9",
                CastlingMode::Chess960,
            ),
        ] {
            let setup = Fen::from_ascii(fen.as_bytes()).unwrap().into_setup();
            let pos: shakmaty::Chess = setup.position(mode).unwrap();
            let rec = record_of(&pos, mode == CastlingMode::Chess960);
            let mut out = Vec::new();
            let (halfmoves, fullmoves) = counters_of(&pos);
            push_fen(&mut out, &mut BoardText::new(), &rec, halfmoves, fullmoves);
            let want = Fen::from_position(&pos, EnPassantMode::Legal).to_string();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{fen}");
        }
    }

    /// A generator of numbers below `n` (xorshift from `seed`).
    fn xorshift(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        }
    }

    /// A game of at most `plies` moves from the start, each picked by
    /// `next` among the legal ones.
    fn random_game(next: &mut impl FnMut(usize) -> usize, plies: usize) -> Vec<Move> {
        let mut pos = shakmaty::Chess::default();
        let mut picks = Vec::new();
        for _ in 0..plies {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let m = legal[next(legal.len())];
            picks.push(m);
            pos.play_unchecked(m);
        }
        picks
    }

    /// The halfmove clock (clamped as the store clamps it) and move number
    /// of `pos`.
    fn counters_of(pos: &shakmaty::Chess) -> (u16, u32) {
        let halfmoves = u16::try_from(pos.halfmoves()).unwrap_or(u16::MAX);
        (halfmoves, pos.fullmoves().get())
    }

    /// The halfmove clock the store does not keep, counted from the moves
    /// (`halfmove_after`), is shakmaty's in random games, and after null
    /// moves (which leave it as it was).
    #[test]
    fn halfmove_clocks_follow_the_moves() {
        use crate::runtime::layout::{PackedMove, halfmove_after};
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..60 {
            let picks = random_game(&mut next, 300);
            let seen = played(&picks);
            let mut clock = 0u16;
            for (k, (pos, rec)) in seen.iter().enumerate() {
                if k > 0 {
                    clock = halfmove_after(clock, rec.mv);
                }
                assert_eq!(clock, counters_of(pos).0, "ply {k}");
            }
        }
        let mut pos = shakmaty::Chess::default();
        for san in ["Nf3", "Nf6", "Ng1"] {
            let m = San::from_ascii(san.as_bytes())
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
        }
        let king = pos.board().king_of(pos.turn()).unwrap();
        let null = PackedMove::null(king, pos.turn());
        let after = pos.clone().swap_turn().unwrap();
        assert_eq!(halfmove_after(3, null), 3);
        assert_eq!(after.halfmoves(), 3);
    }

    /// The records of the positions after `moves` from the start,
    /// each with the move that led to it, and the positions.
    fn played(moves: &[Move]) -> Vec<(shakmaty::Chess, PositionRecord)> {
        use crate::runtime::layout::chess::{pack_move, record_of};
        let mut pos = shakmaty::Chess::default();
        let mut seen = vec![(pos.clone(), record_of(&pos, false))];
        for &m in moves {
            let turn = pos.turn();
            pos.play_unchecked(m);
            let mut rec = record_of(&pos, false);
            rec.mv = pack_move(m, turn);
            seen.push((pos.clone(), rec));
        }
        seen
    }

    /// Writes the FENs of `seen` in `order` with one `BoardText` and
    /// checks them against
    /// shakmaty's.
    fn check_fens_in_order(seen: &[(shakmaty::Chess, PositionRecord)], order: &[usize]) {
        use shakmaty::EnPassantMode;
        let records: Vec<PositionRecord> = seen.iter().map(|(_, r)| *r).collect();
        let counters: Vec<(u16, u32)> = seen.iter().map(|(p, _)| counters_of(p)).collect();
        for (&i, fen) in order.iter().zip(fens_in_order(&records, &counters, order)) {
            let want = Fen::from_position(&seen[i].0, EnPassantMode::Legal).to_string();
            assert_eq!(fen, want, "position {i}");
        }
    }

    /// FENs written one after another with one `BoardText` (ranks kept
    /// from the position before, letters moved by the move from the
    /// parent) are shakmaty's, also after a jump back to an earlier
    /// position.
    #[test]
    fn fens_in_a_row_keep_only_unchanged_ranks() {
        let moves = "e4 d5 exd5 Nf6 Nc3 Nbd7 Nf3 e5 dxe6 Bd6 exd7+ Kf8 Be2 h5 O-O h4 dxc8=N Qxc8";
        let mut pos = shakmaty::Chess::default();
        let mut picks = Vec::new();
        for token in moves.split_whitespace() {
            let m = San::from_ascii(token.as_bytes())
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
            picks.push(m);
        }
        let seen = played(&picks);
        // In order, then back to the start, then every third.
        let order: Vec<usize> = (0..seen.len())
            .chain([0])
            .chain((0..seen.len()).step_by(3))
            .collect();
        check_fens_in_order(&seen, &order);
    }

    /// Random games (promotions, castling, en passant, captures of every
    /// kind) written position after position, and with gaps, give
    /// shakmaty's FENs; a record whose move does not match its bitboards
    /// (as a damaged store might hold) still gives its bitboards' FEN.
    #[test]
    fn fens_of_random_games_follow_the_moves() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for game in 0..80 {
            let picks = random_game(&mut next, 250);
            let mut seen = played(&picks);
            let all: Vec<usize> = (0..seen.len()).collect();
            check_fens_in_order(&seen, &all);
            let gaps: Vec<usize> = (0..seen.len()).filter(|_| next(4) > 0).collect();
            check_fens_in_order(&seen, &gaps);
            // A move that says another piece moved, or another square.
            if seen.len() > 2 && game % 2 == 0 {
                let k = 1 + next(seen.len() - 1);
                let wrong = seen[k - 1].1.mv;
                seen[k].1.mv = if wrong.is_none() { seen[k].1.mv } else { wrong };
                check_fens_in_order(&seen, &all);
            }
        }
    }

    /// Both ways of `select_letters` agree, on every occupancy; each
    /// rank text is the items of its occupancy.
    #[test]
    fn rank_texts_are_the_same_both_ways() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for (occupied, items) in RANK_ITEMS.iter().enumerate() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Letters where occupied, as `rank_letters` gives them.
            let letters = (0..8).fold(0u64, |w, f| {
                let letter = b"PNBRQKpnbrqk"[(x >> (4 * f)) as usize % 12];
                w | (u64::from(letter) * u64::from(occupied >> f & 1 == 1)) << (8 * f)
            });
            let RankItems {
                files,
                digits,
                count,
            } = *items;
            let (text, n) = rank_text(letters, occupied);
            assert_eq!(select_bytewise(letters, files, digits).to_le_bytes(), text);
            assert_eq!(n, count);
            let text = std::str::from_utf8(&text[..usize::from(n)]).unwrap();
            let squares: usize = text
                .bytes()
                .map(|b| {
                    if b.is_ascii_digit() {
                        usize::from(b - b'0')
                    } else {
                        1
                    }
                })
                .sum();
            assert_eq!(squares, 8, "{text}");
        }
    }

    /// Tag values are written as `serde_json` writes them read as UTF-8,
    /// plain ASCII quoted as it is.
    #[test]
    fn tag_bytes_are_written_as_serde_json_writes_them() {
        for value in [
            &b"Carlsen, Magnus"[..],
            b"",
            b"say \"hi\"",
            b"back\\slash",
            b"tab\there",
            b"\x7f",
            b"Ni\xc3\xb1o",
            b"bad \xff byte",
            b"~ }{ ",
        ] {
            let mut out = Vec::new();
            push_bytes(&mut out, value);
            let want = json!(String::from_utf8_lossy(value)).to_string();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{value:?}");
        }
    }

    /// `changed_ranks` sets bit `r` exactly where byte `r` is not zero.
    #[test]
    fn changed_ranks_has_a_bit_per_nonzero_byte() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Clear some bytes so that both kinds of byte come up.
            let v = x & (x >> 3) & 0xff00_ff00_00ff_8001u64.rotate_left((x % 64) as u32);
            let want = (0..8).fold(0, |m, r| m | u32::from((v >> (8 * r)) & 0xff != 0) << r);
            assert_eq!(changed_ranks(v), want, "{v:#x}");
        }
        assert_eq!(changed_ranks(0), 0);
        assert_eq!(changed_ranks(u64::MAX), 0xff);
        assert_eq!(changed_ranks(1 << 63), 0x80);
    }

    /// `push_plain_san` writes what `san_of` gives, also for moves that
    /// need a file, a rank or both, and past pinned rivals.
    #[test]
    fn plain_moves_are_written_as_san_of_writes_them() {
        let moves = "e4 d5 exd5 Nf6 Nc3 Nbd7 Nf3 e5 dxe6 Bd6 exd7+ Kf8 Ne5 Nd5 \
                     Nc4 Ke7 dxc8=Q Rxc8 Qe2+ Kf8 Nb5 a6 b3 a5 Bb2 h5 O-O-O h4 Nbxd6 cxd6 \
                     Qe8+ Kxe8";
        let written = san_walk(
            shakmaty::Chess::default(),
            moves.split_whitespace().map(|t| {
                move |pos: &shakmaty::Chess| {
                    San::from_ascii(t.as_bytes()).unwrap().to_move(pos).unwrap()
                }
            }),
        );
        assert_eq!(written.len(), 32);
        assert!(written.iter().any(|s| s == "Nbd7"));
        assert!(written.iter().any(|s| s == "Nbxd6"));
        // Rivals on one file, on one rank, on both, and one pinned.
        for (fen, want) in [
            ("4k3/8/8/R7/8/8/8/R3K3 w - - 0 1", "R1a3"),
            ("4k3/8/8/8/8/8/4K3/R6R w - - 0 1", "Rad1"),
            ("2k5/8/8/8/Q6Q/8/4K3/Q5Q1 w - - 0 1", "Qa1d4"),
            ("4k3/8/8/8/8/8/2N1N3/4K3 w - - 0 1", "Ncd4"),
            ("4k3/4r3/8/8/8/8/2N1N3/4K3 w - - 0 1", "Nd4"),
            ("7k/8/8/8/8/8/8/KN1r1N2 w - - 0 1", "Nd2"),
        ] {
            let setup = Fen::from_ascii(fen.as_bytes()).unwrap().into_setup();
            let pos: shakmaty::Chess = setup.position(shakmaty::CastlingMode::Standard).unwrap();
            let written = san_walk(
                pos,
                [move |pos: &shakmaty::Chess| {
                    let m = San::from_ascii(want.as_bytes()).unwrap();
                    m.to_move(pos).unwrap_or_else(|e| panic!("{want}: {e}"))
                }],
            );
            assert_eq!(written, [want.to_owned()], "{fen}");
        }
    }

    /// Random games (a fixed seed): every move `push_plain_san` writes is
    /// `san_of`'s, promotions making many rivals.
    #[test]
    fn random_games_are_written_as_san_of_writes_them() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut disambiguated = 0;
        for _ in 0..60 {
            // Promotions to knights, bishops, rooks and queens alike.
            let picks = random_game(&mut next, 300);
            let written = san_walk(
                shakmaty::Chess::default(),
                picks.into_iter().map(|m| move |_: &shakmaty::Chess| m),
            );
            disambiguated += written
                .iter()
                .filter(|s| {
                    let b = s.as_bytes();
                    b[0].is_ascii_uppercase()
                        && b[0] != b'K'
                        && b[0] != b'O'
                        && b[1..].iter().filter(|c| c.is_ascii_lowercase()).count()
                            + b[1..].iter().filter(|c| c.is_ascii_digit()).count()
                            > 2
                })
                .count();
        }
        assert!(disambiguated > 50, "{disambiguated}");
    }

    /// Plays the moves `pick` chooses from `pos` on, checking each against
    /// `san_of`; returns the moves as written (without quotes).
    fn san_walk<F: Fn(&shakmaty::Chess) -> Move>(
        mut pos: shakmaty::Chess,
        picks: impl IntoIterator<Item = F>,
    ) -> Vec<String> {
        use crate::runtime::layout::chess::{pack_move, record_of};
        let mut written = Vec::new();
        for pick in picks {
            let m = pick(&pos);
            let parent = record_of(&pos, false);
            let turn = pos.turn();
            pos.play_unchecked(m);
            let mut child = record_of(&pos, false);
            child.mv = pack_move(m, turn);
            let mut out = Vec::new();
            assert!(push_plain_san(&mut out, &parent, &child), "{m:?}");
            let want = format!("\"{}\"", san_of(&parent, &child).unwrap());
            let got = String::from_utf8(out).unwrap();
            assert_eq!(got, want, "{m:?}");
            written.push(got.trim_matches('"').to_owned());
        }
        written
    }

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
        for n in [
            0,
            1,
            -1,
            9,
            10,
            42,
            -90,
            99,
            100,
            999,
            1000,
            12345,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            push_integer(&mut out, n);
            assert_eq!(out, json!(n).to_string().into_bytes());
        }
    }

    /// Times the JSON writer over a store (`CQLJ_BENCH_STORE`): records
    /// decoded alone, FENs alone and whole lines, every position of every
    /// game a match (as `Ra1` on the book), then the lines without
    /// positions. Prints the CPU seconds of each round; checks that each
    /// wrote a line per position or per game.
    #[test]
    #[ignore = "a benchmark: needs CQLJ_BENCH_STORE"]
    fn bench_json() {
        let Some(store) = super::super::bench_store() else {
            return;
        };
        let cpu = super::super::thread_cpu_time;
        let games = store.n_games();
        let mut out = Vec::with_capacity(1 << 20);
        for round in 0..9 {
            out.clear();
            // Written as the printer writes: into a buffer of a task's
            // games (64), emptied after each task.
            let (mut bytes, mut lines) = (0, 0);
            let t = cpu();
            let mut cursor = store.position_cursor();
            let mut texts = store.text_reader();
            for g in 0..games {
                if g % 64 == 0 {
                    bytes += out.len();
                    lines += memchr::memchr_iter(b'\n', &out).count();
                    out.clear();
                }
                let (first, n) = store.game_span(g).unwrap();
                if round % 3 == 0 {
                    for i in 0..n {
                        let p = cursor.position(first + u64::from(i)).unwrap();
                        out.push(p.bb[0] as u8 ^ p.castling as u8 ^ p.ply as u8);
                    }
                } else if round % 3 == 1 {
                    let mut board = BoardText::new();
                    for i in 0..n {
                        let p = cursor.position(first + u64::from(i)).unwrap();
                        push_fen(&mut out, &mut board, &p, 0, u32::from(p.ply) / 2 + 1);
                        out.push(b'\n');
                    }
                } else {
                    let m = GameMatch {
                        game: g,
                        // The last round: the game's part alone.
                        positions: crate::scan::Positions::from(
                            (0..if round == 8 { 0 } else { n }).collect::<Vec<u32>>(),
                        ),
                        recorded: None,
                    };
                    match_json(&mut out, &store, &mut texts, &m).unwrap();
                }
            }
            bytes += out.len();
            lines += memchr::memchr_iter(b'\n', &out).count();
            let e = cpu() - t;
            let positions = store.n_positions() as usize;
            match round % 3 {
                0 => assert_eq!(bytes, positions),
                1 => assert_eq!(lines, positions),
                _ => assert_eq!(lines, games as usize),
            }
            eprintln!(
                "{}: {:.3} s, {} bytes",
                ["decode", "fens", "lines"][round % 3],
                e.as_secs_f64(),
                bytes
            );
        }
    }
}
