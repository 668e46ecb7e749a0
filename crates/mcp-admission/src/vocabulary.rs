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

/// Phrases that never come from the execute/run families below.
const FIXED_PHRASES: &[&str] = &[
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
];

/// Verb forms of the execute/run phrase families.
const FAMILY_VERBS: &[&str] = &[
    "execute",
    "executes",
    "execute a",
    "execute an",
    "run",
    "runs",
    "run a",
    "run an",
];

/// Qualifiers between the verb and the noun ("" means none).
const FAMILY_QUALIFIERS: &[&str] = &["", "os", "system", "shell", "terminal"];

/// Nouns closing the execute/run phrase families.
const FAMILY_NOUNS: &[&str] = &["command", "commands"];

/// Every executor description phrase, as a list of words.
pub(crate) fn executor_phrases() -> Vec<Vec<&'static str>> {
    let mut out: Vec<Vec<&'static str>> = FIXED_PHRASES
        .iter()
        .map(|p| p.split(' ').collect())
        .collect();
    for verb in FAMILY_VERBS {
        for qualifier in FAMILY_QUALIFIERS {
            for noun in FAMILY_NOUNS {
                let mut words: Vec<&'static str> = verb.split(' ').collect();
                if !qualifier.is_empty() {
                    words.push(qualifier);
                }
                words.push(noun);
                out.push(words);
            }
        }
    }
    out
}

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

/// Composition and conditional keywords whose branches constrain the same instance.
pub(crate) const BRANCH_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Single-subschema conditional keywords.
pub(crate) const BRANCH_SINGLE_KEYWORDS: &[&str] = &["if", "then", "else", "not"];

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
    /// Walker numeric bound keywords.
    pub const NUMERIC_BOUNDS: &[&str] = super::NUMERIC_BOUND_KEYWORDS;
    /// Annotation-only `$ref` siblings.
    pub const ANNOTATION_REF_SIBLINGS: &[&str] = super::ANNOTATION_REF_SIBLINGS;
    /// Strong executor names (normalised).
    pub const STRONG_EXECUTOR_NAMES: &[&str] = super::STRONG_EXECUTOR_NAMES;
    /// Unbounded non-object types.
    pub const UNBOUNDED_NON_OBJECT_TYPES: &[&str] = super::UNBOUNDED_NON_OBJECT_TYPES;
}
