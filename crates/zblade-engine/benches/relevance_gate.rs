//! The relevance gate (issue 45): does retrieved memory reach a prompt only when it helps?
//!
//! Every LoCoMo conversation becomes a project, embedded with the default model (as in
//! `search_quality`). Each question with labelled evidence is asked of its own project
//! (answerable) and of every other conversation's project in the same split (foreign: nothing
//! there can answer it); 100 everyday coding prompts (`benches/data/everyday_prompts.txt`,
//! written for zblade) are asked of a LoCoMo project and of a project whose memory is code (a
//! crate from the cargo registry, indexed). Each prompt is packed with the gate off
//! (`min_relevance` 0) at budgets 2,000 and 8,000; what the gate keeps follows from the
//! relevance in the receipt (a closed gate leaves out every retrieved candidate and nothing
//! else, `zblade_context::pack`'s tests), and every tenth prompt is packed again with the gate
//! on to check that the product does exactly that.
//!
//! Tuning split: conversations 26 and 30 with prompts 1–50 (the gate's weights were fitted
//! there, `scripts/models/fit_gate.py`); reported split, never tuned on: 41, 42 and 43 with
//! prompts 51–100. `ZBLADE_GATE_FEATURES=FILE` writes every prompt's evidence as CSV for the fit.
//!
//! `cargo bench --workspace --bench relevance_gate` writes docs/BENCHMARKS.md; under
//! `cargo test` it runs two short conversations and a few prompts and writes nothing.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use serde_json::Value;
use zblade_context::{Item, Source};
use zblade_engine::{ContextRequest, DEFAULT_MIN_RELEVANCE, Project};

mod common;
#[path = "common/locomo.rs"]
mod locomo;
#[path = "common/registry.rs"]
mod registry;
use common::{full_run, write_section};

/// Conversations (in file-name order) the gate was tuned on; the rest are reported.
const TUNE_FILES: usize = 2;
/// Everyday prompts (in file order) the gate was tuned on; the rest are reported.
const TUNE_PROMPTS: usize = 50;
const BUDGETS: [usize; 2] = [2_000, 8_000];
/// The code project's crate (in Cargo.lock, so in the registry after any build).
const CODE_CRATE: &str = "walkdir";

/// What kind of prompt was asked of which project.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A question asked of its own conversation's project.
    Answerable,
    /// A question asked of another conversation's project.
    Foreign,
    /// An everyday coding prompt asked of a LoCoMo project.
    EverydayLocomo,
    /// An everyday coding prompt asked of the code project.
    EverydayCode,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Answerable => "answerable",
            Kind::Foreign => "foreign",
            Kind::EverydayLocomo => "everyday_locomo",
            Kind::EverydayCode => "everyday_code",
        }
    }
}

/// One prompt packed with the gate off, at each budget.
struct Asked {
    /// Share of the evidence turns inside the pack, per budget (answerable questions).
    recall: [f64; 2],
    /// Tokens of retrieved entries in the pack, per budget.
    retrieved_tokens: [usize; 2],
    /// What the gate judged by.
    evidence: zblade_context::Evidence,
}

impl Asked {
    /// The product's own verdict at `floor` (relevance, and the agreement of the search's first
    /// hit with the nearest memory).
    fn passes(&self, floor: f64) -> bool {
        zblade_context::Gate::judge(self.evidence.clone(), floor).passed
    }
}

fn request(query: &str, budget: usize, min_relevance: f64) -> ContextRequest {
    ContextRequest {
        budget: Some(budget),
        min_relevance: Some(min_relevance),
        ..ContextRequest::new(query)
    }
}

fn retrieved_tokens(pack: &zblade_context::Pack) -> usize {
    pack.receipt
        .iter()
        .filter(|line| line.included && line.source == Source::Retrieved)
        .map(|line| line.tokens)
        .sum()
}

/// Asks `query` of `project` at both budgets with the gate off; every `check`-th call also asks
/// with the default gate and checks that it kept exactly what the relevance says.
fn ask(
    project: &Project,
    query: &str,
    kind: Kind,
    evidence: Option<&HashSet<String>>,
    check: bool,
    features: &mut Option<std::fs::File>,
    split: &str,
) -> Asked {
    let mut asked = Asked {
        recall: [0.0; 2],
        retrieved_tokens: [0; 2],
        evidence: Default::default(),
    };
    for (b, budget) in BUDGETS.into_iter().enumerate() {
        let result = project.context(&request(query, budget, 0.0)).unwrap();
        let gate = result.pack.gate.as_ref().expect("retrieval ran, so the gate judged");
        assert!(gate.passed, "a floor of 0 lets everything through");
        asked.evidence = gate.evidence.clone();
        asked.retrieved_tokens[b] = retrieved_tokens(&result.pack);
        if let Some(evidence) = evidence {
            let packed: HashSet<&str> = result
                .pack
                .entries
                .iter()
                .filter_map(|e| match &e.candidate.item {
                    Item::Message { message, .. } => Some(message.as_str()),
                    _ => None,
                })
                .collect();
            asked.recall[b] =
                evidence.iter().filter(|id| packed.contains(id.as_str())).count() as f64 / evidence.len() as f64;
        }
        if b == 0
            && let Some(file) = features
        {
            let e = &gate.evidence;
            let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.5}"));
            writeln!(
                file,
                "{split},{},{},{},{},{},{},{},{:.4},{},{},{}",
                kind.name(),
                cell(e.semantic_best),
                cell(e.semantic_null.map(|n| n.mean)),
                cell(e.semantic_null.map(|n| n.spread)),
                cell(e.known_words),
                cell(e.best_cover),
                u8::from(!e.unknown_names.is_empty()),
                asked.recall[0],
                asked.retrieved_tokens[0],
                e.unknown_names.join(" "),
                // For reading the file: no commas or quotes inside the last column.
                query.replace([',', '"', '\n'], " "),
            )
            .unwrap();
        }
    }
    if check {
        // The product's own gated pack: nothing retrieved when the relevance is under the
        // floor, the same retrieved memory as ungated otherwise.
        let gated = project
            .context(&request(query, BUDGETS[0], DEFAULT_MIN_RELEVANCE))
            .unwrap();
        let expected = if asked.passes(DEFAULT_MIN_RELEVANCE) {
            asked.retrieved_tokens[0]
        } else {
            0
        };
        assert_eq!(retrieved_tokens(&gated.pack), expected, "gated pack of {query:?}");
    }
    asked
}

/// A LoCoMo project, embedded.
fn locomo_project(dir: &Path, data: &Value, max_sessions: usize) -> (Project, HashSet<String>) {
    let (mut project, _) = Project::init(dir).unwrap();
    let loaded = locomo::add_to_project(&mut project, data, max_sessions);
    project
        .index_semantic(&mut |_, _| {})
        .expect("the embedding model (run scripts/setup.sh)");
    (project, loaded.turn_ids)
}

/// Totals of one kind of prompt in one split.
#[derive(Default, Clone, Copy)]
struct Totals {
    n: usize,
    recall: [f64; 2],
    recall_gated: [f64; 2],
    tokens: [usize; 2],
    tokens_gated: [usize; 2],
    any: [usize; 2],
    any_gated: [usize; 2],
}

impl Totals {
    fn add(&mut self, asked: &Asked, floor: f64) {
        self.n += 1;
        let passes = asked.passes(floor);
        for b in 0..2 {
            self.recall[b] += asked.recall[b];
            self.tokens[b] += asked.retrieved_tokens[b];
            self.any[b] += usize::from(asked.retrieved_tokens[b] > 0);
            if passes {
                self.recall_gated[b] += asked.recall[b];
                self.tokens_gated[b] += asked.retrieved_tokens[b];
                self.any_gated[b] += usize::from(asked.retrieved_tokens[b] > 0);
            }
        }
    }

    fn mean(&self, sum: f64) -> f64 {
        sum / self.n.max(1) as f64
    }
}

fn main() {
    let full = full_run();
    let Some(dir) = locomo::locomo_dir() else {
        assert!(
            !full,
            "LoCoMo not found: set ZBLADE_LOCOMO_DIR to the folder holding its JSON files"
        );
        eprintln!("relevance_gate: LoCoMo not found (set ZBLADE_LOCOMO_DIR); skipped");
        return;
    };
    let mut files = locomo::conversation_files(&dir);
    // The smoke run: two conversations, two sessions each, a few prompts.
    let (max_sessions, max_questions, max_prompts) = if full {
        (usize::MAX, usize::MAX, usize::MAX)
    } else {
        files.truncate(2);
        (2, 6, 4)
    };
    let tune_files = if full { TUNE_FILES } else { 1 };
    let prompts: Vec<String> = include_str!("data/everyday_prompts.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert_eq!(prompts.len(), 100, "everyday_prompts.txt holds 100 prompts");
    let mut features = std::env::var_os("ZBLADE_GATE_FEATURES").map(|path| {
        let mut file = std::fs::File::create(path).unwrap();
        writeln!(
            file,
            "split,kind,semantic_best,null_mean,null_spread,known_words,best_cover,unknown_name,recall_2000,retrieved_tokens_2000,unknown_names,query"
        )
        .unwrap();
        file
    });

    let work = tempfile::tempdir().unwrap();
    let mut projects = Vec::new();
    for (f, file) in files.iter().enumerate() {
        let data: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let (project, turns) = locomo_project(&work.path().join(format!("c{f}")), &data, max_sessions);
        let mut questions = locomo::questions(&data, &turns);
        questions.truncate(max_questions);
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        eprintln!(
            "relevance_gate: {name}: {} turns, {} questions",
            turns.len(),
            questions.len()
        );
        projects.push((name, project, questions));
    }
    let code_dir = work.path().join("code");
    let code_project = registry::registry_crate(CODE_CRATE).map(|source| {
        registry::copy_code_base(&source, &code_dir, usize::MAX);
        let (mut project, _) = Project::init(&code_dir).unwrap();
        project.update_search_index(&mut |_, _, _| {}).unwrap();
        project
    });

    // [tune, report] × kind
    let floor = DEFAULT_MIN_RELEVANCE;
    let mut totals = [[Totals::default(); 4]; 2];
    let mut asked_count = 0usize;
    let splits = [(0, 0..tune_files), (1, tune_files..projects.len())];
    for (split, range) in splits {
        let split_name = ["tune", "report"][split];
        let members: Vec<usize> = range.collect();
        for &own in &members {
            // Foreign: every other conversation of the same split (two LoCoMo conversations
            // can share a first name, so no single pairing is representative).
            let targets: Vec<(Kind, usize)> = std::iter::once((Kind::Answerable, own))
                .chain(members.iter().filter(|&&m| m != own).map(|&m| (Kind::Foreign, m)))
                .collect();
            let (_, project, questions) = &projects[own];
            for question in questions {
                for &(kind, target) in &targets {
                    asked_count += 1;
                    let evidence = (kind == Kind::Answerable).then_some(&question.evidence);
                    let asked = ask(
                        if target == own { project } else { &projects[target].1 },
                        &question.text,
                        kind,
                        evidence,
                        asked_count.is_multiple_of(10),
                        &mut features,
                        split_name,
                    );
                    totals[split][kind as usize].add(&asked, floor);
                }
            }
        }
        // Everyday prompts: the split's half, asked of the split's first LoCoMo project and of
        // the code project.
        let half = if split == 0 {
            &prompts[..TUNE_PROMPTS]
        } else {
            &prompts[TUNE_PROMPTS..]
        };
        let Some(&first) = members.first() else { continue };
        for prompt in half.iter().take(max_prompts) {
            asked_count += 1;
            let targets = [
                (Kind::EverydayLocomo, Some(&projects[first].1)),
                (Kind::EverydayCode, code_project.as_ref()),
            ];
            for (kind, project) in targets {
                let Some(project) = project else { continue };
                let asked = ask(
                    project,
                    prompt,
                    kind,
                    None,
                    asked_count.is_multiple_of(10),
                    &mut features,
                    split_name,
                );
                totals[split][kind as usize].add(&asked, floor);
            }
        }
    }

    let report = render(&totals, &projects, tune_files, floor, code_project.is_some());
    println!("{report}");
    // The targets (issue 45), on the reported split at budget 2,000, checked in full runs only:
    // the smoke run's handful of prompts says nothing about rates.
    if full {
        let r = &totals[1];
        let answerable = r[Kind::Answerable as usize];
        let ratio = answerable.recall_gated[0] / answerable.recall[0].max(f64::MIN_POSITIVE);
        eprintln!(
            "relevance_gate: reported split, budget 2000: evidence recall {:.3} of ungated; foreign with memory {:.3}, \
             {:.0} tokens each; everyday prompts with memory {:.3}",
            ratio,
            r[Kind::Foreign as usize].any_gated[0] as f64 / r[Kind::Foreign as usize].n.max(1) as f64,
            r[Kind::Foreign as usize].tokens_gated[0] as f64 / r[Kind::Foreign as usize].n.max(1) as f64,
            r[Kind::EverydayLocomo as usize].any_gated[0] as f64 / r[Kind::EverydayLocomo as usize].n.max(1) as f64,
        );
        write_section("relevance-gate", "The relevance gate", "relevance_gate", &report);
    }
}

fn render(
    totals: &[[Totals; 4]; 2],
    projects: &[(String, Project, Vec<locomo::Question>)],
    tune_files: usize,
    floor: f64,
    with_code: bool,
) -> String {
    let names = |range: std::ops::Range<usize>| {
        projects[range]
            .iter()
            .map(|(name, _, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "LoCoMo conversations as projects (all-MiniLM-L6-v2 int8, hybrid retrieval, XML, balanced tier). \
         Tuning split: conversations {} and everyday prompts 1–50 (the gate's weights were fitted there); \
         reported split, never tuned on: {} and prompts 51–100. Foreign: each question asked of every other \
         conversation's project in its split. Everyday: `benches/data/everyday_prompts.txt` asked of the split's \
         first LoCoMo project{}. Gate floor {floor:.2} (the default). \"Off\" is the same prompts packed with \
         `--no-gate`.\n\n",
        names(0..tune_files),
        names(tune_files..projects.len()),
        if with_code {
            format!(" and of a code project (`{CODE_CRATE}` from the cargo registry, indexed)")
        } else {
            String::new()
        },
    );
    for (b, budget) in BUDGETS.into_iter().enumerate() {
        out.push_str(&format!(
            "**Budget {budget} tokens**\n\n| measure | tuning, off | tuning, gate | reported, off | reported, gate |\n|---|---|---|---|---|\n"
        ));
        let row = |label: &str, cell: &dyn Fn(&Totals, bool) -> String, kind: Kind| {
            let t = |split: usize| &totals[split][kind as usize];
            format!(
                "| {label} | {} | {} | {} | {} |\n",
                cell(t(0), false),
                cell(t(0), true),
                cell(t(1), false),
                cell(t(1), true)
            )
        };
        let recall =
            |t: &Totals, gated: bool| format!("{:.3}", t.mean(if gated { t.recall_gated[b] } else { t.recall[b] }));
        let tokens = |t: &Totals, gated: bool| {
            format!(
                "{:.0}",
                t.mean((if gated { t.tokens_gated[b] } else { t.tokens[b] }) as f64)
            )
        };
        let any =
            |t: &Totals, gated: bool| format!("{:.3}", t.mean((if gated { t.any_gated[b] } else { t.any[b] }) as f64));
        let count = |t: &Totals, _: bool| t.n.to_string();
        out.push_str(&row("answerable questions", &count, Kind::Answerable));
        out.push_str(&row("evidence recall inside the pack", &recall, Kind::Answerable));
        out.push_str(&row(
            "retrieved tokens per answerable question",
            &tokens,
            Kind::Answerable,
        ));
        out.push_str(&row("foreign questions", &count, Kind::Foreign));
        out.push_str(&row("foreign: share with any retrieved memory", &any, Kind::Foreign));
        out.push_str(&row("foreign: retrieved tokens per question", &tokens, Kind::Foreign));
        out.push_str(&row("everyday prompts, LoCoMo project", &count, Kind::EverydayLocomo));
        out.push_str(&row(
            "everyday → LoCoMo: share with any retrieved memory",
            &any,
            Kind::EverydayLocomo,
        ));
        out.push_str(&row(
            "everyday → LoCoMo: retrieved tokens per prompt",
            &tokens,
            Kind::EverydayLocomo,
        ));
        if with_code {
            out.push_str(&row(
                "everyday → code project: share with any retrieved memory",
                &any,
                Kind::EverydayCode,
            ));
            out.push_str(&row(
                "everyday → code project: retrieved tokens per prompt",
                &tokens,
                Kind::EverydayCode,
            ));
        }
        let r = &totals[1][Kind::Answerable as usize];
        out.push_str(&format!(
            "\nReported split: gated evidence recall is {:.3} × the ungated value (target ≥ 0.97 at 2,000).\n\n",
            r.recall_gated[b] / r.recall[b].max(f64::MIN_POSITIVE)
        ));
    }
    out
}
