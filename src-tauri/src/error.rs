//! Errors as the UI sees them: a machine-readable code (so the UI decides what to offer without
//! matching on text) and the engine's message, which names the file, line and field.

use serde::Serialize;
use specta::Type;
use zblade_engine::Error;

/// What kind of failure, for the UI to choose what to offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No project is open.
    NoProject,
    /// The folder has no `.zblade/`: the UI offers `init`.
    NotInitialized,
    /// The input was wrong (a bad id, an invalid file, an option out of range).
    InvalidInput,
    /// What was named does not exist.
    NotFound,
    /// The action needs the network and the user has not allowed it.
    ConsentRequired,
    /// The network failed (offline, refused, bad status).
    Network,
    /// The index is damaged; rebuilding it from the artifacts fixes it.
    IndexDamaged,
    /// No system keyring could be reached to keep an API key: the UI offers to keep it for
    /// this session only.
    KeyringUnavailable,
    /// Anything else: a bug or the machine (disk full, permissions).
    Internal,
}

/// An error returned by a command.
#[derive(Debug, Clone, Serialize, Type)]
pub struct AppError {
    /// The kind.
    pub code: ErrorCode,
    /// The message to show.
    pub message: String,
}

impl AppError {
    /// An error of `code` with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError {
            code,
            message: message.into(),
        }
    }

    /// No project is open.
    pub fn no_project() -> Self {
        AppError::new(ErrorCode::NoProject, "Open a project first.")
    }

    /// A failure in the app itself (a worker that panicked, a poisoned lock).
    pub fn internal(message: impl std::fmt::Display) -> Self {
        AppError::new(ErrorCode::Internal, message.to_string())
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for AppError {
    fn from(error: Error) -> Self {
        let code = match &error {
            Error::InvalidJson { .. } | Error::InvalidField { .. } | Error::UnsupportedVersion { .. } => {
                ErrorCode::InvalidInput
            }
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::NotInitialized(_) => ErrorCode::NotInitialized,
            Error::ConsentRequired(_) => ErrorCode::ConsentRequired,
            Error::Usage(_) => ErrorCode::InvalidInput,
            Error::Environment(_) => ErrorCode::Internal,
            Error::Network(_) | Error::Untrusted(_) => ErrorCode::Network,
            Error::IndexCorrupt { .. } => ErrorCode::IndexDamaged,
            _ => ErrorCode::Internal,
        };
        AppError::new(code, error.to_string())
    }
}

/// What every command returns.
pub type AppResult<T> = std::result::Result<T, AppError>;
