//! The pi request, its flags and the model-to-provider map.

use std::path::PathBuf;

use providers_core::{AgentRequest, CliFields, Effort, FlagKind, FlagSpec, FlagValue, Kwargs};

use crate::error::Error;

/// Every CLI-mappable field, in argv order.
pub const PI_FLAGS: &[FlagSpec] = &[
    FlagSpec::new("provider", "--provider", FlagKind::Value),
    FlagSpec::new("model", "--model", FlagKind::Value),
    FlagSpec::new("thinking", "--thinking", FlagKind::Value).set_by("effort"),
    FlagSpec::new("session", "--session", FlagKind::Value).set_by("resume"),
    FlagSpec::new("continue_session", "--continue", FlagKind::Bool),
    FlagSpec::new("no_session", "--no-session", FlagKind::Bool),
    FlagSpec::new("system_prompt", "--system-prompt", FlagKind::Value),
    FlagSpec::new(
        "append_system_prompt",
        "--append-system-prompt",
        FlagKind::Value,
    ),
    FlagSpec::new("tools", "--tools", FlagKind::Value),
];

/// One model-prefix mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PiProviderEntry {
    /// The model-name prefix.
    pub prefix: &'static str,
    /// The `--provider` value.
    pub provider: &'static str,
    /// Whether the prefix is removed from the model string.
    pub strip: bool,
}

/// Prefixes that identify exactly one provider. Family names served by
/// several providers (llama, gemma, mistral, ...) are deliberately absent:
/// the caller sets `--provider` or pi decides, rather than a wrong guess.
pub const PI_MODEL_PROVIDER_MAP: &[PiProviderEntry] = &[
    PiProviderEntry {
        prefix: "openrouter/",
        provider: "openrouter",
        strip: true,
    },
    PiProviderEntry {
        prefix: "anthropic/",
        provider: "anthropic",
        strip: true,
    },
    PiProviderEntry {
        prefix: "openai/",
        provider: "openai",
        strip: true,
    },
    PiProviderEntry {
        prefix: "google/",
        provider: "google",
        strip: true,
    },
    PiProviderEntry {
        prefix: "claude-",
        provider: "anthropic",
        strip: false,
    },
    PiProviderEntry {
        prefix: "gpt-",
        provider: "openai",
        strip: false,
    },
    PiProviderEntry {
        prefix: "o1",
        provider: "openai",
        strip: false,
    },
    PiProviderEntry {
        prefix: "o3",
        provider: "openai",
        strip: false,
    },
    PiProviderEntry {
        prefix: "o4-",
        provider: "openai",
        strip: false,
    },
    PiProviderEntry {
        prefix: "gemini-",
        provider: "google",
        strip: false,
    },
    PiProviderEntry {
        prefix: "grok-",
        provider: "xai",
        strip: false,
    },
];

/// The `(provider, model)` pair for `model`: an explicit provider wins and
/// leaves the model untouched; otherwise the first matching prefix maps it
/// (stripping the prefix where marked); otherwise no provider is guessed.
pub fn resolve_pi_model(model: &str, explicit_provider: Option<&str>) -> (Option<String>, String) {
    if let Some(p) = explicit_provider {
        return (Some(p.to_owned()), model.to_owned());
    }
    let lower = model.to_ascii_lowercase();
    for e in PI_MODEL_PROVIDER_MAP {
        if lower.starts_with(e.prefix) {
            let m = if e.strip {
                &model[e.prefix.len()..]
            } else {
                model
            };
            return (Some(e.provider.to_owned()), m.to_owned());
        }
    }
    (None, model.to_owned())
}

/// pi's `--thinking` level for an effort: `none` is `off`, and levels
/// above pi's ceiling clamp to `xhigh`.
pub fn pi_thinking(effort: Effort) -> &'static str {
    match effort {
        Effort::None => "off",
        Effort::Minimal => "minimal",
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
        Effort::XHigh | Effort::Max | Effort::Ultra => "xhigh",
    }
}

/// A pi (`pi --mode json`) request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PiRequest {
    /// The prompt, a bare positional argument (pi has no `--`).
    pub prompt: String,
    /// The workspace; the child's cwd.
    pub workspace: Option<PathBuf>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--thinking`.
    pub thinking: Option<String>,
    /// `--session` (resume).
    pub session: Option<String>,
    /// `--continue`.
    pub continue_session: bool,
    /// `--no-session`.
    pub no_session: bool,
    /// `--system-prompt`.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--tools a,b`.
    pub tools: Option<String>,
}

impl CliFields for PiRequest {
    fn flag_specs(&self) -> &'static [FlagSpec] {
        PI_FLAGS
    }
    fn flag_value(&self, field: &str) -> Option<FlagValue> {
        let s = |v: &Option<String>| v.clone().map(FlagValue::Str);
        match field {
            "provider" => s(&self.provider),
            "model" => s(&self.model),
            "thinking" => s(&self.thinking),
            "session" => s(&self.session),
            "continue_session" => Some(FlagValue::Bool(self.continue_session)),
            "no_session" => Some(FlagValue::Bool(self.no_session)),
            "system_prompt" => s(&self.system_prompt),
            "append_system_prompt" => s(&self.append_system_prompt),
            "tools" => s(&self.tools),
            _ => None,
        }
    }
}

impl PiRequest {
    /// Builds the request from a provider-neutral one; the model goes
    /// through [`resolve_pi_model`].
    pub fn from_agent_request(req: &AgentRequest) -> Result<Self, Error> {
        let k = Kwargs::new(&req.kwargs);
        let explicit = k.string("provider")?;
        let (provider, model) = match &req.model {
            Some(m) => {
                let (p, m) = resolve_pi_model(m, explicit.as_deref());
                (p, Some(m))
            }
            None => (explicit, None),
        };
        let tools = k.strings("tools")?;
        let out = Self {
            prompt: req.prompt.clone(),
            workspace: req.workspace.clone(),
            provider,
            model,
            thinking: req.effort.map(|e| pi_thinking(e).to_owned()),
            session: req.resume.clone(),
            continue_session: k.bool("continue_session")?.unwrap_or(false),
            no_session: k.bool("no_session")?.unwrap_or(false),
            system_prompt: k.string("system_prompt")?,
            append_system_prompt: k.string("append_system_prompt")?,
            tools: (!tools.is_empty()).then(|| tools.join(",")),
        };
        k.finish()?;
        Ok(out)
    }
}
