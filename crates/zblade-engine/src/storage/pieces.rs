//! What server mode sends beside a record so that the sync server searches it as local search
//! does: its messages (or the moment) cut into pieces and embedded exactly as the local index
//! embeds them (`zblade_search::chunk`: a message's first piece led by the end of the message
//! before it), by the project's model. The server fuses these vectors with its keyword search.
//!
//! Vectors are looked up by the content id of their text in the folder's vector table
//! (`.zblade/vectors`, the local store's, which server mode does not otherwise use) and added
//! there, so a conversation sent again after each new turn embeds only its new pieces, and a
//! project moved to the server sends the vectors local search already had.

use zblade_core::{Conversation, Moment, Result, artifact};
use zblade_search::VectorStore;
use zblade_search::chunk::{cid, embedding_pieces, split_text};
use zblade_sync::Kind;
use zblade_sync::{EmbeddingModel, PieceVector, VectorsUpload};

use crate::parts::Parts;
use crate::semantic::search_error;

/// Pieces embedded per call of the model.
const EMBED_BATCH: usize = 64;

/// One piece to embed: its message (empty for a moment), its place in the message, its text.
type Piece = (String, u32, String);

/// The vectors of a conversation's messages; `None` when this machine cannot embed (no model
/// or runtime: the server then finds the conversation by keywords only).
pub(crate) fn conversation_vectors(
    parts: &Parts,
    conversation: &Conversation,
    bytes: &[u8],
) -> Result<Option<VectorsUpload>> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut previous: Option<&str> = None;
    for message in &conversation.messages {
        // The server keeps the first of messages that share an id.
        if !seen.contains(&message.id.as_str()) {
            seen.push(&message.id);
            for (seq, text) in embedding_pieces(previous, &message.content).into_iter().enumerate() {
                pieces.push((message.id.clone(), seq as u32, text));
            }
        }
        previous = Some(&message.content);
    }
    upload(parts, pieces, bytes)
}

/// The vectors of a moment: its content and context, as the local index embeds a moment.
pub(crate) fn moment_vectors(parts: &Parts, moment: &Moment, bytes: &[u8]) -> Result<Option<VectorsUpload>> {
    let text = match moment.context.as_deref().filter(|c| !c.is_empty()) {
        Some(context) => format!("{}\n\n{context}", moment.content),
        None => moment.content.clone(),
    };
    let pieces = split_text(&text)
        .into_iter()
        .enumerate()
        .map(|(seq, text)| (String::new(), seq as u32, text))
        .collect();
    upload(parts, pieces, bytes)
}

/// The vectors of an artifact's `bytes` of `kind` (see [`conversation_vectors`] and
/// [`moment_vectors`]).
pub(crate) fn record_vectors(parts: &Parts, kind: Kind, bytes: &[u8]) -> Result<Option<VectorsUpload>> {
    match kind {
        Kind::Conversation => {
            let conversation = artifact::parse_conversation(bytes, "conversation")?;
            conversation_vectors(parts, &conversation, bytes)
        }
        Kind::Moment => moment_vectors(parts, &artifact::parse_moment(bytes, "moment")?, bytes),
    }
}

/// Embeds `pieces` (the cached ones read back) into an upload for the record `bytes`.
fn upload(parts: &Parts, pieces: Vec<Piece>, bytes: &[u8]) -> Result<Option<VectorsUpload>> {
    let Ok(embedder) = parts.embedder() else {
        return Ok(None);
    };
    let (model_id, dims) = {
        let model = embedder.lock().expect("embedder lock");
        (parts.model_id(), model.dim())
    };
    let cache_dir = parts.layout.vectors_dir();
    let cache = VectorStore::open(&cache_dir, &model_id, dims).map_err(search_error)?;
    let cids: Vec<String> = pieces.iter().map(|(_, _, text)| cid(text)).collect();
    let mut known = cache.vectors_of(&cids).map_err(search_error)?;
    let mut missing: Vec<(String, &str)> = Vec::new();
    for ((_, _, text), cid) in pieces.iter().zip(&cids) {
        if !known.contains_key(cid) && !missing.iter().any(|(c, _)| c == cid) {
            missing.push((cid.clone(), text));
        }
    }
    for batch in missing.chunks(EMBED_BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(_, text)| *text).collect();
        let vectors = embedder
            .lock()
            .expect("embedder lock")
            .embed(&texts)
            .map_err(search_error)?;
        let rows: Vec<(String, Vec<f32>)> = batch.iter().map(|(c, _)| c.clone()).zip(vectors).collect();
        cache.add(&rows).map_err(search_error)?;
        known.extend(rows);
    }
    let pieces = pieces
        .into_iter()
        .zip(&cids)
        .map(|((message, seq, _), cid)| PieceVector {
            message,
            seq,
            vector: known[cid].clone(),
        })
        .collect();
    Ok(Some(VectorsUpload {
        model: EmbeddingModel {
            id: model_id,
            dims: dims as u32,
        },
        record_hash: zblade_core::sha256_hex(bytes),
        pieces,
    }))
}
