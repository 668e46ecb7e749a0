//! Reading the MCP servers codex's own config layers declare, and how an
//! exclusive forwarded set disables them.

use std::path::{Path, PathBuf};

use providers_codex::{
    CodexConfigLayers, CodexConfiguredMcp, CodexProvider, Error, McpTransportKind,
    codex_declared_mcp_servers, codex_mcp_overrides_for, mcp_servers_in_toml,
};
use providers_core::{AgentRequest, ForwardedMcp, Provider as _, apply_forwarded_mcp_servers};
use serde_json::{Map, json};

fn names(text: &str) -> Result<Vec<(String, Option<McpTransportKind>)>, Error> {
    mcp_servers_in_toml(Path::new("/cfg/config.toml"), text)
}

#[test]
fn every_declared_server_is_read_with_its_transport() {
    let text = r#"
model = "gpt-5"
mcp_servers.dotted.command = "d"

[mcp_servers.github]
command = "npx"
args = ["-y", "gh"]

[mcp_servers.github.env]
TOKEN = "x"

[mcp_servers."quoted_ok"]
url = "https://mcp.example/x"

[mcp_servers.partial]
enabled = true

[projects."/tmp/x"]
trust_level = "trusted"
"#;
    let got = names(text).expect("parsed");
    assert_eq!(
        got,
        [
            ("dotted".into(), Some(McpTransportKind::Stdio)),
            ("github".into(), Some(McpTransportKind::Stdio)),
            ("quoted_ok".into(), Some(McpTransportKind::Http)),
            ("partial".into(), None),
        ]
    );
    let inline = "mcp_servers = { a = { command = \"x\" }, b = { url = \"http://h\" } }\n";
    assert_eq!(
        names(inline).expect("parsed"),
        [
            ("a".into(), Some(McpTransportKind::Stdio)),
            ("b".into(), Some(McpTransportKind::Http)),
        ]
    );
    assert_eq!(names("model = \"x\"\n").expect("parsed"), []);
    assert_eq!(names("").expect("parsed"), []);
}

#[test]
fn a_file_whose_servers_cannot_be_known_is_an_error_naming_it() {
    for bad in [
        "[mcp_servers.x\ncommand = 1",
        "mcp_servers = 3",
        "mcp_servers = [\"a\"]",
        "[mcp_servers]\nx = \"not a table\"",
        "a = 1\na = 2",
    ] {
        let err = names(bad).expect_err(bad);
        assert!(
            matches!(err, Error::CodexConfigInvalid { .. }),
            "{bad}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("/cfg/config.toml"), "{message}");
        assert!(message.contains("cannot be parsed"), "{message}");
    }
}

#[test]
fn a_server_name_no_override_can_name_is_refused() {
    // Codex splits a `-c` key at every `.` and takes quotes literally, so
    // these could not be disabled.
    for name in ["my server", "a.b", "", "ü"] {
        let text = format!("[mcp_servers.\"{name}\"]\ncommand = \"x\"\n");
        match names(&text) {
            Err(Error::CodexConfigServerName { file, server }) => {
                assert_eq!(file, Path::new("/cfg/config.toml"));
                assert_eq!(server, name);
            }
            other => panic!("{name:?}: {other:?}"),
        }
    }
    let err = names("[mcp_servers.\"my server\"]\ncommand = \"x\"\n").expect_err("refused");
    assert!(err.to_string().contains("rename or remove it"), "{err}");
}

struct Tree {
    _dir: tempfile::TempDir,
    system: PathBuf,
    home: PathBuf,
    codex_home: PathBuf,
    ws: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// `root/etc`, `root/home/.codex` (codex home) and a workspace
/// `root/home/proj/sub`.
fn tree() -> Tree {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let home = root.join("home");
    let ws = home.join("proj/sub");
    std::fs::create_dir_all(&ws).expect("mkdir");
    Tree {
        system: root.join("etc"),
        codex_home: home.join(".codex"),
        home,
        ws,
        _dir: dir,
    }
}

fn layers(t: &Tree) -> CodexConfigLayers {
    CodexConfigLayers {
        system_dir: t.system.clone(),
        codex_home: Some(t.codex_home.clone()),
        workspace: Some(t.ws.clone()),
    }
}

#[test]
fn absent_files_declare_nothing() {
    let t = tree();
    let got = codex_declared_mcp_servers(&layers(&t)).expect("read");
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(got.configured(), CodexConfiguredMcp::default());
}

#[test]
fn every_layer_is_read_and_project_only_names_carry_their_kind() {
    let t = tree();
    write(
        &t.system.join("config.toml"),
        "[mcp_servers.sys]\ncommand = \"s\"\n",
    );
    write(
        &t.system.join("managed_config.toml"),
        "[mcp_servers.managed]\nurl = \"http://m\"\n",
    );
    write(
        &t.codex_home.join("config.toml"),
        "[mcp_servers.mine]\ncommand = \"m\"\n[mcp_servers.both]\ncommand = \"b\"\n",
    );
    // The project layers: the workspace's own, its parent's (nearest with
    // a transport wins), and the home's `.codex`, which is the user layer
    // itself and so read once, as always loaded.
    write(
        &t.ws.join(".codex/config.toml"),
        "[mcp_servers.near]\nenabled = true\n[mcp_servers.both]\nurl = \"http://x\"\n",
    );
    write(
        &t.ws.parent().expect("proj").join(".codex/config.toml"),
        "[mcp_servers.near]\nurl = \"http://n\"\n[mcp_servers.far]\ncommand = \"f\"\n",
    );
    let got = codex_declared_mcp_servers(&layers(&t)).expect("read");
    let mine = got
        .servers
        .iter()
        .filter(|s| s.name == "mine")
        .collect::<Vec<_>>();
    assert_eq!(mine.len(), 1, "{got:?}");
    assert!(mine[0].always_loaded);
    assert_eq!(mine[0].file, t.codex_home.join("config.toml"));
    let configured = got.configured();
    assert_eq!(configured.loaded, ["both", "managed", "mine", "sys"]);
    assert_eq!(
        configured.project.into_iter().collect::<Vec<_>>(),
        [
            ("far".to_owned(), McpTransportKind::Stdio),
            ("near".to_owned(), McpTransportKind::Http),
        ]
    );
    assert!(t.home.is_dir());
}

#[test]
fn a_layer_that_cannot_be_read_or_parsed_fails_the_whole_read() {
    let t = tree();
    write(
        &t.codex_home.join("config.toml"),
        "[mcp_servers.ok]\ncommand = \"x\"\n",
    );
    write(&t.ws.join(".codex/config.toml"), "[mcp_servers\n");
    match codex_declared_mcp_servers(&layers(&t)) {
        Err(Error::CodexConfigInvalid { file, .. }) => {
            assert_eq!(file, t.ws.join(".codex/config.toml"));
        }
        other => panic!("{other:?}"),
    }
    // A directory where the file should be: unreadable, not absent.
    std::fs::remove_file(t.ws.join(".codex/config.toml")).expect("rm");
    std::fs::create_dir_all(t.ws.join(".codex/config.toml")).expect("mkdir");
    let err = codex_declared_mcp_servers(&layers(&t)).expect_err("refused");
    assert!(
        matches!(err, Error::CodexConfigUnreadable { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(".codex/config.toml"), "{err}");
}

fn servers(v: serde_json::Value) -> Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[test]
fn an_exclusive_set_disables_loaded_names_and_completes_project_only_ones() {
    let configured = CodexConfiguredMcp {
        loaded: vec!["fs".into(), "mine".into()],
        project: [
            ("mine".to_owned(), McpTransportKind::Http),
            ("proj".to_owned(), McpTransportKind::Stdio),
            ("remote".to_owned(), McpTransportKind::Http),
            ("fs".to_owned(), McpTransportKind::Stdio),
        ]
        .into(),
    };
    let set = servers(json!({"fs": {"command": "fs-mcp"}}));
    let plan = codex_mcp_overrides_for(&set, true, &configured, "p").expect("plan");
    let pairs: Vec<&str> = plan
        .args
        .chunks(2)
        .map(|c| {
            assert_eq!(c[0], "-c");
            c[1].as_str()
        })
        .collect();
    assert_eq!(
        pairs,
        [
            "mcp_servers.fs.command=\"fs-mcp\"",
            "mcp_servers.mine.enabled=false",
            "mcp_servers.proj.enabled=false",
            "mcp_servers.proj.command=\"false\"",
            "mcp_servers.remote.enabled=false",
            "mcp_servers.remote.url=\"http://127.0.0.1/lionrt-disabled\"",
        ]
    );
    // Not exclusive: codex's own servers are left alone.
    let plan = codex_mcp_overrides_for(&set, false, &configured, "p").expect("plan");
    assert_eq!(plan.args, ["-c", "mcp_servers.fs.command=\"fs-mcp\""]);
    // A name no override can name is refused, not skipped.
    let bad = CodexConfiguredMcp {
        loaded: vec![],
        project: [("a.b".to_owned(), McpTransportKind::Stdio)].into(),
    };
    assert!(matches!(
        codex_mcp_overrides_for(&set, true, &bad, "p"),
        Err(Error::InvalidMcpServerName(name)) if name == "a.b"
    ));
}

#[test]
fn the_kwargs_carry_both_lists_to_argv() {
    let mut req = AgentRequest::new("p");
    assert!(apply_forwarded_mcp_servers(
        &CodexProvider::default(),
        &mut req.kwargs,
        &ForwardedMcp {
            servers: Map::new(),
            exclusive: true,
        }
    ));
    req.kwargs
        .insert("configured_mcp_servers".into(), json!(["mine"]));
    req.kwargs
        .insert("project_mcp_servers".into(), json!({"proj": "http"}));
    let argv = CodexProvider::default()
        .invocation(&req)
        .expect("argv")
        .argv;
    let joined = argv.join(" ");
    assert!(
        joined.contains("-c mcp_servers.mine.enabled=false"),
        "{joined}"
    );
    assert!(
        joined.contains("-c mcp_servers.proj.enabled=false -c mcp_servers.proj.url="),
        "{joined}"
    );
    req.kwargs
        .insert("project_mcp_servers".into(), json!({"proj": "sse"}));
    assert!(matches!(
        CodexProvider::default().invocation(&req),
        Err(Error::InvalidMcpTransportKind { server, .. }) if server == "proj"
    ));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any set of bare names, in any of the three spellings, reads
        /// back as written; any name with a character outside the bare set
        /// is refused.
        #[test]
        fn names_read_back_or_are_refused(
            names_in in proptest::collection::btree_set("[A-Za-z0-9_-]{1,12}", 0..6),
            odd in "[A-Za-z0-9_-]{0,4}[ .\"'é/][A-Za-z0-9_-]{0,4}",
            spelling in 0u8..3,
        ) {
            let mut text = String::new();
            for n in &names_in {
                match spelling {
                    0 => text.push_str(&format!("[mcp_servers.{n}]\ncommand = \"c\"\n")),
                    1 => text.push_str(&format!("[mcp_servers.\"{n}\"]\nurl = \"u\"\n")),
                    _ => text.push_str(&format!("mcp_servers.{n}.command = \"c\"\n")),
                }
            }
            let got = names(&text).expect("parsed");
            let got: Vec<String> = got.into_iter().map(|(n, _)| n).collect();
            let mut want: Vec<String> = names_in.iter().cloned().collect();
            if spelling != 2 {
                // Tables keep file order, which is the set's (sorted) order.
                prop_assert_eq!(&got, &want);
            } else {
                let mut sorted = got.clone();
                sorted.sort();
                want.sort();
                prop_assert_eq!(sorted, want);
            }
            let key = toml_quoted(&odd);
            let bad = format!("{text}[mcp_servers.{key}]\ncommand = \"c\"\n");
            let refused = matches!(
                names(&bad),
                Err(Error::CodexConfigServerName { server, .. }) if server == odd
            );
            prop_assert!(refused);
        }
    }

    fn toml_quoted(s: &str) -> String {
        serde_json::Value::String(s.to_owned()).to_string()
    }
}
