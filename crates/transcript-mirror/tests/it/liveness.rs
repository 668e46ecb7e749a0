//! Reconcile: liveness from last_message_at, completed means dormant,
//! reactivation through the audited override.

use std::time::Duration;

use state_sqlite::{MIRROR_RECONCILE_ID, ReconcileAction, Store};

use crate::common::{Env, S1, at_micros, claude_user, message, scaffold, write};

const WINDOW: i64 = 300_000_000;
const NOW: i64 = 1_900_000_000_000_000;

fn status(env: &Env, id: &str) -> String {
    env.text("SELECT status FROM sessions WHERE id = ?1", id)
        .expect("status")
}

fn mirrored(env: &Env, id: &str, last_message_at: i64) {
    write(
        &env.store,
        &scaffold(id, Some("acme")),
        &[message(&format!("{id}-m"), last_message_at)],
    );
}

fn reconcile(store: &Store, id: &str, now: i64) -> ReconcileAction {
    store
        .reconcile_mirror_session(id, now, WINDOW)
        .expect("reconcile")
}

// contract: SQL-060
#[test]
fn a_completed_mirror_session_is_dormant_and_resumes_with_its_transcript() {
    let env = Env::new();
    env.copy_fixtures();
    let mut mirror = env.mirror();
    // The fixtures end on 2026-11-30: idle at NOW, so completed.
    let first = mirror.pass(at_micros(NOW)).expect("pass");
    assert!(
        first.reconcile.completed.contains(&S1.to_owned()),
        "{first:#?}"
    );
    assert_eq!(status(&env, S1), "completed");
    // The transcript resumes: a line written 10 s before the next pass.
    let later = NOW + 3_600_000_000;
    crate::common::append(
        &env.claude_file(S1),
        &claude_user(
            S1,
            "resume-1",
            Some("a1000000-0000-4000-8000-000000000010"),
            later - 10_000_000,
            "back again",
        ),
    );
    let next = mirror.pass(at_micros(later)).expect("pass");
    assert_eq!(next.reconcile.reactivated, [S1.to_owned()]);
    assert_eq!(status(&env, S1), "running");
    // And it goes dormant again once idle.
    let idle = mirror.pass(at_micros(later + 2 * WINDOW)).expect("pass");
    assert_eq!(idle.reconcile.completed, [S1.to_owned()]);
    assert_eq!(status(&env, S1), "completed");
}

// contract: SQL-061
#[test]
fn liveness_is_judged_from_the_newest_message() {
    let env = Env::new();
    mirrored(&env, "live", NOW - 10_000_000);
    mirrored(&env, "idle", NOW - WINDOW - 1);
    assert_eq!(
        reconcile(&env.store, "live", NOW),
        ReconcileAction::Unchanged
    );
    assert_eq!(status(&env, "live"), "running");
    assert_eq!(
        reconcile(&env.store, "idle", NOW),
        ReconcileAction::Completed
    );
    assert_eq!(status(&env, "idle"), "completed");
    // The pass-level reconcile picks the same two.
    let mirror = transcript_mirror::Mirror::new(
        env.store.clone(),
        transcript_mirror::MirrorConfig {
            live_window: Duration::from_micros(WINDOW as u64),
            ..Default::default()
        },
    );
    mirrored(&env, "idle2", NOW - WINDOW - 1);
    let r = mirror.reconcile(NOW).expect("reconcile");
    assert_eq!(r.completed, ["idle2".to_owned()]);
}

// contract: SQL-062
#[test]
fn a_fresh_updated_at_does_not_make_an_idle_session_live() {
    let env = Env::new();
    mirrored(&env, "s", NOW - 2 * WINDOW);
    assert_eq!(reconcile(&env.store, "s", NOW), ReconcileAction::Completed);
    // The status write bumped updated_at to the wall clock; bump it further
    // into the "future" of the reconcile clock as well.
    env.exec("UPDATE sessions SET updated_at = 1900000000000000 WHERE id = 's'");
    let history = env.store.history("session", "s").expect("history").len();
    for _ in 0..3 {
        assert_eq!(reconcile(&env.store, "s", NOW), ReconcileAction::Unchanged);
    }
    assert_eq!(status(&env, "s"), "completed");
    assert_eq!(
        env.store.history("session", "s").expect("history").len(),
        history
    );
    assert!(
        env.store
            .admin_events("session", "s")
            .expect("events")
            .is_empty()
    );
}

// contract: SQL-063
#[test]
fn reactivation_from_any_terminal_status_is_an_audited_override() {
    for terminal in [
        "completed",
        "completed_empty",
        "failed",
        "timed_out",
        "aborted",
        "cancelled",
    ] {
        let env = Env::new();
        mirrored(&env, "s", NOW - 5_000_000);
        env.exec(&format!(
            "UPDATE sessions SET status = '{terminal}' WHERE id = 's'"
        ));
        assert_eq!(
            reconcile(&env.store, "s", NOW),
            ReconcileAction::Reactivated {
                from: terminal.into()
            }
        );
        assert_eq!(status(&env, "s"), "running");
        let last = env
            .store
            .history("session", "s")
            .expect("history")
            .pop()
            .expect("row");
        assert_eq!(last.from_status.as_deref(), Some(terminal));
        assert!(last.overridden, "{terminal}: the move is an override");
        assert_eq!(last.actor_type, "system");
        assert_eq!(last.actor_id, MIRROR_RECONCILE_ID);
        let events = env.store.admin_events("session", "s").expect("events");
        assert_eq!(events.len(), 1, "{terminal}");
        assert_eq!(events[0].kind, "transition.override");
        assert_eq!(
            (events[0].actor_type.as_str(), events[0].actor_id.as_str()),
            ("system", MIRROR_RECONCILE_ID)
        );
        assert_eq!(events[0].detail["from_status"], terminal);
        assert_eq!(events[0].detail["to_status"], "running");
        assert_eq!(
            events[0].detail["justification"],
            state_sqlite::REACTIVATION_JUSTIFICATION
        );
    }
    // A session that is not a mirror is never touched by the reconcile.
    let env = Env::new();
    mirrored(&env, "own", NOW - 5_000_000);
    env.exec("UPDATE sessions SET status = 'failed', kind = 'orchestrated' WHERE id = 'own'");
    assert_eq!(
        reconcile(&env.store, "own", NOW),
        ReconcileAction::NotMirrored
    );
    assert_eq!(status(&env, "own"), "failed");
}

// contract: SQL-064
#[test]
fn an_idle_session_on_another_terminal_status_is_left_alone() {
    for terminal in [
        "failed",
        "cancelled",
        "timed_out",
        "aborted",
        "completed_empty",
    ] {
        let env = Env::new();
        mirrored(&env, "s", NOW - 2 * WINDOW);
        env.exec(&format!(
            "UPDATE sessions SET status = '{terminal}' WHERE id = 's'"
        ));
        let history = env.store.history("session", "s").expect("history").len();
        assert_eq!(
            reconcile(&env.store, "s", NOW),
            ReconcileAction::LeftTerminal {
                status: terminal.into()
            }
        );
        assert_eq!(status(&env, "s"), terminal);
        assert_eq!(
            env.store.history("session", "s").expect("history").len(),
            history
        );
    }
}

// contract: SQL-065
#[test]
fn only_a_live_transcript_brings_a_terminal_session_back() {
    let env = Env::new();
    let s = scaffold("s", Some("acme"));
    write(&env.store, &s, &[message("old", NOW - 2 * WINDOW)]);
    assert_eq!(reconcile(&env.store, "s", NOW), ReconcileAction::Completed);
    // More transcript content arrives, but it is old (a backfill): still
    // idle, so still completed.
    write(&env.store, &s, &[message("older", NOW - 3 * WINDOW)]);
    assert_eq!(reconcile(&env.store, "s", NOW), ReconcileAction::Unchanged);
    assert_eq!(status(&env, "s"), "completed");
    env.exec("UPDATE sessions SET status = 'failed' WHERE id = 's'");
    assert_eq!(
        reconcile(&env.store, "s", NOW),
        ReconcileAction::LeftTerminal {
            status: "failed".into()
        }
    );
    // A message inside the live window does.
    write(&env.store, &s, &[message("fresh", NOW - 1_000_000)]);
    assert_eq!(
        reconcile(&env.store, "s", NOW),
        ReconcileAction::Reactivated {
            from: "failed".into()
        }
    );
    assert_eq!(status(&env, "s"), "running");
}
