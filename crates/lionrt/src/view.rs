//! Shared pieces of the read-side verbs: opening a SQLite store read-only,
//! resolving id prefixes on any store, parsing `--since` ages and rendering recorded
//! stream events as one line each (also used by `run`'s live progress).

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use lifecycle_core::{IdMatch, StateReader};
use serde_json::Value;
use state_sqlite::{Conn, ReadOnlyEngine, StoreKind};

/// Opens the store read-only (no write or PRAGMA reaches the file).
pub(crate) fn open_read(db: &Path) -> Result<(ReadOnlyEngine, Conn)> {
    // A server URL never reaches a path or a message (it may hold a
    // password).
    if crate::dbpath::is_url(db) {
        bail!("this command reads a SQLite file, and --db names a PostgreSQL server");
    }
    match state_sqlite::recognise(db)? {
        StoreKind::Missing => bail!(
            "no database at {} (give --db, set LIONRT_DB, or run `lionrt run` / `lionrt state init` first)",
            db.display()
        ),
        StoreKind::Empty => bail!(
            "{} is an empty file, not a lionrt store yet (`lionrt run` or `lionrt state init` makes it one)",
            db.display()
        ),
        StoreKind::Lionrt { .. } | StoreKind::LionrtNewer { .. } => {}
        kind => bail!(
            "{} is {}: lionrt does not read it in place",
            db.display(),
            kind.describe()
        ),
    }
    let engine = ReadOnlyEngine::open(db, Duration::from_secs(5))?;
    let conn = engine.conn()?;
    Ok((engine, conn))
}

/// Resolves an id or a unique id prefix of `entity_type` on any store:
/// `Some(id)` for one match (an exact id always wins), `None` for none; a
/// prefix naming several ids is refused, naming some of them.
pub(crate) fn resolve<R: StateReader>(
    reader: &R,
    entity_type: &str,
    prefix: &str,
) -> Result<Option<String>> {
    match reader.match_id(entity_type, prefix)? {
        IdMatch::One(id) => Ok(Some(id)),
        IdMatch::Several(candidates) => bail!(
            "{prefix:?} matches several {entity_type} ids ({}); give more characters",
            candidates.join(", ")
        ),
        _ => Ok(None),
    }
}

/// [`resolve`], refusing a prefix that names nothing.
pub(crate) fn resolve_one<R: StateReader>(
    reader: &R,
    entity_type: &str,
    prefix: &str,
) -> Result<String> {
    resolve(reader, entity_type, prefix)?
        .ok_or_else(|| anyhow::anyhow!("no {entity_type} id starts with {prefix:?}"))
}

/// Parses an age such as `90s`, `30m`, `2h`, `7d` or `1w`.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not an age like 90s, 30m, 2h, 7d or 1w"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" | "" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?} (s, m, h, d or w)"
            ));
        }
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// Microseconds since the epoch `age` ago.
pub(crate) fn micros_ago(age: Duration) -> i64 {
    state_sqlite::now_micros().saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX))
}

/// A short human duration: `42s`, `3m05s`, `2h07m`, `3d04h`.
pub(crate) fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// How long ago `micros` was, shortly.
pub(crate) fn ago(micros: i64) -> String {
    let delta = state_sqlite::now_micros().saturating_sub(micros).max(0);
    short_duration(Duration::from_micros(u64::try_from(delta).unwrap_or(0)))
}

/// Cuts `text` to one line of at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max {
        flat.to_owned()
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// One recorded or streamed event (a serialized `StreamEvent`) as a label
/// and a line of text.
pub(crate) fn describe(event: &Value) -> (String, String) {
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("event")
        .to_owned();
    let s = |k: &str| {
        event
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let text = match kind.as_str() {
        "text" | "thinking" => s("text"),
        "session_id" => format!("resume id {}", s("id")),
        "tool_use" => format!(
            "{} {}",
            s("name"),
            event.get("input").map(Value::to_string).unwrap_or_default()
        ),
        "tool_result" => {
            let content = match event.get("content") {
                Some(Value::String(t)) => t.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
            format!("{}{content}", if failed { "(failed) " } else { "" })
        }
        "usage" => {
            let n = |k: &str| event.get(k).and_then(Value::as_u64).unwrap_or(0);
            format!("{} in, {} out", n("input_tokens"), n("output_tokens"))
        }
        "error" => format!("{}: {}", s("kind"), s("message")),
        "final" => {
            let failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
            let detail = if failed { s("error") } else { s("text") };
            format!("{} {detail}", if failed { "failed:" } else { "done:" })
        }
        _ => {
            let mut rest = event.clone();
            if let Some(map) = rest.as_object_mut() {
                map.remove("type");
            }
            if rest.as_object().is_some_and(serde_json::Map::is_empty) {
                String::new()
            } else {
                rest.to_string()
            }
        }
    };
    (kind, text)
}

/// Whether to colour a stream: only a terminal, never with `NO_COLOR` set
/// (to anything non-empty, per no-color.org).
pub(crate) fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether stdout is a terminal that may be coloured.
pub(crate) fn stdout_colour() -> bool {
    colour(std::io::stdout().is_terminal())
}

/// Wraps `text` in an SGR colour when `on`.
pub(crate) fn paint(on: bool, sgr: &str, text: &str) -> String {
    if on {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// The SGR colour of a session status.
pub(crate) fn status_sgr(status: &str) -> &'static str {
    match status {
        "completed" | "completed_empty" => "32",
        "failed" | "timed_out" => "31",
        "cancelled" | "stopped" => "33",
        _ => "36",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_units_and_refuse_junk() {
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert!(parse_age("2x").is_err());
        assert!(parse_age("h").is_err());
        assert!(parse_age("99999999999999999999w").is_err());
    }

    #[test]
    fn events_render_as_one_line() {
        let (k, t) = describe(
            &serde_json::json!({"type": "tool_use", "id": "1", "name": "Bash", "input": {"cmd": "ls"}}),
        );
        assert_eq!(
            (k.as_str(), t.as_str()),
            ("tool_use", r#"Bash {"cmd":"ls"}"#)
        );
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
