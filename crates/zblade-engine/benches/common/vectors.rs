//! Synthetic sentence-embedding-like vectors for the search benchmarks.

use super::text::TextGen;

/// Synthetic unit vectors in clusters, as sentence embeddings are: `centres` random
/// directions, each vector a centre plus noise, normalised.
pub struct ClusteredVectors {
    rng: TextGen,
    centres: Vec<Vec<f32>>,
    dim: usize,
}

impl ClusteredVectors {
    pub fn new(dim: usize, centres: usize) -> Self {
        let mut rng = TextGen::new(99);
        let centres = (0..centres).map(|_| unit(gaussian(&mut rng, dim, 1.0))).collect();
        ClusteredVectors { rng, centres, dim }
    }

    pub fn next(&mut self) -> Vec<f32> {
        let centre = self.centres[self.rng.below(self.centres.len())].clone();
        self.near(&centre, 0.06)
    }

    /// A unit vector near `v` (noise of `sigma` per dimension).
    pub fn near(&mut self, v: &[f32], sigma: f32) -> Vec<f32> {
        let noise = gaussian(&mut self.rng, self.dim, sigma);
        unit(v.iter().zip(noise).map(|(a, b)| a + b).collect())
    }
}

fn gaussian(rng: &mut TextGen, dim: usize, sigma: f32) -> Vec<f32> {
    (0..dim)
        .map(|_| {
            // Box–Muller.
            let (u, v) = (rng.unit().max(1e-12), rng.unit());
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32 * sigma
        })
        .collect()
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The mean and scaled principal components of real embeddings by zblade's default model
/// (scripts/bench/calibrate_vectors.py: 129 rows of 384 little-endian f32).
const EMBEDDING_SHAPE: &[u8] = include_bytes!("../data/embedding-shape-all-minilm-l6-v2.f32");
/// The generator's settings fitted by that script: the drawn vectors' nearest-neighbour
/// similarities, mean pairwise similarity and effective dimension come closest to the real
/// embeddings' (docs/BENCHMARKS.md, "A million chunks", quotes both).
const VECTORS_PER_TOPIC: usize = 10;
const MEMBER_SPREAD: f32 = 1.1;
const MEAN_WEIGHT: f32 = 1.4;

/// Synthetic vectors shaped like the default model's embeddings of real text, for benchmarks
/// too large to embed for real: topic centres drawn around the real mean along the real
/// principal components, members drawn around a centre the same way. Unlike
/// [`ClusteredVectors`] (noise in every direction alike, the hardest case for an approximate
/// index), they vary along the few dozen directions real embeddings vary along.
pub struct CalibratedVectors {
    rng: TextGen,
    mean: Vec<f32>,
    /// Principal components, each scaled by the square root of its variance.
    components: Vec<Vec<f32>>,
    centres: Vec<Vec<f32>>,
}

impl CalibratedVectors {
    /// A generator for about `count` vectors (one topic per [`VECTORS_PER_TOPIC`]).
    pub fn new(count: usize) -> Self {
        let floats: Vec<f32> = EMBEDDING_SHAPE
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let dim = 384;
        let mut rows = floats.chunks_exact(dim).map(<[f32]>::to_vec);
        let mean = rows.next().expect("the shape file holds the mean");
        let components: Vec<Vec<f32>> = rows.collect();
        let mut generator = CalibratedVectors {
            rng: TextGen::new(101),
            mean,
            components,
            centres: Vec::new(),
        };
        let scaled_mean: Vec<f32> = generator.mean.iter().map(|m| m * MEAN_WEIGHT).collect();
        generator.centres = (0..(count / VECTORS_PER_TOPIC).max(20))
            .map(|_| generator.around(&scaled_mean, 1.0))
            .collect();
        generator
    }

    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// The next vector: a member of a random topic, normalised.
    pub fn next(&mut self) -> Vec<f32> {
        let centre = self.centres[self.rng.below(self.centres.len())].clone();
        unit(self.around(&centre, MEMBER_SPREAD))
    }

    /// `centre` plus a draw along the real components, `spread` times their deviations.
    fn around(&mut self, centre: &[f32], spread: f32) -> Vec<f32> {
        let mut v = centre.to_vec();
        for component in &self.components {
            let weight = gaussian(&mut self.rng, 1, spread)[0];
            v.iter_mut().zip(component).for_each(|(x, c)| *x += weight * c);
        }
        v
    }
}
