//! The chunk catalog: the texts each message and moment is embedded as, named by the CID of
//! their text, and which of them have no vector yet.

use std::collections::HashMap;

use zblade_core::Result;
use zblade_index::ChunkRow;
use zblade_search::chunk::{cid, embedding_pieces, split_text};

use super::{EmbeddingChunk, MemoryToEmbed};
use crate::parts::Parts;

impl Parts {
    /// Rebuilds the chunk catalog from the indexed messages and moments (deterministic: the
    /// same memory always gives the same chunks and CIDs).
    pub(crate) fn refresh_chunks(&mut self) -> Result<Vec<ChunkRow>> {
        let chunks = self.embedding_chunks()?;
        self.store_chunk_rows(&chunks)
    }

    /// Writes the chunk catalog for `chunks` (each named by the CID of its text).
    pub(super) fn store_chunk_rows(&mut self, chunks: &[EmbeddingChunk]) -> Result<Vec<ChunkRow>> {
        let rows: Vec<ChunkRow> = chunks.iter().map(|chunk| chunk.row(cid(&chunk.text))).collect();
        self.index_mut()?.replace_chunks(&rows)?;
        Ok(rows)
    }

    /// Every message and moment as the texts embedded for it: a message's first piece led by
    /// the end of the message before it in its conversation ([`embedding_pieces`]), moments
    /// alone.
    pub(super) fn embedding_chunks(&self) -> Result<Vec<EmbeddingChunk>> {
        let sources = self.index()?.chunk_sources()?;
        let mut out = Vec::with_capacity(sources.len());
        // Messages come in insertion order, which is each conversation's order.
        let mut last_message: HashMap<String, String> = HashMap::new();
        for (key, kind, text) in sources {
            let pieces = if kind == "message" {
                let conversation = key.split_once('/').map_or(key.as_str(), |(c, _)| c).to_string();
                let pieces = embedding_pieces(last_message.get(&conversation).map(String::as_str), &text);
                last_message.insert(conversation, text);
                pieces
            } else {
                split_text(&text)
            };
            for (seq, text) in pieces.into_iter().enumerate() {
                out.push(EmbeddingChunk {
                    key: key.clone(),
                    kind,
                    seq: seq as i64,
                    text,
                });
            }
        }
        Ok(out)
    }

    /// The chunks of messages and moments whose text is not in the chunk catalog as it is now
    /// (with each new CID's text), and the catalog's keys whose record is gone.
    pub(super) fn memory_to_embed(&self) -> Result<MemoryToEmbed> {
        let chunks = self.embedding_chunks()?;
        let catalog = self.index()?.chunk_map()?;
        let mut by_key: HashMap<&str, Vec<&EmbeddingChunk>> = HashMap::new();
        for chunk in &chunks {
            by_key.entry(chunk.key.as_str()).or_default().push(chunk);
        }
        let mut rows = Vec::new();
        let mut texts = HashMap::new();
        for (key, pieces) in &by_key {
            let current: Vec<String> = pieces.iter().map(|c| cid(&c.text)).collect();
            let same = current
                .iter()
                .zip(pieces)
                .all(|(c, piece)| catalog.get(&(key.to_string(), piece.seq)) == Some(c))
                && !catalog.contains_key(&(key.to_string(), pieces.len() as i64));
            if same {
                continue;
            }
            for (c, piece) in current.into_iter().zip(pieces) {
                texts.entry(c.clone()).or_insert_with(|| piece.text.clone());
                rows.push(piece.row(c));
            }
        }
        let mut gone: Vec<String> = catalog
            .keys()
            .filter(|(key, _)| !by_key.contains_key(key.as_str()))
            .map(|(key, _)| key.clone())
            .collect();
        gone.sort();
        gone.dedup();
        Ok(MemoryToEmbed { rows, texts, gone })
    }

    /// Messages and moments with text whose vector is not there yet (written since memory was
    /// last embedded, or while no model could load); `None` in server mode. Cheap: one lookup
    /// per record in the chunk catalog.
    pub(crate) fn memory_without_vectors(&self) -> Option<usize> {
        if !self.storage_is_local() {
            return None;
        }
        self.index().ok()?.memory_without_chunks().ok()
    }

    pub(crate) fn storage_is_local(&self) -> bool {
        self.settings().storage.mode == zblade_core::StorageMode::Local
    }
}
