//! Endpoint configuration and its runtime-only state (`env`, `on_spawn`).
//!
//! Runtime-only values must stay in memory: they never reach a dump, a map
//! conversion, iteration or Debug, yet the endpoint keeps applying them.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

pub use cli_supervisor::{ChildEnv, OnSpawn, SpawnedProcess};

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::provider::AgentRequest;

/// The names of the runtime-only kwargs, declared once, here. The endpoint
/// uses this very constant; there is no second copy.
pub const RUNTIME_STATE_NAMES: [&str; 2] = ["env", "on_spawn"];

/// The child environment additions an [`Invocation`](crate::Invocation)
/// carries, read out of a runtime-only `env` (none: no additions). An env
/// holding a name or value that is not UTF-8 is refused by kind, never
/// quoted.
pub fn invocation_env(env: Option<&ChildEnv>) -> Result<BTreeMap<String, String>, Error> {
    match env {
        None => Ok(BTreeMap::new()),
        Some(env) => env.to_utf8_map().ok_or(Error::RuntimeValueShape("env")),
    }
}

/// A kwarg value: JSON, or one of the runtime-only kinds.
#[derive(Debug, Clone)]
pub enum KwargValue {
    /// A JSON value.
    Json(Value),
    /// A child environment.
    Env(ChildEnv),
    /// A spawn callback.
    OnSpawn(OnSpawn),
}

/// The runtime-only values an agentic endpoint holds.
#[derive(Debug, Clone, Default)]
pub struct RuntimeState {
    /// The child's environment.
    pub env: Option<ChildEnv>,
    /// The spawn callback.
    pub on_spawn: Option<OnSpawn>,
}

/// An endpoint's configuration.
///
/// Every conversion API (`Serialize`, [`to_map`](Self::to_map),
/// [`iter`](Self::iter)/`IntoIterator`) omits the runtime-only names
/// entirely (no placeholder that could hydrate as a value), and Debug says
/// only that they are set. [`get`](Self::get) reads raw memory and still
/// sees them: the endpoint must be able to use them.
#[derive(Clone)]
pub struct EndpointConfig {
    /// The provider name.
    pub provider: String,
    /// The model.
    pub model: Option<String>,
    /// The base URL, for HTTP endpoints.
    pub base_url: Option<String>,
    kwargs: BTreeMap<String, KwargValue>,
}

fn is_runtime_name(k: &str) -> bool {
    RUNTIME_STATE_NAMES.contains(&k)
}

impl EndpointConfig {
    /// A config for `provider` with no kwargs.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: None,
            base_url: None,
            kwargs: BTreeMap::new(),
        }
    }

    /// Sets a kwarg (runtime-only names included: they stay out of every
    /// conversion until an endpoint drains them).
    pub fn update(&mut self, key: impl Into<String>, value: KwargValue) {
        self.kwargs.insert(key.into(), value);
    }

    /// Raw read of a kwarg, runtime-only ones included.
    pub fn get(&self, key: &str) -> Option<&KwargValue> {
        self.kwargs.get(key)
    }

    /// The serialisable kwargs, runtime-only names omitted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.kwargs.iter().filter_map(|(k, v)| match v {
            KwargValue::Json(j) if !is_runtime_name(k) => Some((k.as_str(), j)),
            _ => None,
        })
    }

    /// The whole config as a JSON map, runtime-only names omitted.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("provider".into(), Value::String(self.provider.clone()));
        if let Some(model) = &self.model {
            m.insert("model".into(), Value::String(model.clone()));
        }
        if let Some(url) = &self.base_url {
            m.insert("base_url".into(), Value::String(url.clone()));
        }
        let kwargs: Map<String, Value> = self
            .iter()
            .map(|(k, v)| (k.to_owned(), v.clone()))
            .collect();
        m.insert("kwargs".into(), Value::Object(kwargs));
        m
    }

    /// Hydrates a config from a dump. A `kwargs.env` object found there is
    /// kept (in memory, excluded from dumps) for an endpoint to drain.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let o = v.as_object().ok_or(Error::InvalidConfig("not an object"))?;
        let provider = o
            .get("provider")
            .and_then(Value::as_str)
            .ok_or(Error::InvalidConfig("missing provider"))?;
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut cfg = Self::new(provider);
        cfg.model = text("model");
        cfg.base_url = text("base_url");
        match o.get("kwargs") {
            None | Some(Value::Null) => {}
            Some(Value::Object(k)) => {
                for (key, val) in k {
                    cfg.update(key.clone(), KwargValue::Json(val.clone()));
                }
            }
            Some(_) => return Err(Error::InvalidConfig("kwargs is not an object")),
        }
        Ok(cfg)
    }

    /// Removes the runtime-only kwargs and returns them as typed values.
    fn drain_runtime(&mut self) -> Result<RuntimeState, Error> {
        let mut state = RuntimeState::default();
        if let Some(v) = self.kwargs.remove("env") {
            state.env = Some(env_from(v)?);
        }
        if let Some(v) = self.kwargs.remove("on_spawn") {
            match v {
                KwargValue::OnSpawn(cb) => state.on_spawn = Some(cb),
                _ => return Err(Error::RuntimeValueShape("on_spawn")),
            }
        }
        Ok(state)
    }

    /// Reads the runtime-only kwargs without removing them.
    fn peek_runtime(&self) -> Result<RuntimeState, Error> {
        Ok(RuntimeState {
            env: self.kwargs.get("env").cloned().map(env_from).transpose()?,
            on_spawn: match self.kwargs.get("on_spawn") {
                None => None,
                Some(KwargValue::OnSpawn(cb)) => Some(cb.clone()),
                Some(_) => return Err(Error::RuntimeValueShape("on_spawn")),
            },
        })
    }
}

fn env_from(v: KwargValue) -> Result<ChildEnv, Error> {
    match v {
        KwargValue::Env(e) => Ok(e),
        KwargValue::Json(Value::Object(m)) => {
            let pairs = m
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    _ => Err(Error::RuntimeValueShape("env")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            // The supervisor's own checks (names, NUL bytes); its error
            // names keys, and this one names nothing.
            ChildEnv::try_from_pairs(pairs).map_err(|_| Error::RuntimeValueShape("env"))
        }
        _ => Err(Error::RuntimeValueShape("env")),
    }
}

impl Serialize for EndpointConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.to_map();
        let mut out = s.serialize_map(Some(m.len()))?;
        for (k, v) in &m {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

impl<'a> IntoIterator for &'a EndpointConfig {
    type Item = (&'a str, &'a Value);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a Value)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Kw<'a>(&'a BTreeMap<String, KwargValue>);
        impl fmt::Debug for Kw<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut m = f.debug_map();
                for (k, v) in self.0 {
                    match v {
                        KwargValue::Json(j) if !is_runtime_name(k) => m.entry(k, j),
                        _ => m.entry(k, &format_args!("<set>")),
                    };
                }
                m.finish()
            }
        }
        f.debug_struct("EndpointConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("kwargs", &Kw(&self.kwargs))
            .finish()
    }
}

/// A call to a CLI endpoint: the request plus its runtime wiring.
#[derive(Debug, Clone, Default)]
pub struct CliCall {
    /// The request.
    pub request: AgentRequest,
    /// The child's environment; `None` means "use the endpoint's".
    pub env: Option<ChildEnv>,
    /// The spawn callback; `None` means "use the endpoint's".
    pub on_spawn: Option<OnSpawn>,
}

/// An endpoint: a config (copied at construction) and, for agentic (CLI)
/// endpoints, the runtime-only state drained out of it.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    runtime: Option<RuntimeState>,
    session_id: Option<String>,
}

impl Endpoint {
    /// An agentic (CLI) endpoint built from a prepared config.
    ///
    /// The runtime values are read off the object the caller handed in
    /// first, then the config is copied and the copy drained; the caller's
    /// values win over whatever the copy produced. The copy still happens
    /// and the values still leave its serialised form.
    pub fn agentic(config: &EndpointConfig) -> Result<Self, Error> {
        let supplied = config.peek_runtime()?;
        let mut copy = config.clone();
        let drained = copy.drain_runtime()?;
        Ok(Self {
            config: copy,
            runtime: Some(RuntimeState {
                env: supplied.env.or(drained.env),
                on_spawn: supplied.on_spawn.or(drained.on_spawn),
            }),
            session_id: None,
        })
    }

    /// A plain (HTTP) endpoint: it has no runtime state. Runtime names left
    /// in its kwargs stay excluded from every conversion by the config.
    pub fn plain(config: &EndpointConfig) -> Self {
        Self {
            config: config.clone(),
            runtime: None,
            session_id: None,
        }
    }

    /// Whether this is an agentic endpoint.
    pub fn is_agentic(&self) -> bool {
        self.runtime.is_some()
    }

    /// The config.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// The config, mutably (e.g. for `update()`).
    pub fn config_mut(&mut self) -> &mut EndpointConfig {
        &mut self.config
    }

    /// The runtime state, for agentic endpoints.
    pub fn runtime(&self) -> Option<&RuntimeState> {
        self.runtime.as_ref()
    }

    /// The session id to resume, for agentic endpoints.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Records the session id.
    pub fn set_session_id(&mut self, id: Option<String>) {
        self.session_id = id;
    }

    /// Moves runtime-only kwargs (e.g. put back by `update()`) into the
    /// runtime state. Relocation only: which value wins is unchanged, and
    /// nothing is lost. A plain endpoint keeps them in its config.
    pub fn drain(&mut self) -> Result<(), Error> {
        let Some(rt) = self.runtime.as_mut() else {
            return Ok(());
        };
        let drained = self.config.drain_runtime()?;
        // Kwargs were read ahead of the runtime state, so a drained value
        // replaces the held one, exactly as it won before the drain.
        if drained.env.is_some() {
            rt.env = drained.env;
        }
        if drained.on_spawn.is_some() {
            rt.on_spawn = drained.on_spawn;
        }
        Ok(())
    }

    /// The endpoint's serialised form: the config only.
    pub fn to_dict(&self) -> Value {
        Value::Object(self.config.to_map())
    }

    /// Rebuilds `call` into the payload the child is spawned from. The
    /// caller's own `env`/`on_spawn` win; otherwise an undrained kwarg,
    /// otherwise the runtime state (the same precedence before and after a
    /// drain).
    pub fn create_payload(&self, call: &CliCall) -> Result<CliCall, Error> {
        let pending = self.config.peek_runtime()?;
        let held = self.runtime.clone().unwrap_or_default();
        Ok(CliCall {
            request: call.request.clone(),
            env: call.env.clone().or(pending.env).or(held.env),
            on_spawn: call.on_spawn.clone().or(pending.on_spawn).or(held.on_spawn),
        })
    }

    /// A copy of this endpoint, of the same kind, with an equal and
    /// separately owned config.
    ///
    /// This endpoint is drained first, so a runtime value that arrived
    /// through `update()` moves across whole (and this endpoint keeps
    /// applying it: a drain relocates, it never takes away). The runtime
    /// state is then carried shallowly ([`copy_runtime_state_to`](Self::copy_runtime_state_to)).
    /// `share_session` carries the session id when both are agentic; a
    /// plain endpoint's copy never gets one.
    pub fn copy(&mut self, share_session: bool) -> Result<Endpoint, Error> {
        self.drain()?;
        let mut copy = if self.is_agentic() {
            Endpoint::agentic(&self.config)?
        } else {
            Endpoint::plain(&self.config)
        };
        self.copy_runtime_state_to(&mut copy);
        if share_session && self.is_agentic() && copy.is_agentic() {
            copy.session_id.clone_from(&self.session_id);
        }
        Ok(copy)
    }

    /// Copies the runtime state to `other`, shallowly: the very same
    /// callback object, so the original receiver hears the copy's spawns.
    pub fn copy_runtime_state_to(&self, other: &mut Endpoint) {
        if let (Some(src), Some(dst)) = (&self.runtime, other.runtime.as_mut()) {
            *dst = src.clone();
        }
    }

    /// Places runtime values supplied alongside a finished endpoint onto
    /// it. `None` means "not supplied" and never clears a held value. An
    /// endpoint that cannot hold them refuses rather than dropping them.
    pub fn adopt_runtime_state(
        &mut self,
        env: Option<ChildEnv>,
        on_spawn: Option<OnSpawn>,
    ) -> Result<(), Error> {
        if env.is_none() && on_spawn.is_none() {
            return Ok(());
        }
        let Some(rt) = self.runtime.as_mut() else {
            return Err(Error::NoRuntimeState(self.config.provider.clone()));
        };
        if env.is_some() {
            rt.env = env;
        }
        if on_spawn.is_some() {
            rt.on_spawn = on_spawn;
        }
        Ok(())
    }
}

/// A config type whose accepted keys (fields plus aliases) are computed
/// once per type.
pub trait ConfigFields: 'static {
    /// Computes the accepted keys. Called at most once per type.
    fn compute_accepted_keys() -> BTreeSet<&'static str>;
}

type KeyCache = Mutex<HashMap<TypeId, Arc<BTreeSet<&'static str>>>>;

/// The accepted keys of `T`, computed on first use and cached by the exact
/// type (a `TypeId`, so an entry is never served for another type).
pub fn accepted_keys<T: ConfigFields>() -> Arc<BTreeSet<&'static str>> {
    static CACHE: OnceLock<KeyCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let id = TypeId::of::<T>();
    // A poisoned lock only means another thread panicked mid-insert; the
    // map is still a valid cache.
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(
        map.entry(id)
            .or_insert_with(|| Arc::new(T::compute_accepted_keys())),
    )
}
