//! Sets of piece types as used by CQL piece designators (`K`, `[RQ]`, `A`,
//! `a`, `_`, `[Aa_]`).

#![warn(missing_docs, unreachable_pub)]

/// A set of piece types: bit `role` (0 = pawn .. 5 = king) for white, bit
/// `6 + role` for black, and bit 12 for an empty square (`_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct PieceSet(pub u16);

/// Role index order used across cqlj (pawn, knight, bishop, rook, queen, king).
pub const ROLE_LETTERS: [char; 6] = ['P', 'N', 'B', 'R', 'Q', 'K'];

impl PieceSet {
    /// `_`: an empty square.
    pub const EMPTY_SQUARE: PieceSet = PieceSet(1 << 12);
    /// `A`: every white piece.
    pub const WHITE: PieceSet = PieceSet(0x3f);
    /// `a`: every black piece.
    pub const BLACK: PieceSet = PieceSet(0x3f << 6);
    /// The empty set (no piece type, not even `_`).
    pub const NONE: PieceSet = PieceSet(0);

    /// The set holding one white (`white == true`) or black piece of `role`.
    pub const fn piece(white: bool, role: u8) -> PieceSet {
        PieceSet(1 << (role + if white { 0 } else { 6 }))
    }

    /// The piece types in either set.
    pub const fn union(self, other: PieceSet) -> PieceSet {
        PieceSet(self.0 | other.0)
    }

    /// Whether every piece type of `other` is in the set.
    pub const fn contains(self, other: PieceSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is [`PieceSet::NONE`].
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// White pieces become black and vice versa; `_` stays.
    pub const fn invert_colors(self) -> PieceSet {
        let white = self.0 & 0x3f;
        let black = (self.0 >> 6) & 0x3f;
        PieceSet((self.0 & (1 << 12)) | (white << 6) | black)
    }

    /// Parses one CQL piece letter (`K Q R B N P A k q r b n p a _`).
    pub fn from_char(c: char) -> Option<PieceSet> {
        Some(match c {
            'A' => PieceSet::WHITE,
            'a' => PieceSet::BLACK,
            '_' => PieceSet::EMPTY_SQUARE,
            c => {
                let role = ROLE_LETTERS
                    .iter()
                    .position(|&l| l == c.to_ascii_uppercase())?;
                PieceSet::piece(c.is_ascii_uppercase(), role as u8)
            }
        })
    }

    /// The CQL spelling: a single letter where one exists, else `[...]` with
    /// the letters in a fixed order (`A` and `a` used for whole colours).
    pub fn to_cql(self) -> String {
        let mut letters = String::new();
        let white = self.0 & 0x3f;
        let black = (self.0 >> 6) & 0x3f;
        if white == 0x3f {
            letters.push('A');
        } else {
            for (i, l) in ROLE_LETTERS.iter().enumerate().rev() {
                if white >> i & 1 == 1 {
                    letters.push(*l);
                }
            }
        }
        if black == 0x3f {
            letters.push('a');
        } else {
            for (i, l) in ROLE_LETTERS.iter().enumerate().rev() {
                if black >> i & 1 == 1 {
                    letters.push(l.to_ascii_lowercase());
                }
            }
        }
        if self.0 & (1 << 12) != 0 {
            letters.push('_');
        }
        if letters.chars().count() == 1 {
            letters
        } else {
            format!("[{letters}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invert_colors_is_an_involution() {
        for bits in 0..(1u16 << 13) {
            let s = PieceSet(bits);
            assert_eq!(s.invert_colors().invert_colors(), s);
        }
        assert_eq!(
            PieceSet::from_char('K').unwrap().invert_colors(),
            PieceSet::from_char('k').unwrap()
        );
        assert_eq!(PieceSet::WHITE.invert_colors(), PieceSet::BLACK);
        assert_eq!(
            PieceSet::EMPTY_SQUARE.invert_colors(),
            PieceSet::EMPTY_SQUARE
        );
    }

    #[test]
    fn cql_spelling() {
        assert_eq!(
            PieceSet::from_char('R')
                .unwrap()
                .union(PieceSet::from_char('Q').unwrap())
                .to_cql(),
            "[QR]"
        );
        assert_eq!(PieceSet::WHITE.union(PieceSet::BLACK).to_cql(), "[Aa]");
        assert_eq!(PieceSet::EMPTY_SQUARE.to_cql(), "_");
    }
}
