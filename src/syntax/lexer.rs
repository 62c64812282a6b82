//! The CQL lexer: source text to tokens, on demand.
//!
//! Piece and square designators (`Ka1`, `[RQ]a-h2`, `_e4`, `[a1-8,b3]`, `.`)
//! are single tokens, decided here: a word is a designator when the whole
//! word reads as one (so `abs` is an identifier and `a` a designator). The
//! Unicode spellings of CQL 6.2 are mapped to their ASCII meaning here, so
//! the parser sees only one vocabulary: e.g. `⬓` lexes as the keyword
//! `flipcolor`, `∩` as `&`, `――` as `--`, `△` as the piece letter `A`.

#![warn(missing_docs, unreachable_pub)]

use crate::ir::{Bitboard, PieceSet, Span};
use crate::syntax::diag::Diagnostics;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// Integer literal (non-negative as written).
    Num(u64),
    /// String literal, quotes removed, escapes resolved.
    Str(String),
    /// An identifier or keyword (Unicode keyword symbols are spelled out).
    Ident(String),
    /// A piece and/or square designator.
    Designator {
        /// The pieces (`None`: a square designator).
        pieces: Option<PieceSet>,
        /// The squares (`None`: none written, all 64).
        squares: Option<Bitboard>,
    },
    /// A raw word in the `cql(...)` header (a file name).
    Word(String),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `&`, `∩`
    Amp,
    /// `|`, `∪`
    Bar,
    /// `~`
    Tilde,
    /// `#`
    Hash,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `<`
    Lt,
    /// `<=`, `≤`
    Le,
    /// `==`
    EqEq,
    /// `>=`, `≥`
    Ge,
    /// `>`
    Gt,
    /// `!=`, `≠`
    Ne,
    /// `=` (assignment, or promotion in a dash move)
    Assign,
    /// `->`, `→`
    ArrowRight,
    /// `<-`, `←`
    ArrowLeft,
    /// `--`, `――`
    DashDash,
    /// `[x]`, `×`
    CaptureX,
    /// `o-o`, `O-O`
    CastleKing,
    /// `o-o-o`, `O-O-O`
    CastleQueen,
    /// `:` (the position operator `P:F`)
    Colon,
    /// `-->` (a `line` step forward)
    LongArrowRight,
    /// `<--` (a `line` step backward)
    LongArrowLeft,
    /// `?` (a `line` quantifier)
    Question,
    /// `[<]`, `≺`: strict ancestor of
    PosBefore,
    /// `[<=]`, `≼`
    PosBeforeEq,
    /// `[>]`, `≻`: strict descendant of
    PosAfter,
    /// `[>=]`, `≽`
    PosAfterEq,
    /// `~~` (a regular expression match)
    RegexMatch,
    /// `+=`, `-=`, `*=`, `/=`, `%=`, `|=`, `&=` (`∪=`, `∩=`): compound
    /// assignment; the operator's character.
    OpAssign(char),
    /// `\N`: group N of the last regular expression match.
    Group(u8),
    /// `\-N`: the offset of group N of the last match.
    GroupIndex(u8),
    /// `[` right after a name, a string or `)` and not starting a
    /// designator: string indexing `S[i]`, `S[i:j]`.
    LBracket,
    /// `]` closing a [`Tok::LBracket`].
    RBracket,
    /// `///`: CQL 6.2's comment filter whose arguments run to the end of
    /// the line (`////` and longer runs of slashes are line comments).
    SlashComment,
    /// The end of the line of a [`Tok::SlashComment`] (or the end of the
    /// text there): its argument list ends. Emitted only after a
    /// `SlashComment`, once.
    EndLine,
    /// The end of the text (returned again on every later call).
    Eof,
}

/// A token and its byte span.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What was read.
    pub tok: Tok,
    /// Where: the bytes of the token's text (empty at `Eof`).
    pub span: Span,
}

/// Converts the text of one square spec (`a1`, `a-h2-7`, `b3-5`, `c-e4`) at
/// the start of `s` into a bitboard; returns bytes consumed.
fn square_spec(s: &[u8]) -> Option<(usize, Bitboard)> {
    let file = |c: u8| (b'a'..=b'h').contains(&c).then(|| c - b'a');
    let rank = |c: u8| (b'1'..=b'8').contains(&c).then(|| c - b'1');
    let mut i = 0;
    let f0 = file(*s.first()?)?;
    i += 1;
    let mut f1 = f0;
    if s.get(i) == Some(&b'-')
        && let Some(f) = s.get(i + 1).and_then(|&c| file(c))
    {
        f1 = f;
        i += 2;
    }
    let r0 = rank(*s.get(i)?)?;
    i += 1;
    let mut r1 = r0;
    if s.get(i) == Some(&b'-')
        && let Some(r) = s.get(i + 1).and_then(|&c| rank(c))
    {
        r1 = r;
        i += 2;
    }
    let (flo, fhi) = (f0.min(f1), f0.max(f1));
    let (rlo, rhi) = (r0.min(r1), r0.max(r1));
    let mut bb = 0u64;
    for r in rlo..=rhi {
        for f in flo..=fhi {
            bb |= 1 << (8 * r + f);
        }
    }
    Some((i, Bitboard(bb)))
}

/// Parses a complete square designator: `a1`, `a-h2-7`, `[a1-8,b3]`, `.`.
/// Returns `None` unless all of `s` is one designator.
pub(crate) fn square_designator(s: &str) -> Option<Bitboard> {
    let b = s.as_bytes();
    match designator_squares(s, 0) {
        Some((n, bb)) if n == b.len() => Some(bb),
        _ => None,
    }
}

/// Reads a square part at byte `at` of `s`: `.`/`▦`, `[spec,...]` or a spec.
fn designator_squares(s: &str, at: usize) -> Option<(usize, Bitboard)> {
    let rest = s.get(at..)?;
    if rest.starts_with('.') {
        return Some((1, Bitboard::FULL));
    }
    if rest.starts_with('▦') {
        return Some(('▦'.len_utf8(), Bitboard::FULL));
    }
    let b = rest.as_bytes();
    if b.first() == Some(&b'[') {
        let mut i = 1;
        let mut bb = 0u64;
        loop {
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            let (n, set) = square_spec(&b[i..])?;
            bb |= set.0;
            i += n;
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b']') => return Some((i + 1, Bitboard(bb))),
                _ => return None,
            }
        }
    }
    square_spec(b)
}

/// One ASCII piece character.
fn piece_char(c: char) -> Option<PieceSet> {
    if "KQRBNPAkqrbnpa_".contains(c) {
        PieceSet::from_char(c)
    } else {
        None
    }
}

/// A Unicode piece symbol of CQL 6.2: the ASCII letters it stands for
/// (`◭` is `A` and `a`).
fn unicode_piece(c: char) -> Option<&'static str> {
    Some(match c {
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
        '△' => "A",
        '▲' => "a",
        '□' => "_",
        '◭' => "Aa",
        _ => return None,
    })
}

/// Does a Unicode piece designator start at `rest` (`♖`, `[♖♗]`)?
fn starts_unicode_designator(rest: &str) -> bool {
    let mut cs = rest.chars();
    match cs.next() {
        Some('[') => cs.next().and_then(unicode_piece).is_some(),
        Some(c) => unicode_piece(c).is_some(),
        None => false,
    }
}

/// Reads a piece part at byte `at`: one piece char or `[chars]` (ASCII;
/// Unicode symbols are read by [`Lexer::unicode_designator`]).
fn designator_pieces(s: &str, at: usize) -> Option<(usize, PieceSet)> {
    let rest = s.get(at..)?;
    let mut chars = rest.char_indices();
    let (_, c0) = chars.next()?;
    if c0 == '[' {
        let mut set = PieceSet::NONE;
        for (i, c) in chars {
            if c == ']' {
                return (i > 1).then_some((i + 1, set));
            }
            set = set.union(piece_char(c)?);
        }
        return None;
    }
    Some((c0.len_utf8(), piece_char(c0)?))
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Reads a whole designator at `at`; it must not run into an identifier.
fn designator(s: &str, at: usize) -> Option<(usize, Option<PieceSet>, Option<Bitboard>)> {
    let next_ok = |end: usize| !s[end..].chars().next().is_some_and(is_ident_char);
    let (np, pieces) = match designator_pieces(s, at) {
        Some((n, p)) => (n, Some(p)),
        None => (0, None),
    };
    if pieces.is_some()
        && let Some((ns, sq)) = designator_squares(s, at + np)
    {
        // A `.`/`▦` after a piece part is not part of it (`A.` is `A` `.`).
        if !s[at + np..].starts_with(['.', '▦']) && next_ok(at + np + ns) {
            return Some((np + ns, pieces, Some(sq)));
        }
    }
    // `b2`: `b` is also a piece letter, but this is a square designator.
    if let Some((ns, sq)) = designator_squares(s, at)
        && next_ok(at + ns)
    {
        return Some((ns, None, Some(sq)));
    }
    if let Some(p) = pieces
        && next_ok(at + np)
    {
        return Some((np, Some(p), None));
    }
    None
}

/// Keyword symbols of CQL 6.2 and their ASCII keyword.
fn unicode_keyword(c: char) -> Option<&'static str> {
    Some(match c {
        '⬓' => "flipcolor",
        '✵' => "flip",
        '∊' => "in",
        '∀' => "all",
        '∙' => "currentposition",
        '⊢' => "path",
        '◎' => "focus",
        _ => return None,
    })
}

/// The on-demand lexer. Errors are added to the shared [`Diagnostics`];
/// a bad character is skipped.
#[derive(Clone)]
pub struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    /// String indexes `S[` opened and not yet closed by their `]`.
    open_indexes: usize,
    /// A `///` was read and the end of its line not yet reported
    /// ([`Tok::EndLine`]).
    slash_open: bool,
}

/// Whether `s` starts with the `///` comment filter (exactly three slashes).
fn starts_slash_comment(s: &str) -> bool {
    s.starts_with("///") && !s[3..].starts_with('/')
}

impl<'s> Lexer<'s> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'s str) -> Lexer<'s> {
        Lexer {
            src,
            pos: 0,
            open_indexes: 0,
            slash_open: false,
        }
    }

    fn rest(&self) -> &'s str {
        &self.src[self.pos..]
    }

    /// Skips white space and comments.
    fn skip_trivia(&mut self, diags: &mut Diagnostics) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("//") && !starts_slash_comment(trimmed) {
                let n = trimmed.find('\n').unwrap_or(trimmed.len());
                self.pos += n;
            } else if let Some(body) = trimmed.strip_prefix("/*") {
                match body.find("*/") {
                    Some(n) => self.pos += n + 4,
                    None => {
                        diags.error(
                            Span::new(self.pos, self.pos + 2),
                            "unterminated comment: `/*` has no closing `*/`",
                        );
                        self.pos = self.src.len();
                    }
                }
            } else {
                return;
            }
        }
    }

    /// A raw header word (file name): a string literal or the text up to
    /// white space or `)`.
    pub(crate) fn raw_word(&mut self, diags: &mut Diagnostics) -> Token {
        self.skip_trivia(diags);
        if self.rest().starts_with('"') {
            return self.next(diags);
        }
        let start = self.pos;
        let n = self
            .rest()
            .find(|c: char| c.is_whitespace() || c == ')')
            .unwrap_or(self.rest().len());
        self.pos += n;
        if n == 0 {
            return self.next(diags);
        }
        Token {
            tok: Tok::Word(self.src[start..self.pos].to_owned()),
            span: Span::new(start, self.pos),
        }
    }

    /// Where the line of an open `///` ends, if only blanks and comments
    /// come before its end: the byte of its `\n` (or the end of the text).
    fn line_end_ahead(&self) -> Option<usize> {
        let mut at = self.pos;
        loop {
            let rest = &self.src[at..];
            let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() && c != '\n');
            at += rest.len() - trimmed.len();
            if trimmed.is_empty() || trimmed.starts_with('\n') {
                return Some(at);
            }
            if trimmed.starts_with("//") && !starts_slash_comment(trimmed) {
                return Some(at + trimmed.find('\n').unwrap_or(trimmed.len()));
            }
            match trimmed.strip_prefix("/*").and_then(|b| b.find("*/")) {
                Some(n) => at += n + 4,
                None => return None,
            }
        }
    }

    /// The next token (`Eof` at the end, forever).
    pub fn next(&mut self, diags: &mut Diagnostics) -> Token {
        loop {
            if self.slash_open
                && let Some(at) = self.line_end_ahead()
            {
                self.slash_open = false;
                return Token {
                    tok: Tok::EndLine,
                    span: Span::new(at, at),
                };
            }
            self.skip_trivia(diags);
            let start = self.pos;
            let rest = self.rest();
            let Some(c) = rest.chars().next() else {
                return Token {
                    tok: Tok::Eof,
                    span: Span::new(start, start),
                };
            };
            match self.lex_one(c, diags) {
                Some(tok) => {
                    return Token {
                        tok,
                        span: Span::new(start, self.pos),
                    };
                }
                None => continue,
            }
        }
    }

    fn take(&mut self, n: usize, tok: Tok) -> Option<Tok> {
        self.pos += n;
        Some(tok)
    }

    fn lex_one(&mut self, c: char, diags: &mut Diagnostics) -> Option<Tok> {
        let rest = self.rest();
        let start = self.pos;
        if starts_slash_comment(rest) {
            self.slash_open = true;
            return self.take(3, Tok::SlashComment);
        }
        // Multi-character operators first.
        for (text, tok) in [
            ("o-o-o", Tok::CastleQueen),
            ("O-O-O", Tok::CastleQueen),
            ("o-o", Tok::CastleKing),
            ("O-O", Tok::CastleKing),
        ] {
            if rest.starts_with(text) && !rest[text.len()..].starts_with(is_ident_char) {
                return self.take(text.len(), tok);
            }
        }
        for (text, tok) in [
            ("-->", Tok::LongArrowRight),
            ("<--", Tok::LongArrowLeft),
            ("――>", Tok::LongArrowRight),
            ("<――", Tok::LongArrowLeft),
            ("[<=]", Tok::PosBeforeEq),
            ("[>=]", Tok::PosAfterEq),
            ("[<]", Tok::PosBefore),
            ("[>]", Tok::PosAfter),
            ("[x]", Tok::CaptureX),
            ("――", Tok::DashDash),
            ("--", Tok::DashDash),
            ("->", Tok::ArrowRight),
            ("<-", Tok::ArrowLeft),
            ("<=", Tok::Le),
            (">=", Tok::Ge),
            ("==", Tok::EqEq),
            ("!=", Tok::Ne),
            ("~~", Tok::RegexMatch),
            ("+=", Tok::OpAssign('+')),
            ("-=", Tok::OpAssign('-')),
            ("*=", Tok::OpAssign('*')),
            ("/=", Tok::OpAssign('/')),
            ("%=", Tok::OpAssign('%')),
            ("|=", Tok::OpAssign('|')),
            ("&=", Tok::OpAssign('&')),
            ("∪=", Tok::OpAssign('|')),
            ("∩=", Tok::OpAssign('&')),
        ] {
            if rest.starts_with(text) {
                return self.take(text.len(), tok);
            }
        }
        if c == '"' {
            return self.string(diags);
        }
        if c.is_ascii_digit() {
            let n = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let text = &rest[..n];
            self.pos += n;
            return match text.parse::<u64>() {
                Ok(v) if v <= i32::MAX as u64 => Some(Tok::Num(v)),
                _ => {
                    diags.error(
                        Span::new(start, self.pos),
                        format!(
                            "number `{text}` is too large (CQL numbers are 32-bit: at most {})",
                            i32::MAX
                        ),
                    );
                    Some(Tok::Num(0))
                }
            };
        }
        // `[]`: the empty set of squares.
        if rest.starts_with("[]") {
            return self.take(
                2,
                Tok::Designator {
                    pieces: None,
                    squares: Some(Bitboard::EMPTY),
                },
            );
        }
        if c == '\\' {
            let (neg, digits_at) = match rest.as_bytes().get(1) {
                Some(b'-') => (true, 2),
                _ => (false, 1),
            };
            let digits = rest[digits_at..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len() - digits_at);
            self.pos += digits_at + digits;
            let text = &rest[digits_at..digits_at + digits];
            return match text.parse::<u8>() {
                Ok(n) if (1..=2).contains(&digits) => Some(if neg {
                    Tok::GroupIndex(n)
                } else {
                    Tok::Group(n)
                }),
                _ => {
                    diags.error(
                        Span::new(start, self.pos),
                        "a backslash outside a string names a group of the last `~~` match: one or two digits follow it (`\\1`, `\\-1`)",
                    );
                    None
                }
            };
        }
        if starts_unicode_designator(rest) {
            return Some(self.unicode_designator(diags));
        }
        if let Some((n, pieces, squares)) = designator(self.src, self.pos) {
            return self.take(n, Tok::Designator { pieces, squares });
        }
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let n = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
            return self.take(n, Tok::Ident(rest[..n].to_owned()));
        }
        if let Some(kw) = unicode_keyword(c) {
            return self.take(c.len_utf8(), Tok::Ident(kw.to_owned()));
        }
        let single = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            ',' => Tok::Comma,
            '&' | '∩' => Tok::Amp,
            '|' | '∪' => Tok::Bar,
            '~' => Tok::Tilde,
            '#' => Tok::Hash,
            '+' => Tok::Plus,
            '-' => Tok::Minus,
            '*' => Tok::Star,
            '/' => Tok::Slash,
            '%' => Tok::Percent,
            '<' => Tok::Lt,
            '>' => Tok::Gt,
            '=' => Tok::Assign,
            '≤' => Tok::Le,
            '≥' => Tok::Ge,
            '≠' => Tok::Ne,
            '→' => Tok::ArrowRight,
            '←' => Tok::ArrowLeft,
            '×' => Tok::CaptureX,
            ':' => Tok::Colon,
            // An index `S[i]`: right after a name, a string or `)`.
            '[' if self.src[..start]
                .chars()
                .next_back()
                .is_some_and(|p| is_ident_char(p) || p == '"' || p == ')') =>
            {
                self.open_indexes += 1;
                Tok::LBracket
            }
            ']' if self.open_indexes > 0 => {
                self.open_indexes -= 1;
                Tok::RBracket
            }
            '?' => Tok::Question,
            '≺' => Tok::PosBefore,
            '≼' => Tok::PosBeforeEq,
            '≻' => Tok::PosAfter,
            '≽' => Tok::PosAfterEq,
            _ => {
                self.pos += c.len_utf8();
                let what = if c == '[' {
                    "`[` does not start a valid piece or square designator (e.g. `[RQ]`, `[a1-8,b3]`); right after a string it indexes it (`s[1]`, `s[1:3]`)"
                        .to_owned()
                } else {
                    format!("unexpected character `{c}`")
                };
                diags.error(Span::new(start, self.pos), what);
                return None;
            }
        };
        self.take(c.len_utf8(), single)
    }

    /// A piece designator spelled with Unicode symbols (CQL 6.2): a run of
    /// adjacent symbols is one piece set (`♖♗♘` is `[RBN]`, `□△` is
    /// `[_A]`), also in brackets (`[♖♗]`), each letter at most once; a
    /// square part may follow directly (`♔♕a-h1`, `♖[a1,b2]`), and then
    /// nothing that continues a word (`♖K`, `♖a1x` are errors; `♖ K` is two
    /// designators). `.`/`▦` after the symbols is a separate token.
    fn unicode_designator(&mut self, diags: &mut Diagnostics) -> Tok {
        let src = self.src;
        let start = self.pos;
        let bracket = src[start..].starts_with('[');
        let mut i = start + usize::from(bracket);
        let mut letters = String::new();
        let mut pieces = PieceSet::NONE;
        while let Some(c) = src[i..].chars().next() {
            let Some(l) = unicode_piece(c) else { break };
            if let Some(dup) = l.chars().find(|&d| letters.contains(d)) {
                diags.error(
                    Span::new(i, i + c.len_utf8()),
                    format!(
                        "piece `{dup}` is given twice in one piece designator (`{c}` repeats it)"
                    ),
                );
            }
            letters.push_str(l);
            for a in l.chars() {
                if let Some(p) = PieceSet::from_char(a) {
                    pieces = pieces.union(p);
                }
            }
            i += c.len_utf8();
        }
        if bracket {
            if src[i..].starts_with(']') {
                i += 1;
            } else {
                let end = i + src[i..].chars().next().map_or(0, char::len_utf8);
                diags.error(
                    Span::new(start, end),
                    "a bracketed Unicode piece designator holds only piece symbols and ends with `]` (e.g. `[♖♗]`)",
                );
                self.pos = end;
                return Tok::Designator {
                    pieces: Some(pieces),
                    squares: None,
                };
            }
        }
        let mut squares = None;
        if !src[i..].starts_with(['.', '▦'])
            && let Some((n, sq)) = designator_squares(src, i)
        {
            squares = Some(sq);
            i += n;
        }
        let rest = &src[i..];
        // CQL 6.2: `◭x` (a lone `◭` glued to a name) declares a piece
        // variable, `◭x∊S F` being `piece x in S F`.
        if !bracket && squares.is_none() && letters == "Aa" && rest.starts_with(is_ident_char) {
            self.pos = i;
            return Tok::Ident("piece".to_owned());
        }
        if rest.starts_with(is_ident_char) {
            let n = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
            diags.error(
                Span::new(start, i + n),
                format!(
                    "`{}` is not a piece designator: after Unicode piece symbols only a square part may follow directly (`♖a1`, `♖[a1,b2]`); separate `{}` with a space",
                    &src[start..i + n],
                    &rest[..n]
                ),
            );
            i += n;
        }
        self.pos = i;
        Tok::Designator {
            pieces: Some(pieces),
            squares,
        }
    }

    fn string(&mut self, diags: &mut Diagnostics) -> Option<Tok> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.src[start + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos = start + 1 + i + 1;
                    return Some(Tok::Str(out));
                }
                // As in CQL 6.2 a backslash stands for itself (`"\d+"` is
                // a regular expression, `"\\"` two backslashes). cqlj adds
                // `\"` for a quote (CQL 6.2 has none: there a string ends
                // at the next quote, so a string ending in an odd run of
                // backslashes is the one CQL text cqlj reads otherwise).
                '\\' => match chars.clone().next() {
                    Some((_, '"')) => {
                        chars.next();
                        out.push('"');
                    }
                    Some((_, '\\')) => {
                        chars.next();
                        out.push_str("\\\\");
                    }
                    _ => out.push('\\'),
                },
                c => out.push(c),
            }
        }
        self.pos = self.src.len();
        diags.error(
            Span::new(start, start + 1),
            "unterminated string: `\"` has no closing quote",
        );
        Some(Tok::Str(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut d = Diagnostics::new(s);
        let mut l = Lexer::new(s);
        let mut out = vec![];
        loop {
            let t = l.next(&mut d);
            if t.tok == Tok::Eof {
                break;
            }
            out.push(t.tok);
        }
        assert!(d.is_empty(), "{d}");
        out
    }

    #[test]
    fn lexer_designators_and_identifiers() {
        assert!(matches!(toks("abs")[..], [Tok::Ident(_)]));
        assert!(matches!(toks("a")[..], [Tok::Designator { .. }]));
        assert_eq!(toks("Ka1--b2").len(), 3);
        assert_eq!(toks("Q[x]r").len(), 3);
        assert_eq!(
            square_designator("[a1-8,b3]").map(|b| b.0),
            Some(0x0101_0101_0101_0101 | 1 << 17)
        );
        assert_eq!(square_designator("a-h2-7").map(|b| b.count()), Some(48));
        assert_eq!(square_designator(".").map(|b| b.count()), Some(64));
        assert_eq!(square_designator("i9"), None);
    }
}
