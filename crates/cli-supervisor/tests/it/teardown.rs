//! Ending the group: SIGTERM, grace, SIGKILL; leftovers; the setsid limit.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

use cli_supervisor::{Evidence, Leg, LegSpec, ProcTable, ProcessTable, SignalOutcome};

use crate::support::{alive, eventually, kill_pid, next_json, script};

fn sh(script_name: &str, grace: Duration) -> LegSpec {
    let mut spec = LegSpec::new(["/bin/sh".to_owned(), script(script_name)]);
    spec.grace = grace;
    spec
}

fn pid_field(value: &serde_json::Value, field: &str) -> i32 {
    value[field]
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .expect("fixture printed a pid")
}

#[tokio::test]
async fn term_ignoring_grandchild_is_killed_after_the_grace() {
    // contract: SUP-015
    // contract: SUP-021
    // contract: SUP-025
    let mut leg = Leg::spawn(sh(
        "term-ignoring-grandchild.sh",
        Duration::from_millis(300),
    ))
    .await
    .expect("spawn");
    let record = leg.record();
    let grandchild = pid_field(&next_json(&mut leg).await, "grandchild");
    assert_eq!(ProcTable.pgid(grandchild), Some(record.pgid));
    let started = std::time::Instant::now();
    let exit = leg.end().await.expect("end");
    // SIGKILL came only after the grace period was waited out.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "escalated before the grace ({:?})",
        started.elapsed()
    );
    // The leader itself died to SIGTERM (its returncode was set before the
    // escalation); only the descendant's membership kept the group alive.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&exit.status),
        Some(rustix::process::Signal::TERM.as_raw())
    );
    assert!(matches!(
        exit.teardown.term,
        Some(SignalOutcome::Sent {
            evidence: Evidence::Unreaped
        })
    ));
    // The leader died to SIGTERM; the grandchild's survival still escalated.
    assert!(matches!(
        exit.teardown.kill,
        Some(SignalOutcome::Sent {
            evidence: Evidence::Unreaped
        })
    ));
    assert!(exit.teardown.survivors.is_empty());
    assert!(eventually(|| !alive(grandchild)), "grandchild survived");
}

#[tokio::test]
async fn grandchild_left_by_a_leader_that_exits_at_once_is_ended() {
    // contract: SUP-001
    // contract: SUP-021
    let mut leg = Leg::spawn(sh("leader-exits-at-once.sh", Duration::from_millis(200)))
        .await
        .expect("spawn");
    let grandchild = pid_field(&next_json(&mut leg).await, "grandchild");
    assert!(leg.next_event().await.expect("read").is_none());
    let exit = leg.wait().await.expect("wait");
    assert!(exit.status.success());
    assert!(exit.teardown.kill.as_ref().is_some_and(SignalOutcome::sent));
    // The stronger property: the exited leader was kept unreaped until the
    // group was drained, so the captured group id was signalled on the
    // unrecyclable-pid evidence, never on a pid that could have been reissued.
    assert_eq!(
        exit.teardown.kill,
        Some(SignalOutcome::Sent {
            evidence: Evidence::Unreaped
        })
    );
    assert!(eventually(|| !alive(grandchild)), "grandchild survived");
}

#[tokio::test]
async fn setsid_escapee_is_out_of_reach() {
    // contract: SUP-032
    let mut leg = Leg::spawn(sh("setsid-escapee.sh", Duration::from_millis(200)))
        .await
        .expect("spawn");
    let record = leg.record();
    let escapee = pid_field(&next_json(&mut leg).await, "escapee");
    assert!(
        eventually(|| ProcTable.pgid(escapee) == Some(escapee)),
        "escapee left the group"
    );
    assert!(!ProcTable.scan_group(record.pgid).live.contains(&escapee));
    leg.end().await.expect("end");
    // Documented limit: a process group is not a containment boundary.
    assert!(
        alive(escapee),
        "the setsid escapee is not ended by end_child_group"
    );
    kill_pid(escapee);
    assert!(eventually(|| !alive(escapee)));
}

#[tokio::test]
async fn second_cancellation_mid_grace_still_kills_everything() {
    // contract: SUP-016
    // contract: SUP-022
    let mut leg = Leg::spawn(sh("term-ignoring-grandchild.sh", Duration::from_secs(3600)))
        .await
        .expect("spawn");
    let record = leg.record();
    let grandchild = pid_field(&next_json(&mut leg).await, "grandchild");
    {
        let mut ending = pin!(leg.end());
        // Drive the graceful path until the leader has died to SIGTERM and the
        // path is waiting out the (hour-long) grace, then cancel it.
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let in_grace = loop {
            if let Poll::Ready(result) = ending.as_mut().poll(&mut cx) {
                panic!("graceful path finished early: {result:?}");
            }
            if !alive(record.pid) {
                break true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(in_grace);
        assert!(alive(grandchild), "grandchild ignores SIGTERM");
    }
    assert!(
        eventually(|| !alive(grandchild)),
        "backstop killed the grandchild"
    );
    assert!(eventually(|| ProcTable
        .scan_group(record.pgid)
        .live
        .is_empty()));
}
