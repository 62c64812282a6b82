//! Lowering: [`ast::File`] to the typed [`ir::Query`].
//!
//! Name resolution (variables, function parameters), kind checking, function
//! inlining at each call, `fen "..."` to a conjunction of piece designators,
//! dash moves to `move` filters, comparison chains to conjunctions, and
//! "a set in numeric context is its size" (an explicit [`Node::Count`]).
//! Every error is recorded and lowering goes on, so a file reports all its
//! errors at once.

use std::collections::{HashMap, HashSet};

use crate::ir::{self, Bitboard, CmpOp, Expr, Kind, Node, PieceSet, Query, Span, Var, VarId};
use crate::syntax::ast::{self, DashTarget, DirCount, ExprKind, Infix, ListFilter, Prefix};
use crate::syntax::diag::{Diagnostics, suggest};
use crate::syntax::parser::keywords;

/// Most IR nodes a query may have after function inlining.
pub const MAX_NODES: usize = 1_000_000;
/// Deepest IR nesting (after function inlining). Half the parser's limit,
/// so that the printed form of any accepted query parses again.
pub const MAX_LOWER_DEPTH: usize = 128;

/// The label of the sort a `similarposition` without `nosort` makes (CQL
/// 6.2 writes "submission game: N" in the game's first comment).
const SUBMISSION_GAME: &str = "submission game";

struct Function<'a> {
    params: &'a [ast::Name],
    body: &'a ast::Expr,
}

struct Lowerer<'a, 'd> {
    diags: &'d mut Diagnostics,
    vars: Vec<Var>,
    var_ids: HashMap<String, VarId>,
    functions: HashMap<String, Function<'a>>,
    /// Parameter bindings of the calls being inlined, innermost last.
    bindings: Vec<HashMap<String, Expr>>,
    /// Names of the functions being inlined (recursion check).
    call_stack: Vec<String>,
    nodes: usize,
    depth: usize,
    fatal: bool,
    /// Variables of `square`/`piece` loops: bound only inside their loop's
    /// body (CQL 6.2 unbinds them after the loop).
    loop_vars: HashMap<String, LoopVar>,
    /// Names already reported (an unknown name, a variable whose assignment
    /// failed): a later use is not reported again, one mistake is one error.
    reported_names: HashSet<String>,
    /// Variables declared by `persistent`.
    persistent: HashSet<VarId>,
    /// Piece variables (of `piece` loops and `piece x = S`): they hold a
    /// piece, read as its square in each position ([`ir::Builtin::PieceVar`]).
    piece_vars: HashSet<VarId>,
    /// Dictionaries by name.
    dicts: HashMap<String, Dict>,
    /// Variables named by `isbound`/`isunbound` before any assignment to
    /// them (CQL 6.2 accepts these: unbound until assigned). Each has a
    /// [`Var`] of placeholder kind; an assignment later in the query
    /// declares it with its real kind ([`Lowerer::declare`]). Not in
    /// `var_ids`, so no other use sees them.
    pending_vars: HashMap<String, VarId>,
    /// Spans of the dashes without a value that were written in
    /// parentheses: `(R--f1) -> k` is refused as CQL 6.2 refuses it, while
    /// `R--f1 -> k` is a dash ([`valueless_dash`]).
    paren_dashes: HashSet<Span>,
}

/// A dictionary: its variable once a value was stored (the variable's kind
/// is that of the values), the kind of its keys, and `local`.
#[derive(Clone, Copy)]
struct Dict {
    var: Option<VarId>,
    key: Option<Kind>,
    local: bool,
    /// `var` was made before any store (`dictionary D` alone, a read or
    /// `unbind D` first): the first store sets its kind; reads lowered
    /// before it are logical (whether the key has an entry).
    provisional: bool,
}

/// A loop variable: which loop kind declared it, where, and whether the
/// lowering is inside such a loop's body now.
#[derive(Clone, Copy)]
struct LoopVar {
    piece: bool,
    active: bool,
    span: Span,
}

/// Marker: an error was recorded.
struct Failed;
type LResult = Result<Expr, Failed>;

/// Lowers a parsed file. Errors go to `diags`; `None` if there were any.
pub(crate) fn lower_file(file: &ast::File, diags: &mut Diagnostics) -> Option<Query> {
    let mut l = Lowerer {
        diags,
        vars: Vec::new(),
        var_ids: HashMap::new(),
        functions: HashMap::new(),
        bindings: Vec::new(),
        call_stack: Vec::new(),
        nodes: 0,
        depth: 0,
        fatal: false,
        loop_vars: HashMap::new(),
        reported_names: HashSet::new(),
        persistent: HashSet::new(),
        piece_vars: HashSet::new(),
        pending_vars: HashMap::new(),
        paren_dashes: HashSet::new(),
        dicts: HashMap::new(),
    };
    let body = l.list(&file.body).unwrap_or_default();
    let header = file
        .header
        .as_ref()
        .map(|h| h.options.clone())
        .unwrap_or_default();
    if l.diags.has_errors() {
        return None;
    }
    Some(Query {
        header,
        body,
        vars: l.vars,
    })
}

/// How a kind reads in a message.
fn kind_phrase(k: Kind) -> &'static str {
    match k {
        Kind::Logical => "a logical filter (it matches or not, and has no value)",
        Kind::Set => "a set filter",
        Kind::Numeric => "a numeric filter",
        Kind::String => "a string filter",
        Kind::Position => "a position filter",
    }
}

impl<'a> Lowerer<'a, '_> {
    fn mk(&mut self, node: Node, kind: Kind, span: Span) -> LResult {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            if !self.fatal {
                self.diags.error(
                    span,
                    format!("the query is too large: more than {MAX_NODES} filters after inlining function calls"),
                );
            }
            self.fatal = true;
            return Err(Failed);
        }
        Ok(Expr::new(node, kind, span))
    }

    /// `LINE:COL` of a span's start.
    fn pos_text(&self, span: Span) -> String {
        let (l, c) = crate::syntax::diag::line_col(self.diags.source(), span.start as usize);
        format!("{l}:{c}")
    }

    fn err(&mut self, span: Span, msg: impl Into<String>) -> Failed {
        self.diags.error(span, msg);
        Failed
    }

    /// Lowers a list of filters (body or block), registering function
    /// definitions and dropping them from the list.
    fn list(&mut self, items: &'a [ast::Expr]) -> Result<Vec<Expr>, Failed> {
        let mut out = Vec::new();
        let mut failed = false;
        for item in items {
            if self.fatal {
                return Err(Failed);
            }
            if let ExprKind::Function { name, params, body } = &item.kind {
                if self.functions.contains_key(&name.name) {
                    self.diags.error(
                        name.span,
                        format!("function `{}` is defined twice", name.name),
                    );
                    failed = true;
                    continue;
                }
                if self.var_ids.contains_key(&name.name) {
                    self.diags.error(
                        name.span,
                        format!(
                            "`{}` is already a variable; a function needs another name",
                            name.name
                        ),
                    );
                    failed = true;
                    continue;
                }
                self.functions.insert(
                    name.name.clone(),
                    Function {
                        params,
                        body: body.as_ref(),
                    },
                );
                continue;
            }
            match self.lower(item) {
                Ok(e) => out.push(e),
                Err(Failed) => failed = true,
            }
        }
        if failed { Err(Failed) } else { Ok(out) }
    }

    fn lower(&mut self, e: &'a ast::Expr) -> LResult {
        if self.fatal {
            return Err(Failed);
        }
        if self.depth >= MAX_LOWER_DEPTH {
            self.fatal = true;
            return Err(self.err(
                e.span,
                format!("the query is nested too deeply (more than {MAX_LOWER_DEPTH} levels of filters, counting inlined function bodies)"),
            ));
        }
        self.depth += 1;
        let r = self.lower_inner(e);
        self.depth -= 1;
        r
    }

    /// A set is needed: anything else is an error naming `what`.
    fn want_set(&mut self, e: Expr, what: &str) -> LResult {
        self.refuse_dash(&e, what)?;
        self.want_set_or_dash(e, what)
    }

    /// An attack arrow's operand: a set, or as its first (`left`) operand
    /// a dash written without parentheses. CQL 6.2 reads `R--f1 -> k` as
    /// the dash `R--(f1 -> k)`; cqlj's arrow over the dash's destinations
    /// matches at the same positions, and has no value either
    /// ([`valueless_dash`]). CQL 6.2 refuses a dash anywhere else in an
    /// arrow (`k -> [x]`, `(R--f1) -> k`).
    fn arrow_operand(&mut self, e: Expr, what: &str, left: bool) -> LResult {
        // A dash is read into an arrow (CQL 6.2: `R--f1 -> k`, `--f1 <- k`)
        // only as its first operand, and not in parentheses.
        if !(left && matches!(e.node, Node::Move(_))) || self.paren_dashes.contains(&e.span) {
            self.refuse_dash(&e, what)?;
        }
        self.want_set_or_dash(e, what)
    }

    /// Refuses `e` where `what` needs a value if it is a dash without one
    /// ([`valueless_dash`]).
    fn refuse_dash(&mut self, e: &Expr, what: &str) -> Result<(), Failed> {
        if !valueless_dash(e) {
            return Ok(());
        }
        Err(self.err(
            e.span,
            format!(
                "{what} needs a value, but a dash (`--`) over the game's moves is a move filter without one, as in CQL 6.2 (a target with a value gives it one: `R--f1(from)`)"
            ),
        ))
    }

    /// [`Self::want_set`] without the dash check.
    fn want_set_or_dash(&mut self, e: Expr, what: &str) -> LResult {
        if e.kind == Kind::Set {
            return Ok(e);
        }
        let extra = if e.kind == Kind::Numeric {
            " (a number is not a set of squares)"
        } else {
            ""
        };
        Err(self.err(
            e.span,
            format!(
                "{what} needs a set of squares, but this is {}{extra}",
                kind_phrase(e.kind)
            ),
        ))
    }

    /// The dictionary an AST target names, if it names one.
    fn dict_name<'e>(&self, target: &'e ast::Expr) -> Option<&'e str> {
        match &target.kind {
            ExprKind::Ident(name) if self.dicts.contains_key(name) => Some(name),
            _ => None,
        }
    }

    /// `[local] dictionary D[...]`: declares D (a name not otherwise used;
    /// `local` as at its first declaration), then the access.
    fn dictionary(&mut self, local: bool, access: &'a ast::Expr, span: Span) -> LResult {
        let index = match &access.kind {
            ExprKind::IndexAssign { index, .. } => index,
            // `dictionary D` alone: a declaration (CQL 6.2).
            ExprKind::Ident(name) => {
                self.declare_dict(name, local, access.span, span)?;
                let dict = self.dict_var(name);
                return self.mk(
                    Node::Builtin(ir::Builtin::Dictionary { dict, local }, Vec::new()),
                    Kind::Logical,
                    span,
                );
            }
            _ => access,
        };
        let ExprKind::Index {
            target,
            from: Some(_),
            to: None,
            slice: false,
        } = &index.kind
        else {
            return Err(self.err(access.span, "`dictionary D` is followed by `[key]`"));
        };
        let ExprKind::Ident(name) = &target.kind else {
            return Err(self.err(target.span, "expected a dictionary name"));
        };
        self.declare_dict(name, local, target.span, span)?;
        let inner = self.sub(access)?;
        let Some(dict) = self.dicts.get(name).and_then(|d| d.var) else {
            return Err(self.err(access.span, format!("dictionary `{name}` has no entry type yet: its first use stores one (`dictionary {name}[k] = v`)")));
        };
        let kind = inner.kind;
        self.mk(
            Node::Builtin(ir::Builtin::Dictionary { dict, local }, vec![inner]),
            kind,
            span,
        )
    }

    /// The variable of the declared dictionary `name`, made now if no
    /// entry was stored yet: its kind is then settled by the first store
    /// ([`Dict::provisional`]).
    fn dict_var(&mut self, name: &str) -> VarId {
        if let Some(v) = self.dicts.get(name).and_then(|d| d.var) {
            return v;
        }
        let id = VarId(self.vars.len() as u32);
        self.vars.push(Var {
            name: name.to_owned(),
            kind: Kind::Logical,
        });
        if let Some(d) = self.dicts.get_mut(name) {
            d.var = Some(id);
            d.provisional = true;
        }
        id
    }

    /// Declares dictionary `name` (`local` as written), or checks it
    /// against its earlier declaration.
    fn declare_dict(
        &mut self,
        name: &str,
        local: bool,
        at: Span,
        span: Span,
    ) -> Result<(), Failed> {
        match self.dicts.get(name) {
            Some(d) if d.local != local => {
                return Err(self.err(
                    span,
                    format!(
                        "dictionary `{name}` was declared {}local before",
                        if d.local { "" } else { "not " }
                    ),
                ));
            }
            Some(_) => {}
            None => {
                if self.var_ids.contains_key(name) || self.functions.contains_key(name) {
                    return Err(self.err(
                        at,
                        format!("`{name}` is already a variable or function, so it cannot name a dictionary"),
                    ));
                }
                self.dicts.insert(
                    name.to_owned(),
                    Dict {
                        var: None,
                        key: None,
                        local,
                        provisional: false,
                    },
                );
            }
        }
        Ok(())
    }

    /// The dictionary and the lowered key of `D[k]` (the key's kind must be
    /// the dictionary's: a number, a string or a set, fixed by its first
    /// use).
    fn dict_key(&mut self, index: &'a ast::Expr) -> Result<(VarId, Expr), Failed> {
        let ExprKind::Index {
            target,
            from: Some(key),
            to: None,
            slice: false,
        } = &index.kind
        else {
            return Err(self.err(index.span, "expected a dictionary entry `D[key]`"));
        };
        let Some(name) = self.dict_name(target) else {
            return Err(self.err(
                target.span,
                "only a dictionary entry `D[key]` can be assigned or unbound here",
            ));
        };
        let name = name.to_owned();
        let k = self.sub(key)?;
        if !matches!(k.kind, Kind::Numeric | Kind::String | Kind::Set) {
            return Err(self.err(
                k.span,
                format!(
                    "a dictionary key is a number, a string or a set, but this is {}",
                    kind_phrase(k.kind)
                ),
            ));
        }
        let Some(d) = self.dicts.get_mut(&name) else {
            return Err(Failed);
        };
        match d.key {
            Some(kind) if kind != k.kind => {
                let msg = format!(
                    "dictionary `{name}` has {kind} keys, but this key is {}",
                    kind_phrase(k.kind)
                );
                return Err(self.err(k.span, msg));
            }
            _ => d.key = Some(k.kind),
        }
        Ok((self.dict_var(&name), k))
    }

    /// `D[k] = v`: the first store fixes the kind of D's values.
    fn dict_set(&mut self, index: &'a ast::Expr, value: &'a ast::Expr, span: Span) -> LResult {
        let target_name = match &index.kind {
            ExprKind::Index { target, .. } => self.dict_name(target).map(str::to_owned),
            _ => None,
        };
        let Some(name) = target_name else {
            return Err(self.err(
                index.span,
                "only a dictionary entry `D[key]` can be assigned",
            ));
        };
        let v = self.sub(value)?;
        if !matches!(v.kind, Kind::Numeric | Kind::String | Kind::Set) {
            return Err(self.err(
                v.span,
                format!(
                    "a dictionary value is a number, a string or a set, but this is {}",
                    kind_phrase(v.kind)
                ),
            ));
        }
        if let Some(d) = self.dicts.get(&name).copied()
            && d.provisional
            && let Some(var) = d.var
        {
            self.vars[var.0 as usize].kind = v.kind;
            if let Some(d) = self.dicts.get_mut(&name) {
                d.provisional = false;
            }
        }
        if let Some(d) = self.dicts.get(&name).copied()
            && d.var.is_none()
        {
            let id = VarId(self.vars.len() as u32);
            self.vars.push(Var {
                name: name.clone(),
                kind: v.kind,
            });
            if let Some(d) = self.dicts.get_mut(&name) {
                d.var = Some(id);
            }
        }
        let (dict, key) = self.dict_key(index)?;
        let want = self.vars[dict.0 as usize].kind;
        if want != v.kind {
            return Err(self.err(
                v.span,
                format!(
                    "dictionary `{name}` holds {want} values, but this is {}",
                    kind_phrase(v.kind)
                ),
            ));
        }
        self.mk(
            Node::Builtin(ir::Builtin::DictSet(dict), vec![key, v]),
            Kind::Logical,
            span,
        )
    }

    /// `piece x = S`: x becomes (or already is) a piece variable.
    fn piece_assign(&mut self, var: &ast::Name, value: &'a ast::Expr, span: Span) -> LResult {
        // After its loop, a piece loop's variable may be bound again by a
        // piece assignment (CQL 6.2); it is then an ordinary piece variable.
        if let Some(lv) = self.loop_vars.get(&var.name).copied()
            && lv.piece
            && !lv.active
        {
            self.loop_vars.remove(&var.name);
        }
        if let Some(lv) = self.loop_vars.get(&var.name).copied() {
            return Err(self.err(
                var.span,
                format!(
                    "cannot assign to `{}`: it is the variable of the loop at {}",
                    var.name,
                    self.pos_text(lv.span)
                ),
            ));
        }
        if let Some(id) = self.var_ids.get(&var.name)
            && !self.piece_vars.contains(id)
        {
            return Err(self.err(
                var.span,
                format!(
                    "`{}` already holds a {} value, so it cannot become a piece variable",
                    var.name, self.vars[id.0 as usize].kind
                ),
            ));
        }
        let v = match self.sub(value) {
            Ok(v) => v,
            Err(failed) => {
                self.reported_names.insert(var.name.clone());
                return Err(failed);
            }
        };
        let v = self.want_set(v, "a piece assignment")?;
        let id = self.declare(var, Kind::Set)?;
        self.piece_vars.insert(id);
        self.mk(
            Node::Builtin(ir::Builtin::PieceAssign(id), vec![v]),
            Kind::Logical,
            span,
        )
    }

    /// A string is needed: anything else is an error naming `what`.
    fn want_string(&mut self, e: Expr, what: &str) -> LResult {
        if e.kind == Kind::String {
            return Ok(e);
        }
        Err(self.err(
            e.span,
            format!("{what} needs a string, but this is {}", kind_phrase(e.kind)),
        ))
    }

    /// A built-in function of strings and numbers, its arguments' kinds
    /// checked (see [`ir::Builtin`]).
    fn builtin(&mut self, f: ir::Builtin, args: &'a [ast::Expr], span: Span) -> LResult {
        use ir::Builtin as B;
        if let (B::Persistent { .. }, [assign]) = (f, args) {
            return self.persistent(f, assign, span);
        }
        let what = format!("`{}`", f.keyword());
        let mut lowered = Vec::with_capacity(args.len());
        for a in args {
            lowered.push(self.sub(a)?);
        }
        let mut out = Vec::with_capacity(lowered.len());
        let kind = match f {
            B::Sqrt => {
                for a in lowered {
                    out.push(self.want_num(a, &what)?);
                }
                Kind::Numeric
            }
            B::Int | B::IndexOf => {
                for a in lowered {
                    out.push(self.want_string(a, &what)?);
                }
                Kind::Numeric
            }
            B::Lowercase | B::Uppercase | B::ReadFile => {
                for a in lowered {
                    out.push(self.want_string(a, &what)?);
                }
                Kind::String
            }
            B::TypeName | B::PieceName => {
                for a in lowered {
                    out.push(self.want_set(a, &what)?);
                }
                Kind::String
            }
            B::PieceId | B::Type | B::ColorType => {
                for a in lowered {
                    out.push(self.want_set(a, &what)?);
                }
                Kind::Numeric
            }
            B::Loop | B::While => {
                out = lowered;
                Kind::Logical
            }
            B::Ascii => {
                let mut kind = Kind::String;
                for a in lowered {
                    if a.kind == Kind::String {
                        kind = Kind::Numeric;
                        out.push(a);
                    } else {
                        out.push(self.want_num(a, &what)?);
                    }
                }
                kind
            }
            B::WriteFile | B::SetTag => {
                for a in lowered {
                    out.push(self.want_string(a, &what)?);
                }
                Kind::Logical
            }
            B::Assert | B::Equal => {
                out = lowered;
                Kind::Logical
            }
            B::SimilarPosition { sort, .. } => {
                out = lowered;
                let f = self.mk(Node::Builtin(f, out), Kind::Numeric, span)?;
                if !sort {
                    return Ok(f);
                }
                return self.mk(
                    Node::Sort {
                        label: Some(SUBMISSION_GAME.to_string()),
                        min: true,
                        arg: Box::new(f),
                    },
                    Kind::Numeric,
                    span,
                );
            }
            B::Atomic => {
                match lowered.first().map(|a| &a.node) {
                    Some(Node::Assign { .. }) if lowered.len() == 1 => {}
                    _ => {
                        return Err(
                            self.err(span, "`atomic` needs an assignment, e.g. `atomic x = 0`")
                        );
                    }
                }
                out = lowered;
                Kind::Logical
            }
            _ => {
                out = lowered;
                Kind::String
            }
        };
        self.mk(Node::Builtin(f, out), kind, span)
    }

    /// `persistent [quiet] x = F` (or `x op= F`): the variable must not be
    /// an ordinary one already; `x op= F` may declare it (its kind is F's:
    /// a number, a string for `+=` of a string, a set for `|=` and `&=`),
    /// since a persistent variable starts bound (0, "" or the empty set).
    fn persistent(&mut self, f: ir::Builtin, assign: &'a ast::Expr, span: Span) -> LResult {
        let ExprKind::Assign { var, value } = &assign.kind else {
            return Err(self.err(
                assign.span,
                "`persistent` needs an assignment, e.g. `persistent n = 0`",
            ));
        };
        let existing = self.var_ids.get(&var.name).copied();
        if let Some(id) = existing
            && !self.persistent.contains(&id)
        {
            return Err(self.err(
                var.span,
                format!(
                    "`{}` is already an ordinary variable, so it cannot be declared persistent",
                    var.name
                ),
            ));
        }
        let op_form = match &value.kind {
            ExprKind::Infix(first, rest) if rest.len() == 1 => match &first.kind {
                ExprKind::Ident(n) if *n == var.name => Some(&rest[0]),
                _ => None,
            },
            _ => None,
        };
        let lowered = match (existing, op_form) {
            (None, Some((op, rhs))) => {
                // `persistent x += F` first: x is declared by F's kind.
                let r = self.sub(rhs)?;
                let kind = match (op, r.kind) {
                    (ast::Infix::Set(_), _) => Kind::Set,
                    (_, Kind::String) => Kind::String,
                    _ => Kind::Numeric,
                };
                let id = self.declare(var, kind)?;
                self.persistent.insert(id);
                let current = self.mk(Node::Var(id), kind, var.span)?;
                let v = self.infix(*op, current, r, value.span)?;
                self.mk(
                    Node::Assign {
                        var: id,
                        value: Box::new(v),
                    },
                    Kind::Logical,
                    assign.span,
                )?
            }
            _ => {
                if let Some(id) = existing {
                    self.persistent.insert(id);
                }
                let a = self.sub(assign)?;
                if let Node::Assign { var: id, .. } = a.node {
                    self.persistent.insert(id);
                }
                a
            }
        };
        if let Node::Assign { var: id, .. } = &lowered.node
            && !matches!(
                self.vars[id.0 as usize].kind,
                Kind::Numeric | Kind::String | Kind::Set
            )
        {
            return Err(self.err(
                assign.span,
                "a persistent variable holds a number, a string or a set",
            ));
        }
        self.mk(Node::Builtin(f, vec![lowered]), Kind::Logical, span)
    }

    /// A number is needed: a set is refused, as in CQL 6.2, which counts a
    /// set only in a comparison and in `sort` ([`Self::want_count`]):
    /// `P + 1`, `abs P`, `-P`, `max(P p)`, `sqrt(P)` and `position P` are
    /// errors there (oracle).
    fn want_num(&mut self, e: Expr, what: &str) -> LResult {
        if e.kind == Kind::Set && !valueless_dash(&e) {
            return Err(self.err(
                e.span,
                format!(
                    "{what} needs a number, but this is a set of squares (CQL 6.2 counts a set only in a comparison or `sort`: write `#X` for its number of squares)"
                ),
            ));
        }
        self.want_count(e, what)
    }

    /// A number is needed where a set stands for its size (a comparison,
    /// `sort`).
    fn want_count(&mut self, e: Expr, what: &str) -> LResult {
        self.refuse_dash(&e, what)?;
        match e.kind {
            Kind::Numeric => Ok(e),
            Kind::Set => {
                let span = e.span;
                self.mk(Node::Count(Box::new(e)), Kind::Numeric, span)
            }
            k => Err(self.err(
                e.span,
                format!("{what} needs a number, but this is {}", kind_phrase(k)),
            )),
        }
    }

    fn sub(&mut self, e: &'a ast::Expr) -> LResult {
        self.lower(e)
    }

    fn set_arg(&mut self, e: &'a ast::Expr, what: &str) -> LResult {
        let x = self.lower(e)?;
        self.want_set(x, what)
    }

    fn num_arg(&mut self, e: &'a ast::Expr, what: &str) -> LResult {
        let x = self.lower(e)?;
        self.want_num(x, what)
    }

    fn opt_set(
        &mut self,
        e: &'a Option<Box<ast::Expr>>,
        what: &str,
    ) -> Result<Option<Box<Expr>>, Failed> {
        match e {
            Some(x) => Ok(Some(Box::new(self.set_arg(x, what)?))),
            None => Ok(None),
        }
    }

    /// A dash's promotion piece types: a piece designator, or (CQL 6.2) a
    /// string whose letters name them (`T = "N"  ♟――=T`; `move promote`
    /// takes no string in CQL 6.2).
    fn opt_promote(
        &mut self,
        e: &'a Option<Box<ast::Expr>>,
        what: &str,
    ) -> Result<Option<Box<Expr>>, Failed> {
        let Some(x) = e else {
            return Ok(None);
        };
        let x = self.lower(x)?;
        if x.kind == Kind::String {
            return Ok(Some(Box::new(x)));
        }
        Ok(Some(Box::new(self.want_set(x, what)?)))
    }

    fn lower_inner(&mut self, e: &'a ast::Expr) -> LResult {
        let span = e.span;
        match &e.kind {
            ExprKind::Number(n) => self.mk(Node::Number(*n), Kind::Numeric, span),
            ExprKind::Str(s) => self.mk(Node::Str(s.clone()), Kind::String, span),
            ExprKind::Designator { pieces, squares } => {
                let squares = squares.unwrap_or(Bitboard::FULL);
                let node = match pieces {
                    Some(p) => Node::Piece {
                        pieces: *p,
                        squares,
                    },
                    None => Node::Squares(squares),
                };
                self.mk(node, Kind::Set, span)
            }
            ExprKind::Leaf(node) => {
                let kind = leaf_kind(node);
                self.mk(node.clone(), kind, span)
            }
            ExprKind::Ident(name) => self.ident(name, span),
            ExprKind::Prefix(op, arg) => self.prefix(*op, arg, span),
            ExprKind::Infix(first, rest) => self.infix_chain(first, rest, span),
            ExprKind::Compare(first, rest) => self.compare(first, rest, span),
            ExprKind::Direction { dirs, range, arg }
                if range
                    .iter()
                    .any(|(c, _)| matches!(c, DirCount::Var(_) | DirCount::Lit(..0))) =>
            {
                self.direction_by(*dirs, range, arg, span)
            }
            ExprKind::Direction { dirs, range, arg } => {
                let range: Vec<(i64, Span)> = range
                    .iter()
                    .map(|(c, s)| match c {
                        DirCount::Lit(n) => (*n, *s),
                        DirCount::Var(_) => (0, *s),
                    })
                    .collect();
                let (min, max) = match range.as_slice() {
                    [] => (1, 7),
                    [(n, s)] => {
                        let n = self.distance(*n, *s)?;
                        (n, n)
                    }
                    [(a, sa), (b, sb)] => {
                        let a = self.distance(*a, *sa)?;
                        let b = self.distance(*b, *sb)?;
                        if a > b {
                            return Err(self.err(
                                sa.join(*sb),
                                format!("the distance range {a} {b} is empty: the first number must not exceed the second"),
                            ));
                        }
                        (a, b)
                    }
                    [.., (_, s)] => {
                        return Err(self.err(
                            *s,
                            "a direction filter takes at most two distances (`up 1 3 K`)",
                        ));
                    }
                };
                let name = dirs.keyword().unwrap_or("direction");
                let arg = self.set_arg(arg, &format!("`{name}`"))?;
                self.mk(
                    Node::Direction {
                        dirs: *dirs,
                        min,
                        max,
                        arg: Box::new(arg),
                    },
                    Kind::Set,
                    span,
                )
            }
            ExprKind::AttackChain {
                backward,
                args: arg_exprs,
            } => {
                let what = if *backward {
                    "an attack arrow `<-`"
                } else {
                    "an attack arrow `->`"
                };
                let mut args = Vec::with_capacity(arg_exprs.len());
                let mut failed = false;
                for (i, a) in arg_exprs.iter().enumerate() {
                    let x = self
                        .lower(a)
                        .and_then(|x| self.arrow_operand(x, what, i == 0));
                    match x {
                        Ok(x) => args.push(x),
                        Err(Failed) => failed = true,
                    }
                }
                if failed {
                    return Err(Failed);
                }
                // `X <- Y <- Z` is `xray (Z Y X)`; `X -> Y -> Z` is `xray
                // (X Y Z)` valued by its line pieces (CQL 6.2 oracle).
                if *backward {
                    args.reverse();
                }
                self.mk(
                    Node::Ray {
                        xray: true,
                        dirs: ir::DirSet::ANY,
                        args,
                        origins: !*backward,
                    },
                    Kind::Set,
                    span,
                )
            }
            ExprKind::Ray { xray, dirs, args } => {
                let what = if *xray { "`xray`" } else { "`ray`" };
                if args.len() < 2 {
                    return Err(self.err(
                        span,
                        format!(
                            "{what} needs at least two arguments, e.g. `{}(R k)`",
                            &what[1..what.len() - 1]
                        ),
                    ));
                }
                let args = self.set_args(args, what)?;
                self.mk(
                    Node::Ray {
                        xray: *xray,
                        dirs: *dirs,
                        args,
                        origins: false,
                    },
                    Kind::Set,
                    span,
                )
            }
            ExprKind::List(f, args) => self.list_filter(*f, args, span),
            ExprKind::Pin { from, through, to } => {
                // CQL 6.2: the value is the part written first.
                let first = [
                    (from, ir::PinValue::Pinners),
                    (through, ir::PinValue::Pinned),
                    (to, ir::PinValue::Targets),
                ]
                .into_iter()
                .filter_map(|(e, v)| e.as_ref().map(|e| (e.span.start, v)))
                .min_by_key(|&(start, _)| start);
                let value = first.map_or(ir::PinValue::Pinned, |(_, v)| v);
                let from = self.opt_set(from, "`pin from`")?;
                let through = self.opt_set(through, "`pin through`")?;
                let to = self.opt_set(to, "`pin to`")?;
                self.mk(
                    Node::Pin {
                        from,
                        through,
                        to,
                        value,
                    },
                    Kind::Set,
                    span,
                )
            }
            ExprKind::Move(m) => {
                // (With a `comment` parameter the move is written as a dash
                // with a target, which keeps the destinations.)
                if let (Some(c), ir::MoveSource::Legal | ir::MoveSource::PseudoLegal) =
                    (&m.capture, m.source)
                {
                    // CQL 6.2: "the 'capture' keyword is not currently
                    // supported in conjunction with 'legal' or 'pseudolegal'".
                    return Err(self.err(
                        c.span,
                        "`move capture` cannot be combined with `legal` or `pseudolegal` (as in CQL 6.2)",
                    ));
                }
                let first = if m.comment.is_some() { None } else { m.first };
                // The value of the first parameter written, if it is a
                // square parameter (see `ast::MoveParams::first`).
                let value = match (m.value, first) {
                    (ir::MoveValue::Destinations, Some("from")) => ir::MoveValue::Origins,
                    (ir::MoveValue::Destinations, Some("capture")) => ir::MoveValue::Captures,
                    (v, _) => v,
                };
                let valued =
                    m.comment.is_some() || matches!(first, Some("from" | "to" | "capture"));
                // CQL 6.2: "The promoted piece must be just a piece or set of
                // pieces without square designators".
                if let Some(p) = &m.promote
                    && !matches!(
                        p.kind,
                        ExprKind::Designator {
                            pieces: Some(_),
                            squares: None
                        }
                    )
                {
                    return Err(self.err(
                        p.span,
                        "`move promote` needs a piece designator without squares, such as `Q` or `[RBN]` (as in CQL 6.2)",
                    ));
                }
                let mut mf = ir::MoveFilter {
                    from: self.opt_set(&m.from, "`move from`")?,
                    to: self.opt_set(&m.to, "`move to`")?,
                    capture: self.opt_set(&m.capture, "`move capture`")?,
                    target: None,
                    promote: self.opt_set(&m.promote, "`move promote`")?,
                    special: m.special,
                    source: m.source,
                    value,
                    dash: false,
                };
                let kind = match m.value {
                    ir::MoveValue::Count => Kind::Numeric,
                    _ if !valued => Kind::Logical,
                    ir::MoveValue::Destinations
                    | ir::MoveValue::Target
                    | ir::MoveValue::Origins
                    | ir::MoveValue::Captures => Kind::Set,
                };
                let Some(comment) = &m.comment else {
                    return self.mk(Node::Move(mf), kind, span);
                };
                // `comment (...)` as a parameter (CQL 6.2 oracle): at the
                // position each matching move of the game leads to (its
                // target; `primary`/`secondary` alike), and for `previous`,
                // `legal` and `pseudolegal` once at the current position
                // (the destination of `previous`; a possible move's
                // position is not in the game), evaluated there.
                let c = self.sub(comment)?;
                match m.source {
                    ir::MoveSource::Played
                    | ir::MoveSource::Primary
                    | ir::MoveSource::Secondary => {
                        mf.target = Some(Box::new(c));
                        self.mk(Node::Move(mf), kind, span)
                    }
                    ir::MoveSource::Previous
                    | ir::MoveSource::Legal
                    | ir::MoveSource::PseudoLegal => {
                        let mv = self.mk(Node::Move(mf), kind, span)?;
                        self.mk(Node::Block(vec![mv, c]), Kind::Logical, span)
                    }
                }
            }
            ExprKind::Dash {
                from,
                to,
                capture,
                promote,
                target: dash_target,
                source,
                value,
            } => {
                if *capture && matches!(source, ir::MoveSource::Legal | ir::MoveSource::PseudoLegal)
                {
                    // CQL 6.2: "'legal' and 'pseudolegal' are not supported
                    // with capturing dashnodes '[x]'".
                    return Err(self.err(
                        span,
                        "a capture dash `[x]` cannot follow `legal` or `pseudolegal` (as in CQL 6.2): use `--`",
                    ));
                }
                let from = self.opt_set(from, "the left side of a move dash")?;
                let target = self.opt_set(to, "the right side of a move dash")?;
                let promote = self.opt_promote(promote, "a promotion `=`")?;
                let (to, capture) = if *capture {
                    let any = match target {
                        Some(t) => t,
                        None => Box::new(self.mk(
                            Node::Piece {
                                pieces: PieceSet::WHITE.union(PieceSet::BLACK),
                                squares: Bitboard::FULL,
                            },
                            Kind::Set,
                            span,
                        )?),
                    };
                    (None, Some(any))
                } else {
                    (target, None)
                };
                let (special, target) = match dash_target {
                    None => (None, None),
                    Some(DashTarget::Special(s)) => (Some(*s), None),
                    Some(DashTarget::Filter(f)) => (None, Some(Box::new(self.lower(f)?))),
                };
                // A target with a value gives the dash its value (CQL 6.2).
                let valued = target.as_ref().map(|t| t.kind).filter(|k| {
                    *value == ir::MoveValue::Destinations
                        && *source == ir::MoveSource::Played
                        && *k != Kind::Logical
                });
                let mf = ir::MoveFilter {
                    from,
                    to,
                    capture,
                    promote,
                    special,
                    target,
                    source: *source,
                    value: if valued.is_some() {
                        ir::MoveValue::Target
                    } else {
                        *value
                    },
                    dash: true,
                };
                let kind = match (value, valued) {
                    (_, Some(k)) => k,
                    (ir::MoveValue::Count, None) => Kind::Numeric,
                    (_, None) => Kind::Set,
                };
                self.mk(Node::Move(mf), kind, span)
            }
            ExprKind::Loop {
                piece,
                all,
                var,
                domain,
                body,
            } => {
                let what = if *piece {
                    "`piece ... in`"
                } else {
                    "`square ... in`"
                };
                let domain = self.set_arg(domain, what)?;
                let loop_word = if *piece { "piece" } else { "square" };
                match self.loop_vars.get(&var.name).copied() {
                    Some(lv) if lv.active => {
                        return Err(self.err(
                            var.span,
                            format!(
                                "`{}` is already the variable of the enclosing loop at {}: a nested loop needs another name",
                                var.name,
                                self.pos_text(lv.span)
                            ),
                        ));
                    }
                    Some(lv) if lv.piece != *piece => {
                        let other = if lv.piece { "piece" } else { "square" };
                        return Err(self.err(
                            var.span,
                            format!(
                                "`{}` is the variable of a `{other}` loop (at {}), so a `{loop_word}` loop needs another name",
                                var.name,
                                self.pos_text(lv.span)
                            ),
                        ));
                    }
                    None if self.var_ids.contains_key(&var.name) => {
                        return Err(self.err(
                            var.span,
                            format!(
                                "`{}` is already an assigned variable: the `{loop_word}` loop needs a fresh name",
                                var.name
                            ),
                        ));
                    }
                    _ => {}
                }
                let id = self.declare(var, Kind::Set)?;
                if *piece {
                    self.piece_vars.insert(id);
                }
                let lv = LoopVar {
                    piece: *piece,
                    active: true,
                    span: var.span,
                };
                self.loop_vars.insert(var.name.clone(), lv);
                let body = self.sub(body);
                self.loop_vars.insert(
                    var.name.clone(),
                    LoopVar {
                        active: false,
                        ..lv
                    },
                );
                let body = body?;
                // CQL 6.2: only the form without `all` is a set filter; with
                // `all` the loop is logical (it matches or not, no value).
                let kind = if *all { Kind::Logical } else { Kind::Set };
                self.mk(
                    Node::SquareLoop {
                        piece: *piece,
                        all: *all,
                        var: id,
                        domain: Box::new(domain),
                        body: Box::new(body),
                    },
                    kind,
                    span,
                )
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.sub(cond);
                let t = self.sub(then);
                let o = otherwise.as_ref().map(|x| self.sub(x));
                let (c, t) = (c?, t?);
                let o = o.transpose()?;
                let kind = match &o {
                    Some(o) if o.kind == t.kind => t.kind,
                    _ => Kind::Logical,
                };
                self.mk(
                    Node::If {
                        cond: Box::new(c),
                        then: Box::new(t),
                        otherwise: o.map(Box::new),
                    },
                    kind,
                    span,
                )
            }
            ExprKind::Block(items) => {
                let items = self.list(items)?;
                let kind = items.last().map_or(Kind::Logical, |e| e.kind);
                self.mk(Node::Block(items), kind, span)
            }
            ExprKind::Paren(inner) => {
                let x = self.lower(inner)?;
                if matches!(x.node, Node::Move(_)) && valueless_dash(&x) {
                    self.paren_dashes.insert(x.span);
                }
                Ok(x)
            }
            ExprKind::Assign { var, value } => {
                if let Some(lv) = self.loop_vars.get(&var.name).copied() {
                    return Err(self.err(
                        var.span,
                        format!(
                            "cannot assign to `{}`: it is the variable of the loop at {}",
                            var.name,
                            self.pos_text(lv.span)
                        ),
                    ));
                }
                if let Some(id) = self.var_ids.get(&var.name)
                    && self.piece_vars.contains(id)
                {
                    return Err(self.err(
                        var.span,
                        format!(
                            "cannot assign to piece variable `{}`: bind it with `piece {} = S`",
                            var.name, var.name
                        ),
                    ));
                }
                let v = match self.sub(value) {
                    Ok(v) => v,
                    Err(failed) => {
                        self.reported_names.insert(var.name.clone());
                        return Err(failed);
                    }
                };
                if v.kind == Kind::Logical {
                    self.reported_names.insert(var.name.clone());
                    return Err(self.err(
                        v.span,
                        format!(
                            "cannot assign this to `{}`: it is {}; a variable holds a set, a number, a string or a position",
                            var.name,
                            kind_phrase(v.kind)
                        ),
                    ));
                }
                if valueless_dash(&v) {
                    // CQL 6.2: "right hand side is neither a set filter nor
                    // a numeric filter ...".
                    self.reported_names.insert(var.name.clone());
                    self.refuse_dash(&v, &format!("an assignment to `{}`", var.name))?;
                }
                let id = self.declare(var, v.kind)?;
                self.mk(
                    Node::Assign {
                        var: id,
                        value: Box::new(v),
                    },
                    Kind::Logical,
                    span,
                )
            }
            ExprKind::PieceAssign { var, value } => self.piece_assign(var, value, span),
            ExprKind::Sort { label, min, arg } => {
                let a = self.sub(arg)?;
                self.refuse_dash(&a, "`sort`")?;
                let (a, kind) = match (&a.node, a.kind) {
                    (_, Kind::String) => (a, Kind::String),
                    // `sort #x >= 3`: a comparison of numbers has the value of
                    // its left side.
                    (Node::Compare(_, l, _), _) if l.kind == Kind::Numeric => (a, Kind::Numeric),
                    _ => {
                        let a = self.want_count(a, "`sort`")?;
                        (a, Kind::Numeric)
                    }
                };
                self.mk(
                    Node::Sort {
                        label: label.clone(),
                        min: *min,
                        arg: Box::new(a),
                    },
                    kind,
                    span,
                )
            }
            ExprKind::Transform {
                filter,
                count,
                restrict,
                body,
            } => {
                let b = self.sub(body)?;
                let kind = if *count {
                    Kind::Numeric
                } else {
                    match (&b.node, b.kind) {
                        (_, Kind::Set | Kind::Numeric) => b.kind,
                        // `flipcolor (P >= 4)`: a comparison of numbers has the
                        // value of its left side, so the orbit takes the
                        // maximum (SEMANTICS.md §9.26).
                        (Node::Compare(_, l, _), _) if l.kind == Kind::Numeric => Kind::Numeric,
                        _ => Kind::Logical,
                    }
                };
                self.mk(
                    Node::Transform {
                        filter: *filter,
                        count: *count,
                        restrict: *restrict,
                        body: Box::new(b),
                    },
                    kind,
                    span,
                )
            }
            ExprKind::Fen(text) => self.fen(text, span),
            ExprKind::Builtin(f, args) => self.builtin(*f, args, span),
            ExprKind::VarBuiltin(ir::Builtin::Unbind(_), name)
                if self.dicts.contains_key(&name.name) =>
            {
                // `unbind D`: empties the whole dictionary (CQL 6.2).
                let dict = self.dict_var(&name.name);
                self.mk(
                    Node::Builtin(ir::Builtin::Unbind(dict), Vec::new()),
                    Kind::Logical,
                    span,
                )
            }
            ExprKind::VarBuiltin(
                f @ (ir::Builtin::IsBound(_) | ir::Builtin::IsUnbound(_)),
                name,
            ) if !self.var_ids.contains_key(&name.name)
                && !self.functions.contains_key(&name.name)
                && !self.dicts.contains_key(&name.name) =>
            {
                // A name not assigned yet (CQL 6.2 oracle: `isbound x` is
                // false and `isunbound x` true until an assignment to x).
                let next = VarId(self.vars.len() as u32);
                let id = *self.pending_vars.entry(name.name.clone()).or_insert(next);
                if id == next {
                    self.vars.push(Var {
                        name: name.name.clone(),
                        kind: Kind::Logical,
                    });
                }
                let f = match f {
                    ir::Builtin::IsBound(_) => ir::Builtin::IsBound(id),
                    _ => ir::Builtin::IsUnbound(id),
                };
                self.mk(Node::Builtin(f, Vec::new()), Kind::Logical, span)
            }
            ExprKind::VarBuiltin(f, name) => {
                let Some(&id) = self.var_ids.get(&name.name) else {
                    return Err(self.err(
                        name.span,
                        format!(
                            "`{}` needs a variable assigned before it, and `{}` is not one",
                            f.keyword(),
                            name.name
                        ),
                    ));
                };
                let f = match f {
                    ir::Builtin::IsBound(_) => ir::Builtin::IsBound(id),
                    ir::Builtin::IsUnbound(_) => ir::Builtin::IsUnbound(id),
                    _ => ir::Builtin::Unbind(id),
                };
                self.mk(Node::Builtin(f, Vec::new()), Kind::Logical, span)
            }
            ExprKind::Dictionary { local, access } => self.dictionary(*local, access, span),
            ExprKind::IndexAssign { index, value } => self.dict_set(index, value, span),
            ExprKind::UnbindIndex(index) => {
                let (dict, key) = self.dict_key(index)?;
                self.mk(
                    Node::Builtin(ir::Builtin::DictRemove(dict), vec![key]),
                    Kind::Logical,
                    span,
                )
            }
            ExprKind::Index {
                target,
                from: Some(key),
                to: None,
                slice: false,
            } if self.dict_name(target).is_some() => {
                let (dict, key) = self.dict_key(e)?;
                let kind = self.vars[dict.0 as usize].kind;
                let _ = target;
                self.mk(
                    Node::Builtin(ir::Builtin::DictGet(dict), vec![key]),
                    kind,
                    span,
                )
            }
            ExprKind::Index {
                target,
                from,
                to,
                slice,
            } => {
                let t = self.sub(target)?;
                let t = self.want_string(t, "indexing `[ ]`")?;
                let mut args = vec![t];
                for b in [from, to].into_iter().flatten() {
                    args.push(self.num_arg(b, "an index inside `[ ]`")?);
                }
                let f = if *slice {
                    ir::Builtin::Substring {
                        from: from.is_some(),
                        to: to.is_some(),
                    }
                } else {
                    ir::Builtin::CharAt
                };
                self.mk(Node::Builtin(f, args), Kind::String, span)
            }
            ExprKind::StringMatch { filter, pattern } => {
                let f = self.sub(filter)?;
                match pattern {
                    None => Ok(f),
                    Some((p, ps)) => {
                        let p = self.mk(Node::Str(p.clone()), Kind::String, *ps)?;
                        self.mk(Node::In(Box::new(p), Box::new(f)), Kind::Logical, span)
                    }
                }
            }
            ExprKind::Call { name, args } => self.call(name, args, span),
            ExprKind::Function { name, .. } => Err(self.err(
                name.span,
                "a function definition must stand on its own, not inside another filter",
            )),
            ExprKind::Colon(pos, body) => {
                let p = self.sub(pos);
                let b = self.sub(body);
                let (p, b) = (p?, b?);
                let p = self.want_pos(p, "the left side of `:`")?;
                let kind = b.kind;
                self.mk(
                    Node::At {
                        pos: Box::new(p),
                        body: Box::new(b),
                    },
                    kind,
                    span,
                )
            }
            ExprKind::Child(n) => {
                let n = match n {
                    Some(n) => Some(Box::new(self.num_arg(n, "`child(N)`")?)),
                    None => None,
                };
                self.mk(Node::Child(n), Kind::Position, span)
            }
            ExprKind::PositionNumbered(n) => {
                let n = self.num_arg(n, "`position`")?;
                self.mk(Node::PositionNumbered(Box::new(n)), Kind::Position, span)
            }
            ExprKind::TreeRel(rel, args) => {
                let what = match rel {
                    ir::TreeRel::Ancestor => "`ancestor`",
                    ir::TreeRel::Descendant => "`descendant`",
                    ir::TreeRel::Lca => "`lca`",
                    ir::TreeRel::Distance => "`distance`",
                    _ => "a position comparison",
                };
                let [a, b] = args.as_slice() else {
                    return Err(self.err(span, format!("{what} takes two positions")));
                };
                let a = self.sub(a);
                let b = self.sub(b);
                let (a, b) = (a?, b?);
                let a = self.want_pos(a, what)?;
                let b = self.want_pos(b, what)?;
                let kind = match rel {
                    ir::TreeRel::Ancestor | ir::TreeRel::Descendant => Kind::Logical,
                    ir::TreeRel::Distance => Kind::Numeric,
                    ir::TreeRel::Intersect => Kind::Set,
                    // `lca`, and the relations, whose value is their left side.
                    _ => Kind::Position,
                };
                self.mk(Node::TreeRel(*rel, Box::new(a), Box::new(b)), kind, span)
            }
            ExprKind::Find {
                backward,
                all,
                quiet,
                range,
                body,
            } => {
                let body = self.sub(body)?;
                let kind = if *all || range.is_some() {
                    Kind::Numeric
                } else {
                    Kind::Position
                };
                self.mk(
                    Node::Find(Box::new(ir::FindFilter {
                        backward: *backward,
                        all: *all,
                        quiet: *quiet,
                        range: *range,
                        body: Box::new(body),
                    })),
                    kind,
                    span,
                )
            }
            ExprKind::Echo {
                source,
                target,
                all,
                quiet,
                body,
            } => {
                let s = self.declare(source, Kind::Position)?;
                let t = self.declare(target, Kind::Position)?;
                let body = self.sub(body)?;
                // CQL 6.2: with a numeric body, echo is numeric (the
                // largest value of the body over the targets).
                let kind = if body.kind == Kind::Numeric {
                    Kind::Numeric
                } else {
                    Kind::Logical
                };
                self.mk(
                    Node::Echo(Box::new(ir::EchoFilter {
                        source: s,
                        target: t,
                        all: *all,
                        quiet: *quiet,
                        body: Box::new(body),
                    })),
                    kind,
                    span,
                )
            }
            ExprKind::ConsecutiveMoves { quiet, range, args } => {
                let [a, b] = args.as_slice() else {
                    return Err(self.err(span, "`consecutivemoves` takes two positions"));
                };
                let a = self.sub(a);
                let b = self.sub(b);
                let (a, b) = (a?, b?);
                let a = self.want_pos(a, "`consecutivemoves`")?;
                let b = self.want_pos(b, "`consecutivemoves`")?;
                self.mk(
                    Node::ConsecutiveMoves {
                        quiet: *quiet,
                        range: *range,
                        source: Box::new(a),
                        target: Box::new(b),
                    },
                    Kind::Numeric,
                    span,
                )
            }
            ExprKind::Line {
                backward,
                params,
                items,
            } => {
                let items = self.line_items(items)?;
                let kind = self.sequence_kind(&items, "line", params.lastposition, span)?;
                self.mk(
                    Node::Line(Box::new(ir::LineFilter {
                        backward: *backward,
                        params: params.clone(),
                        items,
                    })),
                    kind,
                    span,
                )
            }
            ExprKind::Path {
                params,
                focus,
                max,
                items,
            } => {
                let focus = self.opt_set(focus, "the `focus` of a path")?;
                let max = match max {
                    Some(x) => Some(Box::new(self.num_arg(x, "the `max` of a path")?)),
                    None => None,
                };
                let items = self.path_items(items)?;
                let kind = self.sequence_kind(&items, "path", params.lastposition, span)?;
                self.mk(
                    Node::Path(Box::new(ir::PathFilter {
                        params: ir::PathParams {
                            focus,
                            max,
                            ..params.clone()
                        },
                        items,
                    })),
                    kind,
                    span,
                )
            }
        }
    }

    /// A position is needed.
    fn want_pos(&mut self, e: Expr, what: &str) -> LResult {
        if e.kind == Kind::Position {
            return Ok(e);
        }
        Err(self.err(
            e.span,
            format!(
                "{what} needs a position (such as `parent`, `child`, `currentposition` or a position variable), but this is {}",
                kind_phrase(e.kind)
            ),
        ))
    }

    /// The kind of a `line` or `path` (`what`) of constituents `items`: a
    /// position with `lastposition`, else numeric; an error when its
    /// repetitions expand past [`MAX_LINE_STATES`].
    fn sequence_kind(
        &mut self,
        items: &[ir::LineItem],
        what: &str,
        lastposition: bool,
        span: Span,
    ) -> Result<Kind, Failed> {
        let states = line_states(items);
        if states > MAX_LINE_STATES {
            return Err(self.err(
                span,
                format!("this {what} is too large: its repetitions expand to {states} constituents (the limit is {MAX_LINE_STATES})"),
            ));
        }
        Ok(if lastposition {
            Kind::Position
        } else {
            Kind::Numeric
        })
    }

    fn line_items(&mut self, items: &'a [ast::LineItem]) -> Result<Vec<ir::LineItem>, Failed> {
        let mut out = Vec::new();
        let mut failed = false;
        for it in items {
            let atom = match &it.atom {
                ast::LineAtom::Filter(e) => self.sub(e).map(ir::LineAtom::Filter),
                ast::LineAtom::Group(g) => self.line_items(g).map(ir::LineAtom::Group),
            };
            match atom {
                Ok(atom) => out.push(ir::LineItem {
                    atom,
                    min: it.min,
                    max: it.max,
                }),
                Err(Failed) => failed = true,
            }
        }
        if failed { Err(Failed) } else { Ok(out) }
    }

    /// A path's constituents: a move dash as written (`X--Y`, `X[x]Y`, with
    /// its promotion and target) consumes a move and is read as
    /// `currentmove` at the move's tail; any other filter tests the current
    /// position.
    fn path_items(&mut self, items: &'a [ast::LineItem]) -> Result<Vec<ir::LineItem>, Failed> {
        let mut out = Vec::new();
        let mut failed = false;
        for it in items {
            let atom = match &it.atom {
                ast::LineAtom::Filter(e) if is_path_dash(e) => self.sub(e).map(|mut m| {
                    if let Node::Move(mf) = &mut m.node {
                        mf.source = ir::MoveSource::Previous;
                    }
                    ir::LineAtom::Dash(m)
                }),
                ast::LineAtom::Filter(e) => self.sub(e).map(ir::LineAtom::Filter),
                ast::LineAtom::Group(g) => self.path_items(g).map(ir::LineAtom::Group),
            };
            match atom {
                Ok(atom) => out.push(ir::LineItem {
                    atom,
                    min: it.min,
                    max: it.max,
                }),
                Err(Failed) => failed = true,
            }
        }
        if failed { Err(Failed) } else { Ok(out) }
    }

    /// `dir N [M] X` with a negative or variable distance (CQL 6.2:
    /// `up DeltaRank right DeltaFile K`): [`ir::Builtin::Direction`].
    fn direction_by(
        &mut self,
        dirs: ir::DirSet,
        range: &'a [(DirCount, Span)],
        arg: &'a ast::Expr,
        span: Span,
    ) -> LResult {
        let mut counts = Vec::new();
        for (c, s) in range {
            let e = match c {
                DirCount::Lit(n) if (-7..=7).contains(n) => {
                    self.mk(Node::Number(*n), Kind::Numeric, *s)?
                }
                DirCount::Lit(n) => {
                    return Err(self.err(
                        *s,
                        format!("distance {n} is off the board: a direction distance is -7 to 7"),
                    ));
                }
                DirCount::Var(v) => {
                    let x = self.ident(v, *s)?;
                    self.want_count(x, "a direction's distance")?
                }
            };
            counts.push(e);
        }
        let (min, max) = match counts.len() {
            1 => (counts[0].clone(), counts.remove(0)),
            2 => {
                let max = counts.remove(1);
                (counts.remove(0), max)
            }
            _ => {
                return Err(self.err(
                    span,
                    "a direction filter takes at most two distances (`up 1 3 K`)",
                ));
            }
        };
        let name = dirs.keyword().unwrap_or("direction");
        let arg = self.set_arg(arg, &format!("`{name}`"))?;
        self.mk(
            Node::Builtin(ir::Builtin::Direction(dirs), vec![min, max, arg]),
            Kind::Set,
            span,
        )
    }

    fn distance(&mut self, n: i64, span: Span) -> Result<u8, Failed> {
        if (0..=7).contains(&n) {
            Ok(n as u8)
        } else {
            Err(self.err(
                span,
                format!("distance {n} is off the board: a direction distance is 0 to 7"),
            ))
        }
    }

    fn set_args(&mut self, args: &'a [ast::Expr], what: &str) -> Result<Vec<Expr>, Failed> {
        let mut out = Vec::new();
        let mut failed = false;
        for a in args {
            match self.set_arg(a, what) {
                Ok(x) => out.push(x),
                Err(Failed) => failed = true,
            }
        }
        if failed { Err(Failed) } else { Ok(out) }
    }

    fn declare(&mut self, var: &ast::Name, kind: Kind) -> Result<VarId, Failed> {
        if self
            .bindings
            .last()
            .is_some_and(|b| b.contains_key(&var.name))
        {
            return Err(self.err(
                var.span,
                format!(
                    "`{}` is a function parameter and cannot be assigned to",
                    var.name
                ),
            ));
        }
        if self.functions.contains_key(&var.name) {
            return Err(self.err(
                var.span,
                format!(
                    "`{}` is a function; a variable needs another name",
                    var.name
                ),
            ));
        }
        if let Some(&id) = self.var_ids.get(&var.name) {
            let old = self.vars[id.0 as usize].kind;
            if old != kind {
                return Err(self.err(
                    var.span,
                    format!(
                        "variable `{}` holds a {old} value, so it cannot also hold a {kind} value",
                        var.name
                    ),
                ));
            }
            return Ok(id);
        }
        if let Some(id) = self.pending_vars.remove(&var.name) {
            self.vars[id.0 as usize].kind = kind;
            self.var_ids.insert(var.name.clone(), id);
            return Ok(id);
        }
        let id = VarId(self.vars.len() as u32);
        self.vars.push(Var {
            name: var.name.clone(),
            kind,
        });
        self.var_ids.insert(var.name.clone(), id);
        Ok(id)
    }

    fn ident(&mut self, name: &str, span: Span) -> LResult {
        if self.dicts.contains_key(name) {
            return Err(self.err(
                span,
                format!("`{name}` is a dictionary: write `{name}[key]`, `#{name}` or `unbind {name}[key]`"),
            ));
        }
        if let Some(b) = self.bindings.last()
            && let Some(x) = b.get(name)
        {
            let x = x.clone();
            self.nodes += 1;
            return Ok(x);
        }
        if let Some(lv) = self.loop_vars.get(name).copied()
            && !lv.active
        {
            let what = if lv.piece { "piece" } else { "square" };
            return Err(self.err(
                span,
                format!(
                    "`{name}` is used outside its `{what}` loop (at {}): a loop variable is unbound after the loop (CQL 6.2 stops with \"unbound {what} variable\")",
                    self.pos_text(lv.span)
                ),
            ));
        }
        if let Some(&id) = self.var_ids.get(name) {
            if self.piece_vars.contains(&id) {
                return self.mk(
                    Node::Builtin(ir::Builtin::PieceVar(id), Vec::new()),
                    Kind::Set,
                    span,
                );
            }
            let kind = self.vars[id.0 as usize].kind;
            return self.mk(Node::Var(id), kind, span);
        }
        if self.functions.contains_key(name) {
            return Err(self.err(
                span,
                format!("`{name}` is a function: call it with its arguments, e.g. `{name}(...)`"),
            ));
        }
        if self.reported_names.contains(name) {
            return Err(Failed);
        }
        let candidates = keywords()
            .chain(self.var_ids.keys().map(String::as_str))
            .chain(self.functions.keys().map(String::as_str));
        let hint = match suggest(name, candidates) {
            Some(c) => format!(" (did you mean `{c}`?)"),
            None => String::new(),
        };
        self.reported_names.insert(name.to_owned());
        Err(self.err(
            span,
            format!("unknown variable or filter `{name}`: a variable must be assigned before it is used{hint}"),
        ))
    }

    fn prefix(&mut self, op: Prefix, arg: &'a ast::Expr, span: Span) -> LResult {
        let (node, kind): (fn(Box<Expr>) -> Node, Kind) = match op {
            Prefix::Not => {
                let a = self.sub(arg)?;
                return self.mk(Node::Not(Box::new(a)), Kind::Logical, span);
            }
            Prefix::NoTransform => {
                let a = self.sub(arg)?;
                let k = a.kind;
                return self.mk(Node::NoTransform(Box::new(a)), k, span);
            }
            Prefix::Complement => (Node::Complement, Kind::Set),
            Prefix::Power => (Node::Power, Kind::Numeric),
            Prefix::Rank => (Node::Rank, Kind::Numeric),
            Prefix::File => (Node::File, Kind::Numeric),
            Prefix::Light => (Node::Light, Kind::Set),
            Prefix::Dark => (Node::Dark, Kind::Set),
            Prefix::Neg => {
                let a = self.num_arg(arg, "unary `-`")?;
                return self.mk(Node::Neg(Box::new(a)), Kind::Numeric, span);
            }
            Prefix::Abs => {
                let a = self.num_arg(arg, "`abs`")?;
                return self.mk(Node::Abs(Box::new(a)), Kind::Numeric, span);
            }
            Prefix::Count => {
                if let Some(name) = self.dict_name(arg) {
                    let Some(dict) = self.dicts.get(name).and_then(|d| d.var) else {
                        return Err(self.err(arg.span, format!("dictionary `{name}` has no entry type yet: store one first (`{name}[k] = v`)")));
                    };
                    return self.mk(
                        Node::Builtin(ir::Builtin::DictCount(dict), Vec::new()),
                        Kind::Numeric,
                        span,
                    );
                }
                let a = self.sub(arg)?;
                if a.kind == Kind::String {
                    let f = ir::Builtin::Length;
                    return self.mk(Node::Builtin(f, vec![a]), Kind::Numeric, span);
                }
                let a = self.want_set(a, "`#`")?;
                return self.mk(Node::Count(Box::new(a)), Kind::Numeric, span);
            }
        };
        let what = match op {
            Prefix::Complement => "`~`",
            Prefix::Count => "`#`",
            Prefix::Power => "`power`",
            Prefix::Rank => "`rank`",
            Prefix::File => "`file`",
            Prefix::Light => "`light`",
            _ => "`dark`",
        };
        let a = self.set_arg(arg, what)?;
        if op == Prefix::Complement
            && let Node::Complement(inner) = a.node
        {
            // `~~X` is X (the printer writes a dash's right side that is
            // no designator as `~ ~(X)`).
            return Ok(*inner);
        }
        self.mk(node(Box::new(a)), kind, span)
    }

    /// `a op b op c ...`. A chain of one associative operator (`or`,
    /// `and`, `|`, `&`; parenthesised sub-chains of the same operator
    /// included) becomes a balanced tree, so a flat chain of any length
    /// costs only logarithmic depth; other chains nest to the left and
    /// count one level per operator.
    fn infix_chain(
        &mut self,
        first: &'a ast::Expr,
        rest: &'a [(Infix, ast::Expr)],
        span: Span,
    ) -> LResult {
        let op0 = rest.first().map_or(Infix::Or, |(o, _)| *o);
        let associative = matches!(op0, Infix::Or | Infix::And | Infix::Set(_))
            && rest.iter().all(|(o, _)| *o == op0);
        if associative {
            let mut leaves = Vec::new();
            collect_leaves(op0, first, &mut leaves);
            for (_, e) in rest {
                collect_leaves(op0, e, &mut leaves);
            }
            // The balanced tree's own depth counts like nesting.
            let extra = leaves.len().next_power_of_two().trailing_zeros() as usize;
            self.depth += extra;
            let mut lowered = Vec::with_capacity(leaves.len());
            let mut failed = false;
            for leaf in leaves {
                match self.lower(leaf) {
                    Ok(x) => lowered.push(x),
                    Err(Failed) => failed = true,
                }
                if self.fatal {
                    break;
                }
            }
            self.depth -= extra;
            if failed || self.fatal {
                return Err(Failed);
            }
            if let Infix::Set(sop) = op0 {
                lowered = self.set_operands(sop, lowered)?;
            }
            return self.balanced(op0, lowered);
        }
        if self.depth + rest.len() >= MAX_LOWER_DEPTH {
            self.fatal = true;
            return Err(self.err(
                span,
                format!("the query is nested too deeply (more than {MAX_LOWER_DEPTH} levels of filters: a chain of {} operators nests one level per operator)", rest.len()),
            ));
        }
        let mut acc = self.sub(first);
        let mut acc_span = first.span;
        for (op, e) in rest {
            let y = self.sub(e);
            acc_span = acc_span.join(e.span);
            acc = match (acc, y) {
                (Ok(x), Ok(y)) => self.infix(*op, x, y, acc_span),
                _ => Err(Failed),
            };
        }
        acc
    }

    /// The operands of a chain of `&` or `|`, each a set: in a chain of
    /// `&`, two adjacent positions are their positional intersection
    /// ([`ir::TreeRel::Intersect`], CQL 6.2's `source∩target`; a
    /// parenthesised pair is flattened into the chain before this).
    fn set_operands(&mut self, sop: ir::SetOp, items: Vec<Expr>) -> Result<Vec<Expr>, Failed> {
        let what = if sop == ir::SetOp::Inter {
            "`&`"
        } else {
            "`|`"
        };
        let mut out = Vec::with_capacity(items.len());
        let mut failed = false;
        let mut items = items.into_iter().peekable();
        while let Some(x) = items.next() {
            let x = if sop == ir::SetOp::Inter
                && x.kind == Kind::Position
                && items.peek().is_some_and(|y| y.kind == Kind::Position)
                && let Some(y) = items.next()
            {
                let span = x.span.join(y.span);
                let node = Node::TreeRel(ir::TreeRel::Intersect, Box::new(x), Box::new(y));
                self.mk(node, Kind::Set, span)
            } else {
                self.want_set(x, what)
            };
            match x {
                Ok(x) => out.push(x),
                Err(Failed) => failed = true,
            }
        }
        if failed { Err(Failed) } else { Ok(out) }
    }

    /// The balanced tree of the associative `op` over `items` (at least
    /// one), in order; items that are themselves trees of `op` are
    /// flattened first. So every such tree has one shape for its operands,
    /// whatever wrote it (a chain, parentheses, a comparison chain, `fen`,
    /// an inlined argument), and its printed form parses back to it.
    fn balanced(&mut self, op: Infix, items: Vec<Expr>) -> LResult {
        let mut flat = Vec::with_capacity(items.len());
        for item in items {
            flatten_ir(op, item, &mut flat);
        }
        self.build_balanced(op, flat)
    }

    fn build_balanced(&mut self, op: Infix, mut items: Vec<Expr>) -> LResult {
        if items.len() <= 1 {
            return items.pop().ok_or(Failed);
        }
        let right = items.split_off(items.len() / 2);
        let x = self.build_balanced(op, items)?;
        let y = self.build_balanced(op, right)?;
        let span = x.span.join(y.span);
        self.infix(op, x, y, span)
    }

    fn infix(&mut self, op: Infix, x: Expr, y: Expr, span: Span) -> LResult {
        match op {
            Infix::Or => self.mk(Node::Or(Box::new(x), Box::new(y)), Kind::Logical, span),
            Infix::And => self.mk(Node::And(Box::new(x), Box::new(y)), Kind::Logical, span),
            Infix::In if valueless_dash(&x) || valueless_dash(&y) => {
                let refused = [self.refuse_dash(&x, "`in`"), self.refuse_dash(&y, "`in`")];
                Err(refused.into_iter().find_map(Result::err).unwrap_or(Failed))
            }
            Infix::In => match (x.kind, y.kind) {
                (Kind::Set, Kind::Set) | (Kind::String, Kind::String) => {
                    self.mk(Node::In(Box::new(x), Box::new(y)), Kind::Logical, span)
                }
                (kx, ky) => Err(self.err(
                    span,
                    format!(
                        "`in` needs two sets (X in Y: every square of X is in Y) or two strings (substring); here the left side is {} and the right side is {}",
                        kind_phrase(kx),
                        kind_phrase(ky)
                    ),
                )),
            },
            Infix::Set(sop) => {
                let mut xy = self.set_operands(sop, vec![x, y])?;
                let y = xy.pop().ok_or(Failed)?;
                match xy.pop() {
                    Some(x) => {
                        self.mk(Node::SetBinary(sop, Box::new(x), Box::new(y)), Kind::Set, span)
                    }
                    // Two positions: their intersection.
                    None => Ok(y),
                }
            }
            Infix::Arith(ir::ArithOp::Add) if x.kind == Kind::String || y.kind == Kind::String => {
                let x = self.want_string(x, "`+` of strings");
                let y = self.want_string(y, "`+` of strings");
                let (x, y) = (x?, y?);
                self.mk(Node::Builtin(ir::Builtin::Concat, vec![x, y]), Kind::String, span)
            }
            Infix::Regex => {
                let x = self.want_string(x, "`~~`");
                let y = self.want_string(y, "`~~`");
                let (x, y) = (x?, y?);
                if let Node::Str(pattern) = &y.node
                    && let Err(e) = ir::Builtin::compile_regex(pattern)
                {
                    let first = e.to_string();
                    let first = first.lines().last().unwrap_or("").trim().to_owned();
                    return Err(self.err(
                        y.span,
                        format!("invalid regular expression after `~~`: {first}"),
                    ));
                }
                self.mk(Node::Builtin(ir::Builtin::RegexMatch, vec![x, y]), Kind::String, span)
            }
            Infix::Arith(aop) => {
                let what = match aop {
                    ir::ArithOp::Add => "`+`",
                    ir::ArithOp::Sub => "`-`",
                    ir::ArithOp::Mul => "`*`",
                    ir::ArithOp::Div => "`/`",
                    ir::ArithOp::Mod => "`%`",
                };
                if matches!(aop, ir::ArithOp::Add | ir::ArithOp::Mul)
                    && matches!(x.node, Node::Line(_))
                {
                    // CQL 6.2: "Attempt to add a 'line' filter to another
                    // filter. This is likely due to the last wildcard in the
                    // line filter being '+' and being interpreted as
                    // addition" (also with the line in parentheses).
                    return Err(self.err(
                        x.span,
                        format!("{what} cannot follow a `line` filter (as in CQL 6.2: a `+` or `*` after a line reads as its last constituent's quantifier); write the line on the right"),
                    ));
                }
                if aop == ir::ArithOp::Sub && x.kind == Kind::Set && !valueless_dash(&x) {
                    // CQL 6.2 reads `R - 1 < 0` as two filters, `R` and
                    // `-1 < 0` (oracle); cqlj refuses it rather than read it
                    // either way silently.
                    return Err(self.err(
                        x.span,
                        "`-` needs a number on its left, but this is a set of squares: CQL 6.2 reads `X - Y` as the two filters `X` and `-Y`; write `#X - Y` for a difference with X's number of squares",
                    ));
                }
                let x = self.want_num(x, what);
                let y = self.want_num(y, what);
                let (x, y) = (x?, y?);
                self.mk(Node::Arith(aop, Box::new(x), Box::new(y)), Kind::Numeric, span)
            }
            Infix::Attacks | Infix::AttackedBy => {
                let what = if op == Infix::Attacks {
                    "`attacks`"
                } else {
                    "`attackedby`"
                };
                let x = self.arrow_operand(x, what, true);
                let y = self.arrow_operand(y, what, false);
                let (x, y) = (x?, y?);
                let node = if op == Infix::Attacks {
                    Node::Attacks(Box::new(x), Box::new(y))
                } else {
                    Node::AttackedBy(Box::new(x), Box::new(y))
                };
                self.mk(node, Kind::Set, span)
            }
        }
    }

    /// One comparison, after kind checks and set-to-size conversion.
    fn compare_pair(&mut self, op: CmpOp, x: Expr, y: Expr, span: Span) -> LResult {
        let sym = match op {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Eq => "==",
            CmpOp::Ge => ">=",
            CmpOp::Gt => ">",
            CmpOp::Ne => "!=",
        };
        let what = format!("a comparison `{sym}`");
        let refused = [self.refuse_dash(&x, &what), self.refuse_dash(&y, &what)];
        if refused.iter().any(Result::is_err) {
            return Err(Failed);
        }
        // A numeric comparison has the value of its left operand (CQL 6), so
        // `flipcolor (P >= 4)` is the larger count that is >= 4 (§9.26).
        let numeric = matches!(
            (x.kind, y.kind),
            (Kind::Set | Kind::Numeric, Kind::Set | Kind::Numeric)
        ) && !(x.kind == Kind::Set
            && y.kind == Kind::Set
            && matches!(op, CmpOp::Eq | CmpOp::Ne));
        let (x, y) = match (x.kind, y.kind) {
            (Kind::Logical, _) | (_, Kind::Logical) => {
                let bad = if x.kind == Kind::Logical { &x } else { &y };
                let s = bad.span;
                return Err(self.err(
                    s,
                    format!(
                        "cannot compare with `{sym}`: this is {}",
                        kind_phrase(Kind::Logical)
                    ),
                ));
            }
            (Kind::Set, Kind::Set) if matches!(op, CmpOp::Eq | CmpOp::Ne) => (x, y),
            (Kind::Set | Kind::Numeric, Kind::Set | Kind::Numeric) => {
                let x = self.want_count(x, "a comparison")?;
                let y = self.want_count(y, "a comparison")?;
                (x, y)
            }
            (a, b) if a == b => (x, y),
            (a, b) => {
                return Err(self.err(
                    span,
                    format!("cannot compare a {a} with a {b} (`{sym}` needs two numbers, two sets, two strings or two positions)"),
                ));
            }
        };
        let kind = if numeric {
            Kind::Numeric
        } else {
            Kind::Logical
        };
        if op == CmpOp::Ne {
            // CQL 6.2: `X != Y` is `not X == Y`: it matches where either
            // side has no value, and it has no value itself (oracle:
            // `tag "Foo" != "x"` matches every game without the tag;
            // `sort (#P != 5)` is refused).
            let eq = self.mk(
                Node::Compare(CmpOp::Eq, Box::new(x), Box::new(y)),
                kind,
                span,
            )?;
            return self.mk(Node::Not(Box::new(eq)), Kind::Logical, span);
        }
        self.mk(Node::Compare(op, Box::new(x), Box::new(y)), kind, span)
    }

    fn compare(
        &mut self,
        first: &'a ast::Expr,
        rest: &'a [(CmpOp, ast::Expr)],
        span: Span,
    ) -> LResult {
        let mut operands = vec![self.sub(first)];
        for (_, e) in rest {
            operands.push(self.sub(e));
        }
        let operands: Vec<Expr> = operands.into_iter().collect::<Result<_, _>>()?;
        for mid in &operands[1..operands.len() - 1] {
            if mid.has_side_effects() {
                return Err(self.err(
                    mid.span,
                    "in a chain of comparisons the middle operands are evaluated twice, so they must not have side effects (assignments, comments, sort)",
                ));
            }
        }
        let mut pairs = Vec::with_capacity(rest.len());
        for (i, (op, _)) in rest.iter().enumerate() {
            let x = operands[i].clone();
            let y = operands[i + 1].clone();
            let pair_span = x.span.join(y.span);
            pairs.push(self.compare_pair(*op, x, y, pair_span)?);
        }
        if pairs.is_empty() {
            return Err(self.err(span, "empty comparison"));
        }
        self.balanced(Infix::And, pairs)
    }

    fn list_filter(&mut self, f: ListFilter, args: &'a [ast::Expr], span: Span) -> LResult {
        match f {
            ListFilter::Between | ListFilter::MakeSquare => {
                let name = if f == ListFilter::Between {
                    "between"
                } else {
                    "makesquare"
                };
                if let (ListFilter::MakeSquare, [name]) = (f, args) {
                    // CQL 6.2: `makesquare ("e4")`, the square a string names.
                    let x = self.sub(name)?;
                    let x = self.want_string(x, "`makesquare` of one argument")?;
                    return self.mk(
                        Node::Builtin(ir::Builtin::SquareNamed, vec![x]),
                        Kind::Set,
                        span,
                    );
                }
                if args.len() != 2 {
                    let what = if f == ListFilter::MakeSquare {
                        "takes a file and a rank, or a square's name; arguments found"
                    } else {
                        "takes exactly two arguments, found"
                    };
                    return Err(self.err(span, format!("`{name}` {what} {}", args.len())));
                }
                if f == ListFilter::Between {
                    let x = self.set_arg(&args[0], "`between`");
                    let y = self.set_arg(&args[1], "`between`");
                    let (x, y) = (x?, y?);
                    self.mk(Node::Between(Box::new(x), Box::new(y)), Kind::Set, span)
                } else {
                    let x = self.sub(&args[0]);
                    let y = self.sub(&args[1]);
                    let (x, y) = (x?, y?);
                    for a in [&x, &y] {
                        if a.kind != Kind::Numeric {
                            let s = a.span;
                            return Err(self.err(
                                s,
                                format!("`makesquare` needs a file and a rank number (1 to 8), but this is {}", kind_phrase(a.kind)),
                            ));
                        }
                    }
                    self.mk(Node::MakeSquare(Box::new(x), Box::new(y)), Kind::Set, span)
                }
            }
            ListFilter::Max | ListFilter::Min => {
                let name = if f == ListFilter::Max {
                    "`max`"
                } else {
                    "`min`"
                };
                if args.len() < 2 {
                    return Err(self.err(
                        span,
                        format!("{name} needs at least two arguments, found {}", args.len()),
                    ));
                }
                let mut out = Vec::new();
                let mut failed = false;
                for a in args {
                    match self.num_arg(a, name) {
                        Ok(x) => out.push(x),
                        Err(Failed) => failed = true,
                    }
                }
                if failed {
                    return Err(Failed);
                }
                let node = if f == ListFilter::Max {
                    Node::Max(out)
                } else {
                    Node::Min(out)
                };
                self.mk(node, Kind::Numeric, span)
            }
            ListFilter::Comment | ListFilter::Message | ListFilter::MessageQuiet => {
                if args.is_empty() {
                    let name = if f == ListFilter::Comment {
                        "comment"
                    } else {
                        "message"
                    };
                    return Err(self.err(
                        span,
                        format!("`{name} ()` is empty: give at least one argument, e.g. `{name} (\"text\")`"),
                    ));
                }
                let mut out = Vec::new();
                let mut failed = false;
                for a in args {
                    match self.sub(a) {
                        Ok(x) => out.push(x),
                        Err(Failed) => failed = true,
                    }
                }
                if failed {
                    return Err(Failed);
                }
                let node = match f {
                    ListFilter::Comment => Node::Comment(out),
                    _ => Node::Message {
                        args: out,
                        quiet: f == ListFilter::MessageQuiet,
                    },
                };
                self.mk(node, Kind::Logical, span)
            }
        }
    }

    fn fen(&mut self, text: &str, span: Span) -> LResult {
        let board = text.split_whitespace().next().unwrap_or("");
        let ranks: Vec<&str> = board.split('/').collect();
        if ranks.len() != 8 {
            return Err(self.err(
                span,
                format!(
                    "bad FEN: the board needs 8 ranks separated by `/`, found {}",
                    ranks.len()
                ),
            ));
        }
        let mut squares: Vec<(PieceSet, u32)> = Vec::new();
        for (i, r) in ranks.iter().enumerate() {
            let y = 7 - i as u32;
            let mut x = 0u32;
            for c in r.chars() {
                if let Some(d) = c.to_digit(10) {
                    if !(1..=8).contains(&d) {
                        return Err(self.err(
                            span,
                            format!("bad FEN: `{c}` is not a number of empty squares (1 to 8)"),
                        ));
                    }
                    for k in 0..d {
                        squares.push((PieceSet::EMPTY_SQUARE, 8 * y + x + k));
                    }
                    x += d;
                } else if let Some(p) = "KQRBNPkqrbnp"
                    .contains(c)
                    .then(|| PieceSet::from_char(c))
                    .flatten()
                {
                    squares.push((p, 8 * y + x));
                    x += 1;
                } else {
                    return Err(self.err(span, format!("bad FEN: `{c}` is not a piece letter")));
                }
            }
            if x != 8 {
                return Err(self.err(
                    span,
                    format!("bad FEN: rank {} has {x} squares, not 8", 8 - i),
                ));
            }
        }
        let mut items = Vec::with_capacity(squares.len());
        for (p, sq) in squares {
            if sq >= 64 {
                return Err(self.err(span, "bad FEN: a rank is too long"));
            }
            let d = self.mk(
                Node::Piece {
                    pieces: p,
                    squares: Bitboard(1 << sq),
                },
                Kind::Set,
                span,
            )?;
            items.push(d);
        }
        if items.is_empty() {
            return Err(self.err(span, "bad FEN: empty board"));
        }
        self.balanced(Infix::And, items)
    }

    fn call(&mut self, name: &'a ast::Name, args: &'a [ast::Expr], span: Span) -> LResult {
        let Some(f) = self.functions.get(&name.name) else {
            return Err(self.err(name.span, format!("unknown function `{}`", name.name)));
        };
        let (params, body) = (f.params, f.body);
        if params.len() != args.len() {
            return Err(self.err(
                span,
                format!(
                    "function `{}` takes {} argument{}, but this call gives {}",
                    name.name,
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        if self.call_stack.contains(&name.name) {
            return Err(self.err(
                name.span,
                format!("function `{}` calls itself: recursive functions are not supported (calls are inlined)", name.name),
            ));
        }
        let mut bound = HashMap::new();
        let mut failed = false;
        for (p, a) in params.iter().zip(args) {
            match self.sub(a) {
                Ok(x) => {
                    bound.insert(p.name.clone(), x);
                }
                Err(Failed) => failed = true,
            }
        }
        if failed {
            return Err(Failed);
        }
        self.bindings.push(bound);
        self.call_stack.push(name.name.clone());
        let r = self.lower(body);
        self.call_stack.pop();
        self.bindings.pop();
        r
    }
}

/// Most constituents a `line` may expand to once its repetition counts are
/// unrolled (`{m,n}` repeats its constituent n times): the size of the
/// line's automaton.
pub(crate) const MAX_LINE_STATES: usize = 10_000;

/// How many constituents `items` expand to (saturating).
pub(crate) fn line_states(items: &[ir::LineItem]) -> usize {
    items
        .iter()
        .map(|it| {
            let one = match &it.atom {
                ir::LineAtom::Filter(_) | ir::LineAtom::Dash(_) => 1,
                ir::LineAtom::Group(g) => line_states(g),
            };
            let copies = match it.max {
                Some(m) => m.max(1) as usize,
                None => it.min.max(1) as usize,
            };
            one.saturating_mul(copies)
        })
        .fold(0usize, usize::saturating_add)
}

/// The kind of a keyword leaf.
/// The operands of an IR tree of the associative `op`, in order.
fn flatten_ir(op: Infix, e: Expr, out: &mut Vec<Expr>) {
    let (a, b) = match (op, e.node) {
        (Infix::And, Node::And(a, b)) | (Infix::Or, Node::Or(a, b)) => (a, b),
        (Infix::Set(o), Node::SetBinary(p, a, b)) if o == p => (a, b),
        (_, node) => {
            out.push(Expr { node, ..e });
            return;
        }
    };
    flatten_ir(op, *a, out);
    flatten_ir(op, *b, out);
}

/// The operands of a chain of `op`, looking through nested chains of the
/// same operator (parenthesised or not): `a or (b or c)` has three.
fn collect_leaves<'a>(op: Infix, e: &'a ast::Expr, out: &mut Vec<&'a ast::Expr>) {
    let mut inner = e;
    while let ExprKind::Paren(x) = &inner.kind {
        inner = x;
    }
    match &inner.kind {
        ExprKind::Infix(first, rest) if rest.iter().all(|(o, _)| *o == op) => {
            collect_leaves(op, first, out);
            for (_, x) in rest {
                collect_leaves(op, x, out);
            }
        }
        _ => out.push(e),
    }
}

/// Whether a path constituent is a move dash that consumes a move: a dash
/// over the game's moves, yielding its destinations (not `legal`,
/// `currentmove` or `countmoves`).
pub(crate) fn is_path_dash(e: &ast::Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Dash {
            source: ir::MoveSource::Played,
            value: ir::MoveValue::Destinations,
            ..
        }
    )
}

fn leaf_kind(n: &Node) -> Kind {
    match n {
        Node::Bool(_) => Kind::Logical,
        Node::PawnStructure(_)
        | Node::MateType(_)
        | Node::EnPassantSquare
        | Node::CurrentMove(ir::CurrentMoveFact::From | ir::CurrentMoveFact::To) => Kind::Set,
        Node::CurrentMove(_) => Kind::Logical,
        Node::Ply
        | Node::MoveNumber
        | Node::GameNumber
        | Node::LastGameNumber
        | Node::Year
        | Node::SideToMove
        | Node::SideConst(_)
        | Node::Elo(_) => Kind::Numeric,
        Node::Tag(_) | Node::TagNamed(_) | Node::Player(_) | Node::CurrentTransform => Kind::String,
        Node::CurrentPosition => Kind::Position,
        Node::TreeLeaf(l) => l.kind(),
        Node::PathStatus(ir::PathStatus::Count | ir::PathStatus::CountUnfocused) => Kind::Numeric,
        Node::PathStatus(_) => Kind::Position,
        Node::Builtin(ir::Builtin::GroupIndex(_), _) => Kind::Numeric,
        Node::Builtin(ir::Builtin::Hhdb(f), _) => f.kind(),
        Node::Builtin(ir::Builtin::RemoveComment, _) => Kind::Logical,
        Node::Builtin(ir::Builtin::Abort, _) => Kind::Logical,
        Node::Builtin(..) => Kind::String,
        _ => Kind::Logical,
    }
}

/// Whether `e` is a dash over the game's moves (or `currentmove`'s)
/// without a value of its own (`R--f1`, `--`, `[x]`; not `R--f1(from)`,
/// not `legal R--f1`),
/// alone, as an operand of an attack arrow (cqlj reads `R--f1 -> k` as
/// the arrow, CQL 6.2 as the dash `R--(f1 -> k)`: they match at the same
/// positions), or as the value of a block or a transform. CQL 6.2 refuses
/// such a dash where a set, a number, a string or a position is needed
/// (`x = R--f1`, `#(R--f1)`, `R--f1 > 0`, `sort R--f1`, `f1 in R--f1`,
/// `x = flipcolor R--f1`, `x = (R--f1 -> k)`: oracle). Its value is the
/// moves' destinations elsewhere in cqlj's IR (a path's constituent, a
/// `line`'s).
fn valueless_dash(e: &Expr) -> bool {
    match &e.node {
        Node::Move(m) => {
            m.dash
                && matches!(m.source, ir::MoveSource::Played | ir::MoveSource::Previous)
                && m.value == ir::MoveValue::Destinations
        }
        Node::Block(items) => items.last().is_some_and(valueless_dash),
        Node::Transform {
            count: false, body, ..
        } => valueless_dash(body),
        // An attack arrow with a dash operand (`R--f1 -> k`): CQL 6.2 reads
        // it as a dash.
        Node::Attacks(x, y) | Node::AttackedBy(x, y) => valueless_dash(x) || valueless_dash(y),
        Node::Ray { args, .. } => args.iter().any(valueless_dash),
        _ => false,
    }
}
