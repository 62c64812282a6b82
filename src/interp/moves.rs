//! Moves as the `move` filter sees them: the game's moves (decoded from the
//! store's [`PackedMove`]s) and shakmaty's legal moves, in one shape.

#![warn(missing_docs, unreachable_pub)]

use cqlj_runtime::layout::chess::role_of;
use cqlj_runtime::layout::{MoveKind, PackedMove, PositionRecord};
use shakmaty::{Color, Move, Position, Role, Square};

use super::InterpError;

/// The facts about one move that `move` parameters test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MoveFacts {
    pub from: Square,
    /// The destination; for castling, the king's destination square.
    pub to: Square,
    /// The square of the captured piece (differs from `to` for en passant).
    pub capture_square: Option<Square>,
    pub promotion: Option<Role>,
    pub en_passant: bool,
    pub castle_kingside: bool,
    pub castle_queenside: bool,
}

impl MoveFacts {
    /// Decodes the move that led to a position. `None` for an initial
    /// position (no move).
    pub(crate) fn from_packed(mv: PackedMove) -> Option<MoveFacts> {
        if mv.is_none() {
            return None;
        }
        let from = Square::new(mv.from() as u32);
        let to = Square::new(mv.to() as u32);
        let en_passant = mv.kind() == MoveKind::EnPassant;
        let capture_square = if en_passant {
            // The captured pawn stands behind the destination, seen from
            // the mover.
            // (Modulo 64, so that a corrupt record cannot make an invalid
            // square.)
            Some(if mv.white() {
                Square::new((to as u32 + 56) & 63)
            } else {
                Square::new((to as u32 + 8) & 63)
            })
        } else if mv.captured() != PackedMove::NO_ROLE {
            Some(to)
        } else {
            None
        };
        Some(MoveFacts {
            from,
            to,
            capture_square,
            promotion: role_of(mv.promotion()),
            en_passant,
            castle_kingside: mv.kind() == MoveKind::CastleKingside,
            castle_queenside: mv.kind() == MoveKind::CastleQueenside,
        })
    }

    /// Describes a shakmaty move made by `turn`.
    pub(crate) fn from_shakmaty(m: &Move, turn: Color) -> Option<MoveFacts> {
        Some(match *m {
            Move::Normal {
                from,
                to,
                capture,
                promotion,
                ..
            } => MoveFacts {
                from,
                to,
                capture_square: capture.map(|_| to),
                promotion,
                en_passant: false,
                castle_kingside: false,
                castle_queenside: false,
            },
            Move::EnPassant { from, to } => MoveFacts {
                from,
                to,
                capture_square: Some(Square::from_coords(to.file(), from.rank())),
                promotion: None,
                en_passant: true,
                castle_kingside: false,
                castle_queenside: false,
            },
            Move::Castle { king, rook } => {
                let side = shakmaty::CastlingSide::from_king_side(king < rook);
                MoveFacts {
                    from: king,
                    to: side.king_to(turn),
                    capture_square: None,
                    promotion: None,
                    en_passant: false,
                    castle_kingside: side.is_king_side(),
                    castle_queenside: side.is_queen_side(),
                }
            }
            Move::Put { .. } => return None,
        })
    }
}

/// The legal moves in a position (shakmaty's move generator on the position
/// rebuilt from the record).
pub(crate) fn legal_moves(
    rec: &PositionRecord,
    game: u64,
    index: u32,
) -> Result<Vec<MoveFacts>, InterpError> {
    // A setup the importer keeps without moves (side not to move in check,
    // pawns on a back rank: no move generator for it) has no legal move
    // here; its record says so (no move was replayed from it).
    let Ok(pos) = cqlj_runtime::layout::chess::chess_of(rec) else {
        if rec.has(cqlj_runtime::layout::flags::INITIAL) {
            return Ok(Vec::new());
        }
        return Err(InterpError::InvalidPosition {
            game,
            index,
            message: "position record is not a legal position".into(),
        });
    };
    let turn = pos.turn();
    Ok(pos
        .legal_moves()
        .iter()
        .filter_map(|m| MoveFacts::from_shakmaty(m, turn))
        .collect())
}
