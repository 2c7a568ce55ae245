//! What the app holds while it runs: its settings, the open project (the UI's handle on it) and
//! the background indexer of that project.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tauri::{AppHandle, Manager};
use zblade_engine::Project;

use crate::archive_push::BackgroundPush;
use crate::chat_state::ChatState;
use crate::config::{self, AppConfig};
use crate::error::{AppError, AppResult};
use crate::events::{IndexerState, IndexerStatus};
use crate::indexer::Indexer;
use crate::updates::Sink;
use crate::views::ProjectInfo;

/// The app's state, shared by every command.
pub struct AppState {
    /// Where the app's settings live.
    pub config_path: PathBuf,
    /// The app's settings.
    pub config: Mutex<AppConfig>,
    /// A problem reading the settings, shown once.
    pub config_notice: Mutex<Option<String>>,
    /// The open project, for the UI's reads and writes (and the warm engine's answers).
    pub project: Arc<Mutex<Option<Project>>>,
    /// The open project's warm engine: agent hooks and `zblade context` ask it over a local
    /// socket instead of loading the embedding model themselves.
    pub warm: Mutex<Option<zblade_engine::warm::WarmServer>>,
    /// The model proxy, when started from Settings → Proxy.
    pub proxy: tokio::sync::Mutex<Option<crate::proxy::RunningProxy>>,
    /// The indexer of the open project.
    pub indexer: Mutex<Option<Indexer>>,
    /// The indexer's last reported status.
    pub indexer_status: Mutex<IndexerStatus>,
    /// The open project's background archive push (runs beside the indexer; does nothing
    /// unless the project's archive asks for it).
    pub archive_push: Mutex<Option<BackgroundPush>>,
    /// Its last round, in words, for Settings → Archive.
    pub archive_background: Mutex<Option<String>>,
    /// The app's network consent, for threads that must not lock the settings.
    pub network_allowed: Arc<AtomicBool>,
    /// When the process started (for the startup benchmark).
    pub started: Instant,
    /// A project named on the command line, opened once the first-run wizard is completed.
    pub pending_open: Mutex<Option<PathBuf>>,
    /// The Chat view's handle, loaded model, stop flag and keys.
    pub chat: ChatState,
}

/// How often the app looks whether the open project's models sat unused long enough to let go.
const RELEASE_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// Starts the thread that lets the open project's embedding models and vector tables go after
/// `search.release_models_after_minutes` unused (the tray indexer's own project does the same in
/// its watch loop): an app idling in the tray gives that memory back. It ends with the app.
fn release_idle_models(project: &Arc<Mutex<Option<Project>>>) {
    let project = Arc::downgrade(project);
    let spawned = std::thread::Builder::new()
        .name("zblade-release".into())
        .spawn(move || {
            loop {
                std::thread::sleep(RELEASE_CHECK_EVERY);
                let Some(project) = project.upgrade() else { return };
                // Busy (a search, an import): it is not idle; look again later.
                if let Ok(mut open) = project.try_lock()
                    && let Some(project) = open.as_mut()
                {
                    project.release_idle_models();
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("zblade: models will stay loaded (no release thread: {e})");
    }
}

/// Runs `work` on the blocking pool with the app's state.
pub(crate) async fn blocking<T: Send + 'static>(
    app: AppHandle,
    work: impl FnOnce(&AppHandle, &AppState) -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        work(&app, &state)
    })
    .await
    .map_err(AppError::internal)?
}

/// Runs `work` on the blocking pool with the open project.
pub(crate) async fn with_project<T: Send + 'static>(
    app: AppHandle,
    work: impl FnOnce(&mut Project) -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    blocking(app, move |_, state| {
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        work(project)
    })
    .await
}

impl AppState {
    /// Loads the app's settings from the config directory.
    pub fn load(started: Instant) -> AppState {
        let config_path = config::config_dir().join("app.json");
        let (config, notice) = config::load(&config_path);
        let network_allowed = Arc::new(AtomicBool::new(config.allow_network));
        let project = Arc::new(Mutex::new(None));
        release_idle_models(&project);
        AppState {
            config_path,
            config: Mutex::new(config),
            config_notice: Mutex::new(notice),
            project,
            warm: Mutex::new(None),
            proxy: tokio::sync::Mutex::new(None),
            indexer: Mutex::new(None),
            indexer_status: Mutex::new(IndexerStatus::of(IndexerState::Idle)),
            archive_push: Mutex::new(None),
            archive_background: Mutex::new(None),
            network_allowed,
            started,
            pending_open: Mutex::new(None),
            chat: ChatState::default(),
        }
    }

    /// A copy of the settings.
    pub fn config(&self) -> AppConfig {
        self.config.lock().expect("config lock").clone()
    }

    /// Changes the settings and writes them.
    pub fn update_config(&self, change: impl FnOnce(&mut AppConfig)) -> AppResult<AppConfig> {
        let mut config = self.config.lock().expect("config lock");
        let mut next = config.clone();
        change(&mut next);
        config::save(&self.config_path, &next)
            .map_err(|e| AppError::internal(format!("{}: {e}", self.config_path.display())))?;
        *config = next.clone();
        self.network_allowed.store(next.allow_network, Ordering::Relaxed);
        Ok(next)
    }

    /// Opens (or, with `init`, first creates `.zblade/` in) the project at `root`, makes it the
    /// open project, remembers it, and restarts the indexer on it unless indexing is paused.
    pub fn open_project(&self, root: &Path, init: bool, sink: Sink) -> AppResult<ProjectInfo> {
        let root = root
            .canonicalize()
            .map_err(|e| AppError::new(crate::error::ErrorCode::NotFound, format!("{}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(AppError::new(
                crate::error::ErrorCode::InvalidInput,
                format!("{} is not a folder", root.display()),
            ));
        }
        let mut project = if init {
            let project = Project::init(&root)?.0;
            zblade_engine::remember_project(&root);
            project
        } else {
            Project::open(&root)?
        };
        // Agents the user agreed to import from (wizard, Settings → Sources) are followed in
        // every project they open.
        for name in self.config().follow_sources {
            if let Some(source) = zblade_engine::ImportSource::parse(&name)
                && !project.enabled_sources().contains(&source)
            {
                project.set_source_enabled(source, true)?;
            }
        }
        let info = project_info(&project);
        self.stop_indexer();
        *self.project.lock().expect("project lock") = Some(project);
        self.serve_warm(&root);
        let config = self.update_config(|c| c.remember(&root))?;
        if !config.indexer_paused {
            self.start_indexer(root, sink);
        } else {
            *self.indexer_status.lock().expect("status lock") = IndexerStatus::of(IndexerState::Paused);
        }
        Ok(info)
    }

    /// Answers short-lived zblade processes for the project at `root` (see
    /// `zblade_engine::warm`); a `zblade serve` already doing it for that project is left to it.
    fn serve_warm(&self, root: &Path) {
        let mut warm = self.warm.lock().expect("warm lock");
        *warm = None; // the previous project's socket goes first
        let project = Arc::clone(&self.project);
        let served = root.to_path_buf();
        match zblade_engine::warm::serve(root, move |request| {
            let project = project.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match project.as_ref() {
                Some(project) if project.layout().root() == served => zblade_engine::warm::handle(project, &request),
                _ => Err("the app no longer has this project open".into()),
            }
        }) {
            Ok(server) => *warm = Some(server),
            Err(e) => eprintln!("zblade: the warm engine for {} is not served: {e}", root.display()),
        }
    }

    /// The open project's info.
    pub fn project_info(&self) -> Option<ProjectInfo> {
        self.project.lock().expect("project lock").as_ref().map(project_info)
    }

    /// The open project's root.
    pub fn project_root(&self) -> Option<PathBuf> {
        self.project
            .lock()
            .expect("project lock")
            .as_ref()
            .map(|p| p.layout().root().to_path_buf())
    }

    /// Starts the indexer on `root` (stopping any other first), and the background archive
    /// push beside it.
    pub fn start_indexer(&self, root: PathBuf, sink: Sink) {
        self.stop_indexer();
        *self.archive_push.lock().expect("archive push lock") = Some(BackgroundPush::start(
            root.clone(),
            crate::archive_push::interval(),
            self.network_allowed.clone(),
            sink.clone(),
        ));
        *self.indexer.lock().expect("indexer lock") = Some(Indexer::start(root, sink));
    }

    /// Stops the indexer, waiting for it to finish the batch it is writing, and the
    /// background archive push (after the push in flight).
    pub fn stop_indexer(&self) {
        let indexer = self.indexer.lock().expect("indexer lock").take();
        if let Some(indexer) = indexer {
            indexer.stop();
        }
        let push = self.archive_push.lock().expect("archive push lock").take();
        if let Some(push) = push {
            push.stop();
        }
        *self.archive_background.lock().expect("archive background lock") = None;
    }
}

fn project_info(project: &Project) -> ProjectInfo {
    let root = project.layout().root();
    ProjectInfo {
        root: root.to_string_lossy().into_owned(),
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        project_id: project.settings().project.id.clone(),
        storage_mode: project.settings().storage.mode,
    }
}
