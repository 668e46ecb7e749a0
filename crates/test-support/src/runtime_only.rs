//! The runtime-only request fields suite: a CLI request's `env` and
//! `on_spawn` stay in memory and reach the leg, and never appear in a dump,
//! a rendering or an error. Each provider crate whose request carries them
//! implements [`RuntimeOnlyCase`] and calls these checks from its own tests,
//! so the same leak test runs against every request type.

use std::collections::BTreeMap;
use std::fmt::{Debug, Display};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use providers_core::{AgentRequest, ChildEnv, CliCall, Invocation, OnSpawn, SpawnedProcess};
use serde::Serialize;

/// A provider's request type, as the suite drives it.
pub trait RuntimeOnlyCase {
    /// The typed request.
    type Request: Debug + Serialize;
    /// What building an invocation can refuse.
    type Error: Debug + Display;

    /// A variable name and value typical of the provider's secrets.
    const SECRET: (&'static str, &'static str);

    /// A request with `prompt`, the provider's usual fields set, and the
    /// given wiring.
    fn request(prompt: &str, env: Option<ChildEnv>, on_spawn: Option<OnSpawn>) -> Self::Request;
    /// A request with a valid prompt that the invocation builder refuses
    /// for a reason unrelated to env (bad path, flag-like value, ...).
    fn rejected_later(env: ChildEnv) -> Self::Request;
    /// The request's `env`.
    fn env(req: &Self::Request) -> Option<&ChildEnv>;
    /// The request's `on_spawn`.
    fn on_spawn(req: &Self::Request) -> Option<&OnSpawn>;
    /// The call entry.
    fn from_call(call: &CliCall) -> Result<Self::Request, Self::Error>;
    /// The typed invocation builder.
    fn invocation_for(req: &Self::Request) -> Result<Invocation, Self::Error>;
    /// The provider-neutral invocation builder (the `Provider` seam).
    fn invocation(req: &AgentRequest) -> Result<Invocation, Self::Error>;
}

/// A supervisor-like receiver whose own Debug would print its state.
#[derive(Debug)]
struct Receiver {
    token: String,
    spawns: AtomicU32,
}

const RECEIVER_STATE: &str = "receiver-private-state-7731";
const OTHER: (&str, &str) = ("OTHER_TOKEN", "other-secret-value-2");

fn receiver() -> Arc<Receiver> {
    Arc::new(Receiver {
        token: RECEIVER_STATE.to_owned(),
        spawns: AtomicU32::new(0),
    })
}

fn bound_callback(r: &Arc<Receiver>) -> OnSpawn {
    let r = Arc::clone(r);
    OnSpawn::sync(move |_| {
        // The callback uses its receiver's state; rendering it must not.
        if !r.token.is_empty() {
            r.spawns.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    })
}

fn env(pairs: &[(&str, &str)]) -> ChildEnv {
    ChildEnv::try_from_pairs(pairs.iter().copied()).expect("valid variables")
}

/// Reports a spawn to a synchronous callback (its future is ready at once).
fn fire(cb: &OnSpawn, pid: i32) {
    let mut done = cb.call(SpawnedProcess {
        pid,
        pgid: pid,
        create_time: None,
    });
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match done.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(outcome) => outcome.expect("the callback succeeds"),
        std::task::Poll::Pending => panic!("a synchronous callback is ready at once"),
    }
}

fn populated<C: RuntimeOnlyCase>(r: &Arc<Receiver>) -> C::Request {
    C::request(
        "count the TODOs",
        Some(env(&[C::SECRET, OTHER])),
        Some(bound_callback(r)),
    )
}

fn assert_no_secret<C: RuntimeOnlyCase>(text: &str) {
    for needle in [
        C::SECRET.0,
        C::SECRET.1,
        OTHER.0,
        OTHER.1,
        "receiver-private-state",
    ] {
        assert!(!text.contains(needle), "{needle} in {text}");
    }
}

/// A populated request serialises without `env` or `on_spawn` keys and
/// without any of their contents, and keeps both in memory. Returns the
/// dump for provider-specific checks.
pub fn dump_leaves_out_runtime_fields<C: RuntimeOnlyCase>() -> serde_json::Value {
    let r = receiver();
    let req = populated::<C>(&r);
    let dump = serde_json::to_value(&req).expect("a request serialises");
    let obj = dump.as_object().expect("an object");
    assert_eq!(obj.get("prompt"), Some(&"count the TODOs".into()));
    assert!(obj.contains_key("model"), "{dump}");
    assert!(!obj.contains_key("env"), "{dump}");
    assert!(!obj.contains_key("on_spawn"), "{dump}");
    for text in [
        serde_json::to_string(&req).expect("json"),
        serde_json::to_string_pretty(&req).expect("json"),
    ] {
        assert_no_secret::<C>(&text);
    }
    // The dump leaves the values in memory: the leg still gets them.
    assert_eq!(C::env(&req).map(ChildEnv::len), Some(2));
    assert!(C::on_spawn(&req).is_some());
    dump
}

/// Debug renders `env` as `<env: N variable(s)>` and `on_spawn` as
/// `<on_spawn>`, and so do the carriers' own Display.
pub fn debug_renders_runtime_fields_opaquely<C: RuntimeOnlyCase>() {
    let r = receiver();
    let req = populated::<C>(&r);
    for text in [format!("{req:?}"), format!("{req:#?}")] {
        assert!(text.contains("<env: 2 variable(s)>"), "{text}");
        assert!(text.contains("<on_spawn>"), "{text}");
        assert_no_secret::<C>(&text);
    }
    let env = C::env(&req).expect("env");
    let cb = C::on_spawn(&req).expect("on_spawn");
    assert_eq!(format!("{env}"), "<env: 2 variable(s)>");
    assert_eq!(format!("{cb}"), "<on_spawn>");
}

/// The call entry keeps the very env and callback the caller bound (the
/// callback still reaches its receiver), the invocation gets the env
/// without rendering it, and a bare request's invocation adds no env.
pub fn call_entry_keeps_the_wiring<C: RuntimeOnlyCase>() {
    let r = receiver();
    let vars = env(&[C::SECRET]);
    let cb = bound_callback(&r);
    let call = CliCall {
        request: AgentRequest::new("count the TODOs"),
        env: Some(vars.clone()),
        on_spawn: Some(cb.clone()),
    };
    let req = C::from_call(&call).expect("valid call");
    assert_eq!(C::env(&req), Some(&vars));
    let held = C::on_spawn(&req).expect("on_spawn");
    assert!(held.same_as(&cb));
    fire(held, 4242);
    assert_eq!(r.spawns.load(Ordering::SeqCst), 1);

    let inv = C::invocation_for(&req).expect("invocation");
    assert_eq!(Some(inv.env.clone()), vars.to_utf8_map());
    assert!(!format!("{inv:?}").contains(C::SECRET.1));

    let bare = C::invocation(&call.request).expect("invocation");
    assert!(bare.env.is_empty());
}

/// With `vars` as the env: no rendering of a request refused at any stage
/// (empty prompt, unknown kwarg at the call entry, a later validation) or
/// accepted, of its error, of the call, or of the invocation holds a name
/// or value of `vars`; the accepted invocation's env is exactly `vars`.
/// Meant to be driven by a property test over random variables.
pub fn secrets_never_rendered<C: RuntimeOnlyCase>(vars: &BTreeMap<String, String>) {
    let r = receiver();
    let wiring = ChildEnv::try_from_pairs(vars.clone()).expect("valid variables");
    let renderings = |req: &C::Request| {
        vec![
            format!("{req:?}"),
            format!("{req:#?}"),
            serde_json::to_string(req).unwrap_or_default(),
        ]
    };
    let mut texts = Vec::new();

    // Rejected for a reason unrelated to env: an empty prompt.
    let empty = C::request("  ", Some(wiring.clone()), Some(bound_callback(&r)));
    let err = C::invocation_for(&empty).expect_err("empty prompt");
    texts.extend(renderings(&empty));
    texts.extend([err.to_string(), format!("{err:?}"), format!("{err:#?}")]);

    // Rejected at the call entry: an unknown kwarg.
    let mut bad = AgentRequest::new("fine");
    bad.kwargs.insert("no_such_field".into(), "x".into());
    let call = CliCall {
        request: bad,
        env: Some(wiring.clone()),
        on_spawn: Some(bound_callback(&r)),
    };
    let err = C::from_call(&call).expect_err("unknown kwarg");
    texts.extend([err.to_string(), format!("{err:?}"), format!("{call:?}")]);

    // Rejected later, by the provider's own validation.
    let late = C::rejected_later(wiring.clone());
    let err = C::invocation_for(&late).expect_err("rejected later");
    texts.extend(renderings(&late));
    texts.extend([err.to_string(), format!("{err:?}")]);

    // Accepted: the values reach the invocation's env and nothing else.
    let ok = C::request("p", Some(wiring), None);
    let inv = C::invocation_for(&ok).expect("valid");
    assert_eq!(&inv.env, vars);
    texts.push(inv.argv.join(" "));
    texts.extend(renderings(&ok));
    texts.push(format!("{inv:?}"));

    for text in &texts {
        for (k, v) in vars {
            assert!(
                !text.contains(k.as_str()) && !text.contains(v.as_str()),
                "{k} leaked: {text}"
            );
        }
    }
}
