//! The crate's error type.

use std::path::PathBuf;
use std::time::Duration;

use mcp_admission::Reason;

/// Everything the pool can refuse or fail at. Messages name the server
/// (and tool) at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config file does not exist.
    #[error("mcp config file not found: {}", path.display())]
    ConfigNotFound {
        /// The path asked for.
        path: PathBuf,
    },
    /// The config file could not be read.
    #[error("cannot read mcp config file {}", path.display())]
    ConfigRead {
        /// The path asked for.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid JSON, or has the wrong shape.
    #[error("invalid mcp config {}: {detail}", path.display())]
    ConfigInvalid {
        /// The path asked for.
        path: PathBuf,
        /// What is wrong (never quotes a value).
        detail: String,
    },
    /// No server of that name is configured.
    #[error("no mcp server named '{server}' is configured")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server's config entry cannot be used.
    #[error("mcp server '{server}' has an invalid config: {detail}")]
    ServerConfigInvalid {
        /// The server.
        server: String,
        /// What is wrong.
        detail: String,
    },
    /// Transport authorization (the security config) refused the server.
    #[error("mcp server '{server}' is not authorized: {detail}")]
    TransportDenied {
        /// The server.
        server: String,
        /// Which rule refused it.
        detail: String,
    },
    /// The server's transport is not built into this binary.
    #[error("mcp server '{server}' uses an unsupported transport: {detail}")]
    TransportUnsupported {
        /// The server.
        server: String,
        /// Which transport.
        detail: String,
    },
    /// The server process could not be started.
    #[error("cannot start mcp server '{server}'")]
    Spawn {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: cli_supervisor::Error,
    },
    /// A step did not finish in time (the server was ended).
    #[error("mcp server '{server}' did not answer {phase} within {timeout:?}")]
    Timeout {
        /// The server.
        server: String,
        /// `initialize`, `tools/list` or `tools/call`.
        phase: &'static str,
        /// The limit.
        timeout: Duration,
    },
    /// The server broke the protocol: a line that is not a JSON-RPC
    /// message, or a message over the size limit. The connection is closed.
    #[error("mcp server '{server}' broke the protocol during {phase}: {detail}")]
    Protocol {
        /// The server.
        server: String,
        /// What the client was doing.
        phase: &'static str,
        /// What arrived (never the message itself).
        detail: String,
    },
    /// The connection ended (the server exited or closed stdout).
    #[error(
        "mcp server '{server}' closed the connection during {phase}{}",
        stderr_suffix(stderr_tail)
    )]
    Disconnected {
        /// The server.
        server: String,
        /// What the client was doing.
        phase: &'static str,
        /// The last lines the server wrote to stderr, if any.
        stderr_tail: String,
    },
    /// An HTTP server could not be reached: nothing listens at the URL, the
    /// connection failed, or the server answered with an HTTP error.
    #[error("mcp server '{server}' could not be reached over http during {phase}: {detail}")]
    Unreachable {
        /// The server.
        server: String,
        /// What the client was doing.
        phase: &'static str,
        /// The HTTP client's description, causes included (never a header
        /// value).
        detail: String,
    },
    /// TLS to an `https` server failed, and nothing was sent to it in the
    /// clear instead: its certificate was refused (issuer not trusted,
    /// issued for another host, expired), the handshake failed, or the
    /// client's TLS could not be set up (an extra root that is not a PEM
    /// certificate, no root at all).
    #[error("mcp server '{server}' failed tls during {phase}: {reason}: {detail}")]
    Tls {
        /// The server.
        server: String,
        /// What the client was doing.
        phase: &'static str,
        /// What kind of failure.
        reason: TlsFailure,
        /// rustls's description (or what in the setup is wrong).
        detail: String,
    },
    /// One `tools/list` (all its pages) went past a listing limit of
    /// [`PoolConfig`](crate::PoolConfig): more pages, tools or descriptor
    /// bytes than allowed. Nothing of that listing is registered and the
    /// connection is closed (the server's group ended).
    #[error(
        "mcp server '{server}' listed more than {limit} {what} in one tools/list (the listing \
         was stopped and nothing of it registered)"
    )]
    ListingTooLarge {
        /// The server.
        server: String,
        /// Which limit.
        what: ListingLimit,
        /// Its value.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error, or the client side of
    /// rmcp failed otherwise.
    #[error("mcp server '{server}' failed {phase}: {detail}")]
    Rpc {
        /// The server.
        server: String,
        /// What the client was doing.
        phase: &'static str,
        /// rmcp's description.
        detail: String,
    },
    /// The tool is not in the server's current listing.
    #[error("mcp server '{server}' has no tool '{tool}'")]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The tool was listed and refused at registration; it cannot be called.
    #[error("mcp tool '{tool}' of server '{server}' was not admitted: {reason}")]
    ToolNotAdmitted {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Why it was refused.
        reason: DenialReason,
    },
    /// The arguments do not match the tool's input schema.
    #[error("invalid arguments for mcp tool '{tool}' of server '{server}' at '{path}': {detail}")]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The JSON pointer of the offending value (`""` is the whole
        /// argument object).
        path: String,
        /// What the schema requires (never the value itself).
        detail: String,
    },
    /// The call gate refused the call.
    #[error("{}", gate_message(server, tool, reason, *errored))]
    GateDenied {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The gate's reason.
        reason: String,
        /// The gate could not answer (a control was unavailable or failed),
        /// as opposed to answering no.
        errored: bool,
    },
}

/// Which listing limit a server went past ([`Error::ListingTooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListingLimit {
    /// `tools/list` pages ([`PoolConfig::max_list_pages`](crate::PoolConfig::max_list_pages)).
    Pages,
    /// Tools over all pages ([`PoolConfig::max_listed_tools`](crate::PoolConfig::max_listed_tools)).
    Tools,
    /// Bytes of the listed descriptors, as JSON
    /// ([`PoolConfig::max_listed_bytes`](crate::PoolConfig::max_listed_bytes)).
    Bytes,
}

impl ListingLimit {
    /// A stable kebab-case code: `pages`, `tools` or `bytes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pages => "pages",
            Self::Tools => "tools",
            Self::Bytes => "bytes",
        }
    }
}

impl std::fmt::Display for ListingLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pages => "pages",
            Self::Tools => "tools",
            Self::Bytes => "bytes of tool descriptors",
        })
    }
}

/// Why TLS to a server failed ([`Error::Tls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The certificate does not chain to a trusted root (the platform's or
    /// an extra one), or its signature does not verify.
    UntrustedIssuer,
    /// The certificate is valid, but not for the host in the url.
    WrongHost,
    /// The certificate has expired or is not yet valid.
    Expired,
    /// The certificate was refused for another reason (revoked, malformed,
    /// unsupported algorithm).
    CertificateRejected,
    /// The handshake failed otherwise (protocol error, alert from the
    /// server, no common parameters).
    Handshake,
    /// The client's TLS could not be set up from the configuration.
    Setup,
}

impl TlsFailure {
    /// A stable kebab-case code.
    pub fn code(self) -> &'static str {
        match self {
            Self::UntrustedIssuer => "untrusted-issuer",
            Self::WrongHost => "wrong-host",
            Self::Expired => "expired",
            Self::CertificateRejected => "certificate-rejected",
            Self::Handshake => "handshake",
            Self::Setup => "setup",
        }
    }

    /// The kind of a rustls error.
    pub(crate) fn of(error: &rustls::Error) -> Self {
        use rustls::CertificateError as C;
        match error {
            rustls::Error::InvalidCertificate(cert) => match cert {
                C::UnknownIssuer | C::BadSignature => Self::UntrustedIssuer,
                C::NotValidForName | C::NotValidForNameContext { .. } => Self::WrongHost,
                C::Expired
                | C::ExpiredContext { .. }
                | C::NotValidYet
                | C::NotValidYetContext { .. } => Self::Expired,
                _ => Self::CertificateRejected,
            },
            _ => Self::Handshake,
        }
    }
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            Self::UntrustedIssuer => "certificate not issued by a trusted root",
            Self::WrongHost => "certificate not valid for this host",
            Self::Expired => "certificate expired or not yet valid",
            Self::CertificateRejected => "certificate rejected",
            Self::Handshake => "handshake failed",
            Self::Setup => "tls setup failed",
        };
        write!(f, "{text} [{}]", self.code())
    }
}

/// Why a listed tool was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenialReason {
    /// The admission gate found a generic executor surface.
    Admission(Reason),
    /// The admission check itself failed (a bug): nothing is admitted on
    /// its account.
    CheckFailed,
    /// The server listed the name more than once.
    DuplicateName,
}

impl DenialReason {
    /// A stable kebab-case code: the admission reason's, or
    /// `admission-check-failed`, or `duplicate-tool-name`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Admission(reason) => reason.as_str(),
            Self::CheckFailed => "admission-check-failed",
            Self::DuplicateName => "duplicate-tool-name",
        }
    }
}

impl std::fmt::Display for DenialReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Admission(reason) => {
                write!(f, "generic executor surface detected [{}]", reason.as_str())
            }
            Self::CheckFailed => f.write_str("the admission check failed [admission-check-failed]"),
            Self::DuplicateName => {
                f.write_str("the server listed the name more than once [duplicate-tool-name]")
            }
        }
    }
}

fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {tail}")
    }
}

fn gate_message(server: &str, tool: &str, reason: &str, errored: bool) -> String {
    if errored {
        format!(
            "call to mcp tool '{tool}' of server '{server}' refused: a control could not answer: {reason}"
        )
    } else {
        format!("call to mcp tool '{tool}' of server '{server}' denied: {reason}")
    }
}

impl Error {
    /// Whether the error means the server could not be reached or audited
    /// (as opposed to a tool or a call being refused).
    pub fn is_server_failure(&self) -> bool {
        !matches!(
            self,
            Self::UnknownTool { .. }
                | Self::ToolNotAdmitted { .. }
                | Self::InvalidArguments { .. }
                | Self::GateDenied { .. }
        )
    }
}
