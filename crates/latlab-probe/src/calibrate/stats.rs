//! A measured figure: the median of repeated runs and their 5th and 95th percentiles.

/// The median and spread of a measurement's runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub p5: f64,
    pub p95: f64,
    pub runs: u32,
}

impl Stat {
    /// The figure of `values` (nearest-rank percentiles); `None` for no finite value.
    pub fn of(values: &[f64]) -> Option<Stat> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Stat {
            median: rank(0.5),
            p5: rank(0.05),
            p95: rank(0.95),
            runs: v.len() as u32,
        })
    }

    /// `f` run `runs` times, each giving one value; fewer once a signal asked to stop
    /// ([`crate::signals`]).
    pub fn repeat(runs: u32, mut f: impl FnMut() -> f64) -> Option<Stat> {
        let v: Vec<f64> = (0..runs)
            .take_while(|_| !crate::signals::stop_requested())
            .map(|_| f())
            .collect();
        Stat::of(&v)
    }

    /// Every number scaled by `k` (a unit change).
    pub fn scaled(self, k: f64) -> Stat {
        Stat {
            median: self.median * k,
            p5: self.p5 * k,
            p95: self.p95 * k,
            runs: self.runs,
        }
    }

    /// This figure less `overhead` (the median of a cost measured apart), each number kept
    /// at `floor` or above: the spread stays this figure's own, shifted.
    pub fn less(self, overhead: f64, floor: f64) -> Stat {
        let sub = |x: f64| (x - overhead).max(floor);
        Stat {
            median: sub(self.median),
            p5: sub(self.p5),
            p95: sub(self.p95),
            runs: self.runs,
        }
    }

    /// `median of N runs, p5-p95 LO-HI UNIT`.
    pub fn describe(&self, unit: &str) -> String {
        format!(
            "median of {} runs, p5-p95 {}-{} {unit}",
            self.runs,
            round_sig(self.p5),
            round_sig(self.p95)
        )
    }
}

/// `x` to four significant digits, for reading (the file keeps the same).
pub fn round_sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * mag).round() / mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let s = Stat::of(&v).unwrap();
        assert_eq!((s.median, s.p5, s.p95, s.runs), (10.0, 1.0, 19.0, 20));
        let s = Stat::of(&[3.0, f64::NAN, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.p5, s.p95, s.runs), (2.0, 1.0, 3.0, 3));
        assert!(Stat::of(&[f64::NAN]).is_none());
        let s = Stat::of(&[5.0]).unwrap().less(4.0, 0.5);
        assert_eq!(s.median, 1.0);
        assert_eq!(Stat::of(&[5.0]).unwrap().less(6.0, 0.5).median, 0.5);
        assert_eq!(round_sig(1234.567), 1235.0);
        assert_eq!(round_sig(0.0123456), 0.01235);
    }
}
