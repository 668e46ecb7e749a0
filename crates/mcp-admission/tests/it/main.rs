//! Integration tests for mcp-admission: public cases, ADM contracts, properties, batch.

mod batch;
mod cases;
mod contracts;
mod differences;
mod fail_closed;
mod oracle_classes;
mod props;
#[cfg(feature = "regex")]
mod python_re;
mod strict;
mod worst;

use mcp_admission::{AdmissionReport, Reason, explain_tool_admission, validate_tool_admission};
use serde_json::Value;

/// The verdict as an optional reason code.
pub(crate) fn verdict(name: &str, schema: &Value, description: Option<&str>) -> Option<Reason> {
    validate_tool_admission(name, Some(schema), description)
        .err()
        .map(|e| e.reason())
}

/// The full report.
pub(crate) fn report(name: &str, schema: &Value, description: Option<&str>) -> AdmissionReport {
    explain_tool_admission(name, Some(schema), description)
}

/// Asserts a verdict: `None` admits, `Some(code)` denies with that code.
#[track_caller]
pub(crate) fn check(name: &str, schema: Value, description: Option<&str>, expect: Option<&str>) {
    let got = verdict(name, &schema, description);
    assert_eq!(
        got.map(Reason::as_str),
        expect,
        "name {name:?}, description {description:?}, schema {schema}\nreport: {:#?}",
        report(name, &schema, description)
    );
}
