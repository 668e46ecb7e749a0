//! The agent options of `lionrt run`: `--resume`, provider options
//! (`--set KEY=VALUE`, checked against the provider's flag metadata) and
//! the watchdog timeouts. Everything is checked before the session starts:
//! the provider builds its invocation once as a dry run, so a request it
//! would refuse leaves no session behind.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use lifecycle_core::StateReader;
use providers_core::{AgentRequest, FlagKind, FlagSpec, Provider};
use runner::RunConfig;
use serde_json::{Map, Value};

use crate::run::ProviderName;

#[derive(Debug, Default, Args)]
pub(crate) struct AgentArgs {
    /// Resume a conversation: a lionrt session id (or unique prefix) whose
    /// provider resume id was recorded, or the provider's own id.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// A provider option, as KEY=VALUE (repeatable). KEY is a field of the
    /// provider's flag metadata (e.g. claude: permission_mode, max_turns,
    /// allowed_tools; codex: sandbox, config, images); VALUE is JSON, or
    /// else a string; list fields also take a comma-separated string.
    /// `lionrt run --provider P --set help=1` lists the keys.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seconds from spawn to the agent's first output before the leg is
    /// ended (0 disables; default $LIONAGI_WORKER_LIVENESS_TIMEOUT or 180).
    #[arg(long, value_name = "SECONDS")]
    first_output_timeout: Option<u64>,
    /// Seconds of agent silence before the leg is ended (0 disables;
    /// default $LIONAGI_WORKER_IDLE_TIMEOUT or 900).
    #[arg(long, value_name = "SECONDS")]
    idle_timeout: Option<u64>,
    /// The run's deadline in seconds, as li's `--timeout`: past it the
    /// agent's process group is ended and the run ends `timed_out`
    /// (`run.timed_out.deadline`), however busy the agent is.
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
}

/// The neutral request fields `run` sets from its own flags.
const OWN_FLAGS: &[(&str, &str)] = &[
    ("model", "--model"),
    ("effort", "--effort"),
    ("resume", "--resume"),
    ("prompt", "--prompt"),
    ("workspace", "--workspace"),
];

/// The `run` flag that sets `spec`, when the provider fills that field from
/// a neutral request field (pi's `thinking` from `--effort`, its `session`
/// from `--resume`) rather than taking it as a `--set` option.
fn own_flag(spec: &FlagSpec) -> Option<&'static str> {
    let neutral = spec.neutral_field()?;
    OWN_FLAGS
        .iter()
        .find(|(own, _)| *own == neutral)
        .map(|(_, flag)| *flag)
}

/// The `--set` keys of `provider`: its flag fields that no `run` flag sets.
pub(crate) fn option_keys(provider: ProviderName) -> Vec<&'static str> {
    flag_specs(provider)
        .iter()
        .filter(|s| own_flag(s).is_none())
        .map(|s| s.field)
        .collect()
}

/// The flag metadata of a provider.
pub(crate) fn flag_specs(provider: ProviderName) -> &'static [FlagSpec] {
    match provider {
        ProviderName::Scripted => &[],
        ProviderName::Claude => providers_claude::CLAUDE_FLAGS,
        ProviderName::Codex => providers_codex::CODEX_FLAGS,
        ProviderName::Gemini => providers_gemini::AGY_FLAGS,
        ProviderName::Pi => providers_pi::PI_FLAGS,
    }
}

fn provider_label(provider: ProviderName) -> &'static str {
    match provider {
        ProviderName::Scripted => "scripted",
        ProviderName::Claude => "claude",
        ProviderName::Codex => "codex",
        ProviderName::Gemini => "gemini",
        ProviderName::Pi => "pi",
    }
}

/// Parses the `--set` options against `provider`'s flag metadata.
pub(crate) fn parse_sets(provider: ProviderName, sets: &[String]) -> Result<Map<String, Value>> {
    let specs = flag_specs(provider);
    let label = provider_label(provider);
    let keys = || {
        let names = option_keys(provider);
        if names.is_empty() {
            format!("the {label} provider takes no options")
        } else {
            format!("{label} options: {}", names.join(", "))
        }
    };
    let mut out = Map::new();
    for set in sets {
        let (key, raw) = set
            .split_once('=')
            .with_context(|| format!("--set {set:?} must be KEY=VALUE"))?;
        if key == "help" {
            bail!("{}", keys());
        }
        if let Some((_, flag)) = OWN_FLAGS.iter().find(|(own, _)| *own == key) {
            bail!("--set {key}: use {flag} instead");
        }
        let Some(spec) = specs.iter().find(|s| s.field == key) else {
            bail!(
                "--set {key}: not an option of the {label} provider ({})",
                keys()
            );
        };
        if let Some(flag) = own_flag(spec) {
            bail!(
                "--set {key}: the {label} provider sets {} from {flag}; use {flag} instead",
                spec.flag
            );
        }
        if out.contains_key(key) {
            bail!("--set {key} is given twice");
        }
        let value = typed_value(spec, raw).with_context(|| {
            format!(
                "--set {key}: {} expects {}",
                spec.flag,
                kind_wants(spec.kind)
            )
        })?;
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

fn kind_wants(kind: FlagKind) -> &'static str {
    match kind {
        FlagKind::Value => "a string or number",
        FlagKind::Bool | FlagKind::BoolPair { .. } => "true or false",
        FlagKind::JsonValue => "a JSON object or array",
        _ => "a list (a JSON array of strings, or a comma-separated string)",
    }
}

/// `raw` as the JSON value the provider's field takes.
fn typed_value(spec: &FlagSpec, raw: &str) -> Result<Value> {
    let parsed: Option<Value> = serde_json::from_str(raw).ok();
    Ok(match spec.kind {
        FlagKind::Value => match parsed {
            Some(Value::Number(n)) => Value::Number(n),
            Some(Value::String(s)) => Value::String(s),
            Some(Value::Bool(_) | Value::Null | Value::Array(_) | Value::Object(_)) | None => {
                if raw.is_empty() {
                    bail!("an empty value");
                }
                Value::String(raw.to_owned())
            }
        },
        FlagKind::Bool | FlagKind::BoolPair { .. } => match parsed {
            Some(Value::Bool(b)) => Value::Bool(b),
            _ => bail!("{raw:?} is not a boolean"),
        },
        FlagKind::JsonValue => match parsed {
            Some(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => bail!("{raw:?} is not a JSON object or array"),
        },
        _ => match parsed {
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => Value::Array(items),
            Some(Value::Array(_)) => bail!("every item must be a string"),
            _ => Value::Array(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(s.to_owned()))
                    .collect(),
            ),
        },
    })
}

/// A `--resume` value: a recorded lionrt session's provider resume id, or
/// the value itself when no recorded session matches. Read from the SQLite
/// file or the PostgreSQL schema `--db` names.
fn resume_id(db: &Path, provider: ProviderName, id: &str) -> Result<String> {
    match crate::pg::url(db) {
        // The run opens (and migrates) this store next anyway.
        Some(url) => resume_on(&crate::pg::open(&url)?, provider, id),
        None if !db.exists() => Ok(id.to_owned()),
        None => {
            let (engine, _conn) = crate::view::open_read(db)?;
            resume_on(&engine, provider, id)
        }
    }
}

/// [`resume_id`] on any store.
fn resume_on<R: StateReader>(reader: &R, provider: ProviderName, id: &str) -> Result<String> {
    let Some(session) = crate::view::resolve(reader, "session", id)? else {
        return Ok(id.to_owned());
    };
    let row = reader.session_row(&session)?;
    let recorded = row.as_ref().and_then(|r| r.provider.clone());
    let label = provider_label(provider);
    if let Some(recorded) = recorded.filter(|p| p != label) {
        bail!("session {session} ran on {recorded}; resume it with --provider {recorded}");
    }
    // The newest `session` message (the provider's resume id).
    let mut found = None;
    let mut after = 0;
    loop {
        let batch = reader.messages(&session, after, 1000)?;
        let Some(last) = batch.last() else { break };
        after = last.seq;
        if let Some(m) = batch.iter().rev().find(|m| m.role == "session") {
            found = Some(m.content.clone());
        }
    }
    let resume = found
        .and_then(|c| serde_json::from_str::<Value>(&c).ok())
        .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
    resume.with_context(|| format!("session {session} recorded no provider resume id"))
}

/// Applies the agent options to `config` and dry-runs the provider's
/// invocation, so every refusal comes before the session starts.
pub(crate) fn apply(
    db: &Path,
    provider: ProviderName,
    args: &AgentArgs,
    config: &mut RunConfig,
) -> Result<()> {
    config.kwargs = parse_sets(provider, &args.set)?;
    if let Some(id) = &args.resume {
        config.resume = Some(resume_id(db, provider, id)?);
    }
    let secs = |s: u64| (s > 0).then(|| Duration::from_secs(s));
    if let Some(s) = args.first_output_timeout {
        config.watchdogs.first_output = secs(s);
    }
    if let Some(s) = args.idle_timeout {
        config.watchdogs.idle = secs(s);
    }
    if let Some(s) = args.timeout {
        config.watchdogs.total = Some(crate::seconds("--timeout", s)?);
    }
    let request = AgentRequest {
        prompt: config.prompt.clone(),
        model: config.model.clone(),
        effort: config.effort,
        workspace: Some(config.workspace.clone()),
        resume: config.resume.clone(),
        kwargs: config.kwargs.clone(),
    };
    let label = provider_label(provider);
    let checked = match provider {
        ProviderName::Scripted => Ok(()),
        ProviderName::Claude => dry_run(&providers_claude::ClaudeProvider::default(), &request),
        ProviderName::Codex => dry_run(&providers_codex::CodexProvider::default(), &request),
        ProviderName::Gemini => dry_run(&providers_gemini::GeminiProvider::default(), &request),
        ProviderName::Pi => dry_run(&providers_pi::PiProvider::default(), &request),
    };
    checked.with_context(|| format!("the {label} request is refused"))
}

fn dry_run<P: Provider>(provider: &P, request: &AgentRequest) -> Result<()>
where
    P::Error: std::error::Error + Send + Sync + 'static,
{
    provider.invocation(request).map(|_| ())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_follow_the_flag_kinds() {
        let ok = |p, s: &str| parse_sets(p, &[s.to_owned()]);
        let v = ok(ProviderName::Claude, "max_turns=3").expect("number");
        assert_eq!(v["max_turns"], 3);
        let v = ok(ProviderName::Claude, "allowed_tools=Read, Bash").expect("list");
        assert_eq!(v["allowed_tools"], serde_json::json!(["Read", "Bash"]));
        let v = ok(ProviderName::Claude, "fork_session=true").expect("bool");
        assert_eq!(v["fork_session"], true);
        let e = ok(ProviderName::Claude, "fork_session=yes").expect_err("not bool");
        assert!(format!("{e:#}").contains("true or false"), "{e:#}");
        let e = ok(ProviderName::Claude, "agents=[1").expect_err("not json");
        assert!(format!("{e:#}").contains("JSON object or array"), "{e:#}");
        let e = ok(ProviderName::Codex, "permission_mode=plan").expect_err("claude only");
        assert!(format!("{e:#}").contains("codex options: sandbox"), "{e:#}");
        let e = ok(ProviderName::Claude, "model=x").expect_err("own flag");
        assert!(format!("{e:#}").contains("use --model"), "{e:#}");
        let e = ok(ProviderName::Scripted, "x=1").expect_err("none");
        assert!(format!("{e:#}").contains("takes no options"), "{e:#}");
        let e =
            parse_sets(ProviderName::Pi, &["tools=a".into(), "tools=b".into()]).expect_err("twice");
        assert!(format!("{e:#}").contains("twice"), "{e:#}");
    }

    const PROVIDERS: [ProviderName; 5] = [
        ProviderName::Scripted,
        ProviderName::Claude,
        ProviderName::Codex,
        ProviderName::Gemini,
        ProviderName::Pi,
    ];

    /// A value of the shape `kind` takes, as `--set` reads it.
    fn sample(kind: FlagKind) -> &'static str {
        match kind {
            FlagKind::Value => "3",
            FlagKind::Bool | FlagKind::BoolPair { .. } => "true",
            FlagKind::JsonValue => "{}",
            _ => "a,b",
        }
    }

    /// Every key `--set help=1` lists is accepted, by `--set` and by the
    /// provider's own dry run; every field of the provider's flag table
    /// that help leaves out is one a `run` flag sets, and `--set` names
    /// that flag (pi's thinking and session, gemini's conversation were
    /// listed and then refused).
    #[test]
    fn help_lists_exactly_the_keys_that_are_accepted() {
        for provider in PROVIDERS {
            let help = format!(
                "{:#}",
                parse_sets(provider, &["help=1".into()]).expect_err("help")
            );
            let listed = option_keys(provider);
            for spec in flag_specs(provider) {
                let set = format!("{}={}", spec.field, sample(spec.kind));
                let parsed = parse_sets(provider, std::slice::from_ref(&set));
                if listed.contains(&spec.field) {
                    assert!(help.contains(spec.field), "{help} lacks {}", spec.field);
                    let kwargs = parsed.unwrap_or_else(|e| panic!("--set {set}: {e:#}"));
                    let request = AgentRequest {
                        prompt: "p".into(),
                        workspace: Some(std::env::temp_dir()),
                        kwargs,
                        ..AgentRequest::default()
                    };
                    let checked = match provider {
                        ProviderName::Scripted => Ok(()),
                        ProviderName::Claude => {
                            dry_run(&providers_claude::ClaudeProvider::default(), &request)
                        }
                        ProviderName::Codex => {
                            dry_run(&providers_codex::CodexProvider::default(), &request)
                        }
                        ProviderName::Gemini => {
                            dry_run(&providers_gemini::GeminiProvider::default(), &request)
                        }
                        ProviderName::Pi => dry_run(&providers_pi::PiProvider::default(), &request),
                    };
                    // Another refusal (a value the CLI would not take) is
                    // the provider's to make; an unknown field never is.
                    if let Err(e) = checked {
                        let e = format!("{e:#}");
                        assert!(
                            !e.contains(&format!("unknown cli field {:?}", spec.field)),
                            "{provider:?}: --set {set} is listed but the provider refuses it: {e}"
                        );
                    }
                } else {
                    let e = format!("{:#}", parsed.expect_err("not an option"));
                    let flag = own_flag(spec).expect("only run's own flags are left out");
                    assert!(e.contains(&format!("use {flag}")), "{e}");
                }
            }
        }
    }
}
