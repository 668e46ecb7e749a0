//! The seam contract every `Provider` implementation must keep, as a
//! reusable check for the implementations' own tests.

use crate::event::{ErrorKind, StreamEvent};
use crate::provider::{AgentRequest, Provider, StreamParser, parse_stream};

/// Lines no parser may panic on or read as content.
const GARBAGE: &[&str] = &[
    "not json at all",
    "null",
    "[]",
    "42",
    "\"s\"",
    "{\"type\":5}",
];

/// Checks `provider` against the seam contract with `request` and one
/// recorded output `recorded`:
///
/// - the invocation builds; argv is non-empty, its program is non-empty and
///   no element holds a NUL byte;
/// - parsing `recorded` ends with exactly one terminal event or an
///   [`ErrorKind::Incomplete`] error, never both, never several terminals;
/// - the parser's resume id is the last session id it yielded;
/// - junk lines yield only error events or nothing.
pub fn check_provider_contract<P: Provider>(
    provider: &P,
    request: &AgentRequest,
    recorded: &str,
) -> Result<(), String> {
    let inv = provider
        .invocation(request)
        .map_err(|e| format!("invocation failed: {e}"))?;
    match inv.argv.first() {
        None => return Err("argv is empty".into()),
        Some(p) if p.is_empty() => return Err("program is empty".into()),
        Some(_) => {}
    }
    if inv.argv.iter().any(|a| a.contains('\0')) {
        return Err("an argv element holds a nul byte".into());
    }

    let mut parser = provider.parser();
    let events = parse_stream(&mut parser, recorded);
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    let incomplete = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                StreamEvent::Error {
                    kind: ErrorKind::Incomplete,
                    ..
                }
            )
        })
        .count();
    if terminals + incomplete != 1 {
        return Err(format!(
            "expected one terminal or incomplete event, got {terminals} terminal(s) and {incomplete} incomplete"
        ));
    }
    let last_session = events.iter().rev().find_map(|e| match e {
        StreamEvent::SessionId { id } => Some(id.as_str()),
        _ => None,
    });
    if last_session != parser.resume_id() {
        return Err("resume id differs from the last session id event".into());
    }

    let mut fresh = provider.parser();
    for line in GARBAGE {
        if fresh
            .parse_line(line)
            .iter()
            .any(|e| !matches!(e, StreamEvent::Error { .. }))
        {
            return Err(format!("junk line {line:?} produced content"));
        }
    }
    Ok(())
}
