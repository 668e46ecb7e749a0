//! Owner judgement and the sweep over a fake process table: the evidence
//! rule as properties.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use cli_supervisor::{GroupScan, GroupSignal, ProcessTable, Signaller};
use lifecycle_core::{
    Actor, ActorType, LegRecord, OwnerRecord, SessionRecorder, SessionStart, leg_columns,
};
use proptest::prelude::*;
use runner::{GoneBecause, Here, OwnerState, Processes, owner_state, sweep_orphans};
use test_support::MemoryStore;

/// pid -> start time; everything else is absent.
#[derive(Default)]
struct Table(BTreeMap<i32, u64>);

impl ProcessTable for Table {
    fn start_time(&self, pid: i32) -> Option<u64> {
        self.0.get(&pid).copied()
    }
    fn pgid(&self, pid: i32) -> Option<i32> {
        self.0.contains_key(&pid).then_some(pid)
    }
    fn scan_group(&self, pgid: i32) -> GroupScan {
        GroupScan {
            live: self.0.keys().copied().filter(|p| *p == pgid).collect(),
            zombies: vec![],
            complete: true,
        }
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(i32, GroupSignal)>>);

impl Signaller for Recorder {
    fn signal_group(&self, pgid: i32, signal: GroupSignal) -> io::Result<()> {
        self.0.lock().expect("lock").push((pgid, signal));
        Ok(())
    }
}

fn owner(pid: i64, start: Option<i64>, boot: Option<&str>) -> OwnerRecord {
    OwnerRecord {
        pid,
        start_time: start,
        boot_id: boot.map(str::to_owned),
        host_id: None,
    }
}

/// Persists session `id` owned by `owner`, with a leg recorded as pid and
/// group 70, created at 1.
fn start_with_leg_70(store: &MemoryStore, actor: &Actor, id: &str, owner: OwnerRecord) {
    let s = SessionStart {
        owner: Some(owner),
        ..SessionStart::new(id, "run.started.ok")
    };
    store.persist_session_start(&s, actor).expect("start");
    let leg = LegRecord {
        pid: 70,
        pgid: 70,
        create_time: Some(1),
    };
    store.update_session(id, &leg_columns(&leg)).expect("leg");
}

/// A judgement made on a host named `host` in boot `boot`.
fn here(boot: &str, host: Option<&str>, shared_store: bool) -> Here {
    Here {
        boot_id: Some(boot.to_owned()),
        host_id: host.map(str::to_owned),
        shared_store,
    }
}

proptest! {
    #[test]
    fn an_owner_is_alive_only_on_an_exact_start_time_and_gone_only_on_proof(
        pid in 2i32..100_000,
        recorded in proptest::option::of(0i64..1_000_000),
        live in proptest::option::of(0u64..1_000_000),
        same_boot in any::<bool>(),
    ) {
        let mut table = Table::default();
        if let Some(live) = live {
            table.0.insert(pid, live);
        }
        let rec = owner(i64::from(pid), recorded, Some("boot-a"));
        let now = if same_boot { "boot-a" } else { "boot-b" };
        let state = owner_state(Some(&rec), &table, &here(now, None, false));
        if !same_boot {
            prop_assert_eq!(state, OwnerState::Gone(GoneBecause::Rebooted));
        } else {
            match (recorded, live) {
                // contract: SUP-007
                // No recorded start time proves nothing either way.
                (None, _) => prop_assert_eq!(state, OwnerState::Unknown),
                (Some(_), None) => prop_assert_eq!(state, OwnerState::Gone(GoneBecause::NoProcess)),
                (Some(r), Some(l)) if u64::try_from(r).ok() == Some(l) => {
                    prop_assert_eq!(state, OwnerState::Alive)
                }
                (Some(_), Some(_)) => prop_assert_eq!(state, OwnerState::Gone(GoneBecause::PidReused)),
            }
        }
        prop_assert_eq!(owner_state(None, &table, &here(now, None, false)), OwnerState::Unknown);
    }

    #[test]
    fn only_an_owner_of_this_host_is_judged(
        pid in 2i32..100_000,
        recorded in proptest::option::of(0i64..1_000),
        live in proptest::option::of(0u64..1_000),
        same_boot in any::<bool>(),
        shared_store in any::<bool>(),
    ) {
        let mut table = Table::default();
        if let Some(live) = live {
            table.0.insert(pid, live);
        }
        let now = if same_boot { "boot-a" } else { "boot-b" };
        let legacy = owner(i64::from(pid), recorded, Some("boot-a"));
        let single = owner_state(Some(&legacy), &table, &here(now, None, false));
        // Another host's owner is never judged, whatever its pid, start
        // time or boot id say here, on any store.
        let theirs = OwnerRecord { host_id: Some("m-b:host-b".into()), ..legacy.clone() };
        prop_assert_eq!(
            owner_state(Some(&theirs), &table, &here(now, Some("m-a:host-a"), shared_store)),
            OwnerState::OtherHost
        );
        // This host's owner is judged exactly as a single-host store judges.
        let ours = OwnerRecord { host_id: Some("m-a:host-a".into()), ..legacy.clone() };
        prop_assert_eq!(
            owner_state(Some(&ours), &table, &here(now, Some("m-a:host-a"), shared_store)),
            single
        );
        // A host recorded while this one cannot name itself: left alone.
        prop_assert_eq!(
            owner_state(Some(&ours), &table, &here(now, None, shared_store)),
            OwnerState::HostUnknown
        );
        // A row from before the host column: judged as before on a
        // single-host store; on a shared one only within the same boot,
        // never "rebooted" on a boot-id mismatch alone.
        let mine = here(now, Some("m-a:host-a"), shared_store);
        let judged = owner_state(Some(&legacy), &table, &mine);
        if !shared_store || same_boot {
            prop_assert_eq!(judged, single);
        } else {
            prop_assert_eq!(judged, OwnerState::HostUnknown);
        }
        let no_boot = OwnerRecord { boot_id: None, ..legacy };
        if shared_store {
            prop_assert_eq!(owner_state(Some(&no_boot), &table, &mine), OwnerState::HostUnknown);
        }
    }

    #[test]
    fn the_sweep_signals_a_leg_only_when_its_start_time_matches(
        leg_pid in 2i32..100_000,
        recorded in proptest::option::of(0i64..1_000),
        live in proptest::option::of(0u64..1_000),
    ) {
        // contract: SUP-006
        let store = MemoryStore::default();
        let actor = Actor::new(ActorType::Executor, "t");
        let start = SessionStart {
            // Owner pid 1 with a start time no table entry has: gone.
            owner: Some(owner(1, Some(5), None)),
            ..SessionStart::new("s", "run.started.ok")
        };
        store.persist_session_start(&start, &actor).expect("start");
        let leg = LegRecord { pid: i64::from(leg_pid), pgid: i64::from(leg_pid), create_time: recorded };
        store.update_session("s", &leg_columns(&leg)).expect("leg");
        let mut table = Table::default();
        if let Some(live) = live {
            table.0.insert(leg_pid, live);
        }
        let signals = Recorder::default();
        let procs = Processes { table: &table, signaller: &signals };
        let report = sweep_orphans(&store, &procs, &Actor::new(ActorType::System, "sweep"), false)
            .expect("sweep");
        prop_assert_eq!(report.orphans.len(), 1);
        prop_assert!(report.orphans[0].ended);
        let sent = signals.0.lock().expect("lock").clone();
        let matches = matches!((recorded, live), (Some(r), Some(l)) if u64::try_from(r).ok() == Some(l));
        if matches {
            prop_assert_eq!(sent, vec![(leg_pid, GroupSignal::Kill)]);
        } else {
            prop_assert!(sent.is_empty(), "signalled {:?}", sent);
        }
        let snap = store.session("s").expect("read").expect("row");
        prop_assert_eq!(snap.status.as_str(), "failed");
        prop_assert_eq!(snap.reason_code.as_deref(), Some("session.orphaned.no_process"));
    }
}

#[test]
fn a_dry_run_and_a_live_owner_change_nothing() {
    let store = MemoryStore::default();
    let actor = Actor::new(ActorType::Executor, "t");
    for (id, start) in [("gone", 5), ("alive", 9)] {
        start_with_leg_70(&store, &actor, id, owner(7, Some(start), None));
    }
    let table = Table([(7, 9), (70, 1)].into_iter().collect());
    let signals = Recorder::default();
    let procs = Processes {
        table: &table,
        signaller: &signals,
    };
    let sweeper = Actor::new(ActorType::System, "sweep");
    let dry = sweep_orphans(&store, &procs, &sweeper, true).expect("dry");
    assert_eq!(dry.orphans.len(), 1);
    assert!(!dry.orphans[0].ended);
    assert!(signals.0.lock().expect("lock").is_empty());
    assert_eq!(
        store.session("gone").expect("read").expect("row").status,
        "running"
    );
    let real = sweep_orphans(&store, &procs, &sweeper, false).expect("sweep");
    assert_eq!(real.orphans.len(), 1);
    assert_eq!(real.left_alone, [("alive".to_owned(), OwnerState::Alive)]);
    assert_eq!(
        store.session("alive").expect("read").expect("row").status,
        "running"
    );
    // The one signal went to the orphan's leg, whose start time matched.
    assert_eq!(*signals.0.lock().expect("lock"), [(70, GroupSignal::Kill)]);
    // The terminal move went through the guarded path with the sweep's actor.
    let history = lifecycle_core::LifecycleStore::history(&store, "session", "gone").expect("h");
    assert_eq!(history.last().map(|t| t.actor_id.as_str()), Some("sweep"));
}

#[test]
fn the_sweep_and_kill_leave_another_hosts_session_alone() {
    let store = MemoryStore::default();
    let actor = Actor::new(ActorType::Executor, "t");
    let this_host = runner::host_id().expect("this host has an identity");
    let this_boot = runner::boot_id().expect("this boot has an id");
    // Owner 7 is gone here (no such pid in the table) and leg 70 is live
    // with the recorded start time: on this host both would be proof.
    for (id, host, boot) in [
        ("theirs-same-boot", "m-b:host-b", this_boot.as_str()),
        ("theirs-other-boot", "m-b:host-b", "boot-b"),
        ("ours-rebooted", this_host.as_str(), "boot-b"),
    ] {
        start_with_leg_70(
            &store,
            &actor,
            id,
            OwnerRecord {
                host_id: Some(host.to_owned()),
                ..owner(7, Some(5), Some(boot))
            },
        );
    }
    let table = Table([(70, 1)].into_iter().collect());
    let signals = Recorder::default();
    let procs = Processes {
        table: &table,
        signaller: &signals,
    };
    let report = sweep_orphans(
        &store,
        &procs,
        &Actor::new(ActorType::System, "sweep"),
        false,
    )
    .expect("sweep");
    assert_eq!(
        report.left_alone,
        [
            ("theirs-same-boot".to_owned(), OwnerState::OtherHost),
            ("theirs-other-boot".to_owned(), OwnerState::OtherHost),
        ]
    );
    assert_eq!(report.orphans.len(), 1);
    assert_eq!(report.orphans[0].id, "ours-rebooted");
    assert_eq!(
        report.orphans[0].owner,
        OwnerState::Gone(GoneBecause::Rebooted)
    );
    // Nobody was signalled: the rebooted record names nobody alive now,
    // and the others are not this host's.
    assert!(signals.0.lock().expect("lock").is_empty());
    for id in ["theirs-same-boot", "theirs-other-boot"] {
        assert_eq!(
            store.session(id).expect("read").expect("row").status,
            "running"
        );
    }
    assert_eq!(
        store
            .session("ours-rebooted")
            .expect("read")
            .expect("row")
            .status,
        "failed"
    );
    // An explicit kill refuses another host's session and writes nothing.
    let err = runner::kill_session(
        &store,
        &procs,
        "theirs-same",
        std::time::Duration::ZERO,
        &Actor::new(ActorType::Operator, "ops"),
    )
    .expect_err("another host's session");
    assert!(
        matches!(&err, runner::Error::OtherHost { host, .. } if host == "m-b:host-b"),
        "{err}"
    );
    assert!(signals.0.lock().expect("lock").is_empty());
    assert_eq!(
        store
            .session("theirs-same-boot")
            .expect("read")
            .expect("row")
            .status,
        "running"
    );
}

#[test]
fn a_session_vouched_for_as_gone_is_ended_without_a_signal_even_on_another_host() {
    let store = MemoryStore::default();
    let actor = Actor::new(ActorType::Executor, "t");
    let this_host = runner::host_id().expect("this host has an identity");
    let this_boot = runner::boot_id().expect("this boot has an id");
    // Leg 70 is live with its recorded start time; owner 7 is alive (start
    // 9); pid 8 names nobody.
    for (id, host, owner_pid, owner_start) in [
        ("theirs-vouched", "m-b:host-b", 8, 5),
        ("theirs-not-vouched", "m-b:host-b", 8, 5),
        ("ours-alive-vouched", this_host.as_str(), 7, 9),
    ] {
        start_with_leg_70(
            &store,
            &actor,
            id,
            OwnerRecord {
                host_id: Some(host.to_owned()),
                ..owner(owner_pid, Some(owner_start), Some(&this_boot))
            },
        );
    }
    let table = Table([(7, 9), (70, 1)].into_iter().collect());
    let signals = Recorder::default();
    let procs = Processes {
        table: &table,
        signaller: &signals,
    };
    let vouched: std::collections::HashSet<String> = ["theirs-vouched", "ours-alive-vouched"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let report = runner::sweep_orphans_known_gone(
        &store,
        &procs,
        &Actor::new(ActorType::System, "sweep"),
        false,
        &vouched,
    )
    .expect("sweep");
    assert_eq!(report.orphans.len(), 1, "{report:?}");
    assert_eq!(report.orphans[0].id, "theirs-vouched");
    assert_eq!(report.orphans[0].owner, OwnerState::OtherHost);
    assert!(report.orphans[0].ended);
    assert_eq!(report.orphans[0].leg_signal, None);
    // A live owner of this host is judged by its process, vouched or not.
    assert_eq!(
        report.left_alone,
        [
            ("theirs-not-vouched".to_owned(), OwnerState::OtherHost),
            ("ours-alive-vouched".to_owned(), OwnerState::Alive),
        ]
    );
    assert!(signals.0.lock().expect("lock").is_empty());
    let ended = store.session("theirs-vouched").expect("read").expect("row");
    assert_eq!(ended.status, "failed");
    assert_eq!(
        ended.reason_code.as_deref(),
        Some("session.orphaned.no_process")
    );
}

#[test]
fn kill_cancels_first_then_signals_only_a_verified_leg() {
    // contract: SUP-006
    let store = MemoryStore::default();
    let actor = Actor::new(ActorType::Executor, "t");
    let sessions = [
        (
            "live-owner",
            9,
            LegRecord {
                pid: 70,
                pgid: 70,
                create_time: Some(1),
            },
        ),
        (
            "gone-owner",
            5,
            LegRecord {
                pid: 71,
                pgid: 71,
                create_time: Some(2),
            },
        ),
        (
            "recycled",
            9,
            LegRecord {
                pid: 72,
                pgid: 72,
                create_time: Some(3),
            },
        ),
    ];
    for (id, owner_start, leg) in sessions {
        let s = SessionStart {
            owner: Some(owner(7, Some(owner_start), None)),
            ..SessionStart::new(id, "run.started.ok")
        };
        store.persist_session_start(&s, &actor).expect("start");
        store.update_session(id, &leg_columns(&leg)).expect("leg");
    }
    // Owner 7 is alive (start 9); leg 70 and 71 are who the records say;
    // pid 72 now belongs to a process started at another time.
    let table = Table([(7, 9), (70, 1), (71, 2), (72, 99)].into_iter().collect());
    let signals = Recorder::default();
    let procs = Processes {
        table: &table,
        signaller: &signals,
    };
    let op = Actor::new(ActorType::Operator, "ops");
    let grace = std::time::Duration::from_millis(50);

    // A live owner: SIGTERM, and SIGKILL after the grace since the fake
    // leader never leaves.
    let report = runner::kill_session(&store, &procs, "live", grace, &op).expect("kill");
    assert_eq!(report.id, "live-owner");
    assert_eq!(report.owner, OwnerState::Alive);
    assert_eq!(
        *signals.0.lock().expect("lock"),
        [(70, GroupSignal::Term), (70, GroupSignal::Kill)]
    );
    let snap = store.session("live-owner").expect("read").expect("row");
    assert_eq!(snap.status, "cancelled");
    assert_eq!(
        snap.reason_code.as_deref(),
        Some("run.cancelled.manual_kill")
    );

    // A gone owner: straight to SIGKILL of the verified group.
    signals.0.lock().expect("lock").clear();
    let report = runner::kill_session(&store, &procs, "gone-owner", grace, &op).expect("kill");
    assert!(matches!(report.owner, OwnerState::Gone(_)));
    assert_eq!(*signals.0.lock().expect("lock"), [(71, GroupSignal::Kill)]);

    // A recycled pid: the session is cancelled, nobody is signalled.
    signals.0.lock().expect("lock").clear();
    let report = runner::kill_session(&store, &procs, "rec", grace, &op).expect("kill");
    assert_eq!(report.status, "cancelled");
    assert!(signals.0.lock().expect("lock").is_empty());

    // Already ended, unknown and ambiguous ids are refused.
    assert!(matches!(
        runner::kill_session(&store, &procs, "live-owner", grace, &op),
        Err(runner::Error::AlreadyEnded { .. })
    ));
    assert!(matches!(
        runner::kill_session(&store, &procs, "zzz", grace, &op),
        Err(runner::Error::NoSuchSession { .. })
    ));
    assert!(matches!(
        runner::resolve_session(&store, ""),
        Err(runner::Error::AmbiguousSession { .. })
    ));
}

#[test]
fn kill_refuses_a_live_session_with_no_leg_yet_and_changes_nothing() {
    let store = MemoryStore::default();
    let s = SessionStart {
        owner: Some(owner(7, Some(9), None)),
        ..SessionStart::new("young", "run.started.ok")
    };
    store
        .persist_session_start(&s, &Actor::new(ActorType::Executor, "t"))
        .expect("start");
    let table = Table([(7, 9)].into_iter().collect());
    let signals = Recorder::default();
    let procs = Processes {
        table: &table,
        signaller: &signals,
    };
    let op = Actor::new(ActorType::Operator, "ops");
    assert!(matches!(
        runner::kill_session(&store, &procs, "young", std::time::Duration::ZERO, &op),
        Err(runner::Error::NoLegYet { .. })
    ));
    assert_eq!(
        store.session("young").expect("read").expect("row").status,
        "running"
    );
}
