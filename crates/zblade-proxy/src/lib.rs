//! zblade's model proxy: sits between a coding agent and its model provider, adds the
//! project's memory to every request and records every turn (seed 001, section 6.2).
//!
//! - OpenAI Chat Completions, OpenAI Responses and Anthropic Messages are understood
//!   ([`api`]): the last user message is the query, the packed context goes where the API keeps
//!   system text, spliced into the request bytes ([`span`]) so every other byte passes as sent;
//! - every other path (`/v1/models`, embeddings, token counting, ...) is passed through untouched;
//! - answers are relayed chunk by chunk as they arrive and, once they end, put back together
//!   ([`answer`]) and recorded in the project ([`zblade_engine::Project::record_exchange`]);
//! - whatever fails inside zblade, the request still goes upstream, unmodified, with an
//!   `x-zblade-error` header: the proxy is never the reason a user's request fails.
//!
//! See docs/PROXY.md.

mod forward;
pub mod models;
pub mod receipts;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use zblade_engine::Project;

/// How the proxy reaches the project. The CLI owns one project; the app holds the open one
/// (or none), so both are accepted.
pub trait Memory: Send + Sync + 'static {
    /// Runs `call` on the project (on the caller's thread; the proxy calls this from a
    /// blocking task). Fails when there is no project.
    fn with_project(&self, call: &mut dyn FnMut(&mut Project)) -> Result<(), String>;
}

impl Memory for Arc<Mutex<Project>> {
    fn with_project(&self, call: &mut dyn FnMut(&mut Project)) -> Result<(), String> {
        // A panic in an earlier call poisons the lock; every write is atomic, so go on.
        call(&mut self.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        Ok(())
    }
}

impl Memory for Arc<Mutex<Option<Project>>> {
    fn with_project(&self, call: &mut dyn FnMut(&mut Project)) -> Result<(), String> {
        let mut slot = self.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let project = slot.as_mut().ok_or("no project is open")?;
        call(project);
        Ok(())
    }
}

/// Where the proxy listens and forwards.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// Where to listen (loopback only); port 0 picks a free one.
    pub listen: SocketAddr,
    /// Base URL of the OpenAI-compatible provider (`https://api.openai.com`, `http://127.0.0.1:8080/v1`).
    pub openai_upstream: String,
    /// Base URL of the Anthropic provider (`https://api.anthropic.com`).
    pub anthropic_upstream: String,
    /// The most time memory assembly may add to a request.
    pub context_timeout: Duration,
}

impl ProxyOptions {
    /// The options a project's settings give (`proxy` in `.zblade/config/settings.json`).
    pub fn from_settings(settings: &zblade_engine::ProxySettings) -> Result<ProxyOptions, String> {
        Ok(ProxyOptions {
            listen: settings
                .listen
                .parse()
                .map_err(|e| format!("proxy.listen {:?} is not an address: {e}", settings.listen))?,
            openai_upstream: settings.openai_upstream.clone(),
            anthropic_upstream: settings.anthropic_upstream.clone(),
            context_timeout: Duration::from_millis(settings.context_timeout_ms),
        })
    }
}

/// Live counters (Settings → Proxy shows them).
#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicU64,
    injected: AtomicU64,
    recorded: AtomicU64,
    errors: AtomicU64,
}

/// A snapshot of [`Stats`].
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Requests forwarded.
    pub requests: u64,
    /// Requests memory was added to.
    pub injected: u64,
    /// Turns recorded.
    pub recorded: u64,
    /// Requests where something inside zblade failed (they went upstream unmodified).
    pub errors: u64,
}

impl Stats {
    /// The counters now.
    pub fn counts(&self) -> Counts {
        Counts {
            requests: self.requests.load(Ordering::Relaxed),
            injected: self.injected.load(Ordering::Relaxed),
            recorded: self.recorded.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running proxy.
pub struct Listening {
    /// The address bound (the real port when 0 was asked).
    pub addr: SocketAddr,
    /// Cancel to stop (requests in flight finish first).
    pub stop: CancellationToken,
    /// Live counters.
    pub stats: Arc<Stats>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Listening {
    /// Waits until the proxy stops.
    pub async fn wait(self) -> Result<(), String> {
        match self.task.await {
            Ok(result) => result.map_err(|e| format!("proxy: {e}")),
            Err(e) => Err(format!("proxy: {e}")),
        }
    }
}

/// Binds and starts serving; returns once the socket listens.
pub async fn serve(memory: Arc<dyn Memory>, options: ProxyOptions) -> Result<Listening, String> {
    if !options.listen.ip().is_loopback() {
        // The proxy holds the project's memory and relays the user's API keys: it is for this
        // machine only.
        return Err(format!(
            "refusing to listen on {}: the proxy serves this machine only; use a loopback address such as 127.0.0.1:8765",
            options.listen
        ));
    }
    let upstreams = forward::Upstreams::new(&options.openai_upstream, &options.anthropic_upstream)?;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let stats = Arc::new(Stats::default());
    let stop = CancellationToken::new();
    let proxy = forward::Proxy::new(memory, upstreams, options.context_timeout, Arc::clone(&stats))?;
    let router = forward::router(proxy);
    let stopping = stop.clone();
    // Events are small writes that must leave at once: no Nagle delay (40 ms a chunk otherwise).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        let _ = tcp.set_nodelay(true);
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stopping.cancelled().await })
            .await
    });
    Ok(Listening {
        addr,
        stop,
        stats,
        task,
    })
}
