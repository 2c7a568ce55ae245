//! `zblade moments extract`: moments (decisions, solutions, patterns) found in conversations
//! and written as moment artifacts. Without a compressor model this is the deterministic
//! extractor of `zblade-context::moments`; results are cached by the hash of their input, so a
//! conversation that has not changed is not read twice.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zblade_core::{Error, Moment, MomentType, Result, fsio};

use crate::Project;

/// Bumped when the extractor changes what it finds, so cached results are redone.
const EXTRACTOR: &str = "extractive-1";

/// What extraction did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExtractReport {
    /// Which extractor ran.
    pub extractor: String,
    /// Conversations looked at.
    pub conversations: usize,
    /// Of those, unchanged since their last extraction (cache hits).
    pub unchanged: usize,
    /// Moment artifacts written (new or updated).
    pub written: Vec<String>,
}

/// The cache entry of one conversation: the input hash and the moments it gave.
#[derive(Debug, Serialize, Deserialize)]
struct CacheEntry {
    input: String,
    moments: Vec<String>,
}

impl Project {
    /// Extracts moments from one conversation, or from every conversation when `conversation`
    /// is `None`. Moment ids are derived from their source, so extracting again updates the
    /// same artifacts instead of adding copies.
    pub fn extract_moments(&mut self, conversation: Option<&str>) -> Result<ExtractReport> {
        let ids: Vec<String> = match conversation {
            Some(id) => vec![id.to_string()],
            None => {
                let mut all = Vec::new();
                loop {
                    let page = self.list_conversations(500, all.len())?;
                    if page.is_empty() {
                        break;
                    }
                    all.extend(page.into_iter().map(|c| c.id));
                }
                all
            }
        };
        let cache_dir = self.layout.cache_dir().join("moments");
        let mut report = ExtractReport {
            extractor: EXTRACTOR.into(),
            ..ExtractReport::default()
        };
        for id in ids {
            let conv = self.load_conversation(&id)?;
            let bytes = serde_json::to_vec(&conv).expect("a conversation serialises");
            let input = hex::encode(Sha256::new().chain_update(EXTRACTOR).chain_update(&bytes).finalize());
            let cache_path = cache_dir.join(format!("{id}.json"));
            report.conversations += 1;
            // A corrupt or stale cache entry is ignored and rewritten.
            let cached: Option<CacheEntry> = std::fs::read(&cache_path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            if cached.is_some_and(|c| c.input == input) {
                report.unchanged += 1;
                continue;
            }
            let messages: Vec<(&str, &str, &str)> = conv
                .messages
                .iter()
                .map(|m| (m.id.as_str(), m.role.as_str(), m.content.as_str()))
                .collect();
            let found = zblade_context::moments::extract(&messages);
            let mut moments = Vec::with_capacity(found.len());
            for m in &found {
                let source = format!("{id}/{}/{}", m.message_id, m.content);
                let digest = hex::encode(Sha256::digest(source.as_bytes()));
                let references = conv
                    .messages
                    .iter()
                    .find(|msg| msg.id == m.message_id)
                    .map(|msg| msg.code_references.clone())
                    .unwrap_or_default();
                let moment = Moment {
                    version: String::new(),
                    id: format!("moment_x{}", &digest[..24]),
                    conversation_id: Some(id.clone()),
                    kind: match m.moment_type {
                        "decision" => MomentType::Decision,
                        "solution" => MomentType::Solution,
                        "pattern" => MomentType::Pattern,
                        _ => MomentType::Context,
                    },
                    content: m.content.clone(),
                    context: m.context.clone(),
                    code_references: references,
                    tags: m.tags.clone(),
                    created_at: None,
                    relevance_score: 0.5,
                    extra: Default::default(),
                };
                moments.push((moment, format!("extracted from {id}")));
            }
            let written: Vec<String> = self.add_moments(moments)?.into_iter().map(|o| o.id).collect();
            let entry = CacheEntry {
                input,
                moments: written.clone(),
            };
            std::fs::create_dir_all(&cache_dir).map_err(|e| Error::io(&cache_dir, e))?;
            fsio::write_atomic(
                &cache_path,
                &serde_json::to_vec_pretty(&entry).expect("a cache entry serialises"),
            )?;
            report.written.extend(written);
        }
        Ok(report)
    }
}
