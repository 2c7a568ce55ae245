//! The commands the UI calls. Each delegates to the engine; engine work runs on Tauri's
//! blocking pool (never on the UI or async threads), on the open project.

use std::path::PathBuf;
use std::sync::Arc;

use tauri::{AppHandle, Manager};
use tauri_specta::Event;
use zblade_engine::{
    CompressorModel, ContextRequest, ContextResult, ConversationSummary, MigrationDirection, MigrationPlan,
    MigrationReport, MomentSummary, MomentType, Page, PendingMigration, ReferenceReport, ReferenceStatus, SearchQuery,
    SearchResults, Shown, Status,
};
use zblade_engine::{DecisionState, Why};

use crate::config::AppConfig;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::{DownloadProgress, IndexerStatus, MigrationProgress};
use crate::state::{AppState, blocking, with_project};
use crate::views::*;

/// Most conversations the list loads (the UI virtualizes it).
const MAX_LIST: usize = 100_000;

/// Everything the UI needs at start.
#[derive(Debug, Clone, serde::Serialize, specta::Type)]
pub struct AppInfo {
    /// zblade's version.
    pub version: String,
    /// The app's settings (the wizard runs while `wizard_completed` is false).
    pub config: AppConfig,
    /// A problem with the settings file, said once.
    pub notice: Option<String>,
    /// The project open now (the app reopens the last one on start).
    pub project: Option<ProjectInfo>,
    /// The indexer now.
    pub indexer: IndexerStatus,
}

/// Everything the UI needs to start: version, settings, the open project, the indexer.
#[tauri::command]
#[specta::specta]
pub async fn app_info(app: AppHandle) -> AppResult<AppInfo> {
    blocking(app, |_, state| {
        Ok(AppInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            config: state.config(),
            notice: state.config_notice.lock().map_err(AppError::internal)?.take(),
            project: state.project_info(),
            indexer: state.indexer_status.lock().map_err(AppError::internal)?.clone(),
        })
    })
    .await
}

/// Records the first-run wizard's choices. Until this runs, nothing uses the network.
#[tauri::command]
#[specta::specta]
pub async fn complete_wizard(app: AppHandle, choice: WizardChoice) -> AppResult<crate::config::AppConfig> {
    blocking(app, move |app, state| {
        // The page asks; the person confirms natively, or the network stays off.
        let allow_network = choice.allow_network && confirm_network(app);
        let follow: Vec<String> = choice
            .follow_sources
            .iter()
            .filter(|name| zblade_engine::ImportSource::parse(name).is_some())
            .cloned()
            .collect();
        state.update_config(|c| {
            c.wizard_completed = true;
            c.storage_mode = choice.storage_mode;
            c.allow_network = allow_network;
            c.follow_sources = follow;
        })?;
        let pending = state.pending_open.lock().map_err(AppError::internal)?.take();
        if let Some(root) = pending {
            state.open_project(&root, false, crate::indexer_sink(app.clone()))?;
        }
        Ok(state.config())
    })
    .await
}

/// Allows or forbids network use from now on. Allowing it takes a yes in a native dialog (the
/// page alone cannot turn it on); a no leaves it off and is not an error.
#[tauri::command]
#[specta::specta]
pub async fn set_allow_network(app: AppHandle, allow: bool) -> AppResult<crate::config::AppConfig> {
    blocking(app, move |app, state| {
        if allow && !state.config().allow_network && !confirm_network(app) {
            return Ok(state.config());
        }
        state.update_config(|c| c.allow_network = allow)
    })
    .await
}

/// The native question before network use is allowed.
fn confirm_network(app: &AppHandle) -> bool {
    crate::guard::confirm(
        app,
        "Allow network use?",
        "zblade will be allowed to use the network: to download models you choose and to talk to a sync server you set up. \
         Nothing else is sent, and there is no telemetry. You can turn this off again in Settings → Privacy.",
        "Allow network use",
    )
}

/// Opens a link from a message in the system browser, after a native confirmation; false
/// when the person said no. Only http, https and mailto links are opened.
#[tauri::command]
#[specta::specta]
pub async fn open_link(app: AppHandle, url: String) -> AppResult<bool> {
    blocking(app, move |app, _| crate::guard::open_link(app, &url)).await
}

/// Opens the project at `path`; with `init`, creates its `.zblade/` first. A folder without
/// `.zblade/` and no `init` fails with `not_initialized`, so the UI can offer to create it.
#[tauri::command]
#[specta::specta]
pub async fn open_project(app: AppHandle, path: String, init: bool) -> AppResult<ProjectInfo> {
    if path.trim().is_empty() {
        return Err(AppError::new(ErrorCode::InvalidInput, "Choose a folder first."));
    }
    blocking(app, move |app, state| {
        state.open_project(&PathBuf::from(path.trim()), init, crate::indexer_sink(app.clone()))
    })
    .await
}

/// Counts, models and index health of the open project.
#[tauri::command]
#[specta::specta]
pub async fn project_status(app: AppHandle) -> AppResult<Status> {
    with_project(app, |project| Ok(project.status()?)).await
}

/// Conversations, newest first (up to `limit`).
#[tauri::command]
#[specta::specta]
pub async fn list_conversations(app: AppHandle, limit: u32) -> AppResult<Vec<ConversationSummary>> {
    with_project(app, move |project| {
        let rows = project.list_conversations(Page::first((limit as usize).min(MAX_LIST)), None)?;
        Ok(rows)
    })
    .await
}

/// One conversation with every message and each reference's live status.
#[tauri::command]
#[specta::specta]
pub async fn conversation_detail(app: AppHandle, id: String) -> AppResult<ConversationDetail> {
    with_project(app, move |project| match project.show(&id)? {
        Shown::Conversation {
            conversation,
            references,
        } => Ok(ConversationDetail {
            conversation: *conversation,
            references: references.iter().map(without_code).collect(),
        }),
        _ => Err(AppError::new(
            ErrorCode::InvalidInput,
            format!("{id} is not a conversation"),
        )),
    })
    .await
}

/// Moments, newest first, optionally of one type.
#[tauri::command]
#[specta::specta]
pub async fn list_moments(app: AppHandle, kind: Option<MomentType>) -> AppResult<Vec<MomentSummary>> {
    with_project(app, move |project| {
        let rows = project.list_moments(Page::first(MAX_LIST), kind.map(MomentType::as_str))?;
        Ok(rows)
    })
    .await
}

/// Hybrid search (keyword-only, with a notice, when no embedding model is installed).
#[tauri::command]
#[specta::specta]
pub async fn search(app: AppHandle, query: SearchQuery) -> AppResult<SearchResults> {
    with_project(app, move |project| Ok(project.search(&query)?)).await
}

/// Assembles the context for a query within a budget, with the receipt.
#[tauri::command]
#[specta::specta]
pub async fn context_preview(app: AppHandle, mut request: ContextRequest) -> AppResult<ContextResult> {
    if request.budget.is_some_and(|b| b < 64) {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "The budget must be at least 64 tokens.",
        ));
    }
    request.conversation = request.conversation.filter(|c| !c.is_empty());
    with_project(app, move |project| Ok(project.context(&request)?)).await
}

/// Reference health: every reference checked against the working tree now.
#[tauri::command]
#[specta::specta]
pub async fn reference_health(app: AppHandle) -> AppResult<HealthView> {
    with_project(app, |project| {
        let reports = project.check_references()?;
        let (problems, found): (Vec<ReferenceReport>, Vec<ReferenceReport>) =
            reports.into_iter().partition(|r| r.status != ReferenceStatus::Ok);
        Ok(HealthView {
            counts: crate::health_counts(project)?,
            drifted: found.into_iter().filter(|r| r.drift.is_some()).collect(),
            problems,
        })
    })
    .await
}

/// One reference with the code at its live location, read now.
#[tauri::command]
#[specta::specta]
pub async fn reference_code(app: AppHandle, key: String) -> AppResult<ReferenceReport> {
    with_project(app, move |project| Ok(project.reference(&key)?)).await
}

/// Why lines of a file are as they are: the commits that wrote them (and what became of each
/// commit's lines), and the turns and moments whose references overlap them.
#[tauri::command]
#[specta::specta]
pub async fn why_lines(app: AppHandle, file: String, lines: Option<(u32, u32)>) -> AppResult<Why> {
    with_project(app, move |project| Ok(project.why(&file, lines)?)).await
}

/// Marks a moment or conversation as superseded by `superseded_by`, or rejected with
/// `rejected_because`; with neither, it stands again.
#[tauri::command]
#[specta::specta]
pub async fn decide(
    app: AppHandle,
    id: String,
    superseded_by: Option<String>,
    rejected_because: Option<String>,
) -> AppResult<Option<DecisionState>> {
    with_project(app, move |project| match (superseded_by, rejected_because) {
        (Some(by), _) => Ok(Some(project.supersede(&id, &by)?)),
        (None, Some(reason)) => Ok(Some(project.reject(&id, &reason)?)),
        (None, None) => {
            project.reinstate(&id)?;
            Ok(None)
        }
    })
    .await
}

/// The settings view: app settings, models, compressor, ignored paths.
#[tauri::command]
#[specta::specta]
pub async fn settings_view(app: AppHandle) -> AppResult<SettingsView> {
    blocking(app, |_, state| {
        let config = state.config();
        let guard = state.project.lock().map_err(AppError::internal)?;
        let Some(project) = guard.as_ref() else {
            return Ok(SettingsView {
                app: config,
                project_storage_mode: None,
                release_models_after_minutes: None,
                embedding_models: Vec::new(),
                compressor_models: Vec::new(),
                compressor: "extractive".into(),
                compressor_notice: None,
                ignored_paths: Vec::new(),
            });
        };
        let compressor = project.compressor_status();
        Ok(SettingsView {
            app: config,
            project_storage_mode: Some(project.settings().storage.mode),
            release_models_after_minutes: Some(project.settings().search.release_models_after_minutes),
            embedding_models: project.list_models(),
            compressor_models: project.compressor_models(),
            compressor: compressor.compressor,
            compressor_notice: compressor.notice,
            ignored_paths: project.ignored_paths(),
        })
    })
    .await
}

/// Imports a GGUF compressor model from a file (checked to load first) and uses it.
#[tauri::command]
#[specta::specta]
pub async fn import_compressor_model(app: AppHandle, path: String) -> AppResult<CompressorModel> {
    with_project(app, move |project| {
        let installed = project.import_compressor_model(std::path::Path::new(&path), None, false, true)?;
        Ok(installed.model)
    })
    .await
}

/// Makes the compressor use an installed model, or none (`"none"`: extractive).
#[tauri::command]
#[specta::specta]
pub async fn use_compressor_model(app: AppHandle, name: String) -> AppResult<()> {
    with_project(app, move |project| Ok(project.use_compressor_model(&name)?)).await
}

/// Downloads an embedding model by name and makes search use it, reporting progress as
/// `DownloadProgress` events. Refused, before any request is made, unless the user allowed
/// network use in the wizard or in Settings.
#[tauri::command]
#[specta::specta]
pub async fn download_embedding_model(app: AppHandle, name: String) -> AppResult<String> {
    blocking(app, move |app, state| {
        let config = state.config();
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let emitter = app.clone();
        let hub = crate::network::model_hub();
        let report =
            crate::network::download_embedding_model(&config, project, &name, &hub, &mut |file, done, total| {
                let _ = DownloadProgress {
                    name: name.clone(),
                    file: file.to_string(),
                    done: done as f64,
                    total: total.unwrap_or(0) as f64,
                }
                .emit(&emitter);
            })?;
        Ok(report.dir)
    })
    .await
}

/// Installs an embedding model from a folder on this machine (no network) and makes search
/// use it; returns where it was installed.
#[tauri::command]
#[specta::specta]
pub async fn import_embedding_model(app: AppHandle, path: String) -> AppResult<String> {
    with_project(app, move |project| {
        Ok(project
            .import_model(std::path::Path::new(&path), None, false, true)?
            .dir)
    })
    .await
}

/// Pauses or resumes the background indexer.
#[tauri::command]
#[specta::specta]
pub async fn set_indexer_paused(app: AppHandle, paused: bool) -> AppResult<IndexerStatus> {
    blocking(app, move |app, state| crate::set_paused(app, state, paused)).await
}

/// Replaces the project's `.zbladeignore` (paths zblade leaves out, gitignore syntax) and
/// re-indexes so the change takes effect.
#[tauri::command]
#[specta::specta]
pub async fn set_ignored_paths(app: AppHandle, lines: Vec<String>) -> AppResult<Vec<String>> {
    blocking(app, move |app, state| {
        let root = state.project_root().ok_or_else(AppError::no_project)?;
        let cleaned = {
            let guard = state.project.lock().map_err(AppError::internal)?;
            let project = guard.as_ref().ok_or_else(AppError::no_project)?;
            project.set_ignored_paths(&lines)?
        };
        if !state.config().indexer_paused {
            state.start_indexer(root, crate::indexer_sink(app.clone()));
        }
        Ok(cleaned)
    })
    .await
}

/// Sets how many idle minutes the open project's embedding models and vector tables stay
/// loaded (`search.release_models_after_minutes`; 0 keeps them). The tray indexer, which holds
/// a project of its own, is restarted to read it.
#[tauri::command]
#[specta::specta]
pub async fn set_release_models_after(app: AppHandle, minutes: u32) -> AppResult<u32> {
    blocking(app, move |app, state| {
        let root = state.project_root().ok_or_else(AppError::no_project)?;
        {
            let mut guard = state.project.lock().map_err(AppError::internal)?;
            let project = guard.as_mut().ok_or_else(AppError::no_project)?;
            project.set_release_models_after_minutes(minutes)?;
        }
        if !state.config().indexer_paused {
            state.start_indexer(root, crate::indexer_sink(app.clone()));
        }
        Ok(minutes)
    })
    .await
}

/// Called by the UI once its first view is on screen; returns milliseconds since the process
/// started. With `ZBLADE_STARTUP_REPORT=FILE` the time is also written there (the startup
/// benchmark reads it).
#[tauri::command]
#[specta::specta]
pub async fn ui_ready(app: AppHandle) -> AppResult<f64> {
    let state = app.state::<AppState>();
    let ms = state.started.elapsed().as_secs_f64() * 1000.0;
    if let Some(file) = std::env::var_os("ZBLADE_STARTUP_REPORT") {
        let _ = std::fs::write(file, format!("{ms:.1}\n"));
    }
    Ok(ms)
}

/// The indexer's state now.
#[tauri::command]
#[specta::specta]
pub async fn indexer_status(app: AppHandle) -> AppResult<IndexerStatus> {
    let state = app.state::<AppState>();
    let status = state.indexer_status.lock().map_err(AppError::internal)?.clone();
    Ok(status)
}

/// A client of `url` with `token` (empty: the token saved for that server), after the user's
/// consent to use the network. Plain http to another machine only with `allow_insecure_http`
/// (the wizard's box, shown with its warning).
fn server_client(
    state: &AppState,
    url: &str,
    token: &str,
    allow_insecure_http: bool,
) -> AppResult<zblade_sync::Client> {
    crate::network::require_consent(&state.config(), "Talking to a sync server")?;
    let transport = zblade_sync::Transport::allowing_plain_http(allow_insecure_http);
    Ok(zblade_engine::connect(url, Some(token), transport)?.0)
}

/// Checks a server URL and token; returns the user name the token belongs to.
#[tauri::command]
#[specta::specta]
pub async fn server_check(app: AppHandle, url: String, token: String, allow_insecure_http: bool) -> AppResult<String> {
    blocking(app, move |_, state| {
        Ok(server_client(state, &url, &token, allow_insecure_http)?.whoami()?)
    })
    .await
}

/// The migration an earlier run left unfinished, if any.
#[tauri::command]
#[specta::specta]
pub async fn migration_pending(app: AppHandle) -> AppResult<Option<PendingMigration>> {
    with_project(app, |project| Ok(project.pending_migration()?)).await
}

/// What a migration would move, without moving anything.
#[tauri::command]
#[specta::specta]
pub async fn migration_plan(
    app: AppHandle,
    direction: MigrationDirection,
    url: String,
    token: String,
    allow_insecure_http: bool,
) -> AppResult<MigrationPlan> {
    blocking(app, move |_, state| {
        let client = server_client(state, &url, &token, allow_insecure_http)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        Ok(project.plan_migration(direction, &client)?)
    })
    .await
}

/// Runs (or resumes) a migration: copy, verify, switch the storage mode; reports progress
/// with `MigrationProgress` events.
#[tauri::command]
#[specta::specta]
pub async fn migrate(
    app: AppHandle,
    direction: MigrationDirection,
    url: String,
    token: String,
    allow_insecure_http: bool,
) -> AppResult<MigrationReport> {
    blocking(app, move |app, state| {
        let client = server_client(state, &url, &token, allow_insecure_http)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let emitter = app.clone();
        let report = project.migrate(direction, &client, &mut |phase, done, total| {
            let _ = MigrationProgress {
                phase,
                done: done as f64,
                total: total as f64,
            }
            .emit(&emitter);
        })?;
        Ok(report)
    })
    .await
}

/// After a finished migration, removes the copies left at the source that still have the
/// verified hash; says how many, and which changed items were kept.
#[tauri::command]
#[specta::specta]
pub async fn migration_cleanup(
    app: AppHandle,
    url: String,
    token: String,
    allow_insecure_http: bool,
) -> AppResult<zblade_engine::CleanupReport> {
    blocking(app, move |_, state| {
        let client = server_client(state, &url, &token, allow_insecure_http)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        Ok(project.cleanup_migration_source(&client)?)
    })
    .await
}

/// The coding agents on this machine: their stores, session counts, and for the open project
/// its sessions, whether it follows them and what was imported. Works without a project (the
/// wizard), with no per-project counts.
#[tauri::command]
#[specta::specta]
pub async fn list_sources(app: AppHandle) -> AppResult<Vec<SourceView>> {
    blocking(app, move |_, state| {
        let guard = state.project.lock().map_err(AppError::internal)?;
        Ok(crate::sources::views(guard.as_ref()))
    })
    .await
}

/// Follows an agent live in the open project (or stops); the choice is also remembered for
/// projects opened later.
#[tauri::command]
#[specta::specta]
pub async fn set_source_followed(app: AppHandle, source: String, followed: bool) -> AppResult<Vec<SourceView>> {
    blocking(app, move |_, state| {
        let parsed = crate::sources::parse(&source)?;
        state.update_config(|c| {
            c.follow_sources.retain(|s| s != &source);
            if followed {
                c.follow_sources.push(source.clone());
            }
        })?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        if let Some(project) = guard.as_mut() {
            project.set_source_enabled(parsed, followed)?;
        }
        Ok(crate::sources::views(guard.as_ref()))
    })
    .await
}

/// Imports what is new from one agent into the open project now ("Import now" is consent for
/// this run), reporting progress as `ImportProgress` events.
#[tauri::command]
#[specta::specta]
pub async fn import_source(app: AppHandle, source: String) -> AppResult<zblade_engine::ImportReport> {
    blocking(app, move |app, state| {
        let parsed = crate::sources::parse(&source)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let emitter = app.clone();
        let report = project.import(&zblade_engine::ImportRequest::new(parsed), &mut |done, total, _| {
            let _ = crate::events::ImportProgress {
                source: source.clone(),
                done: done as u32,
                total: total as u32,
            }
            .emit(&emitter);
        })?;
        Ok(report)
    })
    .await
}

/// Every coding agent and its connection to the open project's memory (`zblade doctor`):
/// sessions found and imported, zblade's MCP server and hooks, and why what is missing is.
#[tauri::command]
#[specta::specta]
pub async fn list_mcp_clients(app: AppHandle) -> AppResult<Vec<McpClientView>> {
    with_project(app, |project| Ok(crate::agents::views(project))).await
}

/// Adds zblade's MCP server to one agent's configuration (the project's file; Codex: the
/// user's), merged into what is there, exactly as `zblade mcp install CLIENT` does.
#[tauri::command]
#[specta::specta]
pub async fn install_mcp_client(app: AppHandle, client: String) -> AppResult<Vec<McpClientView>> {
    with_project(app, move |project| {
        let root = project.layout().root().to_path_buf();
        crate::agents::install(&root, &client)?;
        Ok(crate::agents::views(project))
    })
    .await
}

/// Adds zblade's hooks to one agent's settings (Claude Code: the project's; Gemini CLI and Qwen
/// Code: the user's), merged into what is there, exactly as `zblade hooks install AGENT` does.
#[tauri::command]
#[specta::specta]
pub async fn install_agent_hooks(app: AppHandle, agent: String) -> AppResult<Vec<McpClientView>> {
    with_project(app, move |project| {
        let root = project.layout().root().to_path_buf();
        crate::agents::install_hooks(&root, &agent)?;
        Ok(crate::agents::views(project))
    })
    .await
}

/// The model proxy: running or not, its address, live counts.
#[tauri::command]
#[specta::specta]
pub async fn proxy_status(app: AppHandle) -> AppResult<ProxyView> {
    let state = app.state::<AppState>();
    let running = state.proxy.lock().await;
    Ok(crate::proxy::view(running.as_ref()))
}

/// Starts the model proxy on the open project (its `proxy` settings: address, upstreams).
#[tauri::command]
#[specta::specta]
pub async fn start_proxy(app: AppHandle) -> AppResult<ProxyView> {
    let state = app.state::<AppState>();
    let mut running = state.proxy.lock().await;
    if running.is_none() {
        *running = Some(crate::proxy::start(Arc::clone(&state.project)).await?);
    }
    Ok(crate::proxy::view(running.as_ref()))
}

/// Stops the model proxy (requests in flight finish first).
#[tauri::command]
#[specta::specta]
pub async fn stop_proxy(app: AppHandle) -> AppResult<ProxyView> {
    let state = app.state::<AppState>();
    let mut running = state.proxy.lock().await;
    *running = None; // dropping it stops it
    Ok(crate::proxy::view(None))
}
