//! Fail-closed admission gate for MCP tool descriptors: refuses a generic
//! command/process/script executor (a `bash`-shaped tool) before it is
//! registered, however its JSON Schema dresses it up.
//!
//! ```
//! use mcp_admission::{Reason, validate_tool_admission};
//! use serde_json::json;
//!
//! // A host admits a narrow, closed tool...
//! let search = json!({
//!     "type": "object",
//!     "properties": {"query": {"type": "string"}, "repo_id": {"type": "string"}},
//! });
//! validate_tool_admission("search_code", Some(&search), Some("Search the code base."))?;
//!
//! // ...and refuses a shell in disguise: one enum field, and a command
//! // string hidden behind `$ref`.
//! let disguised = json!({
//!     "type": "object",
//!     "properties": {
//!         "mode": {"type": "string", "enum": ["fast"]},
//!         "cmd": {"$ref": "#/$defs/Line"}
//!     },
//!     "$defs": {"Line": {"type": "string"}}
//! });
//! let denied = validate_tool_admission("notebook", Some(&disguised), None).unwrap_err();
//! assert_eq!(denied.reason(), Reason::UnboundedCommandInput);
//! assert_eq!(denied.reason().as_str(), "unbounded-command-input");
//! assert!(denied.to_string().starts_with(
//!     "MCP tool 'notebook' was not registered: generic executor surface detected [unbounded-command-input]."
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it decides
//!
//! [`validate_tool_admission`] is pure and synchronous (no I/O, no global
//! state, no configuration opt-out). It normalises the name and the property
//! keys, walks the whole schema with a whitelist walker, runs two independent
//! sufficiency proofs (object boundedness and structural coverage over a
//! closed Draft 2020-12 keyword registry) and classifies, first match wins:
//!
//! 1. `unbounded-command-input`: a free-form value under a command key;
//! 2. `unbounded-process-input`: free-form program and argument keys;
//! 3. `unbounded-script-payload`: a free-form payload key corroborated by a
//!    selector key, a strong executor name or an executor description;
//! 4. `executor-description-with-broad-input`;
//! 5. `executor-identity-with-insufficient-schema`;
//! 6. `malformed-schema` (this crate's own code, see below).
//!
//! Every verdict is bounded: a depth cap (12) and, as in the original, a
//! reach budget of 5,000 units for each pass (the walker, the coverage proof,
//! the boundedness proof), charged per schema node and per property or
//! branch, so each pass reaches at least as far as the original's. Work that
//! does not widen the reach (a node's keywords, value judgements, pointer
//! resolution, pattern compilation and search) is charged to a work meter of
//! 64 times the budget shared by all passes; `$ref` targets are memoised.
//! Running out of either fails closed; in particular a walker that runs out
//! before it has seen the whole schema denies (see below). No hash order is ever consulted: the
//! memo tables are only looked up, and traversal follows serde_json's default
//! sorted `Map`, so equal inputs always get equal reports. (A build that turns
//! on serde_json's `preserve_order` traverses in document order instead; the
//! verdict can then depend on key order only where the node budget runs out.)
//!
//! [`explain_tool_admission`] returns an [`AdmissionReport`]: which keys are
//! free-form and why, at which path, which channels are unresolvable, which
//! proof failed where, and the work spent. [`is_synthetic_mcp_wrapper_schema`]
//! is the synthetic wrapper exemption, kept separate;
//! [`validate_mcp_tool_admission`] applies it before judging.
//!
//! # The `batch` module (for `lionrt admission check`)
//!
//! [`batch`] is I/O-free: the binary feeds the bytes it reads to a
//! [`batch::Checker`] chunk by chunk and prints what it renders, so memory
//! stays flat for any input size. One record that cannot be judged never
//! aborts the batch: it becomes an error record. A caller judging on its own
//! threads splits with [`batch::Checker::split`], judges each record with
//! [`batch::judge_record_as`] and renders the results back in input order
//! with [`batch::Checker::render`] (the output is the same); or, as
//! `lionrt admission check` does, packs each read's records into one
//! [`batch::RecordBatch`] ([`batch::Checker::split_batch`]), judges a batch
//! per worker ([`batch::RecordBatch::judge`], or
//! [`batch::RecordBatch::judge_jsonl`], which also renders JSON Lines) and
//! hands the batches back in order ([`batch::Checker::render`],
//! [`batch::Checker::add_jsonl`]). A record is parsed field by field: only
//! `id`, `name`, `description` and the schema are kept, every other field
//! is checked as a `serde_json::Value` parse would check it, and object keys
//! are read as written even where serde_json's `raw_value` feature is on.
//!
//! The batch path never builds a `serde_json::Value`: the id and the schema
//! are read into a flat arena (nodes in one reused `Vec`, strings borrowed
//! from the input, an object's members sorted by key with the last of
//! duplicate keys kept, exactly as `Value`'s default `Map` holds them). A
//! plain record (no escapes, no signed, fractional or exponent numbers,
//! nested at most 64 deep) is read by a strict fast reader; anything else,
//! including every malformed record, by serde_json's own tokenizer, so what
//! is accepted or refused, and every error message, is serde_json's. The
//! gate's engine is generic over a read-only JSON view implemented for both
//! `&Value` (the public API, monomorphised) and the arena, so both are judged
//! by the same code; differential property tests hold the arena to the
//! `Value` path on generated documents and records (every field of the
//! explained report, the plain verdict, the echoed id, each error).
//!
//! ```
//! use mcp_admission::batch::{self, OutputFormat};
//!
//! let text = "{\"id\": 1, \"name\": \"bash\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}}}}\nnot json\n";
//! let mut checker = batch::Checker::new(OutputFormat::Jsonl, Some("tools.jsonl"));
//! let mut out = String::new();
//! checker.feed(text.as_bytes(), &mut out);
//! let tally = checker.finish(&mut out);
//! assert!(out.contains(r#""verdict":"deny""#));
//! assert!(out.contains(r#""error":"line 2: not json"#));
//! assert_eq!(tally.exit_code(), batch::EXIT_UNREADABLE);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Exit codes: 0 all admitted, 1 any denied, 2 any record unreadable.
//!
//! # Features
//!
//! - `regex` (off by default): judges `patternProperties` patterns as
//!   Python's `re` reads them (the original compiles them with `re` and
//!   searches each categorised key word). A pattern is translated into the
//!   linear-time Pike VM of `regex-automata` where it has an exact
//!   equivalent, and searched in every spelling of every categorised key
//!   word, charging the work meter. Without the feature nothing is compiled.
//!
//! ## Patterns the gate cannot judge exactly fail closed
//!
//! A pattern is *unresolvable* when Python's `re` rejects it (`\z`, a bad
//! escape, an unbalanced group, ...), when the linear engine cannot express
//! it (lookaround, backreferences, atomic groups, possessive quantifiers,
//! conditionals, repetitions past the engine's size limit), or when the
//! `regex` feature is off. For the value it guards, an unresolvable pattern
//! counts as able to match every categorised key word (command, program,
//! argument, payload, selector), whatever the tool's name: a free-form value
//! under it denies with `unbounded-command-input`. Its literal text is judged
//! as a key too (`^command_line$` is a command key either way). No rewrite of
//! a pattern can turn a denial into an admission: an equivalent pattern is
//! either matched exactly or unresolvable, and unresolvable is the widest
//! reading.
//!
//! # Deliberate differences from the original (toward denying only)
//!
//! Each is checked by `tests/it/differences.rs` or `tests/it/fail_closed.rs`;
//! the differential test against lionagi 0.36.0 (`bindings/python`) finds no
//! case the original denies and this gate admits.
//!
//! - `malformed-schema` (checked last): a position holding a value of the
//!   wrong JSON type where a schema, a list of schemas or a mapping of
//!   schemas belongs (a scalar schema, `properties: 5`, `anyOf: {}`,
//!   `prefixItems: null`, a `$defs` entry `1`, a `$ref` that is not a string,
//!   a `type` that is a mapping or lists a list or a mapping) denies. The
//!   original raises an exception on some of these (for example a non-list
//!   `prefixItems` under an enum-pinned array, or `["object", ["x"]]` as a
//!   type), which its host treats as a refusal; on the others it judges on,
//!   but a schema of that shape means nothing a validator agrees on, so it
//!   is refused everywhere by one simple rule. Values the original ignores
//!   (`required: 5`, a number in a `type` list, an annotation of any shape)
//!   are ignored here too.
//! - A walker that runs out of budget before it has seen the whole schema
//!   denies with `unbounded-command-input` (when no other reason holds): the
//!   unseen rest may hold a command key. The original then admits a tool
//!   with a neutral name; this gate's walker reaches at least as far as the
//!   original's (a `command` in the last branch of a `oneOf` of 1,600
//!   one-property objects is seen and denied by both), and past that denies.
//! - An unresolvable `patternProperties` pattern counts as matching every
//!   categorised key word (see above); the original only denies it under an
//!   executor name or description.
//! - `not` never bounds a value, and `if`/`then`/`else` bound it only when
//!   all three are present (the original refuses `{"not": {"not": pinned}}`
//!   and an `if` with `then` alone under a command key as well; the gate
//!   refuses every such shape). A `$ref` to the root or an ancestor loops and
//!   is free-form.
//! - The differential test also finds denials where the original admits on
//!   odd shapes under executor names or descriptions (a nested boolean
//!   schema, an `items` beside a non-array type, a malformed `type`); about
//!   one generated case in five differs this way, never the other.
//! - A command key inside an object that is an array's item is walked: the
//!   original admits `{"type": "array", "items": {"type": "object",
//!   "properties": {"command": {"type": "string"}}}}` under a neutral name.
//! - A free-form key whose own schema also carries object or composition
//!   keywords is still judged by its own type:
//!   `{"cmd": {"type": "string", "properties": {"x": {"type": "integer"}}}}`
//!   denies with `unbounded-command-input` (public case PE027; the original
//!   admits it).
//! - A structural-coverage failure counts as an unresolvable channel for the
//!   executor-description rule: description "Runs shell commands" with
//!   `{"type": "object", "properties": {"op": {"enum": ["a"]}}, "additionalProperties": false, "not": {}}`
//!   denies with `executor-description-with-broad-input`.
//! - A strong executor name with no schema at all (absent, `null`, `{}`)
//!   denies with `executor-identity-with-insufficient-schema`, as lionagi
//!   0.36.0 does (the spec's "empty or no schema is safe" is not what the
//!   original ships; found by the differential test); other falsy values
//!   (`false`, `[]`, `0`, `""`) deny the same way.
//! - A root schema `true` is an unresolvable channel: name `worker`,
//!   description "Execute terminal commands", schema `true` denies with
//!   `executor-description-with-broad-input`.
//! - An untyped item schema with no branch admits any string, so it reaches
//!   free form even when it is not literally `{}`: `{"program": {"type":
//!   "string"}, "argv": {"type": "array", "items": {"description": "an
//!   argument"}}}` denies with `unbounded-process-input`.
//! - A key judged while the depth cap or node budget is exhausted, behind a
//!   malformed or unresolvable reference, or behind `$dynamicRef` /
//!   `$recursiveRef`, is free-form: `{"cmd": {"$ref": "https://x/y"}}` denies
//!   with `unbounded-command-input`.
//! - An exec-tainted free-form key counts against a strong name even when it
//!   is auxiliary: name `exec` with a closed `{"shell": {"type": "string"}}`
//!   denies with `executor-identity-with-insufficient-schema`; likewise for
//!   the description rule: description "Runs shell commands" with
//!   `{"type": "object", "properties": {"shell": {"type": "string"}}}` denies
//!   with `executor-description-with-broad-input`.
//! - An untyped value under an exec-tainted key is free-form, as under a
//!   categorised key: name `exec` with a closed
//!   `{"command_path": {"description": "where"}}` denies with
//!   `executor-identity-with-insufficient-schema` (renaming a key to an
//!   exec-tainted one never turns a denial into an admission).
//! - A name listed in `required` but not declared in `properties` is judged
//!   as a key whose value is the `additionalProperties` schema (anything when
//!   absent): `{"type": "object", "required": ["command"]}` denies with
//!   `unbounded-command-input`.
//! - A malformed `type` (an unknown type name such as `"String"`, a number)
//!   may admit anything: `{"cmd": {"type": "String"}}` denies with
//!   `unbounded-command-input`, and for a strong name the boundedness proof
//!   fails.
//! - Verdicts never depend on hash order, every `$ref` target and pattern
//!   search is charged to the budget (the original can take minutes), and
//!   malformed shapes give a verdict, never an error.
//!
//! # Readings of the spec's ambiguities (Part A items 13-20)
//!
//! - 13 (type gate vs. pin): the type gate runs first, so
//!   `{"type": "string", "const": "x"}` is insufficient; `{"const": {...}}`
//!   with no type is pinned (public case PE021).
//! - 14 (intersection): a `$ref` target must be sufficient *and* its
//!   structural siblings, evaluated as their own node, must be too (a closed
//!   target with a sibling `"type": "object"` alone is insufficient). allOf
//!   needs one sufficient branch; if none is (or the list is empty), the
//!   node is insufficient, as in the original. oneOf/anyOf need every branch
//!   sufficient. A property value carrying an object or composition keyword
//!   (properties, additionalProperties, patternProperties, `$ref`,
//!   allOf/anyOf/oneOf, `$defs`, definitions) is judged by the boundedness
//!   proof whatever its type says; a nested boolean schema and an empty
//!   composition list fail the coverage proof; the bounded-array exception
//!   to denied `items`/`prefixItems` holds for a bounded property (pinned, or
//!   a bounded array type); a composition branch of a bounded value is still
//!   walked for free-form leaves; an untyped `additionalProperties` schema is
//!   a free-form map; an empty composition list constrains nothing
//!   (`{"anyOf": []}` under a command key is free-form); a `$ref` cycle fails
//!   the coverage proof. Each of these matches the original's verdicts
//!   (found with the differential test).
//! - 15 (denied vs. walked applicators): the walker walks the applicators it
//!   recognises for free-form keys; the registry's denied verdict decides the
//!   strong-name rule and (see above) the description rule, never an
//!   unsignalled tool.
//! - 16 (vendor extensions): only `x-*` and `$comment` can be exempt, and only
//!   when the value is inert: no registry keyword anywhere inside.
//! - 17 (`$defs` reachability): the coverage proof visits every entry,
//!   referenced or not; the walker, like the original's, only the entries a
//!   `$ref` reaches (an unreferenced entry constrains no instance).
//! - 18 (unenumerated inputs): the word lists, limits and synthetic shape are
//!   those of the vocabulary page, exactly.
//! - 19 (unevaluatedItems): the bounded-array exception holds only when
//!   `unevaluatedItems` is absent or `false`.
//! - 20 (annotation siblings): a `$ref` with only annotation siblings gets
//!   exactly its target's verdict. Every inert keyword of the registry is an
//!   annotation there (`$schema`, `format`, `deprecated`, ...), and at the
//!   root `$id` and `$anchor` too, so a zod-to-json-schema document
//!   (`$schema` + `$ref` + `definitions`) gets its target's verdict. Beside a
//!   nested `$ref`, `$id` and `$anchor` still count as constraining: they
//!   change what the reference means.
//!
//! # Limits kept from the original
//!
//! For a tool whose name and description do not signal execution, an
//! unresolvable channel is insufficient evidence, not a denial (ADM-056). So
//! a command key that sits deeper than the depth cap or behind an unknown
//! keyword is not seen under such a name (the original does not see it
//! either); the same schema under an executor name or description is
//! denied. A pattern that cannot be judged and a walker out of budget are
//! the exceptions: they fail closed under any name (above). Hosts wanting
//! the stricter posture can deny when [`AdmissionReport::unresolved`] is
//! non-empty.
//!
//! Names and keys are split at ASCII camelCase boundaries, case-folded with
//! full Unicode case folding (`ſhell` is `shell`) and cut at every
//! character outside `[a-z0-9]` (`écmd` is `cmd`), as the original reads
//! them. `$ref` is a local JSON pointer (`#` or `#/...`), not
//! percent-decoded, read both as RFC 6901 reads it and as the original does
//! (empty segments skipped, no list index followed): every target either
//! reading reaches is judged, and a reading that reaches nothing is
//! unresolvable. Anything else (`http://...`, `#anchor`) is unresolvable.
//!
//! # Policies
//!
//! Every function without a [`Policy`] argument judges as the original
//! does. [`Policy::Strict`] ([`validate_tool_admission_under`],
//! [`explain_tool_admission_under`], [`batch::Checker::with_policy`]) adds
//! [`Reason::CodeExecutionWithFreeInput`], checked only when every rule of
//! the original admits: a tool whose name or description says it runs,
//! executes, evaluates or interprets code ([`signals_code_execution`]) and
//! whose code, script, source, program, input or file (`file_path`) key
//! admits any string. `lionrt` judges under it by default.

#![forbid(unsafe_code)]

mod admission;
mod arena;
pub mod batch;
mod engine;
mod node;
mod normalize;
pub mod pattern;
mod proofs;
#[cfg(feature = "regex")]
pub mod python_re;
mod reason;
mod report;
mod unicode_tables;
mod values;
mod vocabulary;
mod walker;

pub use admission::{
    Policy, could_carry_subschema, explain_tool_admission, explain_tool_admission_under,
    explain_tool_admission_with, is_inert_annotation_value, is_synthetic_mcp_wrapper_schema,
    object_boundedness_insufficient, schema_is_insufficient, structural_coverage_insufficient,
    synthetic_wrapper_schema, validate_mcp_tool_admission, validate_tool_admission,
    validate_tool_admission_under,
};
pub use normalize::{
    KeyCategories, description_signals_execution, is_exec_tainted_key, is_identifier_like_key,
    is_strong_executor_name, normalize_key, signals_code_execution,
};
pub use proofs::{
    has_structural_ref_siblings, has_structural_ref_siblings_at_root,
    property_value_may_be_object_shaped,
};
pub use reason::{AdmissionDenied, Reason};
pub use report::{
    AdmissionReport, FreeFormCause, FreeFormKey, Insufficiency, InsufficiencyCause, Limits, Proof,
    Unresolved, UnresolvedCause,
};
pub use vocabulary::{KeywordClass, classify_keyword, lists};
