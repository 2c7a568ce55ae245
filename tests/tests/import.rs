//! Importing coding agents' sessions: the `zblade import` CLI against a fake home folder
//! holding each agent's store (files written from the agents' formats), a real git history
//! for anchoring, and the bad inputs the import issue lists.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zblade_engine::{
    AgentPlaces, ImportRequest, ImportSource, Project, SearchKind, SearchMode, SearchQuery, WatchEvent, WatchOptions,
};
use zblade_tests::{GitFixture, install_session, json, stderr, zblade_bin};

const CLAUDE: &str = "claude/0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10.jsonl";
const CODEX: &str = "codex/rollout-2025-10-01T09-15-00-01999a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b.jsonl";
const CONV: &str = "conv_cc-0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10";

const AUTH_BEFORE: &str = "use sha2::Sha256;\n\npub fn hash_password(password: &str) -> String {\n    let digest = Sha256::digest(password.as_bytes());\n    hex::encode(digest)\n}\n";
const AUTH_AFTER: &str = "use sha2::Sha256;\n\npub fn hash_password(password: &str) -> String {\n    let salt = SaltString::generate(&mut OsRng);\n    Argon2::default().hash_password(password.as_bytes(), &salt).unwrap().to_string()\n}\n";

/// A project with a git history around the recorded sessions (2025-09-03 and 2025-10-01):
/// auth.rs as the agent read it, the agent's edit committed the next day, and later three
/// lines added at the top (so today the edited lines are shifted).
struct World {
    repo: GitFixture,
    home: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let repo = GitFixture {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("src/auth.rs", AUTH_BEFORE);
        repo.write(
            "src/login.rs",
            "pub fn login(ip: IpAddr) -> Result<()> {\n    verify()\n}\n",
        );
        repo.write(
            "src/cache.py",
            "class Cache:\n    def get(self, key):\n        return self.data.get(key)\n",
        );
        repo.write(
            "src/client.rs",
            "pub fn get(url: &str) -> Response {\n    send(url)\n}\n",
        );
        repo.write(
            "src/main.rs",
            "fn main() {\n    let url = \"postgres://localhost/app\";\n    connect(url);\n}\n",
        );
        repo.write(".env", "API_KEY=abc\n");
        repo.commit_at("initial", "2025-09-01T10:00:00Z");
        repo.write("src/auth.rs", AUTH_AFTER);
        repo.commit_at("argon2id", "2025-09-04T10:00:00Z");
        repo.write(
            "src/auth.rs",
            &format!("// Password hashing.\n// See docs/SECURITY.md.\n\n{AUTH_AFTER}"),
        );
        // Cline's edit of main.rs and Aider's of cache.py, as they are in the tree today.
        repo.write(
            "src/main.rs",
            "fn main() {\n    let url = config::database_url();\n    connect(url);\n}\n",
        );
        repo.write(
            "src/cache.py",
            "import time\n\nclass Cache:\n    def get(self, key):\n        value, stored = self.data.get(key, (None, 0))\n        if time.time() - stored > self.ttl:\n            return None\n        return value\n",
        );
        repo.commit_at("docs", "2025-11-01T10:00:00Z");
        Project::init(repo.root()).unwrap();
        World {
            repo,
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.repo.root().canonicalize().unwrap()
    }

    fn claude_file(&self) -> PathBuf {
        self.home
            .path()
            .join(".claude/projects/-proj")
            .join(Path::new(CLAUDE).file_name().unwrap())
    }

    fn install_claude(&self) -> PathBuf {
        install_session(CLAUDE, &self.claude_file(), &self.root())
    }

    /// Installs the Codex rollout where Codex keeps it, as a session run in `cwd`.
    fn install_codex(&self, cwd: &Path) -> PathBuf {
        let file = Path::new(CODEX).file_name().unwrap();
        let at = self.home.path().join(".codex/sessions/2025/10/01").join(file);
        install_session(CODEX, &at, cwd)
    }

    fn zblade(&self, args: &[&str]) -> std::process::Output {
        Command::new(zblade_bin())
            .args(args)
            .arg("--project")
            .arg(self.repo.root())
            .env("HOME", self.home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("CONTINUE_GLOBAL_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .envs_removed(&[
                "GEMINI_CLI_HOME",
                "QWEN_HOME",
                "CURSOR_CONFIG_DIR",
                "COPILOT_HOME",
                "KIMI_CODE_HOME",
                "PI_CODING_AGENT_DIR",
                "OPENCLAW_STATE_DIR",
                "GROK_HOME",
                "XDG_DATA_HOME",
            ])
            .output()
            .unwrap()
    }

    fn places(&self) -> AgentPlaces {
        AgentPlaces::at_home(self.home.path())
    }

    fn project(&self) -> Project {
        let mut project = Project::open(self.repo.root()).unwrap();
        project.use_agent_places(self.places());
        project
    }
}

#[test]
fn claude_code_history_becomes_searchable_memory_with_honest_references() {
    let world = World::new();
    world.install_claude();
    // Another project's session in the same store is left alone.
    install_session(
        CODEX,
        &world.home.path().join(".claude/projects/-other/x.jsonl"),
        Path::new("/elsewhere"),
    );

    let out = world.zblade(&["import", "claude-code", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["messages"], 5, "{report:#}");
    assert_eq!(report["conversations"][0]["id"], CONV);
    assert_eq!(
        report["conversations"][0]["title"],
        "Switch password hashing to argon2id"
    );
    assert_eq!(report["redacted"], 1);
    assert_eq!(report["other_projects"], 1);
    assert!(report["references"].as_u64().unwrap() >= 3, "{report:#}");

    // The decision is found, and the artifact keeps tool calls structured.
    let out = world.zblade(&["search", "argon2id brute-force", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(json(&out).to_string().contains(CONV));
    let artifact: serde_json::Value =
        serde_json::from_slice(&zblade_engine::local_conversation_json(world.repo.root(), CONV).unwrap()).unwrap();
    let read = &artifact["messages"][1];
    assert_eq!(read["tool_calls"][0]["name"], "Read");
    assert!(read["tool_calls"][0]["result"]["size"].as_u64().unwrap() > 0);
    assert_eq!(artifact["metadata"]["source"]["tool"], "claude-code");
    assert!(
        !artifact.to_string().contains("AKIAIOSFODNN7EXAMPLE"),
        "the key was redacted"
    );

    // References are anchored against the code as it was then, so today's check is honest:
    // the read (of the sha256 version, since rewritten) is modified or missing; the edited
    // lines, committed the next day, have moved down by the three added lines.
    let out = world.zblade(&["refs", "check", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let checked = json(&out);
    let refs = checked.as_array().expect("a list of references").clone();
    let edit = refs
        .iter()
        .find(|r| r["context"] == "edited by the agent")
        .unwrap_or_else(|| panic!("no edit reference in {checked:#}"));
    assert_eq!(edit["status"], "shifted", "{edit:#}");
    assert_eq!(edit["captured"]["lines"], serde_json::json!([4, 5]));
    assert_eq!(edit["live"]["lines"], serde_json::json!([7, 8]));
    let read = refs.iter().find(|r| r["context"] == "read by the agent").unwrap();
    assert_ne!(read["status"], "ok", "the sha256 code it read is gone: {read:#}");

    // Listing by source; moments were extracted from the new conversation.
    let out = world.zblade(&["list", "conversations", "--source", "claude-code", "--json"]);
    assert_eq!(json(&out).as_array().unwrap().len(), 1);
    let out = world.zblade(&["list", "conversations", "--source", "codex", "--json"]);
    assert_eq!(json(&out).as_array().unwrap().len(), 0);
    assert!(report["moments"].as_u64().unwrap() > 0, "{report:#}");
    let out = world.zblade(&["list", "moments", "--json"]);
    assert_eq!(
        json(&out).as_array().unwrap().len() as u64,
        report["moments"].as_u64().unwrap()
    );
    // Extracted beside the store from the conversation as written: extracting again finds
    // its cache entry current and rewrites nothing.
    let out = world.zblade(&["moments", "extract", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let extracted = json(&out);
    assert_eq!(
        (
            extracted["unchanged"].as_u64(),
            extracted["written"].as_array().map(Vec::len)
        ),
        (Some(1), Some(0)),
        "{extracted:#}"
    );

    // Importing again reads nothing and changes nothing.
    let out = world.zblade(&["import", "claude-code", "--json"]);
    let again = json(&out);
    assert_eq!(
        (again["files_read"].as_u64(), again["messages"].as_u64()),
        (Some(0), Some(0))
    );

    // New turns appended by the agent are imported, and only they.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(world.claude_file())
        .unwrap();
    use std::io::Write;
    writeln!(
        file,
        r#"{{"type":"user","uuid":"u9","sessionId":"0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10","cwd":"{}","timestamp":"2025-09-03T01:10:00.000Z","message":{{"role":"user","content":"Also rotate the pepper every quarter."}}}}"#,
        world.root().display()
    )
    .unwrap();
    let out = world.zblade(&["import", "claude-code", "--json"]);
    let more = json(&out);
    assert_eq!(more["messages"], 1, "{more:#}");
    assert_eq!(more["conversations"][0]["created"], false);
    let shown = json(&world.zblade(&["show", CONV, "--json"]));
    assert_eq!(
        shown["conversation"]["messages"].as_array().unwrap().len(),
        6,
        "{shown:#}"
    );
}

#[test]
fn every_source_imports_with_references_into_the_project() {
    let world = World::new();
    let root = world.root();
    let home = world.home.path();
    world.install_codex(&root);
    install_session(
        "aider/.aider.chat.history.md",
        &root.join(".aider.chat.history.md"),
        &root,
    );
    install_session(
        "continue/sessions.json",
        &home.join(".continue/sessions/sessions.json"),
        &root,
    );
    install_session(
        "continue/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab.json",
        &home.join(".continue/sessions/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab.json"),
        &root,
    );
    install_session(
        "cline/1733000000000/api_conversation_history.json",
        &home.join(
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1733000000000/api_conversation_history.json",
        ),
        &root,
    );
    let out = world.zblade(&["import", "--detect", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let detected = json(&out);
    for source in ["codex", "aider", "continue", "cline"] {
        let row = detected["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["source"] == source)
            .unwrap();
        assert!(row["in_project"].as_u64().unwrap() >= 1, "{source}: {row:#}");
    }
    for (source, conversations, min_refs) in [("codex", 1, 2), ("aider", 2, 1), ("continue", 1, 1), ("cline", 1, 2)] {
        let out = world.zblade(&["import", source, "--json"]);
        assert!(out.status.success(), "{source}: {}", stderr(&out));
        let report = json(&out);
        assert_eq!(
            report["conversations"].as_array().unwrap().len(),
            conversations,
            "{source}: {report:#}"
        );
        assert!(
            report["references"].as_u64().unwrap() >= min_refs,
            "{source}: {report:#}"
        );
        assert!(
            report["warnings"].as_array().unwrap().is_empty(),
            "{source}: {report:#}"
        );
    }
    let out = world.zblade(&["search", "token bucket", "--json"]);
    assert!(
        json(&out).to_string().contains("conv_codex-01999a2b"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Removes each of `names` from a command's environment.
trait EnvsRemoved {
    fn envs_removed(&mut self, names: &[&str]) -> &mut Self;
}

impl EnvsRemoved for Command {
    fn envs_removed(&mut self, names: &[&str]) -> &mut Self {
        for name in names {
            self.env_remove(name);
        }
        self
    }
}

#[test]
fn import_all_brings_in_every_agent_with_sessions_here_and_again_adds_nothing() {
    let world = World::new();
    let root = world.root();
    let home = world.home.path();
    world.install_codex(&root);
    // Published captures of two newer agents, recorded in this project.
    let agents = zblade_tests::source_dir().join("../crates/zblade-import/tests/fixtures/agents");
    let chats = home.join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::copy(
        agents.join("gemini/jsonl_v040.jsonl"),
        chats.join("session-2026-04-29T21-39-aaaa.jsonl"),
    )
    .unwrap();
    std::fs::write(home.join(".gemini/tmp/proj/.project_root"), root.display().to_string()).unwrap();
    let events =
        std::fs::read_to_string(agents.join("copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl"))
            .unwrap()
            .replace("/tmp/project", &root.display().to_string());
    let copilot = home.join(".copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee");
    std::fs::create_dir_all(&copilot).unwrap();
    std::fs::write(copilot.join("events.jsonl"), events).unwrap();

    let out = world.zblade(&["import", "--all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = json(&out);
    let imports = first["imports"].as_array().unwrap();
    let sources: Vec<&str> = imports.iter().map(|r| r["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["codex", "gemini-cli", "copilot"], "{first:#}");
    assert!(imports.iter().all(|r| r["messages"].as_u64().unwrap() > 0), "{first:#}");
    let again = json(&world.zblade(&["import", "--all", "--json"]));
    assert!(
        again["imports"].as_array().unwrap().iter().all(|r| r["messages"] == 0),
        "a second import added messages: {again:#}"
    );
    let out = world.zblade(&["search", "directory contains file1", "--json"]);
    assert!(
        json(&out).to_string().contains("conv_copilot-aaaabbbb"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn bad_files_are_named_and_the_rest_imported_with_exit_codes() {
    let world = World::new();
    let root = world.root();
    // A malformed line in the middle and a hostile read of a file outside the project.
    let path = world.install_claude();
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(3, "{\"type\": \"assistant\", \"message\": {".into());
    lines.push(format!(
        r#"{{"type":"assistant","uuid":"h1","sessionId":"0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10","cwd":"{}","timestamp":"2025-09-03T02:00:00.000Z","message":{{"id":"msg_h","role":"assistant","content":[{{"type":"tool_use","id":"toolu_h","name":"Edit","input":{{"file_path":"{}/../../etc/passwd","new_string":"root:x:0:0"}}}},{{"type":"tool_use","id":"toolu_s","name":"Write","input":{{"file_path":"{}/.env","content":"API_KEY=abc"}}}}]}}}}"#,
        root.display(),
        root.display(),
        root.display()
    ));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = world.zblade(&["import", "claude-code", "--json"]);
    assert!(out.status.success(), "warnings are not failures: {}", stderr(&out));
    let report = json(&out);
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{report:#}");
    assert!(
        warnings[0].as_str().unwrap().contains(".jsonl:4: not valid JSON"),
        "{report:#}"
    );
    assert_eq!(report["messages"], 6);
    assert_eq!(report["touches_outside"], 2, "{report:#}");

    // A store file that is not a session at all: named, exit 1, nothing lost.
    let broken = world.home.path().join("broken.json");
    std::fs::write(&broken, "{\"sessionId\": \"x\", \"history\": [").unwrap();
    let out = world.zblade(&["import", "continue", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("broken.json"), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing could be imported"), "{}", stderr(&out));
}

#[test]
fn a_session_whose_folder_is_gone_still_belongs_to_the_project() {
    let world = World::new();
    let gone = world.root().join("worktrees/feature-x");
    world.install_codex(&gone);
    let mut project = world.project();
    let report = project
        .import(&ImportRequest::new(ImportSource::CODEX), &mut |_, _, _| {})
        .unwrap();
    assert_eq!(report.conversations.len(), 1, "{report:?}");
}

#[test]
fn two_importers_at_once_neither_duplicate_nor_lose_a_turn() {
    let world = World::new();
    world.install_claude();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mut project = world.project();
            std::thread::spawn(move || {
                project
                    .import(&ImportRequest::new(ImportSource::CLAUDE_CODE), &mut |_, _, _| {})
                    .unwrap()
                    .messages
            })
        })
        .collect();
    let imported: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(imported, 5, "one importer read the file, the other found nothing new");
    let project = world.project();
    let shown = project.show(CONV).unwrap();
    let json = serde_json::to_value(&shown).unwrap();
    assert_eq!(json["conversation"]["messages"].as_array().unwrap().len(), 5);
}

#[test]
fn watch_imports_a_followed_agents_new_turns_within_two_seconds() {
    let world = World::new();
    let path = world.install_claude();
    let mut project = world.project();
    project.set_source_enabled(ImportSource::CLAUDE_CODE, true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let flag = stop.clone();
    let watcher = std::thread::spawn(move || {
        project
            .watch(WatchOptions::default(), &flag, |event| {
                let _ = tx.send(event);
            })
            .unwrap();
    });
    // The first poll imports what was there already.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match rx.recv_timeout(Duration::from_secs(20)).unwrap() {
            WatchEvent::Imported { messages: 5, .. } => break,
            _ => assert!(Instant::now() < deadline, "the existing session was not imported"),
        }
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    use std::io::Write;
    writeln!(
        file,
        r#"{{"type":"user","uuid":"live1","sessionId":"0b5c1d2e-7f40-4c1a-9d51-3a7e2c9b8f10","cwd":"{}","timestamp":"2025-09-03T03:00:00.000Z","message":{{"role":"user","content":"Remember the quokka rollout plan."}}}}"#,
        world.root().display()
    )
    .unwrap();
    drop(file);
    let written = Instant::now();
    loop {
        let event = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("an import event within 5 s");
        if let WatchEvent::Imported { messages: 1, .. } = event {
            break;
        }
    }
    let elapsed = written.elapsed();
    let mut project = world.project();
    let hits = project
        .search(&SearchQuery::new("quokka", 5, SearchKind::Messages).in_mode(Some(SearchMode::Keyword)))
        .unwrap();
    assert_eq!(hits.hits.len(), 1);
    assert!(elapsed < Duration::from_secs(2), "append → searchable took {elapsed:?}");
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
}

/// A project written before the conversation graph (every artifact in format 1, messages
/// inline) is converted in place by `zblade index`: every message's text and every reference
/// read the same before and after, every file becomes a manifest, and fsck is clean.
#[test]
fn a_project_from_before_the_graph_converts_in_place_losing_nothing() {
    let world = World::new();
    let root = world.root();
    world.install_claude();
    world.install_codex(&root);
    for source in ["claude-code", "codex"] {
        let out = world.zblade(&["import", source, "--json"]);
        assert!(out.status.success(), "{source}: {}", stderr(&out));
    }
    // Make it an old project: each conversation back in format 1, no message store.
    let dir = root.join(".zblade/artifacts/conversations");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let id = path.file_stem().unwrap().to_string_lossy().into_owned();
        let inline = zblade_engine::local_conversation_json(&root, &id).unwrap();
        std::fs::write(&path, inline).unwrap();
        ids.push(id);
    }
    ids.sort();
    assert!(ids.len() >= 2);
    std::fs::remove_dir_all(root.join(".zblade/artifacts/messages")).unwrap();
    assert!(world.zblade(&["reindex"]).status.success());
    let shown = |id: &str| {
        let out = world.zblade(&["show", id, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)
    };
    let before: Vec<serde_json::Value> = ids.iter().map(|id| shown(id)).collect();
    let stats = json(&world.zblade(&["stats", "--json"]));
    assert_eq!(stats["inline_conversations"].as_u64().unwrap() as usize, ids.len());

    let out = world.zblade(&["index", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["converted"].as_u64().unwrap() as usize, ids.len());
    for (id, before) in ids.iter().zip(&before) {
        let text = std::fs::read_to_string(dir.join(format!("{id}.json"))).unwrap();
        assert!(text.contains("\"version\": \"2.0\""), "{id} is a manifest now");
        assert_eq!(&shown(id), before, "{id}: messages and references read the same");
    }
    let stats = json(&world.zblade(&["stats", "--json"]));
    assert_eq!(stats["inline_conversations"], 0);
    assert!(stats["stored_messages"].as_u64().unwrap() > 0);
    assert!(world.zblade(&["fsck"]).status.success());
}

#[test]
fn doctor_shows_each_agents_sessions_imports_and_wiring_and_what_fixes_the_rest() {
    let world = World::new();
    let root = world.root();
    world.install_codex(&root);
    let agent = |report: &serde_json::Value, name: &str| -> serde_json::Value {
        report["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == name)
            .unwrap_or_else(|| panic!("{name} missing from {report:#}"))
            .clone()
    };

    let out = world.zblade(&["doctor", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = json(&out);
    let codex = agent(&before, "codex");
    assert_eq!(
        (codex["sessions"].as_u64(), codex["imported"].as_u64()),
        (Some(1), Some(0)),
        "{codex:#}"
    );
    assert_eq!(codex["mcp"]["wired"], false);
    assert!(
        codex["mcp"]["why_not"]
            .as_str()
            .unwrap()
            .contains("zblade mcp install codex")
    );
    let claude = agent(&before, "claude-code");
    assert!(
        claude["hooks"]["why_not"]
            .as_str()
            .unwrap()
            .contains("zblade hooks install claude-code")
    );
    // Every agent of the registry has a row, those reached over MCP only too.
    assert!(before["agents"].as_array().unwrap().len() >= 18);
    let text = String::from_utf8_lossy(&world.zblade(&["doctor"]).stdout).to_string();
    assert!(
        text.contains("1 session(s) of this project, 0 imported: zblade import codex"),
        "{text}"
    );

    assert!(world.zblade(&["import", "codex"]).status.success());
    assert!(
        world
            .zblade(&["mcp", "install", "codex", "--scope", "project"])
            .status
            .success()
    );
    assert!(world.zblade(&["hooks", "install", "claude-code"]).status.success());
    let after = json(&world.zblade(&["doctor", "--json"]));
    let codex = agent(&after, "codex");
    assert_eq!(codex["imported"].as_u64(), Some(1), "{codex:#}");
    assert_eq!(codex["mcp"]["wired"], true, "{codex:#}");
    assert!(
        codex["mcp"]["files"][0]
            .as_str()
            .unwrap()
            .ends_with(".codex/config.toml")
    );
    let claude = agent(&after, "claude-code");
    assert_eq!(claude["hooks"]["wired"], true, "{claude:#}");
    assert!(claude["hooks"].get("why_not").is_none());
}
