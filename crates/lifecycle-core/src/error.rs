//! The crate's error type.

/// Everything that can go wrong deciding a transition. Each variant names the
/// offending input; none carries a value a caller marked secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// No policy for this entity type.
    #[error("unknown entity type {0:?}")]
    UnknownEntityType(String),
    /// A status outside the policy's vocabulary.
    #[error("unknown status {status:?} for entity type {entity_type}")]
    UnknownStatus {
        /// The entity type.
        entity_type: String,
        /// The status.
        status: String,
    },
    /// A new row must start in an initial status.
    #[error("{status:?} is not an initial status of {entity_type}")]
    NotInitialStatus {
        /// The entity type.
        entity_type: String,
        /// The status.
        status: String,
    },
    /// An actor type outside the closed set.
    #[error("unknown actor type {0:?}")]
    UnknownActorType(String),
    /// A reason code that is not registered.
    #[error("unknown reason code {0:?}")]
    UnknownReasonCode(String),
    /// A registered code whose prefix the policy does not allow.
    #[error("reason code {code:?} is not allowed for entity type {entity_type}")]
    ReasonNotAllowed {
        /// The code.
        code: String,
        /// The entity type.
        entity_type: String,
    },
    /// A patch or guard column the policy does not declare.
    #[error("column {column:?} is not a patch field of {entity_type}")]
    UnknownColumn {
        /// The entity type.
        entity_type: String,
        /// The column.
        column: String,
    },
    /// An override that does not meet the rules.
    #[error("invalid override: {0}")]
    InvalidOverride(String),
    /// A policy that fails validation.
    #[error("invalid policy {0}")]
    InvalidPolicy(String),
    /// Registration after sealing.
    #[error("policy registry is sealed; cannot register {0}")]
    RegistrySealed(String),
    /// The edge taken requires patch fields the command lacks.
    #[error("{entity_type} {from} -> {to} requires patch fields {missing:?}")]
    MissingPatchFields {
        /// The entity type.
        entity_type: String,
        /// From.
        from: String,
        /// To.
        to: String,
        /// The missing fields.
        missing: Vec<String>,
    },
    /// A guarded self-edge was requested with neither a covering guard nor
    /// an expected version: a caller-contract violation.
    #[error(
        "{entity_type} {status} -> {status} must be guarded on exactly {required:?} or carry an expected version"
    )]
    SelfEdgeUnguarded {
        /// The entity type.
        entity_type: String,
        /// The status.
        status: String,
        /// The required guard columns.
        required: Vec<String>,
    },
    /// An undeclared edge on a surface that raises instead of rejecting.
    #[error("undeclared transition {entity_type} {from} -> {to}")]
    UndeclaredEdge {
        /// The entity type.
        entity_type: String,
        /// From.
        from: String,
        /// To.
        to: String,
    },
    /// The row does not exist and the caller did not expect "no row yet".
    #[error("{entity_type} {entity_id:?} not found")]
    NotFound {
        /// The entity type.
        entity_type: String,
        /// The id.
        entity_id: String,
    },
}
