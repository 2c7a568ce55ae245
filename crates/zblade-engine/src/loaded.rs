//! An artifact file read from disk and checked: what the scan, fsck and the local storage's
//! manifest reader hand each other.

/// An artifact file read from disk and checked.
pub struct Loaded<T> {
    /// The artifact.
    pub artifact: T,
    /// Path relative to the project root.
    pub path: String,
    /// sha256 of the file's bytes.
    pub sha256: String,
}
