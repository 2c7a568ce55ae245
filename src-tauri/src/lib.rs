//! zblade's desktop app: a thin Tauri 2 shell over [`zblade_engine`].
//!
//! - [`commands`]: what the UI calls, typed with tauri-specta; `ui/src/lib/bindings.ts` is
//!   generated from [`specta_builder`] (the `bindings_are_current` test checks it, and writes
//!   it with `ZBLADE_WRITE_BINDINGS=1`) and committed.
//! - [`indexer`]: the background indexer (index, then watch) that keeps running in the tray
//!   while the window is closed; beside it [`archive_push`], the background archive push; both
//!   run on a [`worker::Worker`] (a thread with a stop flag, joined on stop).
//! - [`archive`]: Settings → Archive (the permanent archive).
//! - [`tray`]: the tray icon and menu; [`relaunch`]: the light tray shape the app takes while
//!   its window is closed, and the window shape it takes to show it. [`config`]: the app's own settings (first-run wizard
//!   answers, recent projects). [`network`]: the consent gate every network use passes.
//!   [`guard`]: what the page may not do on its own word (leave the app's origin, open a link,
//!   turn network use on) without a native confirmation.
//! - [`chat`]: the Chat view and Settings → Models (zblade-chat's turns, streamed as events);
//!   [`keys`]: API keys in the OS keyring.
//!
//! The window shows the Svelte UI from `ui/dist` under a strict CSP; the only capability is the
//! main window's (see `capabilities/main.json`).

pub mod agents;
pub mod archive;
pub mod archive_push;
pub mod chat;
pub mod chat_state;
pub mod command_names;
pub mod commands;
pub mod config;
pub mod error;
pub mod events;
pub mod graph;
pub mod guard;
pub mod indexer;
pub mod instance;
pub mod keys;
pub mod network;
pub mod proxy;
pub mod relaunch;
pub mod sources;
pub mod state;
pub mod team;
pub mod tray;
pub mod updates;
pub mod views;
pub mod worker;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tauri::{AppHandle, Manager, RunEvent, WindowEvent};
use tauri_specta::{Event, collect_commands, collect_events};
use zblade_engine::Project;

use crate::error::AppResult;
use crate::events::{IndexerState, IndexerStatus, ReferencesChanged};
use crate::state::AppState;
use crate::updates::{IndexerUpdate, Sink};
use crate::views::{StatusCount, without_code};

/// Where the generated TypeScript bindings live.
pub const BINDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/src/lib/bindings.ts");

/// Every command and event the UI may use.
pub fn specta_builder() -> tauri_specta::Builder<tauri::Wry> {
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            commands::app_info,
            commands::complete_wizard,
            commands::set_allow_network,
            commands::open_link,
            commands::open_project,
            commands::project_status,
            commands::list_conversations,
            commands::conversation_detail,
            graph::fork_conversation,
            graph::merge_messages,
            graph::conversation_lineage,
            graph::prompt_history,
            commands::list_moments,
            commands::search,
            commands::context_preview,
            commands::reference_health,
            commands::reference_code,
            commands::why_lines,
            commands::decide,
            commands::settings_view,
            commands::import_compressor_model,
            commands::use_compressor_model,
            commands::import_embedding_model,
            commands::download_embedding_model,
            commands::server_check,
            commands::migration_pending,
            commands::migration_plan,
            commands::migrate,
            commands::migration_cleanup,
            commands::set_indexer_paused,
            commands::set_ignored_paths,
            commands::set_release_models_after,
            commands::indexer_status,
            commands::ui_ready,
            commands::list_sources,
            commands::set_source_followed,
            commands::import_source,
            commands::list_mcp_clients,
            commands::install_mcp_client,
            commands::install_agent_hooks,
            commands::proxy_status,
            commands::start_proxy,
            commands::stop_proxy,
            chat::chat_models,
            chat::save_chat_model,
            chat::remove_chat_model,
            chat::set_chat_tools,
            chat::chat_send,
            chat::chat_stop,
            chat::chat_answer_tool,
            archive::archive_status,
            archive::archive_setup,
            archive::archive_push,
            archive::archive_restore,
            archive::archive_background,
            archive::archive_forget,
            archive::archive_share,
            archive::archive_accept,
            team::team_members,
            team::team_invite,
            team::team_remove,
            team::team_leave,
            team::team_invitations,
            team::team_join,
        ])
        .events(collect_events![
            IndexerStatus,
            ReferencesChanged,
            events::DownloadProgress,
            events::MigrationProgress,
            events::ImportProgress,
            chat::ChatStream,
            archive::ArchiveProgress,
            archive::ArchiveBackground
        ])
}

/// Writes the TypeScript bindings to `path`.
pub fn export_bindings(path: &str) -> Result<(), String> {
    let exporter = specta_typescript::Typescript::default()
        .header("// Generated by `cargo test -p zblade-app` (src-tauri/src/lib.rs). Do not edit.\n// @ts-nocheck")
        .bigint(specta_typescript::BigIntExportBehavior::Number);
    specta_builder().export(exporter, path).map_err(|e| e.to_string())
}

/// Counts of references by status, with `drift` counted apart.
pub fn health_counts(project: &Project) -> AppResult<Vec<StatusCount>> {
    Ok(project
        .reference_health()?
        .into_iter()
        .map(|(status, count)| StatusCount {
            status,
            count: count.max(0) as u32,
        })
        .collect())
}

/// Where the indexer's updates go: the app's state, the tray, and events for the UI.
pub fn indexer_sink(app: AppHandle) -> Sink {
    Arc::new(move |update| match update {
        IndexerUpdate::Status(status) => publish_status(&app, status),
        IndexerUpdate::References { changed, trigger } => {
            let state = app.state::<AppState>();
            // The UI's project handle may be busy with a long command; the UI refetches
            // health when it is not sent.
            let health = match state.project.try_lock() {
                Ok(guard) => guard.as_ref().and_then(|p| health_counts(p).ok()).unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            let _ = ReferencesChanged {
                changed: changed.iter().map(without_code).collect(),
                trigger,
                health,
            }
            .emit(&app);
        }
        IndexerUpdate::Archive(round) => archive::publish_round(&app, round),
    })
}

fn publish_status(app: &AppHandle, status: IndexerStatus) {
    let state = app.state::<AppState>();
    // A stop caused by pausing reads as "paused", not "stopped".
    let status = if status.state == IndexerState::Stopped && state.config().indexer_paused {
        IndexerStatus::of(IndexerState::Paused)
    } else {
        status
    };
    *state.indexer_status.lock().expect("status lock") = status.clone();
    // The tray lives on the main thread, and Tauri makes other threads wait for it there. The
    // indexer must never wait for the main thread — which itself waits for the indexer when it
    // stops it (Quit, Pause, switching shape) — so the update is posted, not awaited.
    let (handle, shown) = (app.clone(), status.clone());
    let _ = app.run_on_main_thread(move || {
        if let Some(tray) = handle.try_state::<Mutex<Option<tray::Tray>>>()
            && let Some(tray) = tray.lock().expect("tray lock").as_ref()
        {
            tray.show_status(&shown);
        }
    });
    let _ = status.emit(app);
}

/// Pauses (stops the indexer after its current batch) or resumes (starts it again; it catches
/// up with what changed meanwhile) indexing, and remembers the choice.
pub fn set_paused(app: &AppHandle, state: &AppState, paused: bool) -> AppResult<IndexerStatus> {
    state.update_config(|c| c.indexer_paused = paused)?;
    if paused {
        state.stop_indexer();
        publish_status(app, IndexerStatus::of(IndexerState::Paused));
    } else if let Some(root) = state.project_root() {
        state.start_indexer(root, indexer_sink(app.clone()));
    } else {
        publish_status(app, IndexerStatus::of(IndexerState::Idle));
    }
    Ok(state.indexer_status.lock().expect("status lock").clone())
}

/// Replaces the process with the other shape (`exec` is [`relaunch::exec_tray`] or
/// [`relaunch::exec_window`]) on the open project, the indexer stopped cleanly first. Returns
/// only when that failed, with the indexer running again unless indexing is paused.
pub fn switch_shape(app: &AppHandle, exec: fn(Option<&std::path::Path>) -> std::io::Error, what: &str) {
    let state = app.state::<AppState>();
    let project = state.project_root();
    state.stop_indexer();
    let error = exec(project.as_deref());
    eprintln!("zblade: could not {what} ({error})");
    if let Some(root) = project
        && !state.config().indexer_paused
    {
        state.start_indexer(root, indexer_sink(app.clone()));
    }
}

/// Stops the indexer cleanly (it finishes the batch it is writing) and exits.
pub fn quit(app: &AppHandle) {
    app.state::<AppState>().stop_indexer();
    app.exit(0);
}

/// Whether a tray icon is shown (a desktop without a status-notifier host has none).
fn has_tray(app: &AppHandle) -> bool {
    app.try_state::<Mutex<Option<tray::Tray>>>()
        .is_some_and(|t| t.lock().expect("tray lock").is_some())
}

/// Runs the app.
pub fn run() {
    let started = Instant::now();
    let builder = specta_builder();
    let state = AppState::load(started);
    let hidden = std::env::args().any(|a| a == "--hidden");
    // `zblade-app [--hidden] [PROJECT_DIR]`: open that project (after the wizard on a first run).
    let open_arg = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(std::path::PathBuf::from);

    // In the tray the app runs in its light shape (see `relaunch`).
    if hidden && !relaunch::in_light_tray() {
        let error = relaunch::exec_tray(open_arg.as_deref());
        eprintln!("zblade: could not restart in the light tray shape ({error}); going on as is");
    }

    // One app per user: a second launch shows the running app's window and exits.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let launches = match instance::claim(&config::config_dir().join("app.sock"), &args) {
        Ok(instance::Claim::Forwarded) => {
            eprintln!("zblade: already running; its window is shown");
            return;
        }
        Ok(instance::Claim::First(listener)) => Some(listener),
        Err(error) => {
            eprintln!("zblade: could not check for a running zblade ({error}); starting anyway");
            None
        }
    };

    let app = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(state)
        .manage(Mutex::new(None::<tray::Tray>))
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            let handle = app.handle().clone();
            match tray::build(&handle) {
                Ok(tray) => *app.state::<Mutex<Option<tray::Tray>>>().lock().expect("tray lock") = Some(tray),
                Err(error) => eprintln!("zblade: no system tray ({error}); closing the window will quit"),
            }
            // The window is not created by the config (`create: false`): with `--hidden` the
            // app starts in the tray only, without a web view.
            if !hidden {
                tray::show_window(&handle);
            }
            if let Some(listener) = launches {
                let handle = handle.clone();
                instance::serve(listener, move |args| {
                    if !args.iter().any(|a| a == "--hidden") {
                        let shown = handle.clone();
                        let _ = handle.run_on_main_thread(move || tray::show_window(&shown));
                    }
                });
            }
            // Open the project named on the command line, else reopen the last one, so the tray
            // indexer keeps it current from the start.
            let state = app.state::<AppState>();
            let config = state.config();
            let target = open_arg.clone().or_else(|| {
                config
                    .recent_projects
                    .first()
                    .map(|p| std::path::PathBuf::from(&p.path))
            });
            if let Some(target) = target {
                if config.wizard_completed {
                    if let Err(error) = state.open_project(&target, false, indexer_sink(handle.clone())) {
                        eprintln!("zblade: could not open {}: {error}", target.display());
                    }
                } else {
                    *state.pending_open.lock().expect("pending lock") = Some(target);
                }
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { .. } = event {
                let app = window.app_handle();
                // With a tray the app goes back to its light tray shape, the indexer started
                // again there; should that fail, the window closes (its web view freed) and
                // `ExitRequested` below keeps the app alive. Without a tray, closing quits.
                if has_tray(app) {
                    switch_shape(app, relaunch::exec_tray, "return to the light tray shape");
                } else {
                    app.state::<AppState>().stop_indexer();
                }
            }
        })
        .build(tauri::generate_context!())
        .expect("zblade: could not start the app");

    app.run(|app, event| match event {
        // The last window closed (no exit code; `quit` passes one): stay in the tray.
        RunEvent::ExitRequested { code: None, api, .. } if has_tray(app) => api.prevent_exit(),
        RunEvent::Exit => app.state::<AppState>().stop_indexer(),
        _ => {}
    });
}

#[cfg(test)]
mod tests {
    /// The committed bindings are what the commands generate: generated into a temporary file
    /// and compared, so a stale `ui/src/lib/bindings.ts` fails here without touching it. With
    /// `ZBLADE_WRITE_BINDINGS=1` the test writes the file instead (then commit it).
    #[test]
    fn bindings_are_current() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("bindings.ts");
        super::export_bindings(fresh.to_str().unwrap()).unwrap();
        let generated = std::fs::read_to_string(&fresh).unwrap();
        assert!(generated.contains("SearchResults"), "the bindings lack the app's types");
        if std::env::var_os("ZBLADE_WRITE_BINDINGS").is_some() {
            std::fs::write(super::BINDINGS, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(super::BINDINGS).unwrap_or_default();
        assert!(
            committed == generated,
            "ui/src/lib/bindings.ts is out of date: regenerate it with ZBLADE_WRITE_BINDINGS=1 and the \
             zblade-app test `bindings_are_current`, then commit it"
        );
    }
    /// Every command the bindings call is declared in `command_names.rs` (so Tauri makes its
    /// permission), sits in exactly one group of `permissions/`, and every group is granted to
    /// the main window: a command added without a group fails here, not in the user's window.
    #[test]
    fn every_command_is_declared_grouped_and_granted() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("bindings.ts");
        super::export_bindings(fresh.to_str().unwrap()).unwrap();
        let bindings = std::fs::read_to_string(&fresh).unwrap();
        let mut called: Vec<&str> = bindings
            .split("TAURI_INVOKE(\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        called.sort();
        let mut declared = super::command_names::COMMAND_NAMES.to_vec();
        declared.sort();
        assert_eq!(
            called, declared,
            "src/command_names.rs must list exactly the commands of specta_builder"
        );

        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let capability = std::fs::read_to_string(root.join("capabilities/main.json")).unwrap();
        let mut grouped = Vec::new();
        for entry in std::fs::read_dir(root.join("permissions")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue; // `autogenerated/`: tauri-build's one permission per command
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let group = path.file_stem().unwrap().to_str().unwrap().to_string();
            assert!(
                text.contains(&format!("identifier = \"{group}\"")),
                "{}: the set's identifier must be its file name",
                path.display()
            );
            assert!(
                capability.contains(&format!("\"{group}\"")),
                "capabilities/main.json does not grant {group}"
            );
            grouped.extend(
                text.lines()
                    .filter_map(|l| l.trim().strip_prefix("\"allow-"))
                    .map(|l| l.trim_end_matches(['"', ',']).replace('-', "_")),
            );
        }
        grouped.sort();
        assert_eq!(
            grouped, declared,
            "each command belongs to exactly one group in src-tauri/permissions"
        );
    }
}
