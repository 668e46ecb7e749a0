//! The two sufficiency proofs: object boundedness and structural coverage.
//!
//! They are independent and combined by OR: a schema is insufficient when
//! either fails. Both memoise `$ref` targets by node identity, so a thousand
//! references to one large target cost one check, and both charge the shared
//! budget, failing closed when it runs out.

use serde_json::Value;

use crate::engine::{Engine, Seg, Shape, Types, pinned, types_of};
use crate::node::{Arr, Node, Obj, View};
use crate::report::{Insufficiency, InsufficiencyCause, Proof, UnresolvedCause};
use crate::vocabulary::{ANNOTATION_REF_SIBLINGS, KeywordClass, classify_keyword};

type ProofResult = Result<(), Insufficiency>;

/// True when a `$ref` node has a sibling that constrains the instance.
///
/// The original's annotation-only siblings (description, title, `$comment`,
/// examples, default, `$defs`, definitions) and every other inert
/// annotation keyword of the registry (`$schema`, format, deprecated, ...)
/// constrain nothing. `$id` and `$anchor` are left out here: beside a nested
/// `$ref` they change what the reference means; see
/// [`has_structural_ref_siblings_at_root`] for the root, where `#/...` means
/// the same document either way.
pub fn has_structural_ref_siblings(node: &Value) -> bool {
    structural_ref_siblings(node, false)
}

/// Like [`has_structural_ref_siblings`] for the root schema, where `$id` and
/// `$anchor` are annotations too (a zod-to-json-schema document carries
/// `$schema`, `$ref` and `definitions` at its root).
pub fn has_structural_ref_siblings_at_root(node: &Value) -> bool {
    structural_ref_siblings(node, true)
}

fn structural_ref_siblings<'a, N: Node<'a>>(node: N, root: bool) -> bool {
    let annotation = |k: &str| {
        k == "$ref"
            || ANNOTATION_REF_SIBLINGS.contains(&k)
            || (classify_keyword(k) == KeywordClass::Inert
                && (root || !matches!(k, "$id" | "$anchor")))
    };
    match node.as_object() {
        Some(m) => m.iter().any(|(k, _)| !annotation(k)),
        None => false,
    }
}

/// True when a declared property's value could itself be an object instance.
/// Scalar, array, annotation-only and free-form string values are false:
/// they stay the walker's territory. A value that carries an object or
/// composition keyword (properties, additionalProperties, patternProperties,
/// `$ref`, allOf, anyOf, oneOf, `$defs`, definitions) is true whatever its
/// type says, as in the original: the boundedness proof then judges it (and
/// a type that excludes object fails there).
pub fn property_value_may_be_object_shaped(v: &Value) -> bool {
    may_be_object_shaped(v)
}

/// [`property_value_may_be_object_shaped`] on any document.
fn may_be_object_shaped<'a, N: Node<'a>>(v: N) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    let composed = [
        "properties",
        "additionalProperties",
        "patternProperties",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "$defs",
        "definitions",
    ]
    .iter()
    .any(|k| m.contains_key(k));
    composed
        || match types_of(m) {
            Types::Known(t) => t.object,
            Types::Malformed => true,
            Types::Absent => false,
        }
}

impl<'a, N: Node<'a>> Engine<'a, N> {
    fn fail(&self, proof: Proof, cause: InsufficiencyCause) -> ProofResult {
        // A plain verdict reads only which proof failed.
        let path = if self.detailed {
            self.pointer()
        } else {
            String::new()
        };
        Err(Insufficiency { proof, path, cause })
    }

    /// The object-boundedness proof, in its binding order.
    pub(crate) fn boundedness(&mut self, node: N, depth: usize) -> ProofResult {
        self.boundedness_node(node, false, depth)
    }

    /// `ignore_ref` evaluates a `$ref` node's structural siblings as their own node.
    fn boundedness_node(&mut self, node: N, ignore_ref: bool, depth: usize) -> ProofResult {
        const P: Proof = Proof::Boundedness;
        // (1) budget and depth fail closed.
        if !self.charge() || self.too_deep(depth) {
            return self.fail(P, InsufficiencyCause::LimitReached);
        }
        let Some(m) = node.as_object() else {
            return self.fail(P, InsufficiencyCause::NotAnObjectSchema);
        };
        let types = types_of(m);
        // (2) a type that excludes "object" (checked before the pin: the
        // fail-closed reading of the type-gate/pin contradiction).
        match types {
            Types::Malformed => return self.fail(P, InsufficiencyCause::MalformedType),
            Types::Known(t) if !t.object => {
                return self.fail(P, InsufficiencyCause::TypeExcludesObject);
            }
            _ => {}
        }
        // (3) a union with a free-form alternative and no pin.
        if let Types::Known(t) = types
            && t.unbounded_non_object()
            && !pinned(m)
        {
            return self.fail(P, InsufficiencyCause::FreeFormTypeAlternative);
        }
        // (4) applicator delegation: $ref, then oneOf/anyOf, then allOf.
        if !ignore_ref && let Some(reference) = m.get("$ref") {
            self.push(Seg::Key("$ref"));
            let target = self.boundedness_ref(reference, depth);
            self.pop();
            target?;
            if structural_ref_siblings(node, depth == 0 && self.path.is_empty()) {
                return self.boundedness_node(node, true, depth);
            }
            return Ok(());
        }
        let mut union_seen = false;
        for kw in ["oneOf", "anyOf"] {
            let Some(value) = m.get(kw) else { continue };
            union_seen = true;
            self.push(Seg::Key(kw));
            let result = self.boundedness_union(value, depth);
            self.pop();
            result?;
        }
        if union_seen {
            return Ok(());
        }
        if let Some(value) = m.get("allOf") {
            // One bounded branch suffices; with none (or an empty list) the
            // node is insufficient, as in the original.
            let Some(branches) = value.as_array() else {
                return self.fail(
                    P,
                    InsufficiencyCause::MalformedComposition("allOf".to_owned()),
                );
            };
            let mut first_failure = None;
            for (i, branch) in branches.iter().enumerate() {
                if !self.charge() {
                    return self.fail(P, InsufficiencyCause::LimitReached);
                }
                self.push(Seg::Key("allOf"));
                self.push(Seg::Index(i));
                let result = self.boundedness(branch, depth + 1);
                self.pop();
                self.pop();
                match result {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        first_failure.get_or_insert(e);
                    }
                }
                if self.exhausted {
                    return self.fail(P, InsufficiencyCause::LimitReached);
                }
            }
            return match first_failure {
                Some(e) => Err(e),
                None => self.fail(
                    P,
                    InsufficiencyCause::MalformedComposition("allOf".to_owned()),
                ),
            };
        }
        // (5) a top-level const/enum pins the instance.
        if pinned(m) {
            return Ok(());
        }
        // (6) the leaf object.
        if types == Types::Absent {
            return self.fail(P, InsufficiencyCause::TypeOmitted);
        }
        let additional = m.get("additionalProperties");
        let closed_false = additional.is_some_and(|a| a.is_bool(false));
        let closed = closed_false || additional.and_then(Node::as_object).is_some_and(pinned);
        match m.get("properties").map(Node::view) {
            None => {
                if !closed_false {
                    return self.fail(P, InsufficiencyCause::OpenObject);
                }
            }
            Some(View::Object(props)) => {
                if props.is_empty() && !closed_false || !props.is_empty() && !closed {
                    return self.fail(P, InsufficiencyCause::OpenObject);
                }
                self.push(Seg::Key("properties"));
                let result = self.boundedness_properties(props, depth);
                self.pop();
                result?;
            }
            Some(_) => return self.fail(P, InsufficiencyCause::MalformedProperties),
        }
        Ok(())
    }

    fn boundedness_properties(&mut self, props: N::Obj, depth: usize) -> ProofResult {
        for (k, v) in props.iter() {
            if !self.charge_work() {
                return self.fail(Proof::Boundedness, InsufficiencyCause::LimitReached);
            }
            if !may_be_object_shaped(v) {
                continue;
            }
            self.push(Seg::Key(k));
            let result = self.boundedness(v, depth + 1);
            self.pop();
            result?;
        }
        Ok(())
    }

    fn boundedness_union(&mut self, value: N, depth: usize) -> ProofResult {
        let branches = match value.as_array() {
            Some(branches) if !branches.is_empty() => branches,
            _ => {
                return self.fail(
                    Proof::Boundedness,
                    InsufficiencyCause::MalformedComposition("oneOf/anyOf".to_owned()),
                );
            }
        };
        for (i, branch) in branches.iter().enumerate() {
            if !self.charge() {
                return self.fail(Proof::Boundedness, InsufficiencyCause::LimitReached);
            }
            self.push(Seg::Index(i));
            let result = self.boundedness(branch, depth + 1);
            self.pop();
            result?;
        }
        Ok(())
    }

    fn boundedness_ref(&mut self, reference: N, depth: usize) -> ProofResult {
        const P: Proof = Proof::Boundedness;
        let Some(reference) = reference.as_str() else {
            return self.fail(P, InsufficiencyCause::Malformed("$ref".to_owned()));
        };
        let targets = match self.resolve(reference) {
            Ok(targets) => targets,
            Err(UnresolvedCause::NodeBudget) => {
                return self.fail(P, InsufficiencyCause::LimitReached);
            }
            Err(cause) => return self.fail(P, InsufficiencyCause::Reference(cause)),
        };
        // Every target either pointer reading reaches must be bounded.
        for target in targets.iter() {
            let key = target.id();
            if self.memo.bounded_obj_active.contains(&key) {
                return self.fail(
                    P,
                    InsufficiencyCause::Reference(UnresolvedCause::CyclicReference(
                        reference.to_owned(),
                    )),
                );
            }
            // Remembered per depth, and a hit pays again what the proof of
            // the target cost (the original proves it again).
            if let Some((cached, cost)) = self.memo.bounded_obj.get(&(key, depth)).cloned() {
                if !self.charge_n(cost) {
                    return self.fail(P, InsufficiencyCause::LimitReached);
                }
                cached?;
                continue;
            }
            let before = self.used_in_pass();
            self.memo.bounded_obj_active.insert(key);
            self.push(Seg::Ref(reference));
            let result = self.boundedness(target, depth + 1);
            self.pop();
            self.memo.bounded_obj_active.remove(&key);
            let cost = self.used_in_pass().saturating_sub(before);
            self.memo
                .bounded_obj
                .insert((key, depth), (result.clone(), cost));
            result?;
        }
        Ok(())
    }

    /// The structural-coverage proof: every schema-bearing position, visited
    /// unconditionally, uses only keywords the proofs model.
    pub(crate) fn coverage(&mut self, node: N, depth: usize) -> ProofResult {
        const P: Proof = Proof::Coverage;
        if !self.charge() || self.too_deep(depth) {
            return self.fail(P, InsufficiencyCause::LimitReached);
        }
        // A boolean nested where a schema belongs is not a modelled shape
        // (the original refuses it); `false` items and
        // `additionalProperties` are handled by their keywords, and a root
        // boolean by the classifier.
        let m = match node.view() {
            View::Object(m) => m,
            View::Bool(_) if depth == 0 && self.path.is_empty() => return Ok(()),
            View::Bool(_) => {
                return self.fail(
                    P,
                    InsufficiencyCause::Malformed("boolean schema".to_owned()),
                );
            }
            _ => return self.fail(P, InsufficiencyCause::Malformed("schema".to_owned())),
        };
        let mut array_exception: Option<bool> = None;
        for (k, v) in m.iter() {
            if !self.charge_work() {
                return self.fail(P, InsufficiencyCause::LimitReached);
            }
            self.push(Seg::Key(k));
            let result = self.coverage_keyword(m, k, v, depth, &mut array_exception);
            self.pop();
            result?;
        }
        Ok(())
    }

    fn coverage_keyword(
        &mut self,
        m: N::Obj,
        k: &'a str,
        v: N,
        depth: usize,
        array_exception: &mut Option<bool>,
    ) -> ProofResult {
        const P: Proof = Proof::Coverage;
        match classify_keyword(k) {
            KeywordClass::Inert | KeywordClass::Bounding => Ok(()),
            KeywordClass::Modeled => match (k, v.view()) {
                ("properties" | "$defs" | "definitions", View::Object(children)) => {
                    for (ck, cv) in children.iter() {
                        self.push(Seg::Key(ck));
                        let result = self.coverage(cv, depth + 1);
                        self.pop();
                        result?;
                    }
                    Ok(())
                }
                ("additionalProperties", View::Bool(_)) => Ok(()),
                ("additionalProperties", View::Object(_)) => self.coverage(v, depth + 1),
                // An empty composition list is refused, as in the original.
                ("allOf" | "anyOf" | "oneOf", View::Array(branches)) if !branches.is_empty() => {
                    self.coverage_list(branches, depth)
                }
                ("$ref", View::String(reference)) => self.coverage_ref(reference, depth),
                _ => self.fail(P, InsufficiencyCause::Malformed(k.to_owned())),
            },
            KeywordClass::Denied => {
                if matches!(k, "items" | "prefixItems" | "unevaluatedItems") {
                    let allowed = match array_exception {
                        Some(allowed) => *allowed,
                        None => {
                            // The bounded-property proof: pinned, or a
                            // bounded array type.
                            let allowed = self.bounded_shape(&Shape::of(m), depth);
                            *array_exception = Some(allowed);
                            allowed
                        }
                    };
                    if allowed {
                        // Still visit each bounded item subschema.
                        return match (k, v.view()) {
                            ("items", View::Bool(false)) => Ok(()),
                            ("items", _) => self.coverage(v, depth + 1),
                            ("prefixItems", View::Array(members)) => {
                                for (i, member) in members.iter().enumerate() {
                                    if member.is_bool(false) {
                                        continue;
                                    }
                                    self.push(Seg::Index(i));
                                    let result = self.coverage(member, depth + 1);
                                    self.pop();
                                    result?;
                                }
                                Ok(())
                            }
                            _ => Ok(()),
                        };
                    }
                }
                self.fail(P, InsufficiencyCause::DeniedKeyword(k.to_owned()))
            }
            KeywordClass::Unknown => {
                if self.vendor_annotation(k, v, depth) || !self.could_carry_subschema(v, depth) {
                    Ok(())
                } else {
                    self.fail(P, InsufficiencyCause::UnknownKeyword(k.to_owned()))
                }
            }
        }
    }

    fn coverage_list(&mut self, branches: N::Arr, depth: usize) -> ProofResult {
        for (i, branch) in branches.iter().enumerate() {
            // A branch costs a unit besides its node, as in the walker.
            if !self.charge() {
                return self.fail(Proof::Coverage, InsufficiencyCause::LimitReached);
            }
            self.push(Seg::Index(i));
            let result = self.coverage(branch, depth + 1);
            self.pop();
            result?;
        }
        Ok(())
    }

    fn coverage_ref(&mut self, reference: &'a str, depth: usize) -> ProofResult {
        let targets = match self.resolve(reference) {
            Ok(targets) => targets,
            Err(UnresolvedCause::NodeBudget) => {
                return self.fail(Proof::Coverage, InsufficiencyCause::LimitReached);
            }
            Err(cause) => return self.fail(Proof::Coverage, InsufficiencyCause::Reference(cause)),
        };
        for target in targets.iter() {
            let key = target.id();
            // A target reached again while it is being checked is a cycle:
            // insufficient, as in the original.
            if self.memo.coverage_active.contains(&key) {
                return self.fail(
                    Proof::Coverage,
                    InsufficiencyCause::Reference(UnresolvedCause::CyclicReference(
                        reference.to_owned(),
                    )),
                );
            }
            if let Some((cached, cost)) = self.memo.coverage.get(&(key, depth)).cloned() {
                if !self.charge_n(cost) {
                    return self.fail(Proof::Coverage, InsufficiencyCause::LimitReached);
                }
                cached?;
                continue;
            }
            let before = self.used_in_pass();
            self.memo.coverage_active.insert(key);
            self.push(Seg::Ref(reference));
            let result = self.coverage(target, depth + 1);
            self.pop();
            self.memo.coverage_active.remove(&key);
            let cost = self.used_in_pass().saturating_sub(before);
            self.memo
                .coverage
                .insert((key, depth), (result.clone(), cost));
            result?;
        }
        Ok(())
    }
}
