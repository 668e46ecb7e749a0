//! `.mcp.json` loading.

use std::path::Path;

use mcp_pool::{Error, McpPool, PoolConfig, ServerSpec, parse_config};
use serde_json::json;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

// contract: ADM-090
#[test]
fn load_config_returns_only_the_names_of_the_file_just_loaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(
        dir.path(),
        "a.json",
        r#"{"mcpServers": {"a1": {"command": "x"}, "a2": {"url": "https://h/mcp"}}}"#,
    );
    let b = write(
        dir.path(),
        "b.json",
        r#"{"mcpServers": {"b1": {"command": "y"}}, "other": 1}"#,
    );
    let pool = McpPool::new(PoolConfig::default());
    assert_eq!(pool.load_config(&a).expect("load a"), ["a1", "a2"]);
    assert_eq!(pool.load_config(&b).expect("load b"), ["b1"]);
    // The pool holds both files' servers.
    assert_eq!(pool.server_names(), ["a1", "a2", "b1"]);
    // A file without mcpServers declares none and keeps the rest.
    let c = write(
        dir.path(),
        "c.json",
        r#"{"servers": {"c": {"command": "z"}}}"#,
    );
    assert!(pool.load_config(&c).expect("load c").is_empty());
    assert_eq!(pool.server_names().len(), 3);
}

#[test]
fn bad_files_are_typed_errors_and_leave_the_pool_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pool = McpPool::new(PoolConfig::default());
    let missing = pool.load_config(&dir.path().join("nope.json")).unwrap_err();
    assert!(matches!(missing, Error::ConfigNotFound { .. }), "{missing}");
    for (text, needle) in [
        ("[1, 2]", "must be a JSON object"),
        (r#"{"mcpServers": []}"#, "mcpServers must be an object"),
        ("{not json", "not JSON (line 1"),
    ] {
        let path = write(dir.path(), "bad.json", text);
        let err = pool.load_config(&path).unwrap_err();
        assert!(matches!(err, Error::ConfigInvalid { .. }), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }
    assert!(pool.server_names().is_empty());
}

#[test]
fn entries_parse_into_specs_with_url_winning() {
    let servers = parse_config(
        Path::new("x.json"),
        r#"{"mcpServers": {"both": {"command": "c", "url": "https://h/mcp"}, "cmd": {"command": "c", "args": ["a"], "env": {"K": "v"}}, "none": {}, "badargs": {"command": "c", "args": "a"}}}"#,
    )
    .expect("parse");
    assert!(matches!(
        ServerSpec::from_entry("both", &servers["both"]),
        Ok(ServerSpec::Url { .. })
    ));
    let Ok(ServerSpec::Stdio { args, env, .. }) = ServerSpec::from_entry("cmd", &servers["cmd"])
    else {
        panic!("cmd is a stdio server");
    };
    assert_eq!(args, ["a"]);
    assert_eq!(env.get("K").map(String::as_str), Some("v"));
    let none = ServerSpec::from_entry("none", &servers["none"]).unwrap_err();
    assert!(
        none.to_string().contains("either 'url' or 'command'"),
        "{none}"
    );
    assert!(ServerSpec::from_entry("badargs", &servers["badargs"]).is_err());
    // Debug never shows env values.
    let debug = format!(
        "{:?}",
        ServerSpec::from_entry("cmd", &json!({"command": "c", "env": {"TOKEN": "s3cret"}}))
    );
    assert!(
        debug.contains("TOKEN") && !debug.contains("s3cret"),
        "{debug}"
    );
}
