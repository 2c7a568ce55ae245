//! zblade-server: the sync server of RFC-002's server storage mode.
//!
//! An axum HTTP service with API v0 under `/api/v0/` ([`api`]), storage behind one trait with
//! a SQLite and a PostgreSQL implementation ([`store`]), per-user bearer tokens kept only as
//! hashes, a per-user rate limit and a per-address limit on failed sign-ins ([`auth`]). Every query is scoped to the token's user;
//! malformed input gets a 4xx with a reason. docs/SERVER.md documents the routes.

pub mod api;
pub mod auth;
pub mod store;
pub mod vectors;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use tower_http::timeout::TimeoutLayer;

pub use api::AppState;
pub use store::{Backend, Store};
pub use vectors::Vectors;

/// How the server limits what it accepts.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Requests per second per user, on average.
    pub rate: f64,
    /// Requests a user may make in a burst.
    pub burst: f64,
    /// Longest a request may take before it is answered 408.
    pub timeout: Duration,
    /// Failed sign-ins (unknown, revoked or malformed tokens) an address may make in a burst;
    /// after that its requests get 429 until the bucket refills.
    pub failed_auth_burst: f64,
    /// Failed sign-ins per minute an address earns back.
    pub failed_auth_per_minute: f64,
    /// Reverse proxies in front of the server: for requests from these addresses, the client
    /// address is read from `X-Forwarded-For` (see [`auth::client_address`]).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Where the rate limiters read the time (the system clock; tests move their own).
    pub clock: auth::Clock,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 8 * 1024 * 1024,
            rate: 50.0,
            burst: 200.0,
            timeout: Duration::from_secs(30),
            failed_auth_burst: 30.0,
            failed_auth_per_minute: 10.0,
            trusted_proxies: Vec::new(),
            clock: auth::Clock::system(),
        }
    }
}

/// How often the rate limiters forget clients whose buckets are full again.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The whole HTTP application over `store`, with the projects' vectors in `vectors`.
pub fn app<S: Store>(store: S, vectors: Vectors, limits: &Limits) -> Router {
    let state = Arc::new(AppState {
        store,
        vectors: Arc::new(vectors),
        limiter: auth::RateLimiter::with_clock(limits.rate, limits.burst, limits.clock.clone()),
        failed_auth: auth::RateLimiter::with_clock(
            limits.failed_auth_per_minute / 60.0,
            limits.failed_auth_burst,
            limits.clock.clone(),
        ),
        trusted_proxies: limits.trusted_proxies.clone(),
    });
    // Buckets that have filled up again are forgotten once a minute, so the limiters' memory
    // follows the clients of the last minutes, not every address ever seen.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let state = Arc::downgrade(&state);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(PRUNE_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(state) = state.upgrade() else { break };
                state.limiter.prune();
                state.failed_auth.prune();
            }
        });
    }
    api::router(state, limits.max_body).layer(TimeoutLayer::with_status_code(
        StatusCode::REQUEST_TIMEOUT,
        limits.timeout,
    ))
}

/// Serves `store` (and `vectors`) on `listener` until `shutdown` resolves; in-flight requests
/// finish first.
pub async fn serve<S: Store>(
    listener: tokio::net::TcpListener,
    store: S,
    vectors: Vectors,
    limits: &Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        app(store, vectors, limits).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Gives every record stored before passage search (schema version 5) its passages, so an
/// upgraded server finds old memory with the new search. Records whose body no longer reads
/// as an artifact are skipped (they were checked when stored). Returns how many were indexed.
pub async fn backfill_passages<S: Store>(store: &S) -> store::StoreResult<usize> {
    let mut after = 0;
    let mut indexed = 0;
    loop {
        let batch = store.unindexed_records(after, 500).await?;
        let Some(last) = batch.last() else {
            return Ok(indexed);
        };
        after = last.seq;
        for record in &batch {
            let Ok(described) = api::describe(record.kind, &record.id, &record.project, record.body.as_bytes()) else {
                continue;
            };
            if !described.passages.is_empty() {
                store.put_passages(record, &described.passages).await?;
                indexed += 1;
            }
        }
    }
}
