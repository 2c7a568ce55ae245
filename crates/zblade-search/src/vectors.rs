//! Vectors in LanceDB: one table per embedding model, one row per chunk CID.
//!
//! Rows hold only the CID and its vector: what a chunk belongs to lives in the SQLite index
//! (`chunks` table), so a text that appears in many places is stored and embedded once, and
//! the vector table never holds a copy of code or conversation text. LanceDB is async; this
//! wrapper owns a small Tokio runtime so the rest of zblade stays synchronous.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lancedb::DistanceType;
use lancedb::index::Index;
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::query::{ExecutableQuery, QueryBase, Select};

/// Rows written per LanceDB append: fewer, larger fragments keep the table fast and small.
pub const WRITE_BATCH: usize = 2048;

/// IVF partitions probed per ANN query, and the factor of extra candidates re-ranked by
/// their exact distance. Chosen with the semantic benchmark (docs/BENCHMARKS.md, "Semantic and hybrid
/// search"): 32 probes gave recall@10 0.949 on 118k vectors, short of the 0.95 target.
pub const ANN_NPROBES: usize = 64;
/// See [`ANN_NPROBES`]: the refine factor for small `k` (a top 10 re-ranks 100 rows).
pub const ANN_REFINE_FACTOR: u32 = 10;
/// At most about this many rows are re-ranked by exact distance, and at least 2 per result.
/// Each is a random read of a full vector: a hybrid search's 55 neighbours took 20.6 ms
/// (p50) at factor 10 and 16.9 ms at factor 5, for recall@50 0.92 and 0.86 (docs/BENCHMARKS.md,
/// "Semantic and hybrid search"); the vector list weighs 0.3 in hybrid ranking, and what it
/// misses is mostly near the end of its 50.
pub const ANN_REFINED_ROWS: usize = 250;

/// The refine factor for a top `k`: [`ANN_REFINE_FACTOR`], lowered so about
/// [`ANN_REFINED_ROWS`] rows are re-ranked, never below 2.
pub fn refine_factor(k: usize) -> u32 {
    let bounded = ANN_REFINED_ROWS.div_ceil(k.max(1)) as u32;
    bounded.clamp(2, ANN_REFINE_FACTOR)
}

/// The vector table of one model.
pub struct VectorStore {
    runtime: tokio::runtime::Runtime,
    table: lancedb::Table,
    dim: usize,
    indexed: bool,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A runtime to drive LanceDB and a connection to the database in `dir`.
fn connect(dir: &Path) -> Result<(tokio::runtime::Runtime, lancedb::Connection), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(err)?;
    let uri = dir.to_string_lossy().into_owned();
    // Every read checks for a newer table version, so a store kept open for many searches
    // sees what another process (`zblade watch`, the app's indexer) wrote meanwhile.
    let connect = lancedb::connect(&uri).read_consistency_interval(std::time::Duration::ZERO);
    let db = runtime.block_on(connect.execute()).map_err(err)?;
    Ok((runtime, db))
}

fn has_vector_index(runtime: &tokio::runtime::Runtime, table: &lancedb::Table) -> Result<bool, String> {
    Ok(runtime
        .block_on(table.list_indices())
        .map_err(err)?
        .iter()
        .any(|i| i.columns == ["vector"]))
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
            .field("indexed", &self.indexed)
            .finish()
    }
}

impl VectorStore {
    /// Opens (creating if needed) the table of `model_id` under `dir`.
    pub fn open(dir: &Path, model_id: &str, dim: usize) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (runtime, db) = connect(dir)?;
        let name = table_name(model_id);
        let table = runtime.block_on(async {
            if db.table_names().execute().await.map_err(err)?.contains(&name) {
                db.open_table(&name).execute().await.map_err(err)
            } else {
                let empty = RecordBatch::new_empty(schema(dim));
                db.create_table(&name, empty).execute().await.map_err(err)
            }
        })?;
        let indexed = has_vector_index(&runtime, &table)?;
        Ok(VectorStore {
            runtime,
            table,
            dim,
            indexed,
        })
    }

    /// Opens the table of `model_id` under `dir` if it exists, without creating anything;
    /// the vector length is read from the table.
    pub fn open_existing(dir: &Path, model_id: &str) -> Result<Option<Self>, String> {
        if !dir.exists() {
            return Ok(None);
        }
        let (runtime, db) = connect(dir)?;
        let name = table_name(model_id);
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
        let indexed = has_vector_index(&runtime, &table)?;
        Ok(Some(VectorStore {
            runtime,
            table,
            dim,
            indexed,
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

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Every CID that has a vector.
    pub fn cids(&self) -> Result<HashSet<String>, String> {
        self.runtime.block_on(async {
            let batches: Vec<RecordBatch> = self
                .table
                .query()
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

    /// Number of vectors.
    pub fn len(&self) -> Result<usize, String> {
        self.runtime.block_on(self.table.count_rows(None)).map_err(err)
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
            let predicate = format!("cid IN ({})", list.join(", "));
            let batches: Vec<RecordBatch> = self.runtime.block_on(async {
                self.table
                    .query()
                    .only_if(predicate)
                    .select(Select::columns(&["cid"]))
                    .execute()
                    .await
                    .map_err(err)?
                    .try_collect()
                    .await
                    .map_err(err)
            })?;
            for batch in batches {
                if let Some(column) = batch.column(0).as_any().downcast_ref::<StringArray>() {
                    out.extend(column.iter().flatten().map(String::from));
                }
            }
        }
        Ok(out)
    }

    /// Whether queries go through an ANN index.
    pub fn has_ann_index(&self) -> bool {
        self.indexed
    }

    /// Builds an IVF-PQ index on the vectors once the table holds `threshold` rows (later
    /// additions are folded in by [`VectorStore::compact`]). Returns whether an index exists.
    pub fn ensure_ann_index(&mut self, threshold: usize) -> Result<bool, String> {
        if self.indexed || self.len()? < threshold {
            return Ok(self.indexed);
        }
        self.build_ann_index()?;
        Ok(true)
    }

    /// Builds (or rebuilds) the IVF-PQ index now, whatever the table's size.
    pub fn build_ann_index(&mut self) -> Result<(), String> {
        let pq = IvfPqIndexBuilder::default()
            .distance_type(DistanceType::Cosine)
            .num_sub_vectors((self.dim / 8).max(1) as u32);
        self.runtime
            .block_on(
                self.table
                    .create_index(&["vector"], Index::IvfPq(pq))
                    .replace(true)
                    .execute(),
            )
            .map_err(err)?;
        self.indexed = true;
        Ok(())
    }

    /// The `k` nearest vectors to `query` by cosine distance: through the ANN index when
    /// there is one (candidates re-ranked by exact distance), else by exact search.
    pub fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<Neighbour>, String> {
        // Not `self.indexed`: another process may have built the index since this store was
        // opened. Without an index LanceDB searches exactly and ignores the ANN settings.
        self.nearest_with(query, k, Some((ANN_NPROBES, refine_factor(k))))
    }

    /// [`VectorStore::nearest`] with the ANN settings given (benchmarks compare them).
    pub fn nearest_tuned(
        &self,
        query: &[f32],
        k: usize,
        nprobes: usize,
        refine: u32,
    ) -> Result<Vec<Neighbour>, String> {
        self.nearest_with(query, k, Some((nprobes, refine)))
    }

    /// Exact search even when an ANN index exists: the reference the index's recall is
    /// measured against.
    pub fn nearest_exact(&self, query: &[f32], k: usize) -> Result<Vec<Neighbour>, String> {
        self.nearest_with(query, k, None)
    }

    /// `ann`: the probes and refine factor, or `None` for exact search.
    fn nearest_with(&self, query: &[f32], k: usize, ann: Option<(usize, u32)>) -> Result<Vec<Neighbour>, String> {
        self.runtime.block_on(async {
            let mut search = self
                .table
                .query()
                .nearest_to(query)
                .map_err(err)?
                .distance_type(DistanceType::Cosine)
                .limit(k)
                .select(Select::columns(&["cid"]));
            search = if let Some((nprobes, refine)) = ann {
                search.nprobes(nprobes).map_err(err)?.refine_factor(refine)
            } else {
                search.bypass_vector_index()
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

    /// Compacts small files and removes old versions, so the table stays close to the size of
    /// its vectors.
    pub fn compact(&self) -> Result<(), String> {
        self.runtime.block_on(async {
            self.table
                .optimize(lancedb::table::OptimizeAction::All)
                .await
                .map_err(err)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refine_factor_bounds_the_rows_re_ranked() {
        assert_eq!(refine_factor(10), ANN_REFINE_FACTOR);
        assert_eq!(refine_factor(55), 5);
        assert_eq!(refine_factor(200), 2);
        assert_eq!(refine_factor(0), ANN_REFINE_FACTOR);
    }
}
