//! The structured explanation of a verdict, for hosts and UIs that want more than allow/deny.

use std::fmt;

use crate::normalize::KeyCategories;
use crate::reason::Reason;

/// Limits that make every verdict bounded in time.
///
/// The defaults are the original gate's: depth 12 and 5,000 units of reach
/// per pass (the walker, the coverage proof and the boundedness proof each
/// have their own), plus a work meter of 64 times that shared by all passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest schema nesting examined; deeper fails closed. Values above
    /// 128 are treated as 128, so the analysis can never overflow the stack.
    pub max_depth: usize,
    /// Reach units per pass; exhaustion fails closed.
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 12,
            max_nodes: 5_000,
        }
    }
}

/// Why a key's value was judged free-form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FreeFormCause {
    /// The value schema is `true`: anything goes.
    AnyValue,
    /// Its type admits a string and no `enum`/`const` pins it.
    StringType,
    /// Its type admits an array whose elements reach a free-form value.
    ArrayReachesFreeForm,
    /// It has no type and its key is in a key category.
    UntypedCategoryKey,
    /// A composition, conditional or `$ref` branch reaches a free-form value.
    CompositionBranch,
    /// The value schema is not a schema (neither object nor boolean), or its type is malformed.
    Malformed,
    /// A reference could not be followed (external, cyclic, dynamic), so it may be anything.
    UnresolvableReference,
    /// The depth cap or node budget ran out before the value was proven bounded.
    LimitReached,
}

impl FreeFormCause {
    /// A short lowercase description.
    pub fn as_str(self) -> &'static str {
        match self {
            FreeFormCause::AnyValue => "schema accepts any value",
            FreeFormCause::StringType => "unpinned string type",
            FreeFormCause::ArrayReachesFreeForm => "array admits a free-form element",
            FreeFormCause::UntypedCategoryKey => "untyped value under a categorised key",
            FreeFormCause::CompositionBranch => "a composition or reference branch is free-form",
            FreeFormCause::Malformed => "malformed schema",
            FreeFormCause::UnresolvableReference => "unresolvable reference",
            FreeFormCause::LimitReached => "depth or node limit reached",
        }
    }
}

/// A key whose value is free-form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeFormKey {
    /// The key as written (for `patternProperties`, the pattern).
    pub key: String,
    /// The normalised key the classifier judged.
    pub normalized: String,
    /// JSON-pointer-like location of the property schema in the input schema.
    pub path: String,
    /// Key categories of the normalised key.
    pub categories: KeyCategories,
    /// Whether the key is identifier-like (`*_id`, `*_path`, ...).
    pub identifier_like: bool,
    /// Whether a token of the key names an executor channel.
    pub exec_tainted: bool,
    /// Why the value is free-form.
    pub cause: FreeFormCause,
}

/// Why a channel could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnresolvedCause {
    /// A `$ref` that is not a local JSON pointer (`#` or `#/...`).
    ExternalReference(String),
    /// A local pointer that names nothing.
    DanglingReference(String),
    /// A `$ref` that leads back into itself.
    CyclicReference(String),
    /// `$dynamicRef` or `$recursiveRef`: never resolvable here.
    DynamicReference(String),
    /// An unrecognised keyword whose value could carry a subschema.
    UnknownKeyword(String),
    /// A schema position holding something that is not a schema.
    Malformed(String),
    /// The depth cap was exceeded.
    DepthLimit,
    /// The node budget was exhausted.
    NodeBudget,
    /// A `patternProperties` pattern that cannot be compiled (or the `regex` feature is off).
    Pattern(String),
}

impl fmt::Display for UnresolvedCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnresolvedCause::ExternalReference(r) => write!(f, "external reference {r}"),
            UnresolvedCause::DanglingReference(r) => write!(f, "dangling reference {r}"),
            UnresolvedCause::CyclicReference(r) => write!(f, "cyclic reference {r}"),
            UnresolvedCause::DynamicReference(k) => write!(f, "dynamic reference keyword {k}"),
            UnresolvedCause::UnknownKeyword(k) => write!(f, "unknown schema-shaped keyword {k}"),
            UnresolvedCause::Malformed(what) => write!(f, "malformed {what}"),
            UnresolvedCause::DepthLimit => f.write_str("depth limit exceeded"),
            UnresolvedCause::NodeBudget => f.write_str("node budget exhausted"),
            UnresolvedCause::Pattern(p) => write!(f, "pattern {p:?} cannot be compiled"),
        }
    }
}

/// A channel that could not be proven bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// Where in the schema.
    pub path: String,
    /// Why.
    pub cause: UnresolvedCause,
}

/// Which sufficiency proof failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The object-boundedness proof (type gate and closedness).
    Boundedness,
    /// The structural-coverage proof (keyword registry).
    Coverage,
}

/// Why a sufficiency proof failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InsufficiencyCause {
    /// The depth cap or node budget ran out.
    LimitReached,
    /// The node is not an object schema.
    NotAnObjectSchema,
    /// `type` is malformed.
    MalformedType,
    /// `type` excludes "object".
    TypeExcludesObject,
    /// A type union with a free-form non-object alternative and no pin.
    FreeFormTypeAlternative,
    /// A reference that cannot be followed.
    Reference(UnresolvedCause),
    /// A composition keyword whose value is not a non-empty list.
    MalformedComposition(String),
    /// No type and no `const`/`enum` pin.
    TypeOmitted,
    /// An object that `additionalProperties` does not close.
    OpenObject,
    /// `properties` that is not a mapping.
    MalformedProperties,
    /// A denied applicator keyword.
    DeniedKeyword(String),
    /// An unknown keyword whose value could carry a subschema.
    UnknownKeyword(String),
    /// A schema position holding something that is not a schema.
    Malformed(String),
    /// No schema at all (absent, `null` or `{}`): nothing proves an
    /// executor-named tool bounded.
    NoSchema,
}

impl fmt::Display for InsufficiencyCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsufficiencyCause::LimitReached => f.write_str("depth or node limit reached"),
            InsufficiencyCause::NotAnObjectSchema => f.write_str("not an object schema"),
            InsufficiencyCause::MalformedType => f.write_str("malformed type"),
            InsufficiencyCause::TypeExcludesObject => f.write_str("type excludes object"),
            InsufficiencyCause::FreeFormTypeAlternative => {
                f.write_str("type union with a free-form non-object alternative and no pin")
            }
            InsufficiencyCause::Reference(cause) => write!(f, "{cause}"),
            InsufficiencyCause::MalformedComposition(k) => write!(f, "malformed {k}"),
            InsufficiencyCause::TypeOmitted => f.write_str("type omitted and no const/enum pin"),
            InsufficiencyCause::OpenObject => {
                f.write_str("object not closed by additionalProperties: false")
            }
            InsufficiencyCause::MalformedProperties => f.write_str("malformed properties"),
            InsufficiencyCause::DeniedKeyword(k) => write!(f, "denied applicator {k}"),
            InsufficiencyCause::UnknownKeyword(k) => write!(f, "unknown schema-shaped keyword {k}"),
            InsufficiencyCause::Malformed(what) => write!(f, "malformed {what}"),
            InsufficiencyCause::NoSchema => f.write_str("no input schema"),
        }
    }
}

/// The first failure of a sufficiency proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insufficiency {
    /// Which proof failed.
    pub proof: Proof,
    /// Where in the schema.
    pub path: String,
    /// Why.
    pub cause: InsufficiencyCause,
}

/// Everything the gate found while judging one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionReport {
    /// The denial reason, or `None` when the tool is admitted.
    pub reason: Option<Reason>,
    /// The name normalised as the classifier saw it.
    pub normalized_name: String,
    /// Whether the name is a strong executor name.
    pub strong_executor_name: bool,
    /// Whether the description contains an executor phrase.
    pub description_signals_execution: bool,
    /// Keys whose values are free-form, in traversal order.
    pub free_form_keys: Vec<FreeFormKey>,
    /// Free-form `additionalProperties` map channels (no fixed key name).
    pub free_form_map_channels: Vec<String>,
    /// Whether a selector key (shell, interpreter) is declared anywhere.
    pub selector_key_present: bool,
    /// Channels that could not be proven bounded.
    pub unresolved: Vec<Unresolved>,
    /// Positions holding a value of the wrong JSON type (at most 64); any
    /// denies with `malformed-schema` when no other reason holds.
    pub malformed: Vec<Unresolved>,
    /// Whether the walker's budget ran out before the whole schema was seen
    /// (fails closed: denies with `unbounded-command-input` when no other
    /// reason holds).
    pub walker_exhausted: bool,
    /// The first sufficiency-proof failure, when the proofs ran (strong names
    /// run both proofs, executor descriptions run the coverage proof).
    pub insufficiency: Option<Insufficiency>,
    /// Whether the sufficiency proofs were evaluated.
    pub proofs_evaluated: bool,
    /// Reach units spent by the pass that spent most (never more than the
    /// budget: each pass has its own).
    pub nodes_visited: usize,
    /// The budget in force.
    pub limits: Limits,
}

impl AdmissionReport {
    /// True when the tool is admitted.
    pub fn admitted(&self) -> bool {
        self.reason.is_none()
    }

    /// A one-line lowercase explanation of the verdict, for tables and logs:
    /// `admitted`, or the reason code followed by [`Self::detail`].
    pub fn summary(&self) -> String {
        match (self.reason, self.detail()) {
            (None, _) => "admitted".to_owned(),
            (Some(reason), Some(detail)) => format!("{}: {detail}", reason.as_str()),
            (Some(reason), None) => reason.as_str().to_owned(),
        }
    }

    /// What the denial rests on (the key, channel or proof failure and where),
    /// or `None` when the tool is admitted.
    pub fn detail(&self) -> Option<String> {
        let reason = self.reason?;
        let at = |path: &str| {
            if path.is_empty() {
                "(root)".to_owned()
            } else {
                path.to_owned()
            }
        };
        let key = |pred: &dyn Fn(&FreeFormKey) -> bool| {
            self.free_form_keys
                .iter()
                .find(|k| pred(k))
                .map(|k| format!("{} at {} ({})", k.key, at(&k.path), k.cause.as_str()))
        };
        let unresolved = || {
            self.unresolved
                .first()
                .map(|u| format!("{} at {}", u.cause, at(&u.path)))
        };
        match reason {
            Reason::UnboundedCommandInput => key(&|k| k.categories.command),
            Reason::UnboundedProcessInput => key(&|k| k.categories.program),
            Reason::UnboundedScriptPayload => key(&|k| k.categories.payload),
            Reason::ExecutorDescriptionWithBroadInput => {
                key(&|k| !k.categories.auxiliary || k.exec_tainted)
                    .or_else(unresolved)
                    .or_else(|| {
                        self.insufficiency
                            .as_ref()
                            .map(|i| format!("{} at {}", i.cause, at(&i.path)))
                    })
            }
            Reason::ExecutorIdentityWithInsufficientSchema => self
                .insufficiency
                .as_ref()
                .map(|i| {
                    let proof = match i.proof {
                        Proof::Boundedness => "boundedness",
                        Proof::Coverage => "coverage",
                    };
                    format!("{proof} proof fails at {}: {}", at(&i.path), i.cause)
                })
                .or_else(unresolved)
                .or_else(|| key(&|_| true)),
            Reason::MalformedSchema => self
                .malformed
                .first()
                .map(|u| format!("{} at {}", u.cause, at(&u.path))),
            Reason::CodeExecutionWithFreeInput => {
                key(&|k| crate::normalize::CODE_CHANNEL_KEYS.contains(&k.normalized.as_str()))
                    .map(|k| format!("code to run: {k}"))
            }
        }
        .or_else(|| {
            self.free_form_map_channels
                .first()
                .map(|p| format!("free-form map at {}", at(p)))
        })
    }
}
