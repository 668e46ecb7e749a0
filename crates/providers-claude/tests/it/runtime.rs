//! The runtime-only `env`/`on_spawn` fields of `ClaudeCodeRequest`: kept
//! in memory and passed to the child, out of every dump and rendering. The
//! checks are test-support's shared suite, run against this request type.

use std::collections::BTreeMap;

use proptest::prelude::*;
use providers_claude::{ClaudeCodeRequest, ClaudeProvider, Error};
use providers_core::{AgentRequest, ChildEnv, CliCall, Invocation, OnSpawn, Provider};
use test_support::runtime_only::{self, RuntimeOnlyCase};

struct Claude;

impl RuntimeOnlyCase for Claude {
    type Request = ClaudeCodeRequest;
    type Error = Error;
    const SECRET: (&'static str, &'static str) = ("ANTHROPIC_API_KEY", "sk-ant-secret-value-1");

    fn request(prompt: &str, env: Option<ChildEnv>, on_spawn: Option<OnSpawn>) -> Self::Request {
        ClaudeCodeRequest {
            prompt: prompt.into(),
            model: Some("sonnet".into()),
            env,
            on_spawn,
            ..Default::default()
        }
    }

    /// Refused by path containment.
    fn rejected_later(env: ChildEnv) -> Self::Request {
        ClaudeCodeRequest {
            prompt: "p".into(),
            workspace: Some("/repo".into()),
            settings: Some("../outside.json".into()),
            env: Some(env),
            ..Default::default()
        }
    }

    fn env(req: &Self::Request) -> Option<&ChildEnv> {
        req.env.as_ref()
    }

    fn on_spawn(req: &Self::Request) -> Option<&OnSpawn> {
        req.on_spawn.as_ref()
    }

    fn from_call(call: &CliCall) -> Result<Self::Request, Error> {
        ClaudeCodeRequest::from_call(call)
    }

    fn invocation_for(req: &Self::Request) -> Result<Invocation, Error> {
        ClaudeProvider::default().invocation_for(req)
    }

    fn invocation(req: &AgentRequest) -> Result<Invocation, Error> {
        ClaudeProvider::default().invocation(req)
    }
}

#[test]
fn a_populated_request_dumps_without_env_or_on_spawn() {
    // contract: SUP-033
    // contract: SUP-036
    // Only the dump channel is looked at here; rendering has its own test.
    let dump = runtime_only::dump_leaves_out_runtime_fields::<Claude>();
    assert!(
        dump.as_object()
            .is_some_and(|o| o.contains_key("mcp_servers"))
    );
}

#[test]
fn debug_renders_env_as_a_count_and_on_spawn_opaquely() {
    // contract: SUP-035
    // contract: SUP-036
    // Only the rendering channel is looked at here; the dump has its own test.
    runtime_only::debug_renders_runtime_fields_opaquely::<Claude>();
}

#[test]
fn the_call_entry_keeps_the_wiring_and_the_invocation_gets_the_env() {
    runtime_only::call_entry_keeps_the_wiring::<Claude>();
}

fn secret_env() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("LEAKVAR_[A-Z0-9_]{4,12}", "sk-[A-Za-z0-9]{16,40}", 1..6)
}

proptest! {
    #[test]
    fn random_secrets_never_appear_in_any_rendering_or_error(vars in secret_env()) {
        // contract: SUP-039
        runtime_only::secrets_never_rendered::<Claude>(&vars);
    }
}
