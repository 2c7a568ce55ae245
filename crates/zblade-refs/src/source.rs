//! Reading a project file safely and hashing its lines.

use std::path::Path;

use zblade_core::{PathGuard, paths};

/// Files larger than this are not read (a reference into a 50 MB log is refused cleanly).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// A text file split into lines, with one hash per line.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The raw bytes (used for the blob hash).
    pub bytes: Vec<u8>,
    /// Line hashes, line 1 first. Lines are compared without trailing whitespace, so CRLF and
    /// LF files anchor alike and an editor that trims spaces does not break an anchor.
    pub hashes: Vec<u64>,
    /// Byte offset where each line starts, line 1 first.
    starts: Vec<usize>,
}

/// Why a file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// It does not exist (or is not a regular file).
    NotFound,
    /// The path leads outside the project (absolute, `..`, or a symlink out).
    OutsideProject(String),
    /// A secret or a tool's folder (`.env`, a private key, `.git/`, `.zblade/`; see
    /// [`zblade_core::protected`]), named directly or reached through a symlink.
    Protected(String),
    /// Larger than [`MAX_FILE_BYTES`].
    TooLarge(u64),
    /// Contains NUL bytes: not text.
    Binary,
    /// Another I/O failure.
    Io(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => write!(f, "file not found"),
            ReadError::OutsideProject(why) | ReadError::Protected(why) => write!(f, "refused: {why}"),
            ReadError::TooLarge(n) => write!(f, "file is {:.1} MB; files over 10 MB are not read", *n as f64 / 1e6),
            ReadError::Binary => write!(f, "binary file"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Hash of one line, ignoring trailing whitespace (including `\r`).
pub fn line_hash(line: &[u8]) -> u64 {
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
    xxhash_rust::xxh3::xxh3_64(&line[..end])
}

impl SourceFile {
    /// Splits `bytes` into lines and hashes them.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let mut hashes = Vec::new();
        let mut starts = Vec::new();
        let mut start = 0;
        for line in bytes.split(|b| *b == b'\n') {
            hashes.push(line_hash(line));
            starts.push(start);
            start += line.len() + 1;
        }
        if bytes.ends_with(b"\n") {
            hashes.pop(); // the empty "line" after the final newline
            starts.pop();
        }
        SourceFile { bytes, hashes, starts }
    }

    /// The bytes of line `index` (0-based), without its newline.
    pub fn line_bytes(&self, index: usize) -> &[u8] {
        let start = self.starts[index];
        let end = match self.starts.get(index + 1) {
            Some(next) => next - 1,
            None => self.bytes.len() - usize::from(self.bytes.ends_with(b"\n")),
        };
        &self.bytes[start..end.max(start)]
    }

    /// Convenience for tests and examples.
    pub fn from_text(text: &str) -> Self {
        SourceFile::from_bytes(text.as_bytes().to_vec())
    }

    /// Number of lines.
    pub fn line_count(&self) -> usize {
        self.hashes.len()
    }

    /// Lines `start..=end` (1-based) as text, with `\r` removed; lossy for invalid UTF-8.
    pub fn lines(&self, start: u32, end: u32) -> Vec<String> {
        self.bytes
            .split(|b| *b == b'\n')
            .skip(start.saturating_sub(1) as usize)
            .take((end.saturating_sub(start) + 1) as usize)
            .map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)).into_owned())
            .collect()
    }
}

/// Reads `relative` inside `root`, refusing paths that leave the project, secrets, huge and
/// binary files, with the project's own secret patterns ([`PathGuard::for_project`]).
pub fn read_project_file(root: &Path, relative: &str) -> Result<SourceFile, ReadError> {
    read_project_file_guarded(root, relative, &PathGuard::for_project(root))
}

/// [`read_project_file`] with rules already loaded (callers reading many files load them once).
pub fn read_project_file_guarded(root: &Path, relative: &str, guard: &PathGuard) -> Result<SourceFile, ReadError> {
    let normal = paths::normalize_relative(relative).map_err(ReadError::OutsideProject)?;
    guard.check(&normal).map_err(ReadError::Protected)?;
    let real = paths::resolve_inside(root, &normal).map_err(ReadError::OutsideProject)?;
    // A symlink inside the project may point at a secret inside it (`notes.txt -> .env`).
    if let Some(real) = real
        && real != normal
    {
        guard.check(&real).map_err(ReadError::Protected)?;
    }
    let path = root.join(&normal);
    // Only regular files are opened (opening a FIFO would block).
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(ReadError::NotFound),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::NotFound),
        Err(e) => return Err(ReadError::Io(e.to_string())),
    }
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e.to_string()),
    };
    let file = std::fs::File::open(&path).map_err(io)?;
    // The checks above looked at the path; a symlink swapped in between them and the open
    // would lead elsewhere. So what was opened is checked again.
    check_opened(root, &normal, &file, guard)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotFound);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(&file, MAX_FILE_BYTES + 1), &mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    // Git's heuristic: a NUL byte in the first 8 KB means binary.
    if bytes.iter().take(8000).any(|b| *b == 0) {
        return Err(ReadError::Binary);
    }
    Ok(SourceFile::from_bytes(bytes))
}

/// Checks the file actually opened: on Linux its real path (`/proc/self/fd`) must lie inside the
/// project and pass the guard; elsewhere it must be the same file (device and inode) as the one
/// the path resolves to now.
fn check_opened(root: &Path, relative: &str, file: &std::fs::File, guard: &PathGuard) -> Result<(), ReadError> {
    let outside = || ReadError::OutsideProject(format!("{relative:?} changed while it was opened"));
    let root = root.canonicalize().map_err(|e| ReadError::Io(e.to_string()))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            let inner = real.strip_prefix(&root).map_err(|_| outside())?;
            let inner = inner.to_string_lossy().replace('\\', "/");
            return guard.check(&inner).map_err(ReadError::Protected);
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let opened = file.metadata().map_err(|e| ReadError::Io(e.to_string()))?;
        let real = root.join(relative).canonicalize().map_err(|_| outside())?;
        let now = std::fs::metadata(&real).map_err(|_| outside())?;
        if !real.starts_with(&root) || (now.dev(), now.ino()) != (opened.dev(), opened.ino()) {
            return Err(outside());
        }
    }
    let _ = (file, guard);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_lf_hash_alike() {
        let lf = SourceFile::from_text("a\nb  \nc\n");
        let crlf = SourceFile::from_text("a\r\nb\r\nc");
        assert_eq!(lf.hashes, crlf.hashes);
        assert_eq!(crlf.lines(2, 3), vec!["b", "c"]);
    }

    #[test]
    fn refuses_binary_huge_and_escaping_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
        assert_eq!(read_project_file(dir.path(), "bin.dat").unwrap_err(), ReadError::Binary);
        let big = std::fs::File::create(dir.path().join("big.log")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        assert!(matches!(
            read_project_file(dir.path(), "big.log"),
            Err(ReadError::TooLarge(_))
        ));
        assert!(matches!(
            read_project_file(dir.path(), "../etc/passwd"),
            Err(ReadError::OutsideProject(_))
        ));
        assert_eq!(
            read_project_file(dir.path(), "nope.rs").unwrap_err(),
            ReadError::NotFound
        );
    }

    #[test]
    fn refuses_secrets_named_directly_or_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "API_KEY=sk-live\n").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[remote]\n").unwrap();
        for bad in [".env", ".git/config", "./.env"] {
            assert!(
                matches!(read_project_file(dir.path(), bad), Err(ReadError::Protected(_))),
                "{bad} was read"
            );
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join(".env"), dir.path().join("notes.txt")).unwrap();
            assert!(matches!(
                read_project_file(dir.path(), "notes.txt"),
                Err(ReadError::Protected(_))
            ));
        }
    }
}
