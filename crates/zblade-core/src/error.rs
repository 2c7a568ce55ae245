//! The error type shared by every zblade crate.
//!
//! Each variant carries a stable machine-readable [`Error::code`] so that callers (the CLI's
//! exit code, the desktop app's UI) classify failures without matching on message text, and
//! [`Error::is_user_error`] separates the user's mistakes (exit 1) from failures of zblade or
//! of this machine (exit 2).

use std::path::{Path, PathBuf};

/// Shorthand for results that fail with a zblade [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in zblade, grouped by who can fix it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A JSON document could not be parsed; `field` is the JSON path when known.
    #[error("{source_name}:{line}:{column}: {}{message}", field_prefix(.field))]
    InvalidJson {
        /// The file name (or `<stdin>`) the document came from.
        source_name: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// The JSON path of the offending field, e.g. `messages[2].role`, when known.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A document parsed but one of its fields breaks a rule (duplicate id, bad range, ...).
    #[error("{source_name}: field `{field}`: {message}")]
    InvalidField {
        /// The file name (or `<stdin>`) the document came from.
        source_name: String,
        /// The JSON path of the offending field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// An artifact was written by a newer zblade; we refuse rather than rewrite it.
    #[error("{source_name}: artifact version {found} is not supported (this zblade reads {supported}); upgrade zblade")]
    UnsupportedVersion {
        /// The file name the artifact came from.
        source_name: String,
        /// The version found in the file.
        found: String,
        /// The versions this build understands.
        supported: &'static str,
    },
    /// An id, file or project that the user named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The user asked for something that cannot be done as asked.
    #[error("{0}")]
    Usage(String),
    /// This machine failed to give zblade something it needs — a signal handler, the OS
    /// keyring, a terminal, standard input, a socket, a thread: not the user's mistake.
    #[error("{0}")]
    Environment(String),
    /// The folder is not a zblade project yet (no `.zblade/`); `zblade init` makes it one.
    #[error("{0}")]
    NotInitialized(String),
    /// The action needs the network and the user has not consented (privacy.allow_network).
    #[error("{0}")]
    ConsentRequired(String),
    /// A file-system operation failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The path the operation was about.
        path: PathBuf,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },
    /// A download or server request failed (offline, refused, not found, bad status).
    #[error("network: {0}")]
    Network(String),
    /// Something from outside (a sync server's answer, a transcript) broke the rules it must
    /// keep — a path-like id, a hash that does not match, an endless listing — and was refused
    /// before it touched the disk, the index or a prompt.
    #[error("refused: {0}")]
    Untrusted(String),
    /// The index (SQLite, or the vector table) failed in a way the user did not cause. The
    /// library's error is kept as the source, for logs and for callers that inspect it.
    #[error("index: {message}")]
    Index {
        /// What failed, with the file it concerned.
        message: String,
        /// The library's error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Long work stopped between two complete steps because the caller asked it to (the app
    /// quitting or pausing its indexer); what was written before is whole and consistent.
    #[error("interrupted")]
    Interrupted,
    /// The SQLite index file is damaged; `zblade reindex` rebuilds it from artifacts.
    #[error("index {}: {message}; run `zblade reindex` to rebuild it from the artifacts", .path.display())]
    IndexCorrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        message: String,
        /// SQLite's error, when this came from one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

fn field_prefix(field: &Option<String>) -> String {
    match field {
        Some(f) if !f.is_empty() && f != "." => format!("field `{f}`: "),
        _ => String::new(),
    }
}

impl Error {
    /// A stable, machine-readable name for the kind of failure.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidJson { .. } => "invalid_json",
            Error::InvalidField { .. } => "invalid_field",
            Error::UnsupportedVersion { .. } => "unsupported_version",
            Error::NotFound(_) => "not_found",
            Error::Usage(_) => "usage",
            Error::Environment(_) => "environment",
            Error::NotInitialized(_) => "not_initialized",
            Error::ConsentRequired(_) => "consent_required",
            Error::Io { .. } => "io",
            Error::Network(_) => "network",
            Error::Untrusted(_) => "untrusted",
            Error::Index { .. } => "index",
            Error::IndexCorrupt { .. } => "index_corrupt",
            Error::Interrupted => "interrupted",
        }
    }

    /// True when the user can fix the cause (bad input, unknown id); the CLI exits 1 for these.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::InvalidJson { .. }
                | Error::InvalidField { .. }
                | Error::UnsupportedVersion { .. }
                | Error::NotFound(_)
                | Error::Usage(_)
                | Error::NotInitialized(_)
                | Error::ConsentRequired(_)
                | Error::Network(_)
                | Error::Untrusted(_)
        ) || matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// Wraps an I/O failure with the path it concerned.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// An [`Error::Index`] with the library error that caused it.
    pub fn index(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Index {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// Builds an [`Error::InvalidField`].
    pub fn field(source_name: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidField {
            source_name: source_name.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}
