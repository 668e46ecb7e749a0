//! The `lionagi` compatibility check: a small PEP 440 subset over release
//! numbers.
//!
//! Supported: comma-separated clauses `>=`, `<=`, `>`, `<`, `==`, `!=`,
//! `~=`, with `==X.*` / `!=X.*` prefix wildcards. Versions are dotted
//! non-negative integers (a leading `v` is accepted); missing components
//! compare as zero. Anything else (pre-releases, local versions, `===`, an
//! empty specifier) does not parse, and a specifier that does not parse
//! admits nothing: the plugin is incompatible (fail closed).

/// The version of the original runtime this runtime is compatible with, as
/// seen by a manifest's `lionagi` specifier.
///
/// A bundle written for the original states e.g. `lionagi: ">=0.9"`; this
/// runtime implements the plugin formats of the original's 1.0 line, so
/// such a bundle is admitted and one stating `"<1.0"` is not.
pub const COMPAT_VERSION: &str = "1.0.0";

/// True when `version` satisfies every clause of `specifier`. Returns false
/// (never an error) when either does not parse.
pub fn specifier_admits(specifier: &str, version: &str) -> bool {
    let Some(version) = parse_version(version) else {
        return false;
    };
    let Some(clauses) = parse_specifier(specifier) else {
        return false;
    };
    clauses.iter().all(|clause| clause.admits(&version))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Ge,
    Le,
    Gt,
    Lt,
    Eq,
    Ne,
    Compatible,
}

#[derive(Debug)]
struct Clause {
    op: Op,
    release: Vec<u64>,
    wildcard: bool,
}

impl Clause {
    fn admits(&self, version: &[u64]) -> bool {
        use std::cmp::Ordering;
        let ord = compare(version, &self.release);
        match self.op {
            Op::Ge => ord != Ordering::Less,
            Op::Le => ord != Ordering::Greater,
            Op::Gt => ord == Ordering::Greater,
            Op::Lt => ord == Ordering::Less,
            Op::Eq if self.wildcard => has_prefix(version, &self.release),
            Op::Eq => ord == Ordering::Equal,
            Op::Ne if self.wildcard => !has_prefix(version, &self.release),
            Op::Ne => ord != Ordering::Equal,
            Op::Compatible => {
                // ~=X.Y.Z means >=X.Y.Z and ==X.Y.*
                let prefix = &self.release[..self.release.len() - 1];
                ord != Ordering::Less && has_prefix(version, prefix)
            }
        }
    }
}

fn parse_specifier(spec: &str) -> Option<Vec<Clause>> {
    let spec = spec.trim();
    if spec.is_empty() {
        return None;
    }
    spec.split(',').map(parse_clause).collect()
}

fn parse_clause(clause: &str) -> Option<Clause> {
    let clause = clause.trim();
    if clause.starts_with("===") {
        return None;
    }
    let (op, rest) = [
        ("~=", Op::Compatible),
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
    ]
    .into_iter()
    .find_map(|(text, op)| clause.strip_prefix(text).map(|rest| (op, rest.trim())))?;
    let (rest, wildcard) = match rest.strip_suffix(".*") {
        Some(prefix) => (prefix, true),
        None => (rest, false),
    };
    if wildcard && !matches!(op, Op::Eq | Op::Ne) {
        return None;
    }
    let release = parse_version(rest)?;
    if op == Op::Compatible && release.len() < 2 {
        return None;
    }
    Some(Clause {
        op,
        release,
        wildcard,
    })
}

fn parse_version(text: &str) -> Option<Vec<u64>> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    if text.is_empty() {
        return None;
    }
    text.split('.')
        .map(|part| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                part.parse().ok()
            }
        })
        .collect()
}

fn compare(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let len = a.len().max(b.len());
    for i in 0..len {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        match x.cmp(&y) {
            std::cmp::Ordering::Equal => continue,
            other => return other,
        }
    }
    std::cmp::Ordering::Equal
}

fn has_prefix(version: &[u64], prefix: &[u64]) -> bool {
    prefix
        .iter()
        .enumerate()
        .all(|(i, p)| version.get(i).copied().unwrap_or(0) == *p)
}
