//! Streamable HTTP: rmcp's service mounted at `/mcp` in an axum router. A local MCP server is
//! reachable by every web page the user opens (DNS rebinding, cross-site requests), so it binds
//! to loopback unless told otherwise, checks `Host` (rmcp's default) and `Origin` (off in rmcp
//! by default, on here: only loopback origins pass, anything else gets 403), and can demand a
//! bearer token, which it must when bound beyond loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{Memory, ZbladeServer};

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    /// Required as `Authorization: Bearer TOKEN` when set.
    pub token: Option<String>,
}

/// A listening server: its address, and how to stop it.
pub struct Listening {
    /// The address bound (the real port when 0 was asked).
    pub addr: SocketAddr,
    /// Cancel to stop serving.
    pub stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Listening {
    /// Waits until the server stops (after `stop` is cancelled, or on an error).
    pub async fn wait(self) -> Result<(), String> {
        match self.task.await {
            Ok(result) => result.map_err(|e| format!("MCP over HTTP: {e}")),
            Err(e) => Err(format!("MCP over HTTP: {e}")),
        }
    }
}

/// Binds and starts serving; returns once the socket listens.
pub async fn serve(memory: Memory, options: HttpOptions) -> Result<Listening, String> {
    let loopback = options.addr.ip().is_loopback();
    if !loopback && options.token.is_none() {
        return Err(format!(
            "refusing to serve project memory on {} without a token: anyone who can reach it could read it. \
             Set a token (--token or settings.mcp.token), or bind to 127.0.0.1",
            options.addr
        ));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let stop = CancellationToken::new();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    if !loopback {
        hosts.push(addr.ip().to_string());
        hosts.push(addr.to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .with_cancellation_token(stop.child_token());
    let service: StreamableHttpService<ZbladeServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(ZbladeServer::new(memory.clone())),
        Default::default(),
        config,
    );
    let token: Option<Arc<str>> = options.token.map(Into::into);
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let token = token.clone();
            async move { authorize(token.as_deref(), request, next).await }
        }));
    let shutdown = stop.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await
    });
    Ok(Listening { addr, stop, task })
}

/// Lets a request through when no token is set or it carries the token.
async fn authorize(token: Option<&str>, request: Request, next: Next) -> Response {
    let Some(token) = token else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "a bearer token is required (Authorization: Bearer TOKEN)\n",
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Compares without an early exit, so timing does not tell how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
