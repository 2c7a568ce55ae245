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
