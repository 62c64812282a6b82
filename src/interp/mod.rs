//! The reference interpreter: evaluates an [`ExpandedQuery`] position by
//! position, directly on [`PositionRecord`]s, with the chess rules taken from
//! shakmaty. It is written for clarity, not speed, and is the oracle the JIT
//! is tested against.
//!
//! - [`Interpreter`] holds the query (immutable, shareable between threads).
//! - [`State`] holds what one game's evaluation accumulates: variables,
//!   comments, messages and sort values (CQL resets ordinary variables at the
//!   start of each game).
//! - [`GameView`] is one game: its tags and its positions in store order.
//!
//! The meaning of every filter is written in the doc comment of the function
//! that evaluates it (`eval.rs` for the dispatcher and the logical, numeric
//! and string filters, `board.rs` for the chess geometry, `moves.rs` for the
//! `move` filter).
//!
//! **Evaluation model.** Evaluating a filter at a position yields
//! `Option<Value>`: `None` when the filter does not match. A set filter
//! matches iff its set is non-empty; its value is still needed when empty
//! (for `#`, `~`, comparisons), so set filters are evaluated through
//! `eval::Evaluator::set`, which reads "no match" as the empty set.

#![warn(missing_docs, unreachable_pub)]

mod board;
mod eval;
mod files;
mod hhdb;
mod line;
mod mates;
mod moves;
mod path;
mod pieces;
mod sequence;
pub mod similar;
mod strings;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ir::{Builtin, ExpandedQuery, Expr, Kind, Node, Span, VarId};
use cqlj_runtime::bitboard::Bitboard;
use cqlj_runtime::layout::PositionRecord;

/// The pieces of the reference `path` that `scan::path_exact` runs
/// natively (the same automaton, focus rules and move facts).
pub(crate) use moves::MoveFacts;
pub(crate) use path::{
    Automaton as PathAutomaton, MAX_PATH_STEPS, State as PathState, in_focus, move_focus,
};
pub use pieces::{PieceId, PieceIds};
pub(crate) use sequence::in_range;

/// One game as the interpreter sees it.
///
/// **Invariants:** `positions` is in store order: the initial position first;
/// position `j > 0` has parent `j - parent_delta[j]`; the children of `i` are
/// the `j > i` whose parent is `i`, the first of them being the mainline (or
/// variation-main) continuation, the others variations, in PGN order.
#[derive(Clone, Copy, Debug)]
pub struct GameView<'a> {
    /// 1-based number of the game in its database.
    pub number: u64,
    /// The PGN tags, in PGN order.
    pub tags: &'a [(String, String)],
    /// The game tree's positions in store order (see the invariants above).
    pub positions: &'a [PositionRecord],
}

impl<'a> GameView<'a> {
    /// The value of tag `name` (exact, case-sensitive name) as CQL 6.2
    /// reads it (oracle): a missing `Event`, `Site`, `White` or `Black`
    /// tag is `?` and a missing `Date` `????.??.??` (the seven-tag
    /// roster's unknown values); `White` and `Black` without leading
    /// white space, nor trailing white space and `.` (`Tal, M.` is `Tal,
    /// M`), a value left empty being no value.
    pub fn tag(&self, name: &str) -> Option<&'a str> {
        let Some(value) = self.raw_tag(name) else {
            return match name {
                "Event" | "Site" | "White" | "Black" => Some("?"),
                "Date" => Some("????.??.??"),
                _ => None,
            };
        };
        if !matches!(name, "White" | "Black") {
            return Some(value);
        }
        let name = value
            .trim_start_matches(|c: char| c.is_ascii_whitespace())
            .trim_end_matches(|c: char| c == '.' || c.is_ascii_whitespace());
        (!name.is_empty()).then_some(name)
    }

    /// The value of tag `name` as written, if present.
    pub fn raw_tag(&self, name: &str) -> Option<&'a str> {
        self.tags
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The parent of position `index`, or `None` for the initial position (or
    /// an inconsistent `parent_delta`).
    pub fn parent(&self, index: u32) -> Option<u32> {
        let rec = self.positions.get(index as usize)?;
        if rec.parent_delta == 0 {
            return None;
        }
        index.checked_sub(rec.parent_delta as u32)
    }

    /// The children of position `index`, in store (PGN) order: the first is
    /// the continuation on the same line, the others start variations. A
    /// scan of the positions after `index`: evaluation reads the game's
    /// tree index instead (`sequence::TreeIndex`, built once per game).
    pub fn children(&self, index: u32) -> Vec<u32> {
        let start = index as usize + 1;
        self.positions
            .iter()
            .enumerate()
            .skip(start)
            .filter(|(j, p)| {
                p.parent_delta != 0
                    && j.checked_sub(p.parent_delta as usize) == Some(index as usize)
            })
            .map(|(j, _)| j as u32)
            .collect()
    }
}

/// Options of one run that change what a query means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalOptions {
    /// Also evaluate positions inside variations, and let `move` see the
    /// moves that start variations (CQL's `variations` header option).
    /// Default: mainline only.
    pub variations: bool,
}

/// The value of a filter that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A set of squares (set filters).
    Set(Bitboard),
    /// An integer (numeric filters).
    Number(i64),
    /// A string (string filters).
    Str(String),
    /// A position, as its index in the game (position filters).
    Position(u32),
    /// A logical filter matched (it has no value).
    Matched,
    /// A piece (the value a piece variable holds; reading the variable
    /// yields the piece's square in the position read).
    Piece(PieceId),
}

/// The value of a sort key for one game.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortValue {
    /// A numeric key (a set's key is its size).
    Number(i64),
    /// A string key.
    Str(String),
}

/// One `sort` filter's result for one game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The documentation string (`sort "label" ...`), if any.
    pub label: Option<String>,
    /// The best value seen in the game: the maximum, or the minimum with
    /// `min`; `None` if the sort's argument never matched.
    pub value: Option<SortValue>,
    /// `sort min`: games are ordered ascending by this key.
    pub min: bool,
    /// Written in the game's header comment (`label: value`); not for the
    /// key of `hhdb sort`, which CQL 6.2 does not show.
    pub shown: bool,
}

/// What evaluating one game produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameOutcome {
    /// Indices (into `GameView::positions`) of the positions where the body
    /// matched, ascending.
    pub matched: Vec<u32>,
    /// Texts of `comment` filters and of the filters' own comments, with
    /// the position they attach to, in evaluation order; a text is at a
    /// position once (its first time).
    pub comments: Vec<(u32, String)>,
    /// For each matched position, in evaluation order: how many of
    /// `comments` were made before its evaluation ended. CQL 6.2 writes a
    /// position's match string there, before the comments later
    /// evaluations make at it.
    pub match_marks: Vec<(u32, u32)>,
    /// Texts of `message` filters, in evaluation order.
    pub messages: Vec<String>,
    /// The same, as CQL 6.2 prints them: `Game: N move M(wtm): text`
    /// (only the text for `message quiet`).
    pub message_lines: Vec<String>,
    /// One key per distinct `sort` filter of the query, in query order.
    pub sort_keys: Vec<SortKey>,
    /// Changes to the written game (`removecomment`, `settag`), in
    /// evaluation order.
    pub edits: Vec<GameEdit>,
}

/// A change the query makes to a matching game as it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GameEdit {
    /// `removecomment`: the PGN comments of this position (store order)
    /// are left out.
    RemoveComment(u32),
    /// `settag (name value)`: the tag is written with this value (added
    /// after the others when the game has no such tag).
    SetTag {
        /// The tag's name.
        name: String,
        /// Its value.
        value: String,
    },
}

/// Errors of evaluation. They mean the IR is inconsistent (a kind mismatch
/// the parser should have rejected) or the store is corrupt; a well-formed
/// query on a well-formed store never produces one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InterpError {
    /// A filter's value is not of the kind its parent needs.
    #[error("filter at {span:?}: expected a {expected} value, got {got}")]
    KindMismatch {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// The kind needed.
        expected: &'static str,
        /// The value found.
        got: String,
    },
    /// A node the interpreter cannot evaluate where it stands (a transform
    /// filter left unexpanded, a `promote` that is not a piece designator,
    /// ...).
    #[error("filter at {span:?} is not evaluable by the interpreter: {what}")]
    Unsupported {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// What the node is.
        what: String,
    },
    /// A variable id beyond the query's variable table.
    #[error("variable #{0} is not declared in the query")]
    UnknownVariable(u32),
    /// A position index beyond the game.
    #[error("position {index} is outside the game (it has {len} positions)")]
    PositionOutOfRange {
        /// The index asked for.
        index: u32,
        /// The game's number of positions.
        len: usize,
    },
    /// A `line` needed more than `limit` steps of its automaton at one
    /// position.
    #[error(
        "filter at {span:?}: this line needs more than {limit} steps of its automaton at one position; write a more specific line"
    )]
    LineTooLarge {
        /// The `line` filter's source span (start, end).
        span: (u32, u32),
        /// The step limit.
        limit: u64,
    },
    /// A `loop` or `while` ran more than `limit` iterations at one
    /// position.
    #[error(
        "filter at {span:?}: this {keyword} ran more than {limit} iterations at one position without stopping (a loop stops when its body fails, a while when its condition fails)"
    )]
    LoopTooLong {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// `loop` or `while`.
        keyword: &'static str,
        /// The iteration limit.
        limit: u64,
    },
    /// A `path` needed more than `limit` steps of its automaton at one
    /// position.
    #[error(
        "filter at {span:?}: this path needs more than {limit} steps of its automaton at one position; write a more specific path"
    )]
    PathTooLarge {
        /// The `path` filter's source span (start, end).
        span: (u32, u32),
        /// The step limit.
        limit: u64,
    },
    /// `readfile` could not read its file, or the file's name does not end
    /// in `.pgn`, `.cqo` or `.cql` (CQL 6.2 stops the run then too).
    #[error("readfile at {span:?}: {path:?}: {reason}")]
    ReadFile {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// The file name as the query gave it.
        path: String,
        /// Why it could not be read.
        reason: String,
    },
    /// `similarposition` could not read its submissions file.
    #[error("similarposition at {span:?}: {path:?}: {reason}")]
    SimilarPosition {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// The file name as the query gave it.
        path: String,
        /// Why it could not be read.
        reason: String,
    },
    /// `writefile` could not write its file, or the file's name does not
    /// end in `.cqo` or `.cql`, or names one of the run's own files.
    #[error("writefile at {span:?}: {path:?}: {reason}")]
    WriteFile {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// The file name as the query gave it.
        path: String,
        /// Why it could not be written.
        reason: String,
    },
    /// A direction filter's distances (`up N M X` with variables) are not
    /// a range within -7..=7 (CQL 6.2 stops with "Invalid range").
    #[error(
        "filter at {span:?}: invalid direction distances {min} {max}: each must lie in -7..=7 and the first must not exceed the second"
    )]
    InvalidDistance {
        /// The filter's source span (start, end).
        span: (u32, u32),
        /// The least distance.
        min: i64,
        /// The greatest distance.
        max: i64,
    },
    /// `cql_abort` was evaluated (CQL 6.2 stops the run there).
    #[error("the run stopped at cql_abort, the filter at {span:?}")]
    Aborted {
        /// The filter's source span (start, end).
        span: (u32, u32),
    },
    /// `assert F` where F did not match.
    #[error(
        "assert failed: the filter at {span:?} does not match at positionid {position_id} of game {game}"
    )]
    AssertFailed {
        /// The asserted filter's source span (start, end).
        span: (u32, u32),
        /// The game's number.
        game: u64,
        /// The position's `positionid`.
        position_id: u32,
    },
    /// A stored position that is not a legal chess position (its legal
    /// moves were needed).
    #[error("game {game}: position {index}: {message}")]
    InvalidPosition {
        /// The game's number.
        game: u64,
        /// The position's index in the game.
        index: u32,
        /// What is wrong with it.
        message: String,
    },
}

/// Identity of a `sort` filter: its label, direction and source span (orbit
/// copies of one `sort` share the span, and so share the key, as CQL wants:
/// a sort inside `flipcolor` remembers the best value of both elements).
type SortId = (Option<String>, bool, u32, u32);

/// A compiled query for the interpreter.
#[derive(Clone, Debug)]
pub struct Interpreter {
    query: ExpandedQuery,
    /// The distinct sort filters, in query (pre-)order.
    sorts: Vec<SortId>,
    /// Per sort: whether its key is shown (see [`SortKey::shown`]).
    sort_shown: Vec<bool>,
    sort_index: HashMap<SortId, usize>,
    /// The value of `lastgamenumber`; `None`: unknown, and then each game
    /// is taken to be the last one (its own number).
    last_game_number: Option<u64>,
    /// The compiled literal patterns of the query's `~~` filters.
    regexes: rustc_hash::FxHashMap<String, regex::Regex>,
    /// The submissions files the query's `similarposition` filters name
    /// (file, `notransform`, the filter's span), in query order.
    similar_files: Vec<(String, bool, Span)>,
    /// Their games, added by the caller ([`Interpreter::add_submissions`]),
    /// by file name and `notransform`.
    similar: HashMap<(String, bool), Arc<similar::Submissions>>,
    /// The persistent variables ([`crate::ir::Query::persistent_vars`]).
    persistent: Vec<(VarId, bool)>,
    /// Their values between games (indexed by variable; only persistent
    /// slots are used), shared by the clones of this interpreter. Games
    /// must then be evaluated one after another in game order.
    persistent_values: Arc<Mutex<Vec<Option<Value>>>>,
    /// The dictionaries that are not `local`.
    persistent_dicts: Vec<VarId>,
    /// Their entries between games, shared like `persistent_values`.
    dict_values: Arc<Mutex<HashMap<u32, strings::DictEntries>>>,
    /// Keep the comments of filters that fail (CQL's `-alwayscomment`:
    /// smart comments off).
    always_comment: bool,
    /// Make the comments filters make by themselves (`Start line ...`,
    /// `echo`'s, `Found`); off with CQL's `-quiet`.
    pub(crate) auto_comments: bool,
    /// The files `writefile` wrote in this run, shared by the clones.
    write_files: Arc<Mutex<files::WriteFiles>>,
}

impl Interpreter {
    /// Prepares a query for evaluation.
    ///
    /// # Errors
    /// [`InterpError::UnknownVariable`] if a variable reference is not
    /// declared in the query's variable table.
    pub fn new(query: &ExpandedQuery) -> Result<Interpreter, InterpError> {
        let mut sorts = Vec::new();
        let mut sort_shown = Vec::new();
        let mut sort_index = HashMap::new();
        let nvars = query.vars().len();
        let mut bad_var = None;
        let mut regexes = rustc_hash::FxHashMap::default();
        let mut similar_files = Vec::new();
        for e in query.body() {
            walk(e, &mut |e| match &e.node {
                Node::Builtin(Builtin::RegexMatch, args) => {
                    if let Some(Node::Str(p)) = args.get(1).map(|a| &a.node)
                        && let Ok(re) = Builtin::compile_regex(p)
                    {
                        regexes.insert(p.clone(), re);
                    }
                }
                Node::Builtin(Builtin::SimilarPosition { notransform, .. }, args) => {
                    if let Some(Node::Str(file)) = args.first().map(|a| &a.node)
                        && !similar_files
                            .iter()
                            .any(|(f, n, _)| f == file && n == notransform)
                    {
                        similar_files.push((file.clone(), *notransform, e.span));
                    }
                }
                Node::Builtin(f, _) if f.var().is_some_and(|v| v.0 as usize >= nvars) => {
                    bad_var = f.var().map(|v| v.0);
                }
                Node::Sort { label, min, arg } => {
                    let id = sort_id(label, *min, e.span);
                    if !sort_index.contains_key(&id) {
                        sort_index.insert(id.clone(), sorts.len());
                        sorts.push(id);
                        sort_shown.push(!matches!(
                            arg.node,
                            Node::Builtin(Builtin::Hhdb(crate::ir::HhdbField::AwardRank { .. }), _)
                        ));
                    }
                }
                Node::Var(v) | Node::Assign { var: v, .. } | Node::SquareLoop { var: v, .. }
                    if v.0 as usize >= nvars =>
                {
                    bad_var = Some(v.0);
                }
                Node::Echo(x) if x.source.0 as usize >= nvars || x.target.0 as usize >= nvars => {
                    bad_var = Some(x.source.0.max(x.target.0));
                }
                _ => {}
            });
        }
        if let Some(v) = bad_var {
            return Err(InterpError::UnknownVariable(v));
        }

        let persistent = query.query().persistent_vars();
        let mut start = vec![None; nvars];
        for (v, _) in &persistent {
            let kind = query.vars().get(v.0 as usize).map(|var| var.kind);
            start[v.0 as usize] = match kind {
                Some(Kind::Numeric) => Some(Value::Number(0)),
                Some(Kind::String) => Some(Value::Str(String::new())),
                Some(Kind::Set) => Some(Value::Set(Bitboard::EMPTY)),
                _ => None,
            };
        }
        Ok(Interpreter {
            query: query.clone(),
            sorts,
            sort_shown,
            sort_index,
            last_game_number: None,
            regexes,
            similar_files,
            similar: HashMap::new(),
            persistent,
            persistent_values: Arc::new(Mutex::new(start)),
            persistent_dicts: query
                .query()
                .dictionaries()
                .into_iter()
                .filter(|(_, local)| !local)
                .map(|(d, _)| d)
                .collect(),
            dict_values: Arc::new(Mutex::new(HashMap::new())),
            always_comment: false,
            auto_comments: true,
            write_files: Arc::new(Mutex::new(files::WriteFiles::default())),
        })
    }

    /// With `on`, the comments made while evaluating a filter that fails
    /// are kept (CQL's `-alwayscomment`); by default they are dropped
    /// (smart comments).
    pub fn with_always_comment(mut self, on: bool) -> Interpreter {
        self.always_comment = on;
        self
    }

    /// With `on` (the default), filters make their own comments (`Start
    /// line ...`, `echo`'s source and target marks, `Found`); CQL's
    /// `-quiet` leaves them out and keeps the `comment` filters' texts.
    pub fn with_auto_comments(mut self, on: bool) -> Interpreter {
        self.auto_comments = on;
        self
    }

    /// Refuses `writefile` to these files (the run's query file, input,
    /// store and output), in this interpreter and its clones.
    pub fn protect_files(&self, paths: &[std::path::PathBuf]) {
        self.write_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .protect(paths);
    }

    /// Ends the run's `writefile` writes (the scan is over): a sorted run's
    /// second evaluation of its matched games writes nothing again.
    pub fn finish_writes(&self) {
        self.write_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finish();
    }

    /// `writefile`: appends `text` to the file `name` (see
    /// [`files::WriteFiles::write`]).
    pub(crate) fn write_file(&self, name: &str, text: &str) -> Result<(), String> {
        self.write_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .write(name, text)
    }

    /// Sets the value of `lastgamenumber`: the 1-based number of the last
    /// game the run searches.
    pub fn with_last_game_number(mut self, number: u64) -> Interpreter {
        self.last_game_number = Some(number);
        self
    }

    /// The value of `lastgamenumber` while evaluating the game numbered
    /// `game` (that game's own number when it was never set).
    pub fn last_game_number(&self, game: u64) -> u64 {
        self.last_game_number.unwrap_or(game)
    }

    /// The query being interpreted.
    pub fn query(&self) -> &ExpandedQuery {
        &self.query
    }

    /// Whether evaluating the query can read the game's tags (`player`,
    /// `event`, `elo`, `year`, `result`, `tag "T"`, ..., and `movenumber`,
    /// which reads the `[FEN]` tag). When false, a caller may pass a
    /// [`GameView`] with no tags and get the same outcome.
    pub fn reads_tags(&self) -> bool {
        let mut reads = false;
        for e in self.query.body() {
            walk(e, &mut |e| {
                reads |= matches!(
                    e.node,
                    Node::Tag(_)
                        | Node::TagNamed(_)
                        | Node::Player(_)
                        | Node::Elo(_)
                        | Node::Year
                        | Node::Result(_)
                        | Node::MoveNumber
                )
            });
        }
        reads
    }

    /// Whether evaluating the query reads the game's comments (`hhdb`
    /// markers, `originalcomment`, ...): a caller should then pass them
    /// to [`Interpreter::eval_game_with_text`].
    pub fn reads_text(&self) -> bool {
        let mut reads = false;
        for e in self.query.body() {
            walk(e, &mut |e| {
                reads |= match &e.node {
                    Node::Builtin(crate::ir::Builtin::Hhdb(f), _) => f.reads_comments(),
                    Node::Builtin(crate::ir::Builtin::OriginalComment, _) => true,
                    _ => false,
                }
            });
        }
        reads
    }

    /// Whether the query has persistent variables: its games must be
    /// evaluated one after another, in game order, by one interpreter (or
    /// its clones), for each game to see the values the earlier ones left;
    /// and queries with `assert`, whose first failure in game order stops
    /// the run ([`crate::ir::Query::is_serial`]).
    pub fn is_serial(&self) -> bool {
        !self.persistent.is_empty()
            || !self.persistent_dicts.is_empty()
            || self.query.query().has_assert()
    }

    /// The persistent variables' current values (after a run: their final
    /// values) with their names, and whether each is `quiet`; each value
    /// as CQL 6.2 shows it at the end of a run: a number, a quoted string,
    /// a set of squares as `[a1,b2]` (`<unbound>` after `unbind`).
    pub fn persistent_values(&self) -> Vec<(String, String, bool)> {
        let values = self
            .persistent_values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.persistent
            .iter()
            .map(|(v, quiet)| {
                let name = self
                    .query
                    .vars()
                    .get(v.0 as usize)
                    .map_or_else(String::new, |var| var.name.clone());
                let text = match values.get(v.0 as usize).cloned().flatten() {
                    Some(Value::Number(n)) => n.to_string(),
                    Some(Value::Str(s)) => format!("\"{s}\""),
                    Some(Value::Set(b)) => eval::squares_text(b),
                    Some(Value::Position(p)) => format!("position {p}"),
                    Some(Value::Matched) => "true".to_owned(),
                    Some(Value::Piece(id)) => format!("piece {}", id.0),
                    None => "<unbound>".to_owned(),
                };
                (name, text, *quiet)
            })
            .collect()
    }

    /// A fresh state for evaluating one game with `opts` (ordinary
    /// variables unbound, persistent ones holding their current values).
    pub fn new_state(&self, opts: &EvalOptions) -> State {
        let mut vars = vec![None; self.query.vars().len()];
        if !self.persistent.is_empty() {
            let values = self
                .persistent_values
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (v, _) in &self.persistent {
                let i = v.0 as usize;
                if let (Some(slot), Some(value)) = (vars.get_mut(i), values.get(i)) {
                    *slot = value.clone();
                }
            }
        }
        let dicts = if self.persistent_dicts.is_empty() {
            HashMap::new()
        } else {
            self.dict_values
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        };
        State {
            vars,
            variations: opts.variations,
            comments: Vec::new(),
            messages: Vec::new(),
            message_lines: Vec::new(),
            sort_values: vec![None; self.sorts.len()],
            sort_comments: vec![Vec::new(); self.sorts.len()],
            run_comments: Vec::new(),
            per_game: HashMap::new(),
            line_automata: sequence::AutomatonCache::default(),
            path_automata: sequence::AutomatonCache::default(),
            tree: sequence::TreeCache::default(),
            pieces: pieces::PieceCache::default(),
            groups: strings::Groups::default(),
            regexes: strings::RegexCache::default(),
            dicts,
            path_frames: Vec::new(),
            path_maps: path::PathPool::default(),
            last_path: None,
            path_bans: HashMap::new(),
            text: None,
            edits: Vec::new(),
            castle_context: None,
            line_move: None,
            last_dash_parts: None,
        }
    }

    /// Evaluates the body at every position of `game` (mainline only unless
    /// `opts.variations`), in store order, with one [`State`] for the whole
    /// game (so variables persist from position to position, as in CQL).
    ///
    /// # Errors
    /// See [`InterpError`].
    pub fn eval_game(
        &self,
        game: &GameView,
        opts: &EvalOptions,
    ) -> Result<GameOutcome, InterpError> {
        self.eval_game_with_text(game, opts, None)
    }

    /// [`Interpreter::eval_game`] with what the game's text tells (its
    /// comments), for a query that [reads it](Interpreter::reads_text);
    /// without it, the game has no comments.
    ///
    /// # Errors
    /// See [`InterpError`].
    pub fn eval_game_with_text(
        &self,
        game: &GameView,
        opts: &EvalOptions,
        text: Option<GameText>,
    ) -> Result<GameOutcome, InterpError> {
        let mut state = self.new_state(opts);
        state.text = text;
        let mut matched = Vec::new();
        let mut marks = Vec::new();
        let mark = |state: &State| u32::try_from(state.comments.len()).unwrap_or(u32::MAX);
        match variation_order(game, opts.variations) {
            // Store order: the mainline alone, or a game without variations.
            None => {
                for (i, rec) in game.positions.iter().enumerate() {
                    if !opts.variations && !rec.has(cqlj_runtime::layout::flags::MAINLINE) {
                        continue;
                    }
                    if self.eval_body_at(game, i as u32, &mut state)?.is_some() {
                        matched.push(i as u32);
                        marks.push((i as u32, mark(&state)));
                    }
                }
            }
            Some(order) => {
                for i in order {
                    if self.eval_body_at(game, i, &mut state)?.is_some() {
                        matched.push(i);
                        marks.push((i, mark(&state)));
                    }
                }
                // Ascending, as the matched positions are reported.
                matched.sort_unstable();
            }
        }
        if !self.persistent_dicts.is_empty() {
            let mut dicts = self
                .dict_values
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for d in &self.persistent_dicts {
                match state.dicts.get(&d.0) {
                    Some(entries) => {
                        dicts.insert(d.0, entries.clone());
                    }
                    None => {
                        dicts.remove(&d.0);
                    }
                }
            }
        }
        if !self.persistent.is_empty() {
            let mut values = self
                .persistent_values
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (v, _) in &self.persistent {
                let i = v.0 as usize;
                if let (Some(slot), Some(value)) = (values.get_mut(i), state.vars.get(i)) {
                    *slot = value.clone();
                }
            }
        }
        // The late comments and the sorts', in query order, after every
        // match string.
        for (_, _, made) in std::mem::take(&mut state.run_comments) {
            state.comments.extend(made);
        }
        for made in std::mem::take(&mut state.sort_comments) {
            state.comments.extend(made);
        }
        dedup_comments(&mut state.comments, &mut marks);
        Ok(GameOutcome {
            matched,
            match_marks: marks,
            sort_keys: self.sort_keys(&state),
            edits: state.edits,
            comments: state.comments,
            messages: state.messages,
            message_lines: state.message_lines,
        })
    }

    /// Evaluates the body (its filters and-ed, in order, stopping at the
    /// first that fails) at position `index` of `game`. Returns `None` if the
    /// body does not match, else the value of its last filter
    /// ([`Value::Matched`] for an empty body). Comments made during a failed
    /// evaluation are dropped (CQL's smart comments); messages are kept.
    ///
    /// # Errors
    /// See [`InterpError`].
    pub fn eval_body_at(
        &self,
        game: &GameView,
        index: u32,
        state: &mut State,
    ) -> Result<Option<Value>, InterpError> {
        if index as usize >= game.positions.len() {
            return Err(InterpError::PositionOutOfRange {
                index,
                len: game.positions.len(),
            });
        }
        let mut ev = eval::Evaluator::new(self, game, state);
        ev.body(self.query.body(), index)
    }

    /// The submissions files of the query's `similarposition` filters: file
    /// name (relative to the current folder), `notransform`, and the
    /// filter's span (for an error). The interpreter reads no file of
    /// games: the caller reads each and adds it with
    /// [`Interpreter::add_submissions`]; until then the filter stops the
    /// game's evaluation with an error.
    pub fn similar_files(&self) -> &[(String, bool, Span)] {
        &self.similar_files
    }

    /// Adds the games of a submissions file (see
    /// [`Interpreter::similar_files`]).
    pub fn add_submissions(&mut self, subs: similar::Submissions) {
        self.similar.insert(
            (subs.file().to_string(), subs.notransform()),
            Arc::new(subs),
        );
    }

    /// The sort keys of a finished game's state, in query order.
    pub fn sort_keys(&self, state: &State) -> Vec<SortKey> {
        self.sorts
            .iter()
            .zip(&state.sort_values)
            .zip(&self.sort_shown)
            .map(|(((label, min, _, _), value), shown)| SortKey {
                label: label.clone(),
                value: value.clone(),
                min: *min,
                shown: *shown,
            })
            .collect()
    }
}

/// The positions a game's evaluation visits when that is not store order:
/// CQL 6.2 visits the game tree in pre-order, a line's continuation before
/// the variations that branch from it (`positionid` order; CQL 6.2 oracle:
/// the lines of `message` come in this order). `None` when store order is
/// that order: without `variations` (the mainline alone) or in a game
/// without variations. A position whose parent link is broken comes last,
/// in store order.
fn variation_order(game: &GameView, variations: bool) -> Option<Vec<u32>> {
    use cqlj_runtime::layout::flags::MAINLINE;
    let n = game.positions.len();
    if !variations || game.positions.iter().all(|r| r.has(MAINLINE)) {
        return None;
    }
    // Children in store order (primary first), as a linked list per parent.
    let mut first_child = vec![u32::MAX; n];
    let mut next_sibling = vec![u32::MAX; n];
    let mut last_child = vec![u32::MAX; n];
    let mut roots = Vec::new();
    for (i, r) in game.positions.iter().enumerate() {
        let d = usize::from(r.parent_delta);
        if d == 0 || d > i {
            roots.push(i as u32);
            continue;
        }
        let p = i - d;
        if last_child[p] == u32::MAX {
            first_child[p] = i as u32;
        } else {
            next_sibling[last_child[p] as usize] = i as u32;
        }
        last_child[p] = i as u32;
    }
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<u32> = roots.into_iter().rev().collect();
    while let Some(p) = stack.pop() {
        order.push(p);
        let mut kids = Vec::new();
        let mut c = first_child[p as usize];
        while c != u32::MAX {
            kids.push(c);
            c = next_sibling[c as usize];
        }
        stack.extend(kids.into_iter().rev());
    }
    Some(order)
}

/// Keeps the first of each text made at a position (CQL 6.2 writes a text
/// once at a position, in the order first made), and moves each match
/// mark to count the comments kept.
pub(crate) fn dedup_comments(comments: &mut Vec<(u32, String)>, marks: &mut [(u32, u32)]) {
    if comments.len() < 2 {
        return;
    }
    // Which to keep, from the texts borrowed (none is copied).
    let first: Vec<bool> = {
        let mut seen: rustc_hash::FxHashSet<(u32, &str)> = rustc_hash::FxHashSet::default();
        comments
            .iter()
            .map(|(p, t)| seen.insert((*p, t.as_str())))
            .collect()
    };
    // kept[i]: how many of the first i comments are kept.
    let mut kept = Vec::with_capacity(comments.len() + 1);
    kept.push(0u32);
    let mut n = 0u32;
    for &f in &first {
        n += u32::from(f);
        kept.push(n);
    }
    let mut keep = first.into_iter();
    comments.retain(|_| keep.next().unwrap_or(true));
    for (_, m) in marks {
        *m = kept.get(*m as usize).copied().unwrap_or(n);
    }
}

fn sort_id(label: &Option<String>, min: bool, span: Span) -> SortId {
    (label.clone(), min, span.start, span.end)
}

/// Calls `f` on `e` and every filter inside it, in pre-order.
fn walk(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    e.for_each_child(|c| walk(c, f));
}

/// A `consecutivemoves` filter's longest run in a game: the filter's
/// address in the query, the run's length, its comments.
type RunComments = (usize, i64, Vec<(u32, String)>);

/// What the evaluation of one game accumulates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// Variable values, indexed by `VarId`; `None` = unassigned.
    vars: Vec<Option<Value>>,
    /// Whether `move` sees variation moves (see [`EvalOptions::variations`]).
    variations: bool,
    comments: Vec<(u32, String)>,
    messages: Vec<String>,
    message_lines: Vec<String>,
    sort_values: Vec<Option<SortValue>>,
    /// Per sort: the comments its argument made where it reached its
    /// value in `sort_values` (the first time, for ties). CQL 6.2 writes
    /// these alone, after the game's match strings.
    sort_comments: Vec<Vec<(u32, String)>>,
    /// Per `consecutivemoves` filter (by its address in the query): the
    /// longest run it found in the game and that run's comments. CQL 6.2
    /// writes these alone, after the match strings, whatever the filters
    /// around it did.
    run_comments: Vec<RunComments>,
    /// Values of game-constant filters (string comparisons of literals and
    /// tags), keyed by the filter's address in the query.
    per_game: HashMap<usize, Option<Value>>,
    /// The automata of the `line` filters evaluated in this game, by the
    /// filter's address in the query.
    line_automata: sequence::AutomatonCache<line::Automaton>,
    /// The automata of the `path` filters evaluated in this game, by the
    /// filter's address in the query.
    path_automata: sequence::AutomatonCache<path::Automaton>,
    /// The game tree's index (children, `positionid`s), built at the first
    /// game-tree filter of the game.
    tree: sequence::TreeCache,
    /// The game's piece identities, built at the first filter that needs
    /// them.
    pieces: pieces::PieceCache,
    /// The groups of the game's last successful `~~`.
    groups: strings::Groups,
    /// Patterns of `~~` that are not literals, compiled (`None`: invalid).
    regexes: strings::RegexCache,
    /// The entries of each dictionary, by variable.
    dicts: HashMap<u32, strings::DictEntries>,
    /// The `path`s being evaluated, innermost last.
    path_frames: Vec<path::PathFrame>,
    /// Emptied maps of finished path evaluations, for the next ones
    /// (scratch: not part of the state's value).
    path_maps: path::PathPool,
    /// The start and last position of the game's last matching `path`.
    last_path: Option<(u32, u32)>,
    /// For each `path nestban` (by its filter's address in the query), the
    /// positions no match may start at: the inner positions of its
    /// matches so far in this game.
    path_bans: HashMap<usize, std::collections::HashSet<u32>>,
    /// What the game's text tells, when the caller read it.
    text: Option<GameText>,
    /// Changes to the written game, in evaluation order.
    edits: Vec<GameEdit>,
    /// Contextual castling (CQL 6.2): while a dash's target (or the rest of
    /// a path constituent) is evaluated, the position the dash's move led
    /// to and the parts of that move the dash matched ([`KING_PART`],
    /// [`ROOK_PART`]); `from`/`to` there hold only those parts' squares.
    castle_context: Option<(u32, u8)>,
    /// The position and matched parts of the last `currentmove` dash that
    /// matched, read by `path` for the filters after a dash constituent.
    last_dash_parts: Option<(u32, u8)>,
    /// While a forward `line` tests a constituent at position `p` on its
    /// way to the child `c` (or, where its match may end, for one of the
    /// children it could step to): `Some((p, c))`. A `move` of the game's
    /// moves (not a dash, not `previous`/`legal`/`pseudolegal`) evaluated
    /// at `p` then sees the move to `c` alone (CQL 6.2 oracle).
    line_move: Option<(u32, u32)>,
}

/// The king's move of a castling (or the whole of any other move), in a
/// mask of the parts of a move a dash matched.
pub(crate) const KING_PART: u8 = 1;
/// The rook's move of a castling, in a mask of the parts a dash matched.
pub(crate) const ROOK_PART: u8 = 2;

/// What a game's PGN text tells beyond its tags and positions, read by
/// the caller for a query that [reads it](Interpreter::reads_text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameText {
    /// The comment of each position, in store order (CQL 6.2 keeps one per
    /// position: the last comment after the move to it; the initial
    /// position's is the one before the first move), white space collapsed.
    pub comments: Vec<Option<String>>,
    /// [`GameText::COOK`] occurs somewhere in the text (`hhdb cooked`).
    pub contains_cook: bool,
}

impl GameText {
    /// What `hhdb cooked` looks for in a game's text and tags: `<cook`,
    /// without the closing `>` (CQL 6.2 oracle: `<cooked>` counts).
    pub const COOK: &'static str = "<cook";
}

impl State {
    /// Comments recorded so far, with their positions.
    pub fn comments(&self) -> &[(u32, String)] {
        &self.comments
    }
    /// Messages recorded so far.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }
    /// The current value of variable `id`, if assigned.
    pub fn var(&self, id: crate::ir::VarId) -> Option<&Value> {
        self.vars.get(id.0 as usize).and_then(|v| v.as_ref())
    }
}
