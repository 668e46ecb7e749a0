//! Golden argv, flag kinds, the mcp_servers invariant and containment.

use std::path::PathBuf;

use providers_claude::{
    CLAUDE_FLAGS, ClaudeCodeRequest, ClaudeProvider, Error, STRICT_MCP_CONFIG_KEY,
};
use providers_core::{
    AgentRequest, CliFields, Effort, FlagKind, FlagValue, ForwardedMcp, Provider, Stdin,
    apply_forwarded_mcp_servers, parse_declarative_cli_args,
};
use serde_json::{Map, json};

fn req() -> ClaudeCodeRequest {
    ClaudeCodeRequest {
        prompt: "fix the parser".into(),
        workspace: Some("/repo".into()),
        ..Default::default()
    }
}

fn argv(r: &ClaudeCodeRequest) -> Vec<String> {
    ClaudeProvider::default()
        .invocation_for(r)
        .expect("valid request")
        .argv
}

#[test]
fn golden_typical_request() {
    let mut agent = AgentRequest::new("fix the parser");
    agent.model = Some("sonnet".into());
    agent.workspace = Some("/repo".into());
    agent.resume = Some("3f6c2a8e".into());
    agent.kwargs = json!({
        "permission_mode": "acceptEdits",
        "max_turns": 8,
        "allowed_tools": ["Read", "Bash(git:*)"],
        "add_dir": ["/data/shared"],
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    let p = ClaudeProvider::default();
    let inv = p.invocation(&agent).unwrap();
    assert_eq!(
        inv.argv,
        [
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--max-turns",
            "8",
            "--allowedTools",
            "Read",
            "Bash(git:*)",
            "--add-dir",
            "/data/shared",
            "--resume",
            "3f6c2a8e",
            "--",
            "fix the parser",
        ]
    );
    assert_eq!(inv.cwd, Some(PathBuf::from("/repo")));
    assert_eq!(inv.stdin, Stdin::Null);
    assert!(p.streams_first_output_early());
}

fn full() -> ClaudeCodeRequest {
    ClaudeCodeRequest {
        model: Some("m".into()),
        fallback_model: Some("f".into()),
        effort: Some(Effort::High),
        permission_mode: Some("plan".into()),
        max_turns: Some(3),
        system_prompt: Some("s".into()),
        system_prompt_file: Some("prompts/sys.md".into()),
        append_system_prompt: Some("a".into()),
        append_system_prompt_file: Some("prompts/app.md".into()),
        allowed_tools: vec!["Read".into()],
        disallowed_tools: vec!["Write".into()],
        add_dir: vec!["/abs".into()],
        mcp_config: Some(".mcp.json".into()),
        mcp_servers: Some(Map::new().into()),
        strict_mcp_config: true,
        settings: Some(".claude/settings.json".into()),
        setting_sources: Some("user,project".into()),
        agents: Some(json!({"rev": {"description": "d", "prompt": "p"}})),
        plugin_dirs: vec!["p1".into(), "p2".into()],
        resume: Some("r".into()),
        continue_conversation: true,
        fork_session: true,
        session_id: Some("0b7e6d2c-3f1a-4c55-9e8d-1a2b3c4d5e6f".into()),
        include_partial_messages: true,
        dangerously_skip_permissions: true,
        ..req()
    }
}

#[test]
fn argv_is_driven_by_metadata_only() {
    // contract: PRV-052
    let full = full();
    // Every declared field is set and every one produces argv.
    let mut from_metadata = Vec::new();
    for spec in CLAUDE_FLAGS {
        let v = full.flag_value(spec.field);
        assert!(v.is_some(), "{} has a value", spec.field);
        let alone = providers_core::build_declarative_cli_args(&[*spec], |_| v.clone()).unwrap();
        assert_eq!(
            alone.first().map(String::as_str),
            Some(spec.flag),
            "{}",
            spec.field
        );
        from_metadata.extend(alone);
    }
    assert_eq!(full.cli_args().unwrap().len(), 47);
    // The request's args are exactly what its metadata builds, field by
    // field: nothing is emitted outside the metadata.
    assert_eq!(full.cli_args().unwrap(), from_metadata);
}

#[test]
fn every_field_round_trips_in_its_kind_shape() {
    // contract: PRV-057, PRV-053, PRV-055, PRV-056
    let r = ClaudeCodeRequest {
        model: Some("opus".into()),
        max_turns: Some(2),
        allowed_tools: vec!["Read".into(), "Grep".into()],
        plugin_dirs: vec!["a".into(), "b".into()],
        agents: Some(json!({"x": {"prompt": "p q"}})),
        strict_mcp_config: true,
        ..req()
    };
    let args = r.cli_args().unwrap();
    let back = parse_declarative_cli_args(CLAUDE_FLAGS, &args).unwrap();
    for spec in CLAUDE_FLAGS {
        let set = r.flag_value(spec.field);
        let is_set = match (&set, spec.kind) {
            (None, _) => false,
            (Some(FlagValue::Bool(b)), FlagKind::Bool) => *b,
            (Some(FlagValue::List(l)), _) => !l.is_empty(),
            _ => true,
        };
        if is_set {
            assert_eq!(back.get(spec.field), set.as_ref(), "{}", spec.field);
            let value = set.as_ref().expect("set");
            let shape = expected_shape(spec.flag, spec.kind, value);
            assert!(
                args.windows(shape.len()).any(|w| w == shape.as_slice()),
                "{} in its kind's shape {shape:?}: {args:?}",
                spec.field
            );
        } else {
            assert!(
                !back.contains_key(spec.field),
                "{} unset emits nothing",
                spec.field
            );
        }
    }
}

/// The argv a set value must produce, written from the kind's definition
/// (PRV-053..PRV-056) rather than from the builder.
fn expected_shape(flag: &str, kind: FlagKind, value: &FlagValue) -> Vec<String> {
    let flag = flag.to_owned();
    match (kind, value) {
        (FlagKind::Value, FlagValue::Str(s)) => vec![flag, s.clone()],
        (FlagKind::Value, FlagValue::Json(serde_json::Value::String(s))) => vec![flag, s.clone()],
        (FlagKind::Value, FlagValue::Json(v)) => vec![flag, v.to_string()],
        (FlagKind::Bool, FlagValue::Bool(true)) => vec![flag],
        (FlagKind::Bool, FlagValue::Bool(false)) => vec![],
        (FlagKind::BoolPair { .. }, FlagValue::Bool(true)) => vec![flag],
        (FlagKind::BoolPair { negative }, FlagValue::Bool(false)) => vec![negative.to_owned()],
        (FlagKind::ListArgs, FlagValue::List(items)) => {
            std::iter::once(flag).chain(items.iter().cloned()).collect()
        }
        (FlagKind::Repeat, FlagValue::List(items)) => items
            .iter()
            .flat_map(|item| [flag.clone(), item.clone()])
            .collect(),
        (FlagKind::JsonValue, FlagValue::Json(v)) => {
            vec![flag, serde_json::to_string(v).expect("json")]
        }
        (kind, value) => panic!("{flag}: {} cannot hold {value:?}", kind.name()),
    }
}

#[test]
fn every_declared_field_round_trips_on_its_own() {
    // contract: PRV-057
    let full = full();
    for spec in CLAUDE_FLAGS {
        let value = full
            .flag_value(spec.field)
            .expect("full request sets every field");
        let alone =
            providers_core::build_declarative_cli_args(&[*spec], |_| Some(value.clone())).unwrap();
        // The set value appears in the built args in its kind's shape.
        assert_eq!(
            alone,
            expected_shape(spec.flag, spec.kind, &value),
            "{}",
            spec.field
        );
        let back = parse_declarative_cli_args(&[*spec], &alone).unwrap();
        assert_eq!(back.get(spec.field), Some(&value), "{}", spec.field);
    }
}

#[test]
fn mcp_servers_unset_emits_no_flag() {
    // contract: PRV-058
    let r = req();
    assert_eq!(r.mcp_servers, None);
    assert!(!argv(&r).contains(&"--mcp-config".to_owned()));
    assert_eq!(ClaudeCodeRequest::default().mcp_servers, None);
}

#[test]
fn mcp_servers_empty_forces_zero_servers() {
    // contract: PRV-059
    let r = ClaudeCodeRequest {
        mcp_servers: Some(Map::new().into()),
        ..req()
    };
    let a = argv(&r);
    let i = a
        .iter()
        .position(|x| x == "--mcp-config")
        .expect("flag present");
    assert_eq!(a[i + 1], r#"{"mcpServers":{}}"#);
}

#[test]
fn forwarded_exclusive_set_reaches_argv_with_strict_flag() {
    // contract: PRV-095, PRV-091
    let mut agent = AgentRequest::new("p");
    agent.workspace = Some("/repo".into());
    let fwd = ForwardedMcp {
        servers: json!({"fs": {"command": "mcp-fs"}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        exclusive: true,
    };
    assert!(apply_forwarded_mcp_servers(
        &ClaudeProvider::default(),
        &mut agent.kwargs,
        &fwd
    ));
    assert_eq!(agent.kwargs.get(STRICT_MCP_CONFIG_KEY), Some(&json!(true)));
    let a = ClaudeProvider::default().invocation(&agent).unwrap().argv;
    let i = a.iter().position(|x| x == "--mcp-config").unwrap();
    assert_eq!(a[i + 1], r#"{"mcpServers":{"fs":{"command":"mcp-fs"}}}"#);
    assert!(a.contains(&"--strict-mcp-config".to_owned()));
}

#[test]
fn write_targets_escaping_the_repo_are_rejected() {
    // contract: PRV-060
    type Make = fn(PathBuf) -> ClaudeCodeRequest;
    let cases: [(&str, Make); 4] = [
        ("system_prompt_file", |p| ClaudeCodeRequest {
            system_prompt_file: Some(p),
            ..req()
        }),
        ("append_system_prompt_file", |p| ClaudeCodeRequest {
            append_system_prompt_file: Some(p),
            ..req()
        }),
        ("mcp_config", |p| ClaudeCodeRequest {
            mcp_config: Some(p),
            ..req()
        }),
        ("settings", |p| ClaudeCodeRequest {
            settings: Some(p),
            ..req()
        }),
    ];
    for (field, make) in cases {
        for bad in ["../outside.md", "a/../../x", "sub/../../../etc/passwd"] {
            let err = make(bad.into()).validate().unwrap_err();
            assert!(
                matches!(err, Error::EscapesRepo { field: f, .. } if f == field),
                "{field} {bad}"
            );
        }
        assert!(
            make("inside/ok.json".into()).validate().is_ok(),
            "{field} inside"
        );
    }
    // Absolute paths outside the repo are refused too (mcp_config refuses
    // every absolute path).
    let r = ClaudeCodeRequest {
        settings: Some("/etc/settings.json".into()),
        ..req()
    };
    assert!(matches!(r.validate(), Err(Error::EscapesRepo { .. })));
    let r = ClaudeCodeRequest {
        mcp_config: Some("/repo/.mcp.json".into()),
        ..req()
    };
    assert!(matches!(r.validate(), Err(Error::AbsoluteMcpConfig)));
    // No workspace: nothing to contain in, so refused.
    let r = ClaudeCodeRequest {
        settings: Some("s.json".into()),
        workspace: None,
        ..req()
    };
    assert!(matches!(
        r.validate(),
        Err(Error::NoWorkspace { field: "settings" })
    ));
}

#[test]
fn add_dir_is_not_write_target_contained() {
    // contract: PRV-061
    let r = ClaudeCodeRequest {
        add_dir: vec!["/somewhere/else".into(), "docs".into()],
        ..req()
    };
    assert!(r.validate().is_ok());
    assert!(
        argv(&r)
            .windows(3)
            .any(|w| w == ["--add-dir", "/somewhere/else", "docs"])
    );
    // Its own validation still refuses unusable entries.
    for bad in ["", "../up"] {
        let r = ClaudeCodeRequest {
            add_dir: vec![bad.into()],
            ..req()
        };
        assert!(
            matches!(r.validate(), Err(Error::InvalidAddDir(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn bad_kwargs_and_prompts_are_typed_errors() {
    let mut agent = AgentRequest::new("p");
    agent.kwargs.insert("max_turn".into(), json!(3));
    assert!(matches!(
        ClaudeProvider::default().invocation(&agent),
        Err(Error::Core(providers_core::Error::UnknownField(k))) if k == "max_turn"
    ));
    agent.kwargs = Map::new();
    agent.kwargs.insert("max_turns".into(), json!("three"));
    assert!(matches!(
        ClaudeProvider::default().invocation(&agent),
        Err(Error::Core(_))
    ));
    assert!(matches!(
        ClaudeProvider::default().invocation(&AgentRequest::new("  ")),
        Err(Error::EmptyPrompt)
    ));
}

#[test]
fn prompt_with_leading_dash_stays_a_prompt() {
    let r = ClaudeCodeRequest {
        prompt: "--help me".into(),
        add_dir: vec!["/x".into()],
        ..req()
    };
    let a = argv(&r);
    assert_eq!(&a[a.len() - 2..], ["--", "--help me"]);
}

const UUID: &str = "0b7e6d2c-3f1a-4c55-9e8d-1a2b3c4d5e6f";

#[test]
fn effort_reaches_claude_clamped_to_its_levels() {
    // Claude Code 2.1.x has `--effort low|medium|high|xhigh|max`.
    let mut agent = AgentRequest::new("p");
    for (effort, expect) in [
        (Effort::None, "low"),
        (Effort::Minimal, "low"),
        (Effort::Low, "low"),
        (Effort::Medium, "medium"),
        (Effort::High, "high"),
        (Effort::XHigh, "xhigh"),
        (Effort::Max, "max"),
        (Effort::Ultra, "max"),
    ] {
        agent.effort = Some(effort);
        let a = ClaudeProvider::default().invocation(&agent).unwrap().argv;
        let i = a.iter().position(|x| x == "--effort").expect("--effort");
        assert_eq!(a[i + 1], expect, "{effort}");
        let clamped = ClaudeProvider::default().clamp_effort(Some("sonnet"), effort);
        assert_eq!(clamped.map(Effort::as_str), Some(expect), "the seam agrees");
    }
    agent.effort = None;
    let a = ClaudeProvider::default().invocation(&agent).unwrap().argv;
    assert!(!a.contains(&"--effort".to_owned()));
}

#[test]
fn session_id_must_be_a_uuid() {
    for bad in [
        "sid",
        "",
        "0b7e6d2c3f1a4c559e8d1a2b3c4d5e6f",
        "0b7e6d2c-3f1a-4c55-9e8d-1a2b3c4d5e6g",
        "-0b7e6d2-3f1a-4c55-9e8d-1a2b3c4d5e6f",
    ] {
        let r = ClaudeCodeRequest {
            session_id: Some(bad.into()),
            ..req()
        };
        assert!(
            matches!(ClaudeProvider::default().invocation_for(&r), Err(Error::SessionIdNotUuid(s)) if s == bad),
            "{bad:?}"
        );
    }
    for good in [UUID, "0B7E6D2C-3F1A-4C55-9E8D-1A2B3C4D5E6F"] {
        let r = ClaudeCodeRequest {
            session_id: Some(good.into()),
            ..req()
        };
        let a = argv(&r);
        assert!(a.windows(2).any(|w| w == ["--session-id", good]), "{a:?}");
    }
}

#[test]
fn prompt_and_prompt_file_pairs_are_refused_together() {
    let both = ClaudeCodeRequest {
        system_prompt: Some("s".into()),
        system_prompt_file: Some("sys.md".into()),
        ..req()
    };
    assert!(matches!(
        both.validate(),
        Err(Error::ExclusiveFlags {
            first: "--system-prompt",
            second: "--system-prompt-file"
        })
    ));
    let append = ClaudeCodeRequest {
        append_system_prompt: Some("a".into()),
        append_system_prompt_file: Some("app.md".into()),
        ..req()
    };
    assert!(matches!(
        append.validate(),
        Err(Error::ExclusiveFlags {
            first: "--append-system-prompt",
            second: "--append-system-prompt-file"
        })
    ));
    // One of each pair is fine, and so is a prompt with an append file.
    let mixed = ClaudeCodeRequest {
        system_prompt: Some("s".into()),
        append_system_prompt_file: Some("app.md".into()),
        ..req()
    };
    assert!(mixed.validate().is_ok());
}

#[test]
fn session_id_with_resume_or_continue_needs_fork_session() {
    let resume = ClaudeCodeRequest {
        session_id: Some(UUID.into()),
        resume: Some("prev".into()),
        ..req()
    };
    assert!(matches!(resume.validate(), Err(Error::SessionIdNeedsFork)));
    let cont = ClaudeCodeRequest {
        session_id: Some(UUID.into()),
        continue_conversation: true,
        ..req()
    };
    assert!(matches!(cont.validate(), Err(Error::SessionIdNeedsFork)));
    for ok in [
        ClaudeCodeRequest {
            fork_session: true,
            ..resume
        },
        ClaudeCodeRequest {
            fork_session: true,
            ..cont
        },
        ClaudeCodeRequest {
            session_id: Some(UUID.into()),
            ..req()
        },
    ] {
        assert!(ok.validate().is_ok(), "{ok:?}");
    }
}

#[test]
fn bypassing_permissions_as_root_needs_is_sandbox() {
    use std::os::unix::fs::MetadataExt as _;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let inherited = std::env::var("IS_SANDBOX").is_ok_and(|v| v == "1");
    let env = |v: &str| {
        Some(providers_core::ChildEnv::try_from_pairs([("IS_SANDBOX", v)]).expect("valid env"))
    };
    for (skip, mode) in [(true, None), (false, Some("bypassPermissions"))] {
        let base = ClaudeCodeRequest {
            dangerously_skip_permissions: skip,
            permission_mode: mode.map(str::to_owned),
            ..req()
        };
        // Declared in the request's env: accepted whoever runs it.
        let declared = ClaudeCodeRequest {
            env: env("1"),
            ..base.clone()
        };
        assert!(declared.validate().is_ok());
        // Explicitly not a sandbox: refused exactly when running as root.
        let undeclared = ClaudeCodeRequest {
            env: env("0"),
            ..base.clone()
        };
        assert_eq!(
            matches!(undeclared.validate(), Err(Error::RootBypassNeedsSandbox)),
            root,
            "root={root}"
        );
        // Nothing said in the request: the inherited environment decides.
        assert_eq!(
            matches!(base.validate(), Err(Error::RootBypassNeedsSandbox)),
            root && !inherited
        );
    }
    // Without a bypass nothing is asked of the environment.
    let plain = ClaudeCodeRequest {
        permission_mode: Some("acceptEdits".into()),
        env: env("0"),
        ..req()
    };
    assert!(plain.validate().is_ok());
}
