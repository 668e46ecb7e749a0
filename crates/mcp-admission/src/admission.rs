//! The public verdict functions, the classifier and the synthetic wrapper exemption.

use serde_json::Value;

use crate::engine::Engine;
use crate::node::{Node, Obj};
use crate::normalize::KeyCategories;
use crate::normalize::{description_signals_execution, normalize_key_cow};
use crate::reason::{AdmissionDenied, Reason};
use crate::report::{
    AdmissionReport, FreeFormCause, FreeFormKey, Insufficiency, Limits, UnresolvedCause,
};
use crate::vocabulary::STRONG_EXECUTOR_NAMES;

/// Which rules judge a descriptor.
///
/// [`Policy::Original`] gives lionagi 0.36.0's verdicts (and this crate's
/// documented departures, all toward denying): what
/// [`validate_tool_admission`] and every other function without a policy
/// argument apply. [`Policy::Strict`] adds one rule beyond the original,
/// checked only when every original rule admits: a tool whose name or
/// description says it runs, executes, evaluates or interprets code
/// ([`crate::signals_code_execution`]) and whose code, script, source,
/// program, input or file (`file_path`) key admits any string is denied with
/// [`Reason::CodeExecutionWithFreeInput`]. `lionrt` applies it by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Policy {
    /// The original's verdicts (the drop-in).
    #[default]
    Original,
    /// The original's verdicts plus the code-execution rule.
    Strict,
}

impl Policy {
    /// The policy's name (`original`, `strict`).
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Original => "original",
            Policy::Strict => "strict",
        }
    }

    /// Parses a policy name (`original`, also `compat`, or `strict`).
    pub fn from_name(name: &str) -> Option<Policy> {
        match name {
            "original" | "compat" => Some(Policy::Original),
            "strict" => Some(Policy::Strict),
            _ => None,
        }
    }
}

/// [`validate_tool_admission`] under `policy`.
///
/// # Errors
///
/// [`AdmissionDenied`] when the descriptor exposes a generic executor
/// surface (or, under [`Policy::Strict`], a free code-execution channel).
pub fn validate_tool_admission_under(
    policy: Policy,
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> Result<(), AdmissionDenied> {
    static NULL: Value = Value::Null;
    let root = input_schema.unwrap_or(&NULL);
    match judge_schema(Limits::default(), policy, name, root, description, false).reason {
        None => Ok(()),
        Some(reason) => Err(AdmissionDenied::new(name, reason)),
    }
}

/// [`explain_tool_admission_with`] under `policy`.
pub fn explain_tool_admission_under(
    policy: Policy,
    limits: Limits,
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> AdmissionReport {
    static NULL: Value = Value::Null;
    let root = input_schema.unwrap_or(&NULL);
    judge_schema(limits, policy, name, root, description, true)
}

/// Decides whether an MCP tool descriptor may be registered.
///
/// Pure and synchronous: the verdict depends only on the arguments. A JSON
/// `null` schema is the same as an absent one (the original cannot tell them
/// apart). Never panics, whatever the schema; every verdict is bounded by
/// [`Limits::default`].
///
/// # Errors
///
/// [`AdmissionDenied`] when the descriptor exposes a generic executor surface.
pub fn validate_tool_admission(
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> Result<(), AdmissionDenied> {
    match verdict_with(Limits::default(), name, input_schema, description) {
        None => Ok(()),
        Some(reason) => Err(AdmissionDenied::new(name, reason)),
    }
}

/// Like [`validate_tool_admission`], first applying the synthetic wrapper
/// exemption ([`is_synthetic_mcp_wrapper_schema`]) with `mcp_tool_name`, the
/// name the tool was registered under in the host's MCP config.
///
/// # Errors
///
/// [`AdmissionDenied`] when the descriptor is not the synthetic wrapper and
/// exposes a generic executor surface.
pub fn validate_mcp_tool_admission(
    advertised_name: &str,
    mcp_tool_name: Option<&str>,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> Result<(), AdmissionDenied> {
    if let Some(registered) = mcp_tool_name
        && is_synthetic_mcp_wrapper_schema(registered, advertised_name, input_schema, description)
    {
        return Ok(());
    }
    validate_tool_admission(advertised_name, input_schema, description)
}

/// The verdict with everything found on the way, under the default limits.
pub fn explain_tool_admission(
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> AdmissionReport {
    explain_tool_admission_with(Limits::default(), name, input_schema, description)
}

/// The verdict with everything found on the way, under explicit limits.
pub fn explain_tool_admission_with(
    limits: Limits,
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> AdmissionReport {
    judge(limits, name, input_schema, description, true)
}

/// The verdict alone (the report's lists stay empty): no key, path or cause
/// string is built on the way. Always the same reason as
/// [`explain_tool_admission_with`] gives.
pub(crate) fn verdict_with(
    limits: Limits,
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> Option<Reason> {
    judge(limits, name, input_schema, description, false).reason
}

/// Judges a descriptor; `detailed` keeps the report's lists.
fn judge(
    limits: Limits,
    name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
    detailed: bool,
) -> AdmissionReport {
    static NULL: Value = Value::Null;
    let root = input_schema.unwrap_or(&NULL);
    judge_schema(limits, Policy::Original, name, root, description, detailed)
}

/// Judges a descriptor whose schema is any document (the batch path's
/// arena tree, say): `None` (or a JSON `null`) is an absent schema.
/// Always the same report as [`explain_tool_admission_with`] (when
/// `detailed`) gives for the same schema as a `Value`.
pub(crate) fn judge_node<'a, N: Node<'a>>(
    limits: Limits,
    policy: Policy,
    name: &str,
    input_schema: Option<N>,
    description: Option<&str>,
    detailed: bool,
) -> AdmissionReport {
    static NULL: Value = Value::Null;
    match input_schema {
        Some(root) => judge_schema(limits, policy, name, root, description, detailed),
        None => judge_schema(limits, policy, name, &NULL, description, detailed),
    }
}

/// Judges a descriptor; `root` is the schema, where JSON `null` stands for
/// an absent one.
fn judge_schema<'a, N: Node<'a>>(
    limits: Limits,
    policy: Policy,
    name: &str,
    root: N,
    description: Option<&str>,
    detailed: bool,
) -> AdmissionReport {
    let normalized_name = normalize_key_cow(name);
    let strong = STRONG_EXECUTOR_NAMES.contains(&&*normalized_name);
    let signals = description.is_some_and(description_signals_execution);
    let empty = root.is_null() || root.as_object().is_some_and(Obj::is_empty);

    let mut engine = Engine::with_detail(root, limits, detailed);
    let runs_code =
        policy == Policy::Strict && crate::normalize::signals_code_execution(name, description);
    engine.strict = runs_code;
    if !empty {
        engine.walk_root(root);
    }
    let walker_exhausted = engine.exhausted;
    let unresolvable = engine.found.unresolved;

    let mut insufficiency = None;
    let mut proofs_evaluated = false;
    if empty && strong {
        // The original refuses an executor name with no schema at all:
        // nothing proves the tool bounded.
        insufficiency = Some(Insufficiency {
            proof: crate::report::Proof::Boundedness,
            path: String::new(),
            cause: crate::report::InsufficiencyCause::NoSchema,
        });
    }
    if !empty && (strong || signals) {
        proofs_evaluated = true;
        // Coverage first: it also decides the description rule. Each proof
        // has its own reach budget, as in the original.
        engine.begin_pass();
        if let Err(e) = engine.coverage(root, 0) {
            insufficiency = Some(e);
        }
        if strong && insufficiency.is_none() {
            engine.begin_pass();
            if let Err(e) = engine.boundedness(root, 0) {
                insufficiency = Some(e);
            }
        }
    }
    let coverage_failed = insufficiency
        .as_ref()
        .is_some_and(|i| i.proof == crate::report::Proof::Coverage);

    let found = engine.found;
    let reason = if found.command {
        Some(Reason::UnboundedCommandInput)
    } else if found.program && found.argument {
        Some(Reason::UnboundedProcessInput)
    } else if found.payload && (engine.selector_present || strong || signals) {
        Some(Reason::UnboundedScriptPayload)
    } else if signals && (found.map_channel || unresolvable || coverage_failed || found.broad) {
        Some(Reason::ExecutorDescriptionWithBroadInput)
    } else if strong
        && (insufficiency.is_some() || unresolvable || found.map_channel || found.identity)
    {
        Some(Reason::ExecutorIdentityWithInsufficientSchema)
    } else if found.malformed {
        Some(Reason::MalformedSchema)
    } else if walker_exhausted {
        // The walker stopped before it saw the whole schema: the unseen rest
        // may hold a free-form command key (fail closed).
        if detailed {
            engine.free_form.push(FreeFormKey {
                key: "(schema past the node budget)".to_owned(),
                normalized: String::new(),
                path: engine
                    .unresolved
                    .iter()
                    .find(|u| u.cause == UnresolvedCause::NodeBudget)
                    .map(|u| u.path.clone())
                    .unwrap_or_default(),
                categories: KeyCategories {
                    command: true,
                    program: true,
                    argument: true,
                    payload: true,
                    selector: true,
                    auxiliary: false,
                },
                identifier_like: false,
                exec_tainted: true,
                cause: FreeFormCause::LimitReached,
            });
        }
        Some(Reason::UnboundedCommandInput)
    } else if runs_code && (engine.found.code_channel || root.is_bool(true)) {
        // Strict only, when every original rule admits.
        Some(Reason::CodeExecutionWithFreeInput)
    } else {
        None
    };

    AdmissionReport {
        reason,
        normalized_name: if detailed {
            normalized_name.into_owned()
        } else {
            String::new()
        },
        strong_executor_name: strong,
        description_signals_execution: signals,
        nodes_visited: engine.used(),
        free_form_keys: engine.free_form,
        free_form_map_channels: engine.map_channels,
        selector_key_present: engine.selector_present,
        unresolved: engine.unresolved,
        malformed: engine.malformed,
        walker_exhausted,
        insufficiency,
        proofs_evaluated,
        limits,
    }
}

/// The object-boundedness proof alone: `Some` with the first failure when
/// the instance is not provably a closed, finite object shape.
pub fn object_boundedness_insufficient(schema: &Value, limits: Limits) -> Option<Insufficiency> {
    Engine::new(schema, limits).boundedness(schema, 0).err()
}

/// The structural-coverage proof alone: `Some` with the first position that
/// carries a keyword the proofs do not model.
pub fn structural_coverage_insufficient(schema: &Value, limits: Limits) -> Option<Insufficiency> {
    Engine::new(schema, limits).coverage(schema, 0).err()
}

/// Both proofs, combined by OR (coverage first), each with its own budget.
pub fn schema_is_insufficient(schema: &Value, limits: Limits) -> Option<Insufficiency> {
    let mut engine = Engine::new(schema, limits);
    engine.coverage(schema, 0).err().or_else(|| {
        engine.begin_pass();
        engine.boundedness(schema, 0).err()
    })
}

/// True when a value is shaped like it could hold a schema (a mapping, or a
/// list holding one at any depth); true as well when the limits run out.
pub fn could_carry_subschema(value: &Value, limits: Limits) -> bool {
    Engine::new(value, limits).could_carry_subschema(value, 0)
}

/// True when a value cannot carry a subschema: recursively scalar, or
/// lists/mappings with no schema-vocabulary key anywhere inside; false when
/// the limits run out.
pub fn is_inert_annotation_value(value: &Value, limits: Limits) -> bool {
    Engine::new(value, limits).inert_value(value, 0)
}

/// True when a tool carries exactly the synthetic wrapper shape a host
/// produces for a tool built without an explicit schema, which carries no
/// information from the remote server and is exempt from admission.
///
/// All three must hold: the advertised name equals `mcp_tool_name` (the name
/// the tool was registered under), the description is exactly
/// `MCP tool: <that name>`, and the schema equals
/// `{"type": "object", "properties": {"kwargs": {"type": "string",
/// "description": null}}, "required": ["kwargs"]}`. Any other field, value or
/// extra key makes it an ordinary remote descriptor.
pub fn is_synthetic_mcp_wrapper_schema(
    mcp_tool_name: &str,
    advertised_name: &str,
    input_schema: Option<&Value>,
    description: Option<&str>,
) -> bool {
    if mcp_tool_name != advertised_name {
        return false;
    }
    let Some(description) = description else {
        return false;
    };
    if description.strip_prefix("MCP tool: ") != Some(mcp_tool_name) {
        return false;
    }
    let Some(schema) = input_schema else {
        return false;
    };
    // Value equality stops at the first difference, so its recursion never
    // goes deeper than this small template.
    *schema == synthetic_wrapper_schema()
}

/// The exact synthetic wrapper schema.
pub fn synthetic_wrapper_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"kwargs": {"type": "string", "description": null}},
        "required": ["kwargs"]
    })
}
