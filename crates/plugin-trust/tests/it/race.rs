//! The swap race: a thread swaps a declared file between the trusted and a
//! hostile content while activations run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use plugin_trust::{Error, Target};

use crate::support::{Env, sha256_hex, swap_in};

const TRUSTED_TOOL: &[u8] = b"#!/bin/sh\necho \"trusted:$1\"\n";
const HOSTILE_TOOL: &[u8] = b"#!/bin/sh\necho \"HOSTILE:$1\"; exit 3\n";

/// Swaps `rel` between `good` and `bad` until stopped, alternating atomic
/// renames with in-place rewrites (which readers can see half-written).
fn spawn_swapper(
    env: &Env,
    rel: &str,
    good: &'static [u8],
    bad: &'static [u8],
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<u64> {
    let path = env.file("kit", rel);
    let scratch = env.file("kit", ".scratch");
    thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop.load(Ordering::Relaxed) {
            swap_in(&path, bad, &scratch);
            swap_in(&path, good, &scratch);
            std::fs::write(&path, bad).expect("rewrite");
            std::fs::write(&path, good).expect("rewrite");
            swaps += 1;
        }
        swaps
    })
}

fn refusal_is_expected(err: &Error) -> bool {
    matches!(err, Error::Changed { .. } | Error::Unreadable { .. })
}

#[test]
fn swapped_targets_are_refused_or_verified_never_mixed() {
    // contract: PLG-007
    let env = Env::new();
    env.kit();
    env.write("kit", "bin/echo.sh", TRUSTED_TOOL);
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let trusted = sha256_hex(TRUSTED_TOOL);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = spawn_swapper(
        &env,
        "bin/echo.sh",
        TRUSTED_TOOL,
        HOSTILE_TOOL,
        stop.clone(),
    );
    // Two activating threads, so the cache is exercised concurrently too.
    let counts: Vec<(u32, u32)> = thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let (mut ok, mut refused) = (0u32, 0u32);
                    for i in 0..150 {
                        match registry.activate("kit", &Target::Tool("echo".into())) {
                            Ok(activation) => {
                                ok += 1;
                                assert_eq!(activation.sha256(), trusted);
                                assert_eq!(sha256_hex(activation.bytes()), trusted);
                                let sealed =
                                    activation.sealed_bytes().expect("sealed").expect("read");
                                assert_eq!(sealed, TRUSTED_TOOL);
                                if i % 10 == 0 {
                                    let out =
                                        activation.command().expect("cmd").output().expect("run");
                                    assert_eq!(out.stdout, b"trusted:main\n");
                                }
                            }
                            Err(err) => {
                                refused += 1;
                                assert!(refusal_is_expected(&err), "unexpected error: {err}");
                            }
                        }
                    }
                    (ok, refused)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    let total: u32 = counts.iter().map(|(ok, refused)| ok + refused).sum();
    assert_eq!(total, 300);
    assert!(swaps > 0);
    // Only the trusted content was ever loaded: hostile bytes never got
    // past verification, and the one load was shared by both threads.
    assert!(registry.cache_stats().loads <= 1);
    // Once the race is over the trusted content activates again.
    registry
        .activate("kit", &Target::Tool("echo".into()))
        .expect("trusted content after the race");
}

#[test]
fn an_executed_hook_only_ever_runs_the_trusted_bytes() {
    // contract: PLG-007
    const GOOD: &[u8] = b"#!/bin/sh\necho \"pre $1\"\n";
    const BAD: &[u8] = b"#!/bin/sh\necho \"HOSTILE $1\"\n";
    let env = Env::new();
    env.kit();
    env.write("kit", "hooks/pre.sh", GOOD);
    let registry = env.registry();
    registry.trust("kit").expect("trust");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = spawn_swapper(&env, "hooks/pre.sh", GOOD, BAD, stop.clone());
    for _ in 0..120 {
        match registry.activate_hooks("kit", "PreToolUse") {
            Ok(hooks) => {
                // Run after activation, while the file keeps changing.
                let out = hooks[0].command().output().expect("run hook");
                assert_eq!(out.stdout, b"pre --flag\n");
                assert!(out.status.success());
            }
            Err(err) => assert!(refusal_is_expected(&err), "unexpected error: {err}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
}
