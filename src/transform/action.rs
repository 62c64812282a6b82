//! The action of a basic transform on one IR node's own data (SEMANTICS.md
//! §4): square designators, piece colours, side/result/elo/player colours,
//! directions, and `light`/`dark`. Children, nested transform filters,
//! `notransform` and `currenttransform` are handled by the orbit builder.

#![warn(missing_docs, unreachable_pub)]

use crate::ir::{Bitboard, Node};

use super::basic::Transform;

/// Why an orbit element was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elision {
    /// The square designator (its original set) became empty.
    EmptyDesignator(Bitboard),
    /// `restrict`: a square of the designator (its original set) left the board.
    LeftBoard(Bitboard),
    /// Every element of a nested orbit was elided.
    EmptyNestedOrbit,
}

/// Transforms a square designator's set. An originally empty set stays empty
/// (only a designator that *becomes* empty elides).
fn map_squares(t: &Transform, bb: &mut Bitboard) -> Result<(), Elision> {
    if bb.is_empty() {
        return Ok(());
    }
    let img = t.apply_squares(*bb);
    if img.restricted_loss {
        return Err(Elision::LeftBoard(*bb));
    }
    if img.set.is_empty() {
        return Err(Elision::EmptyDesignator(*bb));
    }
    *bb = img.set;
    Ok(())
}

/// Applies `t` to the node's own data, not to its children.
///
/// # Errors
/// The element must be elided (a designator became empty or, under
/// `restrict`, lost a square).
pub fn map_node(node: &mut Node, t: &Transform) -> Result<(), Elision> {
    match node {
        Node::Squares(bb) => map_squares(t, bb)?,
        Node::Piece { pieces, squares } => {
            map_squares(t, squares)?;
            *pieces = t.apply_pieces(*pieces);
        }
        Node::Direction { dirs, .. }
        | Node::Ray { dirs, .. }
        | Node::Builtin(crate::ir::Builtin::Direction(dirs), _) => *dirs = t.apply_dirs(*dirs),
        Node::Light(_) | Node::Dark(_) if t.swaps_square_colour() => {
            let old = std::mem::replace(node, Node::Bool(false));
            *node = match old {
                Node::Light(a) => Node::Dark(a),
                Node::Dark(a) => Node::Light(a),
                other => other,
            };
        }
        Node::ToMove(s) | Node::SideConst(s) | Node::Elo(s) | Node::Player(Some(s)) => {
            *s = t.apply_side(*s)
        }
        Node::Result(r) => *r = t.apply_result(*r),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DirSet, Expr, GameResult, Kind, PieceSet, Side, Span};
    use crate::transform::basic::Dihedral;

    fn fc() -> Transform {
        Transform::dihedral(Dihedral::ReflectH).then(&Transform::invertcolor())
    }

    #[test]
    fn action_colour_words_swap_under_invertcolor() {
        let t = Transform::invertcolor();
        for (mut a, b) in [
            (Node::ToMove(Side::White), Node::ToMove(Side::Black)),
            (Node::SideConst(Side::Black), Node::SideConst(Side::White)),
            (Node::Elo(Side::White), Node::Elo(Side::Black)),
            (
                Node::Player(Some(Side::White)),
                Node::Player(Some(Side::Black)),
            ),
            (Node::Player(None), Node::Player(None)),
            (
                Node::Result(GameResult::WhiteWins),
                Node::Result(GameResult::BlackWins),
            ),
            (
                Node::Result(GameResult::Draw),
                Node::Result(GameResult::Draw),
            ),
            (
                Node::Piece {
                    pieces: PieceSet(0b1_0000_0010_0001),
                    squares: Bitboard(5),
                },
                Node::Piece {
                    pieces: PieceSet(0b1_1000_0100_0000),
                    squares: Bitboard(5),
                },
            ),
        ] {
            map_node(&mut a, &t).unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn action_untouched_nodes_stay() {
        let t = fc().then(&Transform::shift(1, 1, false));
        for n in [
            Node::Number(3),
            Node::Str("white".into()),
            Node::PawnStructure(crate::ir::PawnSet::Passed),
            Node::Ply,
            Node::Check,
        ] {
            let mut m = n.clone();
            map_node(&mut m, &t).unwrap();
            assert_eq!(m, n);
        }
    }

    #[test]
    fn action_light_dark_follow_parity() {
        let arg = || {
            Box::new(Expr::new(
                Node::Squares(Bitboard(1 << 8)),
                Kind::Set,
                Span::default(),
            ))
        };
        let mut n = Node::Light(arg());
        map_node(&mut n, &Transform::shift(1, 0, false)).unwrap();
        assert!(matches!(n, Node::Dark(_)));
        map_node(&mut n, &Transform::shift(1, 1, false)).unwrap();
        assert!(matches!(n, Node::Dark(_)));
        map_node(&mut n, &Transform::dihedral(Dihedral::ReflectH)).unwrap();
        assert!(matches!(n, Node::Light(_)));
        map_node(&mut n, &Transform::invertcolor()).unwrap();
        assert!(matches!(n, Node::Light(_)));
    }

    #[test]
    fn action_directions_and_elision() {
        let mut n = Node::Ray {
            xray: true,
            dirs: DirSet::VERTICAL,
            args: vec![],
            origins: false,
        };
        map_node(&mut n, &Transform::dihedral(Dihedral::Clockwise90)).unwrap();
        assert!(matches!(
            n,
            Node::Ray {
                dirs: DirSet::HORIZONTAL,
                ..
            }
        ));
        let mut a6 = Node::Squares(Bitboard(1 << 40));
        assert_eq!(
            map_node(&mut a6, &Transform::shift(0, 3, false)),
            Err(Elision::EmptyDesignator(Bitboard(1 << 40)))
        );
        let mut a1a8 = Node::Squares(Bitboard(1 | 1 << 56));
        assert_eq!(
            map_node(&mut a1a8, &Transform::shift(0, 1, true)),
            Err(Elision::LeftBoard(Bitboard(1 | 1 << 56)))
        );
        // Full files are held, not lost, under restrict.
        let mut afile = Node::Squares(Bitboard(0x0101_0101_0101_0101));
        map_node(&mut afile, &Transform::shift(0, 1, true)).unwrap();
        assert_eq!(afile, Node::Squares(Bitboard(0x0101_0101_0101_0101)));
    }
}
