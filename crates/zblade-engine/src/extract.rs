//! `zblade moments extract`: moments (decisions, solutions, patterns, context) found in
//! conversations and written as moment artifacts. With a compressor model configured, the
//! model reads the conversation in windows that fit its context and answers JSON constrained
//! by a grammar; without one (or when its answer is unusable twice) the deterministic
//! extractor of `zblade-context::moments` does it. Results are cached by the hash of their
//! input and extractor, so a conversation that has not changed is not read twice.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zblade_context::TokenCounter;
use zblade_core::{CodeReference, Conversation, Error, Moment, MomentType, Result, fsio};
use zblade_llm::Compressor;

use crate::compressor::ModelTokens;
use crate::project::Project;

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
    /// Fallbacks and other things worth knowing.
    pub notices: Vec<String>,
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
        let ids = self.conversation_ids(conversation)?;
        self.extract_moments_of(&ids)
    }

    /// Extracts moments from the conversations `ids` and writes them all in one batch (one
    /// lock, one directory fsync, one index transaction): an import hands over hundreds.
    pub(crate) fn extract_moments_of(&mut self, ids: &[String]) -> Result<ExtractReport> {
        let cache_dir = self.moments_cache_dir();
        let model = self.local_compressor();
        let extractor = match &model {
            Ok(compressor) => Project::compressor_id(compressor),
            Err(_) => EXTRACTOR.to_string(),
        };
        let mut report = ExtractReport {
            extractor: extractor.clone(),
            ..ExtractReport::default()
        };
        report.notices.extend(self.compressor_notice());
        let mut extracted = Vec::new();
        for id in ids {
            let conv = self.load_conversation(id)?;
            report.conversations += 1;
            let input = input_hash(&extractor, &conv);
            if cache_hit(&cache_dir, id, &input) {
                report.unchanged += 1;
                continue;
            }
            let moments = match &model {
                Ok(compressor) => {
                    let (moments, notices) = self.model_moments(compressor, &conv);
                    report.notices.extend(notices);
                    moments
                }
                Err(_) => extractive_moments(&conv, 0..conv.messages.len()),
            };
            extracted.push(Extracted {
                id: id.clone(),
                input,
                moments,
            });
        }
        self.write_extracted(&extracted, &mut report)?;
        Ok(report)
    }

    /// Where extraction remembers what it did per conversation.
    pub(crate) fn moments_cache_dir(&self) -> PathBuf {
        self.layout().cache_dir().join("moments")
    }

    /// Writes extracted moments in one batch, then their cache entries.
    pub(crate) fn write_extracted(&mut self, extracted: &[Extracted], report: &mut ExtractReport) -> Result<()> {
        if extracted.is_empty() {
            return Ok(());
        }
        let mut all: Vec<(Moment, String)> = extracted
            .iter()
            .flat_map(|e| {
                let source = format!("extracted from {}", e.id);
                e.moments.iter().map(move |m| (m.clone(), source.clone()))
            })
            .collect();
        // Extracting again rewrites a moment; what people decided about it stays.
        if self.storage.on_this_machine() {
            let ids: Vec<&str> = all.iter().map(|(m, _)| m.id.as_str()).collect();
            let states = self.index()?.decision_states(&ids)?;
            for (moment, _) in &mut all {
                if let Some(state) = states.get(&moment.id) {
                    moment.decision = Some(state.decision.clone());
                }
            }
        }
        let mut written = self.store_moments(all)?.into_iter().map(|o| o.id);
        // Cache entries only after their moments are written: a crash in between extracts
        // those conversations again, which rewrites the same moments.
        let cache_dir = self.moments_cache_dir();
        let mut entries = Vec::with_capacity(extracted.len());
        for e in extracted {
            let moments: Vec<String> = written.by_ref().take(e.moments.len()).collect();
            report.written.extend(moments.iter().cloned());
            let entry = CacheEntry {
                input: e.input.clone(),
                moments,
            };
            entries.push((
                cache_dir.join(format!("{}.json", e.id)),
                serde_json::to_vec_pretty(&entry).expect("a cache entry serialises"),
            ));
        }
        std::fs::create_dir_all(&cache_dir).map_err(|e| Error::io(&cache_dir, e))?;
        fsio::write_atomic_batch(&entries)
    }

    /// Moments the model finds in `conv`, window by window; a window whose answer is unusable
    /// twice is extracted deterministically instead, with a notice.
    fn model_moments(&self, compressor: &Compressor, conv: &Conversation) -> (Vec<Moment>, Vec<String>) {
        let counter = ModelTokens(compressor);
        let lines = crate::summaries::transcript_lines(conv);
        // Room for the instructions and the longest answer the grammar allows.
        let room = (compressor.info().context_tokens as usize)
            .saturating_sub(zblade_llm::jobs::moments_max_tokens() as usize + 400)
            .max(200);
        let mut moments = Vec::new();
        let mut notices = Vec::new();
        let mut start = 0;
        while start < lines.len() {
            // A window: messages from `start` while they fit (at least one, cut if alone).
            let mut end = start;
            let mut used = 0;
            while end < lines.len() {
                let tokens = counter.count(&lines[end]) + 1;
                if end > start && used + tokens > room {
                    break;
                }
                used += tokens;
                end += 1;
            }
            let transcript = zblade_context::extractive::truncate(&lines[start..end].join("\n"), room, &counter);
            let request = zblade_llm::jobs::moments_request(&transcript, self.job_timeout());
            match self.run_model_job(compressor, "moments", request, zblade_llm::jobs::parse_moments) {
                Ok((found, _)) => {
                    for m in found {
                        moments.push(self.moment_from_model(conv, start..end, m));
                    }
                }
                Err(e) => {
                    notices.push(format!(
                        "{}: messages {}-{}: the model's answer was unusable twice ({e}); extracted deterministically",
                        conv.conversation_id,
                        start + 1,
                        end
                    ));
                    moments.extend(extractive_moments(conv, start..end));
                }
            }
            start = end;
        }
        (moments, notices)
    }

    /// A moment artifact from the model's answer. Files it names become code references:
    /// the references the window's messages already hold for that file, else the whole file
    /// when it exists in the working tree; names of files that do not exist are dropped.
    fn moment_from_model(
        &self,
        conv: &Conversation,
        window: std::ops::Range<usize>,
        found: zblade_llm::jobs::ExtractedMoment,
    ) -> Moment {
        let mut references: Vec<CodeReference> = Vec::new();
        let guard = self.parts.path_guard();
        for file in &found.files {
            let held: Vec<&CodeReference> = conv.messages[window.clone()]
                .iter()
                .flat_map(|m| &m.code_references)
                .filter(|r| &r.file == file)
                .collect();
            if !held.is_empty() {
                references.extend(held.into_iter().cloned());
                continue;
            }
            // The model's output names the file: read it only through the validated reader
            // (inside the project, no symlink escape, no secrets or tool folders, size cap).
            let Ok(normal) = zblade_core::paths::normalize_relative(file) else {
                continue;
            };
            if let Ok(source) = zblade_refs::read_project_file_guarded(self.layout().root(), &normal, &guard) {
                let lines = source.line_count().max(1) as u32;
                references.push(CodeReference {
                    file: normal,
                    lines: [1, lines],
                    git_hash: None,
                    commit: None,
                    context: None,
                    purpose: Some(found.content.chars().take(120).collect()),
                    diff: None,
                    anchor: None,
                    extra: Default::default(),
                });
            }
        }
        let id = &conv.conversation_id;
        let source = format!("{id}/{}-{}/{}", window.start, window.end, found.content);
        let digest = hex::encode(Sha256::digest(source.as_bytes()));
        Moment {
            version: String::new(),
            id: format!("moment_x{}", &digest[..24]),
            conversation_id: Some(id.clone()),
            kind: moment_type(&found.kind),
            content: found.content,
            context: (!found.context.is_empty()).then_some(found.context),
            code_references: references,
            tags: found.tags,
            created_at: None,
            relevance_score: 0.5,
            decision: None,
            extra: Default::default(),
        }
    }
}

fn moment_type(kind: &str) -> MomentType {
    match kind {
        "decision" => MomentType::Decision,
        "solution" => MomentType::Solution,
        "pattern" => MomentType::Pattern,
        _ => MomentType::Context,
    }
}

/// One conversation's moments, extracted and not written yet.
pub(crate) struct Extracted {
    pub(crate) id: String,
    /// The hash its cache entry records.
    input: String,
    moments: Vec<Moment>,
}

/// The deterministic extractor on a conversation that was just stored; `None` when its cache
/// entry says it was extracted from exactly this before. Needs no [`Project`], so an import
/// runs it on a second thread while it writes the next conversations.
pub(crate) fn extract_without_model(cache_dir: &Path, conv: &Conversation) -> Option<Extracted> {
    let input = input_hash(EXTRACTOR, conv);
    if cache_hit(cache_dir, &conv.conversation_id, &input) {
        return None;
    }
    Some(Extracted {
        id: conv.conversation_id.clone(),
        input,
        moments: extractive_moments(conv, 0..conv.messages.len()),
    })
}

/// What a cache entry is keyed by: the extractor and the conversation as stored.
fn input_hash(extractor: &str, conv: &Conversation) -> String {
    /// Feeds serialized bytes straight into the hash: the same digest as hashing
    /// `serde_json::to_vec(conv)`, without holding a second copy of the conversation.
    struct HashWriter(Sha256);
    impl std::io::Write for HashWriter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hasher = HashWriter(Sha256::new().chain_update(extractor));
    serde_json::to_writer(&mut hasher, conv).expect("a conversation serialises");
    hex::encode(hasher.0.finalize())
}

/// Whether `id` was extracted from `input` before. A corrupt or stale cache entry is ignored
/// (and rewritten).
fn cache_hit(cache_dir: &Path, id: &str, input: &str) -> bool {
    std::fs::read(cache_dir.join(format!("{id}.json")))
        .ok()
        .and_then(|b| serde_json::from_slice::<CacheEntry>(&b).ok())
        .is_some_and(|c| c.input == input)
}

/// Moments the deterministic extractor finds in messages `range` of `conv`.
fn extractive_moments(conv: &Conversation, range: std::ops::Range<usize>) -> Vec<Moment> {
    let id = &conv.conversation_id;
    let window = &conv.messages[range];
    let messages: Vec<(&str, &str, &str)> = window
        .iter()
        .map(|m| (m.id.as_str(), m.role.as_str(), m.content.as_str()))
        .collect();
    zblade_context::moments::extract(&messages)
        .into_iter()
        .map(|m| {
            let source = format!("{id}/{}/{}", m.message_id, m.content);
            let digest = hex::encode(Sha256::digest(source.as_bytes()));
            let references = window
                .iter()
                .find(|msg| msg.id == m.message_id)
                .map(|msg| msg.code_references.clone())
                .unwrap_or_default();
            Moment {
                version: String::new(),
                id: format!("moment_x{}", &digest[..24]),
                conversation_id: Some(id.clone()),
                kind: moment_type(m.moment_type),
                content: m.content,
                context: m.context,
                code_references: references,
                tags: m.tags,
                created_at: None,
                relevance_score: 0.5,
                decision: None,
                extra: Default::default(),
            }
        })
        .collect()
}
