//! References across long histories (issue 24, item 2): capture a reference to every function
//! of a real Rust code base as it was years ago, jump once to the code base as it is now (as
//! after a long-lived branch or a fresh clone), check every reference, and compare with where
//! the function really is.
//!
//! Ground truth: a function whose name occurs exactly once in the old tree and exactly once in
//! the new one is the same function; it is *located* when the check names its new file and a
//! range overlapping it. Honesty is measured too: a reference reported `ok` or `shifted` must
//! point at text that did not change.
//!
//! Histories: this repository's own git log (always; the smoke run under `cargo test` uses
//! only it) and, in a full run, pairs of releases of well-known crates downloaded once from
//! static.crates.io into `~/.cache/zblade/bench-crates` (no git needed: a release tarball is
//! the tree at that release). The crates tuned on and the ones reported on are listed apart.
//!
//! `cargo bench --workspace --bench long_history` writes docs/BENCHMARKS.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use zblade_refs::{Checker, RefRecord, ReferenceStatus};

#[path = "../../zblade-engine/benches/common/report.rs"]
mod report;
use report::{full_run, write_section};

/// Release pairs: (crate, old version, new version, years between them, used for tuning).
const RELEASES: &[(&str, &str, &str, u32, bool)] = &[
    ("serde_json", "1.0.40", "1.0.133", 5, true),
    ("itertools", "0.8.0", "0.13.0", 5, true),
    ("anyhow", "1.0.0", "1.0.93", 5, false),
    ("tokio", "1.0.0", "1.41.1", 4, false),
    ("regex-syntax", "0.6.0", "0.8.5", 6, false),
    ("hashbrown", "0.1.0", "0.15.2", 6, false),
    ("rayon", "1.0.0", "1.10.0", 6, false),
    ("syn", "1.0.0", "2.0.87", 5, false),
];

/// A function in a tree: file, first and last line (1-based), and its lines.
#[derive(Clone)]
struct Function {
    file: String,
    lines: [u32; 2],
    text: Vec<String>,
}

/// Outcome counts of one history.
#[derive(Default)]
struct Tally {
    functions: usize,
    located: usize,
    moved: usize,
    moved_located: usize,
    changed: usize,
    changed_located: usize,
    wrong_place: usize,
    claimed_unchanged_but_changed: usize,
    missing: usize,
    /// Functions that kept at least half their meaningful lines (whitespace aside): code that
    /// "still exists" by any tool's measure, which the target is about.
    recognisable: usize,
    recognisable_located: usize,
    check_time: Duration,
}

impl Tally {
    fn rate(part: usize, whole: usize) -> String {
        if whole == 0 {
            "–".into()
        } else {
            format!("{:.3}", part as f64 / whole as f64)
        }
    }
}

fn main() {
    let full = full_run();
    let work = tempfile::tempdir().unwrap();
    let mut rows: Vec<(String, bool, Tally, Tally)> = Vec::new(); // label, tuned, lines only, with identifiers

    let repo = report::manifest_dir().join("../..");
    match own_history(&repo, work.path(), full) {
        Some((label, old, new)) => rows.push((label, true, measure(&old, &new, false), measure(&old, &new, true))),
        None => eprintln!("this repository's history is not available (a shallow clone?); skipped"),
    }
    if full {
        let cache = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(".cache/zblade/bench-crates");
        for &(name, old, new, years, tuned) in RELEASES {
            let (Some(old_dir), Some(new_dir)) = (release(&cache, name, old), release(&cache, name, new)) else {
                eprintln!("{name}: could not download {old} or {new}; skipped");
                continue;
            };
            let label = format!("`{name}` {old} → {new} (~{years} years)");
            rows.push((
                label,
                tuned,
                measure(&old_dir, &new_dir, false),
                measure(&old_dir, &new_dir, true),
            ));
        }
    }
    for (label, _, base, t) in &rows {
        eprintln!(
            "{label}: lines only: still recognisable located {}",
            Tally::rate(base.recognisable_located, base.recognisable)
        );
        eprintln!(
            "{label}: {} functions, located {} (still recognisable: {} of {}; moved {} of {}, changed {} of {}), wrong place {}, claimed unchanged but changed {}, missing {}, check {:.0} ms",
            t.functions,
            Tally::rate(t.located, t.functions),
            Tally::rate(t.recognisable_located, t.recognisable),
            t.recognisable,
            Tally::rate(t.moved_located, t.moved),
            t.moved,
            Tally::rate(t.changed_located, t.changed),
            t.changed,
            t.wrong_place,
            t.claimed_unchanged_but_changed,
            t.missing,
            t.check_time.as_secs_f64() * 1000.0
        );
        assert_eq!(
            t.claimed_unchanged_but_changed, 0,
            "{label}: changed code reported unchanged"
        );
    }
    if !full {
        return;
    }
    let mut body = String::from(
        "Every function whose name is unique in both trees is referenced in the old tree and checked in the new one after a single jump. \
         *Located*: the check names the function's new file and an overlapping range (any status but `missing`). \
         *Wrong place*: a status other than `missing` that points elsewhere. *Claimed unchanged*: `ok`/`shifted` for text that changed (must be 0).\n\n\
         *Still recognisable*: the function kept at least half its meaningful lines, whitespace aside — code that still exists by any tool's measure; the target is about these.\n\n\
         | history | role | functions | located | still recognisable: located (target ≥ 0.97) | same, lines only (anchors without identifiers) | moved to another file: located | changed: located | wrong place | claimed unchanged but changed | check time |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    // located, functions, recognisable located, recognisable, the same lines only: reported histories only
    let mut totals = [0usize; 5];
    for (label, tuned, base, t) in &rows {
        if !tuned {
            totals[0] += t.located;
            totals[1] += t.functions;
            totals[2] += t.recognisable_located;
            totals[3] += t.recognisable;
            totals[4] += base.recognisable_located;
        }
        body += &format!(
            "| {label} | {} | {} | {} | {} of {} | {} | {} of {} | {} of {} | {} | {} | {:.0} ms |\n",
            if *tuned { "tuned on" } else { "reported" },
            t.functions,
            Tally::rate(t.located, t.functions),
            Tally::rate(t.recognisable_located, t.recognisable),
            t.recognisable,
            Tally::rate(base.recognisable_located, base.recognisable),
            Tally::rate(t.moved_located, t.moved),
            t.moved,
            Tally::rate(t.changed_located, t.changed),
            t.changed,
            t.wrong_place,
            t.claimed_unchanged_but_changed,
            t.check_time.as_secs_f64() * 1000.0,
        );
    }
    body += &format!(
        "\nOver the histories not tuned on: **{} of the still-recognisable functions located** ({} of them; {} with line hashes alone); {} of all {} functions.\n",
        Tally::rate(totals[2], totals[3]),
        totals[3],
        Tally::rate(totals[4], totals[3]),
        Tally::rate(totals[0], totals[1]),
        totals[1]
    );
    write_section(
        "long-history",
        "References across long histories",
        "long_history",
        &body,
    );
}

/// This repository at an early commit and at HEAD, each extracted into its own folder.
fn own_history(repo: &Path, work: &Path, full: bool) -> Option<(String, PathBuf, PathBuf)> {
    let revs = git_out(repo, &["rev-list", "--reverse", "HEAD", "--", "crates/zblade-refs"])?;
    let revs: Vec<&str> = revs.lines().collect();
    // The full run jumps from the first commit with this crate; the smoke run from a recent one.
    let old = if full {
        *revs.first()?
    } else {
        revs[revs.len().saturating_sub(6)]
    };
    let new = git_out(repo, &["rev-parse", "HEAD"])?;
    let (old_dir, new_dir) = (work.join("own-old"), work.join("own-new"));
    for (rev, dir) in [(old, &old_dir), (new.trim(), &new_dir)] {
        std::fs::create_dir_all(dir).unwrap();
        let archive = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "git -C '{}' archive {rev} | tar -x -C '{}'",
                repo.display(),
                dir.display()
            ))
            .status()
            .ok()?;
        if !archive.success() {
            return None;
        }
    }
    let short = &old[..7.min(old.len())];
    let commits = git_out(repo, &["rev-list", "--count", &format!("{old}..HEAD")])?;
    Some((
        format!("this repository, {short} → HEAD ({} commits)", commits.trim()),
        old_dir,
        new_dir,
    ))
}

fn git_out(repo: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A crate release's sources, downloaded and unpacked once into `cache`.
fn release(cache: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let dir = cache.join(format!("{name}-{version}"));
    if dir.join("Cargo.toml").exists() {
        return Some(dir);
    }
    std::fs::create_dir_all(cache).ok()?;
    let tarball = cache.join(format!("{name}-{version}.crate"));
    let url = format!("https://static.crates.io/crates/{name}/{name}-{version}.crate");
    let got = Command::new("curl")
        .args(["-sSfL", "--max-time", "120", "-o"])
        .arg(&tarball)
        .arg(&url)
        .status()
        .ok()?;
    let unpacked = got.success()
        && Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(cache)
            .status()
            .ok()?
            .success();
    let _ = std::fs::remove_file(&tarball);
    (unpacked && dir.join("Cargo.toml").exists()).then_some(dir)
}

/// References every uniquely named function of `old`, checks them all against `new`.
/// `with_idents: false` drops the identifier hashes from every anchor, as in anchors captured
/// before zblade stored them: the line-only baseline, in the same run.
fn measure(old: &Path, new: &Path, with_idents: bool) -> Tally {
    let before = functions(old);
    let after = functions(new);
    let mut capture = Checker::new(old, None);
    let mut references = Vec::new();
    for (name, function) in &before {
        let Some(now) = after.get(name) else { continue };
        let Ok((mut anchor, _)) = capture.capture(&function.file, function.lines) else {
            continue; // a file the checker will not read (too large, a secret's name)
        };
        if !with_idents && let Some(anchor) = &mut anchor {
            anchor.idents.clear();
        }
        let reference = RefRecord {
            key: name.clone(),
            file: function.file.clone(),
            lines: function.lines,
            anchor,
            git_hash: None,
            commit: None,
        };
        references.push((reference, function, now));
    }
    let mut tally = Tally::default();
    let mut checker = Checker::new(new, None);
    let started = Instant::now();
    let results: Vec<_> = references.iter().map(|(r, _, _)| checker.check(r)).collect();
    tally.check_time = started.elapsed();
    for ((_, was, now), checked) in references.iter().zip(results) {
        tally.functions += 1;
        let moved = was.file != now.file;
        let changed = was.text != now.text;
        tally.moved += moved as usize;
        tally.changed += changed as usize;
        let recognisable = shared_lines(&was.text, &now.text) >= 0.5;
        tally.recognisable += recognisable as usize;
        let overlaps = checked.file.as_deref() == Some(now.file.as_str())
            && checked
                .lines
                .is_some_and(|[a, b]| a <= now.lines[1] && b >= now.lines[0]);
        match checked.status {
            ReferenceStatus::Missing | ReferenceStatus::Unreadable => tally.missing += 1,
            _ if overlaps => {
                tally.located += 1;
                tally.recognisable_located += recognisable as usize;
                tally.moved_located += moved as usize;
                tally.changed_located += changed as usize;
            }
            _ => tally.wrong_place += 1,
        }
        if std::env::var_os("ZBLADE_BENCH_DEBUG").is_some() && !overlaps {
            eprintln!(
                "  {:?} {}:{:?} -> {}:{:?} (found {:?}:{:?} sim {:.2}) shared {:.2} reindented {}",
                checked.status,
                was.file,
                was.lines,
                now.file,
                now.lines,
                checked.file,
                checked.lines,
                checked.similarity,
                shared_lines(&was.text, &now.text),
                reindented(&was.text, &now.text)
            );
        }
        if changed && matches!(checked.status, ReferenceStatus::Ok | ReferenceStatus::Shifted) {
            tally.claimed_unchanged_but_changed += 1;
        }
    }
    tally
}

/// Functions of every `.rs` file under `root` whose name occurs once in the whole tree, by name.
/// Functions of fewer than three lines are left out (nobody references a one-line getter).
fn functions(root: &Path) -> HashMap<String, Function> {
    let mut found: HashMap<String, Vec<Function>> = HashMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" && name != "node_modules" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                for (name, function) in functions_in(&relative, &text) {
                    found.entry(name).or_default().push(function);
                }
            }
        }
    }
    found
        .into_iter()
        .filter(|(_, all)| all.len() == 1)
        .map(|(name, mut all)| (name, all.pop().unwrap()))
        .filter(|(_, f)| f.lines[1] - f.lines[0] >= 2)
        .collect()
}

/// `fn` items of one file with their extent (the line of `fn` to its closing brace; braces in
/// strings and comments are rare enough in function bodies not to matter for a benchmark).
fn functions_in(file: &str, text: &str) -> Vec<(String, Function)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i32;
        let mut opened = false;
        let mut end = None;
        'scan: for (j, l) in lines.iter().enumerate().skip(i) {
            let code = l.split("//").next().unwrap_or("");
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened => break 'scan, // a declaration without a body
                    _ => {}
                }
                if opened && depth == 0 {
                    end = Some(j);
                    break 'scan;
                }
            }
        }
        if let Some(end) = end {
            let text = lines[i..=end].iter().map(|l| l.trim_end().to_string()).collect();
            out.push((
                name,
                Function {
                    file: file.to_string(),
                    lines: [i as u32 + 1, end as u32 + 1],
                    text,
                },
            ));
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    loop {
        let word = words.next()?;
        match word {
            "fn" => break,
            "pub" | "const" | "async" | "unsafe" | "extern" | "default" | "\"C\"" => {}
            w if w.starts_with("pub(") => {}
            _ => return None,
        }
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Share of the old function's meaningful lines (whitespace-trimmed, not blank, not a lone
/// brace) that the new one still has: how recognisable the function is, whatever the tool.
fn shared_lines(old: &[String], new: &[String]) -> f64 {
    let meaningful = |l: &&String| {
        let t = l.trim();
        !t.is_empty() && t.len() > 2
    };
    let mut pool: HashMap<&str, usize> = HashMap::new();
    for l in new.iter().filter(meaningful) {
        *pool.entry(l.trim()).or_default() += 1;
    }
    let wanted: Vec<&str> = old.iter().filter(meaningful).map(|l| l.trim()).collect();
    if wanted.is_empty() {
        return 0.0;
    }
    let kept = wanted
        .iter()
        .filter(|l| match pool.get_mut(**l) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count();
    kept as f64 / wanted.len() as f64
}

/// Whether the function's lines are the same but for their indentation.
fn reindented(old: &[String], new: &[String]) -> bool {
    old != new && old.len() == new.len() && old.iter().zip(new).all(|(a, b)| a.trim() == b.trim())
}
