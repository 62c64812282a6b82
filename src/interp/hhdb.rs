//! `hhdb`: CQL 6.2's reading of the HHdbVI endgame study database's
//! conventions, each rule as the CQL 6.2 oracle showed it:
//!
//! - codes (`U1` ... `U5`, `(c)`, `(m)`, `(s)`, `(v)`, `AN`, `CR`, `MC`,
//!   `PH`, `TE`, `TT`, `TW`): the code occurs anywhere in the `Black` tag
//!   (case-sensitive, also inside a word); `unsound`: one of `U1` ... `U5`;
//!   `dual`: `U1` or `U2`; `sound`: none of `U3`, `U4`, `U5` (a study with a
//!   dual is both sound and unsound);
//! - `cooked`: `<cook>` occurs in the game's text (a tag or a comment);
//! - markers (`<cook>`, `<eg>`, `<main>`, `<or>`, `<minor_dual>`): the
//!   marker occurs in the comment of the move to the position (its last
//!   comment; for the initial position, the comment before the first move);
//! - `mainline`: every variation on the way to the position (the position
//!   included) starts with a move whose comment holds `<main>`; `variation`
//!   is its negation;
//! - a missing `Event`, `White` or `Black` tag reads as `?`;
//! - `composer`: the `White` tag; `search`: the `Event`, `White` and
//!   `Black` tags, each on its own line; `diagram`: the
//!   characters after the `Event` tag's first `#` up to white space (none:
//!   no match); `firstcomment`: the comment before the first move;
//!   `egdiagram`: the digits after its first `EG#`;
//! - awards: the `Event` tag starts with `N.`, `N/M.` (1 <= N < M), an
//!   optional `sp.` (special; then N is optional), and `p` (prize), `hm`
//!   (honourable mention) or `c` (commendation), anything after. `award`
//!   counts awards of any kind, `special` only special ones; the value
//!   is N (1 when absent), with `max` M (N when absent; 10000 for a special
//!   award without N); a filter without `special` matches a special award
//!   without a value (it is true, but compares, assigns and prints as no
//!   value). `hhdb sort K` orders by kind (prize, hm,
//!   commendation), ordinary before special, then N and M, ascending.

use crate::ir::{AwardKind, HhdbField};

use super::eval::Evaluator;
use super::{InterpError, Value};

type R<T> = Result<T, InterpError>;

/// An award read from an `Event` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Award {
    kind: AwardKind,
    special: bool,
    /// N (1 when not written).
    rank: i64,
    /// M (see the module doc).
    last: i64,
}

/// The award the `Event` tag `event` starts with.
fn parse_award(event: &str) -> Option<Award> {
    let b = event.as_bytes();
    let mut i = 0;
    let number = |i: &mut usize| -> Option<i64> {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        event[start..*i].parse().ok()
    };
    let mut rank = None;
    let mut last = None;
    if let Some(n) = number(&mut i) {
        if b.get(i) == Some(&b'/') {
            i += 1;
            last = Some(number(&mut i)?);
        }
        if b.get(i) != Some(&b'.') || n < 1 || last.is_some_and(|m| m <= n) {
            return None;
        }
        i += 1;
        rank = Some(n);
    }
    let special = event[i..].starts_with("sp.");
    if special {
        i += 3;
    }
    if rank.is_none() && !special {
        return None;
    }
    let rest = &event[i..];
    let kind = if rest.starts_with('p') {
        AwardKind::Prize
    } else if rest.starts_with("hm") {
        AwardKind::Hm
    } else if rest.starts_with('c') {
        AwardKind::Commendation
    } else {
        return None;
    };
    let n = rank.unwrap_or(1);
    let m = match (last, rank) {
        (Some(m), _) => m,
        (None, Some(n)) => n,
        (None, None) => 10_000,
    };
    Some(Award {
        kind,
        special,
        rank: n,
        last: m,
    })
}

/// Whether `award` is one `kind` counts.
fn kind_counts(kind: AwardKind, award: &Award) -> bool {
    kind == AwardKind::Any || kind == award.kind
}

/// The word after the first `#` of `event`, if not empty.
fn diagram(event: &str) -> Option<&str> {
    let rest = &event[event.find('#')? + 1..];
    let word = rest.split(|c: char| c.is_ascii_whitespace()).next()?;
    (!word.is_empty()).then_some(word)
}

/// The number after the first `EG#` of `event`.
fn eg_diagram(event: &str) -> Option<i64> {
    let rest = &event[event.find("EG#")? + 3..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl Evaluator<'_, '_> {
    /// The value of `hhdb f` at position `at` (see the module doc).
    pub(super) fn hhdb(&mut self, f: HhdbField, at: u32) -> R<Option<Value>> {
        let black = self.game.tag("Black").unwrap_or("");
        let has = |code: &str| black.contains(code);
        let logical = |b: bool| b.then_some(Value::Matched);
        let string = |s: Option<&str>| s.map(|s| Value::Str(s.to_string()));
        // CQL 6.2 reads a missing tag of the seven-tag roster as "?".
        let roster = |name: &str| self.game.tag(name).unwrap_or("?");
        let event = Some(roster("Event"));
        Ok(match f {
            HhdbField::Code(c) => logical(has(c)),
            HhdbField::Sound => {
                let failed = ["U3", "U4", "U5"].iter().any(|c| has(c));
                let dual = has("U1") || has("U2");
                logical(!(failed || (dual && self.cooked())))
            }
            HhdbField::Unsound => {
                let coded = ["U1", "U2", "U3", "U4", "U5"].iter().any(|c| has(c));
                logical(coded || self.cooked())
            }
            HhdbField::Dual => logical(has("U1") || has("U2")),
            HhdbField::Cooked => logical(self.cooked()),
            HhdbField::Mark(m) => logical(self.position_comment(at).is_some_and(|c| c.contains(m))),
            HhdbField::Mainline => logical(self.hhdb_mainline(at)),
            HhdbField::Variation => logical(!self.hhdb_mainline(at)),
            HhdbField::Composer => string(Some(roster("White"))),
            HhdbField::Search => Some(Value::Str(format!(
                "{}\n{}\n{}",
                roster("Event"),
                roster("White"),
                roster("Black")
            ))),
            HhdbField::Diagram => string(event.and_then(diagram)),
            HhdbField::EgDiagram => self
                .position_comment(0)
                .and_then(eg_diagram)
                .map(Value::Number),
            HhdbField::FirstComment => self.position_comment(0).map(|c| Value::Str(c.to_string())),
            HhdbField::Award { kind, special, max } => event
                .and_then(parse_award)
                .filter(|a| (a.special || !special) && kind_counts(kind, a))
                .map(|a| {
                    if a.special == special {
                        Value::Number(if max { a.last } else { a.rank })
                    } else {
                        // An ordinary award filter matches a special award
                        // without a value (CQL 6.2).
                        Value::Matched
                    }
                }),
            HhdbField::AwardRank { kind, special } => event
                .and_then(parse_award)
                .filter(|a| (a.special || !special) && kind_counts(kind, a))
                .map(|a| {
                    let kind = match a.kind {
                        AwardKind::Prize | AwardKind::Any => 0,
                        AwardKind::Hm => 1,
                        AwardKind::Commendation => 2,
                    };
                    let group = kind * 2 + i64::from(a.special);
                    Value::Number(
                        (group * 100_000 + a.rank.min(99_999)) * 100_000 + a.last.min(99_999),
                    )
                }),
        })
    }

    /// `<cook>` occurs in a tag or in the game's text.
    fn cooked(&self) -> bool {
        let in_tags = self.game.tags.iter().any(|(_, v)| v.contains("<cook>"));
        in_tags || self.st.text.as_ref().is_some_and(|t| t.contains_cook)
    }

    /// The comment of position `at` (see `GameText::comments`).
    pub(super) fn position_comment(&self, at: u32) -> Option<&str> {
        self.st.text.as_ref()?.comments.get(at as usize)?.as_deref()
    }

    /// `hhdb mainline` at `at`: each variation start on the way up holds
    /// `<main>` in its comment.
    fn hhdb_mainline(&self, at: u32) -> bool {
        let mut p = at;
        while let Some(parent) = self.game.parent(p) {
            let first_child = self.game.children(parent).first() == Some(&p);
            if !first_child
                && !self
                    .position_comment(p)
                    .is_some_and(|c| c.contains("<main>"))
            {
                return false;
            }
            p = parent;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awards_as_cql_reads_them() {
        let a = |s| parse_award(s).map(|a| (a.kind, a.special, a.rank, a.last));
        assert_eq!(a("1.p"), Some((AwardKind::Prize, false, 1, 1)));
        assert_eq!(a("1/2.p x"), Some((AwardKind::Prize, false, 1, 2)));
        assert_eq!(a("3.hm"), Some((AwardKind::Hm, false, 3, 3)));
        assert_eq!(a("1.comm."), Some((AwardKind::Commendation, false, 1, 1)));
        assert_eq!(a("sp.p"), Some((AwardKind::Prize, true, 1, 10_000)));
        assert_eq!(a("2.sp.c"), Some((AwardKind::Commendation, true, 2, 2)));
        for bad in [
            "p", "hm", "0.p", "2/1.p", "2/2.p", "1-2.p", "1.h", "1. p", " 1.p", "sp.1.p", "1.sp",
            "x 1.p",
        ] {
            assert_eq!(a(bad), None, "{bad}");
        }
    }

    #[test]
    fn diagram_numbers() {
        assert_eq!(diagram("alekhine + #4"), Some("4"));
        assert_eq!(diagram("x #12a y"), Some("12a"));
        assert_eq!(diagram("x # 5"), None);
        assert_eq!(eg_diagram("x EG#7a"), Some(7));
        assert_eq!(eg_diagram("EG#-4"), None);
    }
}
