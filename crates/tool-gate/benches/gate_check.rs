//! A gate check beside the floor every `tools/call` pays anyway.
//!
//! `floor`: clone the call and serialise its arguments with serde_json (what
//! an MCP client does before sending `tools/call`). `gated`: the gate check
//! (permission policy, destructive-command guard, path guard on a real temp
//! directory, one user pre-hook, so both security passes run) and then the
//! same floor. The ratio floor/gated says how much of a gated call's local
//! cost is the call itself. `gated_single_pass` is the same with no user
//! hook (one security pass). `check_only` and `guard/*` split the gate's
//! share; `guard/lstat_floor` is the `lstat` calls the path guard cannot
//! avoid for these calls, its own floor.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_gate::{
    Control, Decision, DestructiveGuard, FnHook, Gate, GuardSpec, PathGuard, PathGuardConfig,
    PermissionPolicy, Rule, ToolCall,
};

fn calls() -> Vec<ToolCall> {
    let old = "fn main() {\n    println!(\"hello\");\n}\n".repeat(4);
    let new = "fn main() {\n    tracing::info!(\"hello\");\n}\n".repeat(4);
    vec![
        ToolCall::new(
            "fs",
            "edit_file",
            json!({"file_path": "src/main.rs", "old_string": old, "new_string": new}),
        ),
        ToolCall::new(
            "sh",
            "run_command",
            json!({"command": "cargo test -p tool-gate -- --nocapture", "timeout": 600}),
        ),
        ToolCall::new(
            "fs",
            "read_file",
            json!({"path": "crates/tool-gate/src/gate.rs", "offset": 0, "limit": 200}),
        ),
    ]
}

fn floor(call: &ToolCall) -> Vec<u8> {
    let owned = black_box(call).clone();
    serde_json::to_vec(&owned.arguments).expect("serialisable")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("crates/tool-gate/src")).expect("mkdir");
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").expect("write");
    let policy = PermissionPolicy::new(Decision::Deny)
        .with_rule(Rule::tool("*_file", Decision::Allow).expect("rule"))
        .with_rule(Rule::tool("run_command", Decision::Allow).expect("rule"))
        .with_rule(Rule::tool("bash", Decision::Deny).expect("rule"));
    let gate = Gate::builder()
        .spec(GuardSpec {
            permission: Some(policy),
            guard_destructive: true,
            guard_paths: Some(PathGuardConfig::new([dir.path()])),
        })
        .expect("spec")
        .user_hook(FnHook::new("noop", |_: &ToolCall| Ok(None)))
        .build();
    let calls = calls();
    for call in &calls {
        assert!(gate.check(call).is_allowed(), "{call:?}");
    }

    let mut group = c.benchmark_group("gate");
    group.bench_function("floor", |b| {
        b.iter(|| {
            for call in &calls {
                black_box(floor(call));
            }
        });
    });
    group.bench_function("gated", |b| {
        b.iter(|| {
            for call in &calls {
                let verdict = gate.check(black_box(call));
                assert!(verdict.is_allowed());
                black_box(floor(call));
            }
        });
    });
    let single_pass = Gate::builder()
        .spec(GuardSpec {
            permission: Some(
                PermissionPolicy::new(Decision::Allow)
                    .with_rule(Rule::tool("bash", Decision::Deny).expect("rule")),
            ),
            guard_destructive: true,
            guard_paths: Some(PathGuardConfig::new([dir.path()])),
        })
        .expect("spec")
        .build();
    group.bench_function("gated_single_pass", |b| {
        b.iter(|| {
            for call in &calls {
                let verdict = single_pass.check(black_box(call));
                assert!(verdict.is_allowed());
                black_box(floor(call));
            }
        });
    });
    group.bench_function("check_only", |b| {
        b.iter(|| {
            for call in &calls {
                black_box(gate.check(black_box(call)));
            }
        });
    });
    group.finish();

    let destructive = DestructiveGuard::default();
    let paths = PathGuard::new(PathGuardConfig::new([dir.path()])).expect("guard");
    let mut group = c.benchmark_group("guard");
    group.bench_function("destructive", |b| {
        b.iter(|| {
            for call in &calls {
                black_box(destructive.evaluate(black_box(call)));
            }
        });
    });
    group.bench_function("paths", |b| {
        b.iter(|| {
            for call in &calls {
                black_box(paths.evaluate(black_box(call)));
            }
        });
    });
    // The path guard's own floor: the lstat calls it cannot avoid for these
    // three calls (src, src/main.rs; crates, crates/tool-gate,
    // crates/tool-gate/src, crates/tool-gate/src/gate.rs).
    let root = paths.roots()[0].clone();
    let probes: Vec<_> = [
        "src",
        "src/main.rs",
        "crates",
        "crates/tool-gate",
        "crates/tool-gate/src",
        "crates/tool-gate/src/gate.rs",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    group.bench_function("lstat_floor", |b| {
        b.iter(|| {
            for p in &probes {
                let _ = black_box(std::fs::symlink_metadata(black_box(p)));
            }
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
