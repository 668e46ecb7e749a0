//! Listing with admission and gated, validated calls against their bare
//! floors, over the same pooled stdio connection to a fixture server.
//!
//! - `list_1000/bare`: one `tools/list` of 1,000 tools; `list_1000/admitted`:
//!   the same listing plus admission of every tool and the registry swap.
//! - `call/bare`: one `tools/call` round trip; `call/gated`: the same call
//!   after argument validation (the compiled schema) and the tool-gate
//!   (destructive-command guard).
//!
//! The ratio floor / measured should be at least 0.8 for both.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use mcp_pool::{ListedTool, McpPool, PoolConfig, Registry, SecurityConfig};
use serde_json::{Value, json};

fn pool(runtime: &tokio::runtime::Runtime) -> McpPool {
    let server = mcp_test_servers::locate(mcp_test_servers::BENIGN).expect("fixture server");
    let mut config = PoolConfig::with_security(SecurityConfig::trusted());
    config.gate = Some(Arc::new(
        tool_gate::Gate::builder()
            .security(tool_gate::DestructiveGuard::default())
            .build(),
    ));
    let pool = McpPool::new(config);
    pool.add_server(
        "many",
        json!({"command": server.to_string_lossy(), "args": ["many", "1000"]}),
    );
    pool.add_server(
        "benign",
        json!({"command": server.to_string_lossy(), "args": ["benign"]}),
    );
    runtime.block_on(async {
        assert_eq!(
            pool.relist_tools("many")
                .await
                .expect("list")
                .admitted
                .len(),
            1000
        );
        pool.list_tools("benign").await.expect("list");
    });
    pool
}

/// Times `iters` runs of `timed`, each followed by an untimed `partner`.
fn interleaved<A, B>(iters: u64, timed: &dyn Fn() -> A, partner: &dyn Fn() -> B) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        std::hint::black_box(timed());
        total += start.elapsed();
        std::hint::black_box(partner());
    }
    total
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let pool = pool(&runtime);

    // Each timed run is followed by an untimed run of its partner, so the
    // floor and the measured path see the same load (the machine is shared).
    let list_bare = || {
        runtime
            .block_on(pool.bare_list_count("many"))
            .expect("bare list")
    };
    let list_admitted = || {
        runtime
            .block_on(pool.relist_tools("many"))
            .expect("admitted list")
    };
    let mut group = c.benchmark_group("list_1000");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| interleaved(iters, &list_bare, &list_admitted));
    });
    group.bench_function("admitted", |b| {
        b.iter_custom(|iters| interleaved(iters, &list_admitted, &list_bare));
    });
    group.finish();

    // Admission alone, cold (no earlier registry), on the same 1,000
    // descriptors the fixture lists: where the listing's extra time goes.
    let listed: Vec<ListedTool> = (0..1000)
        .map(|i| ListedTool {
            name: format!("tool_{i:05}"),
            description: Some(format!("Look up record {i} by its id.")),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "record_id": {"type": "string", "maxLength": 64},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "order": {"type": "string", "enum": ["asc", "desc"]}
                },
                "required": ["record_id"],
                "additionalProperties": false
            }),
        })
        .collect();
    // The descriptors are cloned outside the timing (the pool moves them
    // out of the parsed listing instead).
    c.bench_function("admit_1000_cold", |b| {
        b.iter_batched(
            || listed.clone(),
            |l| Registry::admit("many", l, None),
            BatchSize::LargeInput,
        );
    });
    let previous = Registry::admit("many", listed.clone(), None);
    c.bench_function("admit_1000_warm", |b| {
        b.iter_batched(
            || listed.clone(),
            |l| Registry::admit("many", l, Some(&previous)),
            BatchSize::LargeInput,
        );
    });

    let Value::Object(map) = json!({"text": "hello from the bench"}) else {
        unreachable!("literal object");
    };
    let call_bare = || {
        runtime
            .block_on(pool.bare_call("benign", "echo", map.clone()))
            .expect("bare call")
    };
    let call_gated = || {
        runtime
            .block_on(pool.call_tool("benign", "echo", Value::Object(map.clone())))
            .expect("gated call")
    };
    let mut group = c.benchmark_group("call");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| interleaved(iters, &call_bare, &call_gated));
    });
    group.bench_function("gated", |b| {
        b.iter_custom(|iters| interleaved(iters, &call_gated, &call_bare));
    });
    group.finish();
    runtime.block_on(pool.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
