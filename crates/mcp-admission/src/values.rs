//! Value-level judgements: bounded, free-form, array reach, subschema shape, inertness.

use crate::engine::{Engine, Shape, Types};
use crate::node::{Arr, Node, Obj, View};
use crate::report::FreeFormCause;
use crate::vocabulary::{KeywordClass, classify_keyword};

impl<'a, N: Node<'a>> Engine<'a, N> {
    /// A property (or item) schema is bounded when `enum`/`const` pins it, or
    /// it is an array type (alone or with null) whose explicit `items` and
    /// every `prefixItems` member are `false` or bounded, and
    /// `unevaluatedItems` is absent or `false`.
    ///
    /// The original's bounded-array proof follows nested arrays past the
    /// depth cap (as far as Python's recursion limit lets it: about 25
    /// levels of objects and arrays together); this one follows them to
    /// twice the cap and fails closed beyond.
    pub(crate) fn bounded(&mut self, v: N, depth: usize) -> bool {
        if !self.charge_work() || depth > self.limits.max_depth.saturating_mul(2) {
            return false;
        }
        let Some(m) = v.as_object() else {
            return false;
        };
        self.bounded_shape(&Shape::of(m), depth)
    }

    pub(crate) fn bounded_shape(&mut self, shape: &Shape<N>, depth: usize) -> bool {
        if shape.pinned {
            return true;
        }
        match shape.types {
            Types::Known(types) if types.array_or_nullable_array() => {
                self.array_elements_bounded(shape, depth)
            }
            _ => false,
        }
    }

    /// The element half of the bounded-array proof (also the coverage exception).
    pub(crate) fn array_elements_bounded(&mut self, shape: &Shape<N>, depth: usize) -> bool {
        let member_ok =
            |this: &mut Self, member: N| member.is_bool(false) || this.bounded(member, depth + 1);
        match shape.items {
            Some(items) if matches!(items.view(), View::Bool(false) | View::Object(_)) => {
                if !member_ok(self, items) {
                    return false;
                }
            }
            _ => return false,
        }
        if let Some(prefix) = shape.prefix_items {
            let Some(members) = prefix.as_array() else {
                return false;
            };
            for member in members.iter() {
                if !member_ok(self, member) {
                    return false;
                }
            }
        }
        shape.unevaluated_items.is_none_or(|u| u.is_bool(false))
    }

    /// Whether a value under a key is free-form, and why.
    ///
    /// `category_key` is true when the key is in a key category (or is
    /// exec-tainted): an untyped leaf value under such a key is free-form.
    /// Composition, conditional and `$ref` branches constrain the same
    /// instance, so a free-form branch makes the key free-form whatever the
    /// node's own type says.
    pub(crate) fn value_free_form(
        &mut self,
        category_key: bool,
        v: N,
        depth: usize,
    ) -> Option<FreeFormCause> {
        self.value_free_form_at(category_key, v, depth, false)
    }

    /// [`Self::value_free_form`]; `branch` is true for a composition,
    /// conditional or `$ref` branch, where an untyped schema with only object
    /// keywords is a leaf (it admits any string), as in the original; the
    /// key's own schema with object keywords is a container instead.
    fn value_free_form_at(
        &mut self,
        category_key: bool,
        v: N,
        depth: usize,
        branch: bool,
    ) -> Option<FreeFormCause> {
        // A key of a node at the depth cap is still judged by the original
        // (its value one level past the cap); its branches are not.
        let limit = if branch {
            self.limits.max_depth
        } else {
            self.limits.max_depth + 1
        };
        if !self.charge_work() || depth > limit {
            return Some(FreeFormCause::LimitReached);
        }
        let m = match v.view() {
            View::Bool(true) => return Some(FreeFormCause::AnyValue),
            View::Bool(false) => return None,
            View::Object(m) => m,
            _ => return Some(FreeFormCause::Malformed),
        };
        let shape = Shape::of(m);
        if shape.dynamic_ref {
            return Some(FreeFormCause::UnresolvableReference);
        }
        // A bounded node's own type admits nothing free-form, but its
        // composition, conditional and `$ref` branches are still judged, as
        // in the original.
        if !self.bounded_shape(&shape, depth) {
            match shape.types {
                Types::Malformed => return Some(FreeFormCause::Malformed),
                Types::Known(t) => {
                    if t.string {
                        return Some(FreeFormCause::StringType);
                    }
                    // The key's own items sit at the key's depth.
                    if t.array && self.array_reaches(&shape, depth) {
                        return Some(FreeFormCause::ArrayReachesFreeForm);
                    }
                }
                Types::Absent => {
                    // A branch (of a composition, conditional or `$ref`)
                    // with no type and no pin admits any string to the
                    // original, whatever it composes in turn:
                    // `{"anyOf": [{"anyOf": [{"enum": ["a"]}]}]}` and a
                    // `$ref` to a `$ref` under a command key are free-form.
                    let leaf = !shape.container || branch;
                    if category_key && leaf {
                        return Some(FreeFormCause::UntypedCategoryKey);
                    }
                }
            }
        }
        for list in shape.lists.into_iter().flatten() {
            let Some(branches) = list.as_array() else {
                return Some(FreeFormCause::Malformed);
            };
            for branch in branches.iter() {
                if self
                    .value_free_form_at(category_key, branch, depth + 1, true)
                    .is_some()
                {
                    return Some(FreeFormCause::CompositionBranch);
                }
            }
        }
        // `not` admits everything its subschema refuses: it never bounds a
        // value (unless it refuses everything, `not: true`).
        if shape.singles[3].is_some_and(|n| !n.is_bool(true)) || open_conditional(&shape) {
            return Some(FreeFormCause::CompositionBranch);
        }
        for branch in shape.singles.into_iter().flatten() {
            if self
                .value_free_form_at(category_key, branch, depth + 1, true)
                .is_some()
            {
                return Some(FreeFormCause::CompositionBranch);
            }
        }
        if let Some(reference) = shape.reference {
            let Some(reference) = reference.as_str() else {
                return Some(FreeFormCause::Malformed);
            };
            if self.ref_is_ancestor(reference) {
                return Some(FreeFormCause::UnresolvableReference);
            }
            let Ok(targets) = self.resolve(reference) else {
                return Some(FreeFormCause::UnresolvableReference);
            };
            for target in targets.iter() {
                let key = (target.id(), category_key);
                if self.memo.free_form_active.contains(&key) {
                    return Some(FreeFormCause::UnresolvableReference);
                }
                // Remembered per depth: the depth cap may cut a deeper reading.
                let memo_key = (key.0, key.1, depth);
                let verdict = match self.memo.free_form.get(&memo_key) {
                    Some(cached) => *cached,
                    None => {
                        self.memo.free_form_active.insert(key);
                        let verdict =
                            self.value_free_form_at(category_key, target, depth + 1, true);
                        self.memo.free_form_active.remove(&key);
                        self.memo.free_form.insert(memo_key, verdict);
                        verdict
                    }
                };
                if verdict.is_some() {
                    return Some(FreeFormCause::CompositionBranch);
                }
            }
        }
        None
    }

    /// True when an array-shaped node admits a free-form element.
    ///
    /// A missing `items` means an unconstrained rest, so bounded `prefixItems`
    /// alone never bound the array.
    ///
    /// Its items are judged at `item_depth`: as the original counts them, a
    /// key's own items at the key's depth, and each array nested in an item
    /// two levels deeper than that item.
    fn array_reaches(&mut self, shape: &Shape<N>, item_depth: usize) -> bool {
        if let Some(prefix) = shape.prefix_items {
            let Some(members) = prefix.as_array() else {
                return true;
            };
            for member in members.iter() {
                if self.item_reaches(member, item_depth) {
                    return true;
                }
            }
        }
        match shape.items {
            None => true,
            Some(items) => self.item_reaches(items, item_depth),
        }
    }

    /// True when an item schema may admit an arbitrary string.
    ///
    /// Items are judged conservatively: `true`, malformed, over-limit,
    /// unpinned strings, arrays reaching one, untyped schemas whose branches
    /// reach one or that have no branch at all (they admit any string), and
    /// external or cyclic references all reach free form.
    fn item_reaches(&mut self, v: N, depth: usize) -> bool {
        if !self.charge_work() || self.too_deep(depth) {
            return true;
        }
        let m = match v.view() {
            View::Bool(b) => return b,
            View::Object(m) => m,
            _ => return true,
        };
        let shape = Shape::of(m);
        if shape.dynamic_ref {
            return true;
        }
        if self.bounded_shape(&shape, depth) {
            return false;
        }
        match shape.types {
            Types::Malformed => true,
            Types::Known(t) => t.string || (t.array && self.array_reaches(&shape, depth + 2)),
            Types::Absent => {
                let mut has_branch = false;
                for list in shape.lists.into_iter().flatten() {
                    let Some(branches) = list.as_array() else {
                        return true;
                    };
                    // An empty list constrains nothing (as the original reads it).
                    has_branch |= !branches.is_empty();
                    for branch in branches.iter() {
                        if self.item_reaches(branch, depth + 1) {
                            return true;
                        }
                    }
                }
                if shape.singles[3].is_some_and(|n| !n.is_bool(true)) || open_conditional(&shape) {
                    return true;
                }
                for branch in shape.singles.into_iter().flatten() {
                    has_branch = true;
                    if self.item_reaches(branch, depth + 1) {
                        return true;
                    }
                }
                if let Some(reference) = shape.reference {
                    has_branch = true;
                    let Some(reference) = reference.as_str() else {
                        return true;
                    };
                    if self.ref_is_ancestor(reference) {
                        return true;
                    }
                    let Ok(targets) = self.resolve(reference) else {
                        return true;
                    };
                    for target in targets.iter() {
                        let key = target.id();
                        if self.memo.item_active.contains(&key) {
                            return true;
                        }
                        let reaches = match self.memo.item.get(&(key, depth)) {
                            Some(cached) => *cached,
                            None => {
                                self.memo.item_active.insert(key);
                                let reaches = self.item_reaches(target, depth + 1);
                                self.memo.item_active.remove(&key);
                                self.memo.item.insert((key, depth), reaches);
                                reaches
                            }
                        };
                        if reaches {
                            return true;
                        }
                    }
                }
                // No type and nothing narrowing it: it admits any string.
                !has_branch
            }
        }
    }

    /// True when a value is shaped like it could hold a schema: a mapping, or
    /// a list containing one at any depth. Every element is charged; running
    /// out of budget or depth answers true (fail closed).
    pub(crate) fn could_carry_subschema(&mut self, v: N, depth: usize) -> bool {
        match v.view() {
            View::Object(_) => true,
            View::Array(items) => {
                if self.too_deep(depth) {
                    return true;
                }
                for item in items.iter() {
                    if !self.charge() {
                        return true;
                    }
                    if self.could_carry_subschema(item, depth + 1) {
                        return true;
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// True when a value cannot carry a subschema: recursively scalar, or
    /// lists/mappings of such with no schema-vocabulary key anywhere inside.
    /// Budget or depth exhaustion answers false (not inert).
    pub(crate) fn inert_value(&mut self, v: N, depth: usize) -> bool {
        match v.view() {
            View::Array(items) => {
                if self.too_deep(depth) {
                    return false;
                }
                for item in items.iter() {
                    if !self.charge() || !self.inert_value(item, depth + 1) {
                        return false;
                    }
                }
                true
            }
            View::Object(m) => {
                if self.too_deep(depth) {
                    return false;
                }
                for (k, item) in m.iter() {
                    if !self.charge() {
                        return false;
                    }
                    if classify_keyword(k) != KeywordClass::Unknown {
                        return false;
                    }
                    if !self.inert_value(item, depth + 1) {
                        return false;
                    }
                }
                true
            }
            _ => true,
        }
    }

    /// True for `x-` vendor extensions and `$comment` whose value is inert.
    /// Never a blanket `$` exemption: that is where real applicators live.
    pub(crate) fn vendor_annotation(&mut self, keyword: &str, v: N, depth: usize) -> bool {
        (keyword.starts_with("x-") || keyword == "$comment") && self.inert_value(v, depth)
    }
}

/// True when `if`/`then`/`else` leave some instance unconstrained: unless
/// all three are present, an instance that takes the missing path (or any
/// instance, without `if`) is constrained by none of them.
fn open_conditional<N>(shape: &Shape<N>) -> bool {
    let [if_, then, else_, _] = shape.singles.each_ref().map(Option::is_some);
    (if_ || then || else_) && !(if_ && then && else_)
}
