//! CQL 3 text to its syntax tree: lists of atoms (`;` comments to the end
//! of the line, `"..."` strings), then the match list and position lists
//! with their keyword parameters. Every error names the word and its
//! position; a keyword cqlj does not implement is refused by name.

use super::ast::{
    Designator, Flag, Item, MatchList, PositionList, Range, Relation, SideRule, Tag,
    TransformKeyword,
};
use crate::ir::{Bitboard, GameResult, PieceSet, Span};
use crate::syntax::diag::Diagnostics;

/// Deepest nesting of lists accepted (deeper text is an error, never a
/// stack overflow).
pub const MAX_DEPTH: usize = 12;

/// A read S-expression.
#[derive(Clone, Debug)]
enum Sexp {
    /// A word (keyword, designator, number, file name) or a quoted string.
    Atom {
        text: String,
        quoted: bool,
        span: Span,
    },
    /// A parenthesized list.
    List { items: Vec<Sexp>, span: Span },
}

impl Sexp {
    fn span(&self) -> Span {
        match self {
            Sexp::Atom { span, .. } | Sexp::List { span, .. } => *span,
        }
    }
    fn word(&self) -> Option<&str> {
        match self {
            Sexp::Atom {
                text,
                quoted: false,
                ..
            } => Some(text),
            _ => None,
        }
    }
    /// The head word of a list (`position` of `(position ...)`).
    fn head(&self) -> Option<&str> {
        match self {
            Sexp::List { items, .. } => items.first().and_then(Sexp::word),
            _ => None,
        }
    }
}

type R<T> = Result<T, (Span, String)>;

struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl Lexer<'_> {
    fn skip_blank(&mut self) {
        loop {
            let rest = &self.src[self.pos..];
            let t = rest.trim_start();
            self.pos += rest.len() - t.len();
            if t.starts_with(';') {
                self.pos += t.find('\n').unwrap_or(t.len());
            } else {
                return;
            }
        }
    }

    fn read(&mut self, depth: usize) -> R<Option<Sexp>> {
        self.skip_blank();
        let start = self.pos;
        let rest = &self.src[start..];
        let Some(c) = rest.chars().next() else {
            return Ok(None);
        };
        match c {
            '(' => {
                if depth >= MAX_DEPTH {
                    return Err((
                        Span::new(start, start + 1),
                        format!("lists nested deeper than {MAX_DEPTH}"),
                    ));
                }
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_blank();
                    if self.src[self.pos..].starts_with(')') {
                        self.pos += 1;
                        return Ok(Some(Sexp::List {
                            items,
                            span: Span::new(start, self.pos),
                        }));
                    }
                    match self.read(depth + 1)? {
                        Some(s) => items.push(s),
                        None => {
                            return Err((
                                Span::new(start, start + 1),
                                "this `(` is never closed".to_owned(),
                            ));
                        }
                    }
                }
            }
            ')' => Err((Span::new(start, start + 1), "unmatched `)`".to_owned())),
            '"' => {
                let body = &rest[1..];
                match body.find('"') {
                    Some(end) => {
                        self.pos += end + 2;
                        Ok(Some(Sexp::Atom {
                            text: body[..end].to_owned(),
                            quoted: true,
                            span: Span::new(start, self.pos),
                        }))
                    }
                    None => Err((
                        Span::new(start, start + 1),
                        "this string is never closed".to_owned(),
                    )),
                }
            }
            _ => {
                let len = rest
                    .find(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ';')
                    .unwrap_or(rest.len());
                self.pos += len;
                Ok(Some(Sexp::Atom {
                    text: rest[..len].to_owned(),
                    quoted: false,
                    span: Span::new(start, self.pos),
                }))
            }
        }
    }
}

/// Reads the whole CQL 3 text: one `(match ...)` list, or one bare
/// `(position ...)` list standing for `(match (position ...))`.
///
/// # Errors
/// The first error found, with its span.
pub fn read_match(src: &str, diags: &mut Diagnostics) -> Option<MatchList> {
    match read_inner(src) {
        Ok(m) => Some(m),
        Err((span, msg)) => {
            diags.error(span, msg);
            None
        }
    }
}

fn read_inner(src: &str) -> R<MatchList> {
    let mut lx = Lexer { src, pos: 0 };
    let Some(top) = lx.read(0)? else {
        return Err((Span::new(0, 0), "empty CQL 3 query".to_owned()));
    };
    if let Some(extra) = lx.read(0)? {
        return Err((
            extra.span(),
            "text after the CQL 3 match list: a CQL 3 query is exactly one `(match ...)` list"
                .to_owned(),
        ));
    }
    match top.head() {
        Some("match") => match_list(&top),
        Some("position") => {
            let mut m = MatchList {
                span: top.span(),
                positions: vec![position_list(&top)?],
                ..MatchList::default()
            };
            list_variations(&mut m)?;
            Ok(m)
        }
        _ => Err((
            top.span(),
            "a CQL 3 query is one `(match ...)` list (or one `(position ...)` list)".to_owned(),
        )),
    }
}

fn list_items(s: &Sexp) -> &[Sexp] {
    match s {
        Sexp::List { items, .. } => items,
        Sexp::Atom { .. } => &[],
    }
}

/// The standard match-list keywords cqlj does not implement, with the
/// reason.
fn unsupported_match_keyword(k: &str) -> Option<&'static str> {
    Some(match k {
        "forall" => "it is not a keyword of the CQL 3 manual's match list",
        _ => return None,
    })
}

fn match_list(top: &Sexp) -> R<MatchList> {
    let items = &list_items(top)[1..];
    let mut m = MatchList {
        span: top.span(),
        ..MatchList::default()
    };
    let mut i = 0;
    while i < items.len() {
        let it = &items[i];
        i += 1;
        if it.head() == Some("position") {
            m.positions.push(position_list(it)?);
            continue;
        }
        let Some(word) = it.word() else {
            return Err((
                it.span(),
                "expected a match-list keyword (`:pgn`, `:output`, `:result`, `:year`, `:gamenumber`) or a `(position ...)` list".to_owned(),
            ));
        };
        let Some(k) = word.strip_prefix(':') else {
            return Err((
                it.span(),
                format!(
                    "`{word}` in the match list: expected a keyword or a `(position ...)` list"
                ),
            ));
        };
        let mut param = |what: &str| -> R<&Sexp> {
            let p = items
                .get(i)
                .ok_or_else(|| (it.span(), format!("`:{k}` needs {what}")))?;
            i += 1;
            Ok(p)
        };
        let span = it.span();
        let once = |given: bool| -> R<()> {
            if given {
                Err((span, format!("`:{k}` is given twice")))
            } else {
                Ok(())
            }
        };
        match k {
            "pgn" | "output" => {
                once(if k == "pgn" {
                    m.pgn.is_some()
                } else {
                    m.output.is_some()
                })?;
                let p = param("a file name")?;
                let name = match p {
                    Sexp::Atom { text, .. } => text.clone(),
                    Sexp::List { span, .. } => {
                        return Err((*span, format!("`:{k}` needs a file name, not a list")));
                    }
                };
                if k == "pgn" {
                    m.pgn = Some(name);
                } else {
                    m.output = Some(name);
                }
            }
            "player" => {
                let p = param("a player name")?;
                match p {
                    Sexp::Atom { text, .. } if !text.is_empty() => m.players.push(text.clone()),
                    _ => {
                        return Err((p.span(), "`:player` needs a player name".to_owned()));
                    }
                }
            }
            "variations" => {
                once(m.variations)?;
                m.variations = true;
            }
            "forany" => {
                let name = param("a tag name and a piece designator")?;
                let name = match name.word() {
                    Some(w) if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric()) => {
                        w.to_owned()
                    }
                    _ => {
                        return Err((
                            name.span(),
                            "`:forany` needs a tag name of letters and digits".to_owned(),
                        ));
                    }
                };
                let d = designator_param(param("a piece designator after the tag name")?)?;
                if m.tags.iter().any(|t| t.name == name) {
                    return Err((span, format!("the tag `{name}` is declared twice")));
                }
                if m.tags.len() == 2 {
                    return Err((
                        span,
                        "at most two tags (`:forany`) per match list".to_owned(),
                    ));
                }
                m.tags.push(Tag {
                    name,
                    pieces: d.pieces,
                    span,
                });
            }
            "result" => {
                once(m.result.is_some())?;
                m.result = Some(result_param(param("a result")?)?);
            }
            "year" => {
                once(m.year.is_some())?;
                let (r, used) = range_params(&items[i..], span, k, false)?;
                i += used;
                m.year = Some(r);
            }
            "gamenumber" => {
                once(m.gamenumber.is_some())?;
                let (r, used) = range_params(&items[i..], span, k, false)?;
                i += used;
                let (Ok(a), Ok(b)) = (u64::try_from(r.min), r.max.map(u64::try_from).transpose())
                else {
                    return Err((span, "game numbers are positive".to_owned()));
                };
                if a == 0 {
                    return Err((span, "game numbers start at 1".to_owned()));
                }
                m.gamenumber = Some((a, b.or(Some(a))));
            }
            other => {
                let msg = match unsupported_match_keyword(other) {
                    Some(why) => format!("CQL 3 keyword `:{other}` is not supported: {why}"),
                    None => format!(
                        "unknown or unsupported CQL 3 match-list keyword `:{other}` (supported: :pgn :output :result :year :gamenumber :player :variations :forany)"
                    ),
                };
                return Err((span, msg));
            }
        }
    }
    if m.positions.is_empty() {
        return Err((
            top.span(),
            "a CQL 3 match list needs at least one `(position ...)` list".to_owned(),
        ));
    }
    list_variations(&mut m)?;
    check_tags(&m)?;
    Ok(m)
}

/// Every tag a list uses is declared by `:forany`, and a match list with
/// tags has no `:relation` (the CQL 3 manual's rule).
fn check_tags(m: &MatchList) -> R<()> {
    fn walk(l: &PositionList, m: &MatchList) -> R<()> {
        for item in &l.items {
            match item {
                Item::Tagged(name, d) | Item::TagMatch(name, d)
                    if !m.tags.iter().any(|t| &t.name == name) =>
                {
                    return Err((
                        d.span,
                        format!(
                            "no tag `{name}` is declared: declare it with `:forany {name} D` in the match list"
                        ),
                    ));
                }
                Item::Relation(r) if !m.tags.is_empty() => {
                    return Err((
                        r.span,
                        "a match list with tags (`:forany`) cannot have a `:relation` (the CQL 3 manual's rule)".to_owned(),
                    ));
                }
                Item::Nested(n) | Item::Not(n) => walk(n, m)?,
                Item::Or(ls) | Item::And(ls) | Item::Sequence(ls) | Item::GappedSequence(ls) => {
                    for n in ls {
                        walk(n, m)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
    m.positions.iter().try_for_each(|l| walk(l, m))
}

/// Whether a list's own items (not its nested lists') hold `:variations`
/// or `:variationsonly`.
fn searches_variations(l: &PositionList) -> bool {
    l.items
        .iter()
        .any(|i| matches!(i, Item::Flag(Flag::Variations | Flag::VariationsOnly)))
}

/// The first nested list (at any depth below `l`) with `:variations`.
fn nested_variations(l: &PositionList) -> Option<Span> {
    find_nested(l, &searches_variations)
}

/// The span of the first list nested in `l` (at any depth) for which
/// `pred` holds.
fn find_nested(l: &PositionList, pred: &dyn Fn(&PositionList) -> bool) -> Option<Span> {
    l.items.iter().find_map(|i| {
        let inner: &[PositionList] = match i {
            Item::Nested(n) | Item::Not(n) => std::slice::from_ref(n),
            Item::Or(ls) | Item::And(ls) | Item::Sequence(ls) | Item::GappedSequence(ls) => ls,
            _ => &[],
        };
        inner.iter().find_map(|n| {
            if pred(n) {
                Some(n.span)
            } else {
                find_nested(n, pred)
            }
        })
    })
}

/// A position list's `:variations` (or `:variationsonly`) becomes the
/// match list's when every position list of the match list has it; cqlj
/// searches variations for the whole query or not at all, so a mix, or
/// the keyword in a nested list, is an error. `:matchcount` in a nested
/// list is an error too.
fn list_variations(m: &mut MatchList) -> R<()> {
    if let Some(span) = m
        .positions
        .iter()
        .find_map(|l| find_nested(l, &|n| n.matchcount.is_some()))
    {
        return Err((
            span,
            "`:matchcount` counts the game's positions a top-level position list matches; it is not allowed in a nested position list".to_owned(),
        ));
    }
    if let Some(span) = m.positions.iter().find_map(nested_variations) {
        return Err((
            span,
            "`:variations` in a nested position list is not supported (put it in the match list)"
                .to_owned(),
        ));
    }
    let with: Vec<bool> = m.positions.iter().map(searches_variations).collect();
    if with.iter().all(|w| *w) {
        m.variations = true;
    } else if let Some(i) = with.iter().position(|w| *w) {
        return Err((
            m.positions[i].span,
            "`:variations` in some position lists only is not supported: give it in every position list, or once in the match list".to_owned(),
        ));
    }
    Ok(())
}

fn result_param(p: &Sexp) -> R<GameResult> {
    match p.word() {
        Some("1-0") => Ok(GameResult::WhiteWins),
        Some("0-1") => Ok(GameResult::BlackWins),
        Some("1/2-1/2" | "1/2") => Ok(GameResult::Draw),
        _ => Err((
            p.span(),
            "expected a result: 1-0, 0-1, 1/2-1/2 or 1/2".to_owned(),
        )),
    }
}

fn number(s: &Sexp) -> Option<i64> {
    s.word()?.parse().ok()
}

/// A range specifier at the start of `rest`: `min [max]`, where `max` may
/// be `unlimited` when `unlimited_ok`. One number N means exactly N.
/// Returns the range and the number of atoms read.
fn range_params(rest: &[Sexp], at: Span, k: &str, unlimited_ok: bool) -> R<(Range, usize)> {
    let Some(min) = rest.first().and_then(number) else {
        return Err((
            rest.first().map_or(at, Sexp::span),
            format!("`:{k}` needs a range: a number, or two numbers"),
        ));
    };
    match rest.get(1) {
        Some(s) if s.word() == Some("unlimited") && unlimited_ok => {
            Ok((Range { min, max: None }, 2))
        }
        Some(s) => match number(s) {
            Some(max) if max < min => Err((
                s.span(),
                format!("`:{k}`: the range's maximum {max} is below its minimum {min}"),
            )),
            Some(max) => Ok((
                Range {
                    min,
                    max: Some(max),
                },
                2,
            )),
            None => Ok((
                Range {
                    min,
                    max: Some(min),
                },
                1,
            )),
        },
        None => Ok((
            Range {
                min,
                max: Some(min),
            },
            1,
        )),
    }
}

/// Standard position-list keywords that cqlj does not implement.
const UNSUPPORTED_POSITION: [&str; 1] = ["noenpassant"];

fn position_list(s: &Sexp) -> R<PositionList> {
    let all = list_items(s);
    let items = &all[1..];
    let mut l = PositionList {
        items: Vec::new(),
        transforms: Vec::new(),
        matchcount: None,
        span: s.span(),
    };
    let mut i = 0;
    while i < items.len() {
        let it = &items[i];
        i += 1;
        if let Sexp::List { .. } = it {
            if it.head() == Some("position") {
                l.items.push(Item::Nested(position_list(it)?));
                continue;
            }
            return Err((
                it.span(),
                "a list inside a position list must be a `(position ...)` list".to_owned(),
            ));
        }
        let word = match it {
            Sexp::Atom {
                text,
                quoted: false,
                ..
            } => text.as_str(),
            _ => {
                return Err((it.span(), "unexpected string in a position list".to_owned()));
            }
        };
        let span = it.span();
        let Some(k) = word.strip_prefix(':') else {
            if let Some(negated) = word.strip_prefix("!:") {
                return Err((
                    span,
                    format!(
                        "`{word}`: the `!:` negation is a Scidb extension; write `:not (position :{negated})`"
                    ),
                ));
            }
            if let Some(tagged) = word.strip_prefix('$') {
                l.items.push(tag_designator(tagged, span)?);
                continue;
            }
            l.items.push(Item::Designator(designator(word, span)?));
            continue;
        };
        if let Some(t) = TransformKeyword::from_keyword(k) {
            l.transforms.push(t);
            continue;
        }
        let flag = match k {
            "wtm" => Some(Flag::Wtm),
            "btm" => Some(Flag::Btm),
            "check" => Some(Flag::Check),
            "mate" => Some(Flag::Mate),
            "stalemate" => Some(Flag::Stalemate),
            "initial" => Some(Flag::Initial),
            "variations" => Some(Flag::Variations),
            "variationsonly" => Some(Flag::VariationsOnly),
            _ => None,
        };
        if let Some(f) = flag {
            l.items.push(Item::Flag(f));
            continue;
        }
        let next = |i: &mut usize, what: &str| -> R<&Sexp> {
            let p = items
                .get(*i)
                .ok_or_else(|| (span, format!("`:{k}` needs {what}")))?;
            *i += 1;
            Ok(p)
        };
        let item = match k {
            "result" => Item::Result(result_param(next(&mut i, "a result")?)?),
            "not" => {
                let p = next(&mut i, "a `(position ...)` list")?;
                if p.head() != Some("position") {
                    return Err((p.span(), "`:not` needs a `(position ...)` list".to_owned()));
                }
                Item::Not(position_list(p)?)
            }
            "or" | "and" | "sequence" | "gappedsequence" => {
                let p = next(&mut i, "a list of `(position ...)` lists")?;
                let lists = match p {
                    Sexp::List { items: ls, .. } if !ls.is_empty() && p.head().is_none() => ls
                        .iter()
                        .map(|x| {
                            if x.head() == Some("position") {
                                position_list(x)
                            } else {
                                Err((x.span(), format!("`:{k}` takes `(position ...)` lists")))
                            }
                        })
                        .collect::<R<Vec<_>>>()?,
                    _ => {
                        return Err((
                            p.span(),
                            format!(
                                "`:{k}` needs a list of position lists: `:{k} ((position ...) (position ...))`"
                            ),
                        ));
                    }
                };
                match k {
                    "or" => Item::Or(lists),
                    "and" => Item::And(lists),
                    "sequence" => Item::Sequence(lists),
                    _ => Item::GappedSequence(lists),
                }
            }
            "movefrom" | "moveto" => {
                let p = next(&mut i, "a piece designator")?;
                let d = designator_param(p)?;
                if k == "movefrom" {
                    Item::MoveFrom(d)
                } else {
                    if d.pieces.is_some() {
                        return Err((
                            p.span(),
                            "`:moveto` with a piece type is not supported (only squares, e.g. `:moveto ?[a-h8]`)".to_owned(),
                        ));
                    }
                    Item::MoveTo(d)
                }
            }
            "matchcount" => {
                if l.matchcount.is_some() {
                    return Err((span, "`:matchcount` is given twice".to_owned()));
                }
                let (r, used) = range_params(&items[i..], span, k, true)?;
                i += used;
                if r.max.unwrap_or(r.min) > i64::from(i32::MAX) || r.min < 0 {
                    return Err((
                        span,
                        format!("`:matchcount`: a count lies in 0..={}", i32::MAX),
                    ));
                }
                l.matchcount = Some(r);
                continue;
            }
            // `:nocheck`: the side to move is not in check (CQL 1's spelling
            // of `:not (position :check)`).
            "nocheck" => Item::Not(PositionList {
                items: vec![Item::Flag(Flag::Check)],
                transforms: Vec::new(),
                matchcount: None,
                span,
            }),
            "tagmatch" => {
                let name = next(&mut i, "a tag name and a piece designator")?;
                let Some(name) = name.word().map(str::to_owned) else {
                    return Err((name.span(), "`:tagmatch` needs a tag name".to_owned()));
                };
                let d = designator_param(next(&mut i, "a piece designator after the tag name")?)?;
                // Errors about the tag point at the keyword.
                Item::TagMatch(name, Designator { span, ..d })
            }
            "relation" => {
                let p = next(&mut i, "a relation specifier `(...)`")?;
                Item::Relation(Box::new(relation(p)?))
            }
            "piececount" => {
                let d = designator_param(next(&mut i, "a piece designator")?)?;
                let (r, used) = range_params(&items[i..], span, k, true)?;
                i += used;
                Item::PieceCount(d, r)
            }
            "attackcount" => {
                let d = designator_param(next(&mut i, "two piece designators")?)?;
                let e = designator_param(next(&mut i, "two piece designators")?)?;
                let (r, used) = range_params(&items[i..], span, k, true)?;
                i += used;
                if r.max.is_some() || r.min > 1 {
                    return Err((
                        span,
                        "`:attackcount` is supported with the ranges `0 unlimited` and `1 unlimited` only".to_owned(),
                    ));
                }
                Item::AttackCount(d, e, r)
            }
            other if UNSUPPORTED_POSITION.contains(&other) => {
                return Err((
                    span,
                    format!("CQL 3 keyword `:{other}` is not supported by cqlj"),
                ));
            }
            other => {
                return Err((
                    span,
                    format!("unknown or unsupported CQL 3 position-list keyword `:{other}`"),
                ));
            }
        };
        l.items.push(item);
    }
    Ok(l)
}

/// A `:relation` specifier: a list of relation keywords (see
/// [`Relation`]). `:shift` and `:flip`, which compare a transformed later
/// position, are refused by name.
fn relation(p: &Sexp) -> R<Relation> {
    let Sexp::List { items, span } = p else {
        return Err((
            p.span(),
            "`:relation` needs a relation specifier: a list such as `(:missingpiececount A 1 100)`"
                .to_owned(),
        ));
    };
    let any = Designator {
        pieces: Some(PieceSet::WHITE.union(PieceSet::BLACK)),
        squares: Bitboard::FULL,
        span: *span,
    };
    let none = Range {
        min: 0,
        max: Some(0),
    };
    let mut r = Relation {
        pattern: false,
        different: None,
        same: None,
        side: SideRule::Same,
        missing: (any, none),
        new: (any, none),
        span: *span,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut side_given = false;
    let mut i = 0;
    while i < items.len() {
        let it = &items[i];
        i += 1;
        let at = it.span();
        let Some(k) = it.word().and_then(|w| w.strip_prefix(':')) else {
            return Err((
                at,
                "expected a relation keyword (`:pattern`, `:originaldifferentcount`, `:originalsamecount`, `:missingpiececount`, `:newpiececount`, `:samesidetomove`, `:changesidetomove`, `:ignoresidetomove`)".to_owned(),
            ));
        };
        if seen.contains(&k) {
            return Err((
                at,
                format!("`:{k}` is given twice in the relation specifier"),
            ));
        }
        seen.push(k);
        match k {
            "pattern" => r.pattern = true,
            "originaldifferentcount" | "originalsamecount" => {
                let (range, used) = range_params(&items[i..], at, k, true)?;
                i += used;
                if k == "originalsamecount" {
                    r.same = Some(range);
                } else {
                    r.different = Some(range);
                }
            }
            "missingpiececount" | "newpiececount" => {
                let d = designator_param(items.get(i).ok_or_else(|| {
                    (at, format!("`:{k}` needs a piece designator and a range"))
                })?)?;
                i += 1;
                let (range, used) = range_params(&items[i..], at, k, true)?;
                i += used;
                if k == "missingpiececount" {
                    r.missing = (d, range);
                } else {
                    r.new = (d, range);
                }
            }
            "samesidetomove" | "changesidetomove" | "ignoresidetomove" => {
                if side_given {
                    return Err((
                        at,
                        "the relation specifier names the side to move twice".to_owned(),
                    ));
                }
                side_given = true;
                r.side = match k {
                    "samesidetomove" => SideRule::Same,
                    "changesidetomove" => SideRule::Change,
                    _ => SideRule::Ignore,
                };
            }
            "shift" | "flip" => {
                return Err((
                    at,
                    format!(
                        "`:{k}` in a relation specifier (comparing with a transformed later position) is not supported by cqlj"
                    ),
                ));
            }
            other => {
                return Err((at, format!("unknown relation keyword `:{other}`")));
            }
        }
    }
    Ok(r)
}

/// `$name` or `$name[squares]` (after the `$`): the tag's piece on one of
/// the squares.
fn tag_designator(text: &str, span: Span) -> R<Item> {
    let (name, squares) = match text.find('[') {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err((
            span,
            format!(
                "`${text}`: a tag designator is `$name` or `$name[squares]`, the name of letters and digits"
            ),
        ));
    }
    let Some(squares) = square_part(squares) else {
        return Err((
            span,
            format!(
                "`${text}`: the squares of a tag designator are written in brackets, e.g. `${name}[a1,d4]`"
            ),
        ));
    };
    Ok(Item::Tagged(
        name.to_owned(),
        Designator {
            pieces: None,
            squares,
            span,
        },
    ))
}

fn designator_param(p: &Sexp) -> R<Designator> {
    match p {
        Sexp::Atom {
            text,
            quoted: false,
            span,
        } => designator(text, *span),
        _ => Err((p.span(), "expected a piece designator".to_owned())),
    }
}

/// One CQL 3 piece character (ASCII or one of the seeds' symbols).
fn piece_char(c: char) -> Option<PieceSet> {
    let letters = match c {
        '♔' => "K",
        '♕' => "Q",
        '♖' => "R",
        '♗' => "B",
        '♘' => "N",
        '♙' => "P",
        '♚' => "k",
        '♛' => "q",
        '♜' => "r",
        '♝' => "b",
        '♞' => "n",
        '♟' => "p",
        '○' => "A",
        '●' => "a",
        '◑' | 'U' => "Aa",
        'I' => "BN",
        'i' => "bn",
        '.' => "_",
        c if "KQRBNPkqrbnpAa".contains(c) => return PieceSet::from_char(c),
        _ => return None,
    };
    Some(
        letters
            .chars()
            .filter_map(PieceSet::from_char)
            .fold(PieceSet::NONE, PieceSet::union),
    )
}

/// The piece part at the start of `s`: one piece character, `?`, or
/// `[chars]`. Returns its length and the set (`None` for `?`).
fn piece_part(s: &str) -> Option<(usize, Option<PieceSet>)> {
    let mut cs = s.char_indices();
    let (_, c0) = cs.next()?;
    if c0 == '?' {
        return Some((1, None));
    }
    if c0 == '[' {
        let mut set = PieceSet::NONE;
        let mut any = false;
        for (i, c) in cs {
            if c == ']' {
                return (i > 1).then_some((i + 1, if any { None } else { Some(set) }));
            }
            if c == '?' {
                any = true;
                continue;
            }
            set = set.union(piece_char(c)?);
        }
        return None;
    }
    Some((c0.len_utf8(), Some(piece_char(c0)?)))
}

/// `a`..`h`, `?` (all) for a file; `1`..`8`, `?` for a rank: (lo, hi).
fn coord_range(b: &[u8], i: &mut usize, lo_c: u8, hi_c: u8) -> Option<(u8, u8)> {
    let c = *b.get(*i)?;
    if c == b'?' {
        *i += 1;
        return Some((0, 7));
    }
    if !(lo_c..=hi_c).contains(&c) {
        return None;
    }
    *i += 1;
    let a = c - lo_c;
    if b.get(*i) == Some(&b'-') {
        let d = *b.get(*i + 1)?;
        if !(lo_c..=hi_c).contains(&d) {
            return None;
        }
        *i += 2;
        let e = d - lo_c;
        return Some((a.min(e), a.max(e)));
    }
    Some((a, a))
}

/// One square spec `a1`, `a-h1-2`, `?3`: the whole of `s`.
fn square_spec(s: &str) -> Option<Bitboard> {
    let b = s.as_bytes();
    let mut i = 0;
    let (f0, f1) = coord_range(b, &mut i, b'a', b'h')?;
    let (r0, r1) = coord_range(b, &mut i, b'1', b'8')?;
    if i != b.len() {
        return None;
    }
    let mut bb = 0u64;
    for r in r0..=r1 {
        for f in f0..=f1 {
            bb |= 1 << (8 * r + f);
        }
    }
    Some(Bitboard(bb))
}

/// A square part: empty (all squares), a spec, or `[spec,spec,...]`.
fn square_part(s: &str) -> Option<Bitboard> {
    if s.is_empty() {
        return Some(Bitboard::FULL);
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let mut bb = 0u64;
        for spec in inner.split(',') {
            bb |= square_spec(spec.trim())?.0;
        }
        return Some(Bitboard(bb));
    }
    square_spec(s)
}

/// Parses a CQL 3 piece designator: a piece part (`R`, `[RQ]`, `?`, `.`,
/// `U`, `i`, ...) then a square part (`a1`, `a-h1-2`, `[a1,c3]`, `?1`), either
/// part optional but not both.
fn designator(text: &str, span: Span) -> R<Designator> {
    let bad = || {
        (
            span,
            format!(
                "`{text}` is not a CQL 3 piece designator (e.g. `Ra1`, `[RQ][a-h1]`, `?d4`, `.e4`)"
            ),
        )
    };
    if let Some((n, pieces)) = piece_part(text)
        && let Some(squares) = square_part(&text[n..])
    {
        return Ok(Designator {
            pieces,
            squares,
            span,
        });
    }
    // `b2`: a square designator alone (any piece or empty square).
    match square_part(text) {
        Some(squares) if !text.is_empty() => Ok(Designator {
            pieces: None,
            squares,
            span,
        }),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> (Option<PieceSet>, Bitboard) {
        let x = designator(text, Span::default()).expect(text);
        (x.pieces, x.squares)
    }

    #[test]
    fn cql3_designators() {
        let r = PieceSet::from_char('R');
        assert_eq!(d("Ra1"), (r, Bitboard(1)));
        assert_eq!(d("R"), (r, Bitboard::FULL));
        assert_eq!(d("R[a1,a8,h1]").1, Bitboard(1 | 1 << 56 | 1 << 7));
        assert_eq!(d("[Aa][a-h1-2,f6,h7]").1.0.count_ones(), 18);
        assert_eq!(d("?d4"), (None, Bitboard(1 << 27)));
        assert_eq!(d("b2"), (None, Bitboard(1 << 9)));
        assert_eq!(d(".d4").0, Some(PieceSet::EMPTY_SQUARE));
        assert_eq!(
            d("id3").0,
            PieceSet::from_char('b').map(|b| b.union(PieceSet::from_char('n').unwrap_or_default()))
        );
        assert_eq!(d("♖c3"), (r, Bitboard(1 << 18)));
        assert_eq!(d("R?1").1.0, 0xff);
        assert!(designator("Rz9", Span::default()).is_err());
        assert!(designator("", Span::default()).is_err());
        assert!(designator("[]", Span::default()).is_err());
    }
}
