//! The built-in functions of strings, numbers and variables
//! ([`crate::ir::Builtin`]), each with the CQL 6.2 meaning it implements.
//!
//! Strings are read as CQL reads them, as bytes: lengths, offsets and
//! indices count bytes (a name in UTF-8 counts each byte of a non-ASCII
//! letter), and a slice that cuts a character keeps the replacement
//! character in its place.

#![warn(missing_docs, unreachable_pub)]

use std::collections::HashMap;

use cqlj_runtime::layout::{MoveKind, chess};
use shakmaty::{Bitboard, Square};

use super::eval::{Evaluator, piece_name, squares_text};
use super::{InterpError, Value};
use crate::ir::{Builtin, Direction, Expr, Kind, Node};

type R<T> = Result<T, InterpError>;

/// The last successful `~~` match of a game: each group's byte offset in
/// the subject and its text (`None`: the group took no part).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Groups(Vec<Option<(usize, String)>>);

/// A dictionary key: the value of a key filter, ordered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum DictKey {
    /// A number.
    Number(i64),
    /// A string.
    Str(String),
    /// A set of squares, as its bits.
    Set(u64),
    /// A position, as its index in the game.
    Position(u32),
}

/// A dictionary's entries.
pub(super) type DictEntries = std::collections::BTreeMap<DictKey, Value>;

/// Compiled `~~` patterns that are not literals, keyed by their text
/// (`None`: not a valid pattern). A cache: it takes no part in a state's
/// equality.
#[derive(Clone, Debug, Default)]
pub(super) struct RegexCache(HashMap<String, Option<regex::Regex>>);

impl PartialEq for RegexCache {
    fn eq(&self, _: &RegexCache) -> bool {
        true
    }
}

impl Eq for RegexCache {}

/// The bytes of `s` from `start` to `end`, as a string.
fn bytes_text(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(&s.as_bytes()[start..end]).into_owned()
}

/// `int S`: an optional `-` then decimal digits only (no sign `+`, no
/// blanks), read as CQL 6.2 reads it: wrapping at 32 bits.
pub(super) fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i32 = 0;
    for b in digits.bytes() {
        n = n.wrapping_mul(10).wrapping_add(i32::from(b - b'0'));
    }
    Some(i64::from(if neg { n.wrapping_neg() } else { n }))
}

/// The integer square root of `n >= 0` (the largest `r` with `r * r <= n`).
fn isqrt(n: i64) -> i64 {
    let mut r = (n as f64).sqrt() as i64;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// A byte offset written in `[ ]`: negative counts from the end.
fn offset(i: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if i < 0 { len + i } else { i };
    (0..=len).contains(&i).then_some(i as usize)
}

impl Evaluator<'_, '_> {
    /// A string argument, `None` when it does not match.
    /// An operand of `equal`: its value, a set's also when empty.
    fn equal_operand(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        if e.kind == Kind::Set {
            Ok(Some(Value::Set(self.set(e, at)?)))
        } else {
            self.eval(e, at)
        }
    }

    pub(super) fn text(&mut self, e: &Expr, at: u32) -> R<Option<String>> {
        match self.eval(e, at)? {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s)),
            other => Err(self.mismatch(e, "string", &other)),
        }
    }

    /// A built-in function (CQL 6.2). Every argument must match, or the
    /// function does not. Meanings:
    /// - `sqrt N`: the integer square root; no match when N < 0;
    /// - `str X`: X's value as `message` writes it;
    /// - `int S`: see [`parse_int`]; no match when S is not a number;
    /// - `lowercase S`, `uppercase S`: ASCII letters changed;
    /// - `ascii N`: the character of code N (1..=127, else no match);
    ///   `ascii S`: the code of the single byte of S;
    /// - `indexof (S T)`: the byte offset of the first S in T; no match
    ///   when S does not occur;
    /// - `S + T`: concatenation; `#S`: the length in bytes;
    /// - `S[i]`: the byte at offset i (negative: from the end), no match
    ///   out of range; `S[i:j]`: bytes i..j, j clamped to the length, empty
    ///   when j <= i, no match when i is out of range;
    /// - `fen`: the position's FEN as CQL 6.2 writes it: the en passant
    ///   square after every double pawn step (whether or not a capture is
    ///   possible), halfmove clock 0 and move number 1;
    /// - `eventdate`: the `EventDate` tag (`????.??.??` when missing);
    /// - `typename X`: the upper-case letter of the piece on X's single
    ///   square (`_` when empty); no match unless X has one square;
    /// - `S ~~ R`: the first match of the regular expression R in S (no
    ///   match if none); its groups are kept for `\N` (the text of group
    ///   N, no match when it did not take part) and `\-N` (its offset);
    /// - `isbound x` / `isunbound x`: whether x holds a value; `unbind x`
    ///   removes it and matches;
    /// - `persistent x = F`: the assignment (x keeps its value across
    ///   games: see [`super::Interpreter::is_serial`]); `atomic x = F`: the
    ///   assignment (atomicity matters only to `path`, which cqlj lacks);
    /// - `D[k]`: the value stored under key k (no match if none); `D[k] =
    ///   v` stores it; `#D` counts the entries; `unbind D[k]` removes one;
    ///   a dictionary that is not `local` keeps its entries from game to
    ///   game (as persistent variables do).
    pub(super) fn builtin(&mut self, f: Builtin, args: &[Expr], at: u32) -> R<Option<Value>> {
        let num = Value::Number;
        let string = Value::Str;
        Ok(match (f, args) {
            (Builtin::Hhdb(h), _) => return self.hhdb(h, at),
            (Builtin::OriginalComment, _) => {
                self.position_comment(at).map(|c| string(c.to_string()))
            }
            (Builtin::SimilarPosition { notransform, .. }, [file]) => {
                let Node::Str(name) = &file.node else {
                    return Err(Self::dispatch_error(
                        file,
                        "similarposition needs a file name",
                    ));
                };
                let subs = self
                    .interp
                    .similar
                    .get(&(name.clone(), notransform))
                    .ok_or_else(|| Self::dispatch_error(file, "similarposition file not read"))?;
                let found = subs.find(self.rec(at)?);
                found.map(|f| {
                    self.auto_comment(at, f.comment);
                    num(i64::try_from(f.game).unwrap_or(i64::MAX))
                })
            }
            (Builtin::RemoveComment, _) => {
                self.st.edits.push(super::GameEdit::RemoveComment(at));
                Some(Value::Matched)
            }
            (Builtin::Sqrt, [a]) => self.num(a, at)?.filter(|n| *n >= 0).map(|n| num(isqrt(n))),
            (Builtin::Str, [a]) if matches!(a.node, Node::Builtin(Builtin::PieceVar(_), _)) => {
                match &a.node {
                    Node::Builtin(Builtin::PieceVar(v), _) => {
                        Some(string(self.piece_var_text(v.0, at)?))
                    }
                    _ => None,
                }
            }
            (Builtin::Str, [a]) => {
                let v = if a.kind == Kind::Set {
                    Some(Value::Set(self.set(a, at)?))
                } else {
                    self.eval(a, at)?
                };
                v.map(|v| string(self.value_text(v, false)))
            }
            (Builtin::Int, [a]) => self.text(a, at)?.and_then(|s| parse_int(&s)).map(num),
            (Builtin::SquareNamed, [a]) => self.text(a, at)?.and_then(|s| {
                let sq = Square::from_ascii(s.as_bytes()).ok()?;
                Some(Value::Set(Bitboard::from_square(sq)))
            }),
            (Builtin::Lowercase, [a]) => self.text(a, at)?.map(|s| string(s.to_ascii_lowercase())),
            (Builtin::Uppercase, [a]) => self.text(a, at)?.map(|s| string(s.to_ascii_uppercase())),
            (Builtin::Assert, [a]) => {
                if !self.matches(a, at)? {
                    return Err(InterpError::AssertFailed {
                        span: (args[0].span.start, args[0].span.end),
                        game: self.game.number,
                        position_id: self.position_id(at),
                    });
                }
                Some(Value::Matched)
            }
            (Builtin::Equal, [a, b]) => {
                let x = self.equal_operand(a, at)?;
                let y = self.equal_operand(b, at)?;
                (a.kind == b.kind && x == y).then_some(Value::Matched)
            }
            (Builtin::SetTag, [name, value]) => {
                let (Some(name), Some(value)) = (self.text(name, at)?, self.text(value, at)?)
                else {
                    return Ok(None);
                };
                self.st.edits.push(super::GameEdit::SetTag { name, value });
                Some(Value::Matched)
            }
            (Builtin::WriteFile, [f, s]) => {
                let (Some(name), Some(text)) = (self.text(f, at)?, self.text(s, at)?) else {
                    return Ok(None);
                };
                self.interp
                    .write_file(&name, &text)
                    .map_err(|reason| InterpError::WriteFile {
                        span: (f.span.start, f.span.end),
                        path: name.clone(),
                        reason,
                    })?;
                Some(Value::Matched)
            }
            (Builtin::ReadFile, [a]) => match self.text(a, at)? {
                Some(path) => Some(string(read_file(&path, args[0].span)?)),
                None => None,
            },
            (Builtin::Ascii, [a]) if a.kind == Kind::String => match self.text(a, at)? {
                Some(s) if s.len() == 1 => Some(num(i64::from(s.as_bytes()[0]))),
                _ => None,
            },
            (Builtin::Ascii, [a]) => self
                .num(a, at)?
                .and_then(|n| u8::try_from(n).ok())
                .filter(|b| (1..=127).contains(b))
                .map(|b| string(char::from(b).to_string())),
            (Builtin::IndexOf, [a, b]) => {
                let (Some(needle), Some(hay)) = (self.text(a, at)?, self.text(b, at)?) else {
                    return Ok(None);
                };
                hay.find(&needle).map(|i| num(i as i64))
            }
            (Builtin::Concat, [a, b]) => {
                let (Some(x), Some(y)) = (self.text(a, at)?, self.text(b, at)?) else {
                    return Ok(None);
                };
                Some(string(x + &y))
            }
            (Builtin::Length, [a]) => self.text(a, at)?.map(|s| num(s.len() as i64)),
            (Builtin::CharAt, [s, i]) => {
                let (Some(s), Some(i)) = (self.text(s, at)?, self.num(i, at)?) else {
                    return Ok(None);
                };
                offset(i, s.len())
                    .filter(|&i| i < s.len())
                    .map(|i| string(bytes_text(&s, i, i + 1)))
            }
            (Builtin::Substring { from, to }, [s, rest @ ..]) => {
                let Some(s) = self.text(s, at)? else {
                    return Ok(None);
                };
                let mut bounds = rest.iter();
                let mut bound = |this: &mut Self, written: bool| -> R<Option<Option<i64>>> {
                    match if written { bounds.next() } else { None } {
                        Some(e) => Ok(this.num(e, at)?.map(Some)),
                        None => Ok(Some(None)),
                    }
                };
                let (Some(i), Some(j)) = (bound(self, from)?, bound(self, to)?) else {
                    return Ok(None);
                };
                let Some(start) = offset(i.unwrap_or(0), s.len()) else {
                    return Ok(None);
                };
                let end = match j {
                    None => s.len(),
                    Some(j) if j < 0 => match offset(j, s.len()) {
                        Some(e) => e,
                        None => return Ok(None),
                    },
                    Some(j) => (j as usize).min(s.len()),
                };
                Some(string(if end <= start {
                    String::new()
                } else {
                    bytes_text(&s, start, end)
                }))
            }
            (Builtin::Fen, _) => Some(string(self.fen(at)?)),
            (Builtin::Direction(dirs), [min, max, x]) => {
                let (Some(lo), Some(hi)) = (self.num(min, at)?, self.num(max, at)?) else {
                    return Ok(None);
                };
                if !(-7..=7).contains(&lo) || !(-7..=7).contains(&hi) || lo > hi {
                    return Err(InterpError::InvalidDistance {
                        span: (min.span.start, x.span.end),
                        min: lo,
                        max: hi,
                    });
                }
                let x = self.set(x, at)?;
                let mut out = 0u64;
                for k in lo..=hi {
                    if k == 0 {
                        out |= x.0;
                        continue;
                    }
                    for d in dirs.iter() {
                        // A negative distance goes the opposite way.
                        let d = if k < 0 {
                            Direction::ALL[(d as usize + 4) % 8]
                        } else {
                            d
                        };
                        let mut b = x.0;
                        for _ in 0..k.unsigned_abs() {
                            b = d.shift(b);
                        }
                        out |= b;
                    }
                }
                Some(Value::Set(Bitboard(out)))
            }
            (Builtin::EventDate, _) => Some(string(
                self.game
                    .tag("EventDate")
                    .unwrap_or("????.??.??")
                    .to_owned(),
            )),
            (Builtin::TypeName, [a]) => {
                let squares = self.set(a, at)?;
                match squares.single_square() {
                    None => None,
                    Some(sq) => {
                        let (setup, _) = chess::setup_of(self.rec(at)?);
                        let c = setup
                            .board
                            .piece_at(sq)
                            .map_or('_', |p| p.role.upper_char());
                        Some(string(c.to_string()))
                    }
                }
            }
            (Builtin::PieceVar(v), _) => Some(Value::Set(self.piece_var_set(v.0, at)?)),
            (Builtin::PieceAssign(v), [a]) => self.piece_assign(v.0, a, at)?,
            // CQL 6.2: `pieceid x` of a piece variable is its piece's id,
            // also where the piece is not on the board.
            (Builtin::PieceId, [a]) if matches!(a.node, Node::Builtin(Builtin::PieceVar(_), _)) => {
                match &a.node {
                    Node::Builtin(Builtin::PieceVar(v), _) => match self.var_slot(v.0)? {
                        Some(Value::Piece(id)) => Some(num(i64::from(id.0))),
                        _ => None,
                    },
                    _ => None,
                }
            }
            (Builtin::PieceId, [a]) => self
                .single_square(a, at)?
                .and_then(|sq| self.st.pieces.ids(self.game).id_at(at, sq))
                .map(|id| num(i64::from(id.0))),
            (Builtin::PieceName, [a]) => match self.single_square(a, at)? {
                None => None,
                Some(sq) => Some(string(piece_name(self.piece_on(at, sq)?).to_owned())),
            },
            (Builtin::Type | Builtin::ColorType, [a]) => match self.single_square(a, at)? {
                None => None,
                Some(sq) => Some(num(self.piece_on(at, sq)?.map_or(0, |p| {
                    let t = i64::from(p.role as u8);
                    if f == Builtin::ColorType && p.color == shakmaty::Color::Black {
                        -t
                    } else {
                        t
                    }
                }))),
            },
            (Builtin::RegexMatch, [s, p]) => self.regex_match(s, p, at)?,
            (Builtin::Group(n), _) => self.group(n).map(|(_, text)| string(text.clone())),
            (Builtin::GroupIndex(n), _) => self.group(n).map(|(i, _)| num(*i as i64)),
            (Builtin::IsBound(v), _) => self.var_bound(v.0)?.then_some(Value::Matched),
            (Builtin::IsUnbound(v), _) => (!self.var_bound(v.0)?).then_some(Value::Matched),
            (Builtin::Unbind(v), _) => {
                *self.var_slot(v.0)? = None;
                // Of a dictionary (CQL 6.2): its entries are removed.
                self.st.dicts.remove(&v.0);
                Some(Value::Matched)
            }
            (Builtin::Dictionary { .. }, [access]) => self.eval(access, at)?,
            // A bare declaration (`[local] dictionary D`).
            (Builtin::Dictionary { .. }, []) => Some(Value::Matched),
            (Builtin::DictGet(d), [key]) => match self.dict_key(key, at)? {
                Some(k) => self.st.dicts.get(&d.0).and_then(|m| m.get(&k)).cloned(),
                None => None,
            },
            (Builtin::DictSet(d), [key, value]) => {
                let Some(k) = self.dict_key(key, at)? else {
                    return Ok(None);
                };
                let v = if value.kind == Kind::Set {
                    Some(Value::Set(self.set(value, at)?))
                } else {
                    self.eval(value, at)?
                };
                match v {
                    Some(v) => {
                        self.st.dicts.entry(d.0).or_default().insert(k, v);
                        Some(Value::Matched)
                    }
                    None => None,
                }
            }
            (Builtin::DictCount(d), _) => {
                Some(num(self.st.dicts.get(&d.0).map_or(0, |m| m.len() as i64)))
            }
            (Builtin::DictRemove(d), [key]) => {
                if let Some(k) = self.dict_key(key, at)?
                    && let Some(m) = self.st.dicts.get_mut(&d.0)
                {
                    m.remove(&k);
                }
                Some(Value::Matched)
            }
            // The assignment; its variable persists (see `Interpreter`).
            (Builtin::Persistent { .. } | Builtin::Atomic, [assign]) => self.eval(assign, at)?,
            (f, _) => {
                return Err(InterpError::Unsupported {
                    span: (0, 0),
                    what: format!("`{}` with {} arguments", f.keyword(), args.len()),
                });
            }
        })
    }

    /// A dictionary key's value (a set's, even empty), `None` when it does
    /// not match.
    fn dict_key(&mut self, key: &Expr, at: u32) -> R<Option<DictKey>> {
        if key.kind == Kind::Set {
            return Ok(Some(DictKey::Set(self.set(key, at)?.0)));
        }
        Ok(match self.eval(key, at)? {
            Some(Value::Number(n)) => Some(DictKey::Number(n)),
            Some(Value::Str(s)) => Some(DictKey::Str(s)),
            Some(Value::Set(b)) => Some(DictKey::Set(b.0)),
            Some(Value::Position(p)) => Some(DictKey::Position(p)),
            _ => None,
        })
    }

    fn var_bound(&mut self, v: u32) -> R<bool> {
        Ok(self.var_slot(v)?.is_some())
    }

    fn group(&self, n: u8) -> Option<&(usize, String)> {
        self.st.groups.0.get(n as usize)?.as_ref()
    }

    /// `S ~~ R` (see [`Evaluator::builtin`]); a pattern that is not a
    /// literal is compiled once per game and text, and one that does not
    /// compile does not match.
    fn regex_match(&mut self, s: &Expr, p: &Expr, at: u32) -> R<Option<Value>> {
        Ok(self.regex_match_from(s, p, at, 0)?.map(|(v, _)| v))
    }

    /// `S ~~ R` searching S from byte `from` on (`while (S ~~ R)` goes
    /// through the successive matches): the match's value and where the
    /// next search starts (past an empty match, the next character).
    pub(super) fn regex_match_from(
        &mut self,
        s: &Expr,
        p: &Expr,
        at: u32,
        from: usize,
    ) -> R<Option<(Value, usize)>> {
        let (Some(subject), Some(pattern)) = (self.text(s, at)?, self.text(p, at)?) else {
            return Ok(None);
        };
        if from > subject.len() || !subject.is_char_boundary(from) {
            return Ok(None);
        }
        let re = match self.interp.regexes.get(&pattern) {
            Some(re) => re,
            None => {
                let cache = &mut self.st.regexes.0;
                if !cache.contains_key(&pattern) {
                    let compiled = Builtin::compile_regex(&pattern).ok();
                    cache.insert(pattern.clone(), compiled);
                }
                match cache.get(&pattern) {
                    Some(Some(re)) => re,
                    _ => return Ok(None),
                }
            }
        };
        let Some(caps) = re.captures_at(&subject, from) else {
            return Ok(None);
        };
        let groups: Vec<Option<(usize, String)>> = caps
            .iter()
            .map(|g| g.map(|m| (m.start(), m.as_str().to_owned())))
            .collect();
        let next = caps.get(0).map_or(subject.len() + 1, |m| {
            if m.end() > m.start() {
                m.end()
            } else {
                m.end() + subject[m.end()..].chars().next().map_or(1, char::len_utf8)
            }
        });
        let whole = groups.first().cloned().flatten().map(|(_, t)| t);
        self.st.groups = Groups(groups);
        Ok(whole.map(|w| (Value::Str(w), next)))
    }

    /// The FEN of position `at` as CQL 6.2 writes it (see
    /// [`Evaluator::builtin`]).
    fn fen(&self, at: u32) -> R<String> {
        let rec = self.rec(at)?;
        let (mut setup, _) = chess::setup_of(rec);
        let mv = rec.mv;
        setup.ep_square = None;
        if !mv.is_none()
            && mv.kind() == MoveKind::Normal
            && mv.role() == 0
            && mv.from().abs_diff(mv.to()) == 16
        {
            setup.ep_square = Some(Square::new(u32::from(mv.from().min(mv.to()) + 8)));
        }
        setup.halfmoves = 0;
        setup.fullmoves = std::num::NonZeroU32::MIN;
        Ok(shakmaty::fen::Fen::try_from_setup(setup)
            .unwrap_or_else(shakmaty::fen::LossyFenError::ignore)
            .to_string())
    }

    /// The text of a value as `message`, `comment` and `str` write it;
    /// with `marked` (a comment's or message's text), a position off the
    /// mainline also gets its `id:N` comment
    /// ([`position_text_marked`](Self::position_text_marked)).
    pub(super) fn value_text(&mut self, v: Value, marked: bool) -> String {
        match v {
            Value::Set(s) => squares_text(s),
            Value::Number(n) => n.to_string(),
            Value::Str(s) => s,
            Value::Position(p) if marked => self.position_text_marked(p),
            Value::Position(p) => self.position_text(p),
            Value::Matched => "<true>".to_owned(),
            Value::Piece(id) => format!("piece {}", id.0),
        }
    }
}

/// `readfile`: the contents of the file `path` (relative to the current
/// directory), which must be named `*.pgn`, `*.cqo` or `*.cql` as in CQL
/// 6.2; bytes that are not UTF-8 are replaced (U+FFFD).
fn read_file(path: &str, span: crate::ir::Span) -> Result<String, InterpError> {
    let error = |reason: String| InterpError::ReadFile {
        span: (span.start, span.end),
        path: path.to_owned(),
        reason,
    };
    if ![".pgn", ".cqo", ".cql"]
        .iter()
        .any(|ext| path.ends_with(ext))
    {
        return Err(error(
            "the file name must end in .pgn, .cqo or .cql".to_owned(),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_sqrt_and_offsets() {
        assert_eq!(parse_int("007"), Some(7));
        assert_eq!(parse_int("-5"), Some(-5));
        assert_eq!(parse_int("99999999999"), Some(1215752191));
        for bad in ["", "-", "+5", " 5", "12x"] {
            assert_eq!(parse_int(bad), None, "{bad}");
        }
        assert_eq!(isqrt(17), 4);
        assert_eq!(isqrt(i64::from(i32::MAX)), 46340);
        assert_eq!(offset(-1, 3), Some(2));
        assert_eq!(offset(-4, 3), None);
    }
}
