//! Where everything lives inside a project's `.zblade/` folder (RFC-002 + DESIGN.md).
//!
//! ```text
//! .zblade/
//!   instructions.md                    project instructions, always in context
//!   config/settings.json               storage mode, context budget, compression, privacy
//!   artifacts/conversations/<id>.json  conversation artifacts (the truth)
//!   artifacts/moments/<id>.json        moment artifacts (the truth)
//!   index/conversations.db             SQLite catalog (a rebuildable cache)
//!   index/vectors/                     LanceDB tables (a rebuildable cache)
//!   cache/                             hot caches
//!   .gitignore                         ignores index/ and cache/
//! ```

use std::path::{Path, PathBuf};

/// Name of the per-project folder.
pub const ZBLADE_DIR: &str = ".zblade";

/// The paths of one project's `.zblade/` folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
    dir: PathBuf,
}

impl Layout {
    /// The layout of the project whose working tree is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let dir = root.join(ZBLADE_DIR);
        Layout { root, dir }
    }

    /// Finds the nearest ancestor of `start` (itself included) that holds a `.zblade/` folder.
    pub fn discover(start: &Path) -> Option<Self> {
        start
            .ancestors()
            .find(|dir| dir.join(ZBLADE_DIR).is_dir())
            .map(Layout::new)
    }

    /// The project's working tree.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The `.zblade/` folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// `.zblade/instructions.md`.
    pub fn instructions(&self) -> PathBuf {
        self.dir.join("instructions.md")
    }
    /// `.zblade/config/`.
    pub fn config_dir(&self) -> PathBuf {
        self.dir.join("config")
    }
    /// `.zblade/config/settings.json`.
    pub fn settings(&self) -> PathBuf {
        self.config_dir().join("settings.json")
    }
    /// `.zblade/artifacts/`.
    pub fn artifacts_dir(&self) -> PathBuf {
        self.dir.join("artifacts")
    }
    /// `.zblade/artifacts/conversations/`.
    pub fn conversations_dir(&self) -> PathBuf {
        self.artifacts_dir().join("conversations")
    }
    /// `.zblade/artifacts/messages/`: every message once, named by its SHA-256.
    pub fn messages_dir(&self) -> PathBuf {
        self.artifacts_dir().join("messages")
    }
    /// The file of the stored message named `sha256` (already checked to be a digest):
    /// `messages/ab/abcdef….json`, 256 folders so none grows huge.
    pub fn message_path(&self, sha256: &str) -> PathBuf {
        self.messages_dir().join(&sha256[..2]).join(format!("{sha256}.json"))
    }
    /// `.zblade/artifacts/messages/packs/`: messages written together, one file per write.
    pub fn packs_dir(&self) -> PathBuf {
        self.messages_dir().join("packs")
    }
    /// The pack named `name` (already checked to be a pack name).
    pub fn pack_path(&self, name: &str) -> PathBuf {
        self.packs_dir().join(format!("{name}.jsonl"))
    }
    /// `.zblade/artifacts/moments/`.
    pub fn moments_dir(&self) -> PathBuf {
        self.artifacts_dir().join("moments")
    }
    /// `.zblade/index/`.
    pub fn index_dir(&self) -> PathBuf {
        self.dir.join("index")
    }
    /// `.zblade/index/conversations.db`.
    pub fn database(&self) -> PathBuf {
        self.index_dir().join("conversations.db")
    }
    /// `.zblade/index/vectors/`.
    pub fn vectors_dir(&self) -> PathBuf {
        self.index_dir().join("vectors")
    }
    /// `.zblade/cache/`.
    pub fn cache_dir(&self) -> PathBuf {
        self.dir.join("cache")
    }
    /// `.zblade/outbox/`: server mode's writes waiting for the server (never a cache: nothing
    /// in it may be deleted before the server has it).
    pub fn outbox_dir(&self) -> PathBuf {
        self.dir.join("outbox")
    }
    /// `.zblade/.gitignore`.
    pub fn gitignore(&self) -> PathBuf {
        self.dir.join(".gitignore")
    }
    /// The artifact file of conversation `id` (the id must already be validated).
    pub fn conversation_path(&self, id: &str) -> PathBuf {
        self.conversations_dir().join(format!("{id}.json"))
    }
    /// The artifact file of moment `id` (the id must already be validated).
    pub fn moment_path(&self, id: &str) -> PathBuf {
        self.moments_dir().join(format!("{id}.json"))
    }
    /// `path` relative to the project root, with `/` separators, for storing in the index.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discover_finds_the_nearest_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".zblade")).unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        let found = Layout::discover(&dir.path().join("src/deep")).unwrap();
        assert_eq!(found.root(), dir.path());
    }
}
