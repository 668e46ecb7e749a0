//! The path guard: confines path arguments to allowed roots, refusing
//! symlinks and protected names on the way.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::call::ToolCall;
use crate::control::{Control, json_kind};
use crate::error::Error;
use crate::result::GateResult;

/// Names refused anywhere in a path unless configured otherwise: version
/// control internals, credentials and keys (a superset of the original's
/// protected names, which are `.env`, `.netrc`, `.htpasswd` and the
/// `id_rsa`/`id_ecdsa`/`id_ed25519` keys) and the runtime's own
/// configuration.
pub const DEFAULT_PROTECTED_BASENAMES: &[&str] = &[
    ".git",
    ".env",
    ".ssh",
    ".gnupg",
    ".aws",
    ".netrc",
    ".htpasswd",
    ".pgpass",
    ".git-credentials",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".mcp.json",
    ".lionagi",
];

/// Argument keys that carry paths, besides any key ending in `_path`,
/// `_paths`, `_file`, `_files`, `_dir` or `_directory`.
pub const DEFAULT_PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "directory",
    "cwd",
    "workdir",
    "root",
    "target",
    "source",
    "src",
    "dest",
    "destination",
    "output",
];

/// What the path guard is configured with.
#[derive(Debug, Clone)]
pub struct PathGuardConfig {
    /// The allowed roots; relative paths are formed against the first.
    pub roots: Vec<PathBuf>,
    /// Names refused as any component of a path (compared ignoring ASCII
    /// case, so a case-insensitive filesystem cannot be used to slip past).
    pub protected_basenames: Vec<String>,
    /// Argument keys (compared ignoring ASCII case) whose values are paths.
    pub path_keys: Vec<String>,
}

impl PathGuardConfig {
    /// The defaults with these roots.
    pub fn new(roots: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        Self {
            roots: roots.into_iter().map(Into::into).collect(),
            protected_basenames: DEFAULT_PROTECTED_BASENAMES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            path_keys: DEFAULT_PATH_KEYS.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathDenial {
    /// A component of the path is a symbolic link.
    Symlink {
        /// The path as given.
        path: String,
        /// The link that was met.
        link: PathBuf,
    },
    /// A component of the path is a protected name.
    Protected {
        /// The path as given.
        path: String,
        /// The protected name it carries.
        name: String,
    },
    /// The resolved location is under none of the roots.
    OutsideRoots {
        /// The path as given.
        path: String,
        /// Where it resolves.
        resolved: PathBuf,
    },
    /// The path cannot be judged (empty, NUL byte, not a string, or a
    /// component that could not be inspected).
    Invalid {
        /// The path as given (or a description of the value).
        path: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for PathDenial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Symlink { path, link } => {
                write!(
                    f,
                    "path {path:?} goes through the symbolic link {}",
                    link.display()
                )
            }
            Self::Protected { path, name } => {
                write!(f, "path {path:?} names the protected {name:?}")
            }
            Self::OutsideRoots { path, resolved } => write!(
                f,
                "path {path:?} resolves to {} outside every allowed root",
                resolved.display()
            ),
            Self::Invalid { path, reason } => write!(f, "path {path:?} cannot be judged: {reason}"),
        }
    }
}

/// Confines the path arguments of a call to the allowed roots.
///
/// For each path argument (a string, or an array of strings, under a path
/// key at any depth): a protected name as any component is refused; the path
/// (relative ones joined to the first root) is walked component by
/// component with `lstat`, and any symbolic link on the way is refused, even
/// one pointing back inside a root; `..` pops the real directory reached so
/// far, so it cannot climb out through a link; components past the first
/// missing one are taken lexically. The resolved location is accepted when
/// it falls under any root (GATE-013), otherwise refused (GATE-014). The
/// symlink and protected-name checks do not depend on which root is tried,
/// so they fail identically against every root and are the reason reported
/// over the generic outside-roots denial (GATE-015).
///
/// Roots are resolved (canonicalised) once at construction; a root given
/// through a symlink is reached by its real path, and a call that spells the
/// link is refused.
///
/// Spellings a tool might expand into something else are refused: a leading
/// `~`, any `$` or backquote, a URI scheme (`file:///etc/passwd`).
///
/// Stated limit (GATE-016): validation is check-time only. The guard opens
/// and holds nothing; a file swapped for a symlink between the check and the
/// tool's own open is not detected. A hard link (or bind mount) inside a root
/// that reaches a file elsewhere is indistinguishable from the file itself
/// and is not detected either.
#[derive(Debug, Clone)]
pub struct PathGuard {
    roots: Vec<PathBuf>,
    protected: Vec<String>,
    keys: Vec<String>,
}

const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 10_000;

impl PathGuard {
    /// Resolves the roots; fails on an empty or unresolvable root list.
    pub fn new(config: PathGuardConfig) -> Result<Self, Error> {
        if config.roots.is_empty() {
            return Err(Error::NoRoots);
        }
        let roots = config
            .roots
            .iter()
            .map(|r| {
                std::fs::canonicalize(r).map_err(|source| Error::InvalidRoot {
                    path: r.clone(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            roots,
            protected: config
                .protected_basenames
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
            keys: config
                .path_keys
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
        })
    }

    /// The resolved roots, first one first.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Judges one path: its resolved location, or why it is refused.
    pub fn check_path(&self, path: &str) -> Result<PathBuf, PathDenial> {
        let invalid = |reason: &str| PathDenial::Invalid {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        if path.is_empty() {
            return Err(invalid("empty path"));
        }
        if path.contains('\0') {
            return Err(invalid("NUL byte in path"));
        }
        // A tool that expands `~`, `$VAR` or a `file:` URI would open
        // something other than what is judged here: refuse the spelling.
        if path.starts_with('~') {
            return Err(invalid(
                "home-relative path (~) is not expanded by the guard",
            ));
        }
        if path.contains('$') || path.contains('`') {
            return Err(invalid("path carries a shell expansion ($ or `)"));
        }
        if has_uri_scheme(path) {
            return Err(invalid("a URI, not a path"));
        }
        for component in Path::new(path).components() {
            if let Component::Normal(name) = component {
                let name = name.to_string_lossy();
                if self.protected.iter().any(|p| name.eq_ignore_ascii_case(p)) {
                    return Err(PathDenial::Protected {
                        path: path.to_owned(),
                        name: name.into_owned(),
                    });
                }
            }
        }
        let candidate = self.roots[0].join(path);
        // A root is canonical, so a walk may start from it instead of `/`
        // when the candidate lexically begins with it.
        let start = self.roots.iter().find(|r| candidate.starts_with(r));
        let resolved =
            walk_without_links(&candidate, start.map(PathBuf::as_path)).map_err(|e| match e {
                Walk::Link(link) => PathDenial::Symlink {
                    path: path.to_owned(),
                    link,
                },
                Walk::Io(at, e) => invalid(&format!("cannot inspect {}: {e}", at.display())),
            })?;
        if self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(PathDenial::OutsideRoots {
                path: path.to_owned(),
                resolved,
            })
        }
    }

    /// The first refused path argument of `arguments`, if any.
    pub fn check_arguments(&self, arguments: &Value) -> Result<(), PathDenial> {
        let mut nodes = 0;
        self.walk(arguments, 0, &mut nodes)
    }

    fn is_path_key(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k.eq_ignore_ascii_case(key))
            || ["_path", "_paths", "_file", "_files", "_dir", "_directory"]
                .iter()
                .any(|suffix| {
                    key.len() >= suffix.len()
                        && key.is_char_boundary(key.len() - suffix.len())
                        && key[key.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
                })
    }

    fn walk(&self, value: &Value, depth: usize, nodes: &mut usize) -> Result<(), PathDenial> {
        *nodes += 1;
        if depth > MAX_DEPTH || *nodes > MAX_NODES {
            return Err(PathDenial::Invalid {
                path: "<arguments>".to_owned(),
                reason: "arguments too deep or too large to inspect".to_owned(),
            });
        }
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    if self.is_path_key(key) {
                        self.check_value(key, item)?;
                    }
                    self.walk(item, depth + 1, nodes)?;
                }
                Ok(())
            }
            Value::Array(items) => items
                .iter()
                .try_for_each(|i| self.walk(i, depth + 1, nodes)),
            _ => Ok(()),
        }
    }

    fn check_value(&self, key: &str, value: &Value) -> Result<(), PathDenial> {
        match value {
            Value::Null => Ok(()),
            Value::String(s) => self.check_path(s).map(drop),
            Value::Array(items) => items.iter().try_for_each(|item| match item {
                Value::String(s) => self.check_path(s).map(drop),
                other => Err(not_a_path(key, other)),
            }),
            // An object under a path key is walked for nested path keys.
            Value::Object(_) => Ok(()),
            other => Err(not_a_path(key, other)),
        }
    }
}

/// `file:…`, `scheme://…`: a URI scheme (letters, digits, `+ - .`) before
/// the first `:`, which no plain relative path component needs.
fn has_uri_scheme(path: &str) -> bool {
    let Some((scheme, _)) = path.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn not_a_path(key: &str, value: &Value) -> PathDenial {
    PathDenial::Invalid {
        path: format!("<{key}>"),
        reason: format!(
            "path argument {key:?} is {}, not a string",
            json_kind(value)
        ),
    }
}

enum Walk {
    Link(PathBuf),
    Io(PathBuf, io::Error),
}

/// Resolves an absolute path without following any symbolic link (from
/// `known_real`, a canonical prefix of it, when given): each
/// existing component is `lstat`ed, a link is an error, `..` pops the real
/// directory reached so far. Below the first missing component the rest is
/// lexical (nothing below a missing directory exists yet); a `..` that climbs
/// back above it resumes the `lstat`s, since a tool that creates the missing
/// directory first would then follow whatever sits past the `..`.
fn walk_without_links(candidate: &Path, known_real: Option<&Path>) -> Result<PathBuf, Walk> {
    let (mut current, rest) =
        match known_real.and_then(|r| Some((r, candidate.strip_prefix(r).ok()?))) {
            Some((root, rest)) => (root.to_path_buf(), rest),
            None => (PathBuf::from("/"), candidate),
        };
    let mut depth = current.components().count().saturating_sub(1);
    let mut missing_from: Option<usize> = None;
    for component in rest.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if current.pop() {
                    depth -= 1;
                }
                if missing_from.is_some_and(|m| depth < m) {
                    missing_from = None;
                }
            }
            Component::Normal(name) => {
                current.push(name);
                depth += 1;
                if missing_from.is_some() {
                    continue;
                }
                match std::fs::symlink_metadata(&current) {
                    Ok(meta) if meta.file_type().is_symlink() => return Err(Walk::Link(current)),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => missing_from = Some(depth),
                    Err(e) => return Err(Walk::Io(current, e)),
                }
            }
        }
    }
    Ok(current)
}

impl Control for PathGuard {
    fn name(&self) -> &str {
        "path-guard"
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        match self.check_arguments(&call.arguments) {
            Ok(()) => GateResult::allow(),
            Err(denial) => GateResult::deny(denial.to_string()),
        }
    }
}
