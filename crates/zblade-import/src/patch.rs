//! Finding file touches in text: Codex `apply_patch` patches, Aider and Cline SEARCH/REPLACE
//! blocks, `sed -n 'a,bp' file` reads, `path:line` citations, and the numbered listings tools
//! return when they read a file.

use std::sync::LazyLock;

use regex::Regex;

use crate::{Touch, TouchKind};

/// Touches of an `apply_patch` patch (`*** Begin Patch` … `*** End Patch`): for each updated
/// or added file, each hunk's text after the patch (context and `+` lines).
pub fn apply_patch_touches(patch: &str) -> Vec<Touch> {
    let mut touches = Vec::new();
    let mut file: Option<String> = None;
    let mut hunk: Vec<&str> = Vec::new();
    let flush = |file: &Option<String>, hunk: &mut Vec<&str>, touches: &mut Vec<Touch>| {
        if let Some(path) = file
            && hunk.iter().any(|l| !l.trim().is_empty())
        {
            touches.push(Touch {
                path: path.clone(),
                lines: None,
                text: Some(hunk.join("\n")),
                kind: TouchKind::Edit,
            });
        }
        hunk.clear();
    };
    for line in patch.lines() {
        if let Some(path) = line
            .strip_prefix("*** Update File: ")
            .or_else(|| line.strip_prefix("*** Add File: "))
        {
            flush(&file, &mut hunk, &mut touches);
            file = Some(path.trim().to_string());
        } else if line.starts_with("*** Delete File: ") || line.starts_with("*** End Patch") {
            flush(&file, &mut hunk, &mut touches);
            file = None;
        } else if line.starts_with("*** Move to: ") {
            flush(&file, &mut hunk, &mut touches);
            file = line.strip_prefix("*** Move to: ").map(|p| p.trim().to_string());
        } else if line.starts_with("@@") {
            flush(&file, &mut hunk, &mut touches);
        } else if let Some(added) = line.strip_prefix('+') {
            hunk.push(added);
        } else if let Some(context) = line.strip_prefix(' ') {
            hunk.push(context);
        } else if line.starts_with('-') || line.starts_with("*** ") {
            // Removed lines are not in the file after the patch.
        } else if line.is_empty() && file.is_some() {
            hunk.push("");
        }
    }
    flush(&file, &mut hunk, &mut touches);
    touches
}

/// Touches of SEARCH/REPLACE blocks (Aider's `diff` format, Cline's `replace_in_file`): the
/// REPLACE side of each block. `default_path` names the file when the text does not (Cline
/// passes it as an argument); Aider writes the path on the line before the fence.
pub fn search_replace_touches(text: &str, default_path: Option<&str>) -> Vec<Touch> {
    let lines: Vec<&str> = text.lines().collect();
    let mut touches = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let marker = lines[i].trim_end();
        if !(marker.starts_with("<<<<<<< SEARCH") || marker.starts_with("------- SEARCH")) {
            i += 1;
            continue;
        }
        let path = default_path.map(str::to_string).or_else(|| path_before(&lines[..i]));
        let Some(divider) = (i + 1..lines.len()).find(|&j| lines[j].trim_end() == "=======") else {
            break;
        };
        let end = (divider + 1..lines.len())
            .find(|&j| {
                let l = lines[j].trim_end();
                l.starts_with(">>>>>>> REPLACE") || l.starts_with("+++++++ REPLACE")
            })
            .unwrap_or(lines.len());
        let replace = lines[divider + 1..end].join("\n");
        if let Some(path) = path
            && !replace.trim().is_empty()
        {
            touches.push(Touch {
                path,
                lines: None,
                text: Some(replace),
                kind: TouchKind::Edit,
            });
        }
        i = end + 1;
    }
    touches
}

/// The file name Aider writes before a block's fence: the nearest non-empty line that is not
/// a fence, when it looks like a path.
fn path_before(lines: &[&str]) -> Option<String> {
    let candidate = lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("```"))?;
    let looks_like_path = !candidate.contains(' ') && (candidate.contains('.') || candidate.contains('/'));
    looks_like_path.then(|| candidate.trim_matches('`').to_string())
}

static SED_RANGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"sed -n ['"]?(\d+),(\d+)p['"]? +([^\s|;&'"]+)"#).expect("regex compiles"));

/// `sed -n '10,40p' src/lib.rs` reads in a shell command.
pub fn sed_reads(command: &str) -> Vec<Touch> {
    SED_RANGE
        .captures_iter(command)
        .filter_map(|c| {
            let start: u32 = c[1].parse().ok()?;
            let end: u32 = c[2].parse().ok()?;
            (start >= 1 && end >= start).then(|| Touch {
                path: c[3].to_string(),
                lines: Some([start, end]),
                text: None,
                kind: TouchKind::Read,
            })
        })
        .collect()
}

static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`([A-Za-z0-9_./@-]+\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?(?::\d+)?`").expect("regex compiles")
});

/// `` `src/auth.rs:42` `` and `` `page.tsx:39-47` `` citations in an answer.
pub fn citations(text: &str) -> Vec<Touch> {
    CITATION
        .captures_iter(text)
        .filter_map(|c| {
            let start: u32 = c[2].parse().ok()?;
            let end: u32 = c.get(3).and_then(|m| m.as_str().parse().ok()).unwrap_or(start);
            (start >= 1 && end >= start && end - start < 2000).then(|| Touch {
                path: c[1].to_string(),
                lines: Some([start, end]),
                text: None,
                kind: TouchKind::Cite,
            })
        })
        .collect()
}

static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(\d+)(?:→|\t| \| )(.*)$").expect("regex compiles"));

/// A numbered listing (`     1→text` from Claude Code's Read, `1 | text` from Cline) as its
/// first line number and the text without numbers; `None` when it is not one.
pub fn numbered_listing(text: &str) -> Option<(u32, String)> {
    let mut first = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(c) = NUMBERED.captures(line) else {
            if line.trim().is_empty() || line.starts_with('<') {
                continue; // trailing reminders such as <system-reminder>
            }
            return None;
        };
        first.get_or_insert(c[1].parse::<u32>().ok()?);
        out.push(c.get(2).map_or("", |m| m.as_str()).to_string());
    }
    Some((first?, out.join("\n")))
}

/// Code in a fence whose info string names a file and range, as Continue writes highlighted
/// code: ```` ```py model.py (4-10) ````.
pub fn fenced_ranges(text: &str) -> Vec<Touch> {
    static INFO: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^```\S*\s+(\S+)\s+\((\d+)-(\d+)\)\s*$").expect("regex compiles"));
    let lines: Vec<&str> = text.lines().collect();
    let mut touches = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(c) = INFO.captures(lines[i].trim_end()) {
            let end = (i + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with("```"));
            let body = lines[i + 1..end.unwrap_or(lines.len())].join("\n");
            if let (Ok(start), Ok(stop)) = (c[2].parse::<u32>(), c[3].parse::<u32>())
                && start >= 1
                && stop >= start
            {
                touches.push(Touch {
                    path: c[1].to_string(),
                    lines: Some([start, stop]),
                    text: Some(body),
                    kind: TouchKind::Read,
                });
            }
            i = end.unwrap_or(lines.len()) + 1;
            continue;
        }
        i += 1;
    }
    touches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_patch_hunks_become_edits() {
        let patch = "*** Begin Patch\n*** Update File: src/auth.rs\n@@ fn login\n fn login() {\n-    old();\n+    argon2();\n }\n*** Add File: src/new.rs\n+pub fn x() {}\n*** Delete File: src/old.rs\n*** End Patch";
        let t = apply_patch_touches(patch);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].path, "src/auth.rs");
        assert_eq!(t[0].text.as_deref(), Some("fn login() {\n    argon2();\n}"));
        assert_eq!(
            (t[1].path.as_str(), t[1].text.as_deref()),
            ("src/new.rs", Some("pub fn x() {}"))
        );
    }

    #[test]
    fn search_replace_blocks_name_their_file() {
        let text = "Change it:\n\nsrc/auth.py\n```python\n<<<<<<< SEARCH\nold()\n=======\nnew_one()\nnew_two()\n>>>>>>> REPLACE\n```\n";
        let t = search_replace_touches(text, None);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].path, "src/auth.py");
        assert_eq!(t[0].text.as_deref(), Some("new_one()\nnew_two()"));
    }

    #[test]
    fn sed_reads_and_citations() {
        let t = sed_reads("bash -lc \"sed -n '200,240p' src/server/api.rs\"");
        assert_eq!(
            (t[0].path.as_str(), t[0].lines),
            ("src/server/api.rs", Some([200, 240]))
        );
        let t = citations("See `apps/web/page.tsx:39-47` and `src/lib.rs:12`; not `x:1`.");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].lines, Some([39, 47]));
        assert_eq!(t[1].lines, Some([12, 12]));
    }

    #[test]
    fn numbered_listings_lose_their_numbers() {
        let (start, text) =
            numbered_listing("   195→fn a() {\n   196→    1\n   197→}\n\n<system-reminder>x</system-reminder>")
                .unwrap();
        assert_eq!((start, text.as_str()), (195, "fn a() {\n    1\n}"));
        assert!(numbered_listing("plain text\nhere").is_none());
        let (start, text) = numbered_listing("1 | import os\n2 | print(1)").unwrap();
        assert_eq!((start, text.as_str()), (1, "import os\nprint(1)"));
    }

    #[test]
    fn continue_fences_carry_ranges() {
        let t = fenced_ranges("Why?\n```py model.py (4-10)\ndef f():\n    pass\n```\n");
        assert_eq!((t[0].path.as_str(), t[0].lines), ("model.py", Some([4, 10])));
        assert_eq!(t[0].text.as_deref(), Some("def f():\n    pass"));
    }
}
