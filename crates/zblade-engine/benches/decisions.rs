//! Decision retrieval (issue 59): does the agent get the decision its task hinges on?
//!
//! `benches/data/decisions.json` (written for zblade) holds 24 bug reports in symptom words about
//! a fictional invoicing service. The fix of each hinges on a decision made in a chat (`chat`),
//! made in a chat and amended in a later one (`amended`: the amendment is what stands), or
//! recorded in a commit message that a later commit with a misleading subject broke (`commit`).
//! No report shares a content word with its deciding chat or commit; the table prints the
//! overlap the tokenizer finds.
//!
//! The project: a clone of this repository (real history, its code indexed), with the decision
//! commits inserted 110 first-parent commits below HEAD, the breaking commits 70 below, and the
//! real commits replayed above them; the chats buried among unrelated developer chats (one per
//! `##` section of docs/, the benchmark's own doc and BENCHMARKS.md left out). Each report is
//! packed by `zblade context --budget 2000` and searched by `zblade search` with the shipped
//! defaults, and searched again with keywords only (BM25) beside it.
//!
//! Tune split: the tasks marked `tune` (thresholds in `zblade_context::revisits` and the gate's
//! decision rule were chosen on them); report split: the rest, never tuned on.
//!
//! `cargo bench --workspace --bench decisions` writes docs/BENCHMARKS.md; under `cargo test` it
//! runs three tasks over a small generated history and writes nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Deserialize;
use zblade_context::Item;
use zblade_engine::{ContextRequest, Project, SearchKind, SearchMode, SearchQuery};

mod common;
use common::{Stats, full_run, write_section};

const BUDGET: usize = 2_000;
/// First-parent commits above the decision commits, and above the breaking commits.
const ABOVE_DECISIONS: usize = 110;
const ABOVE_BREAKERS: usize = 70;

#[derive(Deserialize)]
struct Data {
    tasks: Vec<Task>,
}

#[derive(Deserialize, Clone)]
struct Task {
    id: String,
    split: String,
    kind: String,
    #[serde(default)]
    chat: Vec<(String, String)>,
    #[serde(default)]
    amendment: Vec<(String, String)>,
    #[serde(default)]
    file: String,
    #[serde(default)]
    initial: String,
    #[serde(default)]
    decided: String,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    broken: String,
    #[serde(default)]
    breaker: String,
    report: String,
}

impl Task {
    /// The deciding text: what the report must not share words with.
    fn deciding_text(&self) -> String {
        match self.kind.as_str() {
            "commit" => format!("{}\n{}", self.subject, self.body),
            _ => self
                .chat
                .iter()
                .chain(&self.amendment)
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// Content words as the revisit detector sees them (lower case, 3+ letters, no stopwords).
fn shared_words(a: &str, b: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "that", "this", "with", "are", "was", "not", "our", "their", "they", "from", "when",
        "after", "over", "some", "each", "only", "two", "any", "all", "who", "still", "but", "one", "has", "have",
    ];
    let words = |t: &str| -> HashSet<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() >= 3)
            .map(|w| w.to_lowercase())
            .filter(|w| !STOP.contains(&w.as_str()))
            .map(|w| w.trim_end_matches('s').to_string())
            .collect()
    };
    let mut shared: Vec<String> = words(a).intersection(&words(b)).cloned().collect();
    shared.sort();
    shared
}

fn git(dir: &Path, args: &[&str], date: Option<&str>) -> String {
    let mut command = Command::new("git");
    command.current_dir(dir).args(args);
    command
        .env("GIT_AUTHOR_NAME", "Ledger Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@ledger.example");
    command
        .env("GIT_COMMITTER_NAME", "Ledger Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@ledger.example");
    if let Some(date) = date {
        command.env("GIT_AUTHOR_DATE", date).env("GIT_COMMITTER_DATE", date);
    }
    let out = command.output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn commit_file(repo: &Path, path: &str, text: &str, message: &str, date: &str) -> String {
    let full = repo.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(&full, text).unwrap();
    git(repo, &["add", path], None);
    git(repo, &["commit", "-q", "-m", message], Some(date));
    git(repo, &["rev-parse", "HEAD"], None)
}

/// `count` first-parent commits replayed onto the bench branch: the real ones in `real` from
/// `from`, or made up (a smoke run, or a clone without enough history).
fn replay(repo: &Path, real: &[String], from: usize, count: usize, date: &str) -> usize {
    let picks: Vec<&String> = real.iter().skip(from).take(count).collect();
    if !picks.is_empty() {
        let mut args = vec!["cherry-pick", "--allow-empty", "--keep-redundant-commits"];
        args.extend(picks.iter().map(|s| s.as_str()));
        git(repo, &args, None);
        return from + picks.len();
    }
    for i in 0..count {
        commit_file(
            repo,
            &format!("notes/unrelated_{}_{i}.md", &date[..10]),
            &format!("Note {i}: unrelated work.\n"),
            &format!("docs: unrelated note {i}"),
            date,
        );
    }
    from
}

/// Builds the history; returns (decision sha, breaker sha) per commit task, by id.
fn build_repository(repo: &Path, tasks: &[Task], full: bool) -> Vec<(String, String, String)> {
    let source = common::report::manifest_dir().join("../..");
    let mut real: Vec<String> = Vec::new();
    if full {
        git(
            Path::new("."),
            &[
                "clone",
                "-q",
                "--no-local",
                source.to_str().unwrap(),
                repo.to_str().unwrap(),
            ],
            None,
        );
        let list = git(repo, &["rev-list", "--first-parent", "--reverse", "HEAD"], None);
        real = list.lines().map(String::from).collect();
    }
    let needed = ABOVE_DECISIONS;
    if real.len() > needed + 20 {
        let base = real[real.len() - needed - 1].clone();
        git(repo, &["checkout", "-q", "-b", "bench", &base], None);
        real = real[real.len() - needed..].to_vec();
    } else {
        if real.is_empty() {
            std::fs::create_dir_all(repo).unwrap();
            git(repo, &["init", "-q"], None);
        }
        real.clear();
        commit_file(repo, "README.md", "ledger\n", "initial commit", "2026-09-01T09:00:00Z");
    }
    let commits: Vec<&Task> = tasks.iter().filter(|t| t.kind == "commit").collect();
    for task in &commits {
        std::fs::create_dir_all(repo.join(&task.file).parent().unwrap()).unwrap();
        std::fs::write(repo.join(&task.file), &task.initial).unwrap();
        git(repo, &["add", &task.file], None);
    }
    git(
        repo,
        &["commit", "-q", "--allow-empty", "-m", "ledger: initial import"],
        Some("2026-09-02T09:00:00Z"),
    );
    let mut shas = Vec::new();
    for (i, task) in commits.iter().enumerate() {
        let message = format!("{}\n\n{}", task.subject, task.body);
        let date = format!("2026-09-{:02}T10:00:00Z", 3 + i);
        shas.push((
            task.id.clone(),
            commit_file(repo, &task.file, &task.decided, &message, &date),
        ));
    }
    let small = if full { 0 } else { 5 };
    let at = replay(
        repo,
        &real,
        0,
        if full { ABOVE_DECISIONS - ABOVE_BREAKERS } else { small },
        "2026-09-20T10:00:00Z",
    );
    let mut out = Vec::new();
    for (i, (task, (id, decided))) in commits.iter().zip(shas).enumerate() {
        let date = format!("2026-10-{:02}T10:00:00Z", 1 + i);
        let broken = commit_file(repo, &task.file, &task.broken, &task.breaker, &date);
        out.push((id, decided, broken));
    }
    replay(
        repo,
        &real,
        at,
        if full { usize::MAX } else { small },
        "2026-10-20T10:00:00Z",
    );
    out
}

/// Unrelated developer chats: one per `##` section of the project's docs.
fn noise_chats(limit: usize) -> Vec<serde_json::Value> {
    let docs = common::report::manifest_dir().join("../../docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| {
            !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("DECISIONS.md" | "BENCHMARKS.md")
            )
        })
        .collect();
    files.sort();
    let mut chats = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for section in text.split("\n## ").skip(1) {
            let (heading, body) = section.split_once('\n').unwrap_or((section, ""));
            let body: String = body.trim().chars().take(1500).collect();
            if body.len() < 200 || chats.len() >= limit {
                continue;
            }
            let n = chats.len();
            let day = 1 + n % 28;
            let month = 9 + (n / 28) % 3;
            chats.push(serde_json::json!({
                "conversation_id": format!("conv_noise{n:03}"),
                "title": heading.trim(),
                "messages": [
                    {"id": "m0", "role": "user", "content": format!("Can you explain {}?", heading.trim()),
                     "timestamp": format!("2026-{month:02}-{day:02}T08:00:00Z")},
                    {"id": "m1", "role": "assistant", "content": body,
                     "timestamp": format!("2026-{month:02}-{day:02}T08:01:00Z")}
                ]
            }));
        }
    }
    chats
}

fn chat_json(id: &str, title: &str, turns: &[(String, String)], date: &str) -> serde_json::Value {
    let messages: Vec<serde_json::Value> = turns
        .iter()
        .enumerate()
        .map(|(i, (role, text))| {
            serde_json::json!({"id": format!("m{i}"), "role": role, "content": text,
                               "timestamp": format!("{date}T09:{:02}:00Z", i)})
        })
        .collect();
    serde_json::json!({"conversation_id": id, "title": title, "messages": messages})
}

/// What happened to one task.
#[derive(Default)]
struct Outcome {
    standing_packed: bool,
    superseded_only: bool,
    gated_empty_top5: bool,
    hit1: bool,
    hit5: bool,
    bm25_hit1: bool,
    bm25_hit5: bool,
    tokens: usize,
    relevance: f64,
}

/// Whether a search hit belongs to the target (a conversation id or a commit sha).
fn is_target(hit: &zblade_engine::Hit, target: &str) -> bool {
    hit.hit.conversation_id.as_deref() == Some(target) || hit.hit.id == target
}

fn ask(project: &mut Project, task: &Task, standing: &str, superseded: Option<&str>) -> Outcome {
    let request = ContextRequest {
        budget: Some(BUDGET),
        ..ContextRequest::new(task.report.clone())
    };
    let result = project.context(&request).unwrap();
    let packed = |target: &str| {
        result.pack.entries.iter().any(|e| match &e.candidate.item {
            Item::Message { conversation, .. } => conversation == target,
            Item::Commit { sha, .. } => sha == target,
            _ => false,
        })
    };
    let mut outcome = Outcome {
        standing_packed: packed(standing),
        superseded_only: superseded.is_some_and(|old| packed(old) && !packed(standing)),
        tokens: result.pack.tokens,
        relevance: result.pack.gate.as_ref().and_then(|g| g.relevance).unwrap_or(1.0),
        ..Outcome::default()
    };
    let ranks = |mode: Option<SearchMode>, project: &mut Project| -> (bool, bool) {
        let query = SearchQuery::new(task.report.clone(), 10, SearchKind::All).in_mode(mode);
        let hits = project.search(&query).unwrap().hits;
        let position = hits.iter().position(|h| is_target(h, standing));
        (position == Some(0), position.is_some_and(|p| p < 5))
    };
    (outcome.hit1, outcome.hit5) = ranks(None, project);
    (outcome.bm25_hit1, outcome.bm25_hit5) = ranks(Some(SearchMode::Keyword), project);
    if std::env::var_os("ZBLADE_DECISIONS_DEBUG").is_some() {
        for mode in [SearchMode::Hybrid, SearchMode::Semantic] {
            let query = SearchQuery::new(task.report.clone(), 50, SearchKind::All).in_mode(Some(mode));
            let hits = project.search(&query).unwrap().hits;
            let position = hits.iter().position(|h| is_target(h, standing));
            let top: Vec<String> = hits
                .iter()
                .take(3)
                .map(|h| {
                    format!(
                        "{}:{}",
                        h.hit.kind.as_str(),
                        h.hit
                            .title
                            .as_deref()
                            .unwrap_or(&h.hit.id)
                            .chars()
                            .take(40)
                            .collect::<String>()
                    )
                })
                .collect();
            eprintln!("  {} {:?} target at {position:?}; top {top:?}", task.id, mode);
        }
    }
    outcome.gated_empty_top5 = result.pack.gated() && outcome.hit5;
    outcome
}

fn main() {
    let full = full_run();
    let data: Data = serde_json::from_str(include_str!("data/decisions.json")).unwrap();
    let tasks: Vec<Task> = if full {
        data.tasks
    } else {
        ["chat", "amended", "commit"]
            .iter()
            .map(|kind| data.tasks.iter().find(|t| t.kind == *kind).unwrap().clone())
            .collect()
    };
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("ledger");
    let started = Instant::now();
    let commits = build_repository(&repo, &tasks, full);
    eprintln!("decisions: history built in {:.1} s", started.elapsed().as_secs_f64());
    // The benchmark's own data and doc are in the clone: searching them would find the answers.
    std::fs::write(
        repo.join(".zbladeignore"),
        "crates/zblade-engine/benches/data/decisions.json\ndocs/DECISIONS.md\ndocs/BENCHMARKS.md\n",
    )
    .unwrap();
    let (mut project, _) = Project::init(&repo).unwrap();
    let mut chats: Vec<serde_json::Value> = noise_chats(if full { 150 } else { 6 });
    let noise = chats.len();
    for (i, task) in tasks.iter().enumerate() {
        if task.chat.is_empty() {
            continue;
        }
        let title = task.chat[0].1.chars().take(60).collect::<String>();
        chats.push(chat_json(
            &format!("conv_{}", task.id.replace('-', "_")),
            &title,
            &task.chat,
            &format!("2026-10-{:02}", 1 + i % 20),
        ));
        if !task.amendment.is_empty() {
            let title = task.amendment[0].1.chars().take(60).collect::<String>();
            chats.push(chat_json(
                &format!("conv_{}_amended", task.id.replace('-', "_")),
                &title,
                &task.amendment,
                &format!("2026-11-{:02}", 1 + i % 20),
            ));
        }
    }
    let batch = chats
        .iter()
        .map(|c| {
            (
                zblade_engine::parse_conversation(c.to_string().as_bytes(), "bench").unwrap(),
                "bench".to_string(),
            )
        })
        .collect();
    project.add_conversations(batch).unwrap();
    let indexing = Instant::now();
    let report = project
        .update_search_index(&mut |_, _, _| {})
        .expect("the embedding model (run scripts/setup.sh)");
    eprintln!(
        "decisions: {noise} unrelated chats, {} commits indexed ({} read), {} code chunks, in {:.1} s",
        report.history.commits,
        report.history.read,
        report.code.chunks,
        indexing.elapsed().as_secs_f64()
    );

    // [tune, report] × [chat, amended, commit]
    let kinds = ["chat", "amended", "commit"];
    let mut table: Vec<Vec<Vec<Outcome>>> = (0..2).map(|_| (0..3).map(|_| Vec::new()).collect()).collect();
    let mut overlap_lines = Vec::new();
    for task in &tasks {
        let (standing, superseded) = match task.kind.as_str() {
            "commit" => (commits.iter().find(|(id, ..)| id == &task.id).unwrap().1.clone(), None),
            "amended" => {
                let id = task.id.replace('-', "_");
                (format!("conv_{id}_amended"), Some(format!("conv_{id}")))
            }
            _ => (format!("conv_{}", task.id.replace('-', "_")), None),
        };
        let outcome = ask(&mut project, task, &standing, superseded.as_deref());
        let shared = shared_words(&task.report, &task.deciding_text());
        eprintln!(
            "decisions: {:<11} relevance {:.2} packed {} superseded-only {} gated-empty {} hit@1 {} (bm25 {}) overlap {:?}",
            task.id,
            outcome.relevance,
            outcome.standing_packed,
            outcome.superseded_only,
            outcome.gated_empty_top5,
            outcome.hit1,
            outcome.bm25_hit1,
            shared
        );
        overlap_lines.push((task.id.clone(), shared));
        let split = usize::from(task.split != "tune");
        let kind = kinds.iter().position(|k| *k == task.kind).unwrap();
        table[split][kind].push(outcome);
    }

    // `zblade why` on the decision files and on files of the repository, warm.
    let mut files: Vec<(String, (u32, u32))> = tasks
        .iter()
        .filter(|t| t.kind == "commit")
        .map(|t| (t.file.clone(), (1, 6)))
        .collect();
    for (i, file) in git(&repo, &["ls-files", "crates/*.rs"], None)
        .lines()
        .take(if full { 60 } else { 5 })
        .enumerate()
    {
        let line = 1 + (i as u32 * 37) % 200;
        files.push((file.to_string(), (line, line + 20)));
    }
    for (file, lines) in &files {
        project.why(file, Some(*lines)).unwrap();
    }
    let mut samples = Vec::new();
    for _ in 0..3 {
        for (file, lines) in &files {
            let t = Instant::now();
            project.why(file, Some(*lines)).unwrap();
            samples.push(t.elapsed());
        }
    }
    let why = Stats::of(&mut samples);
    eprintln!("decisions: why {why}");

    let rate = |v: &[Outcome], f: fn(&Outcome) -> bool| -> String {
        if v.is_empty() {
            return "–".into();
        }
        format!("{:.3}", v.iter().filter(|o| f(o)).count() as f64 / v.len() as f64)
    };
    let mut body = String::new();
    body.push_str(&format!(
        "{} tasks (`benches/data/decisions.json`, written for zblade), {noise} unrelated chats (the `##` sections of docs/), this repository's history with the decision commits {ABOVE_DECISIONS} and the breaking commits {ABOVE_BREAKERS} first-parent commits below HEAD ({} commits indexed), its code indexed. Packed by `zblade context --budget {BUDGET}` with the shipped defaults (hybrid search, relevance gate at 0.5). Tune split: the tasks marked `tune`; report split: the rest, never tuned on.\n\n",
        tasks.len(),
        report.history.commits
    ));
    body.push_str("| split | kind | tasks | standing decision packed | superseded rule packed without its amendment | gated to empty, search top 5 | search hit@1 | hit@5 | BM25 hit@1 | BM25 hit@5 | pack tokens (mean) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (split, name) in ["tune", "report"].iter().enumerate() {
        for (k, kind) in kinds.iter().enumerate() {
            let v = &table[split][k];
            let tokens = v.iter().map(|o| o.tokens).sum::<usize>() / v.len().max(1);
            body.push_str(&format!(
                "| {name} | {kind} | {} | {} | {} | {} | {} | {} | {} | {} | {tokens} |\n",
                v.len(),
                rate(v, |o| o.standing_packed),
                if *kind == "amended" {
                    rate(v, |o| o.superseded_only)
                } else {
                    "–".into()
                },
                rate(v, |o| o.gated_empty_top5),
                rate(v, |o| o.hit1),
                rate(v, |o| o.hit5),
                rate(v, |o| o.bm25_hit1),
                rate(v, |o| o.bm25_hit5),
            ));
        }
    }
    let total_shared: usize = overlap_lines.iter().map(|(_, s)| s.len()).sum();
    body.push_str(&format!(
        "\nContent words a report shares with its deciding chat or commit: {total_shared} in all{}.\n\n`zblade why FILE:LINES` warm on this repository ({} asks): p50 / p95 / p99 {why}.\n\n",
        if total_shared == 0 {
            String::new()
        } else {
            format!(
                " ({})",
                overlap_lines
                    .iter()
                    .filter(|(_, s)| !s.is_empty())
                    .map(|(id, s)| format!("{id}: {}", s.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        },
        samples.len()
    ));
    if full {
        write_section("decisions", "Decision retrieval", "decisions", &body);
    } else {
        eprintln!("{body}");
    }
}
