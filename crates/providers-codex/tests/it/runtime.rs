//! The runtime-only `env`/`on_spawn` fields of `CodexRequest`: kept
//! in memory and passed to the child, out of every dump and rendering.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use providers_codex::{CodexProvider, CodexRequest};
use providers_core::{AgentRequest, ChildEnv, CliCall, Effort, OnSpawn, Provider, SpawnInfo};

/// A supervisor-like receiver whose own Debug would print its state.
#[derive(Debug)]
struct Receiver {
    token: String,
    spawns: AtomicU32,
}

fn receiver() -> Arc<Receiver> {
    Arc::new(Receiver {
        token: "receiver-private-state-7731".to_owned(),
        spawns: AtomicU32::new(0),
    })
}

fn bound_callback(r: &Arc<Receiver>) -> OnSpawn {
    let r = Arc::clone(r);
    OnSpawn::new(move |_| {
        // The callback uses its receiver's state; rendering it must not.
        if !r.token.is_empty() {
            r.spawns.fetch_add(1, Ordering::SeqCst);
        }
    })
}

fn env(pairs: &[(&str, &str)]) -> ChildEnv {
    ChildEnv::new(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

fn populated(r: &Arc<Receiver>) -> CodexRequest {
    CodexRequest {
        prompt: "count the TODOs".into(),
        model: Some("gpt-5".into()),
        effort: Some(Effort::High),
        env: Some(env(&[
            ("OPENAI_API_KEY", "sk-oai-secret-value-1"),
            ("OTHER_TOKEN", "other-secret-value-2"),
        ])),
        on_spawn: Some(bound_callback(r)),
        ..Default::default()
    }
}

#[test]
fn a_populated_request_dumps_without_env_or_on_spawn() {
    // contract: SUP-033
    // contract: SUP-036
    // Only the dump channel is looked at here; rendering has its own test.
    let r = receiver();
    let req = populated(&r);
    let dump = serde_json::to_value(&req).expect("a request serialises");
    let obj = dump.as_object().expect("an object");
    assert_eq!(obj.get("prompt"), Some(&"count the TODOs".into()));
    assert!(obj.contains_key("model") && obj.contains_key("mcp_servers"));
    assert_eq!(obj.get("effort"), Some(&"high".into()));
    assert!(!obj.contains_key("env"), "{dump}");
    assert!(!obj.contains_key("on_spawn"), "{dump}");
    for text in [
        serde_json::to_string(&req).expect("json"),
        serde_json::to_string_pretty(&req).expect("json"),
    ] {
        for needle in [
            "sk-oai-secret-value-1",
            "other-secret-value-2",
            "OPENAI_API_KEY",
            "OTHER_TOKEN",
            "receiver-private-state",
        ] {
            assert!(!text.contains(needle), "{needle} in {text}");
        }
    }
    // The dump leaves the values in memory: the leg still gets them.
    assert_eq!(req.env.as_ref().map(ChildEnv::len), Some(2));
    assert!(req.on_spawn.is_some());
}

#[test]
fn debug_renders_env_as_a_count_and_on_spawn_opaquely() {
    // contract: SUP-035
    // contract: SUP-036
    // Only the rendering channel is looked at here; the dump has its own test.
    let r = receiver();
    let req = populated(&r);
    for text in [format!("{req:?}"), format!("{req:#?}")] {
        assert!(text.contains("<env: 2 variable(s)>"), "{text}");
        assert!(text.contains("<on_spawn>"), "{text}");
        for needle in [
            "sk-oai-secret-value-1",
            "other-secret-value-2",
            "OPENAI_API_KEY",
            "OTHER_TOKEN",
            "receiver-private-state",
        ] {
            assert!(!text.contains(needle), "{needle} in {text}");
        }
    }
    let (env, cb) = (
        req.env.clone().expect("env"),
        req.on_spawn.clone().expect("cb"),
    );
    assert_eq!(format!("{env}"), "<env: 2 variable(s)>");
    assert_eq!(format!("{cb}"), "<on_spawn>");
}

#[test]
fn the_call_entry_keeps_the_wiring_and_the_invocation_gets_the_env() {
    let r = receiver();
    let vars = env(&[("OPENAI_API_KEY", "sk-oai-secret-value-1")]);
    let cb = bound_callback(&r);
    let call = CliCall {
        request: AgentRequest::new("count the TODOs"),
        env: Some(vars.clone()),
        on_spawn: Some(cb.clone()),
    };
    let req = CodexRequest::from_call(&call).expect("valid call");
    assert_eq!(req.env.as_ref(), Some(&vars));
    // The very callback the caller bound, still reaching its receiver.
    let held = req.on_spawn.as_ref().expect("on_spawn");
    assert!(held.same_as(&cb));
    held.call(&SpawnInfo { pid: 4242 });
    assert_eq!(r.spawns.load(Ordering::SeqCst), 1);

    let inv = CodexProvider::default()
        .invocation_for(&req)
        .expect("invocation");
    assert_eq!(&inv.env, vars.vars());
    assert!(!format!("{inv:?}").contains("sk-oai-secret-value-1"));

    // A bare AgentRequest carries no wiring: the invocation adds nothing.
    let bare = CodexProvider::default()
        .invocation(&call.request)
        .expect("invocation");
    assert!(bare.env.is_empty());
}

fn secret_env() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("LEAKVAR_[A-Z0-9_]{4,12}", "sk-[A-Za-z0-9]{16,40}", 1..6)
}

proptest! {
    #[test]
    fn random_secrets_never_appear_in_any_rendering_or_error(vars in secret_env()) {
        // contract: SUP-039
        let r = receiver();
        let wiring = ChildEnv::new(vars.clone());
        let leaks = |text: &str| {
            vars.iter().find(|(k, v)| text.contains(k.as_str()) || text.contains(v.as_str()))
                .map(|(k, _)| k.clone())
        };
        let renderings = |req: &CodexRequest| {
            vec![
                format!("{req:?}"),
                format!("{req:#?}"),
                serde_json::to_string(req).unwrap_or_default(),
            ]
        };

        // Rejected for a reason unrelated to env: an empty prompt.
        let empty = CodexRequest {
            prompt: "  ".into(),
            env: Some(wiring.clone()),
            on_spawn: Some(bound_callback(&r)),
            ..Default::default()
        };
        let err = CodexProvider::default().invocation_for(&empty).expect_err("empty prompt");
        let mut texts = renderings(&empty);
        texts.extend([err.to_string(), format!("{err:?}"), format!("{err:#?}")]);

        // Rejected at the call entry: an unknown kwarg.
        let mut bad = AgentRequest::new("fine");
        bad.kwargs.insert("no_such_field".into(), "x".into());
        let call = CliCall { request: bad, env: Some(wiring.clone()), on_spawn: Some(bound_callback(&r)) };
        let err = CodexRequest::from_call(&call).expect_err("unknown kwarg");
        texts.extend([err.to_string(), format!("{err:?}"), format!("{call:?}")]);

        // Rejected later: a resume id that reads as a flag.
        let flaglike = CodexRequest {
            prompt: "p".into(),
            resume: Some("--oops".into()),
            env: Some(wiring.clone()),
            ..Default::default()
        };
        let err = CodexProvider::default().invocation_for(&flaglike).expect_err("bad resume");
        texts.extend(renderings(&flaglike));
        texts.extend([err.to_string(), format!("{err:?}")]);

        // Accepted: the values reach the invocation's env and nothing else.
        let ok = CodexRequest { prompt: "p".into(), env: Some(wiring.clone()), ..Default::default() };
        let inv = CodexProvider::default().invocation_for(&ok).expect("valid");
        prop_assert_eq!(&inv.env, &vars);
        prop_assert_eq!(leaks(&inv.argv.join(" ")), None);
        texts.extend(renderings(&ok));
        texts.push(format!("{inv:?}"));

        for text in &texts {
            prop_assert_eq!(leaks(text), None, "{}", text);
        }
    }
}
