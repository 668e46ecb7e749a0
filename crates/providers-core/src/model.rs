//! The model handle (`iModel`): an endpoint, an executor, shared retry and
//! circuit-breaker settings; copies and the manager's shutdown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::endpoint::{ChildEnv, Endpoint, EndpointConfig, OnSpawn};
use crate::error::Error;
use crate::mcp::{ForwardedMcp, apply_forwarded_mcp_servers};
use crate::processor::RateLimitedProcessor;
use crate::retry::RetryConfig;

/// A circuit breaker's settings (shared by reference between copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitBreaker {
    /// Failures before opening.
    pub failure_threshold: u32,
}

/// The executor a model queues calls on.
pub type Executor = Arc<Mutex<RateLimitedProcessor>>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// A model handle.
#[derive(Debug)]
pub struct Model {
    id: u64,
    endpoint: Endpoint,
    executor: Executor,
    /// Retry settings, shared by reference with copies.
    pub retry_config: Option<Arc<RetryConfig>>,
    /// Circuit breaker, shared by reference with copies.
    pub circuit_breaker: Option<Arc<CircuitBreaker>>,
}

/// The default per-interval budget of a fresh executor.
pub const DEFAULT_RATE_LIMIT: u32 = 60;

fn fresh_executor() -> Executor {
    Arc::new(Mutex::new(RateLimitedProcessor::new(DEFAULT_RATE_LIMIT)))
}

impl Model {
    /// A model over `endpoint` with its own executor.
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            endpoint,
            executor: fresh_executor(),
            retry_config: None,
            circuit_breaker: None,
        }
    }

    /// A model over a finished endpoint instance, with runtime values
    /// supplied beside it: they are placed on the endpoint
    /// ([`Endpoint::adopt_runtime_state`]) rather than discarded.
    pub fn with_endpoint(
        mut endpoint: Endpoint,
        env: Option<ChildEnv>,
        on_spawn: Option<OnSpawn>,
    ) -> Result<Self, Error> {
        endpoint.adopt_runtime_state(env, on_spawn)?;
        Ok(Self::new(endpoint))
    }

    /// The model's id (fresh per model and per copy).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The endpoint, mutably.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// The executor.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// A copy with an equal, separately owned config and a fresh id.
    ///
    /// The source endpoint is drained first, so a runtime value that
    /// arrived through `update()` moves across whole (and the original
    /// keeps applying it). Runtime state is copied shallowly.
    /// `share_session` carries the session id when both endpoints are
    /// agentic; `share_executor` shares the very same executor (else the
    /// copy gets its own). Retry config and circuit breaker are shared by
    /// reference.
    pub fn copy(&mut self, share_session: bool, share_executor: bool) -> Result<Model, Error> {
        self.endpoint.drain()?;
        let config: EndpointConfig = self.endpoint.config().clone();
        let mut endpoint = if self.endpoint.is_agentic() {
            Endpoint::agentic(&config)?
        } else {
            Endpoint::plain(&config)
        };
        self.endpoint.copy_runtime_state_to(&mut endpoint);
        if share_session && self.endpoint.is_agentic() && endpoint.is_agentic() {
            endpoint.set_session_id(self.endpoint.session_id().map(str::to_owned));
        }
        Ok(Model {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            endpoint,
            executor: if share_executor {
                Arc::clone(&self.executor)
            } else {
                fresh_executor()
            },
            retry_config: self.retry_config.clone(),
            circuit_breaker: self.circuit_breaker.clone(),
        })
    }

    /// The model's serialised form (never runtime-only values).
    pub fn to_dict(&self) -> Value {
        serde_json::json!({ "endpoint": self.endpoint.to_dict() })
    }

    /// Rebuilds a model from [`to_dict`](Self::to_dict) output; `agentic`
    /// chooses the endpoint kind. Runtime values found in the hydrated
    /// config are drained into the endpoint and stay out of every dump.
    pub fn from_dict(v: &Value, agentic: bool) -> Result<Model, Error> {
        let cfg = EndpointConfig::from_value(
            v.get("endpoint")
                .ok_or(Error::InvalidConfig("missing endpoint"))?,
        )?;
        let endpoint = if agentic {
            Endpoint::agentic(&cfg)?
        } else {
            Endpoint::plain(&cfg)
        };
        Ok(Model::new(endpoint))
    }

    /// Starts a call; the returned guard removes it from the executor's
    /// in-flight set when dropped, however the call ends (completion,
    /// error, or the future owning it being dropped on cancellation). The
    /// removal is synchronous, so it can never swallow a cancellation.
    pub fn begin_call(&self) -> CallGuard {
        let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        self.executor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .begin(id);
        CallGuard {
            id,
            executor: Arc::clone(&self.executor),
        }
    }

    /// Stops the executor's replenishing. Idempotent.
    pub fn close(&self) {
        self.executor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop();
    }

    /// A copy of this model carrying a forwarded MCP set. The original is
    /// never mutated (another branch may share it): the copy shares session
    /// and executor, and only its endpoint config changes.
    pub fn with_forwarded_mcp(&mut self, forwarded: &ForwardedMcp) -> Result<Model, Error> {
        let mut copy = self.copy(true, true)?;
        let mut kwargs: serde_json::Map<String, Value> = copy
            .endpoint
            .config()
            .iter()
            .map(|(k, v)| (k.to_owned(), v.clone()))
            .collect();
        let provider = copy.endpoint.config().provider.clone();
        if apply_forwarded_mcp_servers(&provider, &mut kwargs, forwarded) {
            for (k, v) in kwargs {
                copy.endpoint
                    .config_mut()
                    .update(k, crate::endpoint::KwargValue::Json(v));
            }
        }
        Ok(copy)
    }
}

/// Removes an in-flight call from the executor when dropped.
#[derive(Debug)]
pub struct CallGuard {
    id: u64,
    executor: Executor,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.executor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .end(self.id);
    }
}

/// Something the manager can close.
pub trait Close {
    /// Closes it; an error is reported, not fatal.
    fn close(&self) -> Result<(), String>;
}

impl Close for Model {
    fn close(&self) -> Result<(), String> {
        Model::close(self);
        Ok(())
    }
}

/// Holds every registered model and closes them all at shutdown.
#[derive(Debug, Default)]
pub struct ModelManager<M: Close = Model> {
    models: Vec<M>,
    shut_down: bool,
}

impl<M: Close> ModelManager<M> {
    /// An empty manager.
    pub fn new() -> Self {
        Self {
            models: Vec::new(),
            shut_down: false,
        }
    }

    /// Registers a model.
    pub fn register(&mut self, model: M) {
        self.models.push(model);
    }

    /// The registered models.
    pub fn models(&self) -> &[M] {
        &self.models
    }

    /// Closes every registered model. A model whose close fails or panics
    /// is reported in the returned list and the others are still closed.
    /// Idempotent: a second call does nothing.
    pub fn shutdown(&mut self) -> Vec<(usize, String)> {
        if self.shut_down {
            return Vec::new();
        }
        self.shut_down = true;
        let mut failures = Vec::new();
        for (i, m) in self.models.iter().enumerate() {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.close()));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push((i, e)),
                Err(_) => failures.push((i, "close panicked".to_owned())),
            }
        }
        failures
    }
}
