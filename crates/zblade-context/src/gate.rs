//! The relevance gate: retrieved memory enters a pack only when the evidence that the project
//! remembers something about the prompt clears a floor. A memory that always answers fills every
//! prompt with its nearest neighbours, related or not; one that knows when it knows nothing
//! costs no tokens and steers no model wrong.
//!
//! Two pieces of evidence, each on a scale that means the same in a project of ten
//! conversations and in one of ten thousand:
//! - **semantic**: how far the prompt's nearest embedded chunk is above what unrelated prompts
//!   reach *in this project* ([`NULL_PROBES`], measured once per project and model and kept), in
//!   units of their spread. A big project has close neighbours for anything; this asks whether
//!   the prompt's are closer than chance.
//! - **known words**: the share of the prompt's words that some turn, moment or code chunk
//!   holds, and the share that the best single retrieved text holds together. A question about
//!   a name, a tool or a file the project never mentions gets little from them, however similar
//!   its neighbours sound.
//!
//! They are combined by a logistic model into a relevance between 0 and 1 whose weights were
//! fitted on the LoCoMo tuning split (answerable questions against questions asked of another
//! conversation's project, and everyday coding prompts) and checked on conversations never tuned
//! on (docs/CONTEXT.md, "The relevance gate"; docs/BENCHMARKS.md).

use serde::Serialize;

/// The relevance below which retrieved memory is left out (`context.min_relevance` in settings
/// and `--min-relevance` override it; 0 turns the gate off).
pub const DEFAULT_MIN_RELEVANCE: f64 = 0.5;

/// Prompts about nothing a project is likely to remember, asked of every project to learn what
/// "unrelated" scores there. Varied on purpose (chores, trivia, writing, other trades); none is
/// in the gate benchmark's prompt sets.
pub const NULL_PROBES: [&str; 24] = [
    "what is the capital of australia",
    "convert 72 degrees fahrenheit to celsius",
    "write a haiku about autumn leaves",
    "how many ounces are in a cup",
    "translate good morning into portuguese",
    "explain how a refrigerator keeps food cold",
    "what year did the berlin wall fall",
    "give me a recipe for banana bread",
    "how do bees make honey",
    "what is the tallest mountain in africa",
    "suggest a name for a goldfish",
    "how long should i boil an egg",
    "who painted the starry night",
    "what does a notary public do",
    "how do i remove a wine stain from a carpet",
    "list the planets in order from the sun",
    "why is the sky blue",
    "what rhymes with orange",
    "how do you say thank you in japanese",
    "what is the plural of cactus",
    "recommend a board game for four players",
    "how fast can a cheetah run",
    "what is the boiling point of water on everest",
    "how do i fold a fitted sheet",
];

/// What unrelated prompts reach in one project: the mean and spread of the similarity of each
/// [`NULL_PROBES`] prompt to its nearest embedded chunk.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct NullScores {
    /// Mean nearest-chunk similarity of the probes.
    pub mean: f64,
    /// Their standard deviation (at least [`MIN_SPREAD`]).
    pub spread: f64,
}

/// A floor under the probes' spread: a tiny project whose probes all land on one chunk would
/// otherwise turn every small difference into a large one.
pub const MIN_SPREAD: f64 = 0.03;

impl NullScores {
    /// Mean and spread of `similarities` (`None` when there are none).
    pub fn of(similarities: &[f64]) -> Option<NullScores> {
        if similarities.is_empty() {
            return None;
        }
        let n = similarities.len() as f64;
        let mean = similarities.iter().sum::<f64>() / n;
        let variance = similarities.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
        Some(NullScores {
            mean,
            spread: variance.sqrt().max(MIN_SPREAD),
        })
    }
}

/// The evidence that a project remembers something about a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Evidence {
    /// Similarity of the prompt to its nearest embedded chunk (`None` without vectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_best: Option<f64>,
    /// What unrelated prompts reach in this project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_null: Option<NullScores>,
    /// The share of the prompt's words that the project holds somewhere (`None` when the
    /// prompt has no searchable word).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_words: Option<f64>,
    /// The share of the prompt's words that the best single retrieved text holds together
    /// (`None` when nothing was retrieved or the prompt has no searchable word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_cover: Option<f64>,
    /// Names in the prompt (see [`names`]) that nothing in the project mentions: "Caroline"
    /// asked of a memory about Jon and Gina, `README` of a memory about other things.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_names: Vec<String>,
    /// The search's first hit is a remembered turn, moment or commit, and the prompt's nearest
    /// memory by meaning too: both halves of hybrid search agree on what the prompt is about.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub top_agrees: bool,
}

impl Evidence {
    /// How many spreads the prompt's nearest chunk is above the unrelated prompts' mean.
    pub fn semantic_margin(&self) -> Option<f64> {
        let (best, null) = (self.semantic_best?, self.semantic_null?);
        Some((best - null.mean) / null.spread)
    }
}

/// The share of the prompt's words that some document holds (`terms`: word, whether a
/// document holds it). Every word counts the same: weighting by rarity in the project (IDF) would make
/// the same prompt score differently in a project of two conversations, where every word that
/// is there is "common" and every word that is not weighs most, and in one of thousands.
pub fn known_words(terms: &[(String, bool)]) -> Option<f64> {
    if terms.is_empty() {
        return None;
    }
    let known = terms.iter().filter(|(_, held)| *held).count();
    Some(known as f64 / terms.len() as f64)
}

/// Capitalised words that are dates, not names, besides the months (`query::MONTHS`): a memory
/// holds what happened, rarely the calendar words a question about it uses ("on 7 July 2023").
const CALENDAR_WORDS: [&str; 19] = [
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The words of `text` that name something: capitalised inside a sentence (`Caroline`,
/// `LanceDB`), written in capitals (`README`, `CI`), or identifiers (`parse_glob`,
/// `refreshToken`, `utf8`). Each comes as the lower-case words the index cuts it into
/// (`parse_glob` → `parse`, `glob`), possessives dropped. A sentence's first word counts only
/// when it could not be an ordinary word capitalised (an identifier or all capitals).
pub fn names(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let ends_sentence = raw.ends_with(['.', '?', '!', ':']);
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        let word = word
            .strip_suffix("'s")
            .or_else(|| word.strip_suffix("\u{2019}s"))
            .unwrap_or(word);
        let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
        let capitalised = word.chars().next().is_some_and(char::is_uppercase);
        let all_capitals = letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase());
        let identifier = word.contains('_')
            || word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase)
            || (word.chars().any(|c| c.is_ascii_digit()) && !letters.is_empty());
        let lower = word.to_lowercase();
        let calendar = CALENDAR_WORDS.contains(&lower.as_str()) || crate::query::MONTHS.contains(&lower.as_str());
        let is_name = !calendar && (identifier || all_capitals || (capitalised && !sentence_start));
        sentence_start = ends_sentence;
        if !is_name {
            continue;
        }
        let parts: Vec<String> = word
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| p.chars().count() > 1)
            .map(str::to_lowercase)
            .collect();
        if !parts.is_empty() && !out.contains(&parts) {
            out.push(parts);
        }
    }
    out
}

/// The names of `text` (see [`names`]) of which some word no document holds, by `terms`
/// (word, whether a document holds it); a name with a word that was not looked up is left
/// out.
pub fn unknown_names(text: &str, terms: &[(String, bool)]) -> Vec<String> {
    let held = |word: &str| terms.iter().find(|(w, _)| w == word).map(|(_, held)| *held);
    names(text)
        .into_iter()
        .filter(|parts| {
            let held: Option<Vec<bool>> = parts.iter().map(|p| held(p)).collect();
            held.is_some_and(|h| h.contains(&false))
        })
        .map(|parts| parts.join("_"))
        .collect()
}

/// English endings stripped before words are compared, longest first.
const ENDINGS: [&str; 15] = [
    "ings", "ing", "ions", "ion", "ies", "ied", "ers", "er", "edly", "ed", "es", "ly", "s", "e", "y",
];

/// A word without its ending, for comparing "hashed" with "hashing" and "rotation" with
/// "rotate": the index stems with Porter; this is its cheap cousin, for texts already in memory.
fn stem(word: &str) -> &str {
    ENDINGS
        .iter()
        .find_map(|ending| word.strip_suffix(ending).filter(|rest| rest.chars().count() >= 3))
        .unwrap_or(word)
}

/// The largest share of the prompt's words (`terms`) that one of `texts` holds together.
pub fn best_cover<'a>(terms: &[(String, bool)], texts: impl Iterator<Item = &'a str>) -> Option<f64> {
    if terms.is_empty() {
        return None;
    }
    let mut best: Option<f64> = None;
    for text in texts {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 1)
            .map(str::to_lowercase)
            .collect();
        let stems: std::collections::HashSet<&str> = words.iter().map(|w| stem(w)).collect();
        let held = terms.iter().filter(|(term, _)| stems.contains(stem(term))).count();
        let share = held as f64 / terms.len() as f64;
        best = Some(best.map_or(share, |b: f64| b.max(share)));
    }
    best
}

/// The fitted logistic model: relevance = σ(bias + semantic · margin + known · known words +
/// cover · best cover + unknown_name · [a name nothing mentions]). With vectors, all of them;
/// without (keyword search only), the words and names.
#[derive(Debug, Clone, Copy)]
struct Model {
    bias: f64,
    semantic: f64,
    known: f64,
    cover: f64,
    unknown_name: f64,
}

/// Fitted on the LoCoMo tuning split by `scripts/models/fit_gate.py` from the features the gate
/// benchmark writes (docs/CONTEXT.md, "The relevance gate", says how).
const WITH_VECTORS: Model = Model {
    bias: -7.2131,
    semantic: 1.3950,
    known: 3.9310,
    cover: 3.4726,
    unknown_name: -3.4854,
};
/// The same fit with the semantic margin left out, for projects searched by keyword only.
const WORDS_ONLY: Model = Model {
    bias: -7.0696,
    semantic: 0.0,
    known: 7.3196,
    cover: 6.6946,
    unknown_name: -3.5549,
};

/// How far below the floor a prompt may score and still pass when its first search hit is
/// also its nearest memory by meaning ([`Evidence::top_agrees`]). Chosen on the decision
/// benchmark's tuning split; the gate benchmark's foreign and everyday figures were checked with
/// it (docs/BENCHMARKS.md).
pub const AGREEMENT_MARGIN: f64 = 0.1;

/// Relevance between 0 and 1 from the evidence; `None` when there is none to judge by (no
/// searchable word and no vectors): the gate then lets retrieval through, as before it existed.
pub fn relevance(evidence: &Evidence) -> Option<f64> {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let cover = evidence.best_cover.unwrap_or(0.0);
    let unknown = if evidence.unknown_names.is_empty() { 0.0 } else { 1.0 };
    let score = |model: Model, margin: f64, known: f64, cover: f64| {
        sigmoid(
            model.bias
                + model.semantic * margin
                + model.known * known
                + model.cover * cover
                + model.unknown_name * unknown,
        )
    };
    match (evidence.semantic_margin(), evidence.known_words) {
        (Some(margin), Some(known)) => Some(score(WITH_VECTORS, margin, known, cover)),
        // No searchable word (all stop words, or symbols): the nearest chunk alone, as if
        // every word were known and found.
        (Some(margin), None) => Some(score(WITH_VECTORS, margin, 1.0, 1.0)),
        (None, Some(known)) => Some(score(WORDS_ONLY, 0.0, known, cover)),
        (None, None) => None,
    }
}

/// The gate's verdict for one prompt, shown in the receipt.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Gate {
    /// The prompt's relevance (`None`: no evidence to judge by; retrieval passes).
    pub relevance: Option<f64>,
    /// The floor it was held to.
    pub floor: f64,
    /// Whether retrieved memory may enter the pack.
    pub passed: bool,
    /// What the relevance was computed from.
    pub evidence: Evidence,
}

impl Gate {
    /// Judges `evidence` against `floor` (0 or less lets everything through).
    pub fn judge(evidence: Evidence, floor: f64) -> Gate {
        let relevance = relevance(&evidence);
        // A prompt whose first hit is also its nearest memory (a decision found by meaning, in
        // other words than the prompt's) is not emptied by a near miss.
        let margin = if evidence.top_agrees { AGREEMENT_MARGIN } else { 0.0 };
        let passed = floor <= 0.0 || relevance.is_none_or(|r| r >= floor - margin);
        Gate {
            relevance,
            floor,
            passed,
            evidence,
        }
    }

    /// One line for headers and notices: `closed: relevance 0.12 < floor 0.50`.
    pub fn summary(&self) -> String {
        let relevance = self.relevance.map_or("n/a".to_string(), |r| format!("{r:.2}"));
        match (self.passed, self.floor <= 0.0) {
            (_, true) => format!("off: relevance {relevance}"),
            (true, false) => format!("open: relevance {relevance} >= floor {:.2}", self.floor),
            (false, false) => format!("closed: relevance {relevance} < floor {:.2}", self.floor),
        }
    }

    /// Why retrieved memory was left out, for the receipt (`None` when it passed).
    pub fn reason(&self) -> Option<String> {
        (!self.passed).then(|| {
            format!(
                "gated: relevance {:.2} is below the floor {:.2} (nothing remembered bears on the prompt)",
                self.relevance.unwrap_or(0.0),
                self.floor
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(held: &[bool]) -> Vec<(String, bool)> {
        held.iter().enumerate().map(|(i, h)| (format!("w{i}"), *h)).collect()
    }

    #[test]
    fn words_are_known_somewhere_and_covered_together() {
        assert_eq!(known_words(&[]), None);
        assert_eq!(known_words(&terms(&[true, true])), Some(1.0));
        assert_eq!(known_words(&terms(&[false, true, false, true])), Some(0.5));
        let words = vec![
            ("rotation".to_string(), true),
            ("token".to_string(), true),
            ("caroline".to_string(), false),
        ];
        assert_eq!(best_cover(&words, std::iter::empty()), None);
        assert_eq!(best_cover(&[], ["x"].into_iter()), None);
        let cover = best_cover(
            &words,
            ["nothing here", "we rotate the refresh Token daily", "a token"].into_iter(),
        );
        assert_eq!(cover, Some(2.0 / 3.0));
        let same = |a, b| stem(a) == stem(b);
        assert!(!same("cat", "category") && same("rotation", "rotated"));
        assert!(same("hashed", "hashing") && same("passwords", "password"));
        assert!(same("paintings", "painted") && !same("paint", "pain"));
    }

    #[test]
    fn names_are_capitalised_words_inside_sentences_capitals_and_identifiers() {
        let names = |text| names(text).into_iter().map(|p| p.join("_")).collect::<Vec<_>>();
        assert_eq!(
            names("When did Caroline go to the LGBTQ support group? Did Melanie's kids go? Zed did."),
            ["caroline", "lgbtq", "melanie"]
        );
        assert_eq!(names("Fix the typo in README"), ["readme"]);
        assert_eq!(
            names("why does parse_glob fail on utf8 in refreshToken"),
            ["parse_glob", "utf8", "refreshtoken"]
        );
        assert!(names("what did we decide about retries?").is_empty());
        assert!(names("What did Sam do on 7 July 2023 and last Friday?") == ["sam"]);
        let counts = vec![("caroline".to_string(), false), ("lgbtq".to_string(), true)];
        assert_eq!(
            unknown_names("When did Caroline join LGBTQ and Zed?", &counts),
            ["caroline"]
        );
    }

    #[test]
    fn the_spread_of_unrelated_prompts_has_a_floor() {
        let null = NullScores::of(&[0.2, 0.2, 0.2]).unwrap();
        assert_eq!(null.spread, MIN_SPREAD);
        assert_eq!(NullScores::of(&[]), None);
    }

    #[test]
    fn relevance_rises_with_each_piece_of_evidence() {
        let null = Some(NullScores {
            mean: 0.2,
            spread: 0.05,
        });
        let at = |best: f64, known: f64| {
            relevance(&Evidence {
                semantic_best: Some(best),
                semantic_null: null,
                known_words: Some(known),
                best_cover: Some(known),
                unknown_names: Vec::new(),
                top_agrees: false,
            })
            .unwrap()
        };
        assert!(at(0.6, 1.0) > at(0.3, 1.0));
        assert!(at(0.6, 1.0) > at(0.6, 0.2));
        assert!(at(0.6, 1.0) > DEFAULT_MIN_RELEVANCE);
        assert!(at(0.2, 0.0) < DEFAULT_MIN_RELEVANCE);
        assert_eq!(relevance(&Evidence::default()), None);
    }

    #[test]
    fn the_verdict_names_the_score_and_the_floor() {
        let unknown = Evidence {
            known_words: Some(0.0),
            ..Evidence::default()
        };
        let gate = Gate::judge(unknown.clone(), 0.5);
        assert!(!gate.passed);
        let reason = gate.reason().unwrap();
        assert!(reason.contains("below the floor 0.50"), "{reason}");
        // A floor of 0 is the gate switched off; the relevance is still reported.
        let open = Gate::judge(unknown, 0.0);
        assert!(open.passed && open.relevance.is_some() && open.reason().is_none());
        // Nothing to judge by: retrieval passes.
        assert!(Gate::judge(Evidence::default(), 0.9).passed);
    }
}
