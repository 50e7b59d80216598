//! Which constants drive a figure: Spearman's rank correlation between a constant's draws
//! and the figure over the samples, and how far the figure moves between the constant's
//! lowest and highest quarter of draws (the median of each).

use serde::{Deserialize, Serialize};

/// One constant's hold on a figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Driver {
    /// The constant's `--vary` key.
    pub constant: String,
    /// Spearman's rank correlation of the figure with the constant, -1..1.
    pub rho: f64,
    /// The figure's median over the samples with the constant in its lowest quarter of draws.
    pub low: f64,
    /// ... and in its highest quarter.
    pub high: f64,
}

/// Ranks of `x` from 1, ties given their mean rank.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rho: Pearson's correlation of the ranks; `None` when either side is constant.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    let (rx, ry) = (ranks(x), ranks(y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// The `q` quantile of `v` (0..1), interpolated between order statistics (R's type 7).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    let h = (s.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// The largest |rho| that `d` constants unrelated to a figure reach by chance over `n` draws:
/// each rho is about normal with standard deviation 1/sqrt(n - 1), and the largest of `d`
/// such |values| about sqrt(2 ln 2d) of them. A constant below it is not named a driver.
pub fn noise_level(d: usize, n: usize) -> f64 {
    (2.0 * (2.0 * d.max(1) as f64).ln() / (n.max(2) - 1) as f64).sqrt()
}

/// The fewest draws with which one of `d` constants can be told from chance: the first `n`
/// whose [`noise_level`] is below 1, the most a rank correlation reaches. With fewer, no
/// figure has a driver.
pub fn min_samples(d: usize) -> usize {
    (2..)
        .find(|&n| noise_level(d, n) < 1.0)
        .expect("noise_level falls below 1")
}

/// The `top` constants with the strongest rank correlation with `figure`, strongest first
/// (ties in the order of `draws`), above the [`noise_level`]; `draws[k]` is constant `k`'s
/// value in every sample.
pub fn drivers(keys: &[String], draws: &[Vec<f64>], figure: &[f64], top: usize) -> Vec<Driver> {
    let noise = noise_level(keys.len(), figure.len());
    let quarter = figure.len().div_ceil(4).max(1);
    let mut all: Vec<Driver> = keys
        .iter()
        .zip(draws)
        .filter_map(|(key, x)| {
            let rho = spearman(x, figure).filter(|r| r.abs() >= noise)?;
            let mut order: Vec<usize> = (0..x.len()).collect();
            order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
            let median = |idx: &[usize]| quantile(&idx.iter().map(|&i| figure[i]).collect::<Vec<_>>(), 0.5);
            Some(Driver {
                constant: key.clone(),
                rho,
                low: median(&order[..quarter]),
                high: median(&order[order.len() - quarter..]),
            })
        })
        .collect();
    all.sort_by(|a, b| b.rho.abs().total_cmp(&a.rho.abs()));
    all.truncate(top);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_min_samples_nothing_can_be_a_driver() {
        for d in [1, 8, 31] {
            let n = min_samples(d);
            assert!(noise_level(d, n) < 1.0 && noise_level(d, n - 1) >= 1.0, "{d}: {n}");
        }
        assert_eq!(min_samples(31), 10);
        // Even a perfect monotone link is not named with too few draws.
        let x: Vec<f64> = (0..4).map(f64::from).collect();
        assert!(drivers(&vec!["a".to_string(); 31], &vec![x.clone(); 31], &x, 3).is_empty());
    }

    #[test]
    fn rank_correlation_sees_monotone_links_and_nothing_in_constants() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((spearman(&x, &[1.0, 4.0, 9.0, 16.0, 100.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((spearman(&x, &[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(spearman(&x, &[2.0; 5]), None);
        assert_eq!(ranks(&[3.0, 1.0, 3.0]), vec![2.5, 1.0, 2.5]);
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), 2.5);
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 1.0), 3.0);
    }

    #[test]
    fn the_driver_of_a_figure_comes_first_with_how_far_it_moves_it() {
        let keys = vec!["noise".to_string(), "cause".to_string()];
        let cause: Vec<f64> = (0..8).map(|i| i as f64).collect();
        let noise = vec![3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0];
        let figure: Vec<f64> = cause.iter().map(|c| 10.0 * c).collect();
        let d = drivers(&keys, &[noise, cause.clone()], &figure, 1);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].constant, "cause");
        assert_eq!((d[0].low, d[0].high), (5.0, 65.0));
        // Eight draws cannot tell 100 constants' chance correlations from a cause.
        assert!(noise_level(100, 8) > 1.0 && noise_level(100, 64) < 0.5);
        let keys: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let x: Vec<Vec<f64>> = (0..100).map(|_| cause.clone()).collect();
        assert!(drivers(&keys, &x, &figure, 3).is_empty());
    }
}
