//! The bounded analysis context: budget, depth, path, `$ref` resolution and memo tables.
//!
//! One `Engine` judges one schema, in up to three passes (the walker, the
//! structural-coverage proof, the object-boundedness proof), as the original
//! does. Each pass has its own reach budget of `Limits::max_nodes` units,
//! charged per schema node and per property or branch (and, in the walker,
//! per element of an unknown keyword's value); once a pass's budget runs out
//! every question in it answers the fail-closed way. Work that does not widen
//! the reach (iterating a node's keywords, judging a value as free-form,
//! resolving a pointer, compiling and searching a pattern) is charged to a
//! separate work meter of [`WORK_FACTOR`] times the budget, shared by all
//! passes, which also fails closed when spent: it keeps every verdict
//! bounded in time without shortening the reach. Memo tables are keyed by
//! node identity ([`Node::id`]: a `Value`'s address, an arena node's index)
//! and only ever looked up, never iterated, so no verdict
//! depends on map order.

use std::collections::{BTreeMap, BTreeSet};

use crate::node::{Arr, Node, Obj, View};

use crate::report::{FreeFormKey, Limits, Unresolved, UnresolvedCause};
use crate::vocabulary::UNBOUNDED_NON_OBJECT_TYPES;

/// The deepest `Limits::max_depth` honoured, whatever is configured.
pub(crate) const MAX_DEPTH_CEILING: usize = 128;

/// The work meter's size, as a multiple of the per-pass reach budget.
pub(crate) const WORK_FACTOR: usize = 64;

/// One segment of the location being examined.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
    Ref(&'a str),
}

/// Memo tables, all keyed by node identity ([`Node::id`]).
///
/// A result is remembered with the depth it was found at (a target reached
/// at two depths is judged at each, as the original judges it: the depth
/// cap cuts the deeper reading) and, where a pass's reach budget paid for
/// it, with the units it cost: a memo hit charges them again, as the
/// original charges every re-walked reference.
#[derive(Default)]
pub(crate) struct Memo {
    /// Walked `$ref` targets: the shallowest depth walked at and its cost.
    pub(crate) walked: BTreeMap<usize, (usize, usize)>,
    pub(crate) walking: BTreeSet<usize>,
    pub(crate) free_form: BTreeMap<(usize, bool, usize), Option<crate::report::FreeFormCause>>,
    pub(crate) free_form_active: BTreeSet<(usize, bool)>,
    pub(crate) item: BTreeMap<(usize, usize), bool>,
    pub(crate) item_active: BTreeSet<usize>,
    pub(crate) bounded_obj:
        BTreeMap<(usize, usize), (Result<(), crate::report::Insufficiency>, usize)>,
    pub(crate) bounded_obj_active: BTreeSet<usize>,
    pub(crate) coverage:
        BTreeMap<(usize, usize), (Result<(), crate::report::Insufficiency>, usize)>,
    pub(crate) coverage_active: BTreeSet<usize>,
}

/// The nodes a local `$ref` names. The original reads a pointer its own
/// way (empty segments skipped, no list index followed) where RFC 6901
/// follows both; the gate follows every node either reading reaches, so a
/// channel neither reader misses is hidden from the gate.
#[derive(Clone, Copy)]
pub(crate) struct Targets<N> {
    first: Option<N>,
    second: Option<N>,
}

impl<N: Copy> Targets<N> {
    /// Every distinct target (one or two).
    pub(crate) fn iter(self) -> impl Iterator<Item = N> {
        self.first.into_iter().chain(self.second)
    }
}

/// The analysis state of one verdict.
pub(crate) struct Engine<'a, N: Node<'a>> {
    pub(crate) root: N,
    pub(crate) limits: Limits,
    /// Reach units spent by the current pass.
    used: usize,
    /// The most reach units any pass spent.
    peak: usize,
    /// Work units spent by all passes.
    work: usize,
    /// The current pass (or the shared work meter) ran out.
    pub(crate) exhausted: bool,
    pub(crate) path: Vec<Seg<'a>>,
    pub(crate) memo: Memo,
    pub(crate) free_form: Vec<FreeFormKey>,
    pub(crate) map_channels: Vec<String>,
    pub(crate) unresolved: Vec<Unresolved>,
    /// Positions whose value has the wrong JSON type (at most 64).
    pub(crate) malformed: Vec<Unresolved>,
    pub(crate) selector_present: bool,
    /// Every key some walked `properties` map declares (sorted and
    /// deduplicated only when a required name needs looking up).
    pub(crate) declared_keys: Vec<&'a str>,
    /// Required names undeclared where they are required: (name, governing
    /// value schema, location, depth), judged after the walk.
    pub(crate) pending_required: Vec<(&'a str, N, Vec<Seg<'a>>, usize)>,
    /// Whether the report's lists (keys, paths, causes) are kept. A plain
    /// verdict needs only [`Found`], so it builds no strings on the way.
    pub(crate) detailed: bool,
    /// What the classifier reads, kept in both modes.
    pub(crate) found: Found,
    /// Whether the strict policy's code channels are looked for.
    pub(crate) strict: bool,
}

/// What the classifier reads of a walk: kept whether or not the report's
/// lists are, so a plain verdict and an explained one always agree.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Found {
    /// Some free-form key is a command key.
    pub(crate) command: bool,
    /// Some free-form key is a program key.
    pub(crate) program: bool,
    /// Some free-form key is an argument key.
    pub(crate) argument: bool,
    /// Some free-form key is a payload key.
    pub(crate) payload: bool,
    /// Some free-form key is not auxiliary, or is exec-tainted (the
    /// description rule).
    pub(crate) broad: bool,
    /// Some free-form key is neither auxiliary nor identifier-like, or is
    /// exec-tainted (the strong-name rule).
    pub(crate) identity: bool,
    /// Some channel is unresolvable.
    pub(crate) unresolved: bool,
    /// Some position is malformed.
    pub(crate) malformed: bool,
    /// Some free-form map channel.
    pub(crate) map_channel: bool,
    /// Some code channel key (code, script, source, program, input, file,
    /// file_path) is free-form (looked for under the strict policy only).
    pub(crate) code_channel: bool,
}

impl Found {
    /// Notes one free-form key.
    pub(crate) fn free_form(
        &mut self,
        categories: &crate::normalize::KeyCategories,
        identifier_like: bool,
        exec_tainted: bool,
    ) {
        self.command |= categories.command;
        self.program |= categories.program;
        self.argument |= categories.argument;
        self.payload |= categories.payload;
        self.broad |= !categories.auxiliary || exec_tainted;
        self.identity |= (!categories.auxiliary && !identifier_like) || exec_tainted;
    }
}

impl<'a, N: Node<'a>> Engine<'a, N> {
    /// An engine keeping every detail of the report.
    pub(crate) fn new(root: N, limits: Limits) -> Self {
        Self::with_detail(root, limits, true)
    }

    /// An engine keeping the report's lists only when `detailed`.
    pub(crate) fn with_detail(root: N, limits: Limits, detailed: bool) -> Self {
        // Recursion depth follows `max_depth`; a ceiling keeps a careless
        // configuration from trading the depth cap for a stack overflow.
        let limits = Limits {
            max_depth: limits.max_depth.min(MAX_DEPTH_CEILING),
            ..limits
        };
        Self {
            root,
            limits,
            used: 0,
            peak: 0,
            work: 0,
            exhausted: false,
            path: Vec::new(),
            memo: Memo::default(),
            free_form: Vec::new(),
            map_channels: Vec::new(),
            unresolved: Vec::new(),
            malformed: Vec::new(),
            selector_present: false,
            declared_keys: Vec::new(),
            pending_required: Vec::new(),
            detailed,
            found: Found::default(),
            strict: false,
        }
    }

    /// The most reach units any pass spent (never more than the budget).
    pub(crate) fn used(&self) -> usize {
        self.peak.max(self.used)
    }

    fn work_cap(&self) -> usize {
        self.limits.max_nodes.saturating_mul(WORK_FACTOR)
    }

    /// Starts a new pass with a fresh reach budget (the work meter carries on).
    pub(crate) fn begin_pass(&mut self) {
        self.peak = self.peak.max(self.used);
        self.used = 0;
        self.exhausted = self.work >= self.work_cap();
    }

    /// Charges one reach unit (and one work unit); false once either runs out.
    pub(crate) fn charge(&mut self) -> bool {
        if self.used >= self.limits.max_nodes || !self.charge_work() {
            self.exhausted = true;
            false
        } else {
            self.used += 1;
            true
        }
    }

    /// Charges `n` reach units at once (a memo hit paying for the walk it
    /// stands for); false once the pass's budget or the work meter runs out.
    pub(crate) fn charge_n(&mut self, n: usize) -> bool {
        if self.limits.max_nodes.saturating_sub(self.used) < n || !self.charge_work_n(n) {
            self.exhausted = true;
            false
        } else {
            self.used += n;
            true
        }
    }

    /// Reach units spent so far by the current pass.
    pub(crate) fn used_in_pass(&self) -> usize {
        self.used
    }

    /// Charges one work unit; false once the work meter is spent.
    pub(crate) fn charge_work(&mut self) -> bool {
        self.charge_work_n(1)
    }

    /// Charges `n` work units at once (pointer resolution, pattern compilation).
    pub(crate) fn charge_work_n(&mut self, n: usize) -> bool {
        if self.work_cap().saturating_sub(self.work) < n {
            self.work = self.work_cap();
            self.exhausted = true;
            false
        } else {
            self.work += n;
            true
        }
    }

    pub(crate) fn too_deep(&self, depth: usize) -> bool {
        depth > self.limits.max_depth
    }

    pub(crate) fn push(&mut self, seg: Seg<'a>) {
        self.path.push(seg);
    }

    pub(crate) fn pop(&mut self) {
        self.path.pop();
    }

    /// Renders the current location as a JSON pointer (a `$ref` hop shows as `$ref=<target>`).
    pub(crate) fn pointer(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            out.push('/');
            match seg {
                Seg::Key(k) if !k.contains(['~', '/']) => out.push_str(k),
                Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
                Seg::Index(i) => out.push_str(&i.to_string()),
                Seg::Ref(r) => {
                    out.push_str("$ref=");
                    out.push_str(r);
                }
            }
        }
        out
    }

    pub(crate) fn unresolved(&mut self, cause: UnresolvedCause) {
        self.found.unresolved = true;
        if !self.detailed {
            return;
        }
        let path = self.pointer();
        // One record per (path, cause), at most 64, keeps reports small on wide inputs.
        let duplicate = self
            .unresolved
            .iter()
            .any(|u| u.path == path && u.cause == cause);
        if self.unresolved.len() < 64 && !duplicate {
            self.unresolved.push(Unresolved { path, cause });
        }
    }

    /// True when a local `$ref` names a schema that contains the current
    /// location (the root, or an ancestor): following it from here loops,
    /// as the original's cycle check sees it.
    pub(crate) fn ref_is_ancestor(&self, reference: &str) -> bool {
        let Some(fragment) = reference.strip_prefix('#') else {
            return false;
        };
        if fragment.is_empty() {
            return true;
        }
        if !fragment.starts_with('/') {
            return false;
        }
        // The document location: the last `$ref` hop's target, then the
        // segments after it; compared token by token without allocating.
        let start = self
            .path
            .iter()
            .rposition(|s| matches!(s, Seg::Ref(_)))
            .map_or(0, |i| i + 1);
        let base: &str = match start.checked_sub(1).map(|i| &self.path[i]) {
            Some(Seg::Ref(r)) => r.strip_prefix('#').unwrap_or(""),
            _ => "",
        };
        let here = || {
            base.split('/')
                .skip(1)
                .map(Token::Escaped)
                .chain(self.path[start..].iter().filter_map(|seg| match seg {
                    Seg::Key(k) => Some(Token::Raw(k)),
                    Seg::Index(i) => Some(Token::Index(*i)),
                    Seg::Ref(_) => None,
                }))
        };
        let mut rfc = here();
        if fragment
            .split('/')
            .skip(1)
            .all(|t| rfc.next().is_some_and(|h| h.equals_escaped(t)))
        {
            return true;
        }
        // The original's reading: empty segments skipped on both sides (the
        // same comparison when there are none).
        let empty_segment = |p: &str| p.contains("//") || p.ends_with('/');
        if !empty_segment(fragment)
            && !empty_segment(base)
            && !self.path[start..].iter().any(|s| matches!(s, Seg::Key("")))
        {
            return false;
        }
        let mut original = here().filter(|t| !matches!(t, Token::Escaped("") | Token::Raw("")));
        fragment
            .split('/')
            .filter(|t| !t.is_empty())
            .all(|t| original.next().is_some_and(|h| h.equals_escaped(t)))
    }

    /// Resolves a local JSON-pointer `$ref` against the document root, both
    /// ways (see [`Targets`]): the targets either reading reaches, and why
    /// some reading reaches none.
    ///
    /// Only `#` and `#/...` resolve; the pointer is not percent-decoded
    /// (neither reader decodes it).
    pub(crate) fn resolve_readings(
        &mut self,
        reference: &str,
    ) -> (Targets<N>, Option<UnresolvedCause>) {
        let none = Targets {
            first: None,
            second: None,
        };
        let Some(fragment) = reference.strip_prefix('#') else {
            return (
                none,
                Some(UnresolvedCause::ExternalReference(reference.to_owned())),
            );
        };
        if fragment.is_empty() {
            return (
                Targets {
                    first: Some(self.root),
                    second: None,
                },
                None,
            );
        }
        if !fragment.starts_with('/') {
            return (
                none,
                Some(UnresolvedCause::ExternalReference(reference.to_owned())),
            );
        }
        // Pointer traversal is linear in the pointer; charge per token, for
        // each reading.
        let tokens = fragment.matches('/').count();
        if !self.charge_work_n(2 * tokens.max(1)) {
            return (none, Some(UnresolvedCause::NodeBudget));
        }
        let rfc = pointer_get(self.root, fragment);
        let original = pointer_get_original(self.root, fragment);
        let failure = (rfc.is_none() || original.is_none())
            .then(|| UnresolvedCause::DanglingReference(reference.to_owned()));
        let second = match (rfc, original) {
            (Some(a), Some(b)) if a.id() != b.id() => Some(b),
            _ => None,
        };
        (
            Targets {
                first: rfc.or(original),
                second,
            },
            failure,
        )
    }

    /// [`Self::resolve_readings`], failing when either reading reaches nothing.
    pub(crate) fn resolve(&mut self, reference: &str) -> Result<Targets<N>, UnresolvedCause> {
        match self.resolve_readings(reference) {
            (_, Some(cause)) => Err(cause),
            (targets, None) => Ok(targets),
        }
    }
}

/// The original's reading of a JSON pointer: empty segments are skipped,
/// `~1` and `~0` unescaped, and only mapping members followed (a list
/// index reaches nothing).
pub(crate) fn pointer_get_original<'v, N: Node<'v>>(root: N, pointer: &str) -> Option<N> {
    pointer
        .split('/')
        .filter(|t| !t.is_empty())
        .try_fold(root, |target, token| {
            let token: std::borrow::Cow<'_, str> = if token.contains('~') {
                std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
            } else {
                std::borrow::Cow::Borrowed(token)
            };
            target.as_object()?.get(&token)
        })
}

/// `Value::pointer`, exactly (the same tokens, escapes and list indices),
/// without allocating for a token that holds no `~` escape.
pub(crate) fn pointer_get<'v, N: Node<'v>>(root: N, pointer: &str) -> Option<N> {
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    pointer.split('/').skip(1).try_fold(root, |target, token| {
        let token: std::borrow::Cow<'_, str> = if token.contains('~') {
            std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
        } else {
            std::borrow::Cow::Borrowed(token)
        };
        match target.view() {
            View::Object(map) => map.get(&token),
            View::Array(list) => {
                // As serde_json reads an index: no sign, no leading zero.
                if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                    None
                } else {
                    token.parse::<usize>().ok().and_then(|i| list.get(i))
                }
            }
            _ => None,
        }
    })
}

fn empty_list<'a, N: Node<'a>>(v: N) -> bool {
    v.as_array().is_some_and(Arr::is_empty)
}

/// One token of a document location.
enum Token<'t> {
    /// A JSON-pointer token as written (`~0`, `~1` escaped).
    Escaped(&'t str),
    /// A key as it is.
    Raw(&'t str),
    /// A list index.
    Index(usize),
}

impl Token<'_> {
    /// Equality with an escaped JSON-pointer token.
    fn equals_escaped(&self, token: &str) -> bool {
        fn unescaped(t: &str) -> std::borrow::Cow<'_, str> {
            if t.contains('~') {
                std::borrow::Cow::Owned(t.replace("~1", "/").replace("~0", "~"))
            } else {
                std::borrow::Cow::Borrowed(t)
            }
        }
        match self {
            Token::Escaped(t) => unescaped(t) == unescaped(token),
            Token::Raw(k) => *k == unescaped(token),
            Token::Index(i) => token.parse::<usize>().is_ok_and(|n| n == *i),
        }
    }
}

/// Declared types of a schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Types {
    Absent,
    Malformed,
    Known(TypeFlags),
}

/// Which JSON types a `type` keyword admits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TypeFlags {
    pub(crate) string: bool,
    pub(crate) number: bool,
    pub(crate) integer: bool,
    pub(crate) array: bool,
    pub(crate) object: bool,
    pub(crate) boolean: bool,
    pub(crate) null: bool,
}

impl TypeFlags {
    fn set(&mut self, name: &str) -> bool {
        match name {
            "string" => self.string = true,
            "number" => self.number = true,
            "integer" => self.integer = true,
            "array" => self.array = true,
            "object" => self.object = true,
            "boolean" => self.boolean = true,
            "null" => self.null = true,
            _ => return false,
        }
        true
    }

    /// True when a free-form non-object alternative is admitted.
    pub(crate) fn unbounded_non_object(&self) -> bool {
        debug_assert_eq!(UNBOUNDED_NON_OBJECT_TYPES.len(), 4);
        self.string || self.number || self.integer || self.array
    }

    /// True when the types are exactly "array" or "array" and "null".
    pub(crate) fn array_or_nullable_array(&self) -> bool {
        self.array && !(self.string || self.number || self.integer || self.object || self.boolean)
    }
}

/// The declared types of a schema object. An unknown type name or a
/// non-string entry makes the whole keyword malformed (fail closed: it may
/// admit anything).
pub(crate) fn types_of<'a, O: Obj<'a>>(m: O) -> Types {
    types_of_value(m.get("type"))
}

/// The declared types of a `type` keyword value.
pub(crate) fn types_of_value<'a, N: Node<'a>>(value: Option<N>) -> Types {
    let mut flags = TypeFlags::default();
    let Some(value) = value else {
        return Types::Absent;
    };
    match value.view() {
        View::String(s) => {
            if flags.set(s) {
                Types::Known(flags)
            } else {
                Types::Malformed
            }
        }
        View::Array(list) => {
            for t in list.iter() {
                match t.as_str() {
                    Some(s) if flags.set(s) => {}
                    _ => return Types::Malformed,
                }
            }
            Types::Known(flags)
        }
        _ => Types::Malformed,
    }
}

/// True when a top-level `const` or `enum` pins the instance.
pub(crate) fn pinned<'a, O: Obj<'a>>(m: O) -> bool {
    m.contains_key("const") || m.contains_key("enum")
}

/// The keywords of one schema object that the value judgements read,
/// gathered in a single pass (instead of a map lookup per question).
pub(crate) struct Shape<N> {
    pub(crate) types: Types,
    pub(crate) pinned: bool,
    pub(crate) dynamic_ref: bool,
    /// Carries a keyword that restates or composes a schema.
    pub(crate) container: bool,
    pub(crate) reference: Option<N>,
    /// allOf, anyOf, oneOf.
    pub(crate) lists: [Option<N>; 3],
    /// if, then, else, not.
    pub(crate) singles: [Option<N>; 4],
    pub(crate) items: Option<N>,
    pub(crate) prefix_items: Option<N>,
    pub(crate) unevaluated_items: Option<N>,
}

impl<N: Copy> Shape<N> {
    pub(crate) fn of<'a, O: Obj<'a, Node = N>>(m: O) -> Self
    where
        N: Node<'a>,
    {
        let mut shape = Shape {
            types: Types::Absent,
            pinned: false,
            dynamic_ref: false,
            container: false,
            reference: None,
            lists: [None; 3],
            singles: [None; 4],
            items: None,
            prefix_items: None,
            unevaluated_items: None,
        };
        for (k, v) in m.iter() {
            match k {
                "type" => shape.types = types_of_value(Some(v)),
                "const" | "enum" => shape.pinned = true,
                "$dynamicRef" | "$recursiveRef" => shape.dynamic_ref = true,
                "$ref" => {
                    shape.reference = Some(v);
                    shape.container = true;
                }
                // An empty list constrains nothing here (the original reads
                // `{"anyOf": []}` as an unconstrained leaf).
                "allOf" => (shape.lists[0], shape.container) = (Some(v), !empty_list(v)),
                "anyOf" => (shape.lists[1], shape.container) = (Some(v), !empty_list(v)),
                "oneOf" => (shape.lists[2], shape.container) = (Some(v), !empty_list(v)),
                "if" => (shape.singles[0], shape.container) = (Some(v), true),
                "then" => (shape.singles[1], shape.container) = (Some(v), true),
                "else" => (shape.singles[2], shape.container) = (Some(v), true),
                "not" => (shape.singles[3], shape.container) = (Some(v), true),
                "properties" | "patternProperties" | "additionalProperties" => {
                    shape.container = true;
                }
                "items" => shape.items = Some(v),
                "prefixItems" => shape.prefix_items = Some(v),
                "unevaluatedItems" => shape.unevaluated_items = Some(v),
                _ => {}
            }
        }
        shape
    }
}

#[cfg(test)]
mod tests;
