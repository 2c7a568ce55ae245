//! A sync server that lies, driven through the `zblade` binary: `migrate to-local` and the
//! reads of server mode (`list`, `show`, `search`, `context`) must end every lie in a clear
//! error, write nothing outside `.zblade/`, and lose nothing that was on disk before.
//!
//! The liar is scripted (a few lines of HTTP/1.1 over std's TCP): a real `zblade-server` cannot
//! be made to send path-like ids, mismatched hashes or endless listings, which is the point.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use zblade_engine::Project;
use zblade_tests::{GitFixture, zblade_bin};

/// The ways the server lies.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lie {
    /// Honest: one valid conversation, listed and served correctly (the control case).
    None,
    /// A listed id that climbs out of the artifacts folder to the project's package.json.
    PathId,
    /// An absolute path as an id.
    AbsoluteId,
    /// An id that walks to `.zblade/config/settings.json`.
    SettingsId,
    /// The listing's hash is not the hash of the bytes served (the header agrees with them).
    ListedHashMismatch,
    /// The hash header does not match the bytes served.
    HeaderHashMismatch,
    /// The URL asks for conv_A; the record served is conv_B (with consistent hashes).
    OtherRecord,
    /// Every page says there is a next page, starting where the last one did.
    EndlessPagination,
    /// A record announced as 200 MB.
    HugeAnnounced,
    /// A listing streamed without a length, past the 16 MiB page cap.
    HugeStreamed,
    /// A record that is not an artifact at all.
    NotAnArtifact,
    /// Terminal escape sequences in titles and snippets.
    EscapeSequences,
    /// A teammate's record holding credentials, unredacted.
    Secrets,
}

/// What [`Lie::Secrets`] serves in a message; none of it may be shown.
const SERVED_SECRETS: [&str; 2] = ["AKIAIOSFODNN7EXAMPLE", "hunter2-zanzibar"];

const GOOD_ID: &str = "conv_01JB0000000000000000000000";

fn artifact(id: &str, title: &str) -> Vec<u8> {
    serde_json::json!({
        "version": "1.0",
        "conversation_id": id,
        "project_id": "proj_x",
        "title": title,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "messages": [{"id": "msg_1", "role": "user", "content": "hostile hello", "timestamp": "2026-01-01T00:00:00Z"}],
    })
    .to_string()
    .into_bytes()
}

fn sha(bytes: &[u8]) -> String {
    zblade_core::sha256_hex(bytes)
}

/// A scripted server on a loopback port.
struct LyingServer {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl LyingServer {
    fn start(lie: Lie) -> LyingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, lie, &seen);
                });
            }
        });
        LyingServer { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, lie: Lie, seen: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let request = line.trim().to_string();
    // Headers, then a body if one is announced.
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim().is_empty() {
            break;
        }
        if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    seen.lock().unwrap().push(request.clone());
    let mut parts = request.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let mut out = stream;
    let respond = |out: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]| {
        let mut head = format!(
            "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        out.write_all(body)
    };
    let json = |v: serde_json::Value| v.to_string().into_bytes();
    let segments: Vec<&str> = path.trim_start_matches("/api/v0/").split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["me"]) => respond(&mut out, "200 OK", &[], &json(serde_json::json!({"user": "mallory"}))),
        ("GET", ["projects", _, "moments"]) => respond(
            &mut out,
            "200 OK",
            &[],
            &json(serde_json::json!({"items": [], "next": null})),
        ),
        ("GET", ["projects", _, "conversations"]) => {
            if lie == Lie::HugeStreamed {
                // No length: the client must stop reading at its cap.
                out.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{\"items\": [")?;
                let filler = format!(
                    "{{\"kind\":\"conversation\",\"id\":\"{GOOD_ID}\",\"version\":1,\"hash\":\"{}\",\"size\":1,\"title\":\"{}\",\"tags\":[],\"updated_at\":\"x\"}},",
                    "a".repeat(64),
                    "x".repeat(4000)
                );
                for _ in 0..5_000 {
                    out.write_all(filler.as_bytes())?;
                }
                return Ok(());
            }
            let listed = listing(lie);
            respond(&mut out, "200 OK", &[], &json(listed))
        }
        ("GET", ["projects", _, "conversations", id]) => {
            let (bytes, header) = record(lie, id);
            if lie == Lie::HugeAnnounced {
                out.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 200000000\r\n\r\n")?;
                return out.write_all(&bytes);
            }
            respond(&mut out, "200 OK", &[("x-zblade-sha256", header)], &bytes)
        }
        // Team answers (members, invitations, a refusal) with escape sequences in every name,
        // a project id that climbs out of its folder, and a 404 reason far past any cap.
        ("GET", ["projects", _, "members"]) => respond(
            &mut out,
            "200 OK",
            &[],
            &json(
                serde_json::json!({"members": [{"user": "\u{1b}]0;owned\u{7}eve\u{202e}", "role": "writer",
                "invited_by": "\u{1b}[2Jmallory", "invited_at": "2026-01-01T00:00:00Z", "accepted_at": null}]}),
            ),
        ),
        // A project whose embedding model id would be a path once it is a setting and a folder.
        ("GET", ["projects", id]) => {
            let model = if lie == Lie::PathId {
                "../../../etc"
            } else {
                "all-minilm-l6-v2-int8"
            };
            respond(
                &mut out,
                "200 OK",
                &[],
                &json(
                    serde_json::json!({"id": id, "name": "\u{1b}[2Jteam", "owner": "mallory", "role": "reader",
                    "created_at": "2026-01-01T00:00:00Z", "conversations": 0, "moments": 0, "metadata": 0,
                    "embedding": {"id": model, "dims": 384}}),
                ),
            )
        }
        ("GET", ["invitations"]) => {
            let project = if lie == Lie::PathId { "../../../etc" } else { "proj_x" };
            respond(
                &mut out,
                "200 OK",
                &[],
                &json(
                    serde_json::json!({"invitations": [{"project": project, "name": "\u{1b}[2Jteam",
                    "owner": "\u{1b}]0;x\u{7}mallory", "role": "owner", "invited_by": "mallory",
                    "invited_at": "2026-01-01T00:00:00Z"}]}),
                ),
            )
        }
        ("PUT", ["projects", _, "members", _]) => respond(
            &mut out,
            "404 Not Found",
            &[],
            &json(serde_json::json!({"error": "not_found", "reason": format!("\u{1b}[2J{}", "x".repeat(100_000))})),
        ),
        ("GET", ["projects", _, "search"]) => {
            let title = if lie == Lie::EscapeSequences {
                "\u{1b}]0;owned\u{7}\u{1b}[2J evil"
            } else {
                "ok"
            };
            let id = hostile_id(lie).unwrap_or(GOOD_ID);
            respond(
                &mut out,
                "200 OK",
                &[],
                &json(
                    serde_json::json!({"hits": [{"kind": "conversation", "id": id, "title": title, "score": 1.0, "snippet": format!("[hostile] {title}"), "updated_at": "2026-01-01T00:00:00Z"}]}),
                ),
            )
        }
        // Passage search: the same lies, and an escape sequence in a message's text.
        ("POST", ["projects", _, "search"]) => {
            let title = if lie == Lie::EscapeSequences {
                "\u{1b}]0;owned\u{7}\u{1b}[2J evil"
            } else {
                "ok"
            };
            let id = hostile_id(lie).unwrap_or(GOOD_ID);
            respond(
                &mut out,
                "200 OK",
                &[],
                &json(serde_json::json!({"mode": "keyword", "hits": [{
                    "kind": "conversation", "record": id, "message": "msg_1", "title": title,
                    "label": format!("user{title}"), "text": format!("hostile {title}"), "time": "2026-01-01T00:00:00Z",
                    "author": title, "score": 1.0
                }]})),
            )
        }
        // A client that trusted a path-like id asks for a URL its HTTP library normalized
        // (`…/conversations/../../../package` becomes `/api/v0/package`): a hostile server
        // answers that too, with the record it listed.
        ("GET", _) if hostile_id(lie).is_some() => {
            let (bytes, header) = record(lie, hostile_id(lie).unwrap_or(GOOD_ID));
            respond(&mut out, "200 OK", &[("x-zblade-sha256", header)], &bytes)
        }
        ("PUT", _) => respond(
            &mut out,
            "200 OK",
            &[],
            &json(serde_json::json!({"status": "created", "version": 1, "hash": sha(&body)})),
        ),
        _ => respond(
            &mut out,
            "404 Not Found",
            &[],
            &json(serde_json::json!({"error": "not_found", "reason": "no"})),
        ),
    }
}

/// The id a lie lists, when it lists a bad one.
fn hostile_id(lie: Lie) -> Option<&'static str> {
    match lie {
        Lie::PathId => Some("../../../package"),
        Lie::AbsoluteId => Some("/tmp/zblade-hostile-absolute"),
        Lie::SettingsId => Some("conv_x/../../../config/settings"),
        _ => None,
    }
}

fn listing(lie: Lie) -> serde_json::Value {
    let id = hostile_id(lie).unwrap_or(GOOD_ID);
    let (bytes, _) = record(lie, id);
    let listed_hash = if lie == Lie::ListedHashMismatch {
        sha(b"something else")
    } else {
        sha(&bytes)
    };
    let title = if lie == Lie::EscapeSequences {
        "\u{1b}[31mred\u{1b}[0m\u{202e}txt.exe"
    } else {
        "Listed"
    };
    let item = serde_json::json!({
        "kind": "conversation", "id": id, "version": 1, "hash": listed_hash,
        "size": bytes.len(), "title": title, "tags": [], "updated_at": "2026-01-01T00:00:00Z",
    });
    let next = if lie == Lie::EndlessPagination {
        // Whatever `after` was asked, the page is the same and promises more.
        serde_json::json!(id)
    } else {
        serde_json::Value::Null
    };
    serde_json::json!({"items": [item], "next": next})
}

/// The bytes served for `id` and the hash header sent with them.
fn record(lie: Lie, id: &str) -> (Vec<u8>, String) {
    let bytes = match lie {
        Lie::OtherRecord => artifact("conv_01JB9999999999999999999999", "Another"),
        Lie::NotAnArtifact => b"{\"title\": 42, \"messages\": \"no\"}".to_vec(),
        Lie::Secrets => {
            let mut artifact: serde_json::Value = serde_json::from_slice(&artifact(GOOD_ID, "Listed")).unwrap();
            artifact["messages"][0]["content"] = format!(
                "deploy with {} and run API_TOKEN={} npm publish",
                SERVED_SECRETS[0], SERVED_SECRETS[1]
            )
            .into();
            artifact.to_string().into_bytes()
        }
        // A lying server serves a valid-looking artifact whose id is the path it listed.
        _ if hostile_id(lie).is_some() => artifact(id, "Hostile"),
        _ => artifact(GOOD_ID, "Listed"),
    };
    let header = if lie == Lie::HeaderHashMismatch {
        sha(b"not these bytes")
    } else {
        sha(&bytes)
    };
    (bytes, header)
}

/// Every file under `root` with its content, `.zblade/index`, `.zblade/cache` and the
/// migration journal aside (they may change; they are not the user's data).
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel.starts_with(".git/")
                || rel == ".git"
                || rel.starts_with(".zblade/index")
                || rel.starts_with(".zblade/cache")
                || rel.starts_with(".zblade/migration")
            {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A server-mode project pointing at `url`, with local files a lie would like to overwrite.
fn project(url: &str) -> GitFixture {
    let fixture = GitFixture::new(&[
        ("package.json", "{\"name\": \"victim\"}\n"),
        ("src/lib.rs", "fn a() {}\n"),
    ]);
    let root = fixture.root();
    Project::init(root).unwrap();
    std::fs::write(root.join(".zblade/artifacts/moments/keep-me.txt"), "local note").unwrap();
    let path = root.join(".zblade/config/settings.json");
    let mut settings: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    settings["storage"]["mode"] = "server".into();
    settings["storage"]["server_url"] = url.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&settings).unwrap()).unwrap();
    fixture
}

fn zblade(root: &Path, args: &[&str]) -> Output {
    let config = root.join(".zblade/cache/test-config");
    Command::new(zblade_bin())
        .arg("--project")
        .arg(root)
        .args(args)
        .env("ZBLADE_CONFIG_DIR", config)
        .env("ZBLADE_TOKEN", "zbt_test")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `migrate to-local` against `lie`; checks that it failed with a message containing
/// `expected`, that no file outside `.zblade/` appeared or changed, that nothing that was
/// there before is lost, and that the project is still in server mode.
fn migration_refuses(lie: Lie, expected: &str) {
    let server = LyingServer::start(lie);
    let fixture = project(&server.url);
    let root = fixture.root();
    let before = snapshot(root);
    let out = zblade(root, &["migrate", "to-local", "--yes"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{lie:?}: {said}");
    assert!(said.contains(expected), "{lie:?}: expected {expected:?} in: {said}");
    assert!(
        !said.contains('\u{1b}'),
        "{lie:?}: an escape sequence reached the terminal: {said:?}"
    );
    let after = snapshot(root);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{lie:?}: {path} was changed or lost");
    }
    for path in after.keys() {
        assert!(
            before.contains_key(path) || path.starts_with(".zblade/artifacts/"),
            "{lie:?}: {path} was written"
        );
        assert!(
            !path.contains("package") || before.contains_key(path),
            "{lie:?}: {path}"
        );
    }
    assert!(!Path::new("/tmp/zblade-hostile-absolute.json").exists());
    let settings = std::fs::read_to_string(root.join(".zblade/config/settings.json")).unwrap();
    assert!(
        settings.contains("\"server\""),
        "{lie:?}: storage.mode changed: {settings}"
    );
    assert!(!server.requests().is_empty());
}

#[test]
fn migrate_to_local_refuses_every_lie_and_writes_nothing_outside_zblade() {
    migration_refuses(Lie::PathId, "ids may hold only");
    migration_refuses(Lie::AbsoluteId, "ids may hold only");
    migration_refuses(Lie::SettingsId, "ids may hold only");
    migration_refuses(Lie::ListedHashMismatch, "the server listed");
    migration_refuses(Lie::HeaderHashMismatch, "the server says");
    migration_refuses(Lie::OtherRecord, "instead");
    migration_refuses(Lie::EndlessPagination, "ids must increase");
    migration_refuses(Lie::HugeAnnounced, "at most");
    migration_refuses(Lie::HugeStreamed, "more than");
    migration_refuses(Lie::NotAnArtifact, "title");
}

#[test]
fn an_honest_server_still_migrates_home() {
    let server = LyingServer::start(Lie::None);
    let fixture = project(&server.url);
    let root = fixture.root();
    let out = zblade(root, &["migrate", "to-local", "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        root.join(format!(".zblade/artifacts/conversations/{GOOD_ID}.json"))
            .exists()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("package.json")).unwrap(),
        "{\"name\": \"victim\"}\n"
    );
}

#[test]
fn server_mode_reads_refuse_lies_and_never_print_escape_sequences() {
    for lie in [
        Lie::PathId,
        Lie::SettingsId,
        Lie::ListedHashMismatch,
        Lie::OtherRecord,
        Lie::EndlessPagination,
        Lie::HugeAnnounced,
    ] {
        let server = LyingServer::start(lie);
        let fixture = project(&server.url);
        let root = fixture.root();
        let before = snapshot(root);
        for args in [
            &["list", "conversations"][..],
            &["show", GOOD_ID],
            &["search", "hostile"],
            &["context", "hostile", "--budget", "500"],
        ] {
            let out = zblade(root, args);
            let said = text(&out);
            assert!(!said.contains('\u{1b}'), "{lie:?} {args:?}: {said:?}");
            // A read either fails cleanly (exit 1, a reason) or shows only what passed the checks.
            match out.status.code() {
                Some(0) => {
                    for bad in ["../", "/tmp/zblade-hostile", "config/settings"] {
                        assert!(!said.contains(bad), "{lie:?} {args:?} showed {bad}: {said}");
                    }
                }
                Some(1) => assert!(
                    said.contains("refused") || said.contains("error"),
                    "{lie:?} {args:?}: {said}"
                ),
                other => panic!("{lie:?} {args:?}: exit {other:?}: {said}"),
            }
        }
        assert_eq!(snapshot(root), before, "{lie:?}: a read changed files");
    }
}

/// A server (or a teammate's client) that sends credentials: they are redacted before they are
/// shown or packed into a prompt.
#[test]
fn secrets_in_a_servers_answer_are_redacted_before_they_are_shown() {
    let server = LyingServer::start(Lie::Secrets);
    let fixture = project(&server.url);
    let root = fixture.root();
    for args in [
        &["show", GOOD_ID][..],
        &["context", "deploy npm publish", "--budget", "500"],
    ] {
        let out = zblade(root, args);
        let said = text(&out);
        assert!(out.status.success(), "{args:?}: {said}");
        for secret in SERVED_SECRETS {
            assert!(!said.contains(secret), "{args:?} showed {secret}: {said}");
        }
    }
    let shown = text(&zblade(root, &["show", GOOD_ID]));
    assert!(shown.contains("[REDACTED:"), "{shown}");
}

#[test]
fn titles_and_snippets_from_a_server_lose_their_escape_sequences() {
    let server = LyingServer::start(Lie::EscapeSequences);
    let fixture = project(&server.url);
    let root = fixture.root();
    for args in [&["list", "conversations"][..], &["search", "hostile"]] {
        let out = zblade(root, args);
        let said = text(&out);
        assert!(out.status.success(), "{args:?}: {said}");
        assert!(
            !said.contains('\u{1b}') && !said.contains('\u{202e}') && !said.contains('\u{7}'),
            "{args:?}: {said:?}"
        );
    }
}

#[test]
fn plain_http_to_another_machine_needs_an_explicit_flag() {
    let fixture = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let root = fixture.root();
    Project::init(root).unwrap();
    // 192.0.2.0/24 is TEST-NET-1: nothing answers there, and the refusal comes before any try.
    let out = zblade(
        root,
        &["migrate", "to-server", "--server", "http://192.0.2.7:7400", "--yes"],
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("plain http") && said.contains("--allow-insecure-http"),
        "{said}"
    );
    let out = zblade(
        root,
        &["migrate", "to-server", "--server", "ftp://example.com", "--yes"],
    );
    assert!(text(&out).contains("is not a server URL"), "{}", text(&out));
}

#[test]
fn team_answers_lose_their_escape_sequences_and_bad_ids_are_refused() {
    let server = LyingServer::start(Lie::EscapeSequences);
    let fixture = project(&server.url);
    let root = fixture.root();
    let clean = |said: &str| !said.contains('\u{1b}') && !said.contains('\u{202e}') && !said.contains('\u{7}');
    let out = zblade(root, &["team", "members"]);
    let said = text(&out);
    assert!(out.status.success() && said.contains("eve") && clean(&said), "{said:?}");
    let out = zblade(root, &["team", "invitations"]);
    let said = text(&out);
    assert!(
        out.status.success() && said.contains("mallory") && clean(&said),
        "{said:?}"
    );
    // A refusal's reason is read up to the cap and cleaned: no escape, no 100 kB message.
    let out = zblade(root, &["team", "invite", "bob"]);
    let said = text(&out);
    assert!(
        !out.status.success() && clean(&said) && said.len() < 2_000,
        "{} bytes: {:?}",
        said.len(),
        &said[..said.len().min(300)]
    );

    // A project's model is read cleaned; one whose id is a path is refused before it can
    // become this folder's setting.
    let honest = zblade_sync::Client::new(&server.url, "t")
        .unwrap()
        .project("proj_x")
        .unwrap()
        .unwrap();
    assert_eq!(honest.embedding.unwrap().id, "all-minilm-l6-v2-int8");
    assert!(clean(&honest.name), "{:?}", honest.name);
    let liar = LyingServer::start(Lie::PathId);
    let refused = zblade_sync::Client::new(&liar.url, "t").unwrap().project("proj_x");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("embedding model id")),
        "{refused:?}"
    );

    // An invitation to a project id that is a path is refused before anything is written.
    let folder = GitFixture::new(&[("src/lib.rs", zblade_tests::REFERENCED_CODE)]);
    let out = zblade(folder.root(), &["team", "invitations", "--server", &liar.url]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains("project whose id"), "{said}");
    let out = zblade(folder.root(), &["team", "join", &liar.url, "proj_x"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        !folder.root().join(".zblade/config/settings.json").exists() || {
            let settings = std::fs::read_to_string(folder.root().join(".zblade/config/settings.json")).unwrap();
            !settings.contains("\"server\"")
        }
    );
}
