//! The `Provider` impl for `pi --mode json`.

use std::path::PathBuf;

use providers_core::{AgentRequest, CliFields, Effort, Invocation, Provider, Stdin};

use crate::error::Error;
use crate::parser::PiParser;
use crate::request::PiRequest;

/// Drives `pi --mode json --print ... <prompt>`.
#[derive(Debug, Clone)]
pub struct PiProvider {
    /// The program to run.
    pub program: PathBuf,
}

impl Default for PiProvider {
    fn default() -> Self {
        Self {
            program: PathBuf::from("pi"),
        }
    }
}

impl PiProvider {
    /// The invocation. The prompt is the last argument, bare: pi's parser
    /// has no `--` terminator, so none is inserted. **Stated limit:** a
    /// prompt starting with `-` or `@` may be misread by pi itself as a
    /// flag or a file reference; it is passed through unchanged.
    pub fn invocation_for(&self, req: &PiRequest) -> Result<Invocation, Error> {
        if req.prompt.trim().is_empty() {
            return Err(Error::EmptyPrompt);
        }
        let mut argv = vec![
            self.program.to_string_lossy().into_owned(),
            "--mode".into(),
            "json".into(),
            "--print".into(),
        ];
        argv.extend(req.cli_args()?);
        argv.push(req.prompt.clone());
        Ok(Invocation {
            argv,
            cwd: req.workspace.clone(),
            stdin: Stdin::Null,
            ..Invocation::default()
        })
    }
}

impl Provider for PiProvider {
    type Parser = PiParser;
    type Error = Error;

    fn name(&self) -> &'static str {
        "pi"
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Error> {
        self.invocation_for(&PiRequest::from_agent_request(request)?)
    }

    fn parser(&self) -> PiParser {
        PiParser::default()
    }

    /// pi emits `agent_start` at once, but the first *content* may lag by
    /// the model's whole thinking time, so a first-output watchdog is unsafe.
    fn streams_first_output_early(&self) -> bool {
        false
    }

    /// `--thinking` tops out at `xhigh` ([`pi_thinking`](crate::pi_thinking)).
    fn clamp_effort(&self, _model: Option<&str>, effort: Effort) -> Option<Effort> {
        Some(effort.min(Effort::XHigh))
    }
}
