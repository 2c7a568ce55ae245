//! [`Parts`]: what this machine holds for a project while it is open — its `.zblade/` folder
//! and settings, the SQLite index, and one store per concern that keeps state between calls:
//! [`Semantic`] (embedding models, query vectors, vector tables, the gate's null),
//! [`CompressorStore`] (the local compressor model) and [`Agents`] (where agents keep sessions).
//!
//! The parts know nothing of the `Project` or of where conversations are stored (`.zblade/` or
//! a sync server): the storage is handed the parts, so work that only reads the working tree,
//! the index or the models is `impl Parts` and any storage can call it. The faces never see the
//! parts: they call [`crate::Project`], which reaches each store through an accessor.

use zblade_core::{Error, Layout, Result, Settings};
use zblade_index::Index;

use crate::agents::Agents;
use crate::compressor_store::CompressorStore;
use crate::semantic::Semantic;

/// A project's parts; see the module documentation.
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) layout: Layout,
    pub(crate) settings: Settings,
    /// `Err` holds why the index could not be opened (damaged file); `reindex` recreates it.
    pub(crate) index: std::result::Result<Index, String>,
    pub(crate) semantic: Semantic,
    pub(crate) compressor: CompressorStore,
    pub(crate) agents: Agents,
}

impl Parts {
    /// The parts of the project in `layout`, nothing loaded yet.
    pub(crate) fn new(layout: Layout, settings: Settings, index: std::result::Result<Index, String>) -> Parts {
        Parts {
            semantic: Semantic::new(&settings, &layout.vectors_dir()),
            compressor: CompressorStore::default(),
            agents: Agents::from_env(),
            layout,
            settings,
            index,
        }
    }

    /// The project's name as a sync server lists it: its folder's name.
    pub(crate) fn folder_name(&self) -> String {
        self.layout
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The project's paths.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The project's settings as loaded.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether contexts count their tokens in cl100k_base (no compressor model counts them).
    pub(crate) fn counts_in_cl100k(&self) -> bool {
        self.compressor.counts_in_cl100k(&self.settings.context.compression)
    }

    /// The semantic search store.
    pub(crate) fn semantic(&self) -> &Semantic {
        &self.semantic
    }

    /// The rules for files zblade never reads as project code: built-in secrets and tool
    /// folders plus this project's `privacy.secret_files` ([`zblade_core::protected`]).
    pub(crate) fn path_guard(&self) -> zblade_core::PathGuard {
        zblade_core::PathGuard::new(&self.settings.privacy.secret_files)
    }

    pub(crate) fn index(&self) -> Result<&Index> {
        self.index.as_ref().map_err(|message| Error::IndexCorrupt {
            path: self.layout.database(),
            message: message.clone(),
            source: None,
        })
    }

    pub(crate) fn index_mut(&mut self) -> Result<&mut Index> {
        let path = self.layout.database();
        self.index.as_mut().map_err(|message| Error::IndexCorrupt {
            path,
            message: message.clone(),
            source: None,
        })
    }
}
