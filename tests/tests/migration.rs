//! Migration between local storage and a real `zblade-server`, through the `zblade` binary:
//! killed with SIGKILL at random moments both ways, then resumed; nothing lost, nothing
//! duplicated (manifests of content hashes compared), `storage.mode` flipped only after
//! verification. And a server restarted in the middle of an upload.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zblade_engine::{Project, SearchKind, SearchMode, SearchQuery, StorageMode};
use zblade_sync::{Client, Kind};
use zblade_tests::{GitFixture, KillPoints, ServerProcess, conversation_json, zblade_bin};

/// Conversations in the kill test: enough that a run takes a good part of a second.
const CONVERSATIONS: usize = 600;

const AUTH_TS: &str =
    "export function refresh(token: string) {\n  const next = rotate(token);\n  audit(next);\n  return next;\n}\n";

/// id → sha256 of every artifact file of `kind` under the project.
fn local_manifest(root: &Path, kind: Kind) -> BTreeMap<String, String> {
    let dir = root.join(".zblade/artifacts").join(match kind {
        Kind::Conversation => "conversations",
        Kind::Moment => "moments",
    });
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| {
            let id = e.path().file_stem().unwrap().to_string_lossy().into_owned();
            // A conversation as a server stores it: its manifest resolved, every message inline.
            let bytes = match kind {
                Kind::Conversation => zblade_engine::local_conversation_json(root, &id).unwrap(),
                Kind::Moment => std::fs::read(e.path()).unwrap(),
            };
            (id, zblade_core::sha256_hex(&bytes))
        })
        .collect()
}

fn server_manifest(client: &Client, project: &str, kind: Kind) -> BTreeMap<String, String> {
    let records = client.list_records(project, kind).unwrap();
    let manifest: BTreeMap<String, String> = records.iter().map(|r| (r.id.clone(), r.hash.clone())).collect();
    assert_eq!(manifest.len(), records.len(), "an id listed twice on the server");
    manifest
}

fn mode(root: &Path) -> StorageMode {
    Project::open(root).unwrap().settings().storage.mode
}

fn zblade(root: &Path, config: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(zblade_bin());
    command
        .arg("--project")
        .arg(root)
        .args(args)
        .env("ZBLADE_CONFIG_DIR", config)
        .env_remove("ZBLADE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `args` and SIGKILLs it `kills` times (a run that finishes first ends the loop), calling
/// `check` after each kill; then runs it to the end. The first kill waits until `written()`
/// shows the copy under way, the others come after a random delay. Returns how many kills hit
/// a running migration, and how many of those cut a copy short (`0 < written() < total`).
#[allow(clippy::too_many_arguments)] // a test helper; each argument is one knob of the story
fn kill_and_resume(
    root: &Path,
    config: &Path,
    args: &[&str],
    kills: usize,
    max_delay_ms: u64,
    rng: &mut KillPoints,
    written: &dyn Fn() -> usize,
    total: usize,
    check: &mut dyn FnMut(),
) -> (usize, usize) {
    let (mut hit, mut mid_copy) = (0, 0);
    for kill in 0..kills {
        let mut child = zblade(root, config, args).spawn().unwrap();
        let delay = Duration::from_millis(10 + rng.below(max_delay_ms));
        let started = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            let due = match kill {
                0 => written() > 0 || started.elapsed() > Duration::from_secs(60),
                _ => started.elapsed() >= delay,
            };
            if due {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        match child.try_wait().unwrap() {
            Some(status) => {
                let out = child.wait_with_output().unwrap();
                assert!(
                    status.success(),
                    "migration failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return (hit, mid_copy);
            }
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                hit += 1;
                let n = written();
                if n > 0 && n < total {
                    mid_copy += 1;
                }
                check();
            }
        }
    }
    let out = zblade(root, config, args).output().unwrap();
    assert!(
        out.status.success(),
        "the resumed migration failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (hit, mid_copy)
}

#[test]
fn migration_killed_at_random_points_both_ways_loses_and_duplicates_nothing() {
    let server = ServerProcess::start();
    let fixture = GitFixture::new(&[
        ("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n"),
        ("src/auth.ts", AUTH_TS),
    ]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(root).unwrap();
    let conversations: Vec<_> = (0..CONVERSATIONS)
        .map(|i| {
            let json = conversation_json(&format!("conv_m{i:03}"), &format!("topic{i}"), 6);
            (
                zblade_engine::parse_conversation(json.as_bytes(), "fixture").unwrap(),
                "fixture".to_string(),
            )
        })
        .collect();
    project.add_conversations(conversations).unwrap();
    let moments: Vec<_> = (0..30)
        .map(|i| {
            let json =
                format!(r#"{{"type": "decision", "content": "Decision {i}: keep retries bounded", "tags": ["t{i}"]}}"#);
            (
                zblade_engine::parse_moment(json.as_bytes(), "fixture").unwrap(),
                "fixture".to_string(),
            )
        })
        .collect();
    project.add_moments(moments).unwrap();
    let project_id = project.settings().project.id.clone();
    drop(project);
    let local_conversations = local_manifest(root, Kind::Conversation);
    let local_moments = local_manifest(root, Kind::Moment);
    assert_eq!((local_conversations.len(), local_moments.len()), (CONVERSATIONS, 30));
    let client = Client::new(&server.url, &server.token).unwrap();
    let mut rng = KillPoints::new("migration");

    // A dry run changes nothing and contacts nothing it need not.
    let out = zblade(root, config.path(), &server.migrate_up(&["--dry-run", "--json"]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["plan"]["items"].as_array().unwrap().len(), CONVERSATIONS + 30);
    assert_eq!(mode(root), StorageMode::Local);
    // Without --yes and without a terminal it asks instead of acting.
    let out = zblade(root, config.path(), &server.migrate_up(&[])).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));

    // Up, killed ten times.
    let up = server.migrate_up(&["--yes", "--json"]);
    let uploaded = || server_manifest(&client, &project_id, Kind::Conversation).len();
    let (hit, mid_copy) = kill_and_resume(
        root,
        config.path(),
        &up,
        10,
        300,
        &mut rng,
        &uploaded,
        CONVERSATIONS,
        &mut || {
            // Whatever the moment of the kill: local memory is intact, and server mode only ever
            // comes with everything verified on the server.
            assert_eq!(local_manifest(root, Kind::Conversation), local_conversations);
            if mode(root) == StorageMode::Server {
                assert_eq!(
                    server_manifest(&client, &project_id, Kind::Conversation),
                    local_conversations
                );
            }
        },
    );
    eprintln!("to-server: {hit} of 10 kills hit a running migration, {mid_copy} in the middle of the copy");
    assert!(
        hit >= 3 && mid_copy >= 1,
        "too few kills landed mid-migration ({hit}, {mid_copy} mid-copy); the test would prove little"
    );
    assert_eq!(mode(root), StorageMode::Server);
    assert_eq!(
        server_manifest(&client, &project_id, Kind::Conversation),
        local_conversations
    );
    assert_eq!(server_manifest(&client, &project_id, Kind::Moment), local_moments);
    assert!(!root.join(".zblade/migration/journal.json").exists());

    // A conversation written in server mode, with a code block that is in the working tree.
    let block = format!("Here is the refresh:\n```ts\n{AUTH_TS}```\nKeep it.");
    let server_only = serde_json::json!({
        "version": "1.0", "conversation_id": "conv_srv", "project_id": project_id, "title": "Refresh",
        "messages": [{"id": "msg_1", "role": "assistant", "content": block}]
    })
    .to_string();
    client
        .put_record(&project_id, Kind::Conversation, "conv_srv", server_only.as_bytes())
        .unwrap();

    // Cleanup after the verified switch removes the local copies (the token was saved).
    let out = zblade(
        root,
        config.path(),
        &["migrate", "to-server", "--server", &server.url, "--cleanup", "--yes"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(local_manifest(root, Kind::Conversation).is_empty());

    // Down, killed ten times.
    let down = ["migrate", "to-local", "--yes", "--json"];
    let came_home = || local_manifest(root, Kind::Conversation).len();
    let (hit, mid_copy) = kill_and_resume(
        root,
        config.path(),
        &down,
        10,
        300,
        &mut rng,
        &came_home,
        CONVERSATIONS + 1,
        &mut || {
            assert_eq!(
                server_manifest(&client, &project_id, Kind::Conversation).len(),
                CONVERSATIONS + 1
            );
            if mode(root) == StorageMode::Local {
                assert_eq!(local_manifest(root, Kind::Conversation).len(), CONVERSATIONS + 1);
            }
        },
    );
    eprintln!("to-local: {hit} of 10 kills hit a running migration, {mid_copy} in the middle of the copy");
    assert!(
        hit >= 3 && mid_copy >= 1,
        "too few kills landed mid-migration ({hit}, {mid_copy} mid-copy); the test would prove little"
    );
    assert_eq!(mode(root), StorageMode::Local);
    let home = local_manifest(root, Kind::Conversation);
    assert_eq!(home.len(), CONVERSATIONS + 1, "every conversation exactly once");
    for (id, hash) in &local_conversations {
        assert_eq!(home.get(id), Some(hash), "{id} came back byte for byte");
    }
    assert_eq!(local_manifest(root, Kind::Moment), local_moments);
    // The code block became a reference to src/auth.ts; the code is not duplicated.
    let srv: serde_json::Value =
        serde_json::from_slice(&zblade_engine::local_conversation_json(root, "conv_srv").unwrap()).unwrap();
    let message = &srv["messages"][0];
    assert_eq!(message["code_references"][0]["file"], "src/auth.ts");
    assert_eq!(message["code_references"][0]["lines"], serde_json::json!([1, 5]));
    assert!(
        !message["content"].as_str().unwrap().contains("rotate(token)"),
        "{message}"
    );
    // The index was rebuilt: local search finds what came down.
    let mut project = Project::open(root).unwrap();
    let hits = project
        .search(&SearchQuery::new("topic42", 5, SearchKind::All).in_mode(Some(SearchMode::Keyword)))
        .unwrap();
    assert!(
        hits.hits
            .iter()
            .any(|h| h.hit.conversation_id.as_deref() == Some("conv_m042"))
    );
    drop(project);

    // Another device writes a newer conv_m000 to the server after the verification: the
    // cleanup removes every verified copy on the server but that one, and says so.
    let newer = conversation_json("conv_m000", "written later elsewhere", 2).replace(
        "\"conversation_id\"",
        &format!("\"version\": \"1.0\", \"project_id\": \"{project_id}\", \"conversation_id\""),
    );
    client
        .put_record(&project_id, Kind::Conversation, "conv_m000", newer.as_bytes())
        .unwrap();
    let out = zblade(
        root,
        config.path(),
        &["migrate", "to-local", "--cleanup", "--yes", "--json"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cleanup: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cleanup["kept_changed"], serde_json::json!(["conv_m000"]), "{cleanup}");
    let left = server_manifest(&client, &project_id, Kind::Conversation);
    assert_eq!(
        left.keys().collect::<Vec<_>>(),
        vec!["conv_m000"],
        "only the newer version stays"
    );
    assert!(server_manifest(&client, &project_id, Kind::Moment).is_empty());
}

#[test]
fn an_upload_survives_a_server_restart() {
    let mut server = ServerProcess::start();
    let fixture = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(root).unwrap();
    let conversations: Vec<_> = (0..300)
        .map(|i| {
            let json = conversation_json(&format!("conv_r{i:03}"), &format!("restart{i}"), 8);
            (
                zblade_engine::parse_conversation(json.as_bytes(), "fixture").unwrap(),
                "fixture".to_string(),
            )
        })
        .collect();
    project.add_conversations(conversations).unwrap();
    let project_id = project.settings().project.id.clone();
    drop(project);
    let local = local_manifest(root, Kind::Conversation);
    let mut child = zblade(root, config.path(), &server.migrate_up(&["--yes"]))
        .spawn()
        .unwrap();
    // Kill the server once the upload is under way: some records arrived, not all.
    let client = Client::new(&server.url, &server.token).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let uploaded = loop {
        let n = client
            .list_records(&project_id, Kind::Conversation)
            .map(|r| r.len())
            .unwrap_or(0);
        if n >= 10 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    server.kill();
    let running = child.try_wait().unwrap().is_none();
    assert!(
        running && (10..300).contains(&uploaded),
        "the restart must land during the upload: {uploaded} of 300 uploaded, migration running: {running}"
    );
    std::thread::sleep(Duration::from_millis(600));
    server.restart();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server_manifest(&client, &project_id, Kind::Conversation), local);
    assert_eq!(mode(root), StorageMode::Server);
}

#[test]
fn an_unreachable_server_is_a_clear_error_and_changes_nothing() {
    let fixture = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(root).unwrap();
    project
        .add_conversation(conversation_json("conv_x", "x", 2).as_bytes(), "x")
        .unwrap();
    drop(project);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = zblade(
        root,
        config.path(),
        &["migrate", "to-server", "--server", &url, "--token", "zbt_x", "--yes"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the zblade server"), "{err}");
    assert_eq!(mode(root), StorageMode::Local);
    assert!(
        !root.join(".zblade/migration/journal.json").exists(),
        "no plan without a server"
    );
}

#[test]
fn a_conversation_copied_from_another_project_migrates_both_ways() {
    let server = ServerProcess::start();
    let fixture = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let root = fixture.root();
    let config = tempfile::tempdir().unwrap();
    let (mut project, _) = Project::init(root).unwrap();
    let foreign = r#"{"conversation_id": "conv_copied", "project_id": "proj_someone_else", "title": "Copied",
        "messages": [{"role": "user", "content": "copied from another project"}]}"#;
    project.add_conversation(foreign.as_bytes(), "copied.json").unwrap();
    project
        .add_conversation(conversation_json("conv_own", "own", 2).as_bytes(), "own")
        .unwrap();
    let ours = project.settings().project.id.clone();
    drop(project);
    let migrate = |args: &[&str]| {
        let out = zblade(root, config.path(), args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    migrate(&server.migrate_up(&["--yes"]));
    assert_eq!(mode(root), StorageMode::Server);
    let client = Client::new(&server.url, &server.token).unwrap();
    let on_server: serde_json::Value = serde_json::from_slice(
        &client
            .get_record(&ours, Kind::Conversation, "conv_copied")
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(on_server["project_id"], ours.as_str());
    assert_eq!(on_server["metadata"]["original_project_id"], "proj_someone_else");
    assert_eq!(on_server["messages"][0]["content"], "copied from another project");

    migrate(&["migrate", "to-local", "--yes"]);
    assert_eq!(mode(root), StorageMode::Local);
    let home: serde_json::Value =
        serde_json::from_slice(&zblade_engine::local_conversation_json(root, "conv_copied").unwrap()).unwrap();
    assert_eq!(home["metadata"]["original_project_id"], "proj_someone_else");
    assert_eq!(home["messages"][0]["content"], "copied from another project");
    assert_eq!(local_manifest(root, Kind::Conversation).len(), 2);
}
