//! Writing docs/BENCHMARKS.md and telling a `cargo bench` run from a `cargo test` smoke run.
//! Shared by every crate's benchmarks (a light crate includes this file by path, so its bench
//! does not link the engine).
// Each benchmark compiles this module on its own and uses only part of it.
#![allow(dead_code)]

/// This package's folder. Asked at run time first: cargo sets `CARGO_MANIFEST_DIR` for the
/// processes it starts, and a binary built in another checkout of this workspace counts as fresh
/// to cargo (it hashes paths relative to the workspace), so the value compiled in may name a
/// checkout that is gone or out of date. Run by hand, the binary falls back to where it was built.
pub fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// True when run by `cargo bench` (full size, results written); false under `cargo test`
/// (a small smoke run that writes nothing).
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Replaces the section `key` of docs/BENCHMARKS.md (or appends it), stamped with the date,
/// commit and machine. Skipped when `ZBLADE_BENCH_NO_WRITE` is set.
pub fn write_section(key: &str, title: &str, bench: &str, body: &str) {
    if std::env::var_os("ZBLADE_BENCH_NO_WRITE").is_some() {
        return;
    }
    let path = manifest_dir().join("../../docs/BENCHMARKS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        "# Benchmarks\n\nNumbers measured on this project's machines; each section is rewritten by the benchmark named in it.\n".into()
    });
    let start = format!("<!-- {key}:start -->");
    let end = format!("<!-- {key}:end -->");
    let date = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC");
    // Asked in this repository, wherever the benchmark was started from.
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(manifest_dir())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // Say how it was built: a `--profile dev` run is slower and must not pass for a release one.
    let (flag, build) = if cfg!(debug_assertions) {
        (" --profile dev", "unoptimised build")
    } else {
        ("", "release build")
    };
    let section = format!(
        "{start}\n## {title}\n\n`cargo bench --workspace --bench {bench}{flag}` — {date}, commit {commit}, {}, {build}.\n\n{body}{end}",
        machine()
    );
    let updated = match (existing.find(&start), existing.find(&end)) {
        (Some(s), Some(e)) => format!("{}{}{}", &existing[..s], section, &existing[e + end.len()..]),
        _ => format!("{}\n\n{}\n", existing.trim_end(), section),
    };
    std::fs::write(&path, updated).unwrap();
    eprintln!("wrote {}", path.display());
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| format!("{:.0} GiB", kb / 1048576.0))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem} RAM")
}
