//! CQL 3 syntax tree -> CQL 6 text with the same meaning, which the CQL 6
//! front end then parses to the IR (so both dialects share the IR, the
//! transform engine and both engines).
//!
//! - A position list is the conjunction `{ ... }` of its items (an empty
//!   one is `true`); a piece designator keeps its meaning (some piece on
//!   one of the squares); `:not`, `:or`, `:and` become `not`, `or`, `{ }`.
//! - `:movefrom D` is `move previous from D` (D is read in the position
//!   before the move: the moving piece on its square); `:moveto D` (squares
//!   only) is `move previous to D`; `:piececount D r` compares `#D`;
//!   `:attackcount D E 1 unlimited` is `D attacks E` (`0 unlimited`:
//!   `true`); `:sequence (A B ...)` is `line --> A --> B ...`,
//!   `:gappedsequence` puts `true*` between the lists; `:relation` is an
//!   `echo` over the later positions comparing them with this one
//!   (`relation`); `:variations` is
//!   `true` and `:variationsonly` is `variation` (with the header's
//!   `variations`).
//! - Transformation keywords: the shifts and the diagonal flips are
//!   expanded here with CQL 3's rules (`super::transform`) into an `or` of
//!   the transformed lists (a lone `:shift`, `:shifthorizontal` or
//!   `:shiftvertical` of a list with no square on an edge is CQL 6's
//!   filter of the same name, `super::transform::cql6_shift`); `:flipvertical`, `:fliphorizontal`, `:flip` and
//!   `:flipcolor` mean the same in CQL 6 and become the CQL 6 transform
//!   filters around that (`flipcolor flip fliphorizontal flipvertical X`,
//!   innermost applied first), unless a nested list has keywords of its
//!   own (then they are expanded here too, see `super::transform`).
//! - The match list: `:pgn`/`:output`/`:gamenumber` go to the `cql(...)`
//!   header (so `-i`/`-o` override them as they override a CQL 6 header),
//!   `:result` is `result R`, `:year` compares `year`, `:variations` is
//!   the header's, `:player NAME` is `player white ~~ R or player black
//!   ~~ R` with [`name_regex`]. One position list
//!   is the body itself (its matching positions are the game's); with
//!   several, each must match somewhere in the game: the body is `initial`
//!   and a `find quiet` of each list.
//! - Tags (`:forany NAME D`): the body is `initial` and one piece loop
//!   per tag over the initial position's pieces (`piece TagNAME in
//!   [Aa]`), each requiring `find quiet (TagNAME & D)` (D's piece types,
//!   somewhere in the game) and, for a second tag, another piece; the
//!   lists' `find quiet`s inside. `$NAME[s]` is `(TagNAME & s)`,
//!   `:tagmatch NAME D` is `(TagNAME & D)`.
//! - `:matchcount r` of a top-level list: the number of the game's
//!   positions the list matches must lie in r. Alone, the list's range is
//!   the header's `matchcount`; among several, its `find quiet r`.

use super::ast::result_text;
use super::ast::{
    Designator, Flag, Item, MatchList, PositionList, Range, Relation, SideRule, TransformKeyword,
};
use super::transform::{cql6_shift, explicit_orbit, has_nested_keywords};
use crate::ir::Bitboard;
use crate::syntax::parser::MAX_SOURCE_BYTES;
use crate::syntax::print::squares_text;

/// The translation would exceed the CQL 6 front end's source limit
/// ([`MAX_SOURCE_BYTES`]): the transformations expand to too many lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

/// Bytes of CQL 6 text produced so far (parts of nested lists counted at
/// each level, so an over-estimate); the expansion stops past the limit.
/// Also numbers the `:relation`s, whose `echo` variables need their own
/// names.
#[derive(Default)]
struct Budget {
    bytes: usize,
    relations: usize,
}

impl Budget {
    fn take(&mut self, s: String) -> Result<String, TooLarge> {
        self.bytes += s.len();
        if self.bytes > MAX_SOURCE_BYTES {
            Err(TooLarge)
        } else {
            Ok(s)
        }
    }
}

/// A designator in CQL 6 notation.
pub fn designator(d: &Designator) -> String {
    match d.pieces {
        None => squares_text(d.squares),
        Some(p) if d.squares == Bitboard::FULL => p.to_cql(),
        Some(p) => format!("{}{}", p.to_cql(), squares_text(d.squares)),
    }
}

fn count(d: &Designator, r: &Range) -> String {
    let c = format!("#{}", designator(d));
    match r.max {
        Some(m) if m == r.min => format!("({c} == {m})"),
        Some(m) => format!("({} <= {c} <= {m})", r.min),
        None => format!("({c} >= {})", r.min),
    }
}

/// The CQL 6 piece variable of a CQL 3 tag.
fn tag_var(name: &str) -> String {
    format!("Tag{name}")
}

/// `N` (a count) compared with a `:relation` range, in parentheses.
fn in_range(n: &str, r: &Range) -> String {
    match r.max {
        Some(m) if m == r.min => format!("({n} == {m})"),
        Some(m) => format!("({} <= {n} <= {m})", r.min),
        None => format!("({n} >= {})", r.min),
    }
}

/// A `:relation` as CQL 6's `echo` (see [`Relation`] for the meaning): with
/// the current position as the source S, some target T that S is a strict
/// ancestor of satisfies every parameter. `allowable`: the squares compared
/// (`None`: all).
fn relation(r: &Relation, allowable: Option<Bitboard>, b: &mut Budget) -> String {
    b.relations += 1;
    let n = b.relations;
    let (s, t) = (format!("RelationSource{n}"), format!("RelationTarget{n}"));
    let a = allowable.map_or(String::new(), |sq| format!("{} & ", squares_text(sq)));
    let union: Vec<String> = "KQRBNPkqrbnp"
        .chars()
        .map(|c| format!("{s}:{c} & {c}"))
        .collect();
    let mut parts = vec![
        format!("{s} [<] {t}"),
        format!("({a}[Aa] & {s}:[Aa]) in ({})", union.join(" | ")),
    ];
    let mut count = |n: String, range: Range| {
        if range.min > 0 || range.max.is_some() {
            parts.push(in_range(&n, &range));
        }
    };
    count(
        format!("#({a}{s}:{} & _)", designator(&r.missing.0)),
        r.missing.1,
    );
    count(format!("#({a}{s}:_ & {})", designator(&r.new.0)), r.new.1);
    if let Some(range) = r.different {
        count(format!("#({a}{s}:[Aa] & _) + #({a}{s}:_ & [Aa])"), range);
    }
    if let Some(range) = r.same {
        count(format!("#({a}{s}:[Aa] & [Aa])"), range);
    }
    match r.side {
        SideRule::Same => parts.push(format!("({s}:sidetomove) == sidetomove")),
        SideRule::Change => parts.push(format!("({s}:sidetomove) != sidetomove")),
        SideRule::Ignore => {}
    }
    format!("(echo quiet ({s} {t}) {{{}}})", parts.join(" "))
}

/// One item of a list; `pattern`: the squares of the list's top-level
/// designators (a `:relation`'s allowable squares with `:pattern`).
fn item(i: &Item, pattern: Bitboard, b: &mut Budget) -> Result<String, TooLarge> {
    Ok(match i {
        Item::Designator(d) => designator(d),
        Item::Flag(f) => match f {
            Flag::Wtm => "wtm",
            Flag::Btm => "btm",
            Flag::Check => "check",
            Flag::Mate => "mate",
            Flag::Stalemate => "stalemate",
            Flag::Initial => "initial",
            Flag::Variations => "true",
            Flag::VariationsOnly => "variation",
        }
        .to_owned(),
        Item::Result(r) => format!("result {}", result_text(*r)),
        Item::Nested(n) => list(n, b)?,
        Item::Not(n) => format!("not {}", list(n, b)?),
        Item::Or(ls) => {
            let parts = ls
                .iter()
                .map(|l| list(l, b))
                .collect::<Result<Vec<_>, _>>()?;
            format!("({})", parts.join(" or "))
        }
        Item::And(ls) => {
            let parts = ls
                .iter()
                .map(|l| list(l, b))
                .collect::<Result<Vec<_>, _>>()?;
            format!("{{{}}}", parts.join(" "))
        }
        Item::Sequence(ls) | Item::GappedSequence(ls) => {
            let gap = if matches!(i, Item::GappedSequence(_)) {
                " --> true*"
            } else {
                ""
            };
            let parts = ls
                .iter()
                .map(|l| list(l, b))
                .collect::<Result<Vec<_>, _>>()?;
            format!("(line --> {})", parts.join(&format!("{gap} --> ")))
        }
        Item::MoveFrom(d) => format!("move previous from {}", designator(d)),
        Item::MoveTo(d) => format!("move previous to {}", designator(d)),
        Item::PieceCount(d, r) => count(d, r),
        Item::AttackCount(d, e, r) => {
            if r.min == 0 {
                "true".to_owned()
            } else {
                format!("({} attacks {})", designator(d), designator(e))
            }
        }
        Item::Relation(r) => relation(r, r.pattern.then_some(pattern), b),
        Item::Tagged(name, d) => {
            if d.squares == Bitboard::FULL {
                tag_var(name)
            } else {
                format!("({} & {})", tag_var(name), squares_text(d.squares))
            }
        }
        Item::TagMatch(name, d) => format!("({} & {})", tag_var(name), designator(d)),
    })
}

/// The items of a list without its keywords: `{ ... }`, or `true`.
fn conjunction(l: &PositionList, b: &mut Budget) -> Result<String, TooLarge> {
    if l.items.is_empty() {
        return Ok("true".to_owned());
    }
    let pattern = l
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Designator(d) => Some(d.squares),
            _ => None,
        })
        .fold(Bitboard::EMPTY, |a, sq| Bitboard(a.0 | sq.0));
    let parts = l
        .items
        .iter()
        .map(|i| item(i, pattern, b))
        .collect::<Result<Vec<_>, _>>()?;
    b.take(format!("{{{}}}", parts.join(" ")))
}

/// The CQL 6 transform filters that a list's keywords put around its
/// explicit orbit, outermost first (none when a nested list has keywords
/// of its own; the shift of [`cql6_shift`] innermost).
pub fn cql6_wrappers(l: &PositionList) -> Vec<&'static str> {
    if has_nested_keywords(l) {
        return Vec::new();
    }
    let mut out: Vec<&'static str> = [
        (TransformKeyword::FlipColor, "flipcolor"),
        (TransformKeyword::Flip, "flip"),
        (TransformKeyword::FlipHorizontal, "fliphorizontal"),
        (TransformKeyword::FlipVertical, "flipvertical"),
    ]
    .into_iter()
    .filter(|(k, _)| l.transforms.contains(k))
    .map(|(_, name)| name)
    .collect();
    out.extend(cql6_shift(l).map(|k| k.keyword()));
    out
}

/// A position list, keywords applied, as one CQL 6 filter.
///
/// # Errors
/// [`TooLarge`]: its transformations expand past the source limit.
pub fn position(l: &PositionList) -> Result<String, TooLarge> {
    list(l, &mut Budget::default())
}

fn list(l: &PositionList, b: &mut Budget) -> Result<String, TooLarge> {
    let orbit = explicit_orbit(l);
    let mut core = if orbit.len() <= 1 {
        conjunction(
            &PositionList {
                transforms: Vec::new(),
                ..l.clone()
            },
            b,
        )?
    } else {
        let parts = orbit
            .iter()
            .map(|(_, x)| conjunction(x, b))
            .collect::<Result<Vec<_>, _>>()?;
        b.take(format!("({})", parts.join(" or ")))?
    };
    for w in cql6_wrappers(l).into_iter().rev() {
        core = format!("{w} {core}");
    }
    Ok(core)
}

/// A `:matchcount` range as the two numbers of CQL 6's ranges (`unlimited`
/// is the largest integer).
fn range_numbers(r: Range) -> String {
    format!("{} {}", r.min, r.max.unwrap_or(i64::from(i32::MAX)))
}

fn quote(s: &str) -> String {
    // CQL 6.2 reads backslashes as themselves; a quote is cqlj's `\"`.
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// A regular expression (the common part of Rust's and ECMAScript's
/// syntax, so CQL 6.2 reads it the same) that finds `name` in a string,
/// letters matched ignoring case: `[kK][aA]...`; the operators
/// `.+*?()|{}$` as one-character classes (`[.]`), `^[]\` escaped with a
/// backslash (which CQL 6.2 would read as itself), the rest as it is.
pub fn name_regex(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let (mut lo, mut up) = (c.to_lowercase(), c.to_uppercase());
        match (lo.next(), lo.next(), up.next(), up.next()) {
            (Some(l), None, Some(u), None) if l != u => {
                out.push('[');
                out.push(l);
                out.push(u);
                out.push(']');
            }
            _ if ".+*?()|{}$".contains(c) => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            _ if "^[]\\".contains(c) => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The whole query in CQL 6: an optional `cql(...)` header, then one filter
/// per line.
///
/// # Errors
/// [`TooLarge`]: the transformations expand past the source limit.
pub fn query(m: &MatchList) -> Result<String, TooLarge> {
    let mut b = Budget::default();
    let mut header = Vec::new();
    if let Some(p) = &m.pgn {
        header.push(format!("input {}", quote(p)));
    }
    if let Some(o) = &m.output {
        header.push(format!("output {}", quote(o)));
    }
    if m.variations {
        header.push("variations".to_owned());
    }
    if let Some((a, b)) = m.gamenumber {
        header.push(match b {
            Some(b) => format!("gamenumber {a} {b}"),
            None => format!("gamenumber {a}"),
        });
    }
    if let [only] = m.positions.as_slice()
        && m.tags.is_empty()
        && let Some(r) = only.matchcount
    {
        header.push(format!("matchcount {}", range_numbers(r)));
    }
    let mut lines = Vec::new();
    if !header.is_empty() {
        lines.push(format!("cql({})", header.join(" ")));
    }
    if let Some(r) = m.result {
        lines.push(format!("result {}", result_text(r)));
    }
    for p in &m.players {
        let re = quote(&name_regex(p));
        lines.push(format!("(player white ~~ {re} or player black ~~ {re})"));
    }
    if let Some(y) = m.year {
        lines.push(match y.max {
            Some(b) if b == y.min => format!("(year == {b})"),
            Some(b) => format!("({} <= year <= {b})", y.min),
            None => format!("(year >= {})", y.min),
        });
    }
    if let ([only], []) = (m.positions.as_slice(), m.tags.as_slice()) {
        lines.push(list(only, &mut b)?);
    } else {
        lines.push("initial".to_owned());
        // Tags: a piece loop over the initial position's pieces per tag,
        // each bound piece matching its designator's types somewhere, the
        // lists inside.
        let mut open = 0;
        for (k, t) in m.tags.iter().enumerate() {
            let v = tag_var(&t.name);
            lines.push(format!("piece {v} in [Aa] {{"));
            open += 1;
            for earlier in &m.tags[..k] {
                lines.push(format!("not ({} & {v})", tag_var(&earlier.name)));
            }
            if let Some(p) = t.pieces {
                lines.push(format!("find quiet ({v} & {})", p.to_cql()));
            }
        }
        for l in &m.positions {
            let range = l
                .matchcount
                .map(|r| format!("{} ", range_numbers(r)))
                .unwrap_or_default();
            lines.push(format!("find quiet {range}{}", list(l, &mut b)?));
        }
        lines.extend((0..open).map(|_| "}".to_owned()));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}
