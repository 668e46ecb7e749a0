//! Denial reasons and the admission error.

use std::fmt;

use crate::normalize::python_repr;

/// Why a tool was refused, in the order the classifier checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Some free-form value sits under a command key.
    UnboundedCommandInput,
    /// A free-form program key and a free-form argument key.
    UnboundedProcessInput,
    /// A free-form payload key, corroborated by a selector key, the name or the description.
    UnboundedScriptPayload,
    /// The description signals execution and some non-auxiliary input is free-form or unresolvable.
    ExecutorDescriptionWithBroadInput,
    /// A strong executor name whose schema does not prove itself bounded.
    ExecutorIdentityWithInsufficientSchema,
    /// A departure from the original, checked last: a position holds a value
    /// of the wrong JSON type where a schema, a list of schemas or a mapping
    /// of schemas belongs (where the original raises an exception, which its
    /// host treats as a refusal).
    MalformedSchema,
    /// The strict policy only ([`crate::Policy::Strict`]; never under the
    /// original's): the name or description says the tool runs, executes,
    /// evaluates or interprets code, and the code, script, source, program,
    /// input or file to run is an unconstrained string.
    CodeExecutionWithFreeInput,
}

impl Reason {
    /// Every reason, in classifier precedence order.
    pub const ALL: [Reason; 7] = [
        Reason::UnboundedCommandInput,
        Reason::UnboundedProcessInput,
        Reason::UnboundedScriptPayload,
        Reason::ExecutorDescriptionWithBroadInput,
        Reason::ExecutorIdentityWithInsufficientSchema,
        Reason::MalformedSchema,
        Reason::CodeExecutionWithFreeInput,
    ];

    /// The reason code string of the original gate.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::UnboundedCommandInput => "unbounded-command-input",
            Reason::UnboundedProcessInput => "unbounded-process-input",
            Reason::UnboundedScriptPayload => "unbounded-script-payload",
            Reason::ExecutorDescriptionWithBroadInput => "executor-description-with-broad-input",
            Reason::ExecutorIdentityWithInsufficientSchema => {
                "executor-identity-with-insufficient-schema"
            }
            Reason::MalformedSchema => "malformed-schema",
            Reason::CodeExecutionWithFreeInput => "code-execution-with-free-input",
        }
    }

    /// Parses a reason code string.
    pub fn from_code(code: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == code)
    }

    /// A one-sentence explanation of the reason, for reports and SARIF rules.
    pub fn explanation(self) -> &'static str {
        match self {
            Reason::UnboundedCommandInput => {
                "a free-form value sits under a command key (command, cmd, command_line, shell_command)"
            }
            Reason::UnboundedProcessInput => {
                "a free-form program key (program, executable, binary) together with a free-form argument key (args, argv)"
            }
            Reason::UnboundedScriptPayload => {
                "a free-form payload key (script, code, input, text) corroborated by a selector key, an executor name or an executor description"
            }
            Reason::ExecutorDescriptionWithBroadInput => {
                "the description signals command execution and some non-auxiliary input is free-form or unresolvable"
            }
            Reason::ExecutorIdentityWithInsufficientSchema => {
                "a strong executor name whose input schema does not prove itself closed and bounded"
            }
            Reason::MalformedSchema => {
                "a schema position holds a value of the wrong json type (the original raises an exception there)"
            }
            Reason::CodeExecutionWithFreeInput => {
                "strict policy: the name or description says the tool runs code, and the code, script, source, program, input or file to run is an unconstrained string"
            }
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused tool: carries the reason and renders the original gate's message.
///
/// The message is the original's, byte for byte (it starts with "MCP" and
/// ends with a period, unlike the house style, so hosts switching over keep
/// matching it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionDenied {
    name: String,
    reason: Reason,
}

impl AdmissionDenied {
    /// Builds a denial for a tool name.
    pub fn new(name: &str, reason: Reason) -> Self {
        Self {
            name: name.to_owned(),
            reason,
        }
    }

    /// The reason code.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The advertised tool name.
    pub fn tool_name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for AdmissionDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MCP tool {} was not registered: generic executor surface detected [{}]. \
             Expose a structured, bounded operation instead; this admission rule has no \
             configuration opt-out.",
            python_repr(&self.name),
            self.reason.as_str()
        )
    }
}

impl std::error::Error for AdmissionDenied {}
