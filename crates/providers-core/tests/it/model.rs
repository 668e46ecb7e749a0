//! Model copies, adoption, the manager and the rate-limited processor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use providers_core::{
    Backoff, ChildEnv, CircuitBreaker, CliCall, Close, Endpoint, EndpointConfig, Error,
    EventStatus, ForwardedMcp, KwargValue, Model, ModelManager, OnSpawn, RateLimitedProcessor,
    RetryConfig, SpawnInfo,
};
use serde_json::json;

fn env(v: &str) -> ChildEnv {
    ChildEnv::new(BTreeMap::from([("K".to_owned(), v.to_owned())]))
}

fn recorder() -> (OnSpawn, Arc<Mutex<Vec<u32>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    (
        OnSpawn::new(move |i: &SpawnInfo| s.lock().unwrap().push(i.pid)),
        seen,
    )
}

fn agentic_model() -> (Model, Arc<Mutex<Vec<u32>>>) {
    let (cb, seen) = recorder();
    let mut c = EndpointConfig::new("claude");
    c.update("env", KwargValue::Env(env("orig")));
    c.update("on_spawn", KwargValue::OnSpawn(cb));
    (Model::new(Endpoint::agentic(&c).unwrap()), seen)
}

fn spawn(m: &Model, pid: u32) -> Option<ChildEnv> {
    let p = m.endpoint().create_payload(&CliCall::default()).unwrap();
    if let Some(cb) = &p.on_spawn {
        cb.call(&SpawnInfo { pid });
    }
    p.env
}

#[test]
fn copy_shares_the_callback_shallowly() {
    // contract: PRV-014
    let (mut m, seen) = agentic_model();
    let c = m.copy(false, false).unwrap();
    let a = m.endpoint().runtime().unwrap().on_spawn.clone().unwrap();
    let b = c.endpoint().runtime().unwrap().on_spawn.clone().unwrap();
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
    let mut m = Model::new(Endpoint::agentic(&EndpointConfig::new("codex")).unwrap());
    let (cb, seen) = recorder();
    m.endpoint_mut()
        .config_mut()
        .update("env", KwargValue::Env(env("late")));
    m.endpoint_mut()
        .config_mut()
        .update("on_spawn", KwargValue::OnSpawn(cb));
    let c = m.copy(false, false).unwrap();
    assert_eq!(spawn(&c, 5), Some(env("late")));
    assert_eq!(*seen.lock().unwrap(), [5]);
}

#[test]
fn draining_for_a_copy_does_not_take_from_the_original() {
    // contract: PRV-016
    let mut m = Model::new(Endpoint::agentic(&EndpointConfig::new("codex")).unwrap());
    let (cb, seen) = recorder();
    m.endpoint_mut()
        .config_mut()
        .update("env", KwargValue::Env(env("late")));
    m.endpoint_mut()
        .config_mut()
        .update("on_spawn", KwargValue::OnSpawn(cb));
    let before = spawn(&m, 1);
    let _c = m.copy(false, false).unwrap();
    assert_eq!(spawn(&m, 2), before);
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
}

#[test]
fn endpoint_instance_adopts_supplied_runtime_values() {
    // contract: PRV-017
    let ep = Endpoint::agentic(&EndpointConfig::new("claude")).unwrap();
    let (cb, seen) = recorder();
    let m = Model::with_endpoint(ep, Some(env("given")), Some(cb)).unwrap();
    assert_eq!(spawn(&m, 9), Some(env("given")));
    assert_eq!(*seen.lock().unwrap(), [9]);
}

#[test]
fn adopting_onto_an_endpoint_without_runtime_state_refuses() {
    // contract: PRV-018
    let ep = Endpoint::plain(&EndpointConfig::new("openai"));
    assert!(matches!(
        Model::with_endpoint(ep, Some(env("x")), None),
        Err(Error::NoRuntimeState(_))
    ));
    let ep = Endpoint::plain(&EndpointConfig::new("openai"));
    assert!(
        Model::with_endpoint(ep, None, None).is_ok(),
        "nothing supplied, nothing refused"
    );
}

#[test]
fn adopting_none_never_clears() {
    // contract: PRV-019
    let (m, seen) = agentic_model();
    let mut ep = Endpoint::agentic(m.endpoint().config()).unwrap();
    m.endpoint().copy_runtime_state_to(&mut ep);
    ep.adopt_runtime_state(None, None).unwrap();
    let (cb2, _) = recorder();
    ep.adopt_runtime_state(None, Some(cb2)).unwrap();
    let m2 = Model::new(ep);
    assert_eq!(
        spawn(&m2, 1),
        Some(env("orig")),
        "env kept when only on_spawn supplied"
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn copy_has_equal_independent_config_and_fresh_id() {
    // contract: PRV-023
    let mut c = EndpointConfig::new("claude");
    c.update("max_turns", KwargValue::Json(json!(3)));
    let mut m = Model::new(Endpoint::agentic(&c).unwrap());
    let mut k = m.copy(false, false).unwrap();
    assert_ne!(m.id(), k.id());
    assert_eq!(m.to_dict(), k.to_dict());
    k.endpoint_mut()
        .config_mut()
        .update("max_turns", KwargValue::Json(json!(9)));
    assert_eq!(m.to_dict()["endpoint"]["kwargs"]["max_turns"], 3);
}

#[test]
fn share_session_only_between_agentic_endpoints() {
    // contract: PRV-024
    let (mut m, _) = agentic_model();
    m.endpoint_mut().set_session_id(Some("sess-1".into()));
    assert_eq!(
        m.copy(true, false).unwrap().endpoint().session_id(),
        Some("sess-1")
    );
    assert_eq!(m.copy(false, false).unwrap().endpoint().session_id(), None);
    let mut plain = Model::new(Endpoint::plain(&EndpointConfig::new("openai")));
    plain.endpoint_mut().set_session_id(Some("x".into()));
    assert_eq!(
        plain.copy(true, false).unwrap().endpoint().session_id(),
        None
    );
}

#[test]
fn share_executor_reuses_the_same_instance() {
    // contract: PRV-025
    let (mut m, _) = agentic_model();
    let shared = m.copy(false, true).unwrap();
    assert!(Arc::ptr_eq(m.executor(), shared.executor()));
    let own = m.copy(false, false).unwrap();
    assert!(!Arc::ptr_eq(m.executor(), own.executor()));
    assert_eq!(own.endpoint().session_id(), None);
}

#[test]
fn retry_and_breaker_are_shared_by_reference() {
    // contract: PRV-026
    let (mut m, _) = agentic_model();
    m.retry_config = Some(Arc::new(RetryConfig {
        max_retries: 2,
        backoff: Backoff::default(),
        retry_on: |_| true,
    }));
    m.circuit_breaker = Some(Arc::new(CircuitBreaker {
        failure_threshold: 5,
    }));
    let c = m.copy(false, false).unwrap();
    assert!(Arc::ptr_eq(
        m.retry_config.as_ref().unwrap(),
        c.retry_config.as_ref().unwrap()
    ));
    assert!(Arc::ptr_eq(
        m.circuit_breaker.as_ref().unwrap(),
        c.circuit_breaker.as_ref().unwrap()
    ));
}

#[test]
fn in_flight_calls_are_removed_on_drop() {
    // contract: PRV-022
    let (m, _) = agentic_model();
    let g1 = m.begin_call();
    let g2 = m.begin_call();
    assert_eq!(m.executor().lock().unwrap().in_flight(), 2);
    drop(g1);
    assert_eq!(m.executor().lock().unwrap().in_flight(), 1);
    // A future owning the guard dropped mid-flight (cancellation) cleans up.
    let fut = async move {
        let _g = g2;
        std::future::pending::<()>().await;
    };
    drop(fut);
    assert_eq!(m.executor().lock().unwrap().in_flight(), 0);
}

#[test]
fn shutdown_closes_every_model_and_is_idempotent() {
    // contract: PRV-027, PRV-028
    let mut mgr = ModelManager::new();
    for _ in 0..3 {
        mgr.register(agentic_model().0);
    }
    assert!(mgr.shutdown().is_empty());
    assert!(
        mgr.models()
            .iter()
            .all(|m| m.executor().lock().unwrap().is_stopped())
    );
    assert!(mgr.shutdown().is_empty(), "second call does nothing");
}

struct Flaky {
    mode: u8,
    closed: Arc<Mutex<Vec<u8>>>,
}

impl Close for Flaky {
    fn close(&self) -> Result<(), String> {
        match self.mode {
            1 => Err("broken endpoint".into()),
            2 => panic!("close panicked in test"),
            _ => {
                self.closed.lock().unwrap().push(self.mode);
                Ok(())
            }
        }
    }
}

#[test]
fn one_failing_close_does_not_block_the_others() {
    // contract: PRV-029
    let closed = Arc::new(Mutex::new(Vec::new()));
    let mut mgr = ModelManager::new();
    for mode in [0, 1, 2, 3] {
        mgr.register(Flaky {
            mode,
            closed: Arc::clone(&closed),
        });
    }
    let failures = mgr.shutdown();
    assert_eq!(failures.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(*closed.lock().unwrap(), [0, 3]);
}

#[test]
fn denial_defers_and_ticks_redrive() {
    // contract: PRV-035, PRV-037
    let mut p = RateLimitedProcessor::new(2);
    p.submit(1, 1, true);
    p.submit(2, 1, true);
    p.submit(3, 1, true);
    p.submit(4, 1, false);
    p.process();
    assert_eq!(p.status(1), Some(&EventStatus::Completed));
    assert_eq!(
        p.status(3),
        Some(&EventStatus::Pending),
        "denied: deferred, not terminal"
    );
    assert_eq!(p.status(4), Some(&EventStatus::Pending));
    p.tick();
    assert_eq!(
        p.status(3),
        Some(&EventStatus::Completed),
        "re-driven without resubmission"
    );
    assert_eq!(
        p.status(4),
        Some(&EventStatus::Rejected),
        "a permission rejection is terminal"
    );
    p.stop();
    p.stop();
    p.submit(5, 1, true);
    p.tick();
    assert_eq!(p.status(5), Some(&EventStatus::Pending));
}

#[test]
fn forwarding_never_mutates_the_shared_model() {
    // contract: PRV-096
    let (mut m, _) = agentic_model();
    m.endpoint_mut().set_session_id(Some("s".into()));
    let before = m.to_dict();
    let fwd = ForwardedMcp {
        servers: json!({"fs": {"command": "x"}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        exclusive: true,
    };
    let c = m.with_forwarded_mcp(&fwd).unwrap();
    assert_eq!(m.to_dict(), before, "original unchanged");
    assert_eq!(
        c.to_dict()["endpoint"]["kwargs"]["mcp_servers"],
        json!({"fs": {"command": "x"}})
    );
    assert_eq!(c.to_dict()["endpoint"]["kwargs"]["strict_mcp_config"], true);
    assert!(Arc::ptr_eq(m.executor(), c.executor()));
    assert_eq!(c.endpoint().session_id(), Some("s"));
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

#[test]
fn cancelling_the_replenisher_before_its_loop_is_harmless() {
    // contract: PRV-034
    let (m, _) = agentic_model();
    let exec = Arc::clone(m.executor());
    // Dropped before it was ever polled: the loop was never reached.
    let fut =
        providers_core::run_replenisher(&exec, std::time::Duration::from_millis(1), async |_| {});
    drop(fut);
    // Aborted after start-up, parked in its sleep.
    let rt = runtime();
    let e2 = Arc::clone(&exec);
    rt.block_on(async move {
        let task = tokio::spawn(async move {
            providers_core::run_replenisher(&e2, std::time::Duration::from_millis(1), async |_| {
                std::future::pending::<()>().await;
            })
            .await;
        });
        tokio::task::yield_now().await;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
    });
    // The cancellation was absorbed: nothing poisoned, nothing stopped, and
    // the processor still replenishes normally until it is closed.
    assert!(!exec.is_poisoned());
    {
        let mut p = exec.lock().unwrap();
        assert!(!p.is_stopped(), "only close() stops it");
        p.submit(u64::MAX, 1, true);
        p.tick();
        assert_eq!(p.status(u64::MAX), Some(&EventStatus::Completed));
    }
    m.close();
    assert!(exec.lock().unwrap().is_stopped());
}

#[test]
fn closing_models_in_sequence_closes_all_despite_cancelled_tasks() {
    // contract: PRV-036
    let rt = runtime();
    let mut mgr = ModelManager::new();
    for _ in 0..3 {
        mgr.register(agentic_model().0);
    }
    let execs: Vec<_> = mgr
        .models()
        .iter()
        .map(|m| Arc::clone(m.executor()))
        .collect();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for e in &execs {
            let e = Arc::clone(e);
            tasks.push(tokio::spawn(async move {
                providers_core::run_replenisher(
                    &e,
                    std::time::Duration::from_millis(1),
                    async |_| {
                        tokio::task::yield_now().await;
                    },
                )
                .await;
            }));
        }
        tokio::task::yield_now().await;
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    // The cancelled tasks stopped nothing themselves: shutdown does the closing.
    assert!(execs.iter().all(|e| !e.lock().unwrap().is_stopped()));
    assert!(mgr.shutdown().is_empty());
    assert!(execs.iter().all(|e| e.lock().unwrap().is_stopped()));
}

#[test]
fn replenisher_ends_once_stopped() {
    let mut p = RateLimitedProcessor::new(1);
    p.submit(1, 1, true);
    p.submit(2, 1, true);
    let p = Mutex::new(p);
    let ticks = std::cell::Cell::new(0);
    runtime().block_on(providers_core::run_replenisher(
        &p,
        std::time::Duration::ZERO,
        async |_| {
            ticks.set(ticks.get() + 1);
            if ticks.get() == 2 {
                p.lock().unwrap().stop();
            }
        },
    ));
    assert_eq!(p.lock().unwrap().status(2), Some(&EventStatus::Completed));
}
