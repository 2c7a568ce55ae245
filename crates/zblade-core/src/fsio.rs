//! Atomic, durable file writes.
//!
//! A reader (or a crash) must only ever see the old or the new content of a file, never a mix:
//! we write a temporary file next to the target, fsync it, rename it over the target and fsync
//! the directory so the rename itself survives a power loss.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Marker in the names of temporary files, so `fsck` can recognise leftovers of a crash.
pub const TEMP_MARKER: &str = ".zblade-tmp-";

/// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_as(path, bytes, false)
}

/// [`write_atomic`] for secrets: on Unix the file is readable and writable by its owner only
/// from the moment it is created, never with the umask's mode in between.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_as(path, bytes, true)
}

fn create_temp(tmp: &Path, private: bool) -> std::io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(tmp)
}

fn write_atomic_as(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let tmp = temp_path_for(path);
    let result = (|| {
        let mut file = create_temp(&tmp, private).map_err(|e| Error::io(&tmp, e))?;
        file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        file.sync_all().map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        sync_dir(path.parent().unwrap_or(Path::new(".")))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes several files atomically, paying for one directory fsync per directory instead of
/// one per file. Each file on its own is still all-or-nothing.
pub fn write_atomic_batch(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    let mut staged = Vec::with_capacity(files.len());
    let result = (|| {
        // A bounded number of files open at once: a batch may hold thousands of moments, and
        // the process's open-file limit is often 1024.
        for group in files.chunks(OPEN_AT_ONCE) {
            let mut opened = Vec::with_capacity(group.len());
            for (path, bytes) in group {
                let tmp = temp_path_for(path);
                staged.push(tmp.clone());
                let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
                file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
                opened.push((file, tmp));
            }
            sync_all_concurrently(&opened)?;
        }
        let mut dirs: Vec<&Path> = Vec::new();
        for ((path, _), tmp) in files.iter().zip(&staged) {
            fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
            let dir = path.parent().unwrap_or(Path::new("."));
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        dirs.into_iter().try_for_each(sync_dir)
    })();
    if result.is_err() {
        for tmp in staged {
            let _ = fs::remove_file(tmp);
        }
    }
    result
}

/// Files synced at once by [`write_atomic_batch`]: enough for the filesystem to fold their
/// flushes into a few journal commits, few enough to stay a small burst of threads.
const SYNC_THREADS: usize = 8;
/// Temporary files [`write_atomic_batch`] keeps open while it syncs them.
const OPEN_AT_ONCE: usize = 128;

/// Fsyncs every file, several at a time. One at a time, each fsync waits for its own journal
/// commit (about half a millisecond on an SSD, more on a disk); concurrent ones share commits,
/// which made importing hundreds of conversations wait on the disk far less.
fn sync_all_concurrently(files: &[(File, PathBuf)]) -> Result<()> {
    if files.len() <= 1 {
        return files
            .iter()
            .try_for_each(|(file, tmp)| file.sync_all().map_err(|e| Error::io(tmp, e)));
    }
    let per_thread = files.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(per_thread)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .try_for_each(|(file, tmp)| file.sync_all().map_err(|e| Error::io(tmp, e)))
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|worker| worker.join().expect("an fsync thread panicked"))
    })
}

/// Creates `path` with `bytes` only if it does not exist yet; returns whether it was created.
///
/// Used by `init`, which must never overwrite what a user wrote.
pub fn create_new_atomic(path: &Path, bytes: &[u8]) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    let tmp = temp_path_for(path);
    let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    file.sync_all().map_err(|e| Error::io(&tmp, e))?;
    // hard_link fails if the target exists, so a concurrent `init` cannot clobber the other's file.
    let created = match fs::hard_link(&tmp, path) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path, e));
        }
    };
    let _ = fs::remove_file(&tmp);
    sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    Ok(created)
}

fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = format!("{}-{}", std::process::id(), ulid::Ulid::new());
    path.with_file_name(format!(".{name}{TEMP_MARKER}{unique}"))
}

/// Fsyncs a directory, so that renames and removals in it survive a power loss.
pub fn sync_dir(dir: &Path) -> Result<()> {
    // Directories can be opened read-only and fsynced on Unix; elsewhere this is best effort.
    match File::open(dir) {
        Ok(d) => match d.sync_all() {
            Ok(()) => Ok(()),
            Err(e) if cfg!(unix) => Err(Error::io(dir, e)),
            Err(_) => Ok(()),
        },
        Err(e) if cfg!(unix) => Err(Error::io(dir, e)),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        write_atomic(&target, b"one").unwrap();
        write_atomic(&target, b"two").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "leftover files: {names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn private_writes_are_owner_only_over_a_readable_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("credentials.json");
        write_atomic(&target, b"{}").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic_private(&target, b"{\"k\": \"secret\"}").unwrap();
        assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&target).unwrap(), b"{\"k\": \"secret\"}");
    }

    #[test]
    fn create_new_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("instructions.md");
        assert!(create_new_atomic(&target, b"mine").unwrap());
        assert!(!create_new_atomic(&target, b"default").unwrap());
        assert_eq!(fs::read(&target).unwrap(), b"mine");
    }

    #[test]
    fn batch_write_writes_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<_> = (0..5)
            .map(|i| (dir.path().join(format!("{i}.json")), vec![b'0' + i as u8]))
            .collect();
        write_atomic_batch(&files).unwrap();
        for (path, bytes) in &files {
            assert_eq!(&fs::read(path).unwrap(), bytes);
        }
    }

    #[test]
    fn a_batch_larger_than_the_open_file_bound_writes_all_and_a_failure_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let count = OPEN_AT_ONCE * 2 + 7;
        let mut files: Vec<_> = (0..count)
            .map(|i| (dir.path().join(format!("{i}.json")), i.to_string().into_bytes()))
            .collect();
        write_atomic_batch(&files).unwrap();
        for (path, bytes) in &files {
            assert_eq!(&fs::read(path).unwrap(), bytes);
        }
        // A file whose folder does not exist, in the second group: the batch fails, and neither
        // its staged temporary files nor the renamed ones' temporaries are left behind.
        files[OPEN_AT_ONCE + 3].0 = dir.path().join("no-such-folder/x.json");
        for (_, bytes) in &mut files {
            bytes.push(b'!');
        }
        assert!(write_atomic_batch(&files).is_err());
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(TEMP_MARKER))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // Nothing was renamed: the failure came before any rename.
        assert_eq!(fs::read(dir.path().join("0.json")).unwrap(), b"0");
    }
}
