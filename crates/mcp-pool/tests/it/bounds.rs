//! Bounded clients: a listing that never ends stops at a limit with a typed
//! error (quickly, keeping nothing), and stdout lines that are not JSON (a
//! banner) are skipped up to a cap, never parsed; past the cap, and for a
//! JSON line that is not JSON-RPC, the connection ends.

use std::io::Write as _;
use std::time::Duration;

use mcp_pool::{Error, ListingLimit, McpPool, PoolConfig};
use mcp_test_servers::{BENIGN, HOSTILE};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{config, entry, fixture, settle, tag};

/// Lists `mode` of the hostile server; the error, once nothing of its
/// group is left.
async fn listing_error(mode: &str, config: PoolConfig) -> Error {
    let tag = tag();
    let pool = McpPool::new(config);
    pool.add_server("hostile", entry(HOSTILE, mode, &tag));
    let error = pool.list_tools("hostile").await.unwrap_err();
    let left = settle(&tag).await;
    assert!(left.is_empty(), "{mode}: processes left behind: {left:?}");
    // Nothing of the listing was registered: the next use starts afresh
    // and fails the same way.
    assert!(pool.server_pid("hostile").await.is_none());
    error
}

/// A request timeout far beyond what the limits need, so the typed limit
/// error (not a timeout) shows the listing was stopped by its bound on a
/// loaded machine too; today's unbounded listing would run into it.
fn endless_config() -> PoolConfig {
    let mut config = config();
    config.request_timeout = Duration::from_secs(120);
    config
}

fn assert_limit(error: &Error, what: ListingLimit, limit: usize) {
    match error {
        Error::ListingTooLarge {
            what: got,
            limit: got_limit,
            server,
        } => {
            assert_eq!((*got, *got_limit), (what, limit), "{error}");
            assert_eq!(server, "hostile");
        }
        other => panic!("expected a listing limit ({what:?}), got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_naming_a_new_cursor_forever_stops_at_the_page_limit() {
    let error = listing_error("endless-cursor", endless_config()).await;
    assert_limit(&error, ListingLimit::Pages, 100);
    assert!(error.to_string().contains("more than 100 pages"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_limit_is_the_configured_one() {
    let mut config = config();
    config.max_list_pages = 3;
    let error = listing_error("endless-cursor", config).await;
    assert_limit(&error, ListingLimit::Pages, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_listing_tools_forever_stops_at_the_tool_limit() {
    // 1,000 tools a page: the 10,000-tool limit comes at page 11, long
    // before the page limit.
    let error = listing_error("endless-tools", endless_config()).await;
    assert_limit(&error, ListingLimit::Tools, 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_listing_megabytes_forever_stops_at_the_byte_limit() {
    // About 1 MiB a page, each page under the 8 MiB message limit: the
    // 16 MiB limit comes at page 17, with four tools a page.
    let error = listing_error("endless-bytes", endless_config()).await;
    assert_limit(&error, ListingLimit::Bytes, 16 * 1024 * 1024);
    assert!(
        error.to_string().contains("bytes of tool descriptors"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_named_twice_is_a_protocol_error_at_once() {
    let error = listing_error("same-cursor", config()).await;
    let Error::Protocol { phase, detail, .. } = &error else {
        panic!("expected a protocol error, got {error}");
    };
    assert_eq!(*phase, "tools/list");
    // Page 1 names page-1, page 2 names it again.
    assert!(detail.contains("page 2 names a cursor"), "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_exactly_the_tool_limit_is_admitted_and_one_more_is_not() {
    for (limit, ok) in [(40, true), (39, false)] {
        let tag = tag();
        let mut config = config();
        config.max_listed_tools = limit;
        let pool = McpPool::new(config);
        pool.add_server(
            "many",
            json!({"command": fixture(BENIGN).to_string_lossy(), "args": ["many", "40", tag]}),
        );
        let listed = pool.list_tools("many").await;
        match (ok, listed) {
            (true, Ok(listing)) => assert_eq!(listing.admitted.len(), 40),
            (false, Err(error)) => {
                assert!(
                    matches!(
                        &error,
                        Error::ListingTooLarge {
                            what: ListingLimit::Tools,
                            limit: 39,
                            ..
                        }
                    ),
                    "{error}"
                );
            }
            (ok, other) => panic!("limit {limit} (ok: {ok}): {other:?}"),
        }
        pool.shutdown().await;
        assert!(settle(&tag).await.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banner_before_json_rpc_is_skipped_and_the_tools_are_judged() {
    let tag = tag();
    let pool = McpPool::new(config());
    pool.add_server("banner", entry(HOSTILE, "banner", &tag));
    let listing = pool.list_tools("banner").await.expect("listed");
    let admitted: Vec<&str> = listing.admitted.iter().map(|t| t.name.as_str()).collect();
    let denied: Vec<&str> = listing.denied.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(admitted.len(), 3, "{admitted:?}");
    assert_eq!(denied, ["bash", "run_script"]);
    pool.shutdown().await;
    assert!(settle(&tag).await.is_empty());
}

/// Starts the benign server behind a shell that first prints `banner`
/// (written to a file in `dir`) on stdout.
fn banner_entry(dir: &std::path::Path, banner: &[Vec<u8>], tag: &str) -> Value {
    let path = dir.join(format!("banner-{tag}"));
    let mut file = std::fs::File::create(&path).expect("banner file");
    for line in banner {
        file.write_all(line).expect("write banner");
        file.write_all(b"\n").expect("write banner");
    }
    json!({
        "command": "/bin/sh",
        "args": [
            "-c", r#"cat "$1"; exec "$2" benign "$3""#, "banner",
            path.to_string_lossy(), fixture(BENIGN).to_string_lossy(), tag,
        ],
    })
}

/// What listing the benign server behind `banner` gives.
fn list_behind(banner: &[Vec<u8>]) -> Result<usize, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let tag = tag();
        let pool = McpPool::new(config());
        pool.add_server("banner", banner_entry(dir.path(), banner, &tag));
        let listed = pool.list_tools("banner").await;
        pool.shutdown().await;
        let left = settle(&tag).await;
        assert!(left.is_empty(), "processes left behind: {left:?}");
        listed.map(|l| l.admitted.len())
    })
}

/// Whether `line`, as the transport reads it, is a line that is not JSON
/// (the only kind skipped).
fn not_json(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    !trimmed.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_err()
}

/// One stdout line that does not parse as JSON: random bytes (any but a
/// newline), printable text, broken or trailing-junk JSON-RPC, or text
/// holding serde_json's reserved token.
fn banner_line() -> impl Strategy<Value = Vec<u8>> {
    let bytes = prop::collection::vec(any::<u8>().prop_filter("newline", |b| *b != b'\n'), 1..300);
    let text = "[ -~]{1,160}".prop_map(String::into_bytes);
    let broken = (0_usize..60).prop_map(|cut| {
        let message = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#;
        message.as_bytes()[..cut.min(message.len() - 1)].to_vec()
    });
    let trailing = "[a-z ]{1,20}".prop_map(|junk| {
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}} {junk}x"#)
            .into_bytes()
    });
    let token = "[a-z]{0,10}".prop_map(|s| {
        format!(r#"{{"$serde_json::private::RawValue":"{{\"enum\":[\"ls\"]}}"{s}"#).into_bytes()
    });
    prop_oneof![bytes, text, broken, trailing, token].prop_filter("not JSON", |l| not_json(l))
}

#[test]
fn the_line_strategies_are_never_json() {
    // The skip rule is "does not parse as JSON at all"; a strategy line that
    // parsed would test the other rule.
    assert!(not_json(b"Commands MCP Server running on stdio"));
    assert!(!not_json(b"{\"hello\":1}"));
    assert!(!not_json(b"  \t "));
}

#[test]
fn exactly_the_cap_of_banner_lines_is_skipped_and_one_more_is_refused() {
    let line = b"Commands MCP Server running on stdio".to_vec();
    let cap = PoolConfig::default().max_skipped_lines;
    assert_eq!(cap, 64);
    assert_eq!(list_behind(&vec![line.clone(); cap]).expect("listed"), 3);
    let error = list_behind(&vec![line; cap + 1]).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Protocol {
                phase: "initialize",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("is not JSON (expected value at line 1 column 1), and the server already printed 64 such lines"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn banner_lines_up_to_the_cap_are_skipped(
        banner in prop::collection::vec(banner_line(), 0..=64),
    ) {
        prop_assert_eq!(list_behind(&banner).map_err(|e| e.to_string()), Ok(3));
    }

    #[test]
    fn banner_lines_past_the_cap_are_refused(
        banner in prop::collection::vec(banner_line(), 65..=96),
    ) {
        let error = list_behind(&banner).unwrap_err();
        prop_assert!(matches!(&error, Error::Protocol { .. }), "{}", error);
        prop_assert!(error.to_string().contains("already printed 64 such lines"), "{}", error);
    }

    #[test]
    fn a_json_line_that_is_not_json_rpc_is_refused_after_a_banner(
        banner in prop::collection::vec(banner_line(), 0..=8),
        value in prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,8}".prop_map(Value::from),
            Just(json!({"hello": "world"})),
            Just(json!([1, 2, 3])),
        ],
    ) {
        let mut lines = banner;
        lines.push(value.to_string().into_bytes());
        let error = list_behind(&lines).unwrap_err();
        prop_assert!(
            error.to_string().contains("is not a JSON-RPC message"),
            "{}", error
        );
    }
}
