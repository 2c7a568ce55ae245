//! Indexing project files for search: walk the working tree, skip what is not worth reading,
//! cut the rest into line-range chunks and store them (as references, with CIDs) in the index.
//! Unchanged files (same size and modification time) are not read again.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::Serialize;
use sha2::{Digest, Sha256};
use zblade_core::Result;
use zblade_index::{CodeChunkRow, CodeFileState, CodeFileUpdate};
use zblade_search::code::{self, Skip};

use crate::parts::Parts;
use crate::project::Project;

/// Files stored per index transaction: bounds memory on big trees and keeps progress visible.
const FILES_PER_WRITE: usize = 200;

/// What indexing project files did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CodeIndexReport {
    /// Files considered (after ignore rules).
    pub files: usize,
    /// Files read and (re)chunked.
    pub indexed: usize,
    /// Files unchanged since the last run.
    pub unchanged: usize,
    /// Files dropped from the index (deleted, now ignored or now skipped).
    pub removed: usize,
    /// Files that changed while being read; indexed as read and re-read next time.
    pub changed_while_reading: usize,
    /// Files not indexed, by reason, with their paths.
    pub skipped: BTreeMap<String, Vec<String>>,
    /// Code chunks in the index now.
    pub chunks: i64,
    /// Wall time.
    #[serde(serialize_with = "crate::semantic::secs")]
    pub elapsed: Duration,
}

/// A file's size and modification time, or `None` when it cannot be read.
fn stat(path: &Path) -> Option<(u64, i64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    Some((meta.len(), mtime))
}

fn modified_at(mtime_ns: i64) -> String {
    let time = chrono::DateTime::from_timestamp_nanos(mtime_ns);
    zblade_index::timestamp(time)
}

/// How one file came out.
enum Outcome {
    Unchanged,
    Indexed(CodeFileUpdate, bool),
    Skipped(Skip),
    Gone,
}

fn read_one(root: &Path, rel: &str, known: Option<&CodeFileState>) -> Outcome {
    let path = root.join(rel);
    let Some((size, mtime)) = stat(&path) else {
        return Outcome::Gone;
    };
    if known.is_some_and(|k| k.size == size && k.mtime_ns == mtime) {
        return Outcome::Unchanged;
    }
    if size > code::MAX_FILE_BYTES {
        // Decided from the size alone: a 50 MB file is never read.
        return Outcome::Skipped(Skip::TooLarge);
    }
    let Ok(bytes) = std::fs::read(&path) else {
        return Outcome::Gone;
    };
    let text = match code::decode(&path, &bytes) {
        Ok(text) => text,
        Err(skip) => return Outcome::Skipped(skip),
    };
    let chunks = chunk_rows(rel, &text);
    // If the file changed while it was read, what was read is indexed (its CIDs are true to
    // it), and the state is recorded so that the next run reads the file again.
    let changed = stat(&path) != Some((bytes.len() as u64, mtime));
    Outcome::Indexed(
        CodeFileUpdate {
            path: rel.to_string(),
            state: CodeFileState {
                size: bytes.len() as u64,
                mtime_ns: if changed { -1 } else { mtime },
                sha256: hex::encode(Sha256::digest(&bytes)),
            },
            modified_at: modified_at(mtime),
            chunks,
        },
        changed,
    )
}

/// A file's chunks for the index: cut along the syntax where the language is known
/// (functions, types, impls, Markdown sections; see `zblade-syntax`), in line windows
/// otherwise.
pub fn chunk_rows(rel: &str, text: &str) -> Vec<CodeChunkRow> {
    let Some(pieces) = zblade_syntax::chunk(Path::new(rel), text, zblade_syntax::CHUNK_CHARS) else {
        return line_window_rows(text);
    };
    let module = zblade_syntax::module_path(Path::new(rel));
    let lines: Vec<&str> = text.lines().collect();
    pieces
        .into_iter()
        .map(|piece| {
            let body = lines[piece.start_line as usize - 1..piece.end_line as usize].join("\n");
            let symbol = piece.symbol();
            let vector_text = zblade_syntax::embedding_text(rel, symbol.as_deref(), &body);
            CodeChunkRow {
                start_line: piece.start_line,
                end_line: piece.end_line,
                cid: zblade_search::chunk::cid(&body),
                vector_cid: zblade_search::chunk::cid(&vector_text),
                searchable_symbol: code::searchable_text(&format!("{module} {}", piece.symbols.join(" "))),
                searchable_signature: code::searchable_text(&piece.signature),
                searchable: code::searchable_text(&body),
                symbol,
            }
        })
        .collect()
}

/// A file's chunks as line windows (for languages without a grammar; the code-search
/// benchmark compares the two).
pub fn line_window_rows(text: &str) -> Vec<CodeChunkRow> {
    code::chunk_code(text)
        .into_iter()
        .map(|chunk| CodeChunkRow {
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            symbol: None,
            vector_cid: chunk.cid.clone(),
            searchable_symbol: String::new(),
            searchable_signature: String::new(),
            searchable: code::searchable_text(&chunk.text),
            cid: chunk.cid,
        })
        .collect()
}

impl Project {
    /// Indexes every project file worth indexing, reporting (files done, files total). Files
    /// that disappeared or became ignored leave the index.
    pub(crate) fn index_code(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<CodeIndexReport> {
        let files: Vec<String> = code::project_files(self.layout().root())
            .iter()
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        let listed: HashSet<&str> = files.iter().map(String::as_str).collect();
        let gone: Vec<String> = self
            .index()?
            .code_file_states()?
            .into_keys()
            .filter(|path| !listed.contains(path.as_str()))
            .collect();
        let mut report = self.index_code_paths(&files, progress)?;
        if !gone.is_empty() {
            self.index_mut()?.put_code_files(&[], &gone)?;
            report.removed += gone.len();
        }
        report.chunks = self.index()?.code_counts()?.1;
        Ok(report)
    }

    /// Re-indexes these project files (relative paths): changed ones are re-chunked, deleted
    /// or now-skipped ones leave the index. Used by the watcher and when a shown chunk no
    /// longer matches its file.
    pub(crate) fn index_code_paths(
        &mut self,
        paths: &[String],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<CodeIndexReport> {
        let started = Instant::now();
        let root = self.layout().root().to_path_buf();
        let known = self.index()?.code_file_states()?;
        let mut report = CodeIndexReport {
            files: paths.len(),
            ..Default::default()
        };
        progress(0, paths.len());
        for (batch_no, batch) in paths.chunks(FILES_PER_WRITE).enumerate() {
            self.check_interrupt()?;
            let mut updates = Vec::new();
            let mut removed = Vec::new();
            for rel in batch {
                match read_one(&root, rel, known.get(rel)) {
                    Outcome::Unchanged => report.unchanged += 1,
                    Outcome::Indexed(update, changed) => {
                        report.indexed += 1;
                        report.changed_while_reading += changed as usize;
                        updates.push(update);
                    }
                    Outcome::Skipped(skip) => {
                        report
                            .skipped
                            .entry(skip.as_str().to_string())
                            .or_default()
                            .push(rel.clone());
                        if known.contains_key(rel) {
                            removed.push(rel.clone());
                        }
                    }
                    Outcome::Gone => {
                        if known.contains_key(rel) {
                            removed.push(rel.clone());
                        }
                    }
                }
            }
            report.removed += removed.len();
            if !updates.is_empty() || !removed.is_empty() {
                self.index_mut()?.put_code_files(&updates, &removed)?;
            }
            progress((batch_no * FILES_PER_WRITE + batch.len()).min(paths.len()), paths.len());
        }
        report.chunks = self.index()?.code_counts()?.1;
        report.elapsed = started.elapsed();
        Ok(report)
    }
}

/// What search needs of indexed code, on the parts (any storage reads it).
impl Parts {
    /// The text of a code chunk as the working tree holds it now, if it still has the CID it
    /// was indexed with; `None` means the file changed and the chunk must be re-indexed.
    pub(crate) fn verified_code(&self, path: &str, lines: (u32, u32), cid: &str) -> Option<String> {
        // An index built before a file was marked secret still lists its chunks: never read them.
        self.path_guard().check(path).ok()?;
        let full = self.layout().root().join(path);
        code::verify(&full, lines.0, lines.1, cid)
    }
}
