//! Latin hypercube design (McKay, Beckman and Conover 1979): `n` points in `d` dimensions of
//! the unit cube, each dimension cut into `n` equal strata holding one point each, strata
//! matched at random across dimensions. Every constant's range is covered evenly whatever
//! `n` is, so its lowest quarter of draws is exactly a quarter of the runs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `points[i][k]`: point `i`'s position in dimension `k`, in [0, 1). The same `seed` gives
/// the same design.
pub fn design(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut points = vec![vec![0.0; d]; n];
    for k in 0..d {
        let mut strata: Vec<usize> = (0..n).collect();
        // Fisher-Yates, drawn from the one seeded stream.
        for i in (1..n).rev() {
            strata.swap(i, rng.gen_range(0..=i));
        }
        for (p, s) in points.iter_mut().zip(strata) {
            p[k] = (s as f64 + rng.gen::<f64>()) / n as f64;
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dimension_has_one_point_per_stratum_and_the_seed_fixes_the_design() {
        let p = design(16, 5, 7);
        for k in 0..5 {
            let mut strata: Vec<usize> = p.iter().map(|x| (x[k] * 16.0) as usize).collect();
            strata.sort();
            assert_eq!(strata, (0..16).collect::<Vec<_>>());
        }
        assert_eq!(design(16, 5, 7), p);
        assert_ne!(design(16, 5, 8), p);
        assert!(design(0, 3, 1).is_empty());
    }
}
