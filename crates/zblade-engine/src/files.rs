//! Reading a project file for an agent (`read_project_file` over MCP; seed 004's validated
//! paths). The path comes from a model and is hostile until proven otherwise: it must name a
//! regular text file inside the project root once `..` and every symlink are resolved, never
//! inside `.zblade/` or `.git/`, never a secret, never a name Windows reserves for a device.

use std::path::Path;

use serde::Serialize;
use zblade_core::{Error, Result, paths};
use zblade_refs::ReadError;

use crate::project::Project;
use zblade_index::SearchQuery;

/// Files over this size are refused: an agent asks for a range of a big file instead.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Lines returned when no range is asked for.
pub const DEFAULT_READ_LINES: u32 = 2_000;

/// A project file as it is now, or a range of its lines.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectFile {
    /// The path relative to the project root, `/`-separated.
    pub path: String,
    /// First and last line returned (1-based, inclusive); `[0, 0]` for an empty file.
    pub lines: [u32; 2],
    /// Lines in the whole file.
    pub total_lines: u32,
    /// The lines, joined by `\n`.
    pub text: String,
    /// Whether lines after `lines[1]` were left out (no range was given and the file is long).
    pub truncated: bool,
}

/// A code search hit with the code as it is now (what an agent's `search_project` gets).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeNow {
    /// The file, relative to the project root.
    pub path: String,
    /// First and last line now (1-based, inclusive).
    pub lines: [u32; 2],
    /// Relevance as the search scored it.
    pub score: f64,
    /// Those lines, read from the working tree now.
    pub code: String,
}

/// What [`Project::search_code_now`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CodeSearchNow {
    /// Why the search is keyword-only, when it is.
    pub notice: Option<String>,
    /// Hits, best first.
    pub hits: Vec<CodeNow>,
}

impl Project {
    /// Searches the project's code (`query`'s kind is taken as code) and reads each hit's
    /// lines from the working tree now, through the same guard as [`Project::read_project_file`]
    /// (a hit whose file is gone, a secret or outside the project is left out). The one
    /// `search_project` that MCP and the chat's tools both serve.
    pub fn search_code_now(&mut self, query: &SearchQuery) -> Result<CodeSearchNow> {
        let query = SearchQuery {
            kind: zblade_index::SearchKind::Code,
            ..query.clone()
        };
        let results = self.search(&query)?;
        let hits = results
            .hits
            .into_iter()
            .filter_map(|hit| {
                let (path, (first, last)) = (hit.hit.path?, hit.hit.lines?);
                let code = self.read_project_file(&path, Some((first, last))).ok()?;
                Some(CodeNow {
                    path: code.path,
                    lines: code.lines,
                    score: hit.hit.score,
                    code: code.text,
                })
            })
            .collect();
        Ok(CodeSearchNow {
            notice: results.notice,
            hits,
        })
    }
}

impl Project {
    /// Reads `path` (relative to the root, or absolute inside it), all of it or `lines`
    /// (1-based, inclusive; an end past the file is cut to its last line). Refusals are
    /// [`Error::Usage`] with the reason; a file that does not exist is [`Error::NotFound`].
    pub fn read_project_file(&self, path: &str, lines: Option<(u32, u32)>) -> Result<ProjectFile> {
        let root = self.layout().root();
        let relative = project_relative(root, path).map_err(|why| refused(path, &why))?;
        if let Some(name) = relative.split('/').find(|part| is_reserved_name(part)) {
            return Err(refused(path, &format!("`{name}` is a reserved device name on Windows")));
        }
        let source = match zblade_refs::read_project_file_guarded(root, &relative, &self.parts.path_guard()) {
            Ok(source) => source,
            Err(ReadError::NotFound) => {
                return Err(Error::NotFound(format!("{path}: no such file in the project")));
            }
            Err(err) => return Err(refused(path, &err.to_string())),
        };
        if source.bytes.len() as u64 > MAX_READ_BYTES {
            return Err(refused(
                path,
                &format!(
                    "the file is {} KB; files over {} KB are not read whole (ask for a line range)",
                    source.bytes.len() / 1024,
                    MAX_READ_BYTES / 1024
                ),
            ));
        }
        if std::str::from_utf8(&source.bytes).is_err() {
            return Err(refused(path, "not UTF-8 text"));
        }
        let total = source.line_count() as u32;
        let (start, end, truncated) = match lines {
            _ if total == 0 => (0, 0, false),
            Some((0, _)) => return Err(refused(path, "lines start at 1")),
            Some((start, end)) if end < start => {
                return Err(refused(path, &format!("the range {start}-{end} ends before it starts")));
            }
            Some((start, _)) if start > total => {
                return Err(refused(path, &format!("line {start} is past the end ({total} lines)")));
            }
            Some((start, end)) => (start, end.min(total), false),
            None => (1, total.min(DEFAULT_READ_LINES), total > DEFAULT_READ_LINES),
        };
        let text = if total == 0 {
            String::new()
        } else {
            source.lines(start, end).join("\n")
        };
        Ok(ProjectFile {
            path: relative,
            lines: [start, end],
            total_lines: total,
            text,
            truncated,
        })
    }
}

fn refused(path: &str, why: &str) -> Error {
    Error::Usage(format!("{}: {why}", printable(path)))
}

/// The path as it may be shown: control characters (a NUL, an escape) escaped.
fn printable(path: &str) -> String {
    if path.chars().any(char::is_control) {
        format!("{path:?}")
    } else {
        path.to_string()
    }
}

/// `path` as a normalised project-relative path: relative paths as they are, absolute ones only
/// when they lie under the root (compared by components, so `/work/project2` is not under
/// `/work/project`), through the root as given or as it resolves (a root that is a symlink).
fn project_relative(root: &Path, path: &str) -> std::result::Result<String, String> {
    let given = Path::new(path);
    if !given.is_absolute() {
        return paths::normalize_relative(path);
    }
    let canonical = root.canonicalize().ok();
    let inner = given
        .strip_prefix(root)
        .ok()
        .or_else(|| canonical.as_deref().and_then(|c| given.strip_prefix(c).ok()))
        .ok_or_else(|| "the path is outside the project".to_string())?;
    paths::normalize_relative(&inner.to_string_lossy())
}

/// Windows' device names (`CON`, `NUL`, `COM1`, …), with or without an extension: a file by
/// that name cannot exist there, and opening one reaches a device.
fn is_reserved_name(name: &str) -> bool {
    let stem = name
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit()
            && stem.as_bytes()[3] != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_must_lie_under_the_root() {
        let root = Path::new("/work/project");
        assert_eq!(project_relative(root, "/work/project/src/a.rs").unwrap(), "src/a.rs");
        assert!(project_relative(root, "/work/project2/src/a.rs").is_err());
        assert!(project_relative(root, "/work/project/../project2/a.rs").is_err());
        assert!(project_relative(root, "/etc/passwd").is_err());
        assert!(project_relative(root, "src/\0a.rs").is_err());
        assert_eq!(project_relative(root, "./src//a.rs/").unwrap(), "src/a.rs");
    }

    #[test]
    fn device_names_are_reserved() {
        for name in ["CON", "nul", "aux.txt", "COM1", "lpt9.log", "con .txt"] {
            assert!(is_reserved_name(name), "{name}");
        }
        for name in ["console.rs", "com10", "COM0", "auxiliary", "nullable.ts"] {
            assert!(!is_reserved_name(name), "{name}");
        }
    }
}
