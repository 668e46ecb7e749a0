//! Endpoint config runtime-only state and the field-key cache.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use providers_core::{
    AgentRequest, ChildEnv, CliCall, ConfigFields, Endpoint, EndpointConfig, Error, KwargValue,
    OnSpawn, RUNTIME_STATE_NAMES, SpawnedProcess, accepted_keys,
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

const SECRET: &str = "sk-VERY-SECRET-VALUE";

fn env() -> ChildEnv {
    ChildEnv::try_from_pairs(BTreeMap::from([("API_KEY".to_owned(), SECRET.to_owned())])).unwrap()
}

/// A supervisor-like receiver: the callback records into it.
#[derive(Default)]
struct Supervisor {
    seen: Mutex<Vec<i32>>,
}

fn bound_callback(sup: &Arc<Supervisor>) -> OnSpawn {
    let sup = Arc::clone(sup);
    OnSpawn::sync(move |info: &SpawnedProcess| {
        sup.seen.lock().unwrap().push(info.pid);
        Ok(())
    })
}

fn config_with_runtime(sup: &Arc<Supervisor>) -> EndpointConfig {
    let mut c = EndpointConfig::new("claude");
    c.model = Some("sonnet".into());
    c.update("permission_mode", KwargValue::Json(json!("plan")));
    c.update("env", KwargValue::Env(env()));
    c.update("on_spawn", KwargValue::OnSpawn(bound_callback(sup)));
    c
}

fn leaks(s: &str) -> bool {
    s.contains(SECRET) || s.contains("API_KEY") || s.contains("on_spawn\":")
}

#[test]
fn payload_keeps_the_callers_runtime_wiring() {
    // contract: PRV-003
    let sup = Arc::new(Supervisor::default());
    let ep = Endpoint::agentic(&config_with_runtime(&sup)).unwrap();
    let mine = Arc::new(Supervisor::default());
    let my_cb = bound_callback(&mine);
    let my_env = ChildEnv::try_from_pairs([("MINE", "1")]).unwrap();
    let call = CliCall {
        request: AgentRequest::new("p"),
        env: Some(my_env.clone()),
        on_spawn: Some(my_cb.clone()),
    };
    let payload = ep.create_payload(&call).unwrap();
    assert_eq!(payload.env, Some(my_env));
    assert!(
        payload
            .on_spawn
            .as_ref()
            .is_some_and(|cb| cb.same_as(&my_cb))
    );
}

#[test]
fn construction_drains_runtime_values_out_of_every_dump() {
    // contract: PRV-004, PRV-021
    let sup = Arc::new(Supervisor::default());
    let supplied = config_with_runtime(&sup);
    let ep = Endpoint::agentic(&supplied).unwrap();
    let dumps = [
        ep.to_dict().to_string(),
        serde_json::to_string(ep.config()).unwrap(),
        Endpoint::agentic(&supplied)
            .unwrap()
            .copy(true)
            .unwrap()
            .to_dict()
            .to_string(),
    ];
    for d in &dumps {
        assert!(!leaks(d), "{d}");
        assert!(d.contains("permission_mode"));
    }
    // Drained into runtime state, not into nowhere.
    let rt = ep.runtime().unwrap();
    assert_eq!(rt.env, Some(env()));
    assert!(
        ep.config().get("env").is_none(),
        "the endpoint's copy no longer holds env"
    );
}

#[test]
fn drained_values_keep_their_precedence() {
    // contract: PRV-005
    let mut ep = Endpoint::agentic(&EndpointConfig::new("codex")).unwrap();
    ep.config_mut()
        .update("env", KwargValue::Json(json!({"A": "from-update"})));
    let call = CliCall {
        request: AgentRequest::new("p"),
        ..Default::default()
    };
    let before = ep.create_payload(&call).unwrap().env;
    ep.drain().unwrap();
    let after = ep.create_payload(&call).unwrap().env;
    assert_eq!(before, after);
    assert_eq!(
        after.unwrap().get("A").and_then(std::ffi::OsStr::to_str),
        Some("from-update")
    );
}

#[test]
fn config_serializer_excludes_runtime_names_on_its_own() {
    // contract: PRV-006, PRV-012
    let sup = Arc::new(Supervisor::default());
    let c = config_with_runtime(&sup);
    let dump = serde_json::to_value(&c).unwrap();
    assert!(dump["kwargs"].get("env").is_none() && dump["kwargs"].get("on_spawn").is_none());
    // No placeholder: a config rebuilt from the dump has no env at all.
    let back = EndpointConfig::from_value(&dump).unwrap();
    assert!(back.get("env").is_none() && back.get("on_spawn").is_none());
}

#[test]
fn update_after_construction_is_still_excluded() {
    // contract: PRV-007
    let mut ep = Endpoint::agentic(&EndpointConfig::new("claude")).unwrap();
    ep.config_mut().update("env", KwargValue::Env(env()));
    ep.config_mut()
        .update("env", KwargValue::Json(json!({"API_KEY": SECRET})));
    let sup = Arc::new(Supervisor::default());
    ep.config_mut()
        .update("on_spawn", KwargValue::OnSpawn(bound_callback(&sup)));
    // Both values really are back in the config's kwargs...
    assert!(ep.config().get("env").is_some() && ep.config().get("on_spawn").is_some());
    // ...and a direct dump still omits both.
    let dump = serde_json::to_value(ep.config()).unwrap();
    assert!(dump["kwargs"].get("env").is_none() && dump["kwargs"].get("on_spawn").is_none());
    assert!(!leaks(&serde_json::to_string(ep.config()).unwrap()));
    assert!(!leaks(&ep.to_dict().to_string()));
}

#[test]
fn hydrated_config_with_runtime_values_is_excluded() {
    // contract: PRV-008
    let dump = json!({"endpoint": {"provider": "codex", "kwargs": {"env": {"API_KEY": SECRET}, "sandbox": "read-only"}}});
    let cfg = EndpointConfig::from_value(&dump["endpoint"]).unwrap();
    assert!(!leaks(&serde_json::to_string(&cfg).unwrap()));
    let ep = Endpoint::agentic(&cfg).unwrap();
    assert!(!leaks(&ep.to_dict().to_string()));
    assert!(!leaks(&serde_json::to_string(ep.config()).unwrap()));
    assert_eq!(
        ep.runtime().and_then(|r| r.env.as_ref()).map(ChildEnv::len),
        Some(1)
    );
}

#[test]
fn one_list_of_runtime_names() {
    // contract: PRV-009
    assert_eq!(RUNTIME_STATE_NAMES, ["env", "on_spawn"]);
    // Both the config and the endpoint act on exactly this list.
    let mut c = EndpointConfig::new("claude");
    for name in RUNTIME_STATE_NAMES {
        c.update(name, KwargValue::Json(json!({})));
    }
    assert_eq!(c.iter().count(), 0);
    // The endpoint drains exactly the names on that list, and nothing else.
    let sup = Arc::new(Supervisor::default());
    let mut c = EndpointConfig::new("claude");
    c.update("permission_mode", KwargValue::Json(json!("plan")));
    for name in RUNTIME_STATE_NAMES {
        let value = match name {
            "env" => KwargValue::Env(env()),
            "on_spawn" => KwargValue::OnSpawn(bound_callback(&sup)),
            other => panic!("no test value for runtime name {other}"),
        };
        c.update(name, value);
    }
    let ep = Endpoint::agentic(&c).unwrap();
    for name in RUNTIME_STATE_NAMES {
        assert!(ep.config().get(name).is_none(), "{name} drained");
    }
    assert!(ep.config().get("permission_mode").is_some());
    let rt = ep.runtime().unwrap();
    assert!(rt.env.is_some() && rt.on_spawn.is_some());
}

#[test]
fn iteration_and_map_conversion_filter_runtime_names() {
    // contract: PRV-010
    let sup = Arc::new(Supervisor::default());
    let c = config_with_runtime(&sup);
    let keys: Vec<&str> = (&c).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["permission_mode"]);
    let as_map = serde_json::Value::Object(c.to_map()).to_string();
    assert!(!leaks(&as_map), "{as_map}");
}

#[test]
fn debug_says_set_without_contents() {
    // contract: PRV-011
    let sup = Arc::new(Supervisor::default());
    let c = config_with_runtime(&sup);
    let d = format!("{c:?}");
    assert!(!d.contains(SECRET) && !d.contains("API_KEY"), "{d}");
    assert!(
        d.contains("\"env\": <set>") && d.contains("\"on_spawn\": <set>"),
        "{d}"
    );
    let ep = Endpoint::agentic(&c).unwrap();
    assert!(!format!("{ep:?}").contains(SECRET));
}

#[test]
fn raw_state_still_holds_and_applies_values_after_dumps() {
    // contract: PRV-013
    let sup = Arc::new(Supervisor::default());
    let ep = Endpoint::agentic(&config_with_runtime(&sup)).unwrap();
    let _ = ep.to_dict();
    let _ = serde_json::to_string(ep.config()).unwrap();
    let payload = ep.create_payload(&CliCall::default()).unwrap();
    assert_eq!(payload.env, Some(env()));
    fire(&payload.on_spawn.unwrap(), 7);
    assert_eq!(*sup.seen.lock().unwrap(), [7]);
}

#[test]
fn supplied_values_win_and_notify_the_original_receiver() {
    // contract: PRV-020
    let sup = Arc::new(Supervisor::default());
    let supplied = config_with_runtime(&sup);
    let ep = Endpoint::agentic(&supplied).unwrap();
    let Some(KwargValue::OnSpawn(original)) = supplied.get("on_spawn") else {
        panic!("still on the caller's object")
    };
    assert!(
        ep.runtime()
            .unwrap()
            .on_spawn
            .as_ref()
            .unwrap()
            .same_as(original)
    );
    fire(ep.runtime().unwrap().on_spawn.as_ref().unwrap(), 3);
    assert_eq!(*sup.seen.lock().unwrap(), [3]);
}

#[test]
fn wrong_runtime_shapes_are_typed() {
    let mut c = EndpointConfig::new("claude");
    c.update("env", KwargValue::Json(json!({"A": 1})));
    assert!(matches!(
        Endpoint::agentic(&c),
        Err(Error::RuntimeValueShape("env"))
    ));
    let mut c = EndpointConfig::new("claude");
    c.update("on_spawn", KwargValue::Json(json!("f")));
    assert!(matches!(
        Endpoint::agentic(&c),
        Err(Error::RuntimeValueShape("on_spawn"))
    ));
}

#[test]
fn a_json_env_goes_through_the_supervisors_entry_checks_unquoted() {
    // A `NAME=VALUE` string where a name belongs, or a NUL in a value, is
    // refused by kind; nothing of the entry reaches the error.
    for bad in [
        json!({"TOKEN=sk-hidden-1": "v"}),
        json!({"TOKEN": "sk-hidden-1\u{0}"}),
        json!({"": "sk-hidden-1"}),
    ] {
        let mut c = EndpointConfig::new("claude");
        c.update("env", KwargValue::Json(bad));
        let err = Endpoint::agentic(&c).expect_err("refused");
        assert!(matches!(err, Error::RuntimeValueShape("env")), "{err:?}");
        assert!(!format!("{err} {err:?}").contains("sk-hidden"));
    }
}

#[test]
fn invocation_env_reads_the_carrier_and_refuses_non_utf8() {
    use std::os::unix::ffi::OsStringExt as _;
    assert!(providers_core::invocation_env(None).unwrap().is_empty());
    let env = ChildEnv::try_from_pairs([("A", "1"), ("B", "two")]).unwrap();
    assert_eq!(
        providers_core::invocation_env(Some(&env)).unwrap(),
        BTreeMap::from([
            ("A".to_owned(), "1".to_owned()),
            ("B".to_owned(), "two".to_owned())
        ])
    );
    let raw = ChildEnv::try_from_pairs([(
        std::ffi::OsString::from("K"),
        std::ffi::OsString::from_vec(b"sk-\xff".to_vec()),
    )])
    .unwrap();
    let err = providers_core::invocation_env(Some(&raw)).expect_err("not utf-8");
    assert!(matches!(err, Error::RuntimeValueShape("env")), "{err:?}");
}

static A_COMPUTED: AtomicUsize = AtomicUsize::new(0);
static B_COMPUTED: AtomicUsize = AtomicUsize::new(0);

struct BaseConfig;
impl ConfigFields for BaseConfig {
    fn compute_accepted_keys() -> BTreeSet<&'static str> {
        A_COMPUTED.fetch_add(1, Ordering::SeqCst);
        BTreeSet::from(["provider", "model", "base_url"])
    }
}

struct ExtendedConfig;
impl ConfigFields for ExtendedConfig {
    fn compute_accepted_keys() -> BTreeSet<&'static str> {
        B_COMPUTED.fetch_add(1, Ordering::SeqCst);
        let mut k = BaseConfig::compute_accepted_keys();
        k.extend(["reasoning", "effort_alias"]);
        k
    }
}

#[test]
fn accepted_keys_are_computed_once_per_type() {
    // contract: PRV-001, PRV-002
    let base_before = A_COMPUTED.load(Ordering::SeqCst);
    for _ in 0..100 {
        assert!(accepted_keys::<BaseConfig>().contains("model"));
    }
    let base_after = A_COMPUTED.load(Ordering::SeqCst);
    assert!(base_after - base_before <= 1);
    let ext = accepted_keys::<ExtendedConfig>();
    assert!(ext.contains("effort_alias") && ext.contains("model"));
    assert!(
        !accepted_keys::<BaseConfig>().contains("effort_alias"),
        "never served another type's entry"
    );
    for _ in 0..10 {
        let _ = accepted_keys::<ExtendedConfig>();
    }
    assert_eq!(B_COMPUTED.load(Ordering::SeqCst), 1);
}
