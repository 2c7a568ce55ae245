//! `zblade doctor`: one row per coding agent saying how it and this project's memory are
//! connected — the agent's sessions of this project found and imported, zblade's MCP server in
//! its configuration, zblade's hooks in its settings — and, for what is missing, why and the
//! command that fixes it. Built from the import registry's [`Detected`] rows (with what the
//! project imported) and the configuration readers beside the writers in [`crate::install`].

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use zblade_engine::SourceStatus;
use zblade_import::AGENTS;

use crate::install::{Client, Places, Scope, hook_agent, hook_agent_names, hooks_file, is_zblade_hook};

/// One agent as this project sees it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentHealth {
    /// The agent's name on the command line (`claude-code`).
    pub agent: String,
    /// How people call it.
    pub label: String,
    /// Its sessions of this project found on this machine (all projects' in `sessions_all`).
    pub sessions: usize,
    /// Session files of every project.
    pub sessions_all: usize,
    /// Conversations of this project imported from it.
    pub imported: usize,
    /// New turns are imported live (the tray, `zblade watch`).
    pub followed: bool,
    /// The reader was checked only against the agent's code, not a file it wrote.
    pub experimental: bool,
    /// zblade's MCP server in the agent's configuration.
    pub mcp: Wiring,
    /// zblade's hooks in the agent's settings.
    pub hooks: Wiring,
}

/// Whether one connection is made, where, and if not, why and how to make it.
#[derive(Debug, Clone, Serialize)]
pub struct Wiring {
    /// Made.
    pub wired: bool,
    /// The files that make it.
    pub files: Vec<PathBuf>,
    /// Why it is not made, with the command that makes it; none when made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl Wiring {
    fn made(files: Vec<PathBuf>) -> Wiring {
        Wiring {
            wired: true,
            files,
            why_not: None,
        }
    }

    fn missing(why: impl Into<String>) -> Wiring {
        Wiring {
            wired: false,
            files: Vec::new(),
            why_not: Some(why.into()),
        }
    }
}

/// Every agent zblade knows, in the registry's order: those it imports (`sources`, from
/// [`zblade_engine::Project::sources`]) and those it reaches over MCP only.
pub fn agent_health(project: &Path, sources: &[SourceStatus], places: &Places) -> Vec<AgentHealth> {
    AGENTS
        .iter()
        .map(|agent| {
            let name = agent.source().as_str();
            let status = sources.iter().find(|s| s.detected.source.as_str() == name);
            AgentHealth {
                agent: name.to_string(),
                label: agent.label().to_string(),
                sessions: status.map_or(0, |s| s.detected.in_project),
                sessions_all: status.map_or(0, |s| s.detected.sessions),
                imported: status.map_or(0, |s| s.imported_conversations),
                followed: status.is_some_and(|s| s.followed),
                experimental: status.is_some_and(|s| s.detected.experimental),
                mcp: mcp_wiring(name, project, places),
                hooks: hooks_wiring(name, project, places),
            }
        })
        .collect()
}

fn mcp_wiring(name: &str, project: &Path, places: &Places) -> Wiring {
    let Some(client) = Client::parse(name) else {
        return Wiring::missing("zblade does not know where this agent keeps MCP servers yet");
    };
    let files: Vec<PathBuf> = [Scope::Project, Scope::User]
        .into_iter()
        .map(|scope| client.config_file(scope, project, places))
        .filter(|file| crate::install::configured(client, file))
        .collect();
    if files.is_empty() {
        Wiring::missing(format!("not in its configuration: zblade mcp install {name}"))
    } else {
        Wiring::made(files)
    }
}

fn hooks_wiring(name: &str, project: &Path, places: &Places) -> Wiring {
    let Some((_, config)) = hook_agent(name) else {
        return Wiring::missing(format!(
            "zblade writes hooks for {} so far (MCP serves the rest)",
            hook_agent_names().join(", ")
        ));
    };
    let files = [
        hooks_file(&config, Scope::Project, project, places),
        hooks_file(&config, Scope::User, project, places),
    ];
    let mut wired_in = Vec::new();
    let mut events: Vec<&str> = Vec::new();
    for file in files {
        let Some(settings) = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        else {
            continue;
        };
        let found: Vec<&str> = config
            .events
            .iter()
            .map(|e| e.event)
            .filter(|event| has_zblade_hook(&settings, event))
            .collect();
        if !found.is_empty() {
            wired_in.push(file);
            events.extend(found);
        }
    }
    let missing: Vec<&str> = config
        .events
        .iter()
        .map(|e| e.event)
        .filter(|e| !events.contains(e))
        .collect();
    match (wired_in.is_empty(), missing.is_empty()) {
        (true, _) => Wiring::missing(format!("no zblade hook in its settings: zblade hooks install {name}")),
        (false, true) => Wiring::made(wired_in),
        (false, false) => Wiring {
            wired: false,
            files: wired_in,
            why_not: Some(format!(
                "{} not wired (an older install): zblade hooks install {name}",
                missing.join(", ")
            )),
        },
    }
}

fn has_zblade_hook(settings: &Value, event: &str) -> bool {
    settings
        .pointer(&format!("/hooks/{event}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .any(is_zblade_hook)
}
