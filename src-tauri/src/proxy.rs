//! Settings → Proxy: the model proxy run inside the app, on the open project (whichever is open
//! when a request arrives). The proxy is zblade-proxy's, the same as `zblade proxy`; this file
//! starts and stops it and reports its address and live counts.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use zblade_engine::Project;
use zblade_proxy::{ProxyOptions, Stats};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::views::ProxyView;

/// A proxy the app started.
pub struct RunningProxy {
    options: ProxyOptions,
    addr: std::net::SocketAddr,
    stop: CancellationToken,
    stats: Arc<Stats>,
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts the proxy with the open project's `proxy` settings.
pub async fn start(project: Arc<Mutex<Option<Project>>>) -> AppResult<RunningProxy> {
    let options = {
        let guard = project.lock().map_err(AppError::internal)?;
        let open = guard.as_ref().ok_or_else(AppError::no_project)?;
        ProxyOptions::from_settings(&open.settings().proxy).map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?
    };
    let memory: Arc<dyn zblade_proxy::Memory> = Arc::new(project);
    let listening = zblade_proxy::serve(memory, options.clone())
        .await
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?;
    let running = RunningProxy {
        options,
        addr: listening.addr,
        stop: listening.stop.clone(),
        stats: Arc::clone(&listening.stats),
    };
    tauri::async_runtime::spawn(async move {
        if let Err(e) = listening.wait().await {
            eprintln!("zblade-app: {e}");
        }
    });
    Ok(running)
}

/// What Settings → Proxy shows.
pub fn view(running: Option<&RunningProxy>) -> ProxyView {
    match running {
        Some(proxy) => {
            let counts = proxy.stats.counts();
            ProxyView {
                running: true,
                address: Some(format!("http://{}", proxy.addr)),
                openai_base_url: Some(format!("http://{}/v1", proxy.addr)),
                openai_upstream: proxy.options.openai_upstream.clone(),
                anthropic_upstream: proxy.options.anthropic_upstream.clone(),
                requests: counts.requests as u32,
                injected: counts.injected as u32,
                recorded: counts.recorded as u32,
                errors: counts.errors as u32,
            }
        }
        None => ProxyView::default(),
    }
}
