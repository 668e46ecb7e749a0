//! MCP config resolution on real directories (GATE-017..021).

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::json;
use tool_gate::{McpConfigQuery, McpConfigSource, McpConsumer, resolve_mcp_config};

struct Layout {
    dir: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["project/.lionagi", "home/.lionagi", "elsewhere"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical").join(rel)
    }

    fn put(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::write(&p, "{\"mcpServers\": {}}").expect("write");
        p
    }

    fn query(&self, explicit: Option<PathBuf>, trust: bool) -> McpConfigQuery {
        McpConfigQuery {
            explicit,
            project_dir: Some(self.path("project")),
            trust_project_settings: trust,
            home: Some(self.path("home")),
        }
    }
}

const PROJECT_LIONAGI: &str = "project/.lionagi/.mcp.json";
const PROJECT: &str = "project/.mcp.json";
const HOME: &str = "home/.lionagi/.mcp.json";

fn resolve(q: &McpConfigQuery) -> Option<(PathBuf, McpConfigSource)> {
    resolve_mcp_config(q, McpConsumer::NativeLoading)
        .expect("resolves")
        .map(|r| (r.path, r.source))
}

#[test]
fn an_explicit_path_wins_over_every_candidate() {
    // contract: GATE-017
    let l = Layout::new();
    for rel in [PROJECT_LIONAGI, PROJECT, HOME] {
        l.put(rel);
    }
    let explicit = l.put("elsewhere/servers.json");
    for trust in [true, false] {
        assert_eq!(
            resolve(&l.query(Some(explicit.clone()), trust)),
            Some((explicit.clone(), McpConfigSource::Explicit))
        );
    }
    // Relative explicit paths are taken against the project directory.
    let relative = l.put("project/custom.json");
    assert_eq!(
        resolve(&l.query(Some(PathBuf::from("custom.json")), false)),
        Some((relative, McpConfigSource::Explicit))
    );
}

#[test]
fn project_candidates_count_only_under_trust() {
    // contract: GATE-018
    let l = Layout::new();
    let lionagi = l.put(PROJECT_LIONAGI);
    let plain = l.put(PROJECT);
    // Untrusted and no home file: nothing, even though both are present.
    assert_eq!(resolve(&l.query(None, false)), None);
    // Untrusted with a home file: the home file, never the project's.
    let home = l.put(HOME);
    assert_eq!(
        resolve(&l.query(None, false)),
        Some((home.clone(), McpConfigSource::UserHome))
    );
    // Trusted: the project's own .lionagi file first, then .mcp.json.
    assert_eq!(
        resolve(&l.query(None, true)),
        Some((lionagi.clone(), McpConfigSource::ProjectLionagi))
    );
    std::fs::remove_file(&lionagi).expect("rm");
    assert_eq!(
        resolve(&l.query(None, true)),
        Some((plain, McpConfigSource::Project))
    );
}

#[test]
fn an_untrusted_project_cannot_reach_in_through_a_symlinked_candidate() {
    // contract: GATE-018
    let l = Layout::new();
    let payload = l.put("elsewhere/evil.json");
    std::os::unix::fs::symlink(&payload, l.path(PROJECT)).expect("symlink");
    assert_eq!(resolve(&l.query(None, false)), None);
}

#[test]
fn the_home_file_needs_no_trust() {
    // contract: GATE-019
    let l = Layout::new();
    let home = l.put(HOME);
    for trust in [false, true] {
        assert_eq!(
            resolve(&l.query(None, trust)),
            Some((home.clone(), McpConfigSource::UserHome))
        );
    }
    let no_project = McpConfigQuery {
        home: Some(l.path("home")),
        ..McpConfigQuery::default()
    };
    assert_eq!(
        resolve(&no_project),
        Some((home, McpConfigSource::UserHome))
    );
}

#[test]
fn an_explicit_path_that_does_not_resolve_is_a_configuration_error() {
    // contract: GATE-020
    let l = Layout::new();
    l.put(HOME);
    let missing = l.path("elsewhere/missing.json");
    for explicit in [
        missing.clone(),
        l.path("elsewhere"),
        PathBuf::from("nope.json"),
    ] {
        match resolve_mcp_config(
            &l.query(Some(explicit.clone()), true),
            McpConsumer::CliForwarding,
        ) {
            Err(tool_gate::Error::Configuration { path, reason }) => {
                assert_eq!(path, explicit);
                assert!(reason.contains("mcp_config_path"), "{reason}");
            }
            other => panic!("{explicit:?}: {other:?}"),
        }
    }
    let no_base = McpConfigQuery {
        explicit: Some(PathBuf::from("rel.json")),
        ..McpConfigQuery::default()
    };
    assert!(resolve_mcp_config(&no_base, McpConsumer::NativeLoading).is_err());
    // Missing discovered candidates fall through without error.
    let empty = Layout::new();
    assert_eq!(resolve(&empty.query(None, true)), None);
    let nothing = McpConfigQuery {
        project_dir: Some(empty.path("project/absent")),
        home: Some(empty.path("no-home")),
        trust_project_settings: true,
        ..McpConfigQuery::default()
    };
    assert_eq!(resolve(&nothing), None);
}

/// The precedence table, written independently of the implementation.
fn model(
    present: [bool; 3],
    explicit: u8,
    trust: bool,
    l: &Layout,
) -> Result<Option<(PathBuf, McpConfigSource)>, ()> {
    match explicit {
        1 => {
            return Ok(Some((
                l.path("elsewhere/servers.json"),
                McpConfigSource::Explicit,
            )));
        }
        2 => return Err(()),
        _ => {}
    }
    let order = [
        (
            trust && present[0],
            PROJECT_LIONAGI,
            McpConfigSource::ProjectLionagi,
        ),
        (trust && present[1], PROJECT, McpConfigSource::Project),
        (present[2], HOME, McpConfigSource::UserHome),
    ];
    Ok(order
        .iter()
        .find(|(on, ..)| *on)
        .map(|(_, rel, src)| (l.path(rel), *src)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn native_loading_and_cli_forwarding_pick_the_same_file(
        present in any::<[bool; 3]>(),
        explicit in 0u8..3,
        trust in any::<bool>(),
    ) {
        // Not GATE-021: both consumers call this one function, so their
        // agreement is by construction; this checks its precedence model.
        let l = Layout::new();
        for (on, rel) in present.iter().zip([PROJECT_LIONAGI, PROJECT, HOME]) {
            if *on {
                l.put(rel);
            }
        }
        l.put("elsewhere/servers.json");
        let explicit_path = match explicit {
            1 => Some(l.path("elsewhere/servers.json")),
            2 => Some(l.path("elsewhere/absent.json")),
            _ => None,
        };
        let q = l.query(explicit_path, trust);
        let simplify = |r: Result<Option<tool_gate::ResolvedMcpConfig>, tool_gate::Error>| {
            r.map(|o| o.map(|c| (c.path, c.source))).map_err(|_| ())
        };
        let native = simplify(resolve_mcp_config(&q, McpConsumer::NativeLoading));
        let forwarded = simplify(resolve_mcp_config(&q, McpConsumer::CliForwarding));
        prop_assert_eq!(&native, &forwarded);
        prop_assert_eq!(native, model(present, explicit, trust, &l));
    }
}

/// Layouts judged by lionagi 0.36.0's `_resolve_mcp_path` (black box, see
/// fixtures/tool-gate/gen_mcp_resolution_oracle.py), replayed here.
const ORACLE: &str = include_str!("../../../../fixtures/tool-gate/mcp_resolution_oracle.jsonl");

#[test]
fn resolution_agrees_with_the_original_on_every_recorded_layout() {
    // contract: GATE-017, GATE-018, GATE-019, GATE-020
    let names = [
        ("pl", PROJECT_LIONAGI),
        ("p", PROJECT),
        ("h", HOME),
        ("x", "elsewhere/x.json"),
        ("r", "project/rel.json"),
    ];
    let rel = |key: &str| names.iter().find(|(k, _)| *k == key).expect("known key").1;
    let mut checked = 0;
    for line in ORACLE.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).expect("fixture line");
        let l = Layout::new();
        for file in case["files"].as_array().expect("files") {
            let file = file.as_str().expect("name");
            match file.strip_suffix('/') {
                Some(dir) => std::fs::create_dir(l.path(rel(dir))).expect("mkdir"),
                None => drop(l.put(rel(file))),
            }
        }
        let explicit = case["explicit"]
            .as_str()
            .map(|e| match e.strip_prefix("abs:") {
                Some(abs) => l.path(abs),
                None => PathBuf::from(e),
            });
        let trust = case["trust"].as_bool().expect("trust");
        let got = match resolve_mcp_config(&l.query(explicit, trust), McpConsumer::NativeLoading) {
            Ok(None) => json!(null),
            Ok(Some(found)) => {
                let key = names
                    .iter()
                    .find(|(_, r)| l.path(r) == found.path)
                    .map_or("other", |(k, _)| k);
                json!(key)
            }
            Err(_) => json!("error"),
        };
        assert_eq!(got, case["oracle"], "{line}");
        checked += 1;
    }
    assert_eq!(checked, 32);
}
