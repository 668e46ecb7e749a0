//! `lionrt serve`: a live web monitor of a lifecycle store, in the same
//! binary, the same on a SQLite file and a PostgreSQL schema.
//!
//! - [`source`]: the [`Source`] seam (one parameterised `SELECT`),
//!   implemented for both stores; [`queries`]: every read, written once
//!   over it, every list paged.
//! - [`feed`]: one change feed per process (the store's head read at one
//!   cadence for all clients) fanned out over a tokio broadcast to every
//!   server-sent-event stream; event ids are store cursors, so a
//!   `Last-Event-ID` reconnect resumes with no gap and no duplicate.
//! - [`guard`]: loopback by default, a token off loopback, the Host header
//!   checked (DNS rebinding), POSTs same-origin with a CSRF token.
//! - [`Actions`]: what a page may do (kill a session), implemented by the
//!   binary through the same guarded, audited path as its CLI verbs, with
//!   the actor `web:<peer address>`; absent in read-only mode.
//!
//! Pages are plain HTML, one small vanilla script and a stylesheet,
//! embedded in the binary (no build step, no CDN). Every body, API and
//! event alike, passes the [`cli_supervisor::Redactor`] the binary hands
//! over before it leaves the process.
//!
//! The monitor's store calls block; they run on tokio's blocking threads
//! (PostgreSQL's client must not run on a runtime thread).

#![forbid(unsafe_code)]

pub mod feed;
pub mod guard;
pub mod queries;
pub mod source;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

pub use feed::Feed;
pub use guard::{Guard, Refusal};
pub use queries::Cursor;
pub use source::{PostgresSource, Source, SqliteSource};

/// Why an action failed, as the page is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// Nothing by that id.
    #[error("{0}")]
    NotFound(String),
    /// The action does not apply now (already ended, another host...).
    #[error("{0}")]
    Conflict(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

/// What a page may do to the store, through the binary's own guarded and
/// audited paths.
pub trait Actions: Send + Sync + 'static {
    /// Ends a live session's leg (`lionrt kill`), recorded with `actor`
    /// as the actor id. Returns the kill report.
    ///
    /// # Errors
    ///
    /// [`ActionError`] with the CLI's own message.
    fn kill(&self, session: &str, actor: &str) -> Result<Value, ActionError>;

    /// Revives a `dead_letter` or `expired` outbox row (`lionrt outbox
    /// retry`), recorded with `actor`. Returns the row's revival.
    ///
    /// # Errors
    ///
    /// [`ActionError`] with the CLI's own message.
    fn retry_outbox(&self, id: &str, actor: &str) -> Result<Value, ActionError>;
}

/// How a server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The address it listens on.
    pub listen: SocketAddr,
    /// The access token (required off loopback).
    pub token: Option<String>,
    /// Host names it also answers to (besides the listen address and
    /// localhost).
    pub allow_hosts: Vec<String>,
    /// Refuse every action (the store is opened read-only).
    pub read_only: bool,
    /// How often the one change feed reads the store's head.
    pub poll: Duration,
    /// How often an idle event stream sends a heartbeat.
    pub heartbeat: Duration,
    /// A running session quiet for longer needs attention.
    pub quiet: Duration,
    /// Redacts every body before it leaves.
    pub redact: cli_supervisor::Redactor,
}

impl Config {
    /// The defaults for `listen`: a poll every 250 ms, a heartbeat every
    /// 15 s, attention after the orchestrated quiet threshold (15 min).
    pub fn new(listen: SocketAddr) -> Self {
        Config {
            listen,
            token: None,
            allow_hosts: Vec::new(),
            read_only: false,
            poll: Duration::from_millis(250),
            heartbeat: Duration::from_secs(15),
            quiet: lifecycle_core::HealthThresholds::default().orchestrated,
            redact: cli_supervisor::Redactor::new(),
        }
    }

    /// Refuses a configuration that is not safe: a non-loopback listen
    /// address without a token.
    ///
    /// # Errors
    ///
    /// A message saying what to pass.
    pub fn check(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && self.token.as_deref().is_none_or(str::is_empty) {
            return Err(format!(
                "listening on {} (not loopback) requires --token: anyone who can reach the address could read the store",
                self.listen
            ));
        }
        Ok(())
    }
}

/// One server's state: the store, the feed, the rules.
pub struct Monitor {
    src: Arc<dyn Source>,
    feed: Arc<Feed>,
    guard: Guard,
    actions: Option<Arc<dyn Actions>>,
    config: Config,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("location", &self.src.location())
            .field("read_only", &self.config.read_only)
            .finish_non_exhaustive()
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is unsafe.
    #[error("{0}")]
    Unsafe(String),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] queries::QueryError),
    /// No randomness for the CSRF token.
    #[error("reading /dev/urandom for the CSRF token: {0}")]
    Random(#[from] std::io::Error),
}

impl Monitor {
    /// A monitor over `src`: checks `config`, reads the store's head (the
    /// feed starts there). Blocks on the store: call it outside the
    /// runtime or on a blocking thread.
    ///
    /// # Errors
    ///
    /// [`StartError`].
    pub fn new(
        src: Arc<dyn Source>,
        config: Config,
        actions: Option<Arc<dyn Actions>>,
    ) -> Result<Arc<Monitor>, StartError> {
        config.check().map_err(StartError::Unsafe)?;
        let head = queries::head(&*src, Cursor::default())?;
        let guard = Guard::new(
            config.listen,
            &config.allow_hosts,
            config.token.clone(),
            guard::random_token()?,
        );
        let actions = if config.read_only { None } else { actions };
        Ok(Arc::new(Monitor {
            src,
            feed: Feed::new(head),
            guard,
            actions,
            config,
        }))
    }

    /// The feed (for tests and benchmarks).
    pub fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// The CSRF token pages carry.
    pub fn csrf(&self) -> &str {
        self.guard.csrf()
    }

    /// Runs the one change feed until the process ends.
    pub async fn run_feed(self: Arc<Self>) {
        feed::run(self.feed.clone(), self.src.clone(), self.config.poll).await;
    }

    /// The routes, with the guard in front of every one.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/", get(page_fleet))
            .route("/session/{id}", get(page_session))
            .route("/admin", get(page_admin))
            .route("/costs", get(page_costs))
            .route("/assets/app.js", get(asset_js))
            .route("/assets/app.css", get(asset_css))
            .route("/api/meta", get(api_meta))
            .route("/api/sessions", get(api_sessions))
            .route("/api/sessions/{id}", get(api_session))
            .route("/api/sessions/{id}/messages", get(api_messages))
            .route("/api/sessions/{id}/kill", post(api_kill))
            .route("/api/outbox/{id}/retry", post(api_retry))
            .route("/api/schedules", get(api_schedules))
            .route("/api/outbox", get(api_outbox))
            .route("/api/admin-events", get(api_admin_events))
            .route("/api/costs", get(api_costs))
            .route("/api/events", get(api_events))
            .fallback(not_found)
            .layer(middleware::from_fn_with_state(self.clone(), guard_layer))
            .with_state(self.clone())
    }

    /// Serves on `listener` until `shutdown` resolves, with the feed
    /// running.
    ///
    /// # Errors
    ///
    /// The listener's.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let feed = tokio::spawn(self.clone().run_feed());
        let app = self.router();
        let served = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await;
        feed.abort();
        served
    }

    /// A JSON body, redacted, not cached.
    fn reply(&self, status: StatusCode, value: &Value) -> Response {
        let text = value.to_string();
        let body = self.config.redact.redact_str(&text).into_owned();
        let mut r = (status, body).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    }

    fn error(&self, status: StatusCode, message: &str) -> Response {
        self.reply(status, &json!({"error": message}))
    }

    fn quiet_before(&self) -> i64 {
        let quiet = i64::try_from(self.config.quiet.as_micros()).unwrap_or(i64::MAX);
        state_sqlite::now_micros().saturating_sub(quiet)
    }

    /// Runs a read on a blocking thread; the JSON or an error response.
    async fn read<F>(self: &Arc<Self>, f: F) -> Response
    where
        F: FnOnce(&dyn Source, i64) -> Result<Option<Value>, queries::QueryError> + Send + 'static,
    {
        let (me, quiet) = (self.clone(), self.quiet_before());
        let cursor = self.feed.current();
        let done = tokio::task::spawn_blocking(move || f(&*me.src, quiet)).await;
        match done {
            Ok(Ok(Some(mut v))) => {
                if let Value::Object(o) = &mut v {
                    o.insert("cursor".into(), cursor.to_id().into());
                }
                self.reply(StatusCode::OK, &v)
            }
            Ok(Ok(None)) => self.error(StatusCode::NOT_FOUND, "no such record"),
            Ok(Err(queries::QueryError::Bad(m))) => self.error(StatusCode::BAD_REQUEST, &m),
            Ok(Err(e)) => {
                tracing::warn!("a read failed: {e}");
                self.error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
            }
            Err(e) => self.error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        }
    }
}

/// Headers every response carries.
fn harden(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

fn refuse(m: &Monitor, r: &Refusal) -> Response {
    let status = match r {
        Refusal::Host(_) => StatusCode::MISDIRECTED_REQUEST,
        Refusal::Token => StatusCode::UNAUTHORIZED,
        Refusal::Origin(_) | Refusal::Csrf => StatusCode::FORBIDDEN,
    };
    let mut resp = m.error(status, &r.to_string());
    harden(resp.headers_mut());
    resp
}

/// The Host check, the token (or `?token=` once, which sets the cookie),
/// and the same-origin check of POSTs, before any route.
async fn guard_layer(State(m): State<Arc<Monitor>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    if let Err(r) = m.guard.host(headers) {
        return refuse(&m, &r);
    }
    if m.guard.needs_token() && m.guard.token(headers).is_err() {
        // `?token=T` on a GET: set the cookie, drop it from the address.
        let given = req.uri().query().and_then(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == "token")
                .map(|(_, v)| v.to_owned())
        });
        if req.method() == Method::GET
            && let Some(t) = given
            && m.guard.token_matches(&t)
        {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::SEE_OTHER;
            let path = req.uri().path().to_owned();
            if let Ok(v) = HeaderValue::from_str(&path) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            if let Ok(v) = HeaderValue::from_str(&format!(
                "{}={t}; Path=/; HttpOnly; SameSite=Strict",
                guard::TOKEN_COOKIE
            )) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            return r;
        }
        return refuse(&m, &Refusal::Token);
    }
    if let Err(r) = m.guard.same_origin(req.method(), headers) {
        return refuse(&m, &r);
    }
    let mut r = next.run(req).await;
    harden(r.headers_mut());
    r
}

const SHELL: &str = include_str!("../assets/page.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

fn page(name: &str, title: &str) -> Response {
    let html = SHELL.replace("{{PAGE}}", name).replace("{{TITLE}}", title);
    let mut r = html.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

async fn page_fleet() -> Response {
    page("fleet", "Fleet")
}

async fn page_session() -> Response {
    page("session", "Session")
}

async fn page_admin() -> Response {
    page("admin", "Schedules, outbox, audit")
}

async fn page_costs() -> Response {
    page("costs", "Costs")
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

async fn asset_js() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

async fn asset_css() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

async fn not_found(State(m): State<Arc<Monitor>>) -> Response {
    m.error(StatusCode::NOT_FOUND, "no such page")
}

async fn api_meta(State(m): State<Arc<Monitor>>) -> Response {
    m.reply(
        StatusCode::OK,
        &json!({
            "store": m.src.location(),
            "dialect": format!("{:?}", m.src.dialect()).to_ascii_lowercase(),
            "read_only": m.config.read_only,
            "actions": m.actions.is_some(),
            "csrf": m.guard.csrf(),
            "cursor": m.feed.current().to_id(),
            "quiet_secs": m.config.quiet.as_secs(),
            "version": env!("CARGO_PKG_VERSION"),
        }),
    )
}

async fn api_sessions(
    State(m): State<Arc<Monitor>>,
    q: Result<Query<queries::SessionQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => return m.error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    m.read(move |src, quiet| queries::fleet(src, &q, quiet).map(Some))
        .await
}

async fn api_session(State(m): State<Arc<Monitor>>, Path(id): Path<String>) -> Response {
    m.read(move |src, quiet| queries::session(src, &id, quiet))
        .await
}

#[derive(Debug, Deserialize)]
struct After {
    after: Option<i64>,
    limit: Option<u32>,
}

async fn api_messages(
    State(m): State<Arc<Monitor>>,
    Path(id): Path<String>,
    q: Result<Query<After>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => return m.error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    m.read(move |src, _| {
        queries::messages(src, &id, q.after.unwrap_or(0).max(0), q.limit).map(Some)
    })
    .await
}

async fn list(
    m: Arc<Monitor>,
    q: Result<Query<queries::ListQuery>, axum::extract::rejection::QueryRejection>,
    f: fn(&dyn Source, &queries::ListQuery) -> Result<Value, queries::QueryError>,
) -> Response {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => return m.error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    m.read(move |src, _| f(src, &q).map(Some)).await
}

async fn api_schedules(
    State(m): State<Arc<Monitor>>,
    q: Result<Query<queries::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    list(m, q, queries::schedules).await
}

async fn api_outbox(
    State(m): State<Arc<Monitor>>,
    q: Result<Query<queries::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    list(m, q, queries::outbox).await
}

async fn api_admin_events(
    State(m): State<Arc<Monitor>>,
    q: Result<Query<queries::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    list(m, q, queries::admin_events).await
}

#[derive(Debug, Deserialize)]
struct Window {
    window: Option<String>,
}

async fn api_costs(
    State(m): State<Arc<Monitor>>,
    q: Result<Query<Window>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let window = match q.map(|Query(w)| w.window) {
        Ok(None) => Duration::from_secs(24 * 3600),
        Ok(Some(w)) if w == "24h" => Duration::from_secs(24 * 3600),
        Ok(Some(w)) if w == "7d" => Duration::from_secs(7 * 24 * 3600),
        Ok(Some(w)) => {
            return m.error(
                StatusCode::BAD_REQUEST,
                &format!("window must be 24h or 7d (got {w:?})"),
            );
        }
        Err(e) => return m.error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    let since = state_sqlite::now_micros()
        .saturating_sub(i64::try_from(window.as_micros()).unwrap_or(i64::MAX));
    m.read(move |src, _| queries::costs(src, since).map(Some))
        .await
}

#[derive(Debug, Deserialize)]
struct EventsQuery {
    session: Option<String>,
    after: Option<String>,
}

async fn api_events(
    State(m): State<Arc<Monitor>>,
    headers: HeaderMap,
    q: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => return m.error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    // A reconnect's Last-Event-ID wins over the address's first cursor.
    let given = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or(q.after);
    let start = match given.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => match Cursor::parse(text) {
            Some(c) => Some(c),
            None => {
                return m.error(
                    StatusCode::BAD_REQUEST,
                    &format!("not an event id: {text:?} (expected T-M-A)"),
                );
            }
        },
    };
    let stream = feed::events(
        m.feed.clone(),
        m.src.clone(),
        start,
        feed::StreamFilter { session: q.session },
        m.config.redact.clone(),
    );
    let mut r = Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(m.config.heartbeat)
                .text("heartbeat"),
        )
        .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The peer's address, as the actor id's tail.
fn peer(req: &Request) -> String {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.to_string())
}

async fn api_kill(State(m): State<Arc<Monitor>>, Path(id): Path<String>, req: Request) -> Response {
    let peer = peer(&req);
    act(&m, peer, move |a, actor| a.kill(&id, actor)).await
}

async fn api_retry(
    State(m): State<Arc<Monitor>>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    let peer = peer(&req);
    act(&m, peer, move |a, actor| a.retry_outbox(&id, actor)).await
}

/// Runs an action with the actor `web:<peer>` on a blocking thread.
async fn act<F>(m: &Arc<Monitor>, peer: String, f: F) -> Response
where
    F: FnOnce(&dyn Actions, &str) -> Result<Value, ActionError> + Send + 'static,
{
    let Some(actions) = m.actions.clone() else {
        return m.error(
            StatusCode::FORBIDDEN,
            "this server is read-only (started with --read-only): no actions",
        );
    };
    let actor = format!("web:{peer}");
    let done = tokio::task::spawn_blocking(move || f(&*actions, &actor)).await;
    match done {
        Ok(Ok(report)) => m.reply(StatusCode::OK, &report),
        Ok(Err(ActionError::NotFound(e))) => m.error(StatusCode::NOT_FOUND, &e),
        Ok(Err(ActionError::Conflict(e))) => m.error(StatusCode::CONFLICT, &e),
        Ok(Err(ActionError::Failed(e))) => m.error(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(e) => m.error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
