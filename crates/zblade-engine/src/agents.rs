//! [`Agents`]: where this machine's coding agents keep their sessions, as a project sees them —
//! the home folder and the agents' environment overrides, read once when the project opens (or
//! set for tests and other user profiles). Reading the sessions is `import/`'s work.

use std::path::{Path, PathBuf};

use zblade_import::detect::Places;
use zblade_import::detect::{find_session_files, summarize};
use zblade_import::{Detected, Source};

/// The agents store; see the module documentation.
#[derive(Debug)]
pub(crate) struct Agents {
    places: Places,
}

impl Agents {
    /// The places this process's home and environment name.
    pub(crate) fn from_env() -> Agents {
        Agents {
            places: Places::from_env(),
        }
    }

    /// Looks for sessions under `places` from now on.
    pub(crate) fn use_places(&mut self, places: Places) {
        self.places = places;
    }

    /// The folders where `source` keeps sessions of the project at `root`.
    pub(crate) fn stores(&self, source: Source, root: &Path) -> Vec<PathBuf> {
        self.places.stores(source, root)
    }

    /// What each agent has on this machine: where it keeps sessions, and, with a project, its
    /// sessions counted apart (the app's first-run wizard asks before any project is open).
    pub(crate) fn detect(&self, project: Option<&Path>) -> Vec<Detected> {
        Source::all()
            .map(|source| {
                let stores = source.agent().stores(&self.places, project);
                let files = find_session_files(source, &stores);
                let stores = stores.into_iter().filter(|s| s.exists()).collect();
                summarize(source, stores, &files, project)
            })
            .collect()
    }
}
