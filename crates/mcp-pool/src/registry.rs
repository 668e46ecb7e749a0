//! A server's tool registry: every listed tool judged by the admission gate
//! before it is registered, and argument validation for the admitted ones.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{DenialReason, Error};

/// A tool that passed admission. Its input-schema validator is compiled at
/// most once, on the first call that needs it, and kept across re-listings
/// while the schema is unchanged.
pub struct AdmittedTool {
    name: String,
    description: Option<String>,
    input_schema: Arc<Value>,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for AdmittedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmittedTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl AdmittedTool {
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Its input schema as listed.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    fn validator(&self) -> &Result<jsonschema::Validator, String> {
        self.validator.get_or_init(|| {
            jsonschema::validator_for(&self.input_schema).map_err(|e| e.masked().to_string())
        })
    }

    /// Checks `arguments` against the input schema.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArguments`] naming the JSON pointer of the first
    /// offending value (the value itself is never quoted).
    pub fn validate(&self, server: &str, arguments: &Map<String, Value>) -> Result<(), Error> {
        let invalid = |path: String, detail: String| Error::InvalidArguments {
            server: server.to_owned(),
            tool: self.name.clone(),
            path,
            detail,
        };
        let validator = match self.validator() {
            Ok(v) => v,
            // Registration compiles the schema too, so this is a schema the
            // registry let through and jsonschema later refused: fail closed.
            Err(detail) => {
                return Err(invalid(
                    String::new(),
                    format!("the input schema does not compile: {detail}"),
                ));
            }
        };
        let instance = Value::Object(arguments.clone());
        match validator.validate(&instance) {
            Ok(()) => Ok(()),
            Err(e) => Err(invalid(
                e.instance_path().as_str().to_owned(),
                e.masked().to_string(),
            )),
        }
    }
}

/// A listed tool that was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeniedTool {
    /// The name the server listed.
    pub name: String,
    /// Why it was refused.
    #[serde(serialize_with = "reason_code")]
    pub reason: DenialReason,
    /// The full message, as logged.
    pub message: String,
}

fn reason_code<S: serde::Serializer>(reason: &DenialReason, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(reason.code())
}

/// One server's registry: the admitted tools by name and the denials of the
/// listing that produced it.
#[derive(Debug, Default)]
pub struct Registry {
    admitted: BTreeMap<String, Arc<AdmittedTool>>,
    denied: Vec<DeniedTool>,
    /// Every verdict of the listing, by name, with the exact inputs it was
    /// reached on: the admission gate is a pure function of (name,
    /// description, schema), so an identical descriptor in the next
    /// listing gets the same verdict without being judged again.
    verdicts: BTreeMap<String, Verdict>,
}

#[derive(Debug, Clone)]
struct Verdict {
    description: Option<String>,
    /// Shared with the admitted tool: the memo costs no copy.
    input_schema: Arc<Value>,
    outcome: Result<(), DenialReason>,
}

/// Lists at least this long are judged on several threads.
const PARALLEL_FROM: usize = 64;

/// The previous listing's verdict on the identical descriptor, if any.
fn remembered(tool: &ListedTool, previous: Option<&Registry>) -> Option<Result<(), DenialReason>> {
    let memo = previous?.verdicts.get(&tool.name)?;
    (memo.description == tool.description && *memo.input_schema == tool.input_schema)
        .then(|| memo.outcome.clone())
}

/// A fresh verdict from the admission gate, under `policy`.
fn judge(tool: &ListedTool, policy: mcp_admission::Policy) -> Result<(), DenialReason> {
    mcp_admission::validate_tool_admission_under(
        policy,
        &tool.name,
        Some(&tool.input_schema),
        tool.description.as_deref(),
    )
    .map_err(|denied| DenialReason::Admission(denied.reason()))
}

/// Every tool's verdict, and whether it is the previous listing's verdict
/// on the identical descriptor.
///
/// The remembered verdicts are read on the calling thread first; only the
/// tools judged afresh are spread over up to `available_parallelism`
/// threads, and only when there are many of them (each verdict is
/// independent and pure). A re-listing of unchanged tools so starts no
/// thread: on a loaded machine a new thread can wait for a CPU longer than
/// the lookups take.
fn judge_all(
    tools: &[ListedTool],
    previous: Option<&Registry>,
    policy: mcp_admission::Policy,
) -> Vec<(Result<(), DenialReason>, bool)> {
    let mut out: Vec<Option<(Result<(), DenialReason>, bool)>> = tools
        .iter()
        .map(|t| remembered(t, previous).map(|v| (v, true)))
        .collect();
    let fresh: Vec<usize> = (0..tools.len()).filter(|&i| out[i].is_none()).collect();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if fresh.len() < PARALLEL_FROM || threads < 2 {
        for &i in &fresh {
            out[i] = Some((judge(&tools[i], policy), false));
        }
    } else {
        let chunk = fresh.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = fresh
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|&i| judge(&tools[i], policy))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for (handle, part) in handles.into_iter().zip(fresh.chunks(chunk)) {
                // A panicking judgement admits nothing (fail closed); the
                // gate itself never panics on input.
                let verdicts = handle
                    .join()
                    .unwrap_or_else(|_| vec![Err(DenialReason::CheckFailed); part.len()]);
                for (&i, verdict) in part.iter().zip(verdicts) {
                    out[i] = Some((verdict, false));
                }
            }
        });
    }
    out.into_iter()
        .map(|v| v.unwrap_or((Err(DenialReason::CheckFailed), false)))
        .collect()
}

/// A listed tool, as the registry takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its input schema.
    pub input_schema: Value,
}

impl From<rmcp::model::Tool> for ListedTool {
    fn from(tool: rmcp::model::Tool) -> Self {
        Self {
            name: tool.name.into_owned(),
            description: tool.description.map(|d| d.into_owned()),
            input_schema: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
        }
    }
}

impl Registry {
    /// Judges every listed tool and registers the admitted ones: a tool the
    /// admission gate refuses never enters the registry, nor does one whose
    /// schema does not compile or whose name is listed twice. A tool whose
    /// schema is unchanged since `previous` keeps its compiled validator.
    pub fn admit(server: &str, tools: Vec<ListedTool>, previous: Option<&Registry>) -> Self {
        Self::admit_under(mcp_admission::Policy::Original, server, tools, previous)
    }

    /// [`Self::admit`] under an admission policy (`previous` must have been
    /// judged under the same one: its verdicts are reused).
    pub fn admit_under(
        policy: mcp_admission::Policy,
        server: &str,
        tools: Vec<ListedTool>,
        previous: Option<&Registry>,
    ) -> Self {
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<String> = tools
            .iter()
            .filter(|t| !seen.insert(t.name.as_str()))
            .map(|t| t.name.clone())
            .collect();
        let verdicts = judge_all(&tools, previous, policy);
        let mut registry = Self::default();
        for (tool, (verdict, unchanged)) in tools.into_iter().zip(verdicts) {
            let ListedTool {
                name,
                description,
                input_schema,
            } = tool;
            let duplicate = duplicates.contains(&name);
            let verdict = if duplicate {
                Err(DenialReason::DuplicateName)
            } else {
                verdict
            };
            // An unchanged admitted tool keeps its entry (and its compiled
            // validator) from the previous registry.
            let reused = previous
                .filter(|_| unchanged && !duplicate)
                .and_then(|p| p.admitted.get(&name))
                .filter(|_| verdict.is_ok())
                .map(Arc::clone);
            let input_schema = match &reused {
                Some(old) => Arc::clone(&old.input_schema),
                None => Arc::new(input_schema),
            };
            if !duplicate {
                registry.verdicts.insert(
                    name.clone(),
                    Verdict {
                        description: description.clone(),
                        input_schema: Arc::clone(&input_schema),
                        outcome: verdict.clone(),
                    },
                );
            }
            match verdict {
                Ok(()) => {
                    let entry = reused.unwrap_or_else(|| {
                        Arc::new(AdmittedTool {
                            name: name.clone(),
                            description,
                            input_schema,
                            validator: OnceLock::new(),
                        })
                    });
                    registry.admitted.insert(name, entry);
                }
                Err(reason) => {
                    let message = format!(
                        "mcp tool '{name}' of server '{server}' was not registered: {reason}"
                    );
                    tracing::warn!(server, tool = %name, reason = reason.code(), "mcp tool denied at registration");
                    registry.denied.push(DeniedTool {
                        name,
                        reason,
                        message,
                    });
                }
            }
        }
        registry
    }

    /// The admitted tool of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<AdmittedTool>> {
        self.admitted.get(name)
    }

    /// The admitted tools, by name.
    pub fn admitted(&self) -> impl Iterator<Item = &Arc<AdmittedTool>> {
        self.admitted.values()
    }

    /// The denials of the listing.
    pub fn denied(&self) -> &[DeniedTool] {
        &self.denied
    }

    /// The denial of that name, if the tool was listed and refused.
    pub fn denial(&self, name: &str) -> Option<&DeniedTool> {
        self.denied.iter().find(|d| d.name == name)
    }
}
