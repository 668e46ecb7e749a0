//! Closed word lists: executor names and phrases, key categories, the keyword registry.
//!
//! Every list here is an explicit enumeration. Nothing is matched by prefix or
//! by spelling heuristic, because a heuristic is exactly what an attacker can
//! step around (a `min*` prefix test would exempt `minCustomThing`).

/// Names (after normalisation) that claim a generic executor identity.
pub(crate) const STRONG_EXECUTOR_NAMES: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "shell",
    "cmd",
    "powershell",
    "pwsh",
    "terminal",
    "exec",
    "exec_command",
    "execute_command",
    "run_command",
    "run_shell",
    "shell_exec",
    "command_exec",
    "spawn_process",
    "run_process",
];

/// Executor description phrases, matched as whole words in a normalised description.
///
/// The fixed phrases, then the execute/run families: verbs execute, executes,
/// execute a, execute an, run, runs, run a, run an; qualifiers none, os, system,
/// shell, terminal; nouns command, commands.
pub(crate) const EXECUTOR_PHRASES: &[&str] = &[
    "arbitrary command",
    "arbitrary commands",
    "arbitrary shell",
    "run shell",
    "run a shell",
    "execute script",
    "execute scripts",
    "executes scripts",
    "execute a script",
    "spawn process",
    "spawn processes",
    "spawns processes",
    "spawn a process",
    "shell command executor",
    "shell command runner",
    "command line executor",
    "command line runner",
    "execute command",
    "execute commands",
    "execute os command",
    "execute os commands",
    "execute system command",
    "execute system commands",
    "execute shell command",
    "execute shell commands",
    "execute terminal command",
    "execute terminal commands",
    "executes command",
    "executes commands",
    "executes os command",
    "executes os commands",
    "executes system command",
    "executes system commands",
    "executes shell command",
    "executes shell commands",
    "executes terminal command",
    "executes terminal commands",
    "execute a command",
    "execute a commands",
    "execute a os command",
    "execute a os commands",
    "execute a system command",
    "execute a system commands",
    "execute a shell command",
    "execute a shell commands",
    "execute a terminal command",
    "execute a terminal commands",
    "execute an command",
    "execute an commands",
    "execute an os command",
    "execute an os commands",
    "execute an system command",
    "execute an system commands",
    "execute an shell command",
    "execute an shell commands",
    "execute an terminal command",
    "execute an terminal commands",
    "run command",
    "run commands",
    "run os command",
    "run os commands",
    "run system command",
    "run system commands",
    "run shell command",
    "run shell commands",
    "run terminal command",
    "run terminal commands",
    "runs command",
    "runs commands",
    "runs os command",
    "runs os commands",
    "runs system command",
    "runs system commands",
    "runs shell command",
    "runs shell commands",
    "runs terminal command",
    "runs terminal commands",
    "run a command",
    "run a commands",
    "run a os command",
    "run a os commands",
    "run a system command",
    "run a system commands",
    "run a shell command",
    "run a shell commands",
    "run a terminal command",
    "run a terminal commands",
    "run an command",
    "run an commands",
    "run an os command",
    "run an os commands",
    "run an system command",
    "run an system commands",
    "run an shell command",
    "run an shell commands",
    "run an terminal command",
    "run an terminal commands",
];

/// Command keys: a free-form value under one denies on its own.
pub(crate) const COMMAND_KEYS: &[&str] = &["command", "cmd", "command_line", "shell_command"];
/// Program keys: free-form together with an argument key.
pub(crate) const PROGRAM_KEYS: &[&str] = &["program", "executable", "binary"];
/// Argument keys.
pub(crate) const ARGUMENT_KEYS: &[&str] = &["args", "argv"];
/// Payload keys: free-form and corroborated by a selector, name or description.
pub(crate) const PAYLOAD_KEYS: &[&str] = &["script", "code", "input", "text"];
/// Selector keys: their presence corroborates a payload key.
pub(crate) const SELECTOR_KEYS: &[&str] = &["shell", "interpreter"];
/// Auxiliary keys: free-form values here never make a tool executor-shaped.
pub(crate) const AUXILIARY_KEYS: &[&str] = &[
    "cwd",
    "working_directory",
    "working_dir",
    "env",
    "environment",
    "stdin",
    "timeout",
    "timeout_seconds",
    "shell",
    "interpreter",
    "user",
];

/// Tokens that taint a key as an executor channel, overriding the identifier exemption.
pub(crate) const EXEC_TAINTED_TOKENS: &[&str] = &[
    "command",
    "cmd",
    "shell",
    "script",
    "program",
    "binary",
    "executable",
    "argv",
    "args",
];

/// Last tokens of an identifier-like key.
pub(crate) const IDENTIFIER_SUFFIXES: &[&str] =
    &["id", "ids", "path", "paths", "uri", "url", "uuid", "slug"];

/// Registry class: annotations that never constrain the instance.
pub(crate) const INERT_KEYWORDS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$vocabulary",
    "format",
    "contentEncoding",
    "contentMediaType",
    // Inert only while the content-assertion vocabulary stays disabled; kept
    // in sync with `WALKER_SCALAR_ONLY_KEYWORDS` (a test checks both).
    "contentSchema",
];

/// Registry class: assertions that only narrow the instance.
pub(crate) const BOUNDING_KEYWORDS: &[&str] = &[
    "type",
    "const",
    "enum",
    "required",
    "dependentRequired",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
];

/// Registry class: applicators the proofs model.
pub(crate) const MODELED_KEYWORDS: &[&str] = &[
    "properties",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$defs",
    "definitions",
];

/// Registry class: applicators recognised by name and deliberately not modeled.
pub(crate) const DENIED_KEYWORDS: &[&str] = &[
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "not",
    "contains",
    "items",
    "prefixItems",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
];

/// Walker: keywords whose value never carries a subschema the walker must follow.
pub(crate) const WALKER_SCALAR_ONLY_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "description",
    "title",
    "format",
    "pattern",
    "required",
    "default",
    "examples",
    "$defs",
    "definitions",
    "contentSchema",
];

/// Walker: numeric bound keywords (an explicit list, never a `min*`/`max*` test).
pub(crate) const NUMERIC_BOUND_KEYWORDS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minContains",
    "maxContains",
    "multipleOf",
];

/// Walker: keywords it walks as applicators.
pub(crate) const WALKER_APPLICATOR_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "not",
    "items",
    "prefixItems",
    "$ref",
];

/// Walker: references it can never resolve (dynamic scope).
pub(crate) const UNRESOLVABLE_REFERENCE_KEYWORDS: &[&str] = &["$dynamicRef", "$recursiveRef"];

/// Keywords that, beside `$ref`, are annotation-only.
pub(crate) const ANNOTATION_REF_SIBLINGS: &[&str] = &[
    "description",
    "title",
    "$comment",
    "examples",
    "default",
    "$defs",
    "definitions",
];

/// A property schema carrying one of these is a restated/composed schema (a container).
pub(crate) const OBJECT_CONTAINER_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "$ref",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "not",
];

/// Non-object types whose instances are not intrinsically finite.
pub(crate) const UNBOUNDED_NON_OBJECT_TYPES: &[&str] = &["string", "number", "integer", "array"];

/// The four registry classes, plus unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeywordClass {
    /// An annotation: never constrains the instance.
    Inert,
    /// An assertion that only narrows the instance.
    Bounding,
    /// An applicator the proofs model.
    Modeled,
    /// An applicator recognised by name and not modeled: its presence denies.
    Denied,
    /// Not in the registry: fails closed unless its value cannot carry a subschema.
    Unknown,
}

/// Classifies a keyword by exact name against the closed registry.
pub fn classify_keyword(keyword: &str) -> KeywordClass {
    match keyword {
        "title" | "description" | "default" | "examples" | "deprecated" | "readOnly"
        | "writeOnly" | "$comment" | "$schema" | "$id" | "$anchor" | "$vocabulary" | "format"
        | "contentEncoding" | "contentMediaType" | "contentSchema" => KeywordClass::Inert,
        "type" | "const" | "enum" | "required" | "dependentRequired" | "multipleOf" | "maximum"
        | "exclusiveMaximum" | "minimum" | "exclusiveMinimum" | "maxLength" | "minLength"
        | "pattern" | "maxItems" | "minItems" | "uniqueItems" | "maxContains" | "minContains"
        | "maxProperties" | "minProperties" => KeywordClass::Bounding,
        "properties"
        | "additionalProperties"
        | "allOf"
        | "anyOf"
        | "oneOf"
        | "$ref"
        | "$defs"
        | "definitions" => KeywordClass::Modeled,
        "patternProperties"
        | "propertyNames"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "dependentSchemas"
        | "if"
        | "then"
        | "else"
        | "not"
        | "contains"
        | "items"
        | "prefixItems"
        | "$dynamicRef"
        | "$dynamicAnchor"
        | "$recursiveRef"
        | "$recursiveAnchor" => KeywordClass::Denied,
        _ => KeywordClass::Unknown,
    }
}

/// The class a keyword has by the lists (the slow, obviously-correct form of
/// [`classify_keyword`]; a test checks the two agree).
#[cfg(test)]
pub(crate) fn classify_by_lists(keyword: &str) -> KeywordClass {
    if INERT_KEYWORDS.contains(&keyword) {
        KeywordClass::Inert
    } else if BOUNDING_KEYWORDS.contains(&keyword) {
        KeywordClass::Bounding
    } else if MODELED_KEYWORDS.contains(&keyword) {
        KeywordClass::Modeled
    } else if DENIED_KEYWORDS.contains(&keyword) {
        KeywordClass::Denied
    } else {
        KeywordClass::Unknown
    }
}

/// True when the walker affirmatively recognises a keyword.
pub(crate) fn walker_recognises(keyword: &str) -> bool {
    matches!(
        keyword,
        // Scalar-only.
        "type" | "enum" | "const" | "description" | "title" | "format" | "pattern" | "required"
            | "default" | "examples" | "$defs" | "definitions" | "contentSchema"
            // Numeric bounds.
            | "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum"
            | "minContains" | "maxContains" | "multipleOf"
            // Applicators it walks.
            | "properties" | "patternProperties" | "additionalProperties" | "allOf" | "anyOf"
            | "oneOf" | "if" | "then" | "else" | "not" | "items" | "prefixItems" | "$ref"
    )
}

/// The walker's recognition by the lists (checked against [`walker_recognises`]).
#[cfg(test)]
pub(crate) fn walker_recognises_by_lists(keyword: &str) -> bool {
    WALKER_SCALAR_ONLY_KEYWORDS.contains(&keyword)
        || NUMERIC_BOUND_KEYWORDS.contains(&keyword)
        || WALKER_APPLICATOR_KEYWORDS.contains(&keyword)
}

/// The keyword lists, exposed read-only for hosts and for consistency tests.
pub mod lists {
    /// Registry class: inert annotations.
    pub const INERT: &[&str] = super::INERT_KEYWORDS;
    /// Registry class: bounding assertions.
    pub const BOUNDING: &[&str] = super::BOUNDING_KEYWORDS;
    /// Registry class: modeled applicators.
    pub const MODELED: &[&str] = super::MODELED_KEYWORDS;
    /// Registry class: denied applicators.
    pub const DENIED: &[&str] = super::DENIED_KEYWORDS;
    /// Walker keywords whose value never carries a subschema.
    pub const WALKER_SCALAR_ONLY: &[&str] = super::WALKER_SCALAR_ONLY_KEYWORDS;
    /// Keywords that make a property schema a container (recursed, not a leaf).
    pub const OBJECT_CONTAINERS: &[&str] = super::OBJECT_CONTAINER_KEYWORDS;
    /// Walker applicator keywords (walked for free-form keys).
    pub const WALKER_APPLICATORS: &[&str] = super::WALKER_APPLICATOR_KEYWORDS;
    /// Walker numeric bound keywords.
    pub const NUMERIC_BOUNDS: &[&str] = super::NUMERIC_BOUND_KEYWORDS;
    /// Annotation-only `$ref` siblings.
    pub const ANNOTATION_REF_SIBLINGS: &[&str] = super::ANNOTATION_REF_SIBLINGS;
    /// Strong executor names (normalised).
    pub const STRONG_EXECUTOR_NAMES: &[&str] = super::STRONG_EXECUTOR_NAMES;
    /// Unbounded non-object types.
    pub const UNBOUNDED_NON_OBJECT_TYPES: &[&str] = super::UNBOUNDED_NON_OBJECT_TYPES;
}

#[cfg(test)]
mod tests;
