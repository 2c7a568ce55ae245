//! The archive end to end on a directory backend: push, restore byte for byte, wrong
//! passphrase, damaged and missing objects, forget (and that the forgotten batch no longer
//! opens even with the passphrase), share and accept, and what leaves the machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use zblade_archive::format::{self, Envelope, Kind};
use zblade_archive::{
    Archive, BackendSpec, Config, DirBackend, PushOptions, RestoreOptions, Retry, SharedItem, Vault, restore,
    truth_files,
};

const PASS: &str = "correct horse battery staple";

fn project(root: &Path, conversations: usize) -> PathBuf {
    let z = root.join(".zblade");
    std::fs::create_dir_all(z.join("artifacts/conversations")).unwrap();
    std::fs::create_dir_all(z.join("config")).unwrap();
    std::fs::write(z.join("instructions.md"), "# Secret project instructions\n").unwrap();
    std::fs::write(z.join("config/settings.json"), "{\"version\": 1}\n").unwrap();
    for i in 0..conversations {
        write_conv(&z, i, &format!("Title {i}: the JWT rotation plan"));
    }
    z
}

fn write_conv(z: &Path, i: usize, title: &str) {
    std::fs::write(
        z.join(format!("artifacts/conversations/conv_{i:04}.json")),
        format!("{{\"conversation_id\": \"conv_{i:04}\", \"title\": \"{title}\"}}"),
    )
    .unwrap();
}

fn manifest(z: &Path) -> BTreeMap<String, String> {
    truth_files(z)
        .unwrap()
        .into_iter()
        .map(|(p, full)| (p, format::sha256_hex(&std::fs::read(full).unwrap())))
        .collect()
}

fn quiet() -> impl FnMut(&str, usize, usize) {
    |_, _, _| {}
}

fn setup(z: &Path, backend: &Path) -> Archive {
    Archive::setup(
        z,
        BackendSpec::Dir { path: backend.into() },
        None,
        None,
        PASS,
        Retry::default(),
    )
    .unwrap()
}

fn restore_into(backend: &Path, into: &Path, passphrase: &str) -> zblade_core::Result<zblade_archive::RestoreReport> {
    restore(
        &RestoreOptions {
            vault: backend.join("vault.json"),
            into: into.into(),
            passphrase: passphrase.into(),
            gateway: None,
            wallet: None,
            use_snapshot: false,
            retry: Retry::default(),
        },
        &mut quiet(),
    )
}

fn all_bytes_under(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in walkdir(dir) {
        out.extend(std::fs::read(&entry).unwrap());
        out.extend(entry.to_string_lossy().as_bytes());
    }
    out
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.extend(walkdir(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

#[test]
fn push_then_restore_reproduces_every_file_and_pushes_are_incremental() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 120);
    let backend = tmp.path().join("backup");
    let mut archive = setup(&z, &backend);
    let first = archive.push(&PushOptions::default(), &mut quiet()).unwrap();
    assert_eq!(first.files, 122);
    assert_eq!(first.batches, 3, "50 items per batch");
    let again = archive.push(&PushOptions::default(), &mut quiet()).unwrap();
    assert_eq!((again.batches, again.files), (0, 0), "nothing changed");
    write_conv(&z, 7, "renamed");
    std::fs::remove_file(z.join("artifacts/conversations/conv_0008.json")).unwrap();
    let third = archive.push(&PushOptions::default(), &mut quiet()).unwrap();
    assert_eq!((third.files, third.deleted, third.batches), (1, 1, 1));

    // Nothing readable left the machine: no title, no path, no instruction text.
    let outside = all_bytes_under(&backend);
    for needle in ["JWT rotation", "conv_0001", "Secret project", "conversations"] {
        assert!(
            !outside.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{needle:?} is readable in the backend"
        );
    }

    let into = tmp.path().join("restored");
    let report = restore_into(&backend, &into, PASS).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(manifest(&into.join(".zblade")), manifest(&z), "byte for byte");
    // The restored project pushes on incrementally.
    let mut restored = Archive::open(&into.join(".zblade"), PASS, Retry::default()).unwrap();
    let next = restored.push(&PushOptions::default(), &mut quiet()).unwrap();
    assert_eq!(next.files, 0, "{next:?}");
}

#[test]
fn a_wrong_passphrase_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 3);
    let backend = tmp.path().join("backup");
    setup(&z, &backend).push(&PushOptions::default(), &mut quiet()).unwrap();
    let into = tmp.path().join("restored");
    std::fs::create_dir_all(&into).unwrap();
    let error = restore_into(&backend, &into, "not the passphrase")
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("wrong passphrase"), "{error}");
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 0, "nothing written");
    assert!(Archive::open(&z, "not the passphrase either", Retry::default()).is_err());
}

#[test]
fn a_damaged_or_missing_batch_is_named_and_the_rest_restores() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 120);
    let backend = tmp.path().join("backup");
    setup(&z, &backend).push(&PushOptions::default(), &mut quiet()).unwrap();
    let mut objects: Vec<PathBuf> = walkdir(&backend.join("objects"));
    objects.sort();
    assert_eq!(objects.len(), 3);
    // Flip a byte in the first, remove the second.
    let mut bytes = std::fs::read(&objects[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&objects[0], bytes).unwrap();
    std::fs::remove_file(&objects[1]).unwrap();

    let into = tmp.path().join("restored");
    let report = restore_into(&backend, &into, PASS).unwrap();
    assert_eq!(report.batches, 1);
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.seq == 1 && p.message.contains("does not decrypt"))
    );
    assert!(report.problems.iter().any(|p| p.message.contains("not on directory")));
    let restored = manifest(&into.join(".zblade"));
    let original = manifest(&z);
    assert!(!restored.is_empty());
    for (path, sha) in &restored {
        assert_eq!(original.get(path), Some(sha), "{path} restored as it was");
    }
}

#[test]
fn a_forgotten_file_cannot_be_decrypted_afterwards_even_with_the_passphrase() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 60);
    let backend = tmp.path().join("backup");
    let mut archive = setup(&z, &backend);
    archive.push(&PushOptions { snapshot: true }, &mut quiet()).unwrap();
    let victim = "artifacts/conversations/conv_0003.json";
    let victim_bytes = std::fs::read(z.join(victim)).unwrap();
    let before: Vec<PathBuf> = walkdir(&backend.join("objects"));

    // Refused while the file is still there.
    assert!(archive.forget(&[victim.to_string()], &mut quiet()).is_err());
    std::fs::remove_file(z.join(victim)).unwrap();
    let report = archive.forget(&[victim.to_string()], &mut quiet()).unwrap();
    assert_eq!(report.destroyed_batches, 2, "the batch holding it and the snapshot");
    assert!(report.rearchived >= 49, "{report:?}");

    // Try every object that existed before with every key the vault still has, and with
    // the master key from the passphrase: none yields the forgotten bytes.
    let vault = Vault::load(&backend.join("vault.json")).unwrap();
    let master = vault.unlock(PASS).unwrap();
    for path in &before {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let parts: Vec<&str> = name.trim_end_matches(".zba").split('.').collect();
        let envelope = Envelope {
            archive: vault.archive.clone(),
            object: parts[2].to_string(),
            kind: Kind::parse(parts[1]).unwrap(),
            seq: parts[0].parse().unwrap(),
        };
        let sealed = std::fs::read(path).unwrap();
        for object in vault.keys.keys() {
            let key = vault.key(&master, object).unwrap().unwrap();
            if let Some(plain) = format::open(&key, &envelope, &sealed) {
                assert!(
                    !plain.windows(victim_bytes.len()).any(|w| w == victim_bytes.as_slice()),
                    "the forgotten conversation still decrypts from {name}"
                );
            }
        }
    }
    // A restore has everything else, and says one batch and one snapshot were forgotten.
    let into = tmp.path().join("restored");
    let restored = restore_into(&backend, &into, PASS).unwrap();
    assert!(restored.problems.is_empty(), "{:?}", restored.problems);
    assert_eq!(restored.forgotten, 1);
    assert_eq!(manifest(&into.join(".zblade")), manifest(&z));
}

#[test]
fn shared_items_reach_their_recipient_only() {
    let tmp = tempfile::tempdir().unwrap();
    let backend = tmp.path().join("backup");
    let alice_z = project(&tmp.path().join("alice"), 2);
    let mut alice = setup(&alice_z, &backend);
    let bob_z = project(&tmp.path().join("bob"), 0);
    let mut bob = setup(&bob_z, &tmp.path().join("bob-backup"));
    let carol_z = project(&tmp.path().join("carol"), 0);
    let mut carol = setup(&carol_z, &tmp.path().join("carol-backup"));
    let bob_key = Archive::status(&bob_z, false, Retry::default()).unwrap().share_key;

    let item = SharedItem {
        name: "conversations/conv_0001.json".into(),
        bytes: b"{\"title\": \"shared\"}".to_vec(),
    };
    alice.share(vec![item], &bob_key).unwrap();
    let alices_backend = DirBackend::new(&backend).unwrap();
    let received = bob.accept(Some(&alices_backend)).unwrap();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].1[0].bytes, b"{\"title\": \"shared\"}");
    assert!(bob.accept(Some(&alices_backend)).unwrap().is_empty(), "accepted once");
    assert!(carol.accept(Some(&alices_backend)).unwrap().is_empty(), "not for carol");
    // Hostile names never get as far as a grant.
    let hostile = SharedItem {
        name: "../../etc/passwd".into(),
        bytes: vec![],
    };
    assert!(alice.share(vec![hostile], &bob_key).is_err());
    assert!(Config::load(&bob_z).unwrap().is_some());
}

#[test]
fn one_archive_command_at_a_time_per_project() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 3);
    let backend = tmp.path().join("backup");
    let archive = setup(&z, &backend);
    // The app's background push and a CLI push must not send the same batch twice.
    let busy = Archive::open(&z, PASS, Retry::default()).err().unwrap().to_string();
    assert!(busy.contains("another archive command is running"), "{busy}");
    drop(archive);
    let mut again = Archive::open(&z, PASS, Retry::default()).unwrap();
    assert_eq!(again.push(&PushOptions::default(), &mut quiet()).unwrap().files, 5);
}

#[test]
fn without_a_remembered_key_nothing_opens_unattended() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 1);
    drop(setup(&z, &tmp.path().join("backup")));
    // Set up without the keyring: the keyring is not even asked.
    assert!(Archive::open_remembered(&z, Retry::default()).unwrap().is_none());
    let status = Archive::status(&z, false, Retry::default()).unwrap();
    assert!(!status.remembered && !status.auto_push);
}

#[test]
fn a_master_key_that_does_not_open_the_vault_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let z = project(&tmp.path().join("p"), 1);
    drop(setup(&z, &tmp.path().join("backup")));
    // What a stale or planted keyring entry would hand over.
    let planted = zblade_archive::crypto::Key::generate();
    let error = Archive::open_with_master(&z, planted, Retry::default())
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("does not open its vault"), "{error}");
    let right = Vault::load(&tmp.path().join("backup/vault.json"))
        .unwrap()
        .unlock(PASS)
        .unwrap();
    assert!(Archive::open_with_master(&z, right, Retry::default()).is_ok());
}
