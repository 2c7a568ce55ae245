//! Mines training pairs for zblade's code model from code already on this machine: each
//! documented function or type gives (the first paragraph of its documentation → the chunk
//! the index would embed for it, with documentation blanked). The chunk is cut by the same
//! chunker, with the same budget, and laid out by the same `embedding_text` as `zblade index`
//! does at serve time, so the model learns on exactly what it will embed.
//!
//! ```text
//! cargo run -p zblade-syntax --example mine_code_pairs --release -- \
//!     --out DIR [--cap 300] [--exclude NAME]... SOURCE...
//! ```
//! A SOURCE is `KIND:DIR`:
//! - `cargo:DIR` — a cargo registry source folder: each child `name-version` is a package
//!   (only the newest version of each name is read);
//! - `python:DIR` — a `site-packages` folder or the standard library: each top-level package
//!   or module is a package;
//! - `npm:DIR` — a `node_modules` folder: each package (`@scope/name` too).
//!
//! Writes `DIR/pairs.jsonl` (`query`, `code`, `package`, `language`) and `DIR/manifest.json`
//! (each package with its version and pair count). Pairs are deduplicated (one query per
//! chunk, one chunk per query), at most `--cap` per package, spread evenly over its files.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A query shorter than this says too little to be searched by.
const MIN_QUERY_WORDS: usize = 3;
/// Files larger than this are data or generated.
const MAX_FILE_BYTES: u64 = 512 * 1024;
/// Folders whose code is not the package's own API.
const SKIP_DIRS: &[&str] = &[
    "tests",
    "test",
    "testing",
    "benches",
    "examples",
    "node_modules",
    "fixtures",
    "vendor",
    "third_party",
    "__pycache__",
    "target",
    "build",
    "site-packages",
];

struct Package {
    name: String,
    version: String,
    source: &'static str,
    root: PathBuf,
    /// Files relative to `root` that belong to it (a single module for a Python `x.py`).
    files: Vec<PathBuf>,
}

struct Pair {
    query: String,
    code: String,
    language: &'static str,
}

fn main() {
    let mut out = None;
    let mut cap = 300usize;
    let mut exclude: HashSet<String> = HashSet::new();
    let mut sources = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            "--cap" => cap = args.next().and_then(|v| v.parse().ok()).expect("--cap takes a number"),
            "--exclude" => {
                exclude.insert(args.next().expect("--exclude takes a package name"));
            }
            "--help" | "-h" => {
                println!("mine_code_pairs --out DIR [--cap N] [--exclude NAME]... cargo:DIR|python:DIR|npm:DIR...");
                return;
            }
            source => sources.push(source.to_string()),
        }
    }
    let out = out.expect("--out DIR is required");
    std::fs::create_dir_all(&out).expect("create the output folder");

    let mut packages = Vec::new();
    for source in &sources {
        let (kind, dir) = source.split_once(':').expect("a source is KIND:DIR");
        let dir = PathBuf::from(dir);
        match kind {
            "cargo" => packages.extend(cargo_packages(&dir)),
            "python" => packages.extend(python_packages(&dir)),
            "npm" => packages.extend(npm_packages(&dir)),
            other => panic!("unknown source kind {other} (cargo, python, npm)"),
        }
    }
    packages.sort_by(|a, b| (&a.name, &a.source).cmp(&(&b.name, &b.source)));
    // The same package seen twice (two virtual environments, two node_modules): read once.
    packages.dedup_by(|a, b| a.name == b.name && a.source == b.source);
    packages.retain(|p| !exclude.contains(&p.name));

    let mut seen_queries = HashSet::new();
    let mut seen_code = HashSet::new();
    let mut manifest = Vec::new();
    let mut writer = std::io::BufWriter::new(std::fs::File::create(out.join("pairs.jsonl")).expect("pairs.jsonl"));
    let mut by_language: BTreeMap<&str, usize> = BTreeMap::new();
    let total = packages.len();
    for (i, package) in packages.iter().enumerate() {
        let mut pairs = package_pairs(package);
        pairs.retain(|p| {
            let q = p.query.to_lowercase();
            !seen_queries.contains(&q) && !seen_code.contains(&p.code)
        });
        let step = pairs.len().div_ceil(cap).max(1);
        let mut kept = 0;
        for pair in pairs.into_iter().step_by(step).take(cap) {
            if !seen_queries.insert(pair.query.to_lowercase()) || !seen_code.insert(pair.code.clone()) {
                continue;
            }
            let line = serde_json::json!({
                "query": pair.query,
                "code": pair.code,
                "package": format!("{}:{}", package.source, package.name),
                "language": pair.language,
            });
            writeln!(writer, "{line}").expect("write a pair");
            *by_language.entry(pair.language).or_default() += 1;
            kept += 1;
        }
        if kept > 0 {
            manifest.push(serde_json::json!({
                "source": package.source,
                "package": package.name,
                "version": package.version,
                "pairs": kept,
            }));
        }
        if (i + 1) % 100 == 0 || i + 1 == total {
            eprintln!("{}/{} packages, {} pairs", i + 1, total, seen_code.len());
        }
    }
    writer.flush().expect("flush pairs.jsonl");
    let manifest = serde_json::json!({
        "packages": manifest,
        "excluded": exclude.iter().collect::<std::collections::BTreeSet<_>>(),
        "cap_per_package": cap,
        "pairs_by_language": by_language,
        "chunk_chars": zblade_syntax::CHUNK_CHARS,
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .expect("manifest");
    eprintln!("pairs by language: {by_language:?}");
}

/// The pairs of one package, in file order.
fn package_pairs(package: &Package) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for rel in &package.files {
        let path = package.root.join(rel);
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if meta.len() > MAX_FILE_BYTES {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Minified or generated: most text in very long lines.
        let long: usize = text.lines().map(str::len).filter(|&n| n > 1000).sum();
        if long * 2 > text.len() || text.lines().take(5).any(|l| l.contains("@generated")) {
            continue;
        }
        let rel_text = rel.to_string_lossy().replace('\\', "/");
        let Some(items) = zblade_syntax::docs::documented(rel, &text) else {
            continue;
        };
        if items.is_empty() {
            continue;
        }
        let language = language_name(rel);
        let blanked = zblade_syntax::docs::blank(rel, &text);
        let Some(chunks) = zblade_syntax::chunk(rel, &blanked, zblade_syntax::CHUNK_CHARS) else {
            continue;
        };
        let lines: Vec<&str> = blanked.lines().collect();
        for item in items {
            if item.summary.split_whitespace().count() < MIN_QUERY_WORDS || item.end_line < item.start_line + 1 {
                continue;
            }
            let Some(chunk) = chunks
                .iter()
                .find(|c| c.start_line <= item.start_line && c.end_line >= item.start_line)
            else {
                continue;
            };
            let body = lines[chunk.start_line as usize - 1..chunk.end_line as usize].join("\n");
            let code_lines = body.lines().filter(|l| !l.trim().is_empty()).count();
            if code_lines < 2 {
                continue;
            }
            pairs.push(Pair {
                query: item.summary,
                code: zblade_syntax::embedding_text(&rel_text, chunk.symbol().as_deref(), &body),
                language,
            });
        }
    }
    pairs
}

fn language_name(path: &Path) -> &'static str {
    use zblade_syntax::Language::*;
    match zblade_syntax::Language::of(path) {
        Some(Rust) => "rust",
        Some(Python) => "python",
        Some(JavaScript) => "javascript",
        Some(TypeScript | Tsx) => "typescript",
        Some(Go) => "go",
        Some(Java) => "java",
        Some(C | Cpp) => "c",
        _ => "other",
    }
}

/// Source files under `dir` (relative to `root`), sorted, skipping test and vendored folders.
fn files(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIP_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && zblade_syntax::Language::of(&path).is_some_and(|l| l != zblade_syntax::Language::Markdown)
                && !name.ends_with(".min.js")
                && let Ok(rel) = path.strip_prefix(root)
            {
                out.push(rel.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn cargo_packages(dir: &Path) -> Vec<Package> {
    // name → (version, folder); the newest version wins (compared as numbers, part by part).
    let mut newest: BTreeMap<String, (Vec<u64>, String, PathBuf)> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        // `name-1.2.3-beta`: the version starts at the first `-` followed by a digit.
        let Some(split) = folder
            .match_indices('-')
            .map(|(i, _)| i)
            .find(|&i| folder[i + 1..].chars().next().is_some_and(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        let (name, version) = (&folder[..split], &folder[split + 1..]);
        let key: Vec<u64> = version.split(['.', '-', '+']).map(|p| p.parse().unwrap_or(0)).collect();
        let newer = newest.get(name).is_none_or(|(k, _, _)| key > *k);
        if newer {
            newest.insert(name.to_string(), (key, version.to_string(), entry.path()));
        }
    }
    newest
        .into_iter()
        .map(|(name, (_, version, root))| {
            let files = files(&root, &root.join("src"));
            Package {
                name,
                version,
                source: "cargo",
                root,
                files,
            }
        })
        .collect()
}

fn python_packages(dir: &Path) -> Vec<Package> {
    // Versions from `*.dist-info` folders, by normalised name.
    let mut versions = BTreeMap::new();
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).into_iter().flatten().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in &entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".dist-info")
            && let Some((package, version)) = stem.rsplit_once('-')
        {
            versions.insert(package.to_lowercase().replace('-', "_"), version.to_string());
        }
    }
    let std_version = format!("python{}", dir.file_name().unwrap_or_default().to_string_lossy());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') || name.starts_with('.') || name.contains('-') || name.ends_with(".dist-info") {
            continue;
        }
        let path = entry.path();
        let (package, files) = if path.is_dir() {
            if SKIP_DIRS.contains(&name.as_str()) || name == "idlelib" || name == "lib2to3" {
                continue;
            }
            (name.clone(), files(dir, &path))
        } else if let Some(module) = name.strip_suffix(".py") {
            (module.to_string(), vec![PathBuf::from(&name)])
        } else {
            continue;
        };
        if files.is_empty() {
            continue;
        }
        let version = versions
            .get(&package.to_lowercase())
            .cloned()
            .unwrap_or_else(|| std_version.clone());
        out.push(Package {
            name: package,
            version,
            source: "python",
            root: dir.to_path_buf(),
            files,
        });
    }
    out
}

fn npm_packages(dir: &Path) -> Vec<Package> {
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if name.starts_with('@') {
            for inner in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                folders.push((format!("{name}/{}", inner.file_name().to_string_lossy()), inner.path()));
            }
        } else {
            folders.push((name, entry.path()));
        }
    }
    folders.sort();
    folders
        .into_iter()
        .filter_map(|(name, root)| {
            let manifest = std::fs::read_to_string(root.join("package.json")).ok()?;
            let manifest: serde_json::Value = serde_json::from_str(&manifest).ok()?;
            let version = manifest.get("version")?.as_str()?.to_string();
            let files = files(&root, &root);
            Some(Package {
                name,
                version,
                source: "npm",
                root,
                files,
            })
        })
        .collect()
}
