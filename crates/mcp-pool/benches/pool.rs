//! Listing with admission and gated, validated calls against their bare
//! floors, over the same pooled stdio connection to a fixture server.
//!
//! - `list_1000/bare`: one `tools/list` of 1,000 tools; `list_1000/admitted`:
//!   the same listing plus admission of every tool and the registry swap.
//! - `call/bare`: one `tools/call` round trip; `call/gated`: the same call
//!   after argument validation (the compiled schema) and the tool-gate
//!   (destructive-command guard).
//! - `call_checks`: what `call/gated` adds to `call/bare`, alone (argument
//!   validation and the gate check, no transport).
//! - `reserved_scan_1000`: the reserved-key scan's share of reading a
//!   1,000-tool listing's text: `value` parses it into a `Value` (the
//!   floor), `scanned` is `parse_config` on the same text, which scans it
//!   first and then does the same parse (the transport's order);
//!   `scan_only` is the scan alone (the text with a reserved key as the
//!   root's last member, walked to the end and refused).
//!
//! The ratio floor / measured should be at least 0.8 for both. Each group
//! also prints a paired ratio on stderr: every timed run is followed by a
//! run of its partner, and both halves of every pair (warm-up included)
//! are kept, so the floor and the measured path alternate run by run and
//! the load drift between criterion's two functions cannot bias the ratio.

use std::cell::RefCell;
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

/// Every back-to-back pair a group ran, both halves timed: the floor's
/// and the measured path's durations. Criterion runs a group's two
/// functions one after the other, so their estimates can differ by the
/// load drift between them; the pairs, each measured within a moment,
/// give a ratio that drift does not bias.
#[derive(Default)]
struct Pairs {
    floor: RefCell<Vec<Duration>>,
    measured: RefCell<Vec<Duration>>,
}

impl Pairs {
    fn push(&self, floor: Duration, measured: Duration) {
        self.floor.borrow_mut().push(floor);
        self.measured.borrow_mut().push(measured);
    }

    /// Prints the paired figures: total and median of each half, and
    /// floor / measured for both.
    #[allow(clippy::print_stderr, reason = "the bench reports its paired ratio")]
    fn report(&self, group: &str) {
        let median = |v: &RefCell<Vec<Duration>>| {
            let mut v = v.borrow().clone();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or_default()
        };
        let total = |v: &RefCell<Vec<Duration>>| v.borrow().iter().sum::<Duration>();
        let pairs = self.floor.borrow().len();
        if pairs == 0 {
            // The group was filtered out.
            return;
        }
        let (floor_total, measured_total) = (total(&self.floor), total(&self.measured));
        let (floor_median, measured_median) = (median(&self.floor), median(&self.measured));
        let ratio =
            |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE);
        eprintln!(
            "{group} paired over {pairs} pairs: floor/measured by mean {:.3} ({:?} / {:?}), by median {:.3} ({:?} / {:?})",
            ratio(floor_total, measured_total),
            floor_total / u32::try_from(pairs).unwrap_or(u32::MAX),
            measured_total / u32::try_from(pairs).unwrap_or(u32::MAX),
            ratio(floor_median, measured_median),
            floor_median,
            measured_median,
        );
    }
}

/// Times `iters` runs of `timed`, each followed by a run of `partner`;
/// returns `timed`'s total (criterion's figure) and records both halves of
/// every pair in `pairs` (`timed_is_floor` says which half is which).
fn interleaved<A, B>(
    iters: u64,
    timed: &dyn Fn() -> A,
    partner: &dyn Fn() -> B,
    pairs: &Pairs,
    timed_is_floor: bool,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        std::hint::black_box(timed());
        let first = start.elapsed();
        total += first;
        let start = Instant::now();
        std::hint::black_box(partner());
        let second = start.elapsed();
        if timed_is_floor {
            pairs.push(first, second);
        } else {
            pairs.push(second, first);
        }
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
    let pairs = Pairs::default();
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| interleaved(iters, &list_bare, &list_admitted, &pairs, true));
    });
    group.bench_function("admitted", |b| {
        b.iter_custom(|iters| interleaved(iters, &list_admitted, &list_bare, &pairs, false));
    });
    group.finish();
    pairs.report("list_1000");

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
    // The scan the transport runs on every message, against the parse it
    // precedes, on the listing's text.
    let listing_text = json!({"mcpServers": {}, "tools": listed
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .collect::<Vec<_>>()})
    .to_string();
    let mut group = c.benchmark_group("reserved_scan_1000");
    group.bench_function("value", |b| {
        b.iter(|| serde_json::from_str::<Value>(&listing_text).expect("json"));
    });
    group.bench_function("scanned", |b| {
        b.iter(|| {
            mcp_pool::parse_config(std::path::Path::new("listing.json"), &listing_text)
                .expect("config")
        });
    });
    // The scan alone: the same text with a reserved key as the root's
    // last member is walked to its end and refused, never parsed.
    let refused_text = format!(
        "{},\"$serde_json::private::RawValue\":1}}",
        listing_text.trim_end_matches('}')
    );
    group.bench_function("scan_only", |b| {
        b.iter(|| {
            mcp_pool::parse_config(std::path::Path::new("listing.json"), &refused_text)
                .expect_err("refused")
        });
    });
    group.finish();
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
    // What the gated call adds, alone: argument validation against the
    // echo tool's schema (as the fixture lists it; compiled on first use)
    // and the same tool-gate check the pool runs (`CallGate for Gate`
    // clones the arguments into a `ToolCall` the same way).
    let checks_registry = Registry::admit(
        "benign",
        vec![ListedTool {
            name: "echo".into(),
            description: Some("Echo the given text back.".into()),
            input_schema: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 1000}},
                "required": ["text"],
                "additionalProperties": false
            }),
        }],
        None,
    );
    let echo = checks_registry.get("echo").expect("echo admitted");
    let gate = tool_gate::Gate::builder()
        .security(tool_gate::DestructiveGuard::default())
        .build();
    c.bench_function("call_checks", |b| {
        b.iter(|| {
            echo.validate("benign", &map).expect("valid");
            let call = tool_gate::ToolCall::new("benign", "echo", Value::Object(map.clone()));
            assert!(gate.check(&call).is_allowed());
        });
    });

    let mut group = c.benchmark_group("call");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(8));
    let pairs = Pairs::default();
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| interleaved(iters, &call_bare, &call_gated, &pairs, true));
    });
    group.bench_function("gated", |b| {
        b.iter_custom(|iters| interleaved(iters, &call_gated, &call_bare, &pairs, false));
    });
    group.finish();
    pairs.report("call");
    runtime.block_on(pool.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
