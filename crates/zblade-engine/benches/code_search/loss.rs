//! The pipeline's loss: how often the code model alone finds a documented function that
//! `zblade search --kind code` then misses, and why.
//!
//! The model alone ranks every function of a code base (documented or not) by its own full
//! text — the text the product would embed were the function a chunk of its own (`path:
//! symbol` and its lines) — against the query, semantic only. It is fixed before any change to the product, so a
//! change cannot make it look worse. A function it finds in the top ten and the product's
//! semantic search misses is put down to the first of: split across chunks, cut off by the
//! model's input length before its body, sharing its chunk with other code, pushed out of the
//! ten by other chunks of its own file, or none of these (ranked lower in its chunk's company).
//! Hybrid search then wins or loses some in fusion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use fastembed::TextEmbedding;
use zblade_syntax::docs::{documented, functions};

/// A function with the text the model alone embeds for it.
pub struct Function {
    pub path: String,
    pub start: u32,
    pub end: u32,
    text: String,
}

/// A chunk of the product's index: its lines and the symbol its embedded text names.
struct Chunk {
    start: u32,
    end: u32,
    symbol: Option<String>,
}

/// One code base as the model alone and the chunker see it.
pub struct Corpus {
    pub functions: Vec<Function>,
    vectors: Vec<Vec<f32>>,
    chunks: HashMap<String, Vec<Chunk>>,
    lines: HashMap<String, Vec<String>>,
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Corpus {
    /// Reads `files`: their functions, with their text from the documentation-blanked copies
    /// under `root` and each one's vector from `model`; the documented ones' places from the
    /// originals under `original` (the same lines); each file's chunks as the product cuts them.
    pub fn build(original: &Path, root: &Path, files: &[PathBuf], model: &mut TextEmbedding) -> Corpus {
        let mut all = Vec::new();
        let mut chunks = HashMap::new();
        let mut lines = HashMap::new();
        for rel in files {
            let path = rel.to_string_lossy().replace('\\', "/");
            let Ok(text) = std::fs::read_to_string(root.join(rel)) else {
                continue;
            };
            let file_lines: Vec<String> = text.lines().map(str::to_string).collect();
            let original_text = std::fs::read_to_string(original.join(rel)).unwrap_or_default();
            let documented: Vec<(u32, u32)> = documented(rel, &original_text)
                .unwrap_or_default()
                .into_iter()
                .filter(|d| d.function)
                .map(|d| (d.start_line, d.end_line))
                .collect();
            for item in functions(rel, &text).unwrap_or_default() {
                // A documented function starts at its declaration (its blanked docs left out).
                let start = documented
                    .iter()
                    .find(|(s, e)| *e == item.end_line && *s >= item.start_line)
                    .map_or(item.start_line, |(s, _)| *s);
                let body = file_lines[start as usize - 1..item.end_line as usize].join("\n");
                all.push(Function {
                    text: zblade_syntax::embedding_text(&path, Some(&item.symbol), &body),
                    path: path.clone(),
                    start,
                    end: item.end_line,
                });
            }
            let rows = zblade_engine::chunk_rows(&path, &text)
                .into_iter()
                .map(|r| Chunk {
                    start: r.start_line,
                    end: r.end_line,
                    symbol: r.symbol,
                })
                .collect();
            chunks.insert(path.clone(), rows);
            lines.insert(path, file_lines);
        }
        let texts: Vec<&str> = all.iter().map(|f| f.text.as_str()).collect();
        let vectors = model
            .embed(texts, Some(zblade_search::embed::EMBED_BATCH))
            .unwrap()
            .into_iter()
            .map(normalised)
            .collect();
        Corpus {
            functions: all,
            vectors,
            chunks,
            lines,
        }
    }

    /// Mean lines per chunk over the corpus's files.
    pub fn chunk_lines(&self) -> (usize, usize) {
        let all = self.chunks.values().flatten();
        let count = all.clone().count();
        let lines = all.map(|c| (c.end - c.start + 1) as usize).sum();
        (lines, count)
    }

    /// Where the model alone ranks the function at `path` lines `start..=end` for `query`
    /// (0-based; the first function overlapping it counts, as in the product's hit rule).
    pub fn alone_rank(
        &self,
        model: &mut TextEmbedding,
        query: &str,
        path: &str,
        start: u32,
        end: u32,
    ) -> Option<usize> {
        let q = normalised(model.embed([query], None).unwrap().remove(0));
        let mut scored: Vec<(f32, usize)> = self.vectors.iter().map(|v| dot(&q, v)).zip(0..).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.iter().take(10).position(|(_, i)| {
            let f = &self.functions[*i];
            f.path == path && f.start <= end && f.end >= start
        })
    }

    /// Why the product's semantic search missed a function the model alone found. `semantic`
    /// is the product's wide semantic list (path and lines, best first).
    pub fn cause(
        &self,
        model: &TextEmbedding,
        path: &str,
        start: u32,
        end: u32,
        semantic: &[(String, u32, u32)],
    ) -> Cause {
        let chunks = &self.chunks[path];
        let holding: Vec<&Chunk> = chunks.iter().filter(|c| c.start <= end && c.end >= start).collect();
        if holding.len() > 1 {
            return Cause::Split;
        }
        let Some(chunk) = holding.first() else {
            return Cause::Other;
        };
        // The embedded text up to the function's signature and first body line: past the
        // model's input length, the model never sees the function's body.
        let lines = &self.lines[path];
        let upto = (start + 1).min(chunk.end);
        let head = lines[chunk.start as usize - 1..upto as usize].join("\n");
        let head = zblade_syntax::embedding_text(path, chunk.symbol.as_deref(), &head);
        if let Ok(encoding) = model.tokenizer.encode(head.as_str(), true)
            && !encoding.get_overflowing().is_empty()
        {
            return Cause::Truncated;
        }
        // Another function in the same chunk (not one enclosing this one, like an impl's).
        let others = self.functions.iter().any(|f| {
            let encloses = f.start <= start && f.end >= end;
            f.path == path && !encloses && f.start <= chunk.end && f.end >= chunk.start
        });
        if others {
            return Cause::Shared;
        }
        let rank = semantic
            .iter()
            .position(|(p, s, e)| p == path && *s <= end && *e >= start);
        if let Some(rank) = rank {
            let same_file_above = semantic[..rank].iter().filter(|(p, _, _)| p == path).count();
            if rank - same_file_above < 10 {
                return Cause::SameFile;
            }
        }
        Cause::Other
    }
}

/// Why a function the model alone found fell out of the product's semantic top ten.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Split,
    Truncated,
    Shared,
    SameFile,
    Other,
}

impl Cause {
    pub const ALL: [Cause; 5] = [
        Cause::Split,
        Cause::Truncated,
        Cause::Shared,
        Cause::SameFile,
        Cause::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Cause::Split => "split across chunks",
            Cause::Truncated => "body past the model's input length (256 tokens)",
            Cause::Shared => "chunk shared with other functions",
            Cause::SameFile => "outranked by other chunks of its own file",
            Cause::Other => "none of these (ranked lower in its chunk)",
        }
    }
}

/// The loss tallied over one split's queries, for one model.
#[derive(Default, Clone)]
pub struct Loss {
    pub queries: usize,
    pub alone: usize,
    pub alone_mrr: f64,
    pub semantic: usize,
    pub hybrid: usize,
    pub causes: [usize; 5],
    pub lost_in_fusion: usize,
    pub won_in_fusion: usize,
    /// Found by the product's semantic search but not by the model alone.
    pub semantic_only: usize,
}

impl Loss {
    pub fn add(&mut self, alone: Option<usize>, semantic: bool, hybrid: bool, cause: Option<Cause>) {
        self.queries += 1;
        self.alone += usize::from(alone.is_some());
        self.alone_mrr += alone.map_or(0.0, |r| 1.0 / (r + 1) as f64);
        self.semantic += usize::from(semantic);
        self.hybrid += usize::from(hybrid);
        if let Some(cause) = cause {
            self.causes[Cause::ALL.iter().position(|c| *c == cause).unwrap()] += 1;
        }
        self.lost_in_fusion += usize::from(semantic && !hybrid);
        self.won_in_fusion += usize::from(!semantic && hybrid);
        self.semantic_only += usize::from(semantic && alone.is_none());
    }
}
