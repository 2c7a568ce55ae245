//! zblade's MCP face: the project memory as a Model Context Protocol server, on the official
//! Rust SDK (rmcp), and the client configurations that point agents at it.
//!
//! - [`serve_stdio`]: `zblade mcp`, one client on stdin/stdout (nothing else is written there);
//! - [`http::serve`]: `zblade mcp --http 127.0.0.1:PORT`, Streamable HTTP at `/mcp`, loopback
//!   by default, `Origin` checked, an optional bearer token;
//! - [`install`]: `zblade mcp install CLIENT` and `zblade hooks install|uninstall AGENT`;
//! - [`doctor`]: `zblade doctor`, how each agent is connected to the project's memory.
//!
//! Every tool is a thin call into [`zblade_engine::Project`]; nothing here knows how memory is
//! stored or searched. See docs/MCP.md.

pub mod doctor;
pub mod http;
pub mod install;
mod server;
mod tools;

use std::sync::{Arc, Mutex};

use zblade_engine::Project;

pub use server::{CONVERSATION_PREFIX, INSTRUCTIONS_URI, MOMENT_PREFIX, START_PROMPT, ZbladeServer};
pub use zblade_tools::DATA_NOTICE;

/// The project every connection of one server answers from. The engine is synchronous and
/// its writes need `&mut`, so calls take turns on a blocking thread; embedding models and
/// vector tables load on first use (a search), never at start.
#[derive(Clone)]
pub struct Memory {
    project: Arc<Mutex<Project>>,
}

impl Memory {
    /// Memory over an open project.
    pub fn new(project: Project) -> Memory {
        Memory {
            project: Arc::new(Mutex::new(project)),
        }
    }

    /// Runs `call` on the project on a blocking thread; a panic in it becomes an error.
    pub async fn with<T: Send + 'static>(
        &self,
        call: impl FnOnce(&mut Project) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let project = Arc::clone(&self.project);
        tokio::task::spawn_blocking(move || {
            // A panic in an earlier call poisons the lock; the project itself is still sound
            // (every write is atomic), so later calls go on.
            let mut project = project.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            call(&mut project)
        })
        .await
        .unwrap_or_else(|e| Err(format!("zblade failed inside this call: {e}")))
    }
}

/// Serves one client over stdin/stdout until it closes the connection.
pub async fn serve_stdio(memory: Memory) -> Result<(), String> {
    use rmcp::ServiceExt;
    let service = ZbladeServer::new(memory)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| format!("MCP over stdio: {e}"))?;
    service.waiting().await.map_err(|e| format!("MCP over stdio: {e}"))?;
    Ok(())
}

/// The tool definitions `tools/list` gives (for `zblade mcp --list-tools` and benchmarks).
pub fn tool_definitions() -> serde_json::Value {
    serde_json::to_value(tools::all()).expect("tool definitions serialise")
}
