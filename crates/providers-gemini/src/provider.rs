//! The `Provider` impl: agy print mode with JSON output.

use std::path::PathBuf;

use providers_core::{
    AgentRequest, CliFields, Effort, FlagKind, FlagSpec, FlagValue, Invocation, Kwargs, Provider,
    Stdin,
};

use crate::error::Error;
use crate::model::{ModelSource, agy_effort_tier, resolve_agy_model};
use crate::parser::AgyParser;

/// The names that resolve to this provider. `gemini-code`, `gemini-cli`
/// and `gemini_cli` are kept for compatibility; the binary is agy.
pub const GEMINI_NAMES: &[&str] = &["gemini-code", "gemini-cli", "gemini_cli", "gemini", "agy"];

/// The canonical name for any of [`GEMINI_NAMES`].
pub fn resolve_provider_name(name: &str) -> Result<&'static str, Error> {
    let n = name.trim().to_ascii_lowercase();
    if GEMINI_NAMES.contains(&n.as_str()) {
        Ok("gemini-code")
    } else {
        Err(Error::UnknownName(name.to_owned()))
    }
}

/// Every CLI-mappable field. There is no effort flag: effort is only the
/// model's display suffix.
pub const AGY_FLAGS: &[FlagSpec] = &[
    FlagSpec::new("model", "--model", FlagKind::Value),
    FlagSpec::new("conversation", "--conversation", FlagKind::Value).set_by("resume"),
    FlagSpec::new("add_dir", "--add-dir", FlagKind::Repeat),
    FlagSpec::new("json_schema", "--json-schema", FlagKind::Value),
    FlagSpec::new("print_timeout", "--print-timeout", FlagKind::Value),
];

/// An agy request, model already resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgyRequest {
    /// The prompt (value of `-p`, placed last).
    pub prompt: String,
    /// The workspace; becomes the child's cwd (agy has no directory flag
    /// and resolves relative `--add-dir` against its cwd).
    pub workspace: Option<PathBuf>,
    /// The resolved display name.
    pub model: Option<String>,
    /// The conversation to resume (`--conversation`).
    pub conversation: Option<String>,
    /// `--add-dir`, once per entry.
    pub add_dir: Vec<String>,
    /// `--json-schema`.
    pub json_schema: Option<String>,
    /// `--print-timeout`.
    pub print_timeout: Option<String>,
}

impl CliFields for AgyRequest {
    fn flag_specs(&self) -> &'static [FlagSpec] {
        AGY_FLAGS
    }
    fn flag_value(&self, field: &str) -> Option<FlagValue> {
        match field {
            "model" => self.model.clone().map(FlagValue::Str),
            "conversation" => self.conversation.clone().map(FlagValue::Str),
            "add_dir" => (!self.add_dir.is_empty()).then(|| FlagValue::List(self.add_dir.clone())),
            "json_schema" => self.json_schema.clone().map(FlagValue::Str),
            "print_timeout" => self.print_timeout.clone().map(FlagValue::Str),
            _ => None,
        }
    }
}

impl AgyRequest {
    /// Builds the request from a provider-neutral one. kwargs:
    /// `model_source` (`"explicit"` default, or `"persisted"`),
    /// `reapply_effort`, `add_dir`, `json_schema`, `print_timeout`.
    pub fn from_agent_request(req: &AgentRequest) -> Result<Self, Error> {
        let k = Kwargs::new(&req.kwargs);
        let source = match k.string("model_source")?.as_deref() {
            None | Some("explicit") => ModelSource::Explicit,
            Some("persisted") => ModelSource::Persisted,
            Some(_) => return Err(providers_core::Error::InvalidKwargs("model_source").into()),
        };
        let reapply = k.bool("reapply_effort")?.unwrap_or(false);
        let out = Self {
            prompt: req.prompt.clone(),
            workspace: req.workspace.clone(),
            model: resolve_agy_model(
                req.model.as_deref().map(|m| (m, source)),
                req.effort,
                reapply,
            ),
            conversation: req.resume.clone(),
            add_dir: k.strings("add_dir")?,
            json_schema: k.string("json_schema")?,
            print_timeout: k.scalar("print_timeout")?,
        };
        k.finish()?;
        Ok(out)
    }
}

/// Drives `agy --output-format json ... -p <prompt>`.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    /// The program to run.
    pub program: PathBuf,
}

impl Default for GeminiProvider {
    fn default() -> Self {
        Self {
            program: PathBuf::from("agy"),
        }
    }
}

impl GeminiProvider {
    /// The invocation: `--output-format json`, the flags, then `-p <prompt>`
    /// last; cwd = workspace; stdin = null device (print mode reads none).
    pub fn invocation_for(&self, req: &AgyRequest) -> Result<Invocation, Error> {
        if req.prompt.trim().is_empty() {
            return Err(Error::EmptyPrompt);
        }
        let mut argv = vec![
            self.program.to_string_lossy().into_owned(),
            "--output-format".into(),
            "json".into(),
        ];
        argv.extend(req.cli_args()?);
        argv.push("-p".into());
        argv.push(req.prompt.clone());
        Ok(Invocation {
            argv,
            cwd: req.workspace.clone(),
            stdin: Stdin::Null,
            ..Invocation::default()
        })
    }
}

impl Provider for GeminiProvider {
    type Parser = AgyParser;
    type Error = Error;

    fn name(&self) -> &'static str {
        "gemini-code"
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Error> {
        self.invocation_for(&AgyRequest::from_agent_request(request)?)
    }

    fn parser(&self) -> AgyParser {
        AgyParser::default()
    }

    /// agy prints only once the whole result exists; a slow healthy call
    /// looks exactly like a dead one to a first-output watchdog.
    fn streams_first_output_early(&self) -> bool {
        false
    }

    /// agy has no effort flag: the level is the tier suffix of the model's
    /// display name ([`agy_effort_tier`]), `None` when the model takes no
    /// suffix (a concrete display name, or a model agy's table lacks).
    fn clamp_effort(&self, model: Option<&str>, effort: Effort) -> Option<Effort> {
        agy_effort_tier(model, effort).map(|t| t.effort())
    }
}
