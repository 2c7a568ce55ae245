//! The relevance gate's evidence in this project (`zblade_context::gate` judges it): the
//! prompt's nearest-chunk similarity next to what unrelated prompts reach here, and how much
//! of the prompt's wording the project holds anywhere.
//!
//! What unrelated prompts reach (the null) is measured once per project, model and size: the
//! [`NULL_PROBES`] are embedded and searched (about a second on two cores), and the result is
//! kept in `.zblade/cache/gate-null.json` and in memory. It is measured again when the model
//! changes or the number of vectors has moved by more than a fifth, since a bigger project
//! has closer neighbours for anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zblade_context::DEFAULT_MIN_RELEVANCE;
use zblade_context::gate::{Evidence, NULL_PROBES, NullScores, best_cover, known_words, unknown_names};
use zblade_core::{Error, Result};
use zblade_index::HeldWords;
use zblade_search::VectorStore;

use crate::gate_null::{MeasuredNull, probes_digest};
use crate::parts::Parts;
use crate::semantic::search_error;

/// How often a long-running engine checks the number of vectors (each check reads the vector
/// table's newest version, which is not free).
const NULL_CHECK_EVERY: Duration = Duration::from_secs(60);

impl Parts {
    /// The floor retrieved memory must reach: the request's, else `context.min_relevance`,
    /// else [`DEFAULT_MIN_RELEVANCE`]. A value outside 0..=1 is refused with the field named.
    pub(crate) fn min_relevance(&self, requested: Option<f64>) -> Result<f64> {
        let (floor, from) = match (requested, self.settings().context.min_relevance) {
            (Some(floor), _) => (floor, "--min-relevance"),
            (None, Some(floor)) => (floor, "context.min_relevance in .zblade/config/settings.json"),
            (None, None) => return Ok(DEFAULT_MIN_RELEVANCE),
        };
        if !(0.0..=1.0).contains(&floor) {
            return Err(Error::Usage(format!(
                "{from} is {floor}: it must be between 0 (no gate) and 1"
            )));
        }
        Ok(floor)
    }

    /// The evidence that this project remembers something about `text`; `nearest` is the
    /// similarity of its nearest embedded chunk, when the search that ran had vectors,
    /// `held_words` the words of `text` memory holds when the search looked them up already
    /// (the search's `ModeSearch::held_words`), and `retrieved` the texts the
    /// search found.
    pub(crate) fn gate_evidence<'a>(
        &self,
        text: &str,
        nearest: Option<f64>,
        top_agrees: bool,
        held_words: Option<Option<HeldWords>>,
        retrieved: impl Iterator<Item = &'a str>,
    ) -> Result<Evidence> {
        let held = match held_words {
            Some(held) => held,
            None => self.index()?.held_words(text)?,
        };
        let known = held.as_ref().and_then(|held| known_words(&held.terms));
        let cover = held.as_ref().and_then(|held| best_cover(&held.terms, retrieved));
        let unknown = held
            .as_ref()
            .map(|held| unknown_names(text, &held.terms))
            .unwrap_or_default();
        let null = match nearest {
            Some(_) => self.null_scores()?,
            None => None,
        };
        Ok(Evidence {
            semantic_best: nearest,
            semantic_null: null,
            known_words: known,
            best_cover: cover,
            unknown_names: unknown,
            top_agrees,
        })
    }

    /// What unrelated prompts reach in this project (`None` when nothing is embedded).
    fn null_scores(&self) -> Result<Option<NullScores>> {
        let Some(store) = self.semantic().vector_reader()? else {
            return Ok(None);
        };
        let model = self.semantic().model_id();
        let mut cached = self.semantic().gate_null.0.lock().expect("gate null lock");
        if let Some((null, checked)) = cached.as_ref()
            && null.model == model
            && checked.elapsed() < NULL_CHECK_EVERY
        {
            return Ok(Some(null.scores));
        }
        let vectors = vector_count(&store)?;
        if let Some((null, checked)) = cached.as_mut()
            && null.fits(&model, vectors)
        {
            *checked = Instant::now();
            return Ok(Some(null.scores));
        }
        let path = self.layout().cache_dir().join("gate-null.json");
        // A damaged or foreign file is measured again, never trusted.
        let on_disk = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<MeasuredNull>(&bytes).ok())
            .filter(|null| null.fits(&model, vectors) && null.scores.mean.is_finite() && null.scores.spread > 0.0);
        let null = match on_disk {
            Some(null) => null,
            None => {
                let Some(scores) = self.measure_null(&store)? else {
                    return Ok(None);
                };
                let null = MeasuredNull {
                    model,
                    vectors,
                    probes: probes_digest(),
                    scores,
                };
                // A cache: failing to keep it only means measuring again next time.
                if std::fs::create_dir_all(self.layout().cache_dir()).is_ok() {
                    let _ =
                        zblade_core::fsio::write_atomic(&path, &serde_json::to_vec_pretty(&null).unwrap_or_default());
                }
                null
            }
        };
        let scores = null.scores;
        *cached = Some((null, Instant::now()));
        Ok(Some(scores))
    }

    /// Embeds the probes and finds each one's nearest chunk.
    fn measure_null(&self, store: &Arc<VectorStore>) -> Result<Option<NullScores>> {
        let embedder = self.semantic().embedder().map_err(search_error)?;
        let vectors = embedder
            .lock()
            .expect("embedder lock")
            .embed(&NULL_PROBES)
            .map_err(search_error)?;
        let mut similarities = Vec::new();
        for vector in vectors {
            let nearest = store.nearest(&vector, 1).map_err(search_error)?;
            similarities.extend(nearest.first().map(|n| 1.0 - n.distance as f64));
        }
        Ok(NullScores::of(&similarities))
    }
}

fn vector_count(store: &VectorStore) -> Result<usize> {
    store.len().map_err(search_error)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use crate::project::Project;

    use zblade_search::FakeEmbedder;

    use super::*;

    use crate::semantic::tests::conversation;

    fn project_with(dir: &std::path::Path, fake: FakeEmbedder) -> Project {
        let mut project = Project::open(dir).unwrap();
        project.use_embedder(Box::new(fake));
        project
    }

    /// The null is measured once (every probe embedded once), kept on disk for the next
    /// process, never trusted when damaged, and measured again when the project has grown.
    #[test]
    fn what_unrelated_prompts_score_is_measured_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        Project::init(dir.path()).unwrap();
        let fake = FakeEmbedder::new("fake-64", 64);
        let embedded = fake.texts_embedded();
        let mut project = project_with(dir.path(), fake);
        project
            .add_conversations(vec![
                conversation("keys", "rotate the jwt signing key every month"),
                conversation("bread", "banana bread needs ripe bananas"),
            ])
            .unwrap();
        project.index_semantic(&mut |_, _| {}).unwrap();
        let before = embedded.load(Ordering::Relaxed);
        let null = project.parts.null_scores().unwrap().expect("vectors exist");
        assert!(null.mean.is_finite() && null.spread >= zblade_context::gate::MIN_SPREAD);
        assert_eq!(embedded.load(Ordering::Relaxed), before + NULL_PROBES.len());
        assert_eq!(project.parts.null_scores().unwrap(), Some(null), "kept in memory");
        assert_eq!(embedded.load(Ordering::Relaxed), before + NULL_PROBES.len());
        let file = dir.path().join(".zblade/cache/gate-null.json");
        assert!(file.is_file());

        // Another process reads the file instead of measuring.
        let fake = FakeEmbedder::new("fake-64", 64);
        let again = fake.texts_embedded();
        let other = project_with(dir.path(), fake);
        assert_eq!(other.parts.null_scores().unwrap(), Some(null));
        assert_eq!(again.load(Ordering::Relaxed), 0);

        // A damaged file is measured again and rewritten.
        std::fs::write(&file, b"{not json").unwrap();
        let fake = FakeEmbedder::new("fake-64", 64);
        let again = fake.texts_embedded();
        let other = project_with(dir.path(), fake);
        assert_eq!(other.parts.null_scores().unwrap(), Some(null));
        assert_eq!(again.load(Ordering::Relaxed), NULL_PROBES.len());
        assert!(serde_json::from_slice::<MeasuredNull>(&std::fs::read(&file).unwrap()).is_ok());

        // Three times the vectors: the kept null no longer fits and is measured again.
        let mut grown = project_with(dir.path(), FakeEmbedder::new("fake-64", 64));
        grown
            .add_conversations(
                (0..6)
                    .map(|i| conversation(&format!("more {i}"), &format!("another topic number {i} entirely")))
                    .collect(),
            )
            .unwrap();
        grown.index_semantic(&mut |_, _| {}).unwrap();
        let fake = FakeEmbedder::new("fake-64", 64);
        let again = fake.texts_embedded();
        let other = project_with(dir.path(), fake);
        other.parts.null_scores().unwrap();
        assert_eq!(again.load(Ordering::Relaxed), NULL_PROBES.len());
    }

    #[test]
    fn the_floor_comes_from_the_request_then_the_settings_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        assert_eq!(project.parts.min_relevance(None).unwrap(), DEFAULT_MIN_RELEVANCE);
        assert_eq!(project.parts.min_relevance(Some(0.0)).unwrap(), 0.0);
        project.parts.settings.context.min_relevance = Some(0.8);
        assert_eq!(project.parts.min_relevance(None).unwrap(), 0.8);
        assert_eq!(project.parts.min_relevance(Some(0.3)).unwrap(), 0.3);
        project.parts.settings.context.min_relevance = Some(1.5);
        let err = project.parts.min_relevance(None).unwrap_err().to_string();
        assert!(err.contains("context.min_relevance") && err.contains("1.5"), "{err}");
        assert!(project.parts.min_relevance(Some(f64::NAN)).is_err());
    }
}
