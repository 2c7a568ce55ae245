//! References benchmark (issue: code references that stay valid).
//!
//! - Re-anchoring one reference in a 5,000-line file after an edit (p95 target ≤ 2 ms), next
//!   to reading and hashing the file alone.
//! - A branch switch in a repository with 2,000 files and 10,000 references: every reference
//!   re-checked and stored (target ≤ 1 s), next to `git status` on the same repository.
//! - A save to the live location updated in the index, through the real watcher and its
//!   100 ms debounce (p95 target ≤ 300 ms).
//!
//! `cargo bench --workspace --bench references` writes docs/BENCHMARKS.md; under
//! `cargo test` it runs small and writes nothing.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use zblade_engine::{Project, WatchEvent, WatchOptions};
use zblade_refs::{Checker, RefRecord, SourceFile, anchor};

mod common;
use common::{Stats, full_run, write_section};

fn code(n: usize, salt: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "    let v{i}_{salt} = transform(input[{i}], {salt}) + offset_{};\n",
                i % 17
            )
        })
        .collect()
}

fn git(root: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn main() {
    let full = full_run();
    let (files, refs_per_file, iterations) = if full { (2000, 5, 1000) } else { (50, 5, 50) };

    // 1. Re-anchor one reference in a 5,000-line file after an edit.
    let dir = tempfile::tempdir().unwrap();
    let original = code(5000, 0);
    std::fs::write(dir.path().join("big.rs"), &original).unwrap();
    let captured = anchor::capture(&SourceFile::from_text(&original), 2500, 2540).unwrap();
    let record = RefRecord {
        key: "k".into(),
        file: "big.rs".into(),
        lines: [2500, 2540],
        anchor: Some(captured),
        git_hash: None,
        commit: None,
    };
    let mut ours = Vec::new();
    let mut raw = Vec::new();
    for i in 0..iterations {
        // Alternate edits: lines inserted above (shifted) and a line changed inside (modified).
        let edited = if i % 2 == 0 {
            format!("// inserted {i}\n{original}")
        } else {
            original.replacen("transform(input[2510], 0)", &format!("transform(input[2510], {i})"), 1)
        };
        std::fs::write(dir.path().join("big.rs"), &edited).unwrap();
        let started = Instant::now();
        let bytes = std::fs::read(dir.path().join("big.rs")).unwrap();
        std::hint::black_box(SourceFile::from_bytes(bytes));
        raw.push(started.elapsed());
        let started = Instant::now();
        let checked = Checker::new(dir.path(), None).check(&record);
        ours.push(started.elapsed());
        assert!(
            matches!(checked.status.as_str(), "shifted" | "modified"),
            "{:?}",
            checked.status
        );
    }
    let reanchor = Stats::of(&mut ours);
    let read_only = Stats::of(&mut raw);

    // 2. Branch switch: 2,000 files, 10,000 references.
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "-q", "-b", "main"]);
    for f in 0..files {
        let path = root.join(format!("src/m{:02}/f{f}.rs", f % 40));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, code(200, f)).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "main"]);
    let (mut project, _) = Project::init(root).unwrap();
    let per_conversation = 50;
    let mut batch = Vec::new();
    let mut n = 0;
    for f in 0..files {
        for r in 0..refs_per_file {
            let start = 10 + r as u32 * 35;
            batch.push(
                serde_json::json!({"id": format!("msg_{n}"), "role": "user", "content": "see",
                "code_references": [{"file": format!("src/m{:02}/f{f}.rs", f % 40), "lines": [start, start + 20]}]}),
            );
            n += 1;
        }
    }
    let conversations: Vec<_> = batch
        .chunks(per_conversation)
        .enumerate()
        .map(|(i, msgs)| {
            let json = serde_json::json!({"conversation_id": format!("conv_{i:05}"), "messages": msgs}).to_string();
            (
                zblade_engine::parse_conversation(json.as_bytes(), "bench").unwrap(),
                "bench".to_string(),
            )
        })
        .collect();
    project.add_conversations(conversations).unwrap();
    let total_refs = project.check_references().unwrap().len();
    assert_eq!(total_refs, files * refs_per_file);
    git(root, &["checkout", "-q", "-b", "other"]);
    for f in (0..files).step_by(2) {
        let path = root.join(format!("src/m{:02}/f{f}.rs", f % 40));
        std::fs::write(path, format!("// changed on this branch\n// twice\n{}", code(200, f))).unwrap();
    }
    git(root, &["commit", "-q", "-am", "other"]);
    git(root, &["checkout", "-q", "main"]);
    let mut switch = Vec::new();
    let mut status = Vec::new();
    for round in 0..if full { 5 } else { 2 } {
        git(root, &["checkout", "-q", if round % 2 == 0 { "other" } else { "main" }]);
        let started = Instant::now();
        let reports = project.check_references().unwrap();
        switch.push(started.elapsed());
        let shifted = reports
            .iter()
            .filter(|r| r.status == zblade_engine::ReferenceStatus::Shifted)
            .count();
        assert_eq!(shifted, if round % 2 == 0 { total_refs / 2 } else { 0 });
        let started = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success());
        status.push(started.elapsed());
    }
    let switch = Stats::of(&mut switch);
    let git_status = Stats::of(&mut status);

    // 3. Save → live location in the index, through the watcher (100 ms debounce).
    let watched = root.join("src/m00/f0.rs");
    git(root, &["checkout", "-q", "main"]);
    let stop = Arc::new(AtomicBool::new(false));
    let (send, events) = mpsc::channel();
    let watcher = {
        let (root, stop) = (root.to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let mut project = Project::open(&root).unwrap();
            project
                .watch(WatchOptions::default(), &stop, |e| send.send(e).unwrap())
                .unwrap();
        })
    };
    loop {
        if let WatchEvent::Ready { .. } = events.recv_timeout(Duration::from_secs(60)).unwrap() {
            break;
        }
    }
    let mut saves = Vec::new();
    for i in 0..if full { 100 } else { 10 } {
        let pad = 1 + i % 3;
        let text = format!("{}{}", "// pad\n".repeat(pad), code(200, 0));
        std::thread::sleep(Duration::from_millis(250)); // let the previous save's events settle
        events.try_iter().for_each(drop);
        let started = Instant::now();
        std::fs::write(&watched, text).unwrap();
        // Done when an update reports the first reference at its new place.
        let expected = 10 + pad as u32;
        loop {
            if let WatchEvent::Updated { changed, .. } = events
                .recv_timeout(Duration::from_secs(10))
                .expect("an update within 10 s")
                && changed.iter().any(|r| {
                    r.live
                        .as_ref()
                        .is_some_and(|l| l.file == "src/m00/f0.rs" && l.lines[0] == expected)
                })
            {
                break;
            }
        }
        saves.push(started.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let save = Stats::of(&mut saves);

    let report = format!(
        "| measure | zblade | baseline, same run | target |\n|---|---|---|---|\n\
         | re-anchor one reference (41 lines) in a 5,000-line file after an edit, p50 / p95 / p99 | {reanchor} | {read_only} (read + hash the file only) | p95 ≤ 2 ms |\n\
         | branch switch: re-check and store {total_refs} references in {files} files, p50 / p95 / p99 | {switch} | {git_status} (`git status`) | ≤ 1 s |\n\
         | save → live location updated in the index (watcher, 100 ms debounce), p50 / p95 / p99 | {save} | – | p95 ≤ 300 ms |\n\n\
         The branch switch alternates between a branch where half the files gained two lines at the top (half \
         the references shifted) and the original. Each save inserts 1–3 lines above a watched reference.\n",
    );
    println!("{report}");
    if full {
        write_section(
            "references",
            "References: re-anchoring, branch switch, live updates",
            "references",
            &report,
        );
    }
}
