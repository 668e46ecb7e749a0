//! Spawning: the record, on_spawn ordering/async/failure, env and stdin.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cli_supervisor::{
    ChildEnv, EnvPolicy, Error, GroupScan, Leg, LegSpec, OnSpawn, ProcTable, ProcessTable,
    SpawnedProcess, StdinPolicy, observe_spawned,
};
use tokio::io::AsyncWriteExt;

use crate::support::{
    assert_all_gone, capture_logs, eventually, fixture, marker, next_json, runtime,
};

#[tokio::test]
async fn record_has_pid_equal_pgid_and_start_time() {
    // contract: SUP-002
    // contract: SUP-005
    let mut leg = Leg::spawn(LegSpec::new([fixture(), "hang"]))
        .await
        .expect("spawn");
    let record = leg.record();
    assert_eq!(record.pgid, record.pid);
    assert_eq!(ProcTable.pgid(record.pid), Some(record.pid));
    let create_time = record.create_time.expect("start time established");
    assert_eq!(ProcTable.start_time(record.pid), Some(create_time));
    next_json(&mut leg).await;
    leg.end().await.expect("end");
}

#[tokio::test]
async fn on_spawn_runs_once_before_first_byte() {
    // contract: SUP-004
    let calls = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Option<SpawnedProcess>>> = Arc::default();
    let mut spec = LegSpec::new([fixture(), "lines", "3", "0", "0"]);
    spec.on_spawn = Some(OnSpawn::sync({
        let calls = Arc::clone(&calls);
        let seen = Arc::clone(&seen);
        move |record| {
            calls.fetch_add(1, Ordering::SeqCst);
            *seen.lock().expect("lock") = Some(*record);
            Ok(())
        }
    }));
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    // The record is visible before the first event is even asked for.
    assert_eq!(*seen.lock().expect("lock"), Some(leg.record()));
    let mut events = 0;
    while leg.next_event().await.expect("read").is_some() {
        events += 1;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
    assert_eq!(events, 3);
    leg.wait().await.expect("wait");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn async_on_spawn_is_awaited_before_output() {
    // contract: SUP-011
    // contract: SUP-012
    for _ in 0..3 {
        let done = Arc::new(AtomicBool::new(false));
        let mut spec = LegSpec::new([fixture(), "lines", "1", "0", "0"]);
        spec.on_spawn = Some(OnSpawn::asynchronous({
            let done = Arc::clone(&done);
            move |_record| {
                let done = Arc::clone(&done);
                async move {
                    // A slow recorder: the first chunk waits for it.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    tokio::task::yield_now().await;
                    done.store(true, Ordering::SeqCst);
                    Ok(())
                }
            }
        }));
        let mut leg = Leg::spawn(spec).await.expect("spawn");
        assert!(
            done.load(Ordering::SeqCst),
            "recorder finished before spawn returned"
        );
        next_json(&mut leg).await;
        leg.wait().await.expect("wait");
    }
}

#[tokio::test]
async fn a_shared_on_spawn_hears_each_leg_once() {
    // contract: SUP-004
    // A clone is the very same callback (a copied request or endpoint
    // reports to the original receiver), and each leg calls it once.
    let seen: Arc<Mutex<Vec<i32>>> = Arc::default();
    let callback = OnSpawn::sync({
        let seen = Arc::clone(&seen);
        move |record| {
            seen.lock().expect("lock").push(record.pid);
            Ok(())
        }
    });
    let copy = callback.clone();
    assert!(copy.same_as(&callback) && copy == callback);
    assert!(!OnSpawn::sync(|_| Ok(())).same_as(&callback));
    let mut pids = Vec::new();
    for on_spawn in [callback, copy] {
        let mut spec = LegSpec::new([fixture(), "lines", "1", "0", "0"]);
        spec.on_spawn = Some(on_spawn);
        let mut leg = Leg::spawn(spec).await.expect("spawn");
        pids.push(leg.record().pid);
        next_json(&mut leg).await;
        leg.wait().await.expect("wait");
    }
    assert_eq!(*seen.lock().expect("lock"), pids);
}

#[tokio::test]
async fn a_chained_on_spawn_stops_at_the_first_failure() {
    // contract: SUP-013
    let order: Arc<Mutex<Vec<&str>>> = Arc::default();
    let step = |name: &'static str, ok: bool| {
        let order = Arc::clone(&order);
        OnSpawn::asynchronous(move |_record| {
            let order = Arc::clone(&order);
            async move {
                tokio::task::yield_now().await;
                order.lock().expect("lock").push(name);
                if ok { Ok(()) } else { Err("down".into()) }
            }
        })
    };
    let marker = marker();
    let mut spec = LegSpec::new([fixture(), "hang", marker.as_str()]);
    spec.grace = Duration::from_millis(200);
    spec.on_spawn = Some(step("first", false).then(step("second", true)));
    let error = Leg::spawn(spec).await.expect_err("the chain failed");
    assert!(matches!(error, Error::OnSpawn { .. }), "{error:?}");
    assert_eq!(*order.lock().expect("lock"), ["first"]);
    assert_all_gone(&marker, None);

    order.lock().expect("lock").clear();
    let mut spec = LegSpec::new([fixture(), "lines", "1", "0", "0"]);
    spec.on_spawn = Some(step("first", true).then(step("second", true)));
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert_eq!(*order.lock().expect("lock"), ["first", "second"]);
    next_json(&mut leg).await;
    leg.wait().await.expect("wait");
}

#[test]
fn failing_on_spawn_ends_the_child_and_propagates() {
    // contract: SUP-013
    // contract: SUP-020
    let marker = marker();
    let pgid = Arc::new(Mutex::new(None));
    let mut spec = LegSpec::new([fixture(), "hang", marker.as_str()]);
    spec.grace = Duration::from_millis(200);
    spec.on_spawn = Some(OnSpawn::sync({
        let pgid = Arc::clone(&pgid);
        move |record| {
            *pgid.lock().expect("lock") = Some(record.pgid);
            Err("recorder is down".into())
        }
    }));
    let (result, logs) = capture_logs(|| runtime().block_on(Leg::spawn(spec)));
    let error = result.expect_err("on_spawn failure propagates");
    assert!(matches!(error, Error::OnSpawn { .. }), "{error:?}");
    let pgid = *pgid.lock().expect("lock");
    assert_all_gone(&marker, pgid);
    // The child was ended by the teardown routine, not left to the Drop backstop.
    assert!(logs.contains("leg ended"), "{logs}");
    assert!(!logs.contains("backstop ran"), "{logs}");
}

#[tokio::test]
async fn panicking_on_spawn_ends_the_child_and_propagates() {
    // contract: SUP-013
    let marker = marker();
    let mut spec = LegSpec::new([fixture(), "hang", marker.as_str()]);
    spec.grace = Duration::from_millis(200);
    spec.on_spawn = Some(OnSpawn::sync(|_| panic!("recorder bug")));
    let joined = tokio::spawn(Leg::spawn(spec)).await;
    assert!(joined.expect_err("panic propagates").is_panic());
    assert_all_gone(&marker, None);
}

#[tokio::test]
async fn cancelled_during_on_spawn_ends_the_child() {
    // contract: SUP-014
    let marker = marker();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let mut spec = LegSpec::new([fixture(), "hang", marker.as_str()]);
    spec.on_spawn = Some(OnSpawn::asynchronous(move |record| {
        let tx = tx.lock().expect("lock").take();
        async move {
            if let Some(tx) = tx {
                let _ = tx.send(record);
            }
            std::future::pending::<()>().await;
            Ok(())
        }
    }));
    let spawning = tokio::spawn(Leg::spawn(spec));
    let record = rx.await.expect("on_spawn saw the child");
    spawning.abort();
    assert!(spawning.await.expect_err("cancelled").is_cancelled());
    assert_all_gone(&marker, Some(record.pgid));
}

/// A process table whose answers are scripted.
struct Scripted {
    start_times: Mutex<Vec<Option<u64>>>,
    pgid: Option<i32>,
}

impl ProcessTable for Scripted {
    fn start_time(&self, _pid: i32) -> Option<u64> {
        self.start_times.lock().expect("lock").remove(0)
    }
    fn pgid(&self, _pid: i32) -> Option<i32> {
        self.pgid
    }
    fn scan_group(&self, _pgid: i32) -> GroupScan {
        GroupScan::default()
    }
}

#[test]
fn observe_spawned_brackets_the_group_read() {
    // contract: SUP-009
    let check = |times: Vec<Option<u64>>, pgid: Option<i32>, expect: Option<u64>| {
        let table = Scripted {
            start_times: Mutex::new(times),
            pgid,
        };
        let record = observe_spawned(&table, 4242);
        assert_eq!(record.pid, 4242);
        assert_eq!(record.pgid, 4242);
        assert_eq!(record.create_time, expect);
    };
    check(vec![Some(7), Some(7)], Some(4242), Some(7));
    check(vec![Some(7), Some(8)], Some(4242), None);
    check(vec![None, Some(7)], Some(4242), None);
    check(vec![Some(7), None], Some(4242), None);
    check(vec![Some(7), Some(7)], Some(99), None);
    check(vec![Some(7), Some(7)], None, None);
}

#[test]
fn start_time_probe_answers_none_for_zombie_and_reaped() {
    // contract: SUP-008
    // contract: SUP-010
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let pid = i32::try_from(child.id()).expect("pid fits");
    let zombie = eventually(|| {
        procfs::process::Process::new(pid)
            .and_then(|p| p.stat())
            .is_ok_and(|stat| stat.state == 'Z')
    });
    assert!(zombie, "child became a zombie");
    assert_eq!(ProcTable.start_time(pid), None);
    assert_eq!(observe_spawned(&ProcTable, pid).create_time, None);
    child.wait().expect("reap");
    assert_eq!(ProcTable.start_time(pid), None);
    // A child reaped before the first probe gets no start time.
    assert_eq!(observe_spawned(&ProcTable, pid).create_time, None);
}

#[tokio::test]
async fn explicit_env_replaces_the_parent_environment() {
    // contract: SUP-061
    let path = std::env::var_os("PATH").unwrap_or_default();
    let env = ChildEnv::try_from_pairs([("PATH", path)]).expect("valid env");
    let mut spec = LegSpec::new([fixture(), "envcount"]);
    spec.env = EnvPolicy::Explicit(env);
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    assert_eq!(next_json(&mut leg).await["count"], 1);
    leg.wait().await.expect("wait");

    let mut spec = LegSpec::new([fixture(), "env", "PATH", "CARGO_MANIFEST_DIR"]);
    spec.env = EnvPolicy::Explicit(ChildEnv::try_from_pairs([("PATH", "/bin")]).expect("valid"));
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let seen = next_json(&mut leg).await;
    assert_eq!(seen["PATH"], "/bin");
    assert!(seen["CARGO_MANIFEST_DIR"].is_null());
    leg.wait().await.expect("wait");
}

#[tokio::test]
async fn inherited_env_is_the_parent_environment() {
    // contract: SUP-061
    // The child sees the whole parent environment, not just PATH.
    let mut leg = Leg::spawn(LegSpec::new([fixture(), "envcount"]))
        .await
        .expect("spawn");
    let parent = std::env::vars_os().count();
    assert_eq!(next_json(&mut leg).await["count"], parent);
    leg.wait().await.expect("wait");

    let mut leg = Leg::spawn(LegSpec::new([fixture(), "env", "PATH"]))
        .await
        .expect("spawn");
    let seen = next_json(&mut leg).await;
    let ours = std::env::var("PATH").expect("PATH is set for tests");
    assert_eq!(seen["PATH"], ours.as_str());
    leg.wait().await.expect("wait");
}

#[tokio::test]
async fn piped_stdin_reaches_the_child() {
    let mut spec = LegSpec::new([fixture(), "stdin"]);
    spec.stdin = StdinPolicy::Piped;
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let mut stdin = leg.take_stdin().expect("piped stdin");
    stdin.write_all(b"hello\n").await.expect("write");
    drop(stdin);
    assert_eq!(next_json(&mut leg).await["echo"], "hello");
    assert!(leg.next_event().await.expect("read").is_none());
    assert!(leg.wait().await.expect("wait").status.success());
}

#[tokio::test]
async fn empty_argv_and_missing_program_are_errors() {
    assert!(matches!(
        Leg::spawn(LegSpec::default()).await,
        Err(Error::EmptyArgv)
    ));
    let error = Leg::spawn(LegSpec::new(["/nonexistent/agent-cli"]))
        .await
        .expect_err("no such program");
    assert!(matches!(error, Error::Spawn { .. }), "{error:?}");
}

#[test]
fn leg_futures_can_move_across_tasks() {
    fn send<T: Send + 'static>(_: &T) {}
    fn borrowed_send<T: Send>(_: &T) {}
    send(&Leg::spawn(LegSpec::new(["x"])));
    let rt = crate::support::runtime();
    let mut leg = rt
        .block_on(Leg::spawn(LegSpec::new([
            fixture(),
            "lines",
            "1",
            "0",
            "0",
        ])))
        .expect("spawn");
    borrowed_send(&leg.next_event());
    rt.block_on(async { while leg.next_event().await.expect("read").is_some() {} });
    let waiting = leg.wait();
    send(&waiting);
    assert!(rt.block_on(waiting).expect("wait").status.success());
}
