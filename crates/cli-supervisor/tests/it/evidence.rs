//! The evidence rule, with an injected process table and signaller.

use std::io;
use std::os::unix::process::CommandExt;
use std::sync::Mutex;

use cli_supervisor::{
    ChildState, Evidence, GroupScan, GroupSignal, ProcessTable, SignalOutcome, Signaller,
    SpawnedProcess, signal_group_on_evidence, signal_recorded_group,
};

use crate::support::capture_logs;

/// Records every signal instead of sending it.
#[derive(Default)]
struct Recorder(Mutex<Vec<(i32, GroupSignal)>>);

impl Signaller for Recorder {
    fn signal_group(&self, pgid: i32, signal: GroupSignal) -> io::Result<()> {
        self.0.lock().expect("lock").push((pgid, signal));
        Ok(())
    }
}

impl Recorder {
    fn calls(&self) -> Vec<(i32, GroupSignal)> {
        self.0.lock().expect("lock").clone()
    }
}

/// A table with a fixed group scan and start time.
struct Table {
    scan: GroupScan,
    start_time: Option<u64>,
}

impl ProcessTable for Table {
    fn start_time(&self, _pid: i32) -> Option<u64> {
        self.start_time
    }
    fn pgid(&self, pid: i32) -> Option<i32> {
        Some(pid)
    }
    fn scan_group(&self, _pgid: i32) -> GroupScan {
        self.scan.clone()
    }
}

fn table(live: &[i32], complete: bool) -> Table {
    Table {
        scan: GroupScan {
            live: live.to_vec(),
            zombies: Vec::new(),
            complete,
        },
        start_time: None,
    }
}

const PGID: i32 = 4_000_000;

#[test]
fn reaped_and_proven_empty_sends_nothing_and_logs_no_refusal() {
    // contract: SUP-023
    // contract: SUP-028
    for signal in [GroupSignal::Term, GroupSignal::Kill] {
        let signaller = Recorder::default();
        let (outcome, logs) = capture_logs(|| {
            signal_group_on_evidence(
                &table(&[], true),
                &signaller,
                PGID,
                ChildState::Reaped,
                signal,
            )
        });
        assert_eq!(outcome, SignalOutcome::GroupEmpty);
        assert!(
            signaller.calls().is_empty(),
            "no kill syscall after the reap"
        );
        assert!(!logs.contains("WARN"), "{logs}");
    }
}

#[test]
fn reaped_with_unreadable_table_refuses_and_logs() {
    // contract: SUP-027
    let signaller = Recorder::default();
    let (outcome, logs) = capture_logs(|| {
        signal_group_on_evidence(
            &table(&[], false),
            &signaller,
            PGID,
            ChildState::Reaped,
            GroupSignal::Kill,
        )
    });
    assert_eq!(outcome, SignalOutcome::Unprovable);
    assert!(signaller.calls().is_empty());
    assert!(logs.contains("WARN") && logs.contains("unproven"), "{logs}");
}

#[test]
fn unreaped_child_is_signalled_even_when_the_table_is_unreadable() {
    // contract: SUP-026
    // contract: SUP-023
    let signaller = Recorder::default();
    let outcome = signal_group_on_evidence(
        &table(&[], false),
        &signaller,
        PGID,
        ChildState::Unreaped,
        GroupSignal::Kill,
    );
    assert_eq!(
        outcome,
        SignalOutcome::Sent {
            evidence: Evidence::Unreaped
        }
    );
    assert_eq!(signaller.calls(), vec![(PGID, GroupSignal::Kill)]);
}

#[test]
fn reaped_with_a_live_member_is_signalled() {
    // contract: SUP-017
    // contract: SUP-023
    let signaller = Recorder::default();
    let outcome = signal_group_on_evidence(
        &table(&[PGID + 1], false),
        &signaller,
        PGID,
        ChildState::Reaped,
        GroupSignal::Kill,
    );
    assert_eq!(
        outcome,
        SignalOutcome::Sent {
            evidence: Evidence::LiveMember(PGID + 1)
        }
    );
    assert_eq!(signaller.calls(), vec![(PGID, GroupSignal::Kill)]);
}

#[test]
fn reaped_zombie_only_group_is_not_live_evidence() {
    // contract: SUP-017
    let signaller = Recorder::default();
    let table = Table {
        scan: GroupScan {
            live: Vec::new(),
            zombies: vec![PGID + 2],
            complete: true,
        },
        start_time: None,
    };
    let outcome = signal_group_on_evidence(
        &table,
        &signaller,
        PGID,
        ChildState::Reaped,
        GroupSignal::Kill,
    );
    assert_eq!(outcome, SignalOutcome::GroupEmpty);
    assert!(signaller.calls().is_empty());
}

#[test]
fn the_pid_guard_refuses_init_nonpositive_and_own_group() {
    // contract: SUP-003
    let own = rustix::process::getpgrp().as_raw_nonzero().get();
    for pgid in [0, 1, -5, own] {
        for state in [ChildState::Unreaped, ChildState::Reaped] {
            let signaller = Recorder::default();
            let outcome = signal_group_on_evidence(
                &table(&[7], true),
                &signaller,
                pgid,
                state,
                GroupSignal::Kill,
            );
            assert_eq!(outcome, SignalOutcome::InvalidGroup);
            assert!(signaller.calls().is_empty());
        }
        // A consumer's record with a matching start time passes the same guard.
        let record = SpawnedProcess {
            pid: pgid,
            pgid,
            create_time: Some(5),
        };
        let matching = Table {
            start_time: Some(5),
            ..table(&[7], true)
        };
        let signaller = Recorder::default();
        let outcome = signal_recorded_group(&matching, &signaller, &record, GroupSignal::Kill);
        assert_eq!(outcome, SignalOutcome::InvalidGroup);
        assert!(signaller.calls().is_empty());
    }
}

#[test]
fn the_public_os_signaller_is_guarded_too() {
    // contract: SUP-003
    // The real signaller is public; called directly it must still refuse
    // what the guard refuses. Checked on the caller's own group, in a child
    // that leads a group of its own, so a missing guard kills only the child.
    const PROBE: &str = "CLI_SUPERVISOR_OWN_GROUP_PROBE";
    if std::env::var_os(PROBE).is_some() {
        let own = rustix::process::getpgrp().as_raw_nonzero().get();
        assert_eq!(own, i32::try_from(std::process::id()).expect("pid fits"));
        let refused = cli_supervisor::OsSignaller.signal_group(own, GroupSignal::Kill);
        assert_eq!(
            refused.map_err(|e| e.kind()),
            Err(io::ErrorKind::InvalidInput)
        );
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "evidence::the_public_os_signaller_is_guarded_too",
            "--test-threads=1",
        ])
        .env(PROBE, "1")
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run the probe");
    assert!(status.success(), "probe child: {status:?}");
}

#[test]
fn group_signals_are_sent_only_from_the_guarded_module() {
    // contract: SUP-003
    // The group-signal syscall appears in exactly one source file, the one
    // holding the guard; every other module must go through it.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    let mut seen = 0;
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            seen += 1;
            let text = std::fs::read_to_string(&path).expect("read source");
            let signals_group = [
                "kill_process_group",
                "killpg",
                "libc::kill",
                "nix::sys::signal",
            ]
            .iter()
            .any(|needle| text.contains(needle));
            if signals_group && path != src.join("guard.rs") {
                offenders.push(path);
            }
        }
    }
    assert!(seen > 5, "scanned the crate's sources ({seen})");
    assert!(
        offenders.is_empty(),
        "unguarded group signals in {offenders:?}"
    );
    let guard = std::fs::read_to_string(src.join("guard.rs")).expect("guard.rs");
    assert!(guard.contains("kill_process_group"));
}

#[test]
fn a_record_is_acted_on_only_when_its_start_time_matches() {
    // contract: SUP-006
    // contract: SUP-007
    let record = |create_time| SpawnedProcess {
        pid: PGID,
        pgid: PGID,
        create_time,
    };
    let with_start = |start_time| Table {
        start_time,
        ..table(&[PGID], true)
    };
    let cases = [
        (record(None), with_start(None), false),
        (record(None), with_start(Some(5)), false),
        (record(Some(5)), with_start(None), false),
        (record(Some(5)), with_start(Some(6)), false),
        (record(Some(5)), with_start(Some(5)), true),
    ];
    for (record, table, expect_sent) in cases {
        let signaller = Recorder::default();
        let outcome = signal_recorded_group(&table, &signaller, &record, GroupSignal::Term);
        assert_eq!(outcome.sent(), expect_sent, "{record:?}");
        assert_eq!(signaller.calls().len(), usize::from(expect_sent));
        if !expect_sent {
            assert_eq!(outcome, SignalOutcome::IdentityNotEstablished);
        }
    }
}
