//! Properties of validation and of the ready-set scheduler, on random
//! plans and random orders of completion.

use std::collections::BTreeSet;

use conductor::{Agent, Op, OpState, Plan, PlanError, Scheduler, validate};
use proptest::prelude::*;

fn plan_of(deps: &[Vec<usize>]) -> Plan {
    Plan {
        name: None,
        ops: deps
            .iter()
            .enumerate()
            .map(|(i, d)| Op {
                id: format!("op{i}"),
                agent: Agent {
                    prompt: Some("p".into()),
                    ..Agent::default()
                },
                depends_on: d.iter().map(|j| format!("op{j}")).collect(),
                artifacts: Vec::new(),
                synthesis: false,
            })
            .collect(),
    }
}

/// A random acyclic plan: op `perm[k]` may depend only on ops `perm[j]`,
/// j < k, so listing order and dependency order differ.
fn acyclic() -> impl Strategy<Value = Vec<Vec<usize>>> {
    (1usize..16).prop_flat_map(|n| {
        (
            Just(n).prop_shuffle_indices(),
            proptest::collection::vec(proptest::collection::vec(any::<bool>(), n), n),
        )
            .prop_map(move |(perm, bits)| {
                let mut deps = vec![Vec::new(); n];
                for k in 0..n {
                    for j in 0..k {
                        if bits[k][j] {
                            deps[perm[k]].push(perm[j]);
                        }
                    }
                }
                deps
            })
    })
}

trait ShuffleIndices {
    fn prop_shuffle_indices(self) -> BoxedStrategy<Vec<usize>>;
}

impl ShuffleIndices for Just<usize> {
    fn prop_shuffle_indices(self) -> BoxedStrategy<Vec<usize>> {
        let n = self.0;
        Just((0..n).collect::<Vec<_>>()).prop_shuffle().boxed()
    }
}

/// Whether `deps` has a cycle (reachability, naively).
fn has_cycle(deps: &[Vec<usize>]) -> bool {
    let n = deps.len();
    (0..n).any(|start| {
        let mut seen = BTreeSet::new();
        let mut stack = deps[start].clone();
        while let Some(i) = stack.pop() {
            if i == start {
                return true;
            }
            if seen.insert(i) {
                stack.extend(deps[i].iter().copied());
            }
        }
        false
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// validate refuses a plan as a cycle exactly when it has one, and
    /// the cycle it names is a closed walk along dependencies.
    #[test]
    fn a_cycle_is_found_exactly_when_there_is_one(
        deps in (1usize..9).prop_flat_map(|n| proptest::collection::vec(
            proptest::collection::btree_set(0..n, 0..3), n))
    ) {
        let deps: Vec<Vec<usize>> = deps.into_iter().map(|s| s.into_iter().collect()).collect();
        match validate(plan_of(&deps), 100) {
            Ok(_) => prop_assert!(!has_cycle(&deps)),
            Err(PlanError::Cycle(walk)) => {
                prop_assert!(has_cycle(&deps));
                prop_assert!(walk.len() >= 2);
                prop_assert_eq!(walk.first(), walk.last());
                let idx = |id: &String| id[2..].parse::<usize>().expect("op id");
                for pair in walk.windows(2) {
                    prop_assert!(deps[idx(&pair[0])].contains(&idx(&pair[1])), "{:?}", walk);
                }
            }
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }

    /// On any acyclic plan, any cap, any set of failing ops and any order
    /// of completion: an op starts only after all its dependencies
    /// succeeded; never more than the cap run; the scheduler never stalls
    /// (nothing running and nothing to start means done), never leaves an
    /// op it could start idle below the cap; every op ends; and an op is
    /// blocked exactly when one of its dependencies failed or was blocked.
    #[test]
    fn every_op_ends_in_dependency_order_within_the_cap(
        deps in acyclic(),
        cap in 1usize..5,
        fail_bits in proptest::collection::vec(any::<bool>(), 16),
        picks in proptest::collection::vec(any::<u16>(), 64),
    ) {
        let n = deps.len();
        let plan = validate(plan_of(&deps), 100).expect("acyclic");
        let mut s = Scheduler::new(&plan, cap);
        let mut running: Vec<usize> = Vec::new();
        let mut picks = picks.into_iter().cycle();
        let mut started = BTreeSet::new();
        loop {
            for op in s.start_ready() {
                prop_assert!(started.insert(op), "op {} started twice", op);
                for &d in &deps[op] {
                    prop_assert_eq!(s.state(d), Some(OpState::Succeeded), "op {} before dep {}", op, d);
                }
                running.push(op);
            }
            prop_assert!(running.len() <= cap);
            prop_assert_eq!(running.len(), s.running());
            if running.len() < cap {
                for (i, mine) in deps.iter().enumerate() {
                    let ready = s.state(i) == Some(OpState::Waiting)
                        && mine.iter().all(|&d| s.state(d) == Some(OpState::Succeeded));
                    prop_assert!(!ready, "op {} ready but idle below the cap", i);
                }
            }
            if running.is_empty() {
                prop_assert!(s.is_done(), "stalled with nothing running");
                break;
            }
            let k = usize::from(picks.next().unwrap_or(0)) % running.len();
            let op = running.swap_remove(k);
            let ok = !fail_bits[op];
            let blocked = s.finish(op, ok).expect("running");
            for b in blocked {
                let by_op = matches!(s.state(b), Some(OpState::Blocked { by }) if by == op);
                prop_assert!(by_op, "op {} not blocked by {}", b, op);
            }
        }
        for i in 0..n {
            let st = s.state(i).expect("op");
            prop_assert!(st.is_end());
            let dep_bad = deps[i].iter().any(|&d| {
                matches!(s.state(d), Some(OpState::Failed | OpState::Blocked { .. }))
            });
            prop_assert_eq!(matches!(st, OpState::Blocked { .. }), dep_bad, "op {}", i);
            if !dep_bad {
                let want = if fail_bits[i] { OpState::Failed } else { OpState::Succeeded };
                prop_assert_eq!(st, want, "op {}", i);
            }
        }
    }
}

#[test]
fn finishing_an_op_that_is_not_running_is_refused() {
    let plan = validate(plan_of(&[vec![], vec![0]]), 9).expect("valid");
    let mut s = Scheduler::new(&plan, 1);
    assert!(s.finish(1, true).is_err(), "waiting");
    assert!(s.finish(7, true).is_err(), "no such op");
    assert_eq!(s.start_ready(), [0]);
    assert!(s.finish(0, true).is_ok());
    assert!(s.finish(0, true).is_err(), "finished twice");
    assert!(s.mark_succeeded(1));
    assert!(s.is_done());
    let plan = validate(plan_of(&[vec![], vec![0], vec![1]]), 9).expect("valid");
    let mut s = Scheduler::new(&plan, 1);
    assert_eq!(s.mark_failed(1), None, "its dependency has not succeeded");
    assert!(s.mark_succeeded(0));
    assert_eq!(s.mark_failed(1), Some(vec![2]));
    assert!(s.is_done());
}
