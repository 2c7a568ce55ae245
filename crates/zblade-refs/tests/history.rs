//! Reading history and attributing lines, checked against git's own blame: a repository is
//! built commit by commit (edits, insertions, a rename, a deletion, a huge file, a merge), read
//! with `read_history`, and every line's owner is compared with libgit2's first-parent blame.

use std::collections::HashMap;
use std::path::Path;

use git2::{BlameOptions, Repository, Signature};
use zblade_refs::attribution::{Effects, LineOwners};
use zblade_refs::{GitRepo, HistoryLimits};

fn commit_files(repo: &Repository, files: &[(&str, Option<&str>)], message: &str) -> git2::Oid {
    let root = repo.workdir().unwrap().to_path_buf();
    let mut index = repo.index().unwrap();
    for (path, text) in files {
        let full = root.join(path);
        match text {
            Some(text) => {
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::fs::write(&full, text).unwrap();
                index.add_path(Path::new(path)).unwrap();
            }
            None => {
                std::fs::remove_file(&full).unwrap();
                index.remove_path(Path::new(path)).unwrap();
            }
        }
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Ada", "ada@example.com").unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents).unwrap()
}

fn numbered(n: usize, tag: &str) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

/// Attribution from `read_history` over the whole repository, by sha.
fn attribute(root: &Path) -> (LineOwners, Vec<String>, Effects) {
    let git = GitRepo::discover(root).unwrap();
    let read = git.read_history(None, &HistoryLimits::default(), 2);
    let mut owners = LineOwners::default();
    let mut effects = Effects::default();
    let mut shas = vec![String::new()];
    for commit in &read.commits {
        shas.push(commit.sha.clone());
        for change in &commit.files {
            owners.apply(shas.len() as u32 - 1, change, &mut effects);
        }
    }
    (owners, shas, effects)
}

fn blame_of(repo: &Repository, path: &str) -> Vec<String> {
    let mut options = BlameOptions::new();
    options.first_parent(true);
    let blame = repo.blame_file(Path::new(path), Some(&mut options)).unwrap();
    let mut lines = Vec::new();
    for hunk in blame.iter() {
        for _ in 0..hunk.lines_in_hunk() {
            lines.push(hunk.final_commit_id().to_string());
        }
    }
    lines
}

#[test]
fn attribution_matches_gits_blame_after_edits_inserts_renames_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let mut text = numbered(40, "auth");
    commit_files(
        &repo,
        &[("src/auth.rs", Some(&text)), ("README", Some("hello\n"))],
        "feat: auth",
    );
    // Commit 2 rewrites lines 10-12 ("refresh 30 s before expiry").
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines.splice(9..12, ["refresh before expiry".to_string(), "never on 401".to_string()]);
    text = lines.join("\n") + "\n";
    commit_files(
        &repo,
        &[("src/auth.rs", Some(&text))],
        "fix: refresh tokens before expiry, not on 401\n\nThe gateway double-counts retries.",
    );
    // Commit 3 appends at the end: the decision's lines stay unchanged.
    text.push_str("appended 1\nappended 2\n");
    commit_files(&repo, &[("src/auth.rs", Some(&text))], "feat: more auth");
    // Commit 4 inserts at the top, renames another file, adds and deletes one.
    text = format!("// header\n{text}");
    commit_files(
        &repo,
        &[
            ("src/auth.rs", Some(&text)),
            ("src/billing.rs", Some(&numbered(25, "billing"))),
        ],
        "chore: header",
    );
    commit_files(
        &repo,
        &[
            ("src/billing.rs", None),
            ("src/money.rs", Some(&numbered(25, "billing"))),
        ],
        "refactor: rename billing",
    );
    // Commit 6 breaks the decision: rewrites one of its lines.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[11] = "refresh on 401".into();
    text = lines.join("\n") + "\n";
    commit_files(&repo, &[("src/auth.rs", Some(&text))], "refactor: tidy auth");

    let (owners, shas, effects) = attribute(dir.path());
    assert_eq!(shas.len(), 7, "six commits read");
    for path in ["src/auth.rs", "src/money.rs", "README"] {
        let ours: Vec<String> = owners.of(path).iter().map(|l| shas[l.owner as usize].clone()).collect();
        assert_eq!(ours, blame_of(&repo, path), "{path}");
    }
    assert!(owners.of("src/billing.rs").is_empty());
    // The fix (commit 2) wrote 2 lines; the tidy-up (6) rewrote one of them; commits 3-5
    // touched none of them.
    let by: HashMap<u32, u64> = effects
        .overwrites
        .iter()
        .filter(|((o, _), _)| o.commit == 2)
        .map(|((o, _), (rewritten, deleted))| (o.by, rewritten + deleted))
        .collect();
    assert_eq!(by, HashMap::from([(6, 1)]));
    assert_eq!(effects.written[&2], 2);
    // The line 6 wrote remembers whose line it replaced.
    let replaced: Vec<u32> = owners
        .of("src/auth.rs")
        .iter()
        .filter(|l| l.owner == 6)
        .map(|l| l.replaced)
        .collect();
    assert_eq!(replaced, [2]);
}

#[test]
fn incremental_reads_rewritten_history_and_huge_files() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let first = commit_files(&repo, &[("a.txt", Some("one\n"))], "one");
    let second = commit_files(&repo, &[("a.txt", Some("one\ntwo\n"))], "two\n\nbody text");
    let git = GitRepo::discover(dir.path()).unwrap();
    let limits = HistoryLimits {
        max_diff_bytes: 1024,
        ..HistoryLimits::default()
    };
    let all = git.read_history(None, &limits, 1);
    assert!(all.from_scratch);
    assert_eq!(all.commits.len(), 2);
    assert_eq!(all.commits[1].subject, "two");
    assert_eq!(all.commits[1].body, "body text");
    assert_eq!(all.head.as_deref(), Some(second.to_string().as_str()));
    let none = git.read_history(Some(&second.to_string()), &limits, 1);
    assert!(none.commits.is_empty() && !none.from_scratch);

    // A huge file is taken as rewritten whole, with its line count, and never diffed.
    let huge = numbered(200, "lock");
    let third = commit_files(&repo, &[("Cargo.lock", Some(&huge))], "deps");
    let new = git.read_history(Some(&second.to_string()), &limits, 1);
    assert_eq!(new.commits.len(), 1);
    assert_eq!(new.commits[0].sha, third.to_string());
    assert_eq!(new.commits[0].files[0].rewritten_lines, Some(200));

    // History rewritten under the index: reset to the first commit and commit again.
    repo.reset(&repo.find_object(first, None).unwrap(), git2::ResetType::Hard, None)
        .unwrap();
    commit_files(&repo, &[("b.txt", Some("b\n"))], "other");
    let again = git.read_history(Some(&third.to_string()), &limits, 1);
    assert!(again.from_scratch);
    assert_eq!(again.commits.len(), 2);
    assert!(again.notes.iter().any(|n| n.contains("rewritten")), "{:?}", again.notes);
}

#[test]
fn a_folder_without_git_has_no_history() {
    let dir = tempfile::tempdir().unwrap();
    assert!(GitRepo::discover(dir.path()).is_none());
}
