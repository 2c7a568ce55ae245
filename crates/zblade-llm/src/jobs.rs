//! The compressor's three jobs: what is asked of the model, the grammar its answer must match,
//! and the checks its answer must pass before zblade keeps it. A failed check is an
//! [`LlmError::BadOutput`]; the engine retries once and then falls back to the extractive
//! compressor, so a confused model never blocks anything.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Generation, LlmError, Request, Stop};

/// Longest text field in a moment, in characters. Bounds in the grammar keep a model that
/// rambles from running until the timeout: the output has a known maximum size.
pub const MOMENT_CONTENT_CHARS: usize = 200;
/// Longest `context` field of a moment.
pub const MOMENT_CONTEXT_CHARS: usize = 120;
/// Most moments per extraction.
pub const MAX_MOMENTS: usize = 5;

/// The GBNF grammar of a moment extraction answer:
/// `{"moments": [{"type", "content", "context", "tags", "files"}, ...]}`.
pub fn moments_grammar() -> String {
    let more_moments = MAX_MOMENTS - 1;
    format!(
        r#"root ::= "{{" ws "\"moments\":" ws "[" ws ( moment ( "," ws moment ){{0,{more_moments}}} )? ws "]" ws "}}"
moment ::= "{{" ws "\"type\":" ws kind "," ws "\"content\":" ws content "," ws "\"context\":" ws context "," ws "\"tags\":" ws "[" ( tag ( "," ws tag ){{0,2}} )? "]" "," ws "\"files\":" ws "[" ( path ( "," ws path ){{0,2}} )? "]" ws "}}"
kind ::= "\"decision\"" | "\"pattern\"" | "\"solution\"" | "\"context\""
content ::= "\"" char{{1,{MOMENT_CONTENT_CHARS}}} "\""
context ::= "\"" char{{0,{MOMENT_CONTEXT_CHARS}}} "\""
tag ::= "\"" [a-z0-9] [a-z0-9-]{{0,19}} "\""
path ::= "\"" [A-Za-z0-9_./-]{{1,80}} "\""
char ::= [^"\\\x00-\x1f] | "\\" ["\\/nt]
ws ::= [ \n]{{0,2}}
"#
    )
}

/// Output tokens a moment answer can need at most (a byte per token, the worst case).
pub fn moments_max_tokens() -> u32 {
    let per_moment = 90 + MOMENT_CONTENT_CHARS + MOMENT_CONTEXT_CHARS + 3 * 24 + 3 * 84;
    (20 + MAX_MOMENTS * per_moment) as u32
}

/// One moment as the model returned it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedMoment {
    /// `decision`, `pattern`, `solution` or `context`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What was decided, found or agreed, in one or two sentences.
    pub content: String,
    /// Why, or under which circumstances.
    pub context: String,
    /// Short lowercase tags.
    pub tags: Vec<String>,
    /// Project files the moment is about, relative to the project root.
    pub files: Vec<String>,
}

#[derive(Deserialize)]
struct MomentsAnswer {
    moments: Vec<ExtractedMoment>,
}

/// The request that extracts moments from `transcript` (lines of `role: text`).
pub fn moments_request(transcript: &str, timeout: Duration) -> Request {
    let system = "You read a conversation between a developer and a coding assistant and list \
        its lasting moments: decisions (what was chosen and why), solutions (a problem and its \
        fix), patterns (a convention to follow) and context (facts about the project). Quote \
        file paths, numbers and names exactly. Answer with JSON only. If there is nothing \
        worth keeping, answer {\"moments\": []}.";
    Request {
        grammar: Some(moments_grammar()),
        temperature: 0.0,
        seed: 0,
        timeout,
        ..Request::new(system, format!("Conversation:\n{transcript}"), moments_max_tokens())
    }
}

/// Parses and checks a moment answer: it must be complete, valid JSON of the grammar's shape,
/// and every moment must say something.
pub fn parse_moments(generation: &Generation) -> Result<Vec<ExtractedMoment>, LlmError> {
    if generation.stop == Stop::MaxTokens {
        return Err(LlmError::BadOutput(format!(
            "the answer was cut off at {} tokens",
            generation.generated_tokens
        )));
    }
    let answer: MomentsAnswer = serde_json::from_str(generation.text.trim())
        .map_err(|e| LlmError::BadOutput(format!("the answer is not the JSON asked for ({e})")))?;
    let mut out = Vec::with_capacity(answer.moments.len());
    for mut moment in answer.moments {
        moment.content = moment.content.trim().to_string();
        moment.context = moment.context.trim().to_string();
        if moment.content.is_empty() {
            continue;
        }
        if !matches!(moment.kind.as_str(), "decision" | "pattern" | "solution" | "context") {
            return Err(LlmError::BadOutput(format!("unknown moment type {:?}", moment.kind)));
        }
        moment.tags.retain(|t| !t.is_empty());
        moment
            .files
            .retain(|f| !f.is_empty() && !f.starts_with('/') && !f.split('/').any(|p| p == ".."));
        out.push(moment);
    }
    Ok(out)
}

/// The request that summarises a conversation in at most about `max_tokens` tokens.
pub fn summary_request(transcript: &str, max_tokens: u32, timeout: Duration) -> Request {
    let system = "You summarise a conversation between a developer and a coding assistant so it \
        can be recalled later. State the goal, what was decided and why, what was changed, and \
        what is still open. Keep file paths, function names, numbers and error messages \
        exactly as written. Plain sentences, no preamble.";
    Request {
        timeout,
        ..Request::new(system, format!("Conversation:\n{transcript}"), max_tokens)
    }
}

/// The request that shrinks `text` to about `max_tokens` tokens, keeping what matters for
/// `query`.
pub fn shrink_request(text: &str, query: &str, max_tokens: u32, timeout: Duration) -> Request {
    let system = "You shorten text for a coding assistant's context window. Keep what helps \
        answer the question: file paths, identifiers, numbers, decisions and their reasons, \
        verbatim. Drop pleasantries and repetition. Answer with the shortened text only.";
    Request {
        timeout,
        ..Request::new(system, format!("Question: {query}\n\nText:\n{text}"), max_tokens)
    }
}

/// Checks a free-text answer (summary or shrink): something must be left after trimming.
pub fn parse_text(generation: &Generation) -> Result<String, LlmError> {
    let text = generation.text.trim();
    if text.is_empty() {
        return Err(LlmError::BadOutput("the answer is empty".into()));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LlamaTimings;

    fn answer(text: &str, stop: Stop) -> Generation {
        Generation {
            text: text.into(),
            stop,
            prompt_tokens: 1,
            generated_tokens: 9,
            prompt_ms: 0.0,
            generation_ms: 0.0,
            llama: LlamaTimings::default(),
        }
    }

    #[test]
    fn good_answers_parse_and_bad_ones_say_why() {
        let good = r#"{"moments": [{"type": "decision", "content": " Use JWT with 15 min expiry ", "context": "stateless", "tags": ["auth"], "files": ["src/auth.rs", "../etc/passwd", "/abs"]}, {"type":"pattern","content":"  ","context":"","tags":[],"files":[]}]}"#;
        let moments = parse_moments(&answer(good, Stop::End)).unwrap();
        assert_eq!(moments.len(), 1, "empty moments are skipped");
        assert_eq!(moments[0].content, "Use JWT with 15 min expiry");
        assert_eq!(
            moments[0].files,
            vec!["src/auth.rs"],
            "paths outside the project are dropped"
        );

        let cut = parse_moments(&answer(r#"{"moments": [{"type""#, Stop::MaxTokens)).unwrap_err();
        assert!(cut.to_string().contains("cut off"), "{cut}");
        let broken = parse_moments(&answer("I think the answer is yes", Stop::End)).unwrap_err();
        assert!(broken.to_string().contains("not the JSON"), "{broken}");
        let odd = r#"{"moments":[{"type":"rumour","content":"x","context":"","tags":[],"files":[]}]}"#;
        assert!(parse_moments(&answer(odd, Stop::End)).is_err());
        assert!(parse_text(&answer("  \n", Stop::End)).is_err());
        assert_eq!(parse_text(&answer(" kept \n", Stop::End)).unwrap(), "kept");
    }

    #[test]
    fn the_moment_grammar_bounds_the_answer() {
        let grammar = moments_grammar();
        assert!(
            grammar.contains("char{1,200}") && grammar.contains("){0,4}"),
            "{grammar}"
        );
        assert!(moments_max_tokens() < 4096, "{}", moments_max_tokens());
    }
}
