//! A context result's receipt as text: what was packed, what was left out and why, how the
//! relevance gate read the query. Rendered here, not in a face, so `zblade context --receipt`
//! prints the same lines whether this process assembled the pack or the warm engine did.

use std::fmt::Write;

use zblade_core::text::one_line;

use crate::context::ContextResult;

/// The receipt's lines (each ends in a newline), after a `---` line.
pub fn receipt_text(result: &ContextResult) -> String {
    let pack = &result.pack;
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "---");
    let _ = writeln!(
        out,
        "{} of {} tokens ({}), {} of {} candidates packed, in {:.1} ms; search: {}",
        pack.tokens,
        pack.budget,
        pack.tokenizer,
        pack.entries.len(),
        pack.receipt.len(),
        result.elapsed_ms,
        result.mode.map_or("none", |m| m.as_str())
    );
    if let Some(gate) = &pack.gate {
        let evidence = &gate.evidence;
        let part = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        let names = if evidence.unknown_names.is_empty() {
            String::new()
        } else {
            format!("; names nothing mentions: {}", evidence.unknown_names.join(", "))
        };
        let _ = writeln!(
            out,
            "relevance gate {} (nearest chunk {}, {} spreads above unrelated prompts; known words {}, best cover {}{names})",
            gate.summary(),
            part(evidence.semantic_best),
            part(evidence.semantic_margin()),
            part(evidence.known_words),
            part(evidence.best_cover),
        );
    }
    for l in &pack.receipt {
        let mark = if l.included { "+" } else { "-" };
        let score = l
            .score
            .as_ref()
            .map(|s| {
                format!(
                    " score {:.3} (search {:.2} × recency {:.2} × affinity {:.2} × type {:.2})",
                    s.relevance, s.retrieval, s.recency, s.affinity, s.type_weight
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{mark} {:>5} tok  {:<9} {}  {}{score}",
            if l.included { l.tokens } else { l.full_tokens },
            l.source.as_str(),
            one_line(&l.label, 60),
            l.reason
        );
    }
    out
}
