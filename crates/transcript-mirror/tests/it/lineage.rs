//! Lineage links from parentUuid.

use std::time::SystemTime;

use state_sqlite::LineageOutcome;

use crate::common::{Env, S1, S2, append, claude_user};

fn lineage(env: &Env, id: &str) -> Option<serde_json::Value> {
    let meta = env.text("SELECT node_metadata FROM sessions WHERE id = ?1", id)?;
    let v: serde_json::Value = serde_json::from_str(&meta).expect("node_metadata is JSON");
    v.get("lineage").cloned()
}

// contract: SQL-066
#[test]
fn a_continuation_links_to_the_session_it_continues() {
    let env = Env::new();
    env.copy_fixtures();
    let report = env.mirror().pass(SystemTime::now()).expect("pass");
    let link = lineage(&env, S2).expect("S2 is linked");
    assert_eq!(link["parent_session_id"], S1);
    assert_eq!(
        link["parent_event_uuid"],
        "a1000000-0000-4000-8000-000000000010"
    );
    // The rest of node_metadata is kept.
    let meta: serde_json::Value = serde_json::from_str(
        &env.text("SELECT node_metadata FROM sessions WHERE id = ?1", S2)
            .expect("meta"),
    )
    .expect("json");
    assert_eq!(meta["process_identity_mode"], "external");
    assert!(report.files.iter().any(|f| matches!(&f.lineage, Some(LineageOutcome::Linked { parent_session_id, .. }) if parent_session_id == S1)));
}

// contract: SQL-066
#[test]
fn a_continuation_mirrored_before_its_parent_is_linked_on_a_later_pass() {
    let env = Env::new();
    let fixtures = crate::common::fixtures()
        .join("claude")
        .join(crate::common::PROJECT_DIR);
    let child = env.claude_file(S2);
    std::fs::copy(fixtures.join(format!("{S2}.jsonl")), &child).expect("copy");
    let mut mirror = env.mirror();
    mirror.pass(SystemTime::now()).expect("pass");
    assert_eq!(lineage(&env, S2), None, "the parent is not mirrored yet");
    std::fs::copy(fixtures.join(format!("{S1}.jsonl")), env.claude_file(S1)).expect("copy");
    // Another process (fresh state, stored cursors) picks it up.
    env.mirror().pass(SystemTime::now()).expect("pass");
    assert_eq!(lineage(&env, S2).expect("linked")["parent_session_id"], S1);
}

// contract: SQL-067
#[test]
fn no_link_without_a_resolvable_parent_in_another_session() {
    let env = Env::new();
    let t = 1_800_000_000_000_000;
    // Absent: a first event with parentUuid null.
    append(
        &env.claude_file("root"),
        &claude_user("root", "r1", None, t, "hi"),
    );
    // Unresolved: a pointer to an event no session holds.
    append(
        &env.claude_file("dangling"),
        &claude_user("dangling", "d1", Some("no-such-event"), t, "hi"),
    );
    // Same session: the first conversation event points at an earlier
    // (system) event of its own transcript.
    append(
        &env.claude_file("self"),
        "{\"type\":\"system\",\"subtype\":\"informational\",\"uuid\":\"x0\",\"sessionId\":\"self\",\"timestamp\":\"2027-01-15T08:00:00Z\"}\n",
    );
    append(
        &env.claude_file("self"),
        &claude_user("self", "x1", Some("x0"), t, "hi"),
    );
    let report = env.mirror().pass(SystemTime::now()).expect("pass");
    for id in ["root", "dangling", "self"] {
        assert!(
            env.text("SELECT id FROM sessions WHERE id = ?1", id)
                .is_some(),
            "{id} mirrored"
        );
        assert_eq!(lineage(&env, id), None, "{id}");
    }
    let outcome = |id: &str| {
        report
            .files
            .iter()
            .find(|f| f.session_id == id)
            .and_then(|f| f.lineage.clone())
    };
    assert_eq!(outcome("root"), None);
    assert_eq!(outcome("dangling"), Some(LineageOutcome::Unresolved));
    assert_eq!(outcome("self"), Some(LineageOutcome::SameSession));
    assert_eq!(
        env.store.link_session_lineage("self", "x0").expect("link"),
        LineageOutcome::SameSession
    );
}

// contract: SQL-068
#[test]
fn linking_is_idempotent_and_leaves_the_liveness_clock_alone() {
    let env = Env::new();
    env.copy_fixtures();
    env.mirror().pass(SystemTime::now()).expect("pass");
    let clock = env.int("SELECT last_message_at FROM sessions WHERE id = ?1", S2);
    let meta = env.text("SELECT node_metadata FROM sessions WHERE id = ?1", S2);
    env.exec(&format!("UPDATE sessions SET node_metadata = json_remove(node_metadata, '$.lineage') WHERE id = '{S2}'"));
    assert_eq!(lineage(&env, S2), None);
    let parent = "a1000000-0000-4000-8000-000000000010";
    let first = env.store.link_session_lineage(S2, parent).expect("link");
    assert_eq!(
        first,
        LineageOutcome::Linked {
            parent_session_id: S1.into(),
            written: true
        }
    );
    let value = lineage(&env, S2);
    let again = env.store.link_session_lineage(S2, parent).expect("link");
    assert_eq!(
        again,
        LineageOutcome::Linked {
            parent_session_id: S1.into(),
            written: false
        }
    );
    assert_eq!(lineage(&env, S2), value);
    assert_eq!(
        env.text("SELECT node_metadata FROM sessions WHERE id = ?1", S2),
        meta
    );
    assert_eq!(
        env.int("SELECT last_message_at FROM sessions WHERE id = ?1", S2),
        clock
    );
}
