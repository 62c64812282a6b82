//! The mate types of CQL 6.2: `puremate`, `modelmate`, `idealmate` and
//! `purestalemate`, `modelstalemate`, `idealstalemate`, on one
//! [`PositionRecord`].
//!
//! Each filter's value is the set of squares of the *participating* pieces
//! when the position is of its type, else no match. The side to move is the
//! mated (stalemated) side, called "defender" below; the other side is the
//! "attacker". The definitions follow CQL 6.2's manual (pages `puremate`
//! and `purestalemate`) with the points the manual leaves open decided by
//! the CQL 6.2 binary: the rules below reproduce its value on every mate
//! and stalemate position of the shared problem, study and game collections
//! (2322 positions, all six filters).
//!
//! * **Attacks on the king's field** are counted with the defender's king
//!   taken off the board, so a checking slider also attacks the square
//!   behind the king.
//! * **Refutation squares** of a check: the checking piece's square, the
//!   squares between it and the defender's king and, for the participants,
//!   the attacker's king.
//! * A **potential refuter** is a defender's piece other than the king that
//!   could move to a refutation square ignoring checks and pins: a
//!   pseudo-legal move, where a pawn "moves" to either square it attacks
//!   (occupied or not) and pushes one or two squares forward.
//! * **Pure mate**: checkmate; at most two checks, and a double check only
//!   when each checking piece alone has a potential refuter; each empty
//!   square of the king's field attacked exactly once; each attacker's piece
//!   in the field protected exactly once; each defender's piece in the field
//!   not attacked, unless (single check) it is pinned, attacked only by its
//!   pinner, and a potential refuter of the check.
//! * **Pure stalemate**: stalemate; the same conditions on the field, a
//!   pinned defender's piece may be attacked by its pinner alone.
//! * **Model** (stalemate): pure, and every attacker's piece other than the
//!   king and pawns participates. **Ideal**: pure, and every piece on the
//!   board participates.

#![warn(missing_docs, unreachable_pub)]

use cqlj_runtime::layout::{BB_BLACK, BB_WHITE, PositionRecord, flags};
use shakmaty::{Bitboard, Color, Piece, Rank, Role, Square, attacks};

use super::board::piece_at;
use crate::ir::MateType;

/// The value of the mate-type filter `which` at `rec`: the participating
/// pieces' squares, or `None` when the position is not of that type.
/// A returned set is never empty (it holds the defender's king).
pub(crate) fn mate_type(rec: &PositionRecord, which: MateType) -> Option<Bitboard> {
    let stale = which.is_stalemate();
    let flag = if stale { flags::STALEMATE } else { flags::MATE };
    if !rec.has(flag) {
        return None;
    }
    let b = Board::new(rec);
    let defender = if rec.white_to_move() {
        Color::White
    } else {
        Color::Black
    };
    let parts = if stale {
        b.pure_stalemate(defender)?
    } else {
        b.pure_mate(defender)?
    };
    let attacker = b.side(!defender);
    let required = match which {
        MateType::PureMate | MateType::PureStalemate => Bitboard::EMPTY,
        MateType::ModelMate | MateType::ModelStalemate => {
            attacker & !b.role(Role::King) & !b.role(Role::Pawn)
        }
        MateType::IdealMate | MateType::IdealStalemate => b.occ,
    };
    (required & !parts).is_empty().then_some(parts)
}

/// A position's pieces as bitboards.
struct Board<'a> {
    rec: &'a PositionRecord,
    occ: Bitboard,
}

/// A pin: the pinning piece's square and the pinned piece's square.
#[derive(Clone, Copy)]
struct Pin {
    pinner: Square,
    pinned: Square,
}

impl<'a> Board<'a> {
    fn new(rec: &'a PositionRecord) -> Self {
        Board {
            rec,
            occ: Bitboard(rec.occupied()),
        }
    }

    fn side(&self, c: Color) -> Bitboard {
        Bitboard(
            self.rec.bb[if c == Color::White {
                BB_WHITE
            } else {
                BB_BLACK
            }],
        )
    }

    fn role(&self, r: Role) -> Bitboard {
        Bitboard(self.rec.pieces(true, r as usize - 1) | self.rec.pieces(false, r as usize - 1))
    }

    fn king(&self, c: Color) -> Option<Square> {
        (self.side(c) & self.role(Role::King)).first()
    }

    /// The squares of `c`'s pieces attacking `target` with `occ` occupied.
    fn attackers(&self, target: Square, c: Color, occ: Bitboard) -> Bitboard {
        self.side(c)
            .into_iter()
            .filter(|&s| {
                piece_at(self.rec, s).is_some_and(|p| attacks::attacks(s, p, occ).contains(target))
            })
            .collect()
    }

    /// Whether the slider on `s` moves along the line from `s` to `t`.
    fn slides_towards(p: Piece, s: Square, t: Square) -> bool {
        let rook = attacks::rook_attacks(s, Bitboard::EMPTY).contains(t);
        let bishop = attacks::bishop_attacks(s, Bitboard::EMPTY).contains(t);
        match p.role {
            Role::Rook => rook,
            Role::Bishop => bishop,
            Role::Queen => rook || bishop,
            _ => false,
        }
    }

    /// The one piece standing between the slider on `s` and `t`, on a line
    /// the slider moves along, when exactly one piece does.
    fn lone_blocker(&self, s: Square, t: Square) -> Option<Square> {
        let p = piece_at(self.rec, s)?;
        if !Self::slides_towards(p, s, t) {
            return None;
        }
        let between = attacks::between(s, t) & self.occ;
        (between.count() == 1).then(|| between.first()).flatten()
    }

    /// The pins of `c`'s pieces against `c`'s king.
    fn pins(&self, c: Color) -> Vec<Pin> {
        let Some(k) = self.king(c) else {
            return Vec::new();
        };
        self.side(!c)
            .into_iter()
            .filter_map(|s| {
                let pinned = self.lone_blocker(s, k)?;
                self.side(c)
                    .contains(pinned)
                    .then_some(Pin { pinner: s, pinned })
            })
            .collect()
    }

    /// Whether the piece on `s` could move to `t` ignoring checks and pins
    /// (a pawn: to a square it attacks, or a push).
    fn can_reach(&self, s: Square, t: Square) -> bool {
        let Some(p) = piece_at(self.rec, s) else {
            return false;
        };
        if self.side(p.color).contains(t) {
            return false;
        }
        if p.role != Role::Pawn {
            return attacks::attacks(s, p, self.occ).contains(t);
        }
        if attacks::pawn_attacks(p.color, s).contains(t) {
            return true;
        }
        let (step, start) = if p.color == Color::White {
            (8, Rank::Second)
        } else {
            (-8, Rank::Seventh)
        };
        let Some(one) = s.offset(step) else {
            return false;
        };
        if self.occ.contains(one) {
            return false;
        }
        if one == t {
            return true;
        }
        s.rank() == start
            && one
                .offset(step)
                .is_some_and(|two| two == t && !self.occ.contains(two))
    }

    /// Whether a piece of `c` other than the king could move to a square of
    /// `targets` (a potential refuter).
    fn refutable(&self, c: Color, targets: Bitboard) -> bool {
        (self.side(c) & !self.role(Role::King))
            .into_iter()
            .any(|s| targets.into_iter().any(|t| self.can_reach(s, t)))
    }

    /// The conditions on the defender's king's field shared by pure mate
    /// and pure stalemate; `pin_ok` says whether an attacked defender's
    /// piece pinned by `pin` is allowed.
    fn field_pure(&self, defender: Color, pin_ok: impl Fn(Pin) -> bool) -> Option<Bitboard> {
        let k = self.king(defender)?;
        let occ = self.occ.without(k);
        let pins = self.pins(defender);
        let mut attackers_of_field = Bitboard::EMPTY;
        for s in attacks::king_attacks(k) {
            let att = self.attackers(s, !defender, occ);
            attackers_of_field |= att;
            let ok = if !self.occ.contains(s) || self.side(!defender).contains(s) {
                att.count() == 1
            } else {
                att.is_empty()
                    || pins.iter().any(|&pin| {
                        pin.pinned == s && att == Bitboard::from_square(pin.pinner) && pin_ok(pin)
                    })
            };
            if !ok {
                return None;
            }
        }
        Some(attackers_of_field)
    }

    /// Pure mate of `defender` (checkmated): the participants.
    fn pure_mate(&self, defender: Color) -> Option<Bitboard> {
        let attacker = !defender;
        let k = self.king(defender)?;
        let checkers = self.attackers(k, attacker, self.occ);
        let refutation = |c: Square| attacks::between(c, k).with(c);
        let single = match checkers.count() {
            1 => checkers.first(),
            2 => {
                if !checkers
                    .into_iter()
                    .all(|c| self.refutable(defender, refutation(c)))
                {
                    return None;
                }
                None
            }
            _ => return None,
        };
        let field_attackers = self.field_pure(defender, |pin| {
            single.is_some_and(|c| {
                refutation(c)
                    .into_iter()
                    .any(|t| self.can_reach(pin.pinned, t))
            })
        })?;

        // The attacker's participants: checking pieces, pieces attacking
        // the field, its pinned pieces.
        let mut parts = checkers | field_attackers;
        for pin in self.pins(attacker) {
            parts.add(pin.pinned);
        }
        // The defender's: its king, its pieces in the field, its pieces
        // shielding the attacker's king from a check.
        parts.add(k);
        parts |= attacks::king_attacks(k) & self.side(defender);
        let other_king = self.king(attacker);
        if let Some(wk) = other_king {
            for s in self.side(defender) {
                if let Some(b) = self.lone_blocker(s, wk)
                    && self.side(defender).contains(b)
                {
                    parts.add(b);
                }
            }
        }
        // Without a double check: the pinners of potential refuters, and the
        // lone pieces between a defender's piece and a refutation square
        // (an attacker's piece only when that defender's piece is a
        // potential refuter).
        if let Some(c) = single {
            let mut targets = refutation(c);
            if let Some(wk) = other_king {
                targets.add(wk);
            }
            for pin in self.pins(defender) {
                if targets.into_iter().any(|t| self.can_reach(pin.pinned, t)) {
                    parts.add(pin.pinner);
                }
            }
            for s in self.side(defender) & !self.role(Role::King) {
                let potential = targets.into_iter().any(|t| self.can_reach(s, t));
                for t in targets {
                    if let Some(b) = self.lone_blocker(s, t)
                        && (potential || self.side(defender).contains(b))
                    {
                        parts.add(b);
                    }
                }
            }
        }
        Some(parts)
    }

    /// Pure stalemate of `defender`: the participants (every defender's
    /// piece, the attacker's pieces attacking the field, pinned or pinning).
    fn pure_stalemate(&self, defender: Color) -> Option<Bitboard> {
        let field_attackers = self.field_pure(defender, |_| true)?;
        let mut parts = self.side(defender) | field_attackers;
        for pin in self.pins(!defender) {
            parts.add(pin.pinned);
        }
        for pin in self.pins(defender) {
            parts.add(pin.pinner);
        }
        Some(parts)
    }
}
