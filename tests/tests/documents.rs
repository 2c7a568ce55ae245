//! Documents (`zblade add document`): Markdown, text and PDF become searchable memory, listed
//! apart from conversations, packed by `context`, and a bad file stops nothing but itself.

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};
use zblade_tests::{json, stderr, zblade_bin};

fn zblade(root: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(zblade_bin())
        .args(args)
        .arg("--project")
        .arg(root)
        .output()
        .unwrap()
}

/// A one-page PDF saying `text`, written with lopdf.
fn pdf(path: &std::path::Path, text: &str) {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier"});
    let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 700.into()]),
            Operation::new("Tj", vec![Object::string_literal(text)]),
            Operation::new("ET", vec![]),
        ],
    };
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
    let page_id = doc.add_object(dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id});
    let pages = dictionary! {
        "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
        "Resources" => resources_id, "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    };
    doc.objects.insert(pages_id, Object::Dictionary(pages));
    let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog_id);
    doc.save(path).unwrap();
}

#[test]
fn markdown_text_and_pdf_documents_are_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    assert!(zblade(&root, &["init"]).status.success());
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let spec = docs.join("rfc-017.md");
    std::fs::write(
        &spec,
        "# RFC 017: Session tokens\n\nTokens rotate every 24 hours.\n\n## Storage\n\nRefresh tokens live in the keyring, never on disk.\n\nSTRIPE_SECRET_KEY=sk_live_0123456789abcdefABCD\n",
    )
    .unwrap();
    let notes = docs.join("notes.txt");
    std::fs::write(
        &notes,
        "Meeting notes: the billing service moves to Postgres 16 in March.\n",
    )
    .unwrap();
    let paper = docs.join("design.pdf");
    pdf(
        &paper,
        "The ingestion queue uses exactly-once delivery with idempotency keys.",
    );

    let out = zblade(
        &root,
        &[
            "add",
            "document",
            spec.to_str().unwrap(),
            notes.to_str().unwrap(),
            paper.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let added = json(&out);
    assert_eq!(added.as_array().unwrap().len(), 3, "{added:#}");

    let listed = json(&zblade(&root, &["list", "documents", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 3);
    let titles: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"RFC 017: Session tokens"), "{titles:?}");
    // Documents are not conversations.
    assert_eq!(
        json(&zblade(&root, &["list", "conversations", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        0
    );

    for (query, expect) in [
        ("keyring refresh tokens", "keyring"),
        ("Postgres billing", "16 in March"),
        ("idempotency keys", "exactly-once"),
    ] {
        let found = zblade(&root, &["search", query, "--json"]);
        assert!(
            String::from_utf8_lossy(&found.stdout).contains(expect),
            "{query}: {}",
            String::from_utf8_lossy(&found.stdout)
        );
    }
    let context = zblade(&root, &["context", "where do refresh tokens live?", "--json"]);
    assert!(String::from_utf8_lossy(&context.stdout).contains("keyring"));

    // The secret in the spec never reached the artifact.
    let id = added[0]["id"].as_str().unwrap();
    let shown = String::from_utf8_lossy(&zblade(&root, &["show", id, "--json"]).stdout).to_string();
    assert!(shown.contains("[REDACTED:"), "{shown}");
    assert!(!shown.contains("sk_live_0123456789abcdefABCD"));

    // Adding the same file again updates it; a bad file is named and nothing is added.
    std::fs::write(&notes, "Meeting notes: billing moves to Postgres 17 instead.\n").unwrap();
    let again = json(&zblade(&root, &["add", "document", notes.to_str().unwrap(), "--json"]));
    assert_eq!(again[0]["created"], false);
    let fake = docs.join("broken.pdf");
    std::fs::write(&fake, "not a pdf at all").unwrap();
    let image = docs.join("diagram.png");
    std::fs::write(&image, [0x89, b'P', b'N', b'G']).unwrap();
    for bad in [&fake, &image] {
        let out = zblade(
            &root,
            &["add", "document", spec.to_str().unwrap(), bad.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(bad.file_name().unwrap().to_str().unwrap()),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(
        json(&zblade(&root, &["list", "documents", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        3
    );
}
