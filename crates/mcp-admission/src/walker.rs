//! The whitelist walker: collects free-form keys, map channels and unresolvable channels.
//!
//! It recognises properties, patternProperties, additionalProperties,
//! allOf/anyOf/oneOf, if/then/else/not, items/prefixItems and local `$ref`.
//! `$defs`/definitions entries are walked when a `$ref` reaches them, as the
//! original does (an unreferenced entry constrains no instance); their shape
//! is still checked. Any other keyword whose value could carry a subschema
//! makes the walk unresolvable. A position holding a value of the wrong JSON
//! type where a schema, a list of schemas or a mapping of schemas belongs is
//! malformed, which denies with `malformed-schema` when nothing else does.

use crate::engine::{Engine, Seg};
use crate::node::{Arr, Node, Obj, View};
use std::borrow::Cow;

use crate::normalize::{
    CODE_CHANNEL_KEYS, KeyCategories, is_exec_tainted_key, is_identifier_like_key,
    normalize_key_cow,
};
use crate::pattern;
use crate::report::{FreeFormKey, Unresolved, UnresolvedCause};
use crate::vocabulary::{
    ARGUMENT_KEYS, COMMAND_KEYS, PAYLOAD_KEYS, PROGRAM_KEYS, SELECTOR_KEYS,
    UNRESOLVABLE_REFERENCE_KEYWORDS, walker_recognises,
};

impl<'a, N: Node<'a>> Engine<'a, N> {
    /// Walks the whole schema from the root.
    pub(crate) fn walk_root(&mut self, root: N) {
        if root.is_bool(true) {
            // `true` at the root accepts any input at all: no channel of it is
            // provably bounded. `false` accepts nothing.
            self.unresolved(UnresolvedCause::Malformed(
                "root schema true accepts anything".to_owned(),
            ));
        } else {
            self.walk(root, 0);
        }
        self.judge_pending_required();
    }

    /// Records a malformed position (also an unresolvable channel).
    pub(crate) fn malformed(&mut self, what: &str) {
        self.found.malformed = true;
        if !self.detailed {
            self.found.unresolved = true;
            return;
        }
        let path = self.pointer();
        if self.malformed.len() < 64 {
            self.malformed.push(Unresolved {
                path,
                cause: UnresolvedCause::Malformed(what.to_owned()),
            });
        }
        self.unresolved(UnresolvedCause::Malformed(what.to_owned()));
    }

    /// Records a free-form map channel at the current location.
    fn map_channel(&mut self) {
        self.found.map_channel = true;
        if self.detailed {
            let path = self.pointer();
            self.map_channels.push(path);
        }
    }

    /// Judges required names that no walked `properties` map declares.
    fn judge_pending_required(&mut self) {
        let pending = std::mem::take(&mut self.pending_required);
        if pending.is_empty() {
            return;
        }
        self.declared_keys.sort_unstable();
        self.declared_keys.dedup();
        for (name, governing, path, depth) in pending {
            if self.declared_keys.binary_search(&name).is_ok() {
                continue;
            }
            if !self.charge() {
                self.unresolved(UnresolvedCause::NodeBudget);
                return;
            }
            let saved = std::mem::replace(&mut self.path, path);
            self.classify_property(name, normalize_key_cow(name), governing, depth);
            self.path = saved;
        }
    }

    /// Walks one schema node, charging one reach unit for it.
    fn walk(&mut self, node: N, depth: usize) {
        if !self.charge() {
            self.unresolved(UnresolvedCause::NodeBudget);
            return;
        }
        self.walk_node(node, depth);
    }

    /// Walks one schema node whose reach unit is already paid (a property
    /// value is paid for with its property).
    fn walk_node(&mut self, node: N, depth: usize) {
        if self.too_deep(depth) {
            self.unresolved(UnresolvedCause::DepthLimit);
            return;
        }
        let m = match node.view() {
            View::Object(m) => m,
            View::Bool(_) => return,
            _ => {
                self.malformed("schema");
                return;
            }
        };
        // This node's own `properties`, once every key of it is declared.
        let mut own_declared: Option<N::Obj> = None;
        for (k, v) in m.iter() {
            // Every keyword costs a unit of work, so a node with a million
            // scalar keywords is as bounded as one with a million branches.
            if !self.charge_work() {
                self.unresolved(UnresolvedCause::NodeBudget);
                return;
            }
            self.push(Seg::Key(k));
            match k {
                "$ref" => self.walk_ref(v, depth),
                "type" => self.check_type_shape(v),
                "properties" => match v.view() {
                    View::Object(props) => {
                        let mut all = true;
                        for (pk, pv) in props.iter() {
                            if self.exhausted || !self.charge() {
                                self.unresolved(UnresolvedCause::NodeBudget);
                                all = false;
                                break;
                            }
                            self.declared_keys.push(pk);
                            self.push(Seg::Key(pk));
                            self.consider_property(pk, pv, depth + 1);
                            self.pop();
                        }
                        if all {
                            own_declared = Some(props);
                        }
                    }
                    _ => self.malformed("properties"),
                },
                "patternProperties" => match v.view() {
                    View::Object(props) => {
                        for (pattern, pv) in props.iter() {
                            if self.exhausted || !self.charge() {
                                self.unresolved(UnresolvedCause::NodeBudget);
                                break;
                            }
                            self.push(Seg::Key(pattern));
                            self.consider_pattern(pattern, pv, depth + 1);
                            self.pop();
                        }
                    }
                    _ => self.malformed("patternProperties"),
                },
                "additionalProperties" => match v.view() {
                    View::Bool(true) => self.map_channel(),
                    View::Bool(false) => {}
                    View::Object(_) => {
                        // No key names the entries, so an untyped value
                        // (`{}`, or one with only object keywords, which do
                        // not constrain a string) admits anything: a
                        // free-form map.
                        if untyped_and_unconstrained(v)
                            || self.value_free_form(true, v, depth + 1).is_some()
                        {
                            self.map_channel();
                        }
                        self.walk(v, depth + 1);
                    }
                    _ => self.malformed("additionalProperties"),
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => match v.view() {
                    View::Array(branches) => self.walk_list(branches, depth),
                    _ => self.malformed(k),
                },
                "items" => match v.view() {
                    View::Array(branches) => self.walk_list(branches, depth),
                    _ => self.walk(v, depth + 1),
                },
                "if" | "then" | "else" | "not" => self.walk(v, depth + 1),
                "required" => self.consider_required(m, v, depth, own_declared),
                // Entries are walked when a `$ref` reaches them; their shape
                // is checked here.
                "$defs" | "definitions" => match v.view() {
                    View::Object(defs) => {
                        for (dk, dv) in defs.iter() {
                            if !matches!(dv.view(), View::Object(_) | View::Bool(_)) {
                                self.push(Seg::Key(dk));
                                self.malformed("definition");
                                self.pop();
                            }
                        }
                    }
                    _ => self.malformed(k),
                },
                // Whitelist enforcement, on containers and leaves alike.
                _ => self.check_other_keyword(k, v, depth),
            }
            self.pop();
        }
    }

    /// A required name that no `properties` map declares is still a key the
    /// instance carries; its value is governed by `additionalProperties`
    /// (absent means anything), so it is judged like a declared key once the
    /// walk knows every declared key (a branch that only lists `required`
    /// names declared elsewhere adds nothing).
    ///
    /// `own_declared` is the node's own `properties` when all its keys are
    /// declared already: a name among them is skipped here rather than after
    /// the walk (the same outcome, without saving the location).
    fn consider_required(
        &mut self,
        m: N::Obj,
        required: N,
        depth: usize,
        own_declared: Option<N::Obj>,
    ) {
        let Some(names) = required.as_array() else {
            return;
        };
        let governing = match m.get("additionalProperties") {
            None => self.root.any_schema(),
            Some(v) if v.is_bool(false) => return,
            Some(other) => other,
        };
        for name in names.iter() {
            if !self.charge_work() {
                self.unresolved(UnresolvedCause::NodeBudget);
                return;
            }
            let Some(name) = name.as_str() else { continue };
            if own_declared.is_some_and(|props| props.contains_key(name)) {
                continue;
            }
            let mut path = self.path.clone();
            path.push(Seg::Key(name));
            self.pending_required
                .push((name, governing, path, depth + 1));
        }
    }

    /// A `type` whose value (or a member of whose list) is a list or a
    /// mapping makes the original raise: malformed.
    fn check_type_shape(&mut self, v: N) {
        let bad = match v.view() {
            View::Object(_) => true,
            View::Array(members) => members
                .iter()
                .any(|t| matches!(t.view(), View::Array(_) | View::Object(_))),
            _ => false,
        };
        if bad {
            self.malformed("type");
        }
    }

    /// Walks each branch of a list; a branch costs a reach unit besides
    /// its node, as in the original.
    fn walk_list(&mut self, branches: N::Arr, depth: usize) {
        for (i, branch) in branches.iter().enumerate() {
            if self.exhausted || !self.charge() {
                self.unresolved(UnresolvedCause::NodeBudget);
                break;
            }
            self.push(Seg::Index(i));
            self.walk(branch, depth + 1);
            self.pop();
        }
    }

    /// Follows a local `$ref` to every node either pointer reading reaches
    /// (an unreachable reading is unresolvable); a target reached again
    /// while it is being walked is a cycle (unresolvable).
    ///
    /// Each reference costs a reach unit. A target already walked at this
    /// depth or shallower is not walked again (the depth cap only cuts a
    /// deeper walk shorter), but the units that walk cost are charged
    /// again, as the original charges every re-walked reference; a target
    /// reached shallower than before is walked again.
    fn walk_ref(&mut self, v: N, depth: usize) {
        let Some(reference) = v.as_str() else {
            self.malformed("$ref");
            return;
        };
        let (targets, failure) = self.resolve_readings(reference);
        if let Some(cause) = failure {
            self.unresolved(cause);
        }
        for target in targets.iter() {
            let key = target.id();
            if self.memo.walking.contains(&key) {
                self.unresolved(UnresolvedCause::CyclicReference(reference.to_owned()));
                continue;
            }
            if !self.charge() {
                self.unresolved(UnresolvedCause::NodeBudget);
                return;
            }
            if let Some(&(walked_at, cost)) = self.memo.walked.get(&key)
                && walked_at <= depth
            {
                if !self.charge_n(cost) {
                    self.unresolved(UnresolvedCause::NodeBudget);
                    return;
                }
                continue;
            }
            let before = self.used_in_pass();
            self.memo.walking.insert(key);
            self.push(Seg::Ref(reference));
            self.walk(target, depth + 1);
            self.pop();
            self.memo.walking.remove(&key);
            let cost = self.used_in_pass().saturating_sub(before);
            self.memo.walked.insert(key, (depth, cost));
        }
    }

    /// Whitelist enforcement for one keyword the walker does not walk (the
    /// current location already ends at the keyword).
    fn check_other_keyword(&mut self, k: &'a str, v: N, depth: usize) {
        if UNRESOLVABLE_REFERENCE_KEYWORDS.contains(&k) {
            self.unresolved(UnresolvedCause::DynamicReference(k.to_owned()));
        } else if !walker_recognises(k)
            && !self.vendor_annotation(k, v, depth)
            && self.could_carry_subschema(v, depth)
        {
            self.unresolved(UnresolvedCause::UnknownKeyword(k.to_owned()));
        }
    }

    /// Classifies one declared property by its key, then walks its value.
    fn consider_property(&mut self, key: &'a str, v: N, depth: usize) {
        self.classify_property(key, normalize_key_cow(key), v, depth);
        self.walk_property_value(v, depth);
    }

    /// Walks a property's value: paid for with its property, unless it is
    /// a container (object, composition, conditional, reference or array
    /// keywords), whose walk costs a unit of its own, as in the original.
    fn walk_property_value(&mut self, v: N, depth: usize) {
        match v.view() {
            View::Object(m) if is_container(m) => self.walk(v, depth),
            View::Object(_) => self.walk_node(v, depth),
            View::Bool(_) => {}
            _ => self.malformed("property schema"),
        }
    }

    /// Records `key` as free-form when its value is.
    fn classify_property(&mut self, key: &str, normalized: Cow<'_, str>, v: N, depth: usize) {
        let categories = KeyCategories::of(&normalized);
        if categories.selector {
            self.selector_present = true;
        }
        // An untyped value under an exec-tainted key is as free-form as one
        // under a categorised key: the key itself names an executor channel.
        let exec_tainted = is_exec_tainted_key(&normalized);
        let untyped_counts = categories.any() || exec_tainted;
        let free = self.value_free_form(untyped_counts, v, depth);
        // The strict policy: a code channel whose value admits any string.
        if self.strict
            && !self.found.code_channel
            && CODE_CHANNEL_KEYS.contains(&&*normalized)
            && (if untyped_counts {
                free.is_some()
            } else {
                self.value_free_form(true, v, depth).is_some()
            })
        {
            self.found.code_channel = true;
        }
        if let Some(cause) = free {
            let identifier_like = is_identifier_like_key(&normalized);
            self.found
                .free_form(&categories, identifier_like, exec_tainted);
            if self.detailed {
                let path = self.pointer();
                self.free_form.push(FreeFormKey {
                    key: key.to_owned(),
                    identifier_like,
                    exec_tainted,
                    normalized: normalized.into_owned(),
                    path,
                    categories,
                    cause,
                });
            }
        }
    }

    /// A `patternProperties` entry: the keys it may match are judged as
    /// declared keys. With the `regex` feature the pattern is read as Python's
    /// `re` reads it and searched in every spelling of every categorised key
    /// word. A pattern that cannot be judged exactly (Python rejects it, the
    /// linear engine cannot express it, the feature is off or the budget ran
    /// out) is unresolvable and fails closed: it counts as matching every
    /// categorised key word, and its literal text is judged as a key too.
    fn consider_pattern(&mut self, pattern_text: &'a str, v: N, depth: usize) {
        match pattern::matching_key_words(self, pattern_text) {
            Ok(words) => {
                for word in words {
                    self.classify_property(pattern_text, Cow::Borrowed(word), v, depth);
                }
            }
            Err(unmatched) => {
                if unmatched == pattern::Unmatched::Raises {
                    // The original raises on it: a refusal.
                    self.malformed("pattern Python's re raises on");
                }
                self.unresolved(UnresolvedCause::Pattern(pattern_text.to_owned()));
                for word in REPRESENTATIVE_KEY_WORDS {
                    self.classify_property(pattern_text, Cow::Borrowed(word), v, depth);
                }
            }
        }
        // The keys it matches beyond the key words are uncategorised, and its
        // literal text may itself be a key (`^command_line$`).
        self.classify_property(pattern_text, Cow::Borrowed(""), v, depth);
        self.classify_property(pattern_text, normalize_key_cow(pattern_text), v, depth);
        self.walk_property_value(v, depth);
    }
}

/// One key word of each category a pattern may hide: command, program,
/// argument, payload, selector.
const REPRESENTATIVE_KEY_WORDS: [&str; 5] = [
    COMMAND_KEYS[0],
    PROGRAM_KEYS[0],
    ARGUMENT_KEYS[0],
    PAYLOAD_KEYS[0],
    SELECTOR_KEYS[0],
];

/// A property value the original walks as a schema of its own (and
/// charges for): one with object, composition, conditional, reference or
/// array-item keywords.
fn is_container<'a, O: Obj<'a>>(m: O) -> bool {
    // One pass over the (few) keywords rather than a lookup per name.
    m.iter().any(|(k, _)| {
        matches!(
            k,
            "properties"
                | "patternProperties"
                | "additionalProperties"
                | "$ref"
                | "allOf"
                | "anyOf"
                | "oneOf"
                | "if"
                | "then"
                | "else"
                | "not"
                | "items"
                | "prefixItems"
        )
    })
}

/// An untyped, unpinned schema with no `$ref`, composition or conditional:
/// object keywords alone (properties, ...) leave a string unconstrained.
pub(crate) fn untyped_and_unconstrained<'a, N: Node<'a>>(v: N) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    ![
        "type",
        "enum",
        "const",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "if",
        "then",
        "else",
        "not",
        "$dynamicRef",
        "$recursiveRef",
    ]
    .iter()
    .any(|k| m.contains_key(k))
}
