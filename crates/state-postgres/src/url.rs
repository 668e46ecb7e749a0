//! [`DbUrl`]: a connection string that never shows its password.

use std::fmt;

/// A PostgreSQL connection string (`postgres://user:pass@host/db` or
/// `host=/run/pg user=u password=p dbname=d`). Its `Display` and `Debug`
/// replace every password with `***`, so logging or printing it, or an
/// error naming it, never leaks the secret. [`DbUrl::expose`] is the only
/// way back to the raw text; it is used to connect and nowhere else.
#[derive(Clone, PartialEq, Eq)]
pub struct DbUrl(String);

impl DbUrl {
    /// Wraps a connection string.
    pub fn new(raw: impl Into<String>) -> Self {
        DbUrl(raw.into())
    }

    /// The raw string, password included: hand it to the driver only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the string is a URL (`postgres://` or `postgresql://`).
    pub fn is_url(&self) -> bool {
        self.0.starts_with("postgres://") || self.0.starts_with("postgresql://")
    }

    /// Whether a string names a PostgreSQL database (a URL, or key=value
    /// pairs), as opposed to a SQLite file path.
    pub fn looks_like_postgres(s: &str) -> bool {
        s.starts_with("postgres://")
            || s.starts_with("postgresql://")
            || (s.contains('=') && (s.contains("host=") || s.contains("dbname=")))
    }

    /// The redacted form.
    pub fn redacted(&self) -> String {
        let s = &self.0;
        let mut out = if self.is_url() {
            redact_userinfo(s)
        } else {
            s.clone()
        };
        out = redact_key(&out, "password");
        out
    }
}

/// `scheme://user:secret@host` -> `scheme://user:***@host`.
fn redact_userinfo(s: &str) -> String {
    let Some(start) = s.find("://").map(|i| i + 3) else {
        return s.to_owned();
    };
    let rest = &s[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let Some(at) = authority.rfind('@') else {
        return s.to_owned();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return s.to_owned();
    };
    format!(
        "{}{}:***{}",
        &s[..start],
        &userinfo[..colon],
        &s[start + at..]
    )
}

/// Replaces the value of every `key=` (key/value form or URL query) with
/// `***`, quoted values included.
fn redact_key(s: &str, key: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = find_key(rest, key) {
        let (head, tail) = rest.split_at(pos);
        out.push_str(head);
        let after_key = &tail[key.len()..];
        let eq = after_key.len() - after_key.trim_start().len();
        let after_eq = after_key.trim_start();
        // find_key guarantees the '='.
        let value = after_eq[1..].trim_start();
        let skipped = after_key.len() - value.len();
        out.push_str(&tail[..key.len() + eq]);
        out.push_str("=***");
        let consumed = if let Some(quoted) = value.strip_prefix('\'') {
            let mut escaped = false;
            let mut end = quoted.len();
            for (i, c) in quoted.char_indices() {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '\'' {
                    end = i + 1;
                    break;
                }
            }
            1 + end
        } else {
            value.find([' ', '\t', '\n', '&']).unwrap_or(value.len())
        };
        rest = &tail[key.len() + skipped + consumed.min(value.len())..];
    }
    out.push_str(rest);
    out
}

/// The byte offset of `key` used as a parameter name (at the start, or
/// after whitespace, `?` or `&`, and followed by optional spaces and `=`).
fn find_key(s: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(key).map(|i| i + from) {
        let before_ok = i == 0 || s[..i].ends_with([' ', '\t', '\n', '?', '&']);
        let after = s[i + key.len()..].trim_start();
        if before_ok && after.starts_with('=') {
            return Some(i);
        }
        from = i + key.len();
    }
    None
}

impl fmt::Display for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbUrl({:?})", self.redacted())
    }
}

impl From<&str> for DbUrl {
    fn from(s: &str) -> Self {
        DbUrl::new(s)
    }
}

impl From<String> for DbUrl {
    fn from(s: String) -> Self {
        DbUrl::new(s)
    }
}
