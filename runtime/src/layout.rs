//! The position record and the columnar chunk layout.
//!
//! **Architecture invariant:** column offsets are defined here and only here,
//! computed by the compiler (`offset_of!`). The JIT reads columns through
//! [`Column::offset`]; the interpreter and the importer go through
//! [`ChunkColumns`] and [`PositionRecord`].
//!
//! A chunk holds up to [`CHUNK_POSITIONS`] consecutive positions of the store
//! (positions of one game are consecutive, in PGN text order: the initial
//! position, then each move's position, a variation's positions right after
//! the position they branch from's mainline successor, as the PGN lists them).
//! Unused slots of the last chunk are zero.

use std::mem::{offset_of, size_of};

/// Positions per chunk.
pub const CHUNK_POSITIONS: usize = 4096;

/// One of the eight piece bitboards of a position, in the order of
/// [`PositionRecord::bb`] and of the bitboard columns: the six roles (in
/// role-index order, 0 = pawn .. 5 = king), then the two colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BitboardIndex {
    /// The squares of pawns of either colour.
    Pawn = 0,
    /// The squares of knights of either colour.
    Knight = 1,
    /// The squares of bishops of either colour.
    Bishop = 2,
    /// The squares of rooks of either colour.
    Rook = 3,
    /// The squares of queens of either colour.
    Queen = 4,
    /// The squares of kings of either colour.
    King = 5,
    /// The squares of white pieces.
    White = 6,
    /// The squares of black pieces.
    Black = 7,
}

impl BitboardIndex {
    /// All eight, in index order.
    pub const ALL: [BitboardIndex; BB_COUNT] = [
        BitboardIndex::Pawn,
        BitboardIndex::Knight,
        BitboardIndex::Bishop,
        BitboardIndex::Rook,
        BitboardIndex::Queen,
        BitboardIndex::King,
        BitboardIndex::White,
        BitboardIndex::Black,
    ];
    /// The six role bitboards, in role-index order.
    pub const ROLES: [BitboardIndex; 6] = [
        BitboardIndex::Pawn,
        BitboardIndex::Knight,
        BitboardIndex::Bishop,
        BitboardIndex::Rook,
        BitboardIndex::Queen,
        BitboardIndex::King,
    ];
    /// The index into [`PositionRecord::bb`] (one of the `BB_*`).
    pub const fn index(self) -> usize {
        self as usize
    }
    /// The colour bitboard of white (`true`) or black.
    pub const fn colour(white: bool) -> BitboardIndex {
        if white {
            BitboardIndex::White
        } else {
            BitboardIndex::Black
        }
    }
}

/// Index of the pawn bitboard in [`PositionRecord::bb`].
pub const BB_PAWN: usize = BitboardIndex::Pawn.index();
/// Index of the knight bitboard in [`PositionRecord::bb`].
pub const BB_KNIGHT: usize = BitboardIndex::Knight.index();
/// Index of the bishop bitboard in [`PositionRecord::bb`].
pub const BB_BISHOP: usize = BitboardIndex::Bishop.index();
/// Index of the rook bitboard in [`PositionRecord::bb`].
pub const BB_ROOK: usize = BitboardIndex::Rook.index();
/// Index of the queen bitboard in [`PositionRecord::bb`].
pub const BB_QUEEN: usize = BitboardIndex::Queen.index();
/// Index of the king bitboard in [`PositionRecord::bb`].
pub const BB_KING: usize = BitboardIndex::King.index();
/// Index of the white-pieces bitboard in [`PositionRecord::bb`].
pub const BB_WHITE: usize = BitboardIndex::White.index();
/// Index of the black-pieces bitboard in [`PositionRecord::bb`].
pub const BB_BLACK: usize = BitboardIndex::Black.index();
/// Number of bitboards per position.
pub const BB_COUNT: usize = 8;

/// Position flags (bits of [`PositionRecord::flags`]), computed at import.
pub mod flags {
    /// White is to move.
    pub const WHITE_TO_MOVE: u8 = 1 << 0;
    /// The side to move is in check.
    pub const CHECK: u8 = 1 << 1;
    /// The side to move is checkmated.
    pub const MATE: u8 = 1 << 2;
    /// The side to move is stalemated.
    pub const STALEMATE: u8 = 1 << 3;
    /// The game's first position (the start or the `[FEN]` setup).
    pub const INITIAL: u8 = 1 << 4;
    /// No move follows this position in the game (end of mainline or of a
    /// variation).
    pub const TERMINAL: u8 = 1 << 5;
    /// The position is on the mainline.
    pub const MAINLINE: u8 = 1 << 6;
    /// The game is Chess960 (castling by rook squares).
    pub const CHESS960: u8 = 1 << 7;
}

/// The bit layout of a [`PackedMove`]: each field's shift and mask (of the
/// field's value after the shift). The accessors and the JIT's decoding both
/// use these, so the layout is written only here.
pub mod move_bits {
    /// From square (0..64).
    pub const FROM_SHIFT: u32 = 0;
    /// To square (0..64).
    pub const TO_SHIFT: u32 = 6;
    /// Mask of a square field.
    pub const SQUARE_MASK: u32 = 63;
    /// Moving role (0 = pawn .. 5 = king; [`super::PackedMove::NO_ROLE`]:
    /// no move).
    pub const ROLE_SHIFT: u32 = 12;
    /// Captured role ([`super::PackedMove::NO_ROLE`]: none).
    pub const CAPTURED_SHIFT: u32 = 15;
    /// Promotion role ([`super::PackedMove::NO_ROLE`]: none).
    pub const PROMOTION_SHIFT: u32 = 18;
    /// Mask of a role field.
    pub const ROLE_MASK: u32 = 7;
    /// The [`super::MoveKind`].
    pub const KIND_SHIFT: u32 = 21;
    /// Mask of the kind field.
    pub const KIND_MASK: u32 = 3;
    /// Set when the mover was white (one bit).
    pub const WHITE_SHIFT: u32 = 23;
}

/// The kind of a packed move (2 bits; every value is a kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MoveKind {
    /// Any move that is neither en passant nor castling (promotions
    /// included).
    Normal = 0,
    /// A pawn capturing en passant.
    EnPassant = 1,
    /// Castling on the king's side (towards the h-file).
    CastleKingside = 2,
    /// Castling on the queen's side (towards the a-file).
    CastleQueenside = 3,
}

impl MoveKind {
    /// The kind of the low two bits of `bits`.
    pub const fn from_bits(bits: u8) -> MoveKind {
        match bits & 3 {
            0 => MoveKind::Normal,
            1 => MoveKind::EnPassant,
            2 => MoveKind::CastleKingside,
            _ => MoveKind::CastleQueenside,
        }
    }
    /// Whether the kind is a castling (either side).
    pub const fn is_castle(self) -> bool {
        matches!(self, MoveKind::CastleKingside | MoveKind::CastleQueenside)
    }
}

/// The fields of a move, before packing. For castling, `from` is the king's
/// square and `to` the king's destination square; for en passant,
/// `captured` is the pawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveParts {
    /// The square the moving piece leaves.
    pub from: shakmaty::Square,
    /// The square the moving piece arrives on.
    pub to: shakmaty::Square,
    /// The role of the moving piece (before any promotion).
    pub role: shakmaty::Role,
    /// The role of the captured piece, if any.
    pub captured: Option<shakmaty::Role>,
    /// The role a pawn promotes to, if any.
    pub promotion: Option<shakmaty::Role>,
    /// Normal, en passant, or castling (which side).
    pub kind: MoveKind,
    /// The colour of the side that moves.
    pub mover: shakmaty::Color,
}

/// The move that led to a position, packed in 32 bits as [`move_bits`]
/// lays out: from and to squares, moving, captured and promotion roles
/// (0 = pawn .. 5 = king, [`PackedMove::NO_ROLE`] = none; a moving role of
/// `NO_ROLE` is no move: an initial position), the [`MoveKind`], and whether
/// the mover was white.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct PackedMove(pub u32);

impl PackedMove {
    /// Role code meaning "none".
    pub const NO_ROLE: u8 = 7;
    /// The "move" of an initial position.
    pub const NONE: PackedMove = PackedMove(
        (Self::NO_ROLE as u32) << move_bits::ROLE_SHIFT
            | (Self::NO_ROLE as u32) << move_bits::CAPTURED_SHIFT
            | (Self::NO_ROLE as u32) << move_bits::PROMOTION_SHIFT,
    );

    /// Packs a move.
    pub fn new(m: MoveParts) -> PackedMove {
        use move_bits::*;
        let role = |r: Option<shakmaty::Role>| r.map_or(Self::NO_ROLE, chess::role_index) as u32;
        PackedMove(
            (m.from as u32 & SQUARE_MASK) << FROM_SHIFT
                | (m.to as u32 & SQUARE_MASK) << TO_SHIFT
                | role(Some(m.role)) << ROLE_SHIFT
                | role(m.captured) << CAPTURED_SHIFT
                | role(m.promotion) << PROMOTION_SHIFT
                | (m.kind as u32 & KIND_MASK) << KIND_SHIFT
                | ((m.mover == shakmaty::Color::White) as u32) << WHITE_SHIFT,
        )
    }
    fn field(self, shift: u32, mask: u32) -> u8 {
        (self.0 >> shift & mask) as u8
    }
    /// Whether this is no move (the "move" of an initial position).
    pub fn is_none(self) -> bool {
        self.role() == Self::NO_ROLE
    }
    /// A null move (`--` in PGN) by `mover`, whose king stands on `king`:
    /// as CQL 6.2 sees it, a king move from its square to the same square
    /// (no other move of kind [`MoveKind::Normal`] has equal from and to
    /// squares; a Chess960 castling may, and is of a castling kind).
    pub fn null(king: shakmaty::Square, mover: shakmaty::Color) -> PackedMove {
        PackedMove::new(MoveParts {
            from: king,
            to: king,
            role: shakmaty::Role::King,
            captured: None,
            promotion: None,
            kind: MoveKind::Normal,
            mover,
        })
    }
    /// Whether the move resets the halfmove clock: a pawn move or a
    /// capture (en passant included).
    #[inline]
    pub fn is_zeroing(self) -> bool {
        !self.is_none() && (self.role() == 0 || self.captured() != Self::NO_ROLE)
    }
    /// Whether this is a null move ([`PackedMove::null`]).
    #[inline]
    pub fn is_null(self) -> bool {
        !self.is_none() && self.from() == self.to() && self.kind() == MoveKind::Normal
    }
    /// The from square (0 = a1 .. 63 = h8).
    pub fn from(self) -> u8 {
        self.field(move_bits::FROM_SHIFT, move_bits::SQUARE_MASK)
    }
    /// The to square (0 = a1 .. 63 = h8).
    pub fn to(self) -> u8 {
        self.field(move_bits::TO_SHIFT, move_bits::SQUARE_MASK)
    }
    /// The moving role (0 = pawn .. 5 = king; [`Self::NO_ROLE`]: no move).
    pub fn role(self) -> u8 {
        self.field(move_bits::ROLE_SHIFT, move_bits::ROLE_MASK)
    }
    /// The captured role ([`Self::NO_ROLE`]: no capture).
    pub fn captured(self) -> u8 {
        self.field(move_bits::CAPTURED_SHIFT, move_bits::ROLE_MASK)
    }
    /// The promotion role ([`Self::NO_ROLE`]: no promotion).
    pub fn promotion(self) -> u8 {
        self.field(move_bits::PROMOTION_SHIFT, move_bits::ROLE_MASK)
    }
    /// The kind of the move.
    pub fn kind(self) -> MoveKind {
        MoveKind::from_bits(self.field(move_bits::KIND_SHIFT, move_bits::KIND_MASK))
    }
    /// Whether the mover was white.
    pub fn white(self) -> bool {
        self.field(move_bits::WHITE_SHIFT, 1) == 1
    }
}

/// The halfmove clock (fifty-move rule) of a position reached by `mv`
/// from a position whose clock is `parent`. The store does not keep the
/// clock: it follows from the moves and the game's initial clock
/// (`GameEntry::setup_halfmoves`), as shakmaty counts it at import: 0
/// after a pawn move or a capture (en passant included), unchanged after
/// a null move ([`PackedMove::is_null`]: the side to move passes), else
/// one more (saturating at `u16::MAX`, where the importer clamped it).
#[inline]
pub fn halfmove_after(parent: u16, mv: PackedMove) -> u16 {
    if mv.is_null() {
        parent
    } else if mv.is_zeroing() {
        0
    } else {
        parent.saturating_add(1)
    }
}

/// One position in row form (decoded from, or about to be written to, the
/// columns). What the interpreter evaluates on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PositionRecord {
    /// Piece bitboards, indexed by `BB_*`.
    pub bb: [u64; BB_COUNT],
    /// The move that led here ([`PackedMove::NONE`] for an initial position).
    pub mv: PackedMove,
    /// Distance back (in positions of the same game) to the parent position;
    /// 0 for the initial position.
    pub parent_delta: u16,
    /// Ply of this position counted from the game's start (initial = 0).
    pub ply: u16,
    /// Castling rights as rook files: bit x = white may castle with the rook
    /// on file x of rank 1; bit 8 + x = black, rank 8.
    pub castling: u16,
    /// En-passant target square (0..64), or 64 if none. Set only when an
    /// en-passant capture is legal (shakmaty's `EnPassantMode::Legal`).
    pub ep: u8,
    /// `flags::*` bits.
    pub flags: u8,
}

impl PositionRecord {
    /// The occupied squares (pieces of either colour).
    pub fn occupied(&self) -> u64 {
        self.bb[BB_WHITE] | self.bb[BB_BLACK]
    }
    /// Whether any bit of `flag` (a `flags::*` mask) is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// Whether white is to move.
    pub fn white_to_move(&self) -> bool {
        self.has(flags::WHITE_TO_MOVE)
    }
    /// Bitboard of the given colour and role (0 = pawn .. 5 = king).
    pub fn pieces(&self, white: bool, role: usize) -> u64 {
        self.bb[role] & self.bb[if white { BB_WHITE } else { BB_BLACK }]
    }
}

/// Number of bitboards stored as u64 columns: all but the kings', which are
/// stored as squares ([`ChunkColumns::kings`]).
pub const BOARD_COLUMNS: usize = BB_COUNT - 1;

/// The slot in [`ChunkColumns::boards`] of bitboard `k` (a `BB_*`), or
/// `None` for the kings (stored as squares in [`ChunkColumns::kings`]).
pub const fn board_slot(k: usize) -> Option<usize> {
    match k {
        BB_KING => None,
        k if k < BB_KING => Some(k),
        k if k < BB_COUNT => Some(k - 1),
        _ => None,
    }
}

/// The king bitboard of a [`ChunkColumns::kings`] entry: the white king's
/// square in the low byte, the black king's in the high byte. Each square
/// is taken modulo 64, as the JIT's shift does (a store written by
/// [`crate::store::StoreWriter`] holds only squares below 64, and any
/// `u16` decodes without panicking).
pub const fn king_bits(kings: u16) -> u64 {
    1u64 << (kings & 63) | 1u64 << ((kings >> 8) & 63)
}

/// The [`ChunkColumns::kings`] entry of a record: the squares of its white
/// and black kings (the lowest square when there are several, 0 when
/// none). Exact ([`king_bits`] gives the record's king bitboard back)
/// iff [`kings_representable`] holds.
pub const fn kings_of(bb: &[u64; BB_COUNT]) -> u16 {
    let white = ((bb[BB_KING] & bb[BB_WHITE]).trailing_zeros() & 63) as u16;
    let black = ((bb[BB_KING] & bb[BB_BLACK]).trailing_zeros() & 63) as u16;
    white | black << 8
}

/// Whether the king bitboard of `bb` survives the columns: exactly one
/// white and one black king, each of a colour. Every position the
/// importer builds has one king a side (shakmaty's `Chess` positions and
/// the FENs CQL 6.2 reads).
pub const fn kings_representable(bb: &[u64; BB_COUNT]) -> bool {
    let k = bb[BB_KING];
    (k & bb[BB_WHITE]).count_ones() == 1
        && (k & bb[BB_BLACK]).count_ones() == 1
        && k & !(bb[BB_WHITE] | bb[BB_BLACK]) == 0
}

/// The back-rank files of a colour's king and rooks (bit f = file f), when
/// it has exactly one king and that king is on its back rank.
fn back_rank(bb: &[u64; BB_COUNT], white: bool) -> Option<(u8, u8)> {
    let colour = bb[if white { BB_WHITE } else { BB_BLACK }];
    let shift = if white { 0 } else { 56 };
    let kings = bb[BB_KING] & colour;
    let king = (kings >> shift) as u8;
    // One king (a power of two: cheaper than a population count, which
    // JSON lines pay for at every position), on the back rank.
    let one = kings != 0 && kings & (kings - 1) == 0;
    (one && king != 0).then(|| (king, ((bb[BB_ROOK] & colour) >> shift) as u8))
}

/// The files on the king side (towards the h-file, `true`) or the queen
/// side of a king on file bit `king`.
const fn side_files(king: u8, king_side: bool) -> u8 {
    if king_side {
        !(king | (king - 1))
    } else {
        king - 1
    }
}

/// The one-byte [`ChunkColumns::castling`] code of the rights `castling`
/// (rook files, as [`PositionRecord::castling`]) on the board `bb`: two
/// bits per colour and side of its king (white's king side in bits 0-1,
/// white's queen side 2-3, black's 4-5 and 6-7), 0 for no right, `n` for
/// the right to castle with the `n`-th rook of that colour on its back
/// rank on that side of its king counted from the board's edge (1 = the
/// outermost: every right of a standard game). `None` when the rights do
/// not fit one: a right without its rook, or with no king of its colour
/// on the back rank, two rights on one side of a king, or a right's rook
/// fourth or further from the edge (only after promotions in Chess960).
/// shakmaty keeps a right only with its king and rook on the back rank,
/// one a side.
pub fn castling_code(castling: u16, bb: &[u64; BB_COUNT]) -> Option<u8> {
    let mut code = 0u8;
    for (white, shift) in [(true, 0), (false, 4)] {
        let rights = (castling >> if white { 0 } else { 8 }) as u8;
        if rights == 0 {
            continue;
        }
        let (king, rooks) = back_rank(bb, white)?;
        if rights & king != 0 {
            return None;
        }
        for (king_side, field) in [(true, 0), (false, 2)] {
            let right = rights & side_files(king, king_side);
            if right == 0 {
                continue;
            }
            if right.count_ones() != 1 || rooks & right == 0 {
                return None;
            }
            // The rooks between the right's and the edge.
            let outer = rooks
                & if king_side {
                    !(right | (right - 1))
                } else {
                    right - 1
                };
            let n = outer.count_ones() + 1;
            if n > 3 {
                return None;
            }
            code |= (n as u8) << (shift + field);
        }
    }
    Some(code)
}

/// The rights (rook files, as [`PositionRecord::castling`]) of a
/// [`castling_code`] on the board `bb`. Every code decodes: a field naming
/// a rook the board does not have (only in a damaged store), or a colour
/// without one king on its back rank, gives no right.
pub fn castling_of(code: u8, bb: &[u64; BB_COUNT]) -> u16 {
    let mut castling = 0u16;
    for (white, shift) in [(true, 0), (false, 4)] {
        if (code >> shift) & 0xf == 0 {
            continue;
        }
        let Some((king, rooks)) = back_rank(bb, white) else {
            continue;
        };
        for (king_side, field) in [(true, 0), (false, 2)] {
            let n = (code >> (shift + field)) & 3;
            let mut side = rooks & side_files(king, king_side);
            // Drop the n - 1 rooks nearest the edge, then take the next.
            for _ in 1..n {
                side &= if king_side {
                    // Clear the highest set bit.
                    side.checked_ilog2().map_or(0, |h| !(1u8 << h))
                } else {
                    side.wrapping_sub(1)
                };
            }
            let rook = if n == 0 || side == 0 {
                0
            } else if king_side {
                1u8 << side.ilog2()
            } else {
                side & side.wrapping_neg()
            };
            castling |= u16::from(rook) << if white { 0 } else { 8 };
        }
    }
    castling
}

/// The columns of one chunk, each contiguous. Exactly the bytes of a chunk
/// in the store file (native little-endian; the store header checks
/// endianness).
#[derive(Clone)]
#[repr(C)]
pub struct ChunkColumns {
    /// [`PositionRecord::bb`] but the kings: one u64 column per bitboard,
    /// in `BB_*` order without [`BB_KING`] (pawn, knight, bishop, rook,
    /// queen, white, black); index with [`board_slot`], or read through
    /// [`ChunkColumns::board`].
    pub boards: [[u64; CHUNK_POSITIONS]; BOARD_COLUMNS],
    /// [`PositionRecord::mv`], as the packed bits (24 of them), and
    /// [`PositionRecord::ep`] in the top byte ([`EP_SHIFT`]): no kernel
    /// reads the en-passant square, so it shares the move's spare byte
    /// rather than take a column.
    pub mv: [u32; CHUNK_POSITIONS],
    /// The kings of [`PositionRecord::bb`] as squares: the white king's
    /// in the low byte, the black king's in the high byte ([`kings_of`],
    /// [`king_bits`]).
    pub kings: [u16; CHUNK_POSITIONS],
    /// [`PositionRecord::parent_delta`].
    pub parent_delta: [u16; CHUNK_POSITIONS],
    /// [`PositionRecord::ply`].
    pub ply: [u16; CHUNK_POSITIONS],
    /// [`PositionRecord::castling`] as a one-byte code on the board
    /// ([`castling_code`], [`castling_of`]).
    pub castling: [u8; CHUNK_POSITIONS],
    /// [`PositionRecord::flags`].
    pub flags: [u8; CHUNK_POSITIONS],
}

/// Shift of [`PositionRecord::ep`] in a [`ChunkColumns::mv`] entry (a
/// packed move uses the bits below, [`MOVE_MASK`]).
pub const EP_SHIFT: u32 = 24;
/// The bits of a [`ChunkColumns::mv`] entry that are the packed move.
pub const MOVE_MASK: u32 = (1 << EP_SHIFT) - 1;

/// Bytes per position in the columns.
pub const BYTES_PER_POSITION: usize = size_of::<ChunkColumns>() / CHUNK_POSITIONS;

/// One column of a chunk, for code (the JIT) that addresses columns by offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    /// A piece bitboard stored as a u64 per position: any but
    /// [`BitboardIndex::King`] (the kings are [`Column::Kings`]; build
    /// columns of bitboards with [`Column::bitboard`]).
    Bitboard(BitboardIndex),
    /// [`ChunkColumns::kings`] (u16 per position: two squares).
    Kings,
    /// [`ChunkColumns::mv`] (u32 per position: the packed move, and the
    /// en-passant square in the top byte).
    Move,
    /// [`ChunkColumns::parent_delta`] (u16 per position).
    ParentDelta,
    /// [`ChunkColumns::ply`] (u16 per position).
    Ply,
    /// [`ChunkColumns::castling`] (u8 per position: a code on the board).
    Castling,
    /// [`ChunkColumns::flags`] (u8 per position).
    Flags,
}

impl Column {
    /// Every column of a chunk, in layout order.
    pub const ALL: [Column; 13] = [
        Column::Bitboard(BitboardIndex::Pawn),
        Column::Bitboard(BitboardIndex::Knight),
        Column::Bitboard(BitboardIndex::Bishop),
        Column::Bitboard(BitboardIndex::Rook),
        Column::Bitboard(BitboardIndex::Queen),
        Column::Bitboard(BitboardIndex::White),
        Column::Bitboard(BitboardIndex::Black),
        Column::Move,
        Column::Kings,
        Column::ParentDelta,
        Column::Ply,
        Column::Castling,
        Column::Flags,
    ];

    /// The column holding bitboard `i`: [`Column::Kings`] for the kings
    /// (squares, to be decoded with [`king_bits`]), else its u64 column.
    pub const fn bitboard(i: BitboardIndex) -> Column {
        match i {
            BitboardIndex::King => Column::Kings,
            i => Column::Bitboard(i),
        }
    }

    /// Byte offset of the column from the start of the chunk.
    /// `Bitboard(King)` is not a column of its own: it is taken as
    /// [`Column::Kings`], as [`Column::bitboard`] maps it.
    pub const fn offset(self) -> usize {
        match self {
            Column::Bitboard(i) => match board_slot(i.index()) {
                Some(slot) => offset_of!(ChunkColumns, boards) + slot * CHUNK_POSITIONS * 8,
                None => offset_of!(ChunkColumns, kings),
            },
            Column::Kings => offset_of!(ChunkColumns, kings),
            Column::Move => offset_of!(ChunkColumns, mv),
            Column::ParentDelta => offset_of!(ChunkColumns, parent_delta),
            Column::Ply => offset_of!(ChunkColumns, ply),
            Column::Castling => offset_of!(ChunkColumns, castling),
            Column::Flags => offset_of!(ChunkColumns, flags),
        }
    }
    /// Bytes per position in this column (`Bitboard(King)` as
    /// [`Column::Kings`]).
    pub const fn width(self) -> usize {
        match self {
            Column::Bitboard(BitboardIndex::King) => 2,
            Column::Bitboard(_) => 8,
            Column::Move => 4,
            Column::Kings | Column::ParentDelta | Column::Ply => 2,
            Column::Castling | Column::Flags => 1,
        }
    }
}

/// A column's name as `explain --plan` lists it: `Bitboard(i)` with the
/// bitboard's index, else the variant name (`Move`, `Kings`, ...).
impl std::fmt::Display for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Bitboard(BitboardIndex::King) => write!(f, "Kings"),
            Column::Bitboard(i) => write!(f, "Bitboard({})", i.index()),
            other => write!(f, "{other:?}"),
        }
    }
}

impl ChunkColumns {
    /// A zeroed chunk on the heap.
    pub fn new_boxed() -> Box<ChunkColumns> {
        let layout = std::alloc::Layout::new::<ChunkColumns>();
        // SAFETY: the layout has non-zero size; an all-zero ChunkColumns is a
        // valid value (every field is an integer array); the pointer comes
        // from the global allocator with ChunkColumns' layout, as Box expects.
        unsafe {
            let ptr = std::alloc::alloc_zeroed(layout) as *mut ChunkColumns;
            if ptr.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(ptr)
        }
    }

    /// Bitboard `k` (a `BB_*`, < [`BB_COUNT`]) of position `i` (<
    /// CHUNK_POSITIONS); the kings decoded from their squares.
    #[inline]
    pub fn board(&self, k: usize, i: usize) -> u64 {
        match board_slot(k) {
            Some(slot) => self.boards[slot][i],
            None => king_bits(self.kings[i]),
        }
    }

    /// The u64 column of bitboard `k` (a `BB_*`), or `None` for the kings
    /// (use [`ChunkColumns::board`]).
    pub fn board_column(&self, k: usize) -> Option<&[u64; CHUNK_POSITIONS]> {
        board_slot(k).map(|slot| &self.boards[slot])
    }

    /// The u64 column of the white (`white`) or black pieces.
    pub fn colour_column(&self, white: bool) -> &[u64; CHUNK_POSITIONS] {
        // White and black are the last two u64 columns.
        &self.boards[BOARD_COLUMNS - 2 + usize::from(!white)]
    }

    /// The white (`white`) or black king's square of position `i` as a
    /// one-square set (see [`king_bits`]).
    pub fn king(&self, white: bool, i: usize) -> u64 {
        let k = self.kings[i];
        1u64 << (if white { k } else { k >> 8 } & 63)
    }

    /// Reads position `i` (< CHUNK_POSITIONS) in row form.
    #[inline]
    pub fn get(&self, i: usize) -> PositionRecord {
        let mut bb = [0u64; BB_COUNT];
        for (k, b) in bb.iter_mut().enumerate() {
            *b = self.board(k, i);
        }
        PositionRecord {
            castling: castling_of(self.castling[i], &bb),
            bb,
            mv: PackedMove(self.mv[i] & MOVE_MASK),
            parent_delta: self.parent_delta[i],
            ply: self.ply[i],
            ep: (self.mv[i] >> EP_SHIFT) as u8,
            flags: self.flags[i],
        }
    }

    /// Writes position `i` (< CHUNK_POSITIONS) from row form. The kings
    /// are stored as squares ([`kings_of`]), the castling rights as a code
    /// on the board ([`castling_code`]; none when it has no code): `get`
    /// gives `p` back iff [`kings_representable`] holds for `p.bb`,
    /// `castling_code` gives a code for `p.castling` and `p.mv` has no
    /// bit outside [`MOVE_MASK`] (as every [`PackedMove::new`]; the store
    /// writer refuses other records).
    pub fn set(&mut self, i: usize, p: &PositionRecord) {
        for k in 0..BB_COUNT {
            if let Some(slot) = board_slot(k) {
                self.boards[slot][i] = p.bb[k];
            }
        }
        self.kings[i] = kings_of(&p.bb);
        self.mv[i] = p.mv.0 & MOVE_MASK | u32::from(p.ep) << EP_SHIFT;
        self.parent_delta[i] = p.parent_delta;
        self.ply[i] = p.ply;
        self.castling[i] = castling_code(p.castling, &p.bb).unwrap_or(0);
        self.flags[i] = p.flags;
    }
}

/// Per-chunk summary, tested before a chunk's columns are touched: a chunk
/// whose summary cannot satisfy a query is skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct ChunkSummary {
    /// Union over the chunk's positions of each piece bitboard.
    pub bb_union: [u64; BB_COUNT],
    /// Union of the white/black role bitboards: index `role` for white,
    /// `6 + role` for black.
    pub piece_union: [u64; 12],
    /// OR of all positions' flags.
    pub flags_or: u8,
    /// AND of all positions' flags.
    pub flags_and: u8,
    /// Always zero; pads the summary to a multiple of 8 bytes.
    pub _pad: [u8; 6],
}

impl ChunkSummary {
    /// The summary of no positions (the identity for [`Self::add`]).
    pub const EMPTY: ChunkSummary = ChunkSummary {
        bb_union: [0; BB_COUNT],
        piece_union: [0; 12],
        flags_or: 0,
        flags_and: 0xff,
        _pad: [0; 6],
    };

    /// Adds one position to the summary.
    pub fn add(&mut self, p: &PositionRecord) {
        for k in 0..BB_COUNT {
            self.bb_union[k] |= p.bb[k];
        }
        for role in 0..6 {
            self.piece_union[role] |= p.pieces(true, role);
            self.piece_union[6 + role] |= p.pieces(false, role);
        }
        self.flags_or |= p.flags;
        self.flags_and &= p.flags;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_dense_and_aligned() {
        assert_eq!(BYTES_PER_POSITION, 7 * 8 + 4 + 2 + 2 * 2 + 1 + 1);
        // Every field of a packed move lies below the en-passant byte.
        assert_eq!(MOVE_MASK >> move_bits::WHITE_SHIFT, 1);
        assert_eq!(size_of::<ChunkColumns>() % 4096, 0);
        let mut end = 0;
        for c in Column::ALL {
            assert_eq!(c.offset() % c.width(), 0);
            assert!(c.offset() >= end);
            end = c.offset() + c.width() * CHUNK_POSITIONS;
        }
        assert_eq!(end, size_of::<ChunkColumns>());
        assert_eq!(
            Column::Bitboard(BitboardIndex::Bishop).to_string(),
            "Bitboard(2)"
        );
        assert_eq!(Column::Flags.to_string(), "Flags");
        assert_eq!(Column::bitboard(BitboardIndex::King), Column::Kings);
        assert_eq!(Column::Kings.to_string(), "Kings");
        for i in BitboardIndex::ALL {
            let c = Column::bitboard(i);
            assert_eq!(Column::ALL.iter().filter(|&&x| x == c).count(), 1);
        }
    }

    /// The Chess960 start position `n` (0..960, Scharnagl's numbering) as
    /// a FEN with Shredder castling rights (the rooks' files).
    fn chess960_fen(mut n: usize) -> String {
        let mut rank = [None::<char>; 8];
        rank[2 * (n % 4) + 1] = Some('b');
        n /= 4;
        rank[2 * (n % 4)] = Some('b');
        n /= 4;
        let place = |k: usize, piece: char, rank: &mut [Option<char>; 8]| {
            let f = (0..8).filter(|&f| rank[f].is_none()).nth(k).unwrap();
            rank[f] = Some(piece);
        };
        place(n % 6, 'q', &mut rank);
        n /= 6;
        let knights = [
            (0, 1),
            (0, 2),
            (0, 3),
            (0, 4),
            (1, 2),
            (1, 3),
            (1, 4),
            (2, 3),
            (2, 4),
            (3, 4),
        ];
        let (a, b) = knights[n];
        // The second knight's index counts the squares left after the first.
        place(a, 'n', &mut rank);
        place(b - 1, 'n', &mut rank);
        for piece in ['r', 'k', 'r'] {
            place(0, piece, &mut rank);
        }
        let black: String = rank.iter().map(|c| c.unwrap()).collect();
        let files: String = (0..8)
            .filter(|&f| rank[f] == Some('r'))
            .map(|f| (b'a' + f as u8) as char)
            .collect();
        format!(
            "{black}/pppppppp/8/8/8/8/PPPPPPPP/{} w {}{files} - 0 1",
            black.to_uppercase(),
            files.to_uppercase()
        )
    }

    /// Every castling right of the 960 start positions and of random
    /// games from them (castling, rook moves and captures included) has a
    /// one-byte code that gives it back.
    #[test]
    fn castling_codes_give_back_the_rights_of_chess960_games() {
        use shakmaty::{CastlingMode, Chess, Position, fen::Fen};
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut with_rights = 0;
        for n in 0..960 {
            let fen = chess960_fen(n);
            let setup = Fen::from_ascii(fen.as_bytes()).unwrap().into_setup();
            let mut pos: Chess = setup.position(CastlingMode::Chess960).unwrap();
            let start = chess::record_of(&pos, true);
            assert_eq!(start.castling.count_ones(), 4, "{fen}");
            assert_eq!(
                castling_code(start.castling, &start.bb),
                Some(0b0101_0101),
                "{fen}"
            );
            for _ in 0..120 {
                let rec = chess::record_of(&pos, true);
                let code = castling_code(rec.castling, &rec.bb);
                assert_eq!(
                    code.map(|c| castling_of(c, &rec.bb)),
                    Some(rec.castling),
                    "{fen}"
                );
                with_rights += usize::from(rec.castling != 0);
                let legal = pos.legal_moves();
                if legal.is_empty() {
                    break;
                }
                // Castle whenever it is legal, so that both sides are seen.
                let m = legal
                    .iter()
                    .find(|m| m.is_castle() && next(2) == 0)
                    .copied()
                    .unwrap_or_else(|| legal[next(legal.len())]);
                pos.play_unchecked(m);
            }
        }
        assert!(with_rights > 960 * 20, "{with_rights}");
    }

    /// Rights with no code: without the rook, with the king off the back
    /// rank, two on one side of the king, the fourth rook from the edge.
    /// Codes naming rooks the board lacks decode to no right.
    #[test]
    fn castling_rights_without_a_code_are_refused() {
        let mut bb = [0u64; BB_COUNT];
        bb[BB_KING] = 1 << 6 | 1 << 60; // g1, e8
        bb[BB_WHITE] = 1 << 6 | 0x8f; // king, rooks a1 b1 c1 d1 h1
        bb[BB_BLACK] = 1 << 60 | 0x81 << 56;
        bb[BB_ROOK] = 0x8f | 0x81 << 56;
        // d1 is the fourth rook from the a-file; c1 the third.
        assert_eq!(castling_code(0x08, &bb), None);
        assert_eq!(castling_code(0x04, &bb), Some(3 << 2));
        assert_eq!(castling_of(3 << 2, &bb), 0x04);
        // h1 is on the king side: the outermost there.
        assert_eq!(castling_code(0x80, &bb), Some(1));
        assert_eq!(castling_of(1, &bb), 0x80);
        // Two rights on the queen side; a right on the king's file; no
        // rook on e1; black's rights on a8 and h8.
        assert_eq!(castling_code(0x03, &bb), None);
        assert_eq!(castling_code(0x40, &bb), None);
        assert_eq!(castling_code(0x10, &bb), None);
        assert_eq!(castling_code(0x8100, &bb), Some(0b0101 << 4));
        // The black king off its back rank: no right of black has a code.
        let mut off = bb;
        off[BB_KING] = 1 << 6 | 1 << 52;
        off[BB_BLACK] = 1 << 52 | 0x81 << 56;
        assert_eq!(castling_code(0x8100, &off), None);
        assert_eq!(castling_of(0b0101 << 4, &off), 0);
        // A code for rooks the board does not have (a damaged store).
        // (the third rook from the edge: none on the king sides or on
        // black's queen side, c1 on white's).
        assert_eq!(castling_of(0xff, &bb), 0x04);
    }

    #[test]
    fn record_round_trips_through_columns() {
        let mut c = ChunkColumns::new_boxed();
        let p = PositionRecord {
            bb: [
                1,
                2,
                4,
                0x81 << 56 | 0x81,
                16,
                1 << 4 | 1 << 60,
                0xffff,
                0xffff << 48,
            ],
            mv: PackedMove::new(MoveParts {
                from: shakmaty::Square::E2,
                to: shakmaty::Square::E4,
                role: shakmaty::Role::Pawn,
                captured: None,
                promotion: None,
                kind: MoveKind::Normal,
                mover: shakmaty::Color::White,
            }),
            parent_delta: 1,
            ply: 1,
            castling: 0x8181,
            ep: 64,
            flags: flags::MAINLINE,
        };
        c.set(4095, &p);
        assert_eq!(c.get(4095), p);
        assert_eq!(p.mv.from(), 12);
        assert_eq!(p.mv.to(), 28);
        assert!(p.mv.white());
        assert!(PackedMove::NONE.is_none());
    }

    #[test]
    fn kings_are_stored_as_two_squares() {
        let mut bb = [0u64; BB_COUNT];
        bb[BB_WHITE] = 1 << 6 | 1 << 12;
        bb[BB_BLACK] = 1 << 62;
        bb[BB_KING] = 1 << 6 | 1 << 62;
        assert!(kings_representable(&bb));
        assert_eq!(kings_of(&bb), 6 | 62 << 8);
        assert_eq!(king_bits(kings_of(&bb)), bb[BB_KING]);
        // Missing, doubled or colourless kings are not representable.
        for k in [
            1u64 << 6,
            1 << 6 | 1 << 12 | 1 << 62,
            1 << 6 | 1 << 62 | 1 << 30,
        ] {
            bb[BB_KING] = k;
            assert!(!kings_representable(&bb), "{k:#x}");
        }
        // Any u16 decodes (squares modulo 64), without panicking.
        assert_eq!(king_bits(0xffff), 1 << 63);
        assert_eq!(king_bits(64 | 65 << 8), 1 | 2);
        let mut c = ChunkColumns::new_boxed();
        c.kings[7] = 3 | 59 << 8;
        assert_eq!(c.board(BB_KING, 7), 1 << 3 | 1 << 59);
        assert_eq!(c.get(7).bb[BB_KING], 1 << 3 | 1 << 59);
        assert!(c.board_column(BB_KING).is_none());
        assert_eq!(board_slot(BB_BLACK), Some(BOARD_COLUMNS - 1));
        assert_eq!((c.king(true, 7), c.king(false, 7)), (1 << 3, 1 << 59));
        c.boards[board_slot(BB_WHITE).unwrap_or(0)][1] = 5;
        c.boards[board_slot(BB_BLACK).unwrap_or(0)][1] = 6;
        assert_eq!(
            (c.colour_column(true)[1], c.colour_column(false)[1]),
            (5, 6)
        );
    }

    #[test]
    fn null_move_is_not_a_castling_in_place() {
        use shakmaty::{Color, Role, Square};
        let null = PackedMove::null(Square::E8, Color::Black);
        assert!(null.is_null() && !null.is_none());
        assert_eq!(
            (null.from(), null.to()),
            (Square::E8 as u8, Square::E8 as u8)
        );
        // Chess960: a king on c1 castling queenside stays on c1.
        let castle = PackedMove::new(MoveParts {
            from: Square::C1,
            to: Square::C1,
            role: Role::King,
            captured: None,
            promotion: None,
            kind: MoveKind::CastleQueenside,
            mover: Color::White,
        });
        assert!(!castle.is_null());
        assert!(!PackedMove::NONE.is_null());
    }

    #[test]
    fn packed_move_fields_round_trip() {
        use shakmaty::{Color, Role, Square};
        let m = PackedMove::new(MoveParts {
            from: Square::H7,
            to: Square::G8,
            role: Role::Pawn,
            captured: Some(Role::Knight),
            promotion: Some(Role::Queen),
            kind: MoveKind::Normal,
            mover: Color::White,
        });
        assert_eq!((m.from(), m.to(), m.role()), (55, 62, 0));
        assert_eq!((m.captured(), m.promotion()), (1, 4));
        assert_eq!(m.kind(), MoveKind::Normal);
        assert!(m.white() && !m.is_none());
        let m = PackedMove::new(MoveParts {
            from: Square::E8,
            to: Square::C8,
            role: Role::King,
            captured: None,
            promotion: None,
            kind: MoveKind::CastleQueenside,
            mover: Color::Black,
        });
        assert_eq!((m.from(), m.to(), m.role()), (60, 58, 5));
        assert_eq!((m.captured(), m.promotion()), (7, 7));
        assert_eq!(m.kind(), MoveKind::CastleQueenside);
        assert!(!m.white());
        // The stored encoding does not change with the field names.
        assert_eq!(m.0, 60 | 58 << 6 | 5 << 12 | 7 << 15 | 7 << 18 | 3 << 21);
        assert_eq!(PackedMove::NONE.0, 7 << 12 | 7 << 15 | 7 << 18);
    }
}

/// Conversions between shakmaty positions and records.
pub mod chess {
    use super::*;
    use shakmaty::{
        CastlingMode, CastlingSide, Chess, Color, EnPassantMode, FromSetup, Move, Position, Role,
        Setup, Square,
    };

    /// The packed form of a legal move played by `turn`.
    pub fn pack_move(m: Move, turn: Color) -> PackedMove {
        let parts = |from, to, role, captured, promotion, kind| MoveParts {
            from,
            to,
            role,
            captured,
            promotion,
            kind,
            mover: turn,
        };
        PackedMove::new(match m {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => parts(from, to, role, capture, promotion, MoveKind::Normal),
            Move::EnPassant { from, to } => parts(
                from,
                to,
                Role::Pawn,
                Some(Role::Pawn),
                None,
                MoveKind::EnPassant,
            ),
            Move::Castle { king, rook } => {
                let side = CastlingSide::from_king_side(king < rook);
                let kind = if side.is_king_side() {
                    MoveKind::CastleKingside
                } else {
                    MoveKind::CastleQueenside
                };
                parts(king, side.king_to(turn), Role::King, None, None, kind)
            }
            // Drops do not occur in chess.
            Move::Put { role, to } => parts(to, to, role, None, None, MoveKind::Normal),
        })
    }

    /// The role index (0 = pawn .. 5 = king) of a shakmaty role.
    pub fn role_index(role: Role) -> u8 {
        role as u8 - 1
    }

    /// The shakmaty role of a role index 0..=5.
    pub fn role_of(index: u8) -> Option<Role> {
        Role::ALL.get(index as usize).copied()
    }

    /// The board part of a record: bitboards, side to move, castling, en
    /// passant, and the check/mate/stalemate flags (the halfmove clock is
    /// not stored: see [`super::halfmove_after`]). Move,
    /// parent, ply and game-structure flags are left for the caller.
    pub fn record_of(pos: &Chess, chess960: bool) -> PositionRecord {
        record_of_with(pos, chess960, !pos.legal_moves().is_empty())
    }

    /// [`record_of`] for a caller that already knows whether the side to
    /// move has a legal move (the importer, which generates the legal moves
    /// anyway to resolve the next SAN): saves one move generation.
    pub fn record_of_with(pos: &Chess, chess960: bool, has_legal_move: bool) -> PositionRecord {
        let board = pos.board();
        let mut bb = [0u64; BB_COUNT];
        for (i, role) in Role::ALL.into_iter().enumerate() {
            bb[i] = board.by_role(role).0;
        }
        bb[BB_WHITE] = board.by_color(Color::White).0;
        bb[BB_BLACK] = board.by_color(Color::Black).0;
        let rooks = pos.castles().castling_rights();
        let castling = ((rooks.0 & 0xff) | ((rooks.0 >> 56) << 8)) as u16;
        let ep = pos
            .ep_square(EnPassantMode::Legal)
            .map_or(64, |sq: Square| sq as u8);
        let mut flags = 0;
        if pos.turn() == Color::White {
            flags |= flags::WHITE_TO_MOVE;
        }
        if pos.is_check() {
            flags |= flags::CHECK;
            if !has_legal_move {
                flags |= flags::MATE;
            }
        } else if !has_legal_move {
            flags |= flags::STALEMATE;
        }
        if chess960 {
            flags |= flags::CHESS960;
        }
        PositionRecord {
            bb,
            mv: PackedMove::NONE,
            parent_delta: 0,
            ply: 0,
            castling,
            ep,
            flags,
        }
    }

    /// Rebuilds the shakmaty position of a record (for legal-move queries in
    /// the interpreter). `fullmoves` is derived from the ply.
    ///
    /// # Errors
    /// Returns shakmaty's error if the record does not describe a position
    /// the importer accepts (only possible for a corrupt store).
    pub fn chess_of(rec: &PositionRecord) -> Result<Chess, InvalidRecord> {
        let (setup, mode) = setup_of(rec);
        // The importer accepts setups with more material than a game can
        // reach and checks no game can give (as CQL 6.2 reads them).
        let err = match Chess::from_setup(setup, mode) {
            Ok(pos) => return Ok(pos),
            Err(e) => e,
        };
        let err = match err.ignore_too_much_material() {
            Ok(pos) => return Ok(pos),
            Err(e) => e,
        };
        err.ignore_impossible_check()
            .map_err(|e| InvalidRecord(e.to_string()))
    }

    /// The record as a shakmaty `Setup` (not validated: it may describe a
    /// position shakmaty cannot play, such as a setup with the side not to
    /// move in check) and its castling mode.
    pub fn setup_of(rec: &PositionRecord) -> (Setup, CastlingMode) {
        let bb = |i: usize| shakmaty::Bitboard(rec.bb[i]);
        let by_role = shakmaty::ByRole {
            pawn: bb(BB_PAWN),
            knight: bb(BB_KNIGHT),
            bishop: bb(BB_BISHOP),
            rook: bb(BB_ROOK),
            queen: bb(BB_QUEEN),
            king: bb(BB_KING),
        };
        let by_color = shakmaty::ByColor {
            white: bb(BB_WHITE),
            black: bb(BB_BLACK),
        };
        // Consistent bitboards (every imported record): the board as it
        // stands; else piece by piece, as far as the bitboards agree.
        let board = shakmaty::Board::try_from_bitboards(by_role, by_color).unwrap_or_else(|_| {
            let mut board = shakmaty::Board::empty();
            for (i, role) in Role::ALL.into_iter().enumerate() {
                for color in [Color::White, Color::Black] {
                    let cbb = rec.bb[if color == Color::White {
                        BB_WHITE
                    } else {
                        BB_BLACK
                    }];
                    for sq in shakmaty::Bitboard(rec.bb[i] & cbb) {
                        board.set_piece_at(sq, shakmaty::Piece { color, role });
                    }
                }
            }
            board
        });
        let castling =
            shakmaty::Bitboard((rec.castling as u64 & 0xff) | ((rec.castling as u64 >> 8) << 56));
        let turn = if rec.white_to_move() {
            Color::White
        } else {
            Color::Black
        };
        let setup = Setup {
            board,
            promoted: shakmaty::Bitboard::EMPTY,
            pockets: None,
            turn,
            castling_rights: castling,
            ep_square: (rec.ep < 64).then(|| Square::new(rec.ep as u32)),
            remaining_checks: None,
            // Not stored (see `halfmove_after`); no legal move depends on it.
            halfmoves: 0,
            fullmoves: std::num::NonZeroU32::new(1 + rec.ply as u32 / 2)
                .unwrap_or(std::num::NonZeroU32::MIN),
        };
        let mode = if rec.has(flags::CHESS960) {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        (setup, mode)
    }

    /// A record that does not describe a legal position.
    #[derive(Debug, thiserror::Error)]
    #[error("position record is not a legal position: {0}")]
    pub struct InvalidRecord(pub String);
}
