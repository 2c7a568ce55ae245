//! What hydrating a search's message and moment hits reads from the index, kept per hit so
//! that it is read once: a hybrid search reads its keyword hits' ahead, while its vector half
//! runs (`semantic/hybrid.rs`); hydrating the fused hits (`search.rs`) and gathering a context's
//! candidates (`storage/local.rs`) read only what is missing.

use std::collections::HashMap;

use zblade_core::Result;
use zblade_index::{HitKind, Index, MemoryText, SearchHit, StoredReference, hit_key};

/// What hydrating message and moment hits reads from the index, by hit key: the text, the
/// stored code references, and for a message the other conversations sharing it. A hybrid
/// search reads its keyword hits' while its vector half runs (SQLite's thread has nothing else
/// to do then); hydrating the fused hits and assembling a context read only the rest.
#[derive(Debug, Default)]
pub(crate) struct HitDetails {
    texts: HashMap<String, MemoryText>,
    /// Every key read has an entry, empty when it has no references (or its record is gone):
    /// the keys read are this map's.
    references: HashMap<String, Vec<StoredReference>>,
    sharing: HashMap<String, Vec<String>>,
}

impl HitDetails {
    /// Reads the details of the message and moment hits among `hits` not read yet. Nothing
    /// is kept from a read that fails: a key is either read whole or not at all.
    pub(crate) fn read(&mut self, index: &Index, hits: &[SearchHit]) -> Result<()> {
        let (mut keys, mut references, mut sharing) = (Vec::new(), Vec::new(), Vec::new());
        for hit in hits {
            let key = hit_key(hit);
            let message = match (hit.kind, &hit.conversation_id) {
                (HitKind::Message, Some(conv)) => Some((conv.as_str(), hit.id.as_str())),
                (HitKind::Moment, _) => None,
                _ => continue,
            };
            if self.is_read(&key) || keys.contains(&key) {
                continue;
            }
            references.push(index.references_of(&key)?);
            if let Some((conv, id)) = message {
                sharing.push((key.clone(), index.sharing_message(conv, id)?));
            }
            keys.push(key);
        }
        let texts = index.memory_texts(&keys)?;
        self.texts
            .extend(texts.into_iter().map(|text| (text.key.clone(), text)));
        self.sharing.extend(sharing);
        self.references.extend(keys.into_iter().zip(references));
        Ok(())
    }

    /// Whether the hit with this key was read (found or not).
    pub(crate) fn is_read(&self, key: &str) -> bool {
        self.references.contains_key(key)
    }

    /// The text of the message or moment with this hit key, when read and still there.
    pub(crate) fn text(&self, key: &str) -> Option<&MemoryText> {
        self.texts.get(key)
    }

    /// The stored code references of the hit with this key (none when not read).
    pub(crate) fn references(&self, key: &str) -> &[StoredReference] {
        self.references.get(key).map_or(&[], Vec::as_slice)
    }

    /// The other conversations sharing the message with this key (none when not read).
    pub(crate) fn sharing(&self, key: &str) -> &[String] {
        self.sharing.get(key).map_or(&[], Vec::as_slice)
    }
}
