//! Endpoint copies and adoption: runtime-only values travel shallowly and
//! are never lost or silently dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use providers_core::{
    ChildEnv, CliCall, Endpoint, EndpointConfig, Error, KwargValue, OnSpawn, SpawnedProcess,
};
use serde_json::json;

/// Reports a spawn of `pid` to `cb` (a synchronous callback: its future is
/// ready at once) and returns what the callback answered.
fn fire(cb: &OnSpawn, pid: i32) {
    let record = SpawnedProcess {
        pid,
        pgid: pid,
        create_time: None,
    };
    let mut done = cb.call(record);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match done.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(outcome) => outcome.expect("callback succeeds"),
        std::task::Poll::Pending => panic!("a synchronous callback is ready at once"),
    }
}

fn env(v: &str) -> ChildEnv {
    ChildEnv::try_from_pairs(BTreeMap::from([("K".to_owned(), v.to_owned())])).unwrap()
}

fn recorder() -> (OnSpawn, Arc<Mutex<Vec<i32>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    (
        OnSpawn::sync(move |i: &SpawnedProcess| {
            s.lock().unwrap().push(i.pid);
            Ok(())
        }),
        seen,
    )
}

fn agentic() -> (Endpoint, Arc<Mutex<Vec<i32>>>) {
    let (cb, seen) = recorder();
    let mut c = EndpointConfig::new("cli");
    c.update("env", KwargValue::Env(env("orig")));
    c.update("on_spawn", KwargValue::OnSpawn(cb));
    (Endpoint::agentic(&c).unwrap(), seen)
}

/// What a spawn from `ep` would get, reporting `pid` to its callback.
fn spawn(ep: &Endpoint, pid: i32) -> Option<ChildEnv> {
    let p = ep.create_payload(&CliCall::default()).unwrap();
    if let Some(cb) = &p.on_spawn {
        fire(cb, pid);
    }
    p.env
}

fn late_values() -> (Endpoint, Arc<Mutex<Vec<i32>>>) {
    let mut ep = Endpoint::agentic(&EndpointConfig::new("cli")).unwrap();
    let (cb, seen) = recorder();
    ep.config_mut().update("env", KwargValue::Env(env("late")));
    ep.config_mut().update("on_spawn", KwargValue::OnSpawn(cb));
    (ep, seen)
}

#[test]
fn copy_shares_the_callback_shallowly() {
    // contract: PRV-014
    let (mut ep, seen) = agentic();
    let c = ep.copy(false).unwrap();
    let a = ep.runtime().unwrap().on_spawn.clone().unwrap();
    let b = c.runtime().unwrap().on_spawn.clone().unwrap();
    assert!(a.same_as(&b));
    spawn(&c, 42);
    assert_eq!(
        *seen.lock().unwrap(),
        [42],
        "the original receiver hears the copy's spawn"
    );
}

#[test]
fn copy_drains_update_values_first() {
    // contract: PRV-015
    let (mut ep, seen) = late_values();
    let c = ep.copy(false).unwrap();
    assert_eq!(spawn(&c, 5), Some(env("late")));
    assert_eq!(*seen.lock().unwrap(), [5]);
    assert!(
        c.config().get("env").is_none(),
        "nothing runtime-only left in the copied config"
    );
}

#[test]
fn draining_for_a_copy_does_not_take_from_the_original() {
    // contract: PRV-016
    let (mut ep, seen) = late_values();
    let before = spawn(&ep, 1);
    let _c = ep.copy(false).unwrap();
    assert_eq!(spawn(&ep, 2), before);
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
}

#[test]
fn a_finished_endpoint_adopts_supplied_runtime_values() {
    // contract: PRV-017
    let mut ep = Endpoint::agentic(&EndpointConfig::new("cli")).unwrap();
    let (cb, seen) = recorder();
    ep.adopt_runtime_state(Some(env("given")), Some(cb))
        .unwrap();
    assert_eq!(spawn(&ep, 9), Some(env("given")));
    assert_eq!(*seen.lock().unwrap(), [9]);
}

#[test]
fn adopting_onto_an_endpoint_without_runtime_state_refuses() {
    // contract: PRV-018
    let mut ep = Endpoint::plain(&EndpointConfig::new("http"));
    assert!(matches!(
        ep.adopt_runtime_state(Some(env("x")), None),
        Err(Error::NoRuntimeState(_))
    ));
    let (cb, _) = recorder();
    assert!(matches!(
        ep.adopt_runtime_state(None, Some(cb)),
        Err(Error::NoRuntimeState(_))
    ));
    assert!(
        ep.adopt_runtime_state(None, None).is_ok(),
        "nothing supplied, nothing refused"
    );
}

#[test]
fn adopting_none_never_clears() {
    // contract: PRV-019
    let (ep, seen) = agentic();
    let mut other = Endpoint::agentic(ep.config()).unwrap();
    ep.copy_runtime_state_to(&mut other);
    other.adopt_runtime_state(None, None).unwrap();
    let (cb2, seen2) = recorder();
    other.adopt_runtime_state(None, Some(cb2)).unwrap();
    assert_eq!(
        spawn(&other, 1),
        Some(env("orig")),
        "env kept when only on_spawn supplied"
    );
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(*seen2.lock().unwrap(), [1]);
}

#[test]
fn copy_has_an_equal_independent_config() {
    let mut c = EndpointConfig::new("cli");
    c.update("max_turns", KwargValue::Json(json!(3)));
    let mut ep = Endpoint::agentic(&c).unwrap();
    let mut k = ep.copy(false).unwrap();
    assert!(k.is_agentic());
    assert_eq!(ep.to_dict(), k.to_dict());
    k.config_mut()
        .update("max_turns", KwargValue::Json(json!(9)));
    assert_eq!(ep.to_dict()["kwargs"]["max_turns"], 3);
    let mut plain = Endpoint::plain(&EndpointConfig::new("http"));
    assert!(!plain.copy(false).unwrap().is_agentic());
}

#[test]
fn share_session_only_between_agentic_endpoints() {
    // contract: PRV-024
    let (mut ep, _) = agentic();
    ep.set_session_id(Some("sess-1".into()));
    assert_eq!(ep.copy(true).unwrap().session_id(), Some("sess-1"));
    assert_eq!(ep.copy(false).unwrap().session_id(), None);
    let mut plain = Endpoint::plain(&EndpointConfig::new("http"));
    plain.set_session_id(Some("x".into()));
    assert_eq!(plain.copy(true).unwrap().session_id(), None);
}
