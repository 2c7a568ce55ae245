//! Vectors in LanceDB: one table per embedding model, one row per chunk CID.
//!
//! Rows hold only the CID and its vector: what a chunk belongs to lives in the SQLite index
//! (`chunks` table), so a text that appears in many places is stored and embedded once, and
//! the vector table never holds a copy of code or conversation text. LanceDB is async; this
//! wrapper owns a small Tokio runtime so the rest of zblade stays synchronous.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lancedb::DistanceType;
use lancedb::index::vector::{IvfHnswSqIndexBuilder, IvfPqIndexBuilder, IvfRqIndexBuilder, IvfSqIndexBuilder};
use lancedb::index::{Index, IndexType};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

/// Rows written per LanceDB append: fewer, larger fragments keep the table fast and small.
pub const WRITE_BATCH: usize = 2048;

/// The ANN index zblade builds: IVF partitions of RaBitQ codes ([`ANN_RQ_BITS`] per
/// dimension). At a million vectors shaped like real embeddings it found 0.973 of the exact
/// top 10 without re-ranking, and the top 55 hybrid search asks for in 9 ms (p50), where
/// one-byte scalar codes (IVF-SQ, zblade's index before) took 24 ms for 0.968 over the same
/// share of the vectors, and IVF-HNSW 11 ms for 0.95 after a quarter of an hour's build
/// (docs/BENCHMARKS.md, "A million chunks").
pub const ANN_KIND: AnnKind = AnnKind::IvfRq;
/// Bits per dimension of the RaBitQ codes. With LanceDB's default of 5, distances were too
/// rough to reach 0.95 of the exact top 10 without re-ranking (0.95 at 128 probes), and
/// re-ranking reads each candidate's vector from the table (5 × k candidates cost 6–9 ms more
/// per query at a million vectors); 8 bits reach 0.96–0.97 at 64 probes and 0.97 at 96 with
/// no re-ranking, for 145 MB more on disk per million vectors.
pub const ANN_RQ_BITS: u32 = 8;
/// IVF partitions probed per ANN query. zblade makes one partition per [`ANN_PARTITION_ROWS`]
/// vectors, so up to about 390,000 vectors every partition is probed; past that, the 96
/// nearest. At a million vectors, 64 of 246 partitions found 0.952–0.966 of the exact top 10
/// and 96 found 0.973–0.975 (four builds), 128 found 0.975–0.977 (three). Other partition
/// sizes were no faster for the same recall: 48 of 123 partitions (8,192 vectors each) matched
/// 96 of 246 in recall and time, and 24 of 61 scanned the same share as 96 of 246 for 0.87 of
/// the top 10 (docs/BENCHMARKS.md, "Larger partitions, fewer probes").
pub const ANN_NPROBES: usize = 96;
/// Vectors per IVF partition of the index zblade builds (LanceDB's own choice for IVF-RQ).
pub const ANN_PARTITION_ROWS: usize = 4_096;

/// IVF partitions of the index zblade builds on `rows` vectors.
pub fn ann_partitions(rows: usize) -> u32 {
    (rows / ANN_PARTITION_ROWS).max(1) as u32
}

/// How zblade queries an index of `kind`: only an earlier zblade's IVF-PQ needs its
/// candidates re-ranked by exact distance.
pub fn ann_query(kind: AnnKind) -> AnnQuery {
    let refine = (kind == AnnKind::IvfPq).then_some(LEGACY_PQ_REFINE_FACTOR);
    AnnQuery {
        nprobes: ANN_NPROBES,
        refine,
        ef: None,
    }
}

/// Re-ranking factor for an IVF-PQ index built by an earlier zblade, until the next `zblade
/// index` replaces it with [`ANN_KIND`]: its distances alone found 0.58 of the top 50.
pub const LEGACY_PQ_REFINE_FACTOR: u32 = 10;

/// The kinds of ANN index LanceDB builds that zblade can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnKind {
    /// IVF partitions, vectors product-quantised (48 bytes at 384 dimensions); distances are
    /// rough, so candidates are re-ranked by exact distance.
    IvfPq,
    /// IVF partitions, one byte per dimension.
    IvfSq,
    /// IVF partitions, an HNSW graph in each, one byte per dimension.
    IvfHnswSq,
    /// IVF partitions, RaBitQ codes (a few bits per dimension).
    IvfRq,
    /// Any other kind (made by another tool); replaced by the next `zblade index`.
    Other,
}

/// How one ANN query searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnQuery {
    /// IVF partitions probed.
    pub nprobes: usize,
    /// Re-rank `refine × k` candidates by exact distance (`None`: the index's distances).
    pub refine: Option<u32>,
    /// HNSW candidate list size (`None`: LanceDB's default, 1.5 × k).
    pub ef: Option<usize>,
}

/// The vector table of one model.
pub struct VectorStore {
    runtime: tokio::runtime::Runtime,
    table: lancedb::Table,
    dim: usize,
    /// The table's ANN index when it was opened or last built here (`None`: none).
    index: Option<AnnKind>,
    /// [`VectorStore::has_vectors`] found vectors once.
    held_vectors: std::sync::atomic::AtomicBool,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A runtime to drive LanceDB and a connection to the database in `dir`.
fn connect(dir: &Path) -> Result<(tokio::runtime::Runtime, lancedb::Connection), String> {
    connect_uri(&dir.to_string_lossy())
}

/// [`connect`] for a database LanceDB names by URI: a local path, or an object store it
/// reaches itself.
fn connect_uri(uri: &str) -> Result<(tokio::runtime::Runtime, lancedb::Connection), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(err)?;
    // Every read checks for a newer table version, so a store kept open for many searches
    // sees what another process (`zblade watch`, the app's indexer) wrote meanwhile.
    let connect = lancedb::connect(uri).read_consistency_interval(std::time::Duration::ZERO);
    let db = runtime.block_on(connect.execute()).map_err(err)?;
    Ok((runtime, db))
}

/// The kind of the vector column's ANN index, if it has one (a kind zblade does not build is
/// [`AnnKind::Other`], which [`VectorStore::ensure_ann_index`] replaces).
fn vector_index(runtime: &tokio::runtime::Runtime, table: &lancedb::Table) -> Result<Option<AnnKind>, String> {
    let indices = runtime.block_on(table.list_indices()).map_err(err)?;
    let Some(config) = indices.iter().find(|i| i.columns == ["vector"]) else {
        return Ok(None);
    };
    Ok(Some(match config.index_type {
        IndexType::IvfPq => AnnKind::IvfPq,
        IndexType::IvfSq => AnnKind::IvfSq,
        IndexType::IvfHnswSq => AnnKind::IvfHnswSq,
        IndexType::IvfRq => AnnKind::IvfRq,
        _ => AnnKind::Other,
    }))
}

/// The folder LanceDB keeps the local table of `model_id` under `dir` in: `NAME.lance`.
fn table_dir(dir: &Path, model_id: &str) -> PathBuf {
    dir.join(format!("{}.lance", table_name(model_id)))
}

/// The table name for a model id: letters, digits and `_` only.
pub fn table_name(model_id: &str) -> String {
    let clean: String = model_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("chunks_{clean}")
}

fn schema(dim: usize) -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("cid", DataType::Utf8, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dim as i32),
            false,
        ),
    ]))
}

/// A nearest neighbour: the chunk's CID and its cosine distance (0 = same direction).
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    /// The chunk's content id.
    pub cid: String,
    /// Cosine distance.
    pub distance: f32,
}

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("table", &self.table.name())
            .field("dim", &self.dim)
            .field("index", &self.index)
            .finish()
    }
}

impl VectorStore {
    /// Opens (creating if needed) the table of `model_id` under `dir`.
    pub fn open(dir: &Path, model_id: &str, dim: usize) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Self::open_named(&dir.to_string_lossy(), &table_name(model_id), dim)
    }

    /// Opens (creating if needed) the table `name` of the LanceDB database at `uri` (a local
    /// path, or an object store URL LanceDB reads, such as `s3://bucket/path`). The sync
    /// server keeps one such table per project, its rows named by the server.
    pub fn open_named(uri: &str, name: &str, dim: usize) -> Result<Self, String> {
        let (runtime, db) = connect_uri(uri)?;
        let name = name.to_string();
        let table = runtime.block_on(async {
            if db.table_names().execute().await.map_err(err)?.contains(&name) {
                db.open_table(&name).execute().await.map_err(err)
            } else {
                let empty = RecordBatch::new_empty(schema(dim));
                db.create_table(&name, empty).execute().await.map_err(err)
            }
        })?;
        let index = vector_index(&runtime, &table)?;
        Ok(VectorStore {
            runtime,
            table,
            dim,
            index,
            held_vectors: Default::default(),
        })
    }

    /// Opens the table of `model_id` under `dir` if it exists, without creating anything;
    /// the vector length is read from the table.
    pub fn open_existing(dir: &Path, model_id: &str) -> Result<Option<Self>, String> {
        // Without the table's folder there is no table, and asking LanceDB (a runtime, a
        // connection, a listing) would cost every search of a project without code vectors
        // about a millisecond for the same answer.
        if !table_dir(dir, model_id).is_dir() {
            return Ok(None);
        }
        Self::open_existing_named(&dir.to_string_lossy(), &table_name(model_id))
    }

    /// Whether the table of `model_id` under `dir` looks like it holds vectors, from the
    /// files alone (LanceDB keeps a table's rows under `NAME.lance/data/`; a table that was
    /// made and never written has no such files). A hint for loading a model early, beside
    /// opening the table; [`VectorStore::len`] is the answer.
    pub fn probably_holds_vectors(dir: &Path, model_id: &str) -> bool {
        let data = table_dir(dir, model_id).join("data");
        std::fs::read_dir(data).is_ok_and(|mut files| files.next().is_some())
    }

    /// Opens the table `name` of the database at `uri` if it exists (see
    /// [`VectorStore::open_named`]); the vector length is read from the table.
    pub fn open_existing_named(uri: &str, name: &str) -> Result<Option<Self>, String> {
        let (runtime, db) = connect_uri(uri)?;
        let name = name.to_string();
        let Some(table) = runtime.block_on(async {
            if db.table_names().execute().await.map_err(err)?.contains(&name) {
                db.open_table(&name).execute().await.map(Some).map_err(err)
            } else {
                Ok(None)
            }
        })?
        else {
            return Ok(None);
        };
        let schema = runtime.block_on(table.schema()).map_err(err)?;
        let dim = match schema.field_with_name("vector").map(|f| f.data_type().clone()) {
            Ok(DataType::FixedSizeList(_, n)) => n as usize,
            _ => return Err(format!("table {name} has no vector column")),
        };
        let index = vector_index(&runtime, &table)?;
        Ok(Some(VectorStore {
            runtime,
            table,
            dim,
            index,
            held_vectors: Default::default(),
        }))
    }

    /// Names of every vector table under `dir` (one per model ever used).
    pub fn tables(dir: &Path) -> Result<Vec<String>, String> {
        if !dir.exists() {
            return Ok(Vec::new());
        }
        let (runtime, db) = connect(dir)?;
        runtime.block_on(db.table_names().execute()).map_err(err)
    }

    /// How many vectors the table of `model_id` under `dir` holds, without creating it;
    /// `None` when there is no such table. Cheap: no model needs to be loaded to ask.
    pub fn count_in(dir: &Path, model_id: &str) -> Result<Option<usize>, String> {
        if !dir.exists() {
            return Ok(None);
        }
        let (runtime, db) = connect(dir)?;
        let name = table_name(model_id);
        runtime.block_on(async {
            if !db.table_names().execute().await.map_err(err)?.contains(&name) {
                return Ok(None);
            }
            let table = db.open_table(&name).execute().await.map_err(err)?;
            table.count_rows(None).await.map(Some).map_err(err)
        })
    }

    /// Drops the table `name` under `dir`.
    pub fn drop_table(dir: &Path, name: &str) -> Result<(), String> {
        let (runtime, db) = connect(dir)?;
        runtime.block_on(db.drop_table(name, &[])).map_err(err)
    }

    /// Names of every table of the database at `uri` (see [`VectorStore::open_named`]); what
    /// LanceDB says when it cannot reach it.
    pub fn table_names(uri: &str) -> Result<Vec<String>, String> {
        let (runtime, db) = connect_uri(uri)?;
        runtime.block_on(db.table_names().execute()).map_err(err)
    }

    /// Drops the table `name` of the database at `uri`; false when there was none.
    pub fn drop_named(uri: &str, name: &str) -> Result<bool, String> {
        let (runtime, db) = connect_uri(uri)?;
        runtime.block_on(async {
            if !db.table_names().execute().await.map_err(err)?.iter().any(|t| t == name) {
                return Ok(false);
            }
            db.drop_table(name, &[]).await.map_err(err)?;
            Ok(true)
        })
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Every CID that has a vector.
    pub fn cids(&self) -> Result<HashSet<String>, String> {
        self.cids_where(None)
    }

    /// The CIDs of the rows that `predicate` (a LanceDB filter; `None`: every row) keeps.
    fn cids_where(&self, predicate: Option<String>) -> Result<HashSet<String>, String> {
        self.runtime.block_on(async {
            let mut query = self.table.query();
            if let Some(predicate) = predicate {
                query = query.only_if(predicate);
            }
            let batches: Vec<RecordBatch> = query
                .select(Select::columns(&["cid"]))
                .execute()
                .await
                .map_err(err)?
                .try_collect()
                .await
                .map_err(err)?;
            let mut out = HashSet::new();
            for batch in batches {
                let column = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or("cid column is not text")?;
                out.extend(column.iter().flatten().map(String::from));
            }
            Ok(out)
        })
    }

    /// The stored vectors of these CIDs (those it has).
    pub fn vectors_of(&self, cids: &[String]) -> Result<std::collections::HashMap<String, Vec<f32>>, String> {
        let mut out = std::collections::HashMap::new();
        for chunk in cids.chunks(500) {
            let list: Vec<String> = chunk.iter().map(|c| format!("'{}'", c.replace('\'', "''"))).collect();
            let batches: Vec<RecordBatch> = self.runtime.block_on(async {
                self.table
                    .query()
                    .only_if(format!("cid IN ({})", list.join(", ")))
                    .select(Select::columns(&["cid", "vector"]))
                    .execute()
                    .await
                    .map_err(err)?
                    .try_collect()
                    .await
                    .map_err(err)
            })?;
            for batch in batches {
                let cids = batch
                    .column_by_name("cid")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                    .ok_or("cid column is not text")?;
                let vectors = batch
                    .column_by_name("vector")
                    .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
                    .ok_or("vector column is not a list of numbers")?;
                for row in 0..batch.num_rows() {
                    let values = vectors.value(row);
                    let values = values
                        .as_any()
                        .downcast_ref::<arrow_array::Float32Array>()
                        .ok_or("vector values are not 32-bit floats")?;
                    out.insert(cids.value(row).to_string(), values.values().to_vec());
                }
            }
        }
        Ok(out)
    }

    /// Number of vectors.
    pub fn len(&self) -> Result<usize, String> {
        self.runtime.block_on(self.table.count_rows(None)).map_err(err)
    }

    /// Fragments (data files) of the table below LanceDB's "small" size (100,000 rows). Each
    /// [`VectorStore::add`] writes one, and a search opens every fragment its neighbours lie
    /// in, so a table that only ever grew by small appends (`zblade add` embeds what it adds)
    /// gets slower to search until [`VectorStore::compact`] merges them.
    pub fn small_fragments(&self) -> Result<usize, String> {
        let stats = self.runtime.block_on(self.table.stats()).map_err(err)?;
        Ok(stats.fragment_stats.num_small_fragments)
    }

    /// Whether the table holds vectors: asked of the table until it does, then remembered.
    /// Searches ask it every time, and each question to the table checks for a newer version
    /// (1.5 ms a search at a million vectors). A table emptied later (every vector removed) still
    /// answers true until it is opened again, and its searches find no neighbours, as they
    /// would anyway.
    pub fn has_vectors(&self) -> Result<bool, String> {
        use std::sync::atomic::Ordering;
        if self.held_vectors.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let held = self.len()? > 0;
        self.held_vectors.store(held, Ordering::Relaxed);
        Ok(held)
    }

    /// True when the table holds no vectors.
    pub fn is_empty(&self) -> Result<bool, String> {
        Ok(self.len()? == 0)
    }

    /// Appends vectors (one per CID; the caller makes sure the CIDs are new).
    pub fn add(&self, rows: &[(String, Vec<f32>)]) -> Result<(), String> {
        for chunk in rows.chunks(WRITE_BATCH) {
            if let Some((cid, v)) = chunk.iter().find(|(_, v)| v.len() != self.dim) {
                return Err(format!(
                    "vector for {cid} has {} dimensions, the table {}",
                    v.len(),
                    self.dim
                ));
            }
            let cids = StringArray::from_iter_values(chunk.iter().map(|(c, _)| c.as_str()));
            let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                chunk
                    .iter()
                    .map(|(_, v)| Some(v.iter().map(|x| Some(*x)).collect::<Vec<_>>())),
                self.dim as i32,
            );
            let batch = RecordBatch::try_new(schema(self.dim), vec![Arc::new(cids), Arc::new(vectors)]).map_err(err)?;
            self.runtime.block_on(self.table.add(batch).execute()).map_err(err)?;
        }
        Ok(())
    }

    /// Removes every vector whose id starts with one of `prefixes` (the sync server's rows of
    /// one record).
    pub fn remove_prefixed(&self, prefixes: &[String]) -> Result<(), String> {
        for chunk in prefixes.chunks(100) {
            let list: Vec<String> = chunk
                .iter()
                .map(|p| format!("starts_with(cid, '{}')", p.replace('\'', "''")))
                .collect();
            let predicate = list.join(" OR ");
            self.runtime
                .block_on(self.table.delete(predicate.as_str()))
                .map_err(err)?;
        }
        Ok(())
    }

    /// Removes the vectors of these CIDs.
    pub fn remove(&self, cids: &[String]) -> Result<(), String> {
        for chunk in cids.chunks(500) {
            let list: Vec<String> = chunk.iter().map(|c| format!("'{}'", c.replace('\'', "''"))).collect();
            let predicate = format!("cid IN ({})", list.join(", "));
            self.runtime
                .block_on(self.table.delete(predicate.as_str()))
                .map_err(err)?;
        }
        Ok(())
    }

    /// Which of these CIDs already have a vector.
    pub fn existing(&self, cids: &[String]) -> Result<HashSet<String>, String> {
        let mut out = HashSet::new();
        for chunk in cids.chunks(500) {
            let list: Vec<String> = chunk.iter().map(|c| format!("'{}'", c.replace('\'', "''"))).collect();
            out.extend(self.cids_where(Some(format!("cid IN ({})", list.join(", "))))?);
        }
        Ok(out)
    }

    /// Whether queries go through an ANN index.
    pub fn has_ann_index(&self) -> bool {
        self.index.is_some()
    }

    /// The kind of the table's ANN index, as seen when it was opened or last built here.
    pub fn ann_index(&self) -> Option<AnnKind> {
        self.index
    }

    /// Builds an [`ANN_KIND`] index on the vectors once the table holds `threshold` rows, and
    /// replaces an index of another kind (an earlier zblade's IVF-PQ or IVF-SQ); later
    /// additions are folded in by [`VectorStore::compact`], which also splits partitions that
    /// grew past four times their target size. Returns whether an index exists.
    pub fn ensure_ann_index(&mut self, threshold: usize) -> Result<bool, String> {
        match self.index {
            Some(kind) if kind == ANN_KIND => Ok(true),
            Some(_) => {
                self.build_ann_index()?;
                Ok(true)
            }
            None if self.len()? >= threshold => {
                self.build_ann_index()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Builds (or rebuilds) the [`ANN_KIND`] index now, whatever the table's size.
    pub fn build_ann_index(&mut self) -> Result<(), String> {
        let partitions = ann_partitions(self.len()?);
        self.build_ann_index_of(ANN_KIND, Some(partitions))
    }

    /// Builds (or rebuilds) an ANN index of `kind` now; `partitions` overrides LanceDB's
    /// default IVF partition count (rows / 8192 for IVF-PQ and IVF-SQ, rows / 4096 for IVF-RQ,
    /// one partition up to a million rows for IVF-HNSW).
    pub fn build_ann_index_of(&mut self, kind: AnnKind, partitions: Option<u32>) -> Result<(), String> {
        // The builders share their IVF settings but no trait: one macro sets them on each.
        macro_rules! ivf {
            ($builder:expr) => {{
                let builder = $builder.distance_type(DistanceType::Cosine);
                match partitions {
                    Some(n) => builder.num_partitions(n),
                    None => builder,
                }
            }};
        }
        let index = match kind {
            AnnKind::IvfPq => {
                let sub_vectors = (self.dim / 8).max(1) as u32;
                Index::IvfPq(ivf!(IvfPqIndexBuilder::default().num_sub_vectors(sub_vectors)))
            }
            AnnKind::IvfSq => Index::IvfSq(ivf!(IvfSqIndexBuilder::default())),
            AnnKind::IvfHnswSq => Index::IvfHnswSq(ivf!(IvfHnswSqIndexBuilder::default())),
            AnnKind::IvfRq => Index::IvfRq(ivf!(IvfRqIndexBuilder::default().num_bits(ANN_RQ_BITS))),
            AnnKind::Other => return Err("zblade builds IVF-PQ, IVF-SQ, IVF-HNSW-SQ and IVF-RQ indexes".into()),
        };
        self.runtime
            .block_on(self.table.create_index(&["vector"], index).replace(true).execute())
            .map_err(err)?;
        self.index = Some(kind);
        // The index it replaced (if any) is only in older versions now.
        self.prune_old_versions()
    }

    /// The `k` nearest vectors to `query` by cosine distance: through the ANN index when
    /// there is one, else by exact search.
    pub fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<Neighbour>, String> {
        // The settings go with every query, not only when `self.index` says there is an index:
        // another process may have built one (of zblade's kind) since this store was opened.
        // Without an index LanceDB searches exactly and ignores them.
        self.nearest_with(query, k, Some(ann_query(self.index.unwrap_or(ANN_KIND))))
    }

    /// [`VectorStore::nearest`] with every ANN query setting given (benchmarks compare them).
    pub fn nearest_ann(&self, query: &[f32], k: usize, ann: AnnQuery) -> Result<Vec<Neighbour>, String> {
        self.nearest_with(query, k, Some(ann))
    }

    /// Exact search even when an ANN index exists: the reference the index's recall is
    /// measured against.
    pub fn nearest_exact(&self, query: &[f32], k: usize) -> Result<Vec<Neighbour>, String> {
        self.nearest_with(query, k, None)
    }

    /// `ann`: the ANN query settings, or `None` for exact search. A query that fails is tried
    /// once more: another process's [`VectorStore::compact`] may have removed the files of the
    /// version it had just resolved, and the retry reads the newest.
    fn nearest_with(&self, query: &[f32], k: usize, ann: Option<AnnQuery>) -> Result<Vec<Neighbour>, String> {
        self.nearest_once(query, k, ann)
            .or_else(|_| self.nearest_once(query, k, ann))
    }

    fn nearest_once(&self, query: &[f32], k: usize, ann: Option<AnnQuery>) -> Result<Vec<Neighbour>, String> {
        self.runtime.block_on(async {
            let mut search = self
                .table
                .query()
                .nearest_to(query)
                .map_err(err)?
                .distance_type(DistanceType::Cosine)
                .limit(k)
                .select(Select::columns(&["cid"]));
            search = match ann {
                Some(ann) => {
                    search = search.nprobes(ann.nprobes).map_err(err)?;
                    if let Some(refine) = ann.refine {
                        search = search.refine_factor(refine);
                    }
                    if let Some(ef) = ann.ef {
                        search = search.ef(ef);
                    }
                    search
                }
                None => search.bypass_vector_index(),
            };
            let batches: Vec<RecordBatch> = search.execute().await.map_err(err)?.try_collect().await.map_err(err)?;
            let mut out = Vec::new();
            for batch in batches {
                let cids = batch
                    .column_by_name("cid")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned());
                let distances = batch
                    .column_by_name("_distance")
                    .and_then(|c| c.as_any().downcast_ref::<arrow_array::Float32Array>().cloned());
                let (Some(cids), Some(distances)) = (cids, distances) else {
                    continue;
                };
                for i in 0..cids.len() {
                    out.push(Neighbour {
                        cid: cids.value(i).to_string(),
                        distance: distances.value(i),
                    });
                }
            }
            out.sort_by(|a, b| a.distance.total_cmp(&b.distance).then_with(|| a.cid.cmp(&b.cid)));
            Ok(out)
        })
    }

    /// Compacts small files, folds new rows into the ANN index and removes every version but
    /// the newest, so the table stays close to the size of its vectors.
    ///
    /// LanceDB's own default keeps a week of versions, and every [`VectorStore::add`] is one:
    /// the first index of a project left the table at 2.3× its vectors. Callers in different
    /// processes must not compact at the same time (the engine holds a lock around this); other
    /// processes may keep adding meanwhile — files not yet in any version are never removed.
    pub fn compact(&self) -> Result<(), String> {
        self.runtime.block_on(async {
            self.table
                .optimize(lancedb::table::OptimizeAction::Compact {
                    options: Default::default(),
                    remap_options: None,
                })
                .await
                .map_err(err)?;
            self.table
                .optimize(lancedb::table::OptimizeAction::Index(Default::default()))
                .await
                .map_err(err)?;
            Ok::<_, String>(())
        })?;
        self.prune_old_versions()
    }

    /// Removes every version of the table but the newest, and the files only they used.
    ///
    /// A search that resolved an older version a moment before may then miss a file; searches
    /// retry once on the newest version ([`VectorStore::nearest`]). Files no version refers to
    /// yet (another process's write in progress) are kept: `delete_unverified` stays off.
    fn prune_old_versions(&self) -> Result<(), String> {
        self.runtime.block_on(async {
            self.table
                .optimize(lancedb::table::OptimizeAction::Prune {
                    older_than: Some(lancedb::table::optimize::Duration::zero()),
                    delete_unverified: Some(false),
                    error_if_tagged_old_versions: Some(false),
                })
                .await
                .map_err(err)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random unit vectors, `n` of them, named `c0`, `c1`, ….
    fn random_rows(n: usize, dim: usize) -> Vec<(String, Vec<f32>)> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        (0..n)
            .map(|i| {
                let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (format!("c{i}"), v.into_iter().map(|x| x / norm).collect())
            })
            .collect()
    }

    /// Opening an existing table finds it by its folder alone: a model without one gets
    /// `None` (and nothing is made), the model with one gets its table, vectors and all.
    #[test]
    fn open_existing_finds_a_table_by_its_folder_and_makes_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            VectorStore::open_existing(&dir.path().join("absent"), "m")
                .unwrap()
                .is_none()
        );
        let store = VectorStore::open(dir.path(), "Model-A", 16).unwrap();
        store.add(&random_rows(3, 16)).unwrap();
        drop(store);
        assert!(VectorStore::open_existing(dir.path(), "model-b").unwrap().is_none());
        assert!(!table_dir(dir.path(), "model-b").exists());
        let found = VectorStore::open_existing(dir.path(), "Model-A")
            .unwrap()
            .expect("the table is there");
        assert_eq!((found.dim(), found.len().unwrap()), (16, 3));
        assert_eq!(VectorStore::tables(dir.path()).unwrap(), vec![table_name("Model-A")]);
    }

    #[test]
    fn an_earlier_ivf_pq_index_is_replaced_and_search_stays_right() {
        let dir = tempfile::tempdir().unwrap();
        let rows = random_rows(600, 16);
        let mut store = VectorStore::open(dir.path(), "m", 16).unwrap();
        store.add(&rows).unwrap();
        assert!(
            !store.ensure_ann_index(1_000).unwrap(),
            "below the threshold: exact search"
        );
        assert_eq!(store.ann_index(), None);
        // What an earlier zblade built.
        store.build_ann_index_of(AnnKind::IvfPq, Some(2)).unwrap();
        let mut store = VectorStore::open(dir.path(), "m", 16).unwrap();
        assert_eq!(store.ann_index(), Some(AnnKind::IvfPq));
        // Searching through it re-ranks, so the nearest vector to a stored one is itself.
        assert_eq!(store.nearest(&rows[7].1, 5).unwrap()[0].cid, "c7");
        assert!(
            store.ensure_ann_index(1_000).unwrap(),
            "an index of another kind is replaced"
        );
        let store = VectorStore::open(dir.path(), "m", 16).unwrap();
        assert_eq!(store.ann_index(), Some(ANN_KIND));
        for i in [0, 123, 599] {
            let found = store.nearest(&rows[i].1, 10).unwrap();
            assert_eq!(found[0].cid, format!("c{i}"));
            assert!(found[0].distance.abs() < 0.01, "{found:?}");
            assert!(found.windows(2).all(|w| w[0].distance <= w[1].distance));
        }
    }

    fn dir_bytes(path: &Path) -> u64 {
        std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| {
                let meta = e.metadata().unwrap();
                if meta.is_dir() {
                    dir_bytes(&e.path())
                } else {
                    meta.len()
                }
            })
            .sum()
    }

    #[test]
    fn compaction_keeps_one_version_and_a_reader_opened_before_still_finds_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 384;
        let rows = random_rows(1_200, dim);
        let writer = VectorStore::open(dir.path(), "m", dim).unwrap();
        // A search process that opened the table earlier and keeps its handle.
        let reader = VectorStore::open(dir.path(), "m", dim).unwrap();
        // As the engine writes while embedding: many small appends, each one version.
        for batch in rows.chunks(40) {
            writer.add(batch).unwrap();
        }
        assert_eq!(reader.nearest(&rows[5].1, 3).unwrap()[0].cid, "c5");
        let gone: Vec<String> = (0..100).map(|i| format!("c{i}")).collect();
        writer.remove(&gone).unwrap();
        let before = dir_bytes(dir.path());
        writer.compact().unwrap();
        let versions = writer.runtime.block_on(writer.table.list_versions()).unwrap();
        assert_eq!(versions.len(), 1, "only the newest version is kept");
        let after = dir_bytes(dir.path());
        let raw = (rows.len() - gone.len()) as u64 * dim as u64 * 4;
        assert!(after < before, "{after} bytes after compaction, {before} before");
        assert!(
            (after as f64) < 1.2 * raw as f64,
            "{after} bytes on disk for {raw} bytes of vectors"
        );
        // The reader's handle still answers, from the newest version.
        assert_eq!(reader.nearest(&rows[500].1, 3).unwrap()[0].cid, "c500");
        assert!(
            reader.nearest(&rows[5].1, 3).unwrap()[0].cid != "c5",
            "removed rows stay removed"
        );
        assert_eq!(reader.len().unwrap(), rows.len() - gone.len());
    }
}
