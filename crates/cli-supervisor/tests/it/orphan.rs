//! A leg does not outlive its supervisor: the parent-death signal on the
//! leader (set from a thread that lives as long as the process) and the
//! orphan guard's sentinel for the rest of the group. Real processes: the
//! supervisor is this test binary re-run as a worker and SIGKILLed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_supervisor::{Leg, LegSpec, ProcTable, ProcessTable};

use crate::support::{live_with_marker, marker, script};

const WORKER: &str = "CLI_SUPERVISOR_ORPHAN_WORKER";
const WORKER_GUARD: &str = "CLI_SUPERVISOR_ORPHAN_WORKER_GUARD";

/// Worker mode: supervise a leg whose grandchild ignores SIGTERM, print the
/// leg's group id and the grandchild's pid, then wait to be killed.
fn worker(marker: &str, guard: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut spec = LegSpec::new([
            "/bin/sh".to_owned(),
            script("term-ignoring-grandchild.sh"),
            marker.to_owned(),
        ]);
        spec.orphan_guard = guard.then_some(Duration::from_millis(300));
        // Spawned from a runtime worker thread: without the long-lived
        // spawner thread the parent-death signal would be tied to it.
        let mut leg = tokio::spawn(Leg::spawn(spec))
            .await
            .expect("join")
            .expect("spawn");
        let first = leg.next_event().await.expect("event").expect("a line");
        let cli_supervisor::Event::Json { value, .. } = first else {
            panic!("not json: {first:?}");
        };
        let grandchild = value["grandchild"].as_i64().expect("grandchild pid");
        let line = format!("{} {grandchild}", leg.record().pgid);
        std::io::Write::write_all(&mut std::io::stdout(), format!("{line}\n").as_bytes())
            .expect("write");
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(leg);
    });
}

fn maybe_worker() -> bool {
    let Some(marker) = std::env::var_os(WORKER) else {
        return false;
    };
    worker(
        &marker.to_string_lossy(),
        std::env::var_os(WORKER_GUARD).is_some(),
    );
    true
}

/// Runs a worker, returns (worker, pgid, grandchild) once its leg is up.
#[allow(
    clippy::zombie_processes,
    reason = "the worker is returned to the caller, which kills and waits it"
)]
fn start_worker(test: &str, marker: &str, guard: bool) -> (std::process::Child, i32, i32) {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(WORKER, marker)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if guard {
        command.env(WORKER_GUARD, "1");
    }
    let mut child = command.spawn().expect("worker");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    let mut reader = BufReader::new(stdout);
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "worker ended"
        );
        let fields: Vec<i32> = line
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if let [pgid, grandchild] = fields[..] {
            return (child, pgid, grandchild);
        }
    }
}

fn wait_until(deadline: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + deadline;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn a_killed_supervisor_leaves_no_member_of_a_guarded_leg_group() {
    if maybe_worker() {
        return;
    }
    let mark = marker();
    let (mut worker, pgid, grandchild) = start_worker(
        "orphan::a_killed_supervisor_leaves_no_member_of_a_guarded_leg_group",
        &mark,
        true,
    );
    assert_eq!(ProcTable.pgid(grandchild), Some(pgid));
    worker.kill().expect("SIGKILL the supervisor");
    let _ = worker.wait();
    // Within 2 s the whole group is gone: the leader by its parent-death
    // signal, the SIGTERM-ignoring grandchild by the sentinel's SIGKILL.
    let gone = wait_until(Duration::from_secs(2), || {
        let scan = ProcTable.scan_group(pgid);
        scan.complete && scan.live.is_empty() && live_with_marker(&mark).is_empty()
    });
    assert!(
        gone,
        "group {pgid} still has {:?}",
        ProcTable.scan_group(pgid).live
    );
}

#[test]
fn without_the_guard_only_the_leader_dies_with_its_supervisor() {
    if maybe_worker() {
        return;
    }
    let mark = marker();
    let (mut worker, pgid, grandchild) = start_worker(
        "orphan::without_the_guard_only_the_leader_dies_with_its_supervisor",
        &mark,
        false,
    );
    let leader_start = ProcTable.start_time(pgid);
    assert!(leader_start.is_some());
    worker.kill().expect("SIGKILL the supervisor");
    let _ = worker.wait();
    // The leader gets its parent-death signal (even though it was spawned
    // from a runtime worker thread that is still alive, the signal is tied
    // to the spawner thread, which died with the process)...
    assert!(
        wait_until(Duration::from_secs(2), || ProcTable.start_time(pgid)
            != leader_start),
        "the leader outlived its supervisor"
    );
    // ...but a descendant is re-parented and survives: the stated reason
    // for the orphan guard. Clean it up by its pid (still alive, ours to end).
    let grandchild_start = ProcTable.start_time(grandchild);
    assert!(grandchild_start.is_some(), "the grandchild survived");
    if let Some(pid) = rustix::process::Pid::from_raw(grandchild) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

#[test]
fn a_leg_outlives_the_thread_that_asked_for_it() {
    // The parent-death signal fires when the forking *thread* exits: a leg
    // spawned on a short-lived thread must still be running after that
    // thread is gone.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let handle = runtime.handle().clone();
    let mark = marker();
    let argv = [
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        "sleep 30; :".to_owned(),
        mark.clone(),
    ];
    let leg = std::thread::spawn(move || handle.block_on(Leg::spawn(LegSpec::new(argv))))
        .join()
        .expect("thread")
        .expect("spawn");
    let pid = leg.record().pid;
    let start = leg.record().create_time;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        ProcTable.start_time(pid),
        start,
        "the leg died with the thread that spawned it"
    );
    let exit = runtime.block_on(leg.end()).expect("end");
    assert!(!exit.status.success());
    assert!(live_with_marker(&mark).is_empty());
}

#[tokio::test]
async fn a_normal_end_dismisses_the_sentinel_without_a_signal() {
    let mut spec = LegSpec::new(["/bin/sh", "-c", "echo '{\"ok\":1}'"]);
    spec.orphan_guard = Some(Duration::from_millis(100));
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let sentinel = leg.orphan_guard_pid().expect("a sentinel stands guard");
    assert_eq!(ProcTable.pgid(sentinel), Some(leg.record().pgid));
    while leg.next_event().await.expect("event").is_some() {}
    let exit = leg.wait().await.expect("wait");
    assert!(exit.status.success());
    // The leader exited on its own and the dismissed sentinel left: the
    // teardown found the group empty and signalled nobody.
    assert_eq!(exit.teardown.term, None);
    assert_eq!(exit.teardown.kill, None);
    assert_eq!(ProcTable.start_time(sentinel), None);
}
