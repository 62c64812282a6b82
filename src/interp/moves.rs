//! Moves as the `move` filter sees them: the game's moves (decoded from the
//! store's [`PackedMove`]s), shakmaty's legal moves and the pseudo-legal
//! moves, in one shape.

#![warn(missing_docs, unreachable_pub)]

use cqlj_runtime::layout::chess::role_of;
use cqlj_runtime::layout::{MoveKind, PackedMove, PositionRecord};
use shakmaty::{Color, EnPassantMode, Move, Position, Rank, Role, Square};

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
    /// A null move (from and to are the mover's king's square).
    pub null: bool,
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
            null: mv.is_null(),
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
                null: false,
            },
            Move::EnPassant { from, to } => MoveFacts {
                from,
                to,
                capture_square: Some(Square::from_coords(to.file(), from.rank())),
                promotion: None,
                en_passant: true,
                castle_kingside: false,
                castle_queenside: false,
                null: false,
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
                    null: false,
                }
            }
            Move::Put { .. } => return None,
        })
    }
}

impl MoveFacts {
    /// The rook's move of a castling (`None` for any other move): from
    /// the a- or h-file to the d- or f-file of the king's rank, with the
    /// castling's other facts.
    /// Whether the move is of the kind `special` names (`None`: any).
    pub(crate) fn is_special(&self, special: Option<crate::ir::SpecialMove>) -> bool {
        use crate::ir::{Castle, SpecialMove};
        match special {
            None => true,
            Some(SpecialMove::EnPassant) => self.en_passant,
            Some(SpecialMove::Castle(Castle::Kingside)) => self.castle_kingside,
            Some(SpecialMove::Castle(Castle::Queenside)) => self.castle_queenside,
            Some(SpecialMove::Castle(Castle::Either)) => {
                self.castle_kingside || self.castle_queenside
            }
            Some(SpecialMove::Null) => self.null,
        }
    }

    pub(crate) fn rook_part(&self) -> Option<MoveFacts> {
        let (from, to) = if self.castle_kingside {
            (shakmaty::File::H, shakmaty::File::F)
        } else if self.castle_queenside {
            (shakmaty::File::A, shakmaty::File::D)
        } else {
            return None;
        };
        let rank = self.from.rank();
        Some(MoveFacts {
            from: Square::from_coords(from, rank),
            to: Square::from_coords(to, rank),
            ..*self
        })
    }
}

/// The square a pawn's double step `mv` passed over (the en passant target
/// it creates), or `None` if `mv` is no pawn double step.
fn double_push_target(mv: PackedMove) -> Option<Square> {
    if mv.is_none() || role_of(mv.role()) != Some(Role::Pawn) {
        return None;
    }
    let (from, to) = (u32::from(mv.from()), u32::from(mv.to()));
    (from.abs_diff(to) == 16 && from < 64 && to < 64).then(|| Square::new(u32::midpoint(from, to)))
}

/// The position a record holds, for move generation; `None` for a setup the
/// importer keeps without moves (side not to move in check, pawns on a back
/// rank: no move generator for it), which has no move here (its record says
/// so: no move was replayed from it).
fn position_of(
    rec: &PositionRecord,
    game: u64,
    index: u32,
) -> Result<Option<shakmaty::Chess>, InterpError> {
    match cqlj_runtime::layout::chess::chess_of(rec) {
        Ok(pos) => Ok(Some(pos)),
        Err(_) if rec.has(cqlj_runtime::layout::flags::INITIAL) => Ok(None),
        Err(_) => Err(InterpError::InvalidPosition {
            game,
            index,
            message: "position record is not a legal position".into(),
        }),
    }
}

/// The legal moves in a position (shakmaty's move generator on the position
/// rebuilt from the record).
pub(crate) fn legal_moves(
    rec: &PositionRecord,
    game: u64,
    index: u32,
) -> Result<Vec<MoveFacts>, InterpError> {
    let Some(pos) = position_of(rec, game, index)? else {
        return Ok(Vec::new());
    };
    let turn = pos.turn();
    Ok(pos
        .legal_moves()
        .iter()
        .filter_map(|m| MoveFacts::from_shakmaty(m, turn))
        .collect())
}

/// The pseudo-legal moves in a position: every move a piece of the side to
/// move can make by its movement rules, whether or not it leaves its own
/// king in check (CQL 6.2: "a pseudolegal move might leave the moving side
/// in check"). Pawns push one square (two from their starting rank, over an
/// empty square) to an empty square, capture diagonally, capture en passant
/// when the position has an en passant square, and promote to each of
/// queen, rook, bishop and knight on the last rank; the other pieces move to
/// any square they attack that no piece of their own holds. Castling moves
/// are the legal ones: their rules (not castling out of or through check)
/// are not about the king being left in check. Every legal move is
/// pseudo-legal.
///
/// The record keeps an en passant square only when an en passant capture is
/// legal, so one that is pseudo-legal only is found from the move that led
/// to the position (a pawn's double step); at a game's first position, whose
/// `[FEN]` may name an en passant square, it is not seen.
pub(crate) fn pseudo_legal_moves(
    rec: &PositionRecord,
    game: u64,
    index: u32,
) -> Result<Vec<MoveFacts>, InterpError> {
    let Some(pos) = position_of(rec, game, index)? else {
        return Ok(Vec::new());
    };
    let turn = pos.turn();
    let board = pos.board();
    let ours = board.by_color(turn);
    let theirs = board.by_color(!turn);
    let last_rank = turn.relative_rank(Rank::Eighth);
    let mut moves = Vec::new();
    let mut push = |role: Role, from: Square, to: Square| {
        let capture = board.role_at(to);
        if role == Role::Pawn && to.rank() == last_rank {
            for promotion in [Role::Queen, Role::Rook, Role::Bishop, Role::Knight] {
                moves.push(Move::Normal {
                    role,
                    from,
                    capture,
                    to,
                    promotion: Some(promotion),
                });
            }
        } else {
            moves.push(Move::Normal {
                role,
                from,
                capture,
                to,
                promotion: None,
            });
        }
    };
    for from in ours {
        let Some(role) = board.role_at(from) else {
            continue;
        };
        if role != Role::Pawn {
            for to in board.attacks_from(from) & !ours {
                push(role, from, to);
            }
            continue;
        }
        for to in board.attacks_from(from) & theirs {
            push(role, from, to);
        }
        let step = turn.fold_wb(8, -8);
        let Some(one) = from.offset(step).filter(|&s| !board.occupied().contains(s)) else {
            continue;
        };
        push(role, from, one);
        if from.rank() == turn.relative_rank(Rank::Second)
            && let Some(two) = one.offset(step).filter(|&s| !board.occupied().contains(s))
        {
            push(role, from, two);
        }
    }
    if let Some(to) = pos
        .ep_square(EnPassantMode::PseudoLegal)
        .or_else(|| double_push_target(rec.mv))
    {
        for from in shakmaty::attacks::pawn_attacks(!turn, to) & pos.our(Role::Pawn) {
            moves.push(Move::EnPassant { from, to });
        }
    }
    moves.extend(
        pos.legal_moves()
            .into_iter()
            .filter(|m| matches!(m, Move::Castle { .. })),
    );
    Ok(moves
        .iter()
        .filter_map(|m| MoveFacts::from_shakmaty(m, turn))
        .collect())
}
