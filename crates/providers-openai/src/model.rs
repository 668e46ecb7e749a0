//! The model handle (`iModel`) of an API endpoint: an [`Endpoint`], a
//! rate-limited [`Executor`], retry settings and a [`CircuitBreaker`];
//! its copies, its MCP-forwarding copy, and the [`ModelManager`] that
//! closes every model at shutdown.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use providers_core::{
    Backoff, BodySource, Endpoint, EndpointConfig, EndpointRetry, ForwardedMcp, KwargValue,
    MCP_SERVERS_KEY, Provider, RetryConfig, apply_forwarded_mcp_servers,
};
use serde_json::{Map, Value};

use crate::breaker::CircuitBreaker;
use crate::chat::{ChatRequest, shape_chat_request};
use crate::error::Error;
use crate::executor::{CallGuard, Executor, RateLimit};
use crate::transport::{Sleeper, Transport, UploadEndpoint, send_chat, send_upload};

static NEXT_MODEL: AtomicU64 = AtomicU64::new(1);

fn fresh_id() -> u64 {
    NEXT_MODEL.fetch_add(1, Ordering::Relaxed)
}

/// How a [`Model`] is built.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// The limits of the model's own executor (ignored when `executor` is
    /// given).
    pub rate_limit: RateLimit,
    /// An executor to use as is (shared with whoever else holds it).
    pub executor: Option<Executor>,
    /// The native retry path's cap on total attempts.
    pub max_retries: u32,
    /// The native retry path's backoff.
    pub backoff: Backoff,
    /// An explicit retry layer wrapping the whole call; shared by
    /// reference with copies.
    pub retry_config: Option<Arc<RetryConfig>>,
    /// A circuit breaker; shared by reference with copies.
    pub circuit_breaker: Option<Arc<CircuitBreaker>>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        let native = EndpointRetry::default();
        Self {
            rate_limit: RateLimit::default(),
            executor: None,
            max_retries: native.max_retries,
            backoff: native.backoff,
            retry_config: None,
            circuit_breaker: None,
        }
    }
}

/// A model handle: every API call of the crate goes through one.
///
/// A call ([`chat`](Self::chat), [`upload`](Self::upload)) is refused
/// without sending while the circuit breaker is open, then waits for a
/// permit from the executor (a rate-limit denial defers it, it is never
/// dropped), is recorded in flight until it ends however it ends, runs
/// under the endpoint retry contract over the caller's [`Transport`], and
/// its outcome is reported to the breaker.
///
/// The executor's budget is refilled by its replenisher
/// ([`Executor::replenisher`]), which whoever builds a model with its own
/// executor runs on their runtime; [`close`](Self::close) (or the
/// [`ModelManager`]'s shutdown) ends it.
#[derive(Debug)]
pub struct Model {
    id: u64,
    endpoint: Mutex<Endpoint>,
    executor: Executor,
    max_retries: u32,
    backoff: Backoff,
    retry_config: Option<Arc<RetryConfig>>,
    circuit_breaker: Option<Arc<CircuitBreaker>>,
}

impl Model {
    /// A model over `endpoint`.
    pub fn new(endpoint: Endpoint, config: ModelConfig) -> Result<Self, Error> {
        let executor = match config.executor {
            Some(e) => e,
            None => Executor::new(config.rate_limit)?,
        };
        Ok(Self {
            id: fresh_id(),
            endpoint: Mutex::new(endpoint),
            executor,
            max_retries: config.max_retries,
            backoff: config.backoff,
            retry_config: config.retry_config,
            circuit_breaker: config.circuit_breaker,
        })
    }

    /// The model's id, fresh per model and per copy.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The executor the model's calls queue on.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The explicit retry layer, if any.
    pub fn retry_config(&self) -> Option<&Arc<RetryConfig>> {
        self.retry_config.as_ref()
    }

    /// The circuit breaker, if any.
    pub fn circuit_breaker(&self) -> Option<&Arc<CircuitBreaker>> {
        self.circuit_breaker.as_ref()
    }

    /// A copy of the endpoint's config.
    pub fn config(&self) -> EndpointConfig {
        self.endpoint().config().clone()
    }

    /// Changes the endpoint's config in place (for this model only: copies
    /// own theirs).
    pub fn configure<R>(&self, f: impl FnOnce(&mut EndpointConfig) -> R) -> R {
        f(self.endpoint().config_mut())
    }

    /// The CLI session id, for a model over an agentic endpoint.
    pub fn session_id(&self) -> Option<String> {
        self.endpoint().session_id().map(str::to_owned)
    }

    /// Records the CLI session id (agentic endpoints).
    pub fn set_session_id(&self, id: Option<String>) {
        self.endpoint().set_session_id(id);
    }

    /// Whether the endpoint is a CLI (agentic) endpoint.
    pub fn is_agentic(&self) -> bool {
        self.endpoint().is_agentic()
    }

    /// The model's serialised form (never runtime-only values).
    pub fn to_dict(&self) -> Value {
        serde_json::json!({ "endpoint": self.endpoint().to_dict() })
    }

    /// A copy with an equal, separately owned endpoint config and a fresh
    /// id ([`Endpoint::copy`]: the source is drained first, runtime state
    /// goes across shallowly).
    ///
    /// `share_session` carries the CLI session id when both endpoints are
    /// agentic. `share_executor` shares this very executor (one budget, one
    /// queue); otherwise the copy gets its own, with the same limits, whose
    /// replenisher the caller runs. The retry layer and circuit breaker are
    /// shared by reference either way.
    pub fn copy(&self, share_session: bool, share_executor: bool) -> Result<Model, Error> {
        let endpoint = self.endpoint().copy(share_session)?;
        let executor = if share_executor {
            self.executor.clone()
        } else {
            Executor::new(self.executor.rate_limit())?
        };
        Ok(Model {
            id: fresh_id(),
            endpoint: Mutex::new(endpoint),
            executor,
            max_retries: self.max_retries,
            backoff: self.backoff,
            retry_config: self.retry_config.clone(),
            circuit_breaker: self.circuit_breaker.clone(),
        })
    }

    /// The model a CLI leg runs with when `forwarded` is handed to it.
    ///
    /// This model is never changed (another branch may share it): when
    /// `provider` takes a forwarded set, a copy sharing this model's
    /// session and executor gets the set in its endpoint config and is
    /// returned. `None` when nothing is forwarded (an API endpoint, or a
    /// provider that takes no set): keep using this model.
    pub fn with_forwarded_mcp<P: Provider + ?Sized>(
        &self,
        provider: &P,
        forwarded: &ForwardedMcp,
    ) -> Result<Option<Model>, Error> {
        if !self.is_agentic() || provider.mcp_forwarding().is_none() {
            return Ok(None);
        }
        let copy = self.copy(true, true)?;
        copy.configure(|cfg| {
            let mut kwargs: Map<String, Value> =
                cfg.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
            if apply_forwarded_mcp_servers(provider, &mut kwargs, forwarded) {
                for (k, v) in kwargs {
                    cfg.update(k, KwargValue::Json(v));
                }
            }
        });
        Ok(Some(copy))
    }

    /// A chat completion. The body is `req` shaped
    /// ([`shape_chat_request`]) after filling in what the request leaves
    /// open from the endpoint config: the model, and each kwarg as a body
    /// field (the request's own fields win). An MCP server set in the
    /// config (it may carry secrets) is never sent.
    pub async fn chat<T: Transport, S: Sleeper>(
        &self,
        transport: &mut T,
        sleeper: &mut S,
        req: &ChatRequest,
    ) -> Result<Value, Error> {
        let body = self.chat_body(req)?;
        let retry = self.endpoint_retry();
        let _in_flight = self.admit().await?;
        let result = send_chat(transport, sleeper, &retry, &body).await;
        self.settle(&result);
        result
    }

    /// An upload to `endpoint`. The endpoint config's model is added as
    /// the `model` form field when `fields` has none.
    pub async fn upload<T: Transport, S: Sleeper>(
        &self,
        endpoint: UploadEndpoint,
        transport: &mut T,
        sleeper: &mut S,
        fields: &Value,
        file: BodySource<'_>,
    ) -> Result<Value, Error> {
        let fields = self.upload_fields(fields)?;
        let retry = self.endpoint_retry();
        let _in_flight = self.admit().await?;
        let result = send_upload(endpoint, transport, sleeper, &retry, &fields, file).await;
        self.settle(&result);
        result
    }

    /// Stops the executor: its replenisher ends and waiting or new calls
    /// are refused. A copy sharing the executor is stopped with it.
    /// Idempotent.
    pub fn close(&self) {
        self.executor.stop();
    }

    fn endpoint(&self) -> MutexGuard<'_, Endpoint> {
        // No code panics while holding the lock.
        self.endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn api_config(&self) -> Result<EndpointConfig, Error> {
        let ep = self.endpoint();
        if ep.is_agentic() {
            return Err(Error::NotAnApiEndpoint(ep.config().provider.clone()));
        }
        Ok(ep.config().clone())
    }

    fn chat_body(&self, req: &ChatRequest) -> Result<Value, Error> {
        let cfg = self.api_config()?;
        let mut req = req.clone();
        if req.model.is_none() {
            req.model.clone_from(&cfg.model);
        }
        for (k, v) in cfg.iter() {
            if matches!(k, "model" | "messages") || k == MCP_SERVERS_KEY {
                continue;
            }
            req.extra.entry(k).or_insert_with(|| v.clone());
        }
        shape_chat_request(&req)
    }

    fn upload_fields(&self, fields: &Value) -> Result<Value, Error> {
        let cfg = self.api_config()?;
        let mut fields = fields.clone();
        if let (Value::Object(map), Some(model)) = (&mut fields, &cfg.model) {
            map.entry("model")
                .or_insert_with(|| Value::String(providers_core::strip_provider(model).to_owned()));
        }
        Ok(fields)
    }

    fn endpoint_retry(&self) -> EndpointRetry {
        EndpointRetry {
            max_retries: self.max_retries,
            backoff: self.backoff,
            retry_config: self.retry_config.as_deref().copied(),
        }
    }

    /// The breaker, then a permit, then the in-flight record.
    async fn admit(&self) -> Result<CallGuard, Error> {
        if let Some(b) = &self.circuit_breaker
            && !b.allows()
        {
            return Err(Error::CircuitOpen);
        }
        self.executor.acquire().await?;
        Ok(self.executor.begin_call())
    }

    fn settle<R>(&self, result: &Result<R, Error>) {
        let Some(b) = &self.circuit_breaker else {
            return;
        };
        match result {
            Ok(_) => b.record_success(),
            Err(Error::Core(
                providers_core::Error::Http(_) | providers_core::Error::Transport(_),
            )) => b.record_failure(),
            Err(_) => {}
        }
    }
}

/// Something the [`ModelManager`] closes at shutdown.
pub trait Close {
    /// Closes it. An error is reported by the manager, not fatal.
    fn close(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

impl Close for Model {
    fn close(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Model::close(self);
        Ok(())
    }
}

/// A model whose close failed during [`ModelManager::shutdown`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CloseFailure {
    /// Its registration index.
    pub index: usize,
    /// What went wrong (the error's text, or that close panicked).
    pub reason: String,
}

/// Owns the registered models' lifecycles: [`shutdown`](Self::shutdown)
/// closes every one of them, so no replenisher outlives it.
#[derive(Debug)]
pub struct ModelManager<M: Close = Model> {
    models: Vec<Arc<M>>,
    shut_down: bool,
}

impl<M: Close> Default for ModelManager<M> {
    fn default() -> Self {
        Self {
            models: Vec::new(),
            shut_down: false,
        }
    }
}

impl<M: Close> ModelManager<M> {
    /// An empty manager.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a model and hands it back shared.
    pub fn register(&mut self, model: M) -> Arc<M> {
        let model = Arc::new(model);
        self.register_shared(Arc::clone(&model));
        model
    }

    /// Registers a model already shared. After shutdown a model registered
    /// is closed at once, so nothing outlives the shutdown.
    pub fn register_shared(&mut self, model: Arc<M>) {
        if self.shut_down
            && let Err(e) = close_one(&*model)
        {
            tracing::warn!(error = %e, "closing a model registered after shutdown failed");
        }
        self.models.push(model);
    }

    /// The registered models.
    pub fn models(&self) -> &[Arc<M>] {
        &self.models
    }

    /// Closes every registered model. A model whose close fails or panics
    /// is logged, reported in the returned list, and the others are still
    /// closed. Idempotent: a second call closes nothing and reports
    /// nothing.
    pub fn shutdown(&mut self) -> Vec<CloseFailure> {
        if self.shut_down {
            return Vec::new();
        }
        self.shut_down = true;
        let mut failures = Vec::new();
        for (index, model) in self.models.iter().enumerate() {
            if let Err(reason) = close_one(&**model) {
                tracing::warn!(index, reason = %reason, "closing a model failed");
                failures.push(CloseFailure { index, reason });
            }
        }
        tracing::info!(
            models = self.models.len(),
            failed = failures.len(),
            "model manager shut down"
        );
        failures
    }
}

fn close_one<M: Close + ?Sized>(model: &M) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(|| model.close())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("close panicked".to_owned()),
    }
}
