//! ANN index types compared (issue: context assembly speed).
//!
//! One LanceDB table of synthetic clustered vectors (the semantic benchmark's generator, at the
//! size of its 100,000-message project), indexed in turn with each index type LanceDB offers
//! that zblade could use; for each: build time, size, and for a top 10 and a top 55 (what hybrid
//! search asks) the query latency and recall against exact search on the same table.
//!
//! `cargo bench --workspace --bench ann_index` writes docs/BENCHMARKS.md; under `cargo
//! test` it runs a small smoke version and writes nothing.

use std::time::{Duration, Instant};

use zblade_search::VectorStore;
use zblade_search::vectors::{ANN_KIND, ANN_NPROBES, AnnKind, AnnQuery, ann_query};

mod common;
use common::vectors::ClusteredVectors;
use common::{Stats, full_run, write_section};

const DIM: usize = 384;

fn main() {
    let full = full_run();
    let (rows, query_count) = if full { (118_000, 200) } else { (3_000, 10) };
    let work = tempfile::tempdir().unwrap();
    let mut store = VectorStore::open(work.path(), "bench", DIM).unwrap();
    let mut generator = ClusteredVectors::new(DIM, (rows / 50).max(20));
    let mut sample = Vec::new();
    eprintln!("writing {rows} vectors …");
    let mut written = 0;
    while written < rows {
        let n = zblade_search::vectors::WRITE_BATCH.min(rows - written);
        let batch: Vec<(String, Vec<f32>)> = (written..written + n)
            .map(|i| (format!("c{i:07}"), generator.next()))
            .collect();
        sample.extend(batch.iter().step_by(97).map(|(_, v)| v.clone()));
        store.add(&batch).unwrap();
        written += n;
    }
    store.compact().unwrap();

    // Queries near stored vectors, and their exact top 55 as the reference.
    let queries: Vec<Vec<f32>> = (0..query_count)
        .map(|i| generator.near(&sample[(i * 7 + 3) % sample.len()].clone(), 0.08))
        .collect();
    let exact: Vec<Vec<String>> = queries
        .iter()
        .map(|q| store.nearest_exact(q, 55).unwrap().into_iter().map(|n| n.cid).collect())
        .collect();

    let plain = |nprobes| AnnQuery {
        nprobes,
        refine: None,
        ef: None,
    };
    let refined = |nprobes, refine| AnnQuery {
        nprobes,
        refine: Some(refine),
        ef: None,
    };
    let hnsw = |ef| AnnQuery {
        nprobes: 1,
        refine: None,
        ef: Some(ef),
    };
    // zblade's index and query, what it used before, and the other kinds LanceDB builds.
    let configs: Vec<(AnnKind, Option<u32>, Vec<AnnQuery>)> = vec![
        (AnnKind::IvfSq, None, vec![plain(ANN_NPROBES), plain(8)]),
        (AnnKind::IvfSq, Some(64), vec![plain(16)]),
        (
            AnnKind::IvfPq,
            None,
            vec![refined(ANN_NPROBES, 10), refined(ANN_NPROBES, 5), plain(ANN_NPROBES)],
        ),
        (AnnKind::IvfHnswSq, None, vec![hnsw(100), hnsw(400)]),
        (AnnKind::IvfRq, None, vec![ann_query(AnnKind::IvfRq), plain(16)]),
    ];
    let mut table = String::from(
        "| index | build | query | top 10: p50 / p95 / p99, recall@10 | top 55: p50 / p95 / p99, recall@50 |\n|---|---|---|---|---|\n",
    );
    for (kind, partitions, settings) in configs {
        let started = Instant::now();
        store.build_ann_index_of(kind, partitions).unwrap();
        let build = started.elapsed();
        for ann in settings {
            let (mut t10, mut t55) = (Vec::new(), Vec::new());
            let (mut r10, mut r50) = (0.0, 0.0);
            for (q, reference) in queries.iter().zip(&exact) {
                let started = Instant::now();
                let top10 = store.nearest_ann(q, 10, ann).unwrap();
                t10.push(started.elapsed());
                let started = Instant::now();
                let top55 = store.nearest_ann(q, 55, ann).unwrap();
                t55.push(started.elapsed());
                r10 += top10.iter().filter(|n| reference[..10].contains(&n.cid)).count() as f64 / 10.0;
                r50 += top55
                    .iter()
                    .take(50)
                    .filter(|n| reference[..50].contains(&n.cid))
                    .count() as f64
                    / 50.0;
            }
            let n = queries.len() as f64;
            common::sane(&format!("{kind:?} recall@10"), r10 / n);
            let chosen = kind == ANN_KIND && ann == ann_query(ANN_KIND);
            let line = format!(
                "| {kind:?}, {} partitions{} | {:.1} s | nprobes {}, refine {}, ef {} | {}, {:.3} | {}, {:.3} |\n",
                partitions.map_or("default".to_string(), |p| p.to_string()),
                if chosen { " (zblade)" } else { "" },
                build.as_secs_f64(),
                ann.nprobes,
                ann.refine.map_or("–".into(), |r| format!("×{r}")),
                ann.ef.map_or("–".into(), |e| e.to_string()),
                Stats::of(&mut t10),
                r10 / n,
                Stats::of(&mut t55),
                r50 / n,
            );
            eprint!("{line}");
            table.push_str(&line);
        }
    }
    let mut exact_times: Vec<Duration> = Vec::new();
    for q in &queries {
        let started = Instant::now();
        std::hint::black_box(store.nearest_exact(q, 55).unwrap());
        exact_times.push(started.elapsed());
    }
    // What any call costs before it reads a vector: the check for a newer table version.
    let mut count_times: Vec<Duration> = Vec::new();
    for _ in &queries {
        let started = Instant::now();
        std::hint::black_box(store.len().unwrap());
        count_times.push(started.elapsed());
    }
    let body = format!(
        "{rows} synthetic clustered 384-dimension unit vectors (the semantic benchmark's generator; its size in the full run), \
         {query_count} queries near stored vectors; recall against exact search on the same table; LanceDB makes \
         one partition per 8,192 vectors for IVF-PQ and IVF-SQ, per 4,096 for IVF-RQ, one up to a million for \
         IVF-HNSW (exact top 55: {}; counting the rows, which only \
         checks for a newer table version: {}).\n\n{table}\n",
        Stats::of(&mut exact_times),
        Stats::of(&mut count_times)
    );
    println!("{body}");
    if full {
        write_section("ann-index", "ANN index types", "ann_index", &body);
    }
}
