//! Reading a repository's history as memory (issue 59): commits with their hunks, line
//! attribution and the index write, keyword-only (`Project::index_history`; embedding the
//! messages runs afterwards at the model's speed, docs/BENCHMARKS.md "Semantic").
//!
//! Two histories: this repository's own (a clone), and a generated one written with
//! `git fast-import` — 100,000 commits in the full run — with realistic sizes: 2,000 source files
//! of 40–400 lines, each commit changing one to four of them (mostly one or two) with one to three
//! hunks of 1–20 lines, one in twenty adding a file and one in a hundred deleting one, messages of
//! a subject and zero to five body lines. The peer in the same run is `git log -p --first-parent
//! -U0` over the same history: git itself producing the same hunks (no attribution, no index).
//!
//! `cargo bench --workspace --bench history` writes docs/BENCHMARKS.md; under `cargo test` it
//! reads 500 generated commits and writes nothing.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use zblade_engine::Project;

mod common;
use common::{full_run, write_section};

/// A small deterministic generator (xorshift), so every run writes the same history.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "let", "value", "config", "request", "parse", "token", "index", "buffer", "result", "match", "return", "error",
    "handle", "state", "update", "client", "server", "read", "write", "cache", "limit", "retry", "count", "table",
];

fn code_line(rng: &mut Rng) -> String {
    let indent = "    ".repeat(rng.below(3) as usize);
    let words: Vec<&str> = (0..3 + rng.below(5))
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect();
    format!("{indent}{}({});", words.join("_"), rng.below(1000))
}

/// Writes a history of `commits` commits into a new repository at `dir` through fast-import.
fn generate(dir: &Path, commits: usize) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufWriter::new(child.stdin.take().unwrap());
    let mut rng = Rng(0x5eed_1234_abcd);
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let new_file = |rng: &mut Rng, n: usize| -> (String, Vec<String>) {
        let lines = (0..40 + rng.below(360)).map(|_| code_line(rng)).collect();
        (format!("src/module_{}/file_{n}.rs", n % 50), lines)
    };
    for n in 0..2_000 {
        files.push(new_file(&mut rng, n));
    }
    let mut time = 1_600_000_000u64;
    for c in 0..commits {
        time += 600 + rng.below(7_200);
        let subject = format!(
            "{} {} in module {}",
            ["fix", "feat", "refactor", "perf", "docs"][rng.below(5) as usize],
            WORDS[rng.below(24) as usize],
            rng.below(50)
        );
        let body: Vec<String> = (0..rng.below(6))
            .map(|_| {
                format!(
                    "Because the {} {} needed it.",
                    WORDS[rng.below(24) as usize],
                    WORDS[rng.below(24) as usize]
                )
            })
            .collect();
        let message = if body.is_empty() {
            subject
        } else {
            format!("{subject}\n\n{}", body.join("\n"))
        };
        writeln!(out, "commit refs/heads/main\nmark :{}", c + 1).unwrap();
        writeln!(
            out,
            "author Dev <dev@example.com> {time} +0000\ncommitter Dev <dev@example.com> {time} +0000"
        )
        .unwrap();
        writeln!(out, "data {}\n{message}", message.len()).unwrap();
        if c > 0 {
            writeln!(out, "from :{c}").unwrap();
        }
        // The first commit writes every file; later ones change a few.
        let changed: Vec<usize> = if c == 0 {
            (0..files.len()).collect()
        } else {
            let roll = rng.below(100);
            if roll < 5 {
                let n = files.len();
                files.push(new_file(&mut rng, n));
                vec![n]
            } else if roll < 6 && files.len() > 10 {
                let gone = rng.below(files.len() as u64) as usize;
                let (path, _) = files.swap_remove(gone);
                writeln!(out, "D {path}").unwrap();
                vec![]
            } else {
                let count = [1, 1, 1, 2, 2, 3, 4][rng.below(7) as usize];
                (0..count).map(|_| rng.below(files.len() as u64) as usize).collect()
            }
        };
        for &i in &changed {
            if c > 0 {
                let lines = &mut files[i].1;
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(lines.len() as u64 + 1) as usize;
                    let remove = (rng.below(21) as usize).min(lines.len() - at.min(lines.len()));
                    let insert: Vec<String> = (0..rng.below(21)).map(|_| code_line(&mut rng)).collect();
                    lines.splice(at..at + remove, insert);
                }
            }
            let text = files[i].1.join("\n") + "\n";
            writeln!(out, "M 100644 inline {}\ndata {}\n{text}", files[i].0, text.len()).unwrap();
        }
        writeln!(out).unwrap();
    }
    drop(out);
    assert!(child.wait().unwrap().success(), "git fast-import failed");
    git(dir, &["checkout", "-q", "main"]);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (commits read, seconds) for zblade, and seconds for `git log -p` over the same history.
fn measure(repo: &Path) -> (usize, f64, f64) {
    let (mut project, _) = Project::init(repo).unwrap();
    let started = Instant::now();
    let report = project.index_history().unwrap();
    let ours = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let peer = Command::new("git")
        .current_dir(repo)
        .args([
            "log",
            "-p",
            "--first-parent",
            "-U0",
            "--no-renames",
            "--format=%H%n%an%n%ad%n%B",
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(peer.success());
    (report.read, ours, started.elapsed().as_secs_f64())
}

fn main() {
    let full = full_run();
    let work = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    if full {
        let clone = work.path().join("zblade");
        let source = common::report::manifest_dir().join("../..");
        git(
            Path::new("."),
            &[
                "clone",
                "-q",
                "--no-local",
                source.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        rows.push(("this repository", measure(&clone)));
    }
    let commits = if full { 100_000 } else { 500 };
    let generated = work.path().join("generated");
    let started = Instant::now();
    generate(&generated, commits);
    eprintln!(
        "history: generated {commits} commits in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    rows.push(("generated", measure(&generated)));

    let mut body = String::from(
        "Keyword-only history indexing: commits read with their hunks, every line attributed, all of it written to the index (`Project::index_history`, what `zblade index` runs). The peer, in the same run: `git log -p --first-parent -U0` over the same history (git producing the same hunks, nothing attributed or stored).\n\n| history | commits | zblade | commits/s | `git log -p` | ratio (zblade / git) |\n|---|---|---|---|---|---|\n",
    );
    for (name, (read, ours, peer)) in &rows {
        body.push_str(&format!(
            "| {name} | {read} | {ours:.2} s | {:.0} | {peer:.2} s | {:.2} |\n",
            *read as f64 / ours,
            ours / peer
        ));
    }
    body.push_str("\nThe generated history: 2,000 source files of 40–400 lines, each commit changing one to four of them (mostly one or two) with one to three hunks of 1–20 lines, one in twenty adding a file and one in a hundred deleting one (`benches/history.rs`). This repository's commits are large by comparison (an agent writes several files per commit).\n\n");
    eprintln!("{body}");
    if full {
        write_section("history", "Reading history", "history", &body);
    }
}
