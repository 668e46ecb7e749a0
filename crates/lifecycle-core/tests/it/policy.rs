//! Registry validation and edge-map immutability.

use lifecycle_core::{
    Actor, ActorType, CoreError, Decision, Edge, EdgeMap, PolicyRegistry, PolicySpec, Reason,
    Rejection, RowSnapshot, SameStatus, TransitionCommand, decide, default_policy_specs,
    default_registry,
};

type Mutation = Box<dyn Fn(&mut PolicySpec)>;

fn spec() -> PolicySpec {
    PolicySpec {
        entity_type: "widget".into(),
        table: "widgets".into(),
        statuses: vec!["new".into(), "done".into()],
        initial_statuses: vec!["new".into()],
        terminal_statuses: vec!["done".into()],
        edges: vec![("new".into(), Edge::to("done"))],
        same_status: SameStatus::Append,
        patch_fields: vec!["note".into()],
        reason_prefixes: vec!["run".into()],
        reason_columns: true,
    }
}

#[test]
fn registration_validates_every_rule() {
    let mut r = PolicyRegistry::new();
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "initial outside vocabulary",
            Box::new(|s| s.initial_statuses = vec!["zzz".into()]),
        ),
        (
            "terminal outside vocabulary",
            Box::new(|s| s.terminal_statuses = vec!["zzz".into()]),
        ),
        (
            "edge outside vocabulary",
            Box::new(|s| s.edges.push(("new".into(), Edge::to("zzz")))),
        ),
        (
            "required patch field undeclared",
            Box::new(|s| {
                let mut e = Edge::to("done");
                e.required_patch_fields.insert("secret".into());
                s.edges = vec![("new".into(), e)];
            }),
        ),
        (
            "required guard field undeclared",
            Box::new(|s| {
                let mut e = Edge::to("new");
                e.required_guard_fields.insert("secret".into());
                s.edges.push(("new".into(), e));
            }),
        ),
        (
            "duplicate edge",
            Box::new(|s| s.edges.push(("new".into(), Edge::to("done")))),
        ),
        (
            "table not an identifier",
            Box::new(|s| s.table = "w; DROP".into()),
        ),
        (
            "patch field not an identifier",
            Box::new(|s| s.patch_fields.push("a b".into())),
        ),
    ];
    for (what, mutate) in cases {
        let mut s = spec();
        mutate(&mut s);
        assert!(
            matches!(r.register(s), Err(CoreError::InvalidPolicy(_))),
            "{what}"
        );
    }
    r.register(spec()).expect("valid spec");
    let mut dup = spec();
    dup.table = "other".into();
    assert!(r.register(dup).is_err(), "entity type must be unique");
    let mut dup_table = spec();
    dup_table.entity_type = "gadget".into();
    assert!(r.register(dup_table).is_err(), "table must be unique");
    r.seal();
    let mut later = spec();
    later.entity_type = "later".into();
    later.table = "laters".into();
    assert!(matches!(
        r.register(later),
        Err(CoreError::RegistrySealed(_))
    ));
}

#[test]
fn the_default_registry_is_sealed_and_complete() {
    let r = default_registry();
    assert!(r.is_sealed());
    let names: Vec<_> = r.iter().map(|p| p.entity_type().to_owned()).collect();
    assert_eq!(
        names,
        [
            "dispatch",
            "invocation",
            "play",
            "schedule",
            "schedule_run",
            "session",
            "show",
            "team"
        ]
    );
    assert!(!r.get("dispatch").expect("dispatch").has_reason_columns());
    assert!(matches!(
        r.get("nope"),
        Err(CoreError::UnknownEntityType(_))
    ));
}

// contract: LC-014, LC-015
#[test]
fn an_edge_map_supports_reads_only() {
    let map = EdgeMap::new(vec![
        ("a".to_owned(), Edge::to("b")),
        ("a".to_owned(), Edge::to("c")),
    ])
    .expect("map");
    assert_eq!(map.len(), 2);
    assert!(map.contains("a", "b"));
    assert!(!map.contains("b", "a"));
    assert_eq!(
        map.from("a")
            .map(|e| e.to_status.as_str())
            .collect::<Vec<_>>(),
        ["b", "c"]
    );
    assert_eq!(map.iter().count(), 2);
    assert!(map.get("a", "c").is_some());
    // No trait hands out mutable access to the edges.
    <EdgeMap as Ambiguous<_>>::check();
    <lifecycle_core::Policy as Ambiguous<_>>::check();
    // No inherent or trait method of the map takes `&mut self`, and its
    // fields are private: nothing inserts, removes, resets or swaps edges.
    let src = include_str!("../../src/policy.rs");
    let decl = src.find("pub struct EdgeMap {").expect("EdgeMap declared") + 20;
    let body = &src[decl..decl + src[decl..].find('}').expect("struct end")];
    assert!(body.contains("edges:"), "{body}");
    assert!(!body.contains("pub "), "EdgeMap fields must stay private");
    let mut blocks = 0;
    for (at, _) in src.match_indices("\nimpl") {
        let header = &src[at..at + src[at..].find('{').expect("impl body")];
        if !header.contains("EdgeMap") {
            continue;
        }
        let end = at + src[at..].find("\n}\n").expect("impl end");
        let block = &src[at..end];
        assert!(!block.contains("&mut self"), "mutating method in {header}");
        blocks += 1;
    }
    assert!(blocks >= 2, "found the EdgeMap impl blocks");
}

/// `<T as Ambiguous<_>>::check()` is ambiguous, so fails to compile, for a
/// concrete `T` implementing `DerefMut`, `IndexMut<&str>` or
/// `Extend<(String, Edge)>`: each would add a second candidate impl.
trait Ambiguous<A> {
    fn check() {}
}
impl<T: ?Sized> Ambiguous<()> for T {}
struct ViaDerefMut;
impl<T: ?Sized + std::ops::DerefMut> Ambiguous<ViaDerefMut> for T {}
struct ViaIndexMut;
impl<T: ?Sized + for<'a> std::ops::IndexMut<&'a str>> Ambiguous<ViaIndexMut> for T {}
struct ViaExtend;
impl<T: ?Sized + Extend<(String, Edge)>> Ambiguous<ViaExtend> for T {}

// contract: LC-016
#[test]
fn an_edge_map_round_trips_through_clone_and_serde_via_validation() {
    let map = default_registry()
        .get("dispatch")
        .expect("dispatch")
        .edges()
        .clone();
    let json = serde_json::to_string(&map).expect("serialise");
    let back: EdgeMap = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(back, map);
    // Deserialisation goes through the validating constructor: duplicates
    // are refused rather than silently merged.
    let dup = r#"[["a",{"to_status":"b"}],["a",{"to_status":"b"}]]"#;
    assert!(serde_json::from_str::<EdgeMap>(dup).is_err());
}

// contract: LC-017
#[test]
fn a_policy_converts_to_an_independent_plain_copy() {
    let policy = default_registry().get("session").expect("session");
    let mut plain = policy.to_spec();
    let before = policy.edges().len();
    plain.edges.clear();
    plain.statuses.push("exploded".into());
    assert_eq!(policy.edges().len(), before);
    assert!(!policy.has_status("exploded"));
    // The plain copy registers back into an equal policy.
    let mut r = PolicyRegistry::new();
    r.register(policy.to_spec()).expect("round trip");
    assert_eq!(**r.get("session").expect("session"), **policy);
}

// contract: LC-018, LC-019
#[test]
fn mutating_the_callers_spec_or_a_copy_never_changes_registered_decisions() {
    let specs = default_policy_specs();
    let spec_of = |entity: &str| {
        specs
            .iter()
            .find(|s| s.entity_type == entity)
            .expect("spec")
            .clone()
    };
    // queued -> completed is undeclared and queued is not terminal, so the
    // verdict depends on the edges alone.
    let extra = || ("queued".to_owned(), Edge::to("completed"));
    let cmd = TransitionCommand::new(
        "schedule_run",
        "r",
        "completed",
        Reason::new("run.completed.ok"),
        Actor::new(ActorType::Scheduler, "s"),
    );
    let queued = RowSnapshot {
        status: "queued".into(),
        version: 1,
        columns: Default::default(),
    };
    // The probe is sensitive: a registry holding the extra edge applies it.
    let mut widened = spec_of("schedule_run");
    widened.edges.push(extra());
    let mut other = PolicyRegistry::new();
    other.register(widened).expect("register widened");
    let d = decide(
        other.get("schedule_run").expect("policy"),
        Some(&queued),
        &cmd,
    )
    .expect("decides");
    assert!(matches!(d, Decision::Write(_)), "{d:?}");
    // The caller's spec, changed after registration.
    let mut r = PolicyRegistry::new();
    let mut spec = spec_of("schedule_run");
    r.register(spec.clone()).expect("register");
    spec.edges.push(extra());
    // A plain copy of a policy obtained from get(), changed.
    let got = r.get("schedule_run").expect("policy").clone();
    let mut copy = (*got).to_spec();
    copy.edges.push(extra());
    assert!(
        !r.get("schedule_run")
            .expect("policy")
            .edges()
            .contains("queued", "completed")
    );
    let d = decide(r.get("schedule_run").expect("policy"), Some(&queued), &cmd).expect("decides");
    assert!(
        matches!(
            d,
            Decision::Reject {
                rejection: Rejection::UndeclaredEdge,
                ..
            }
        ),
        "registered edges unchanged: {d:?}"
    );
}
