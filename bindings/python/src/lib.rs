//! Python bindings of `mcp-admission`, importable as `lionrt_admission`.
//!
//! `validate_mcp_tool_admission(name, input_schema, description=None)`
//! returns `None` or raises `PermissionError` with the original's message;
//! `explain(...)` returns the structured report as a dict. Schemas are
//! converted from Python values (dict, list, tuple, str, int, float, bool,
//! None); any other type raises `TypeError`, which a host treats as a
//! refusal, as it treats the original's exceptions. Both take
//! `policy="original"` (the default: lionagi 0.36.0's verdicts) or
//! `policy="strict"` (also denies a tool that says it runs code and leaves
//! the code free, with `code-execution-with-free-input`).

use mcp_admission::{
    AdmissionDenied, AdmissionReport, Limits, Policy, Reason, explain_tool_admission_under,
};
use pyo3::exceptions::{PyPermissionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Python nesting converted; deeper values become `None`, which is no
/// schema and fails closed where a schema belongs (the gate itself never
/// looks past its depth cap of 12).
const MAX_CONVERTED_DEPTH: usize = 128;

fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if obj.is_none() || depth > MAX_CONVERTED_DEPTH {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = match k.downcast::<PyString>() {
                Ok(s) => s.to_cow()?.into_owned(),
                Err(_) => k.str()?.to_cow()?.into_owned(),
            };
            map.insert(key, to_value(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        return l
            .iter()
            .map(|v| to_value(&v, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.downcast::<PyTuple>() {
        return t
            .iter()
            .map(|v| to_value(&v, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if obj.downcast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        // An int no 64 bits hold: the gate reads no number's value, only
        // its JSON type, so the nearest one judges the same.
        let negative = obj.lt(0)?;
        return Ok(if negative {
            Value::from(i64::MIN)
        } else {
            Value::from(u64::MAX)
        });
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        // `inf`, `-inf` and `nan` (JSON text `1e400` reads as `inf`) stay
        // numbers, as they are to the original.
        let v = f.value();
        let finite = if v.is_nan() {
            0.0
        } else {
            v.clamp(f64::MIN, f64::MAX)
        };
        return Ok(Number::from_f64(finite).map_or(Value::Null, Value::Number));
    }
    Err(PyTypeError::new_err(format!(
        "input_schema holds a value of unsupported type {}",
        obj.get_type().name()?
    )))
}

/// The judged name (a non-string name normalises to the empty string, as in
/// the original) and its Python repr for the message.
fn name_and_repr(name: &Bound<'_, PyAny>) -> PyResult<(String, Option<String>)> {
    match name.downcast::<PyString>() {
        Ok(s) => Ok((s.to_cow()?.into_owned(), None)),
        Err(_) => Ok((String::new(), Some(name.repr()?.to_cow()?.into_owned()))),
    }
}

/// The policy named by the `policy` keyword (`"original"`, the default, or `"strict"`).
fn policy_of(policy: &str) -> PyResult<Policy> {
    Policy::from_name(policy).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown admission policy {policy:?} (expected 'original' or 'strict')"
        ))
    })
}

fn judge(
    name: &Bound<'_, PyAny>,
    input_schema: Option<&Bound<'_, PyAny>>,
    description: Option<&Bound<'_, PyAny>>,
    policy: &str,
) -> PyResult<(AdmissionReport, String, Option<String>)> {
    let policy = policy_of(policy)?;
    let (name, repr) = name_and_repr(name)?;
    let schema = match input_schema {
        Some(s) => Some(to_value(s, 0)?),
        None => None,
    };
    // A description that is not a string is ignored, as in the original.
    let description = match description {
        Some(d) => match d.downcast::<PyString>() {
            Ok(s) => Some(s.to_cow()?.into_owned()),
            Err(_) => None,
        },
        None => None,
    };
    let report = explain_tool_admission_under(
        policy,
        Limits::default(),
        &name,
        schema.as_ref(),
        description.as_deref(),
    );
    Ok((report, name, repr))
}

fn message(name: &str, repr: Option<&str>, reason: Reason) -> String {
    let text = AdmissionDenied::new(name, reason).to_string();
    match repr {
        Some(repr) => text.replacen("''", repr, 1),
        None => text,
    }
}

/// Returns None when the tool may be registered; raises PermissionError
/// (with the original's message and bracketed reason code) otherwise.
/// `policy="strict"` adds the code-execution rule; the default,
/// `"original"`, keeps lionagi 0.36.0's verdicts.
#[pyfunction]
#[pyo3(signature = (name, input_schema, description=None, *, policy="original"))]
fn validate_mcp_tool_admission(
    name: &Bound<'_, PyAny>,
    input_schema: Option<&Bound<'_, PyAny>>,
    description: Option<&Bound<'_, PyAny>>,
    policy: &str,
) -> PyResult<()> {
    let (report, name, repr) = judge(name, input_schema, description, policy)?;
    match report.reason {
        None => Ok(()),
        Some(reason) => Err(PyPermissionError::new_err(message(
            &name,
            repr.as_deref(),
            reason,
        ))),
    }
}

/// The structured report of a verdict, as a dict.
#[pyfunction]
#[pyo3(signature = (name, input_schema, description=None, *, policy="original"))]
fn explain<'py>(
    py: Python<'py>,
    name: &Bound<'py, PyAny>,
    input_schema: Option<&Bound<'py, PyAny>>,
    description: Option<&Bound<'py, PyAny>>,
    policy: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (report, name, repr) = judge(name, input_schema, description, policy)?;
    let d = PyDict::new(py);
    d.set_item("admitted", report.admitted())?;
    d.set_item("reason", report.reason.map(Reason::as_str))?;
    d.set_item(
        "message",
        report.reason.map(|r| message(&name, repr.as_deref(), r)),
    )?;
    d.set_item("detail", report.detail())?;
    d.set_item("summary", report.summary())?;
    d.set_item("normalized_name", &report.normalized_name)?;
    d.set_item("strong_executor_name", report.strong_executor_name)?;
    d.set_item(
        "description_signals_execution",
        report.description_signals_execution,
    )?;
    let keys = PyList::empty(py);
    for k in &report.free_form_keys {
        let kd = PyDict::new(py);
        kd.set_item("key", &k.key)?;
        kd.set_item("normalized", &k.normalized)?;
        kd.set_item("path", &k.path)?;
        kd.set_item("cause", k.cause.as_str())?;
        kd.set_item("identifier_like", k.identifier_like)?;
        kd.set_item("exec_tainted", k.exec_tainted)?;
        let c = &k.categories;
        let categories: Vec<&str> = [
            (c.command, "command"),
            (c.program, "program"),
            (c.argument, "argument"),
            (c.payload, "payload"),
            (c.selector, "selector"),
            (c.auxiliary, "auxiliary"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect();
        kd.set_item("categories", categories)?;
        keys.append(kd)?;
    }
    d.set_item("free_form_keys", keys)?;
    d.set_item("free_form_map_channels", &report.free_form_map_channels)?;
    d.set_item("selector_key_present", report.selector_key_present)?;
    let places = |list: &[mcp_admission::Unresolved]| -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for u in list {
            let ud = PyDict::new(py);
            ud.set_item("path", &u.path)?;
            ud.set_item("cause", u.cause.to_string())?;
            out.append(ud)?;
        }
        Ok(out)
    };
    d.set_item("unresolved", places(&report.unresolved)?)?;
    d.set_item("malformed", places(&report.malformed)?)?;
    d.set_item("walker_exhausted", report.walker_exhausted)?;
    match &report.insufficiency {
        Some(i) => {
            let idict = PyDict::new(py);
            idict.set_item(
                "proof",
                match i.proof {
                    mcp_admission::Proof::Boundedness => "boundedness",
                    mcp_admission::Proof::Coverage => "coverage",
                },
            )?;
            idict.set_item("path", &i.path)?;
            idict.set_item("cause", i.cause.to_string())?;
            d.set_item("insufficiency", idict)?;
        }
        None => d.set_item("insufficiency", py.None())?,
    }
    d.set_item("proofs_evaluated", report.proofs_evaluated)?;
    d.set_item("nodes_visited", report.nodes_visited)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate_mcp_tool_admission, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add("REASONS", Reason::ALL.map(Reason::as_str).to_vec())?;
    Ok(())
}
