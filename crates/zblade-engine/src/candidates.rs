//! Memory as context candidates: turns, moments and the code they reference, scored for
//! retrieval the same way whichever storage found them (local search or the sync server).

use std::time::Instant;

use chrono::{DateTime, Utc};
use zblade_context::{Candidate, Item, Source};
use zblade_index::{HitKind, MemoryText};
use zblade_search::chunk::cid;

use crate::refs::ReferenceReport;

/// Milliseconds since `started`, for the timings context reports.
pub(crate) fn millis_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

pub(crate) fn memory_candidate(text: &MemoryText, source: Source, retrieval: f64) -> Candidate {
    let item = match text.kind {
        HitKind::Moment => Item::Moment {
            id: text.id.clone(),
            moment_type: text.label.clone(),
            tags: text.tags.clone(),
        },
        _ => Item::Message {
            conversation: text.conversation_id.clone().unwrap_or_default(),
            title: text.title.clone().unwrap_or_default(),
            message: text.id.clone(),
            role: text.label.clone(),
        },
    };
    Candidate {
        key: text.key.clone(),
        cid: cid(&text.text),
        source,
        item,
        text: text.text.clone(),
        time: text.time,
        retrieval,
        author: text.author.clone(),
        standing: None,
    }
}

/// A code reference as a candidate: the code at its live location, with its status; a
/// reference whose code is gone says so instead of showing what used to be there.
pub(crate) fn reference_candidate(
    reference: &ReferenceReport,
    retrieval: f64,
    owner_time: Option<DateTime<Utc>>,
) -> Candidate {
    let location = reference.live.as_ref().unwrap_or(&reference.captured);
    let text = match (&reference.code, reference.status.as_str()) {
        (Some(lines), _) if !lines.is_empty() => lines.join("\n"),
        (_, status) => format!(
            "({} lines {}-{} are {status}: {})",
            location.file,
            location.lines[0],
            location.lines[1],
            reference.reason.as_deref().unwrap_or("not in the working tree")
        ),
    };
    let mut status = reference.status.to_string();
    if reference.drift.is_some() {
        // The file changed since the reference was captured (git drift).
        status.push_str(", drift");
    }
    Candidate {
        key: format!("ref:{}", reference.key),
        cid: cid(&text),
        source: Source::Retrieved,
        item: Item::Code {
            path: location.file.clone(),
            lines: (location.lines[0], location.lines[1]),
            status,
        },
        text,
        // The turn's time, so recency treats the code like the turn that points to it.
        time: owner_time,
        retrieval,
        author: None,
        standing: None,
    }
}

/// Scores of different modes live on different scales, and BM25 over a small project gives
/// common words near-zero weight: half the retrieval signal is the score relative to the best,
/// half the position in the results.
pub(crate) fn retrieval_scale(scores: impl Iterator<Item = f64>) -> impl Fn(f64, usize) -> f64 {
    let (top, count) = scores.fold((0.0f64, 0usize), |(top, n), s| (top.max(s), n + 1));
    let count = count.max(1) as f64;
    move |score, position| {
        let relative = if top > 0.0 { (score / top).clamp(0.0, 1.0) } else { 0.0 };
        0.5 * relative + 0.5 * (count - position as f64) / count
    }
}
