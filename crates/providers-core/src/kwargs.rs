//! Reading provider-specific fields out of a request's plain kwargs map.

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::Error;

/// Typed reads from a kwargs map; [`finish`](Self::finish) refuses any key
/// that nothing read, so a misspelt field is an error, never ignored.
#[derive(Debug)]
pub struct Kwargs<'a> {
    map: &'a Map<String, Value>,
    seen: RefCell<BTreeSet<&'static str>>,
}

impl<'a> Kwargs<'a> {
    /// A reader over `map`.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            seen: RefCell::new(BTreeSet::new()),
        }
    }

    fn get(&self, key: &'static str) -> Option<&'a Value> {
        self.seen.borrow_mut().insert(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A string field.
    pub fn string(&self, key: &'static str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::InvalidKwargs(key)),
        }
    }

    /// A string, or a number rendered as a string.
    pub fn scalar(&self, key: &'static str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(Error::InvalidKwargs(key)),
        }
    }

    /// A boolean field.
    pub fn bool(&self, key: &'static str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Error::InvalidKwargs(key)),
        }
    }

    /// A non-negative integer field.
    pub fn u64(&self, key: &'static str) -> Result<Option<u64>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or(Error::InvalidKwargs(key)),
        }
    }

    /// A list of strings (a lone string is a one-item list).
    pub fn strings(&self, key: &'static str) -> Result<Vec<String>, Error> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or(Error::InvalidKwargs(key))
                })
                .collect(),
            Some(_) => Err(Error::InvalidKwargs(key)),
        }
    }

    /// An object field. Present-but-empty stays `Some`, so `{}` and unset
    /// are never confused.
    pub fn object(&self, key: &'static str) -> Result<Option<Map<String, Value>>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(_) => Err(Error::InvalidKwargs(key)),
        }
    }

    /// Any JSON value.
    pub fn json(&self, key: &'static str) -> Option<Value> {
        self.get(key).cloned()
    }

    /// Refuses any key nothing asked for.
    pub fn finish(self) -> Result<(), Error> {
        let seen = self.seen.borrow();
        match self.map.keys().find(|k| !seen.contains(k.as_str())) {
            Some(k) => Err(Error::UnknownField(k.clone())),
            None => Ok(()),
        }
    }
}
