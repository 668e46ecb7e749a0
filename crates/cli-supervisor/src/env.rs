//! Runtime-only values: the child environment and the `on_spawn` callback.
//!
//! Both are held in carriers whose every rendering (Debug, Display, serde,
//! error messages) is a placeholder. The carrier is deliberately not a map:
//! nothing can walk it generically and print its entries.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::error::{BadEnvEntry, BoxError, Error};
use crate::proc::SpawnedProcess;

/// An explicit child environment: variable names to values.
///
/// Renders as `<env: N variable(s)>` in Debug, Display and serde output.
/// Construction validates every entry and rejects bad ones naming keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    vars: BTreeMap<OsString, OsString>,
}

impl ChildEnv {
    /// An empty environment (the child sees no variables at all).
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds an environment from name/value pairs, rejecting the whole set
    /// if any entry is unusable. The error names offending keys, never values.
    pub fn try_from_pairs<I, K, V>(pairs: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let mut vars = BTreeMap::new();
        let mut bad = Vec::new();
        for (position, (key, value)) in pairs.into_iter().enumerate() {
            let key: OsString = key.into();
            let value: OsString = value.into();
            match check_entry(position, &key, &value) {
                Some(entry) => bad.push(entry),
                None => {
                    vars.insert(key, value);
                }
            }
        }
        if bad.is_empty() {
            Ok(Self { vars })
        } else {
            Err(Error::BadEnvEntries { entries: bad })
        }
    }

    /// A snapshot of this process's own environment.
    pub fn from_current_process() -> Self {
        Self {
            vars: std::env::vars_os().collect(),
        }
    }

    /// Sets one variable, rejecting an unusable name or value.
    pub fn insert(
        &mut self,
        key: impl Into<OsString>,
        value: impl Into<OsString>,
    ) -> Result<(), Error> {
        let key = key.into();
        let value = value.into();
        if let Some(entry) = check_entry(0, &key, &value) {
            return Err(Error::BadEnvEntries {
                entries: vec![entry],
            });
        }
        self.vars.insert(key, value);
        Ok(())
    }

    /// The number of variables.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether there are no variables.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Whether `name` is set (to any value, including the empty string).
    pub fn contains(&self, name: impl AsRef<OsStr>) -> bool {
        self.vars.contains_key(name.as_ref())
    }

    /// The value of `name`. Reading a value is an explicit act; no rendering does it.
    pub fn get(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        self.vars.get(name.as_ref()).map(OsString::as_os_str)
    }

    /// The variables as UTF-8 strings, for plain-data carriers (e.g. an
    /// invocation's environment additions); `None` when a name or value is
    /// not UTF-8. Reading the values is an explicit act; no rendering does it.
    pub fn to_utf8_map(&self) -> Option<BTreeMap<String, String>> {
        self.vars
            .iter()
            .map(|(k, v)| Some((k.to_str()?.to_owned(), v.to_str()?.to_owned())))
            .collect()
    }

    /// The variables, in name order. Reading the values is an explicit act;
    /// no rendering does it.
    pub fn iter(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.vars.iter()
    }
}

fn check_entry(position: usize, key: &OsStr, value: &OsStr) -> Option<BadEnvEntry> {
    let Some(name) = key.to_str() else {
        return Some(BadEnvEntry::NonStringKey {
            position,
            kind: "non-utf-8 bytes",
        });
    };
    // A key holding `=` is most often a whole `NAME=VALUE` string passed
    // where a name was expected: only the text before the first `=` (or NUL)
    // is kept, so the value can never reach an error message or a log.
    if let Some(cut) = name.find(['=', '\0']) {
        let reason = if name.as_bytes()[cut] == b'=' {
            "holds '='"
        } else {
            "holds a NUL byte"
        };
        return Some(BadEnvEntry::InvalidName {
            name: name[..cut].escape_debug().to_string(),
            reason,
        });
    }
    if name.is_empty() {
        return Some(BadEnvEntry::InvalidName {
            name: String::new(),
            reason: "is empty",
        });
    }
    if value.as_encoded_bytes().contains(&0) {
        return Some(BadEnvEntry::InvalidValue {
            name: name.to_owned(),
        });
    }
    None
}

impl fmt::Debug for ChildEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ChildEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<env: {} variable(s)>", self.vars.len())
    }
}

impl Serialize for ChildEnv {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Accepts a mapping of string names to string values. A non-mapping and bad
/// entries are rejected with messages that never quote the supplied input
/// (serde's stock "invalid type" messages would).
impl<'de> Deserialize<'de> for ChildEnv {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvVisitor)
    }
}

struct EnvVisitor;

fn not_mapping<E: de::Error>(kind: &'static str) -> E {
    E::custom(Error::EnvNotMapping { kind })
}

macro_rules! reject_kind {
    ($($method:ident($ty:ty) => $kind:literal;)*) => {
        $(fn $method<E: de::Error>(self, _value: $ty) -> Result<ChildEnv, E> {
            Err(not_mapping($kind))
        })*
    };
}

impl<'de> Visitor<'de> for EnvVisitor {
    type Value = ChildEnv;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of variable names to values")
    }

    reject_kind! {
        visit_bool(bool) => "a boolean";
        visit_i64(i64) => "an integer";
        visit_u64(u64) => "an integer";
        visit_f64(f64) => "a number";
        visit_str(&str) => "a string";
        visit_bytes(&[u8]) => "bytes";
    }

    fn visit_none<E: de::Error>(self) -> Result<ChildEnv, E> {
        Err(not_mapping("null"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ChildEnv, E> {
        Err(not_mapping("null"))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<ChildEnv, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Err(not_mapping("a sequence"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChildEnv, A::Error> {
        let mut vars = BTreeMap::new();
        let mut bad = Vec::new();
        let mut position = 0usize;
        while let Some(key) = map.next_key::<EnvScalar>()? {
            let value = map.next_value::<EnvScalar>()?;
            match (key, value) {
                (EnvScalar::Str(name), EnvScalar::Str(value)) => {
                    match check_entry(position, OsStr::new(&name), OsStr::new(&value)) {
                        Some(entry) => bad.push(entry),
                        None => {
                            vars.insert(OsString::from(name), OsString::from(value));
                        }
                    }
                }
                (EnvScalar::Str(name), EnvScalar::Other(_)) => {
                    bad.push(
                        match check_entry(position, OsStr::new(&name), OsStr::new("")) {
                            Some(entry) => entry,
                            None => BadEnvEntry::InvalidValue { name },
                        },
                    );
                }
                (EnvScalar::Other(kind), _) => {
                    bad.push(BadEnvEntry::NonStringKey { position, kind });
                }
            }
            position += 1;
        }
        if bad.is_empty() {
            Ok(ChildEnv { vars })
        } else {
            Err(de::Error::custom(Error::BadEnvEntries { entries: bad }))
        }
    }
}

/// A key or value inside an env mapping: a string, or the kind of anything else.
enum EnvScalar {
    Str(String),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for EnvScalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

macro_rules! scalar_kind {
    ($($method:ident($ty:ty) => $kind:literal;)*) => {
        $(fn $method<E: de::Error>(self, _value: $ty) -> Result<EnvScalar, E> {
            Ok(EnvScalar::Other($kind))
        })*
    };
}

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = EnvScalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<EnvScalar, E> {
        Ok(EnvScalar::Str(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<EnvScalar, E> {
        Ok(EnvScalar::Str(value))
    }

    scalar_kind! {
        visit_bool(bool) => "a boolean";
        visit_i64(i64) => "an integer";
        visit_u64(u64) => "an integer";
        visit_f64(f64) => "a number";
        visit_bytes(&[u8]) => "bytes";
    }

    fn visit_none<E: de::Error>(self) -> Result<EnvScalar, E> {
        Ok(EnvScalar::Other("null"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<EnvScalar, E> {
        Ok(EnvScalar::Other("null"))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<EnvScalar, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(EnvScalar::Other("a sequence"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvScalar, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(EnvScalar::Other("a mapping"))
    }
}

/// Which environment the child gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub enum EnvPolicy {
    /// The child inherits this process's environment, read at spawn time.
    #[default]
    Inherit,
    /// The child sees exactly these variables and nothing else.
    Explicit(ChildEnv),
}

type SpawnFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

/// The `on_spawn` callback carrier, called once per spawned child with the
/// spawn record.
///
/// It renders as `<on_spawn>` whatever the callback captured. Both the
/// synchronous and the asynchronous form produce a future that the spawn
/// path drives to completion before any output is read: an async recorder
/// cannot be registered and silently left un-run. A [`LegSpec`](crate::LegSpec)
/// holds at most one and the spawn takes it, so each leg calls it exactly
/// once.
///
/// Cloning shares the very same callback (and whatever receiver it
/// captured): a copy of an endpoint or a request reports its spawns to the
/// original receiver. Equality is identity ([`same_as`](Self::same_as)).
#[derive(Clone)]
pub struct OnSpawn {
    call: Arc<dyn Fn(SpawnedProcess) -> SpawnFuture + Send + Sync>,
}

impl OnSpawn {
    /// A synchronous callback.
    pub fn sync<F>(f: F) -> Self
    where
        F: Fn(&SpawnedProcess) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        Self {
            call: Arc::new(move |record| {
                let outcome = f(&record);
                Box::pin(std::future::ready(outcome))
            }),
        }
    }

    /// An asynchronous callback; its future is awaited before the first byte
    /// of output is read.
    pub fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(SpawnedProcess) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        Self {
            call: Arc::new(move |record| Box::pin(f(record))),
        }
    }

    /// Runs the callback for `record`. The returned future must be driven
    /// to completion (a synchronous callback has already run when this
    /// returns; its future is ready).
    pub fn call(
        &self,
        record: SpawnedProcess,
    ) -> Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>> {
        (self.call)(record)
    }

    /// `self` first, then `next` (only when `self` succeeded): one callback
    /// that a leg drives to completion as a whole.
    pub fn then(self, next: OnSpawn) -> OnSpawn {
        OnSpawn::asynchronous(move |record| {
            let first = self.call(record);
            let next = next.clone();
            async move {
                first.await?;
                next.call(record).await
            }
        })
    }

    /// Whether both are the same callback object.
    pub fn same_as(&self, other: &OnSpawn) -> bool {
        Arc::ptr_eq(&self.call, &other.call)
    }
}

/// Identity, as [`same_as`](OnSpawn::same_as): two carriers are equal when
/// they hold the very same callback object.
impl PartialEq for OnSpawn {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Eq for OnSpawn {}

impl fmt::Debug for OnSpawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<on_spawn>")
    }
}

impl fmt::Display for OnSpawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<on_spawn>")
    }
}
