//! What server mode sends beside a record so that the sync server searches it as local search
//! does: its messages (or the moment) cut into pieces and embedded exactly as the local index
//! embeds them (`zblade_search::chunk`: a message's first piece led by the end of the message
//! before it), by the project's model. The server fuses these vectors with its keyword search.
//!
//! Vectors are looked up by the content id of their text in the folder's vector table
//! (`.zblade/vectors`, the local store's, which server mode does not otherwise use) and added
//! there, so a conversation sent again after each new turn embeds only its new pieces, and a
//! project moved to the server sends the vectors local search already had. Records are
//! embedded in batches ([`record_vectors`]): one lookup and one write for many records.

use std::collections::HashMap;

use zblade_core::{Conversation, Moment, Result, artifact};
use zblade_search::VectorStore;
use zblade_search::chunk::{cid, embedding_pieces, split_text};
use zblade_sync::{EmbeddingModel, Kind, PieceVector, VectorsUpload};

use crate::parts::Parts;
use crate::semantic::search_error;

/// Pieces embedded per call of the model.
const EMBED_BATCH: usize = 64;

/// One piece to embed: its message (empty for a moment), its place in the message, its text.
type Piece = (String, u32, String);

/// A conversation's pieces: each message's, the server's first of messages sharing an id.
fn conversation_pieces(conversation: &Conversation) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut previous: Option<&str> = None;
    for message in &conversation.messages {
        if !seen.contains(&message.id.as_str()) {
            seen.push(&message.id);
            for (seq, text) in embedding_pieces(previous, &message.content).into_iter().enumerate() {
                pieces.push((message.id.clone(), seq as u32, text));
            }
        }
        previous = Some(&message.content);
    }
    pieces
}

/// A moment's pieces: its content and context, as the local index embeds a moment.
fn moment_pieces(moment: &Moment) -> Vec<Piece> {
    let text = match moment.context.as_deref().filter(|c| !c.is_empty()) {
        Some(context) => format!("{}\n\n{context}", moment.content),
        None => moment.content.clone(),
    };
    split_text(&text)
        .into_iter()
        .enumerate()
        .map(|(seq, text)| (String::new(), seq as u32, text))
        .collect()
}

/// The vectors of artifacts (`(kind, bytes)` each), in their order; `None` for each when this
/// machine cannot embed (no model or runtime: the server then finds them by keywords only).
pub(crate) fn record_vectors(parts: &Parts, records: &[(Kind, &[u8])]) -> Result<Vec<Option<VectorsUpload>>> {
    let mut batch = Vec::with_capacity(records.len());
    for (kind, bytes) in records {
        let pieces = match kind {
            Kind::Conversation => conversation_pieces(&artifact::parse_conversation(bytes, "conversation")?),
            Kind::Moment => moment_pieces(&artifact::parse_moment(bytes, "moment")?),
        };
        batch.push((pieces, *bytes));
    }
    uploads(parts, batch)
}

/// Embeds every record's pieces — those the vector table has are read back, the others
/// embedded and added to it — into one upload per record.
fn uploads(parts: &Parts, records: Vec<(Vec<Piece>, &[u8])>) -> Result<Vec<Option<VectorsUpload>>> {
    let Ok(embedder) = parts.semantic().embedder() else {
        return Ok(records.iter().map(|_| None).collect());
    };
    let model = EmbeddingModel {
        id: parts.semantic().model_id(),
        dims: embedder.lock().expect("embedder lock").dim() as u32,
    };
    let store = VectorStore::open(&parts.layout.vectors_dir(), &model.id, model.dims as usize).map_err(search_error)?;
    // Each piece's content id, computed once.
    let cids: Vec<Vec<String>> = records
        .iter()
        .map(|(pieces, _)| pieces.iter().map(|(_, _, text)| cid(text)).collect())
        .collect();
    let mut distinct: Vec<String> = cids.iter().flatten().cloned().collect();
    distinct.sort();
    distinct.dedup();
    let mut known: HashMap<String, Vec<f32>> = store.vectors_of(&distinct).map_err(search_error)?;
    let mut missing: Vec<(String, &str)> = Vec::new();
    let mut queued = std::collections::HashSet::new();
    for ((pieces, _), ids) in records.iter().zip(&cids) {
        for ((_, _, text), id) in pieces.iter().zip(ids) {
            if !known.contains_key(id) && queued.insert(id.as_str()) {
                missing.push((id.clone(), text));
            }
        }
    }
    let mut added: Vec<(String, Vec<f32>)> = Vec::with_capacity(missing.len());
    for batch in missing.chunks(EMBED_BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(_, text)| *text).collect();
        let vectors = embedder
            .lock()
            .expect("embedder lock")
            .embed(&texts)
            .map_err(search_error)?;
        added.extend(batch.iter().map(|(c, _)| c.clone()).zip(vectors));
    }
    store.add(&added).map_err(search_error)?;
    known.extend(added);
    Ok(records
        .into_iter()
        .zip(cids)
        .map(|((pieces, bytes), ids)| {
            let pieces = pieces
                .into_iter()
                .zip(ids)
                .map(|((message, seq, _), id)| PieceVector {
                    message,
                    seq,
                    vector: known[&id].clone(),
                })
                .collect();
            Some(VectorsUpload {
                model: model.clone(),
                record_hash: zblade_core::sha256_hex(bytes),
                pieces,
            })
        })
        .collect())
}
