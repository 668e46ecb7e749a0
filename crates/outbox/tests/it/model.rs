//! A proptest model: random enqueue / scan / ack / purge / clock-advance
//! sequences run against a store and against a plain model of the rules.

use std::time::Duration;

use outbox::{
    Backoff, DispatchStatus, ManualClock, NewDispatch, OutboxStore, ScanConfig, ack_dispatch,
    deliver_due, enqueue_dispatch, purge_dispatch,
};
use proptest::prelude::*;

use crate::common::{Counting, T0, actor, db};

const SEC: i64 = 1_000_000;

#[derive(Debug, Clone)]
enum Op {
    Enqueue {
        key: Option<u8>,
        ack: bool,
        max: u32,
        expires_in: Option<u8>,
    },
    Scan {
        fail: bool,
    },
    Ack(usize),
    Purge(usize),
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (proptest::option::of(0u8..4), any::<bool>(), 1u32..4, proptest::option::of(0u8..120))
            .prop_map(|(key, ack, max, expires_in)| Op::Enqueue { key, ack, max, expires_in }),
        3 => any::<bool>().prop_map(|fail| Op::Scan { fail }),
        1 => any::<usize>().prop_map(Op::Ack),
        1 => any::<usize>().prop_map(Op::Purge),
        2 => (0u16..200).prop_map(Op::Advance),
    ]
}

/// One row as the model sees it.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    key: Option<u8>,
    status: DispatchStatus,
    attempt: u32,
    max: u32,
    ack: bool,
    expires_at: Option<i64>,
    next_at: i64,
    sends: usize,
}

fn backoff(sends: u32) -> i64 {
    // base 10 s, doubling, capped at 100 s (the config below).
    ((10 * SEC) << sends.saturating_sub(1).min(20)).min(100 * SEC)
}

/// The rules, written as plainly as possible.
fn model_scan(rows: &mut [Row], now: i64, fail: bool) -> usize {
    let mut sends = 0;
    for r in rows.iter_mut() {
        if r.status != DispatchStatus::Pending {
            continue;
        }
        let expired = r.expires_at.is_some_and(|e| e <= now);
        if r.next_at > now && !expired {
            continue;
        }
        if expired {
            r.status = DispatchStatus::Expired;
        } else if r.attempt >= r.max {
            r.status = DispatchStatus::DeadLetter;
        } else {
            r.attempt += 1;
            r.sends += 1;
            sends += 1;
            r.status = match (fail, r.ack) {
                (false, false) => DispatchStatus::Delivered,
                (true, _) if r.attempt >= r.max => DispatchStatus::DeadLetter,
                _ => {
                    r.next_at = now + backoff(r.attempt);
                    DispatchStatus::Pending
                }
            };
        }
    }
    sends
}

fn run<S: OutboxStore>(store: &S, ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(T0);
    let mut now = T0;
    let transport = Counting::default();
    let config = ScanConfig {
        batch: 1000,
        lease: Duration::from_secs(60),
        backoff: Backoff {
            base: Duration::from_secs(10),
            max: Duration::from_secs(100),
        },
        actor: None,
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut total_sends = 0;
    for op in ops {
        match op {
            Op::Enqueue {
                key,
                ack,
                max,
                expires_in,
            } => {
                let mut new = NewDispatch::new("p");
                new.dedup_key = key.map(|k| format!("key-{k}"));
                new.ack_required = *ack;
                new.max_attempts = *max;
                new.expires_at = expires_in.map(|s| now + i64::from(s) * SEC);
                let out = enqueue_dispatch(store, &clock, &new, &actor())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                match key.and_then(|k| rows.iter().find(|r| r.key == Some(k))) {
                    Some(existing) => {
                        prop_assert!(!out.created);
                        prop_assert_eq!(&out.id, &existing.id);
                    }
                    None => {
                        prop_assert!(out.created);
                        rows.push(Row {
                            id: out.id,
                            key: *key,
                            status: DispatchStatus::Pending,
                            attempt: 0,
                            max: *max,
                            ack: *ack,
                            expires_at: new.expires_at,
                            next_at: now,
                            sends: 0,
                        });
                    }
                }
            }
            Op::Scan { fail } => {
                transport.set_fail(*fail);
                deliver_due(store, &transport, &clock, &config)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                total_sends += model_scan(&mut rows, now, *fail);
            }
            Op::Ack(i) if !rows.is_empty() => {
                let n = rows.len();
                let r = &mut rows[i % n];
                let out = ack_dispatch(store, &r.id, &actor());
                if r.status.is_terminal() {
                    prop_assert!(out.is_err(), "ack of a {} row", r.status);
                } else {
                    prop_assert!(out.is_ok(), "{:?}", out);
                    r.status = DispatchStatus::Acked;
                }
            }
            Op::Purge(i) if !rows.is_empty() => {
                let n = rows.len();
                let r = rows.remove(i % n);
                let was = purge_dispatch(store, &r.id, &actor())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(was, r.status);
            }
            Op::Ack(_) | Op::Purge(_) => {}
            Op::Advance(s) => {
                now += i64::from(*s) * SEC;
                clock.set(now);
            }
        }
        let listed = store
            .list(&outbox::ListQuery::default())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(listed.len(), rows.len());
        for r in &rows {
            let real = store
                .get(&r.id)
                .map_err(|e| TestCaseError::fail(e.to_string()))?
                .ok_or_else(|| TestCaseError::fail(format!("{} lost", r.id)))?;
            prop_assert_eq!(real.status, r.status, "status of {} after {:?}", r.id, op);
            prop_assert_eq!(real.attempt, r.attempt, "attempt of {}", r.id);
            prop_assert!(r.sends <= r.max as usize);
            prop_assert_eq!(transport.count(&r.id), r.sends, "sends of {}", r.id);
            if r.status == DispatchStatus::Pending {
                prop_assert_eq!(real.next_attempt_at, Some(r.next_at), "next of {}", r.id);
            }
        }
        prop_assert_eq!(transport.total(), total_sends);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    // contract: OBX-006
    #[test]
    fn memory_store_follows_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(&test_support::MemoryOutbox::default(), &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    // contract: OBX-010
    #[test]
    fn sqlite_store_follows_the_model(ops in proptest::collection::vec(op(), 1..30)) {
        let db = db();
        run(&db.store, &ops)?;
    }
}
