//! The permanent archive on a real local Arweave gateway (arlocal, npm: transactions, mined
//! blocks, GraphQL), through the `zblade` binary like a user: set up with a wallet made by
//! arweave-js, push, mine, check every transaction with arweave-js (signature and data
//! root), delete the project, restore it from the vault and passphrase alone (same files,
//! same search results), forget a conversation and prove it no longer decrypts with any key
//! the passphrase opens, and kill -9 a push and a forget half-way: no duplicate transaction,
//! nothing left undeletable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use zblade_archive::backend::arweave_tx::unb64;
use zblade_archive::format::{self, Kind};
use zblade_archive::{ArweaveBackend, Backend, BackendSpec, Retry, Vault};
use zblade_engine::Project;
use zblade_tests::{RecordingProxy, conversation_json, stderr, zblade_bin};

#[path = "../archive/arlocal.rs"]
mod arlocal;

use arlocal::{Arlocal, arweave_js, funded_wallet};

const PASS: &str = "the archive passphrase for tests";

/// The environment every archive command runs in: the passphrase, and a data folder of its
/// own (where an Arweave vault goes by default).
struct User {
    data: tempfile::TempDir,
}

impl User {
    fn zblade(&self, root: &Path, args: &[&str]) -> Output {
        self.spawn(root, args).wait_with_output().unwrap()
    }

    fn spawn(&self, root: &Path, args: &[&str]) -> Child {
        Command::new(zblade_bin())
            .arg("--project")
            .arg(root)
            .args(args)
            .env("ZBLADE_ARCHIVE_PASSPHRASE", PASS)
            .env("XDG_DATA_HOME", self.data.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn ok(&self, root: &Path, args: &[&str]) -> serde_json::Value {
        // `restore --into` makes its folder; `--project` must name one that exists.
        std::fs::create_dir_all(root).unwrap();
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.zblade(root, &all);
        assert!(out.status.success(), "zblade {args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    fn vault(&self) -> PathBuf {
        let root = self.data.path().join("zblade/archive");
        let dir = std::fs::read_dir(&root).unwrap().next().unwrap().unwrap().path();
        dir.join("vault.json")
    }
}

fn project_with(dir: &Path, conversations: usize) {
    let (mut project, _) = Project::init(dir).unwrap();
    zblade_tests::write_referenced_code(dir);
    for i in 0..conversations {
        let json = conversation_json(&format!("conv_arch{i:05}"), &format!("topic{i} ledger"), 4);
        project.add_conversation(json.as_bytes(), "<test>").unwrap();
    }
}

fn manifest(root: &Path) -> BTreeMap<String, String> {
    zblade_archive::truth_files(&root.join(".zblade"))
        .unwrap()
        .into_iter()
        .map(|(p, full)| (p, format::sha256_hex(&std::fs::read(full).unwrap())))
        .collect()
}

/// Restores the archive into `into` (files only, with `extra` arguments) and checks every
/// file is `root`'s, byte for byte, and that nothing was reported missing.
fn restores_as(user: &User, into: &Path, root: &Path, extra: &[&str]) {
    let mut args = vec!["archive", "restore", "--into", into.to_str().unwrap(), "--no-index"];
    args.extend_from_slice(extra);
    let report = user.ok(into, &args);
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    assert_eq!(manifest(into), manifest(root));
}

fn search_ids(user: &User, root: &Path, query: &str) -> Vec<String> {
    let value = user.ok(root, &["search", query, "--limit", "10"]);
    value["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("search answer: {value}"))
        .iter()
        .map(|h| {
            format!(
                "{}/{}",
                h["conversation_id"].as_str().unwrap_or(""),
                h["id"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// Every transaction of the archive as the gateway lists it.
fn listed(gateway: &Arlocal, vault: &Vault) -> Vec<zblade_archive::Listed> {
    let BackendSpec::Arweave { owner, .. } = &vault.backend else {
        panic!("an Arweave vault")
    };
    ArweaveBackend::new(&gateway.url(), owner, None, Retry::default())
        .unwrap()
        .list(&vault.archive)
        .unwrap()
}

/// A project whose archive is set up on a fresh arlocal, with a wallet arweave-js made;
/// zblade reaches the gateway through a recording proxy, which keeps every byte it sends.
struct Fixture {
    gateway: Arlocal,
    proxy: RecordingProxy,
    tmp: tempfile::TempDir,
    user: User,
    wallet: PathBuf,
    address: String,
    root: PathBuf,
    /// What `archive setup --json` said.
    setup: serde_json::Value,
}

fn fixture(conversations: usize) -> Fixture {
    let gateway = Arlocal::start();
    let proxy = RecordingProxy::start(&gateway.url());
    let tmp = tempfile::tempdir().unwrap();
    let user = User {
        data: tempfile::tempdir().unwrap(),
    };
    let (wallet, address) = funded_wallet(&gateway, tmp.path());
    let root = tmp.path().join("project");
    project_with(&root, conversations);
    let setup = user.ok(
        &root,
        &[
            "archive",
            "setup",
            "--arweave",
            &proxy.url,
            "--wallet",
            wallet.to_str().unwrap(),
        ],
    );
    Fixture {
        gateway,
        proxy,
        tmp,
        user,
        wallet,
        address,
        root,
        setup,
    }
}

#[test]
fn archive_to_arlocal_restore_from_nothing_and_forget_for_good() {
    let Fixture {
        gateway,
        proxy,
        tmp,
        user,
        wallet,
        address,
        root,
        setup,
    } = fixture(60);
    user.ok(&root, &["index"]);
    assert!(setup["share_key"].as_str().unwrap().starts_with("zbpk1"));
    let pushed = user.ok(&root, &["archive", "push", "--snapshot"]);
    assert_eq!(pushed["files"], 62 + count_packs(&root), "{pushed}");
    gateway.mine();
    let status = user.ok(&root, &["archive", "status"]);
    assert_eq!(status["pending_files"], 0, "{status}");
    assert_eq!(status["unsent"], 0);
    assert!(status["confirmed"].as_u64().unwrap() >= 3, "{status}");
    assert!(status["stored_cost"].as_str().unwrap().ends_with(" AR"));

    // arweave-js, the reference client, verifies every signature and recomputes every data
    // root from the data; and no tag or data byte carries a title, an id or a path.
    let vault = Vault::load(&user.vault()).unwrap();
    let objects = listed(&gateway, &vault);
    assert!(objects.len() >= 3);
    let ids: Vec<&str> = objects.iter().map(|o| o.locator.as_str()).collect();
    // The data goes to arweave-js as files (its own download wants the chunk API for data
    // over 256 KiB, which arlocal serves only for chunk uploads).
    let data_dir = tmp.path().join("tx-data");
    std::fs::create_dir_all(&data_dir).unwrap();
    for id in &ids {
        std::fs::write(data_dir.join(id), gateway.get(&format!("/{id}"))).unwrap();
    }
    let verdict = arweave_js(
        "const A = require('arweave'); const fs = require('fs'); const { computeRootHash } = require('arweave/node/lib/merkle'); \
         const a = A.init({host: '127.0.0.1', port: process.argv[1], protocol: 'http'}); \
         (async () => { for (const id of process.argv.slice(3)) { \
           const tx = await a.transactions.get(id); const ok = await a.transactions.verify(tx); \
           const data = new Uint8Array(fs.readFileSync(process.argv[2] + '/' + id)); \
           const root = A.utils.bufferTob64Url(await computeRootHash(data)); \
           console.log(id, ok, root === tx.data_root, tx.owner.length > 0 && (await a.wallets.ownerToAddress(tx.owner))); } })()",
        &[
            &[gateway.port.to_string().as_str(), data_dir.to_str().unwrap()],
            ids.as_slice(),
        ]
        .concat(),
    );
    for line in verdict.lines() {
        assert!(line.ends_with(&format!("true true {address}")), "arweave-js: {line}");
    }
    assert_eq!(verdict.lines().count(), ids.len());
    for object in &objects {
        let data = gateway.get(&format!("/{}", object.locator));
        // Tags travel base64url-encoded: decoded, they must hold nothing readable either.
        let tags: serde_json::Value =
            serde_json::from_slice(&gateway.get(&format!("/tx/{}/tags", object.locator))).unwrap();
        let tags_text: String = tags
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| [&t["name"], &t["value"]])
            .map(|v| String::from_utf8(unb64(v.as_str().unwrap(), "tag").unwrap()).unwrap() + "\n")
            .collect();
        assert!(tags_text.contains("Zb-Archive"), "{tags_text}");
        for needle in [&b"ledger"[..], b"conv_arch", b"artifacts", b"About topic"] {
            assert!(
                !data.windows(needle.len()).any(|w| w == needle),
                "plaintext in {}",
                object.locator
            );
            assert!(!tags_text.contains(std::str::from_utf8(needle).unwrap()), "{tags_text}");
        }
    }

    // The folder goes; a restore from the vault and the passphrase brings it all back.
    let before = manifest(&root);
    let found_before = search_ids(&user, &root, "topic7 ledger retries");
    std::fs::remove_dir_all(&root).unwrap();
    let restored = tmp.path().join("restored");
    let report = user.ok(
        &restored,
        &[
            "archive",
            "restore",
            "--into",
            restored.to_str().unwrap(),
            "--wallet",
            wallet.to_str().unwrap(),
        ],
    );
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    assert_eq!(manifest(&restored), before, "every artifact byte for byte");
    assert_eq!(search_ids(&user, &restored, "topic7 ledger retries"), found_before);

    // From the snapshot: the same files, and the vectors came with it (nothing embedded again).
    let from_snapshot = tmp.path().join("from-snapshot");
    let report = user.ok(
        &from_snapshot,
        &[
            "archive",
            "restore",
            "--into",
            from_snapshot.to_str().unwrap(),
            "--snapshot",
        ],
    );
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    assert!(report["snapshot"].is_u64(), "{report}");
    assert_eq!(report["index"]["vectors"]["embedded"], 0, "{report}");
    assert_eq!(manifest(&from_snapshot), before);
    assert_eq!(search_ids(&user, &from_snapshot, "topic7 ledger retries"), found_before);

    // Wrong passphrase: a clear error, nothing written.
    let elsewhere = tmp.path().join("elsewhere");
    let out = Command::new(zblade_bin())
        .args(["archive", "restore", "--into", elsewhere.to_str().unwrap()])
        .env("ZBLADE_ARCHIVE_PASSPHRASE", "not the passphrase at all")
        .env("XDG_DATA_HOME", user.data.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("wrong passphrase"), "{}", stderr(&out));
    assert!(!elsewhere.join(".zblade").exists());

    // Forget one conversation: gone here, and no key the passphrase opens decrypts it.
    let victim = "conv_arch00007";
    let victim_text = b"topic7 ledger";
    let forgot = user.ok(&restored, &["archive", "forget", victim, "-y"]);
    assert!(forgot["destroyed_batches"].as_u64().unwrap() >= 2, "{forgot}");
    gateway.mine();
    assert!(!user.zblade(&restored, &["show", victim]).status.success());
    assert_no_key_opens(&gateway, &user.vault(), victim_text);
    let again = tmp.path().join("again");
    let report = user.ok(&again, &["archive", "restore", "--into", again.to_str().unwrap()]);
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    assert!(report["forgotten"].as_u64().unwrap() >= 1);
    assert_eq!(manifest(&again), manifest(&restored));
    assert!(
        !search_ids(&user, &again, "topic7 ledger retries")
            .iter()
            .any(|h| h.starts_with(victim))
    );

    // The privacy line: of every byte zblade sent the gateway (setup, pushes, status, the
    // restores, the forget), none is message text, a title, an id or a path.
    let sent = proxy.sent();
    assert!(
        proxy.requests().iter().any(|r| r.starts_with("POST /tx ")),
        "{:?}",
        proxy.requests()
    );
    let home = tmp.path().to_string_lossy().to_string();
    for needle in [
        "ledger",
        "Turn 1 about",
        "About topic",
        "conv_arch",
        "artifacts/",
        ".zblade",
        "project",
        &home,
    ] {
        assert!(!sent.contains(needle), "{needle:?} was sent to the gateway");
    }
}

fn count_packs(root: &Path) -> usize {
    std::fs::read_dir(root.join(".zblade/artifacts/messages/packs")).map_or(0, |d| d.count())
}

/// Tries every object the gateway lists with every key the vault (opened with the
/// passphrase) holds: none may yield `needle`.
fn assert_no_key_opens(gateway: &Arlocal, vault_path: &Path, needle: &[u8]) {
    let vault = Vault::load(vault_path).unwrap();
    let BackendSpec::Arweave { owner, .. } = &vault.backend else {
        panic!("an Arweave vault")
    };
    let backend = ArweaveBackend::new(&gateway.url(), owner, None, Retry::default()).unwrap();
    assert!(
        !some_key_opens(&backend, vault_path, needle),
        "an archived object still decrypts to the forgotten text"
    );
}

/// Whether any object of the archive, opened with any key the vault holds, holds `needle`.
fn some_key_opens(backend: &dyn Backend, vault_path: &Path, needle: &[u8]) -> bool {
    let vault = Vault::load(vault_path).unwrap();
    let master = vault.unlock(PASS).unwrap();
    let keys: Vec<_> = vault
        .keys
        .keys()
        .map(|k| vault.key(&master, k).unwrap().unwrap())
        .collect();
    backend.list(&vault.archive).unwrap().iter().any(|object| {
        let sealed = backend.fetch(&object.locator).unwrap();
        keys.iter().any(|key| {
            format::open(key, &object.envelope, &sealed)
                .is_some_and(|plain| plain.windows(needle.len()).any(|w| w == needle))
        })
    })
}

/// Waits until the journal shows `ready`, then kill -9s the command; says whether it was
/// still running.
fn kill_when(mut child: Child, journal: &Path, ready: &dyn Fn(&journal_counts::Counts) -> bool) -> bool {
    let started = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if let Some(counts) = journal_counts::counts(journal)
            && ready(&counts)
        {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the command never got there"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The journal's counts, read through the archive crate's own journal type.
mod journal_counts {
    use std::path::Path;

    pub struct Counts {
        pub submitted: u64,
        pub forgets: usize,
    }

    pub fn counts(journal: &Path) -> Option<Counts> {
        if !journal.exists() {
            return None;
        }
        let journal = zblade_archive::journal::Journal::open(journal).ok()?;
        let parts = journal.part_counts().ok()?;
        Some(Counts {
            submitted: parts.iter().filter(|p| p.0 != "prepared").map(|p| p.1).sum(),
            forgets: journal.unfinished_forgets().ok()?.len(),
        })
    }
}

#[test]
fn kill_9_during_push_and_forget_resumes_without_duplicates_or_undeletable_items() {
    let Fixture {
        gateway,
        tmp,
        user,
        root,
        ..
    } = fixture(1500);
    let journal = root.join(".zblade/archive/journal.db");

    // kill -9 once a few objects are out.
    let push = user.spawn(&root, &["archive", "push"]);
    assert!(
        kill_when(push, &journal, &|c| c.submitted >= 3),
        "the push finished before it could be killed"
    );
    let resumed = user.ok(&root, &["archive", "push"]);
    assert!(resumed["batches"].as_u64().unwrap() > 0, "{resumed}");
    gateway.mine();

    let vault = Vault::load(&user.vault()).unwrap();
    let objects = listed(&gateway, &vault);
    let mut seen = std::collections::HashSet::new();
    for object in &objects {
        assert!(
            seen.insert(object.envelope.object.clone()),
            "object {} sent twice",
            object.envelope.object
        );
    }
    let parts = zblade_archive::journal::Journal::open(&journal)
        .unwrap()
        .part_counts()
        .unwrap();
    let journaled: u64 = parts.iter().map(|p| p.1).sum();
    assert_eq!(objects.len() as u64, journaled, "one transaction per journaled object");
    assert!(objects.iter().all(|o| o.envelope.kind == Kind::Batch));

    // kill -9 a forget once it is recorded; the next push finishes it.
    let victim = "conv_arch00010";
    let forget = user.spawn(&root, &["archive", "forget", victim, "-y"]);
    let killed = kill_when(forget, &journal, &|c| c.forgets > 0);
    let status = user.ok(&root, &["archive", "status", "--offline"]);
    if killed {
        assert!(status["unfinished_forgets"].as_u64().unwrap() <= 1);
    }
    user.ok(&root, &["archive", "push"]);
    let status = user.ok(&root, &["archive", "status", "--offline"]);
    assert_eq!(status["unfinished_forgets"], 0, "{status}");
    assert_no_key_opens(&gateway, &user.vault(), b"topic10 ledger");
    restores_as(&user, &tmp.path().join("restored"), &root, &[]);
}

/// `archive setup --keyring` keeps the master key in a real Secret Service (GNOME Keyring on
/// a private bus): pushes then need no passphrase; `remember --off` takes it away again, and
/// without the keyring the command asks (here: fails plainly, as no passphrase comes).
#[test]
fn the_keyring_remembers_the_master_key_so_pushes_need_no_passphrase() {
    let keyring = zblade_tests::SecretService::start();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("project");
    project_with(&root, 3);
    let backend = tmp.path().join("backup");
    let zblade = |args: &[&str], passphrase: Option<&str>| {
        let mut command = Command::new(zblade_bin());
        command
            .arg("--project")
            .arg(&root)
            .arg("--json")
            .args(args)
            .envs(keyring.env())
            .env_remove("ZBLADE_ARCHIVE_PASSPHRASE")
            .stdin(Stdio::null());
        if let Some(p) = passphrase {
            command.env("ZBLADE_ARCHIVE_PASSPHRASE", p);
        }
        command.output().unwrap()
    };
    let out = zblade(
        &["archive", "setup", "--dir", backend.to_str().unwrap(), "--keyring"],
        Some(PASS),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not kept"), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["remembered"], true, "{status}");

    // No passphrase anywhere: the keyring's key opens the archive.
    let out = zblade(&["archive", "push"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let pushed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pushed["files"], 5 + count_packs(&root), "{pushed}");

    // The key is in the keyring, not in any file of the project or the archive.
    let master = Vault::load(&backend.join("vault.json")).unwrap().unlock(PASS).unwrap();
    let needle = hex_of(master.bytes());
    for dir in [root.join(".zblade"), backend.clone()] {
        for file in zblade_tests::files_under(&dir) {
            let text = std::fs::read(&file).unwrap();
            assert!(
                !text.windows(needle.len()).any(|w| w == needle.as_bytes())
                    && !text.windows(32).any(|w| w == master.bytes()),
                "the master key is in {}",
                file.display()
            );
        }
    }

    // Taken away: the next push has no key and no passphrase, and says so.
    let out = zblade(&["archive", "remember", "--off"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = zblade(&["archive", "push"], None);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no passphrase"), "{}", stderr(&out));

    // Remembered again with the passphrase (a wrong one keeps nothing), with background push.
    let out = zblade(
        &["archive", "remember", "--background"],
        Some("not the passphrase at all"),
    );
    assert!(stderr(&out).contains("wrong passphrase"), "{}", stderr(&out));
    let out = zblade(&["archive", "remember", "--background"], Some(PASS));
    assert!(out.status.success(), "{}", stderr(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (status["remembered"].clone(), status["auto_push"].clone()),
        (true.into(), true.into())
    );
    assert!(zblade(&["archive", "push"], None).status.success());
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A gateway in front of arlocal whose transaction anchors expire. A real Arweave node refuses
/// a transaction whose anchor block is over 50 blocks old ("Invalid anchor (last_tx).");
/// arlocal never does, so this proxy does for the anchors it is told are old (or for every
/// transaction while `refuse_all`). Everything else goes to arlocal untouched.
struct ExpiringGateway {
    url: String,
    /// Anchors arlocal handed out so far.
    handed_out: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Anchors refused as too old.
    stale: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    refuse_all: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Ids of the transactions refused.
    refused: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ExpiringGateway {
    fn start(target: u16) -> ExpiringGateway {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gateway = ExpiringGateway {
            url: format!("http://{}", listener.local_addr().unwrap()),
            handed_out: Default::default(),
            stale: Default::default(),
            refuse_all: Default::default(),
            refused: Default::default(),
        };
        let (handed_out, stale, refuse_all, refused) = (
            gateway.handed_out.clone(),
            gateway.stale.clone(),
            gateway.refuse_all.clone(),
            gateway.refused.clone(),
        );
        std::thread::spawn(move || {
            for mut client in listener.incoming().flatten() {
                // One request per connection (answers say "Connection: close").
                let mut request = Vec::new();
                let mut buf = [0u8; 65536];
                let head_end = loop {
                    let n = client.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        break None;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(i + 4);
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&request[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while request.len() < head_end + length {
                    let n = client.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let body = &request[head_end..];
                if head.starts_with("POST /tx ") {
                    let tx: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
                    let anchor = tx["last_tx"].as_str().unwrap_or("").to_string();
                    if refuse_all.load(std::sync::atomic::Ordering::SeqCst) || stale.lock().unwrap().contains(&anchor) {
                        refused
                            .lock()
                            .unwrap()
                            .push(tx["id"].as_str().unwrap_or("").to_string());
                        let answer = "Invalid anchor (last_tx).";
                        let _ = write!(
                            client,
                            "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                            answer.len()
                        );
                        continue;
                    }
                }
                // Forward with "Connection: close" and relay the whole answer.
                let mut upstream = std::net::TcpStream::connect(("127.0.0.1", target)).unwrap();
                let forwarded: String = head
                    .trim_end()
                    .lines()
                    .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
                    .map(|l| format!("{l}\r\n"))
                    .collect();
                upstream
                    .write_all(format!("{forwarded}Connection: close\r\n\r\n").as_bytes())
                    .unwrap();
                upstream.write_all(body).unwrap();
                let mut answer = Vec::new();
                let _ = upstream.read_to_end(&mut answer);
                if head.starts_with("GET /tx_anchor ")
                    && let Some(i) = answer.windows(4).position(|w| w == b"\r\n\r\n")
                {
                    handed_out
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&answer[i + 4..]).trim().to_string());
                }
                let _ = client.write_all(&answer);
            }
        });
        gateway
    }
}

/// A push interrupted long enough for its journaled transactions' anchors to expire (a laptop
/// closed for hours) is not stuck: the resume signs them again under a fresh anchor, and every
/// object is stored once.
#[test]
fn a_resumed_push_whose_anchors_expired_signs_again_and_stores_each_object_once() {
    let gateway = Arlocal::start();
    let expiring = ExpiringGateway::start(gateway.port);
    let tmp = tempfile::tempdir().unwrap();
    let user = User {
        data: tempfile::tempdir().unwrap(),
    };
    let (wallet, _) = funded_wallet(&gateway, tmp.path());
    let root = tmp.path().join("project");
    project_with(&root, 30);
    user.ok(
        &root,
        &[
            "archive",
            "setup",
            "--arweave",
            &expiring.url,
            "--wallet",
            wallet.to_str().unwrap(),
        ],
    );

    // The first push journals its transaction, and the gateway refuses it: it stops plainly.
    expiring.refuse_all.store(true, std::sync::atomic::Ordering::SeqCst);
    let out = user.zblade(&root, &["archive", "push"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("too old"), "{}", stderr(&out));
    let journal = root.join(".zblade/archive/journal.db");
    let stuck = zblade_archive::journal::Journal::open(&journal)
        .unwrap()
        .pending_parts()
        .unwrap();
    assert_eq!(stuck.len(), 1, "one transaction journaled and unsent");

    // Hours later: the chain moved on and its anchor is too old for any gateway.
    gateway.mine();
    expiring
        .stale
        .lock()
        .unwrap()
        .extend(expiring.handed_out.lock().unwrap().iter().cloned());
    expiring.refuse_all.store(false, std::sync::atomic::Ordering::SeqCst);
    let pushed = user.ok(&root, &["archive", "push"]);
    assert_eq!(pushed["resumed"], 1, "{pushed}");
    gateway.mine();

    // The old transaction was refused (twice) and never stored; its object went under a new
    // id, which arlocal took (arlocal checks signatures); each object is stored once.
    let old = &stuck[0].locator;
    assert_eq!(
        expiring.refused.lock().unwrap().iter().filter(|id| *id == old).count(),
        2
    );
    assert!(gateway.try_get(&format!("/tx/{old}/status")).is_none());
    let vault = Vault::load(&user.vault()).unwrap();
    let objects = listed(&gateway, &vault);
    let mut seen = std::collections::HashSet::new();
    assert!(
        objects.iter().all(|o| seen.insert(o.envelope.object.clone())),
        "an object stored twice"
    );
    assert!(objects.iter().any(|o| o.envelope.object == stuck[0].object));
    let parts: u64 = zblade_archive::journal::Journal::open(&journal)
        .unwrap()
        .part_counts()
        .unwrap()
        .iter()
        .map(|p| p.1)
        .sum();
    assert_eq!(objects.len() as u64, parts);

    // And it all restores.
    restores_as(&user, &tmp.path().join("restored"), &root, &[]);
}

/// A moment of its own is forgotten like a conversation: gone here, its batch's key destroyed
/// (the rest re-archived), so no key the passphrase opens reads it, and a restore lacks it.
/// A moment recorded inside a conversation is refused with a pointer to its conversation.
#[test]
fn a_moment_is_forgotten_for_good_too() {
    let tmp = tempfile::tempdir().unwrap();
    let user = User {
        data: tempfile::tempdir().unwrap(),
    };
    let root = tmp.path().join("project");
    project_with(&root, 3);
    let secret = "The staging database password rotates on Fridays";
    std::fs::write(
        tmp.path().join("m1.json"),
        serde_json::json!({"type": "decision", "content": secret, "tags": ["ops"]}).to_string(),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("m2.json"),
        serde_json::json!({"type": "pattern", "content": "Retries are bounded at five", "tags": ["ops"]}).to_string(),
    )
    .unwrap();
    let added = user.ok(
        &root,
        &[
            "add",
            "moment",
            tmp.path().join("m1.json").to_str().unwrap(),
            tmp.path().join("m2.json").to_str().unwrap(),
        ],
    );
    let (victim, kept) = (added[0]["id"].as_str().unwrap(), added[1]["id"].as_str().unwrap());
    let backend_dir = tmp.path().join("backup");
    user.ok(&root, &["archive", "setup", "--dir", backend_dir.to_str().unwrap()]);
    user.ok(&root, &["archive", "push"]);
    let backend = zblade_archive::DirBackend::new(&backend_dir).unwrap();
    let vault = backend_dir.join("vault.json");
    assert!(
        some_key_opens(&backend, &vault, secret.as_bytes()),
        "archived before the forget"
    );

    let forgot = user.ok(&root, &["archive", "forget", victim, "-y"]);
    assert!(forgot["destroyed_batches"].as_u64().unwrap() >= 1, "{forgot}");
    assert!(!user.zblade(&root, &["show", victim]).status.success());
    assert!(user.zblade(&root, &["show", kept]).status.success());
    assert!(
        !some_key_opens(&backend, &vault, secret.as_bytes()),
        "the forgotten moment still decrypts"
    );
    assert!(
        some_key_opens(&backend, &vault, b"Retries are bounded at five"),
        "the other moment was re-archived"
    );

    let restored = tmp.path().join("restored");
    restores_as(&user, &restored, &root, &["--from", backend_dir.to_str().unwrap()]);
    assert!(
        !restored
            .join(format!(".zblade/artifacts/moments/{victim}.json"))
            .exists()
    );

    // A moment recorded inside a conversation goes with it: the forget says so.
    std::fs::write(
        tmp.path().join("c.json"),
        serde_json::json!({"conversation_id": "conv_with_moment", "title": "Inline", "messages": [{"role": "user", "content": "hi"}],
            "moments": [{"id": "moment_inline_one", "type": "decision", "content": "Kept with its conversation"}]})
        .to_string(),
    )
    .unwrap();
    user.ok(
        &root,
        &["add", "conversation", tmp.path().join("c.json").to_str().unwrap()],
    );
    let out = user.zblade(&root, &["archive", "forget", "moment_inline_one", "-y"]);
    assert!(stderr(&out).contains("forget that conversation"), "{}", stderr(&out));
    assert!(user.zblade(&root, &["show", "moment_inline_one"]).status.success());

    // Hostile or wrong ids are refused before anything changes.
    let before = manifest(&root);
    for bad in ["moment_../../etc", "../conv_x", "conv_../x", "msg_01"] {
        let out = user.zblade(&root, &["archive", "forget", bad, "-y"]);
        assert!(!out.status.success(), "{bad}");
    }
    assert_eq!(manifest(&root), before);
}
