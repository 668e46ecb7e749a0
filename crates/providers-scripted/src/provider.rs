//! A `Provider` whose CLI replays a scripted response as NDJSON.

use std::path::PathBuf;
use std::sync::Mutex;

use providers_core::{
    AgentRequest, Effort, ErrorKind, FinalResult, Invocation, Kwargs, PrivateFile, Provider, Stdin,
    StreamEvent, StreamParser, Usage,
};
use serde_json::{Value, json};

use crate::endpoint::ScriptedEndpoint;
use crate::error::Error;
use crate::script::{Response, ScriptCall, ScriptModel};

/// The NDJSON lines a leg prints for one response, in the same flat shape
/// as `lionrt`'s built-in demo script: a `system`/`init` line first (so the
/// transport streams early), `assistant` text lines, `tool_use` lines, then
/// a `result` line.
pub fn response_to_ndjson(session_id: &str, response: &Response) -> String {
    let mut lines = vec![
        json!({"type": "system", "subtype": "init", "session_id": session_id, "model": "scripted"}),
    ];
    let ok = |text: Option<String>| json!({"type": "result", "subtype": "success", "is_error": false, "result": text});
    let result = match response {
        Response::Text { text } => {
            lines.push(json!({"type": "assistant", "text": text}));
            ok(Some(text.clone()))
        }
        Response::ToolCall {
            id,
            name,
            arguments,
        } => {
            lines.push(json!({"type": "tool_use", "id": id, "name": name, "input": arguments}));
            ok(None)
        }
        Response::Structured { data } => {
            lines.push(json!({"type": "assistant", "text": data.to_string(), "structured": data}));
            ok(Some(data.to_string()))
        }
        Response::Stream { chunks } => {
            for c in chunks {
                lines.push(json!({"type": "assistant", "text": c}));
            }
            ok(Some(chunks.concat()))
        }
        Response::Error { message, status } => {
            json!({"type": "result", "subtype": "error", "is_error": true, "error": message, "status": status})
        }
    };
    lines.push(result);
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out
}

/// Parses a scripted leg's NDJSON: the lines [`response_to_ndjson`] writes
/// and `lionrt`'s demo script (`system`/`init`, `assistant{text}`,
/// `tool_use`, `tool_result{ok}`, `result`).
#[derive(Debug, Default, Clone)]
pub struct ScriptedParser {
    session_id: Option<String>,
    finished: bool,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

impl StreamParser for ScriptedParser {
    fn parse_value(&mut self, v: &Value) -> Vec<StreamEvent> {
        let Some(kind) = str_at(v, "type") else {
            return vec![StreamEvent::error(ErrorKind::BadShape, "event has no type")];
        };
        let mut out = Vec::new();
        match kind {
            "system" => {
                if let Some(id) = str_at(v, "session_id") {
                    self.session_id = Some(id.to_owned());
                    out.push(StreamEvent::SessionId { id: id.to_owned() });
                }
            }
            "assistant" => {
                if let Some(t) = str_at(v, "text") {
                    out.push(StreamEvent::Text { text: t.to_owned() });
                }
            }
            "tool_use" => out.push(StreamEvent::ToolUse {
                id: str_at(v, "id")
                    .or_else(|| str_at(v, "name"))
                    .unwrap_or_default()
                    .to_owned(),
                name: str_at(v, "name").unwrap_or_default().to_owned(),
                input: v.get("input").cloned().unwrap_or(Value::Null),
            }),
            "tool_result" => out.push(StreamEvent::ToolResult {
                id: str_at(v, "id")
                    .or_else(|| str_at(v, "name"))
                    .unwrap_or_default()
                    .to_owned(),
                content: v.clone(),
                is_error: v.get("ok").and_then(Value::as_bool) == Some(false),
            }),
            // One run has one verdict: a second result is malformed input.
            "result" if self.finished => out.push(StreamEvent::error(
                ErrorKind::BadShape,
                "second result event ignored",
            )),
            "result" => {
                self.finished = true;
                if let Some(u) = v.get("usage") {
                    out.push(StreamEvent::Usage(Usage {
                        input_tokens: u64_at(u, "input_tokens"),
                        output_tokens: u64_at(u, "output_tokens"),
                        cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
                        model: str_at(v, "model").map(str::to_owned),
                        num_turns: u64_at(v, "num_turns"),
                        duration_ms: u64_at(v, "duration_ms"),
                        ..Usage::default()
                    }));
                }
                let is_error = match v.get("is_error").and_then(Value::as_bool) {
                    Some(b) => b,
                    None => str_at(v, "subtype") != Some("success"),
                };
                out.push(StreamEvent::Final(FinalResult {
                    is_error,
                    text: str_at(v, "result").map(str::to_owned),
                    error: is_error
                        .then(|| str_at(v, "error").unwrap_or("scripted error").to_owned()),
                    subtype: str_at(v, "subtype").map(str::to_owned),
                }));
            }
            _ => {}
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            Vec::new()
        } else {
            vec![StreamEvent::error(
                ErrorKind::Incomplete,
                "scripted leg printed no result",
            )]
        }
    }

    fn resume_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

/// The scripted provider: each invocation takes the script's next response
/// for the request's prompt, writes it as an NDJSON file (listed in
/// [`Invocation::files`]) and runs `<program> [leg args...] --script
/// <file>`, a CLI that replays the file ([`crate::run_leg`]): this crate's
/// `scripted-leg` binary (no leg args), or a host binary that calls
/// `run_leg` behind a subcommand (`lionrt __scripted-leg`, set with
/// [`ScriptedProvider::with_leg_args`]).
#[derive(Debug)]
pub struct ScriptedProvider {
    /// The CLI that replays a script file.
    pub program: PathBuf,
    /// Where per-leg script files are written.
    pub script_dir: PathBuf,
    /// Arguments put between the program and `--script` (e.g. a subcommand).
    pub leg_args: Vec<String>,
    endpoint: Mutex<(ScriptedEndpoint, usize)>,
}

impl ScriptedProvider {
    /// A provider replaying `script` through `program`.
    pub fn new(
        program: impl Into<PathBuf>,
        script_dir: impl Into<PathBuf>,
        script: ScriptModel,
    ) -> Self {
        Self {
            program: program.into(),
            script_dir: script_dir.into(),
            leg_args: Vec::new(),
            endpoint: Mutex::new((ScriptedEndpoint::new(script), 0)),
        }
    }

    /// Puts `args` between the program and `--script` (a host binary's
    /// subcommand that calls [`crate::run_leg`]).
    pub fn with_leg_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.leg_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The calls answered so far.
    pub fn calls(&self) -> Result<Vec<ScriptCall>, Error> {
        let guard = self.endpoint.lock().map_err(|_| Error::Poisoned)?;
        Ok(guard.0.calls().to_vec())
    }
}

impl Provider for ScriptedProvider {
    type Parser = ScriptedParser;
    type Error = Error;

    fn name(&self) -> &'static str {
        "scripted"
    }

    /// kwargs: `tools` (names offered on this call, for `has_tool`).
    fn invocation(&self, request: &AgentRequest) -> Result<Invocation, Error> {
        let k = Kwargs::new(&request.kwargs);
        let tools = k.strings("tools")?;
        k.finish()?;
        let mut guard = self.endpoint.lock().map_err(|_| Error::Poisoned)?;
        let (endpoint, legs) = &mut *guard;
        let response = endpoint.call(ScriptCall {
            prompt: request.prompt.clone(),
            tools,
        })?;
        *legs += 1;
        let session = request
            .resume
            .clone()
            .unwrap_or_else(|| format!("scripted-{legs}"));
        let path = self.script_dir.join(format!("scripted-leg-{legs}.ndjson"));
        let mut argv = vec![self.program.to_string_lossy().into_owned()];
        argv.extend(self.leg_args.iter().cloned());
        argv.push("--script".into());
        argv.push(path.to_string_lossy().into_owned());
        Ok(Invocation {
            argv,
            cwd: request.workspace.clone(),
            stdin: Stdin::Null,
            files: vec![PrivateFile {
                path,
                contents: response_to_ndjson(&session, &response),
            }],
            ..Invocation::default()
        })
    }

    fn parser(&self) -> ScriptedParser {
        ScriptedParser::default()
    }

    /// The init line is printed at once.
    fn streams_first_output_early(&self) -> bool {
        true
    }

    /// A script replays its responses whatever the effort: none applies.
    fn clamp_effort(&self, _model: Option<&str>, _effort: Effort) -> Option<Effort> {
        None
    }
}
