//! One verdict for every published figure: is the model's figure inside the figure's bar?
//!
//! Each comparison row ([`CompareRow`]) carries its [`Bar`], set where the row is made (seed
//! 000's and 002's worst case within 1.5x of a number or 2x of a bucket's edges, seed 004's
//! average within 2x, seed 003's stretches within 2x, ...), and its verdict `inside`. Every
//! table of `latlab reproduce`, the marks of a `--vary` sweep, `latlab uncertainty`, the
//! `--json` rows and the Python result read the verdict from here, in one notation
//! ([`mark`]: `inside`, `OUTSIDE`, `-` where nothing is judged).

use crate::seed_table::CompareRow;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// How close the model's figure must come to the published one to reproduce it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bar {
    /// A number: model / published within `1/x ..= x`; where the seed published 0 (no write
    /// over 100 ms, no missed event), exactly 0.
    Within(f64),
    /// A bucket the seed's figure fell in (seed 000's `128-256 ms`): the model within `x` of
    /// its edges, `lo / x ..= hi * x`.
    BucketWithin(f64),
    /// A gain over another run (seed 001's "about 25 %"): the model's gain above 1 within
    /// `1/x ..= x` of the seed's (`x` = 2 of 1.25: 1.125-1.5).
    GainWithin(f64),
    /// A count that must be the seed's.
    Equal,
}

impl Bar {
    /// Whether `model` is inside this bar around the published figure (`published`, or the
    /// bucket `range`); `None` when the bar's kind of published figure is missing.
    pub fn holds(self, model: f64, published: Option<f64>, range: Option<[f64; 2]>) -> Option<bool> {
        let within = |q: f64, x: f64| q.is_finite() && q >= 1.0 / x && q <= x;
        Some(match self {
            Bar::Within(x) => {
                let p = published?;
                if p == 0.0 {
                    model == 0.0
                } else {
                    p > 0.0 && within(model / p, x)
                }
            }
            Bar::BucketWithin(x) => {
                let [lo, hi] = range?;
                model >= lo / x && model <= hi * x
            }
            Bar::GainWithin(x) => {
                let e = published? - 1.0;
                if e == 0.0 {
                    model == 1.0
                } else {
                    within((model - 1.0) / e, x)
                }
            }
            Bar::Equal => model == published?,
        })
    }

    /// The bar in words: `within 1.5x`, `a bucket's edges within 2x`, ...
    pub fn describe(self) -> String {
        match self {
            Bar::Within(x) => format!("within {x}x"),
            Bar::BucketWithin(x) => format!("within {x}x of its bucket's edges"),
            Bar::GainWithin(x) => format!("the gain above 1 within {x}x of the seed's"),
            Bar::Equal => "equal".into(),
        }
    }
}

/// A verdict in the one notation every table uses: `inside` the bar (or band), `OUTSIDE`,
/// or `-` where nothing is judged.
pub fn mark(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "inside",
        Some(false) => "OUTSIDE",
        None => "-",
    }
}

/// An experiment's verdicts counted: the summary of `reproduce`'s tables and of its `--json`
/// document (`summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Published figures with a bar: the figures the model is judged by.
    pub judged: usize,
    /// Of those, the model's inside its bar.
    pub inside: usize,
    /// Of the judged, those with an uncertainty band.
    pub banded: usize,
    /// Of those, the published figure inside the band.
    pub published_in_band: usize,
}

impl Tally {
    /// The verdicts of `rows`.
    pub fn of(rows: &[CompareRow]) -> Tally {
        let judged: Vec<&CompareRow> = rows.iter().filter(|r| r.inside.is_some()).collect();
        Tally {
            judged: judged.len(),
            inside: judged.iter().filter(|r| r.inside == Some(true)).count(),
            banded: judged.iter().filter(|r| r.published_in_band.is_some()).count(),
            published_in_band: judged.iter().filter(|r| r.published_in_band == Some(true)).count(),
        }
    }

    /// `N of M` inside the bar, `-` where nothing is judged (a what-if).
    pub fn inside_text(&self) -> String {
        if self.judged == 0 {
            "-".into()
        } else {
            format!("{} of {}", self.inside, self.judged)
        }
    }

    /// `N of M` published figures inside their band, `-` where none has a band.
    pub fn in_band_text(&self) -> String {
        if self.banded == 0 {
            "-".into()
        } else {
            format!("{} of {}", self.published_in_band, self.banded)
        }
    }
}

/// The bars `rows` are judged by, each figure once: `max_latency within 1.5x, avg_latency
/// within 2x, ...` (a count's `within` says `none where the seed has none` where a seed
/// published 0).
pub fn bars_text(rows: &[CompareRow]) -> String {
    let mut seen: Vec<(&str, Bar)> = Vec::new();
    for r in rows.iter().filter(|r| r.inside.is_some()) {
        if let Some(b) = r.bar.filter(|b| !seen.contains(&(r.figure.as_str(), *b))) {
            seen.push((&r.figure, b));
        }
    }
    let parts: Vec<String> = seen
        .iter()
        .map(|(figure, bar)| {
            let zero = rows
                .iter()
                .any(|r| r.figure == *figure && r.bar == Some(*bar) && r.published == Some(0.0));
            let extra = if zero && matches!(bar, Bar::Within(_)) {
                ", none where the seed has none"
            } else {
                ""
            };
            format!("{figure} {}{extra}", bar.describe())
        })
        .collect();
    parts.join("; ")
}

/// An experiment table's last line: `N of M published figures inside the bar (the bar:
/// ...)`, or that it has none (a what-if).
pub fn summary_line(rows: &[CompareRow]) -> String {
    let t = Tally::of(rows);
    if t.judged == 0 {
        return "no published figures (a what-if): nothing judged\n".into();
    }
    let mut out = format!(
        "{} of {} published figures inside the bar (the bar: {})",
        t.inside,
        t.judged,
        bars_text(rows)
    );
    if t.banded > 0 {
        let _ = write!(
            out,
            "; {} of {} published figures inside the model's band",
            t.published_in_band, t.banded
        );
    }
    out.push('\n');
    out
}

/// One line of `reproduce`'s closing summary: an experiment, its seed and its verdicts.
pub struct SummaryRow {
    /// The seed the experiment reproduces (`000`), from its seed file's name.
    pub seed: String,
    pub experiment: String,
    pub tally: Tally,
}

/// The seed number of a seed file (`000_5c15....txt` -> `000`), or the whole name.
pub fn seed_of(seed_file: &str) -> String {
    seed_file.split('_').next().unwrap_or(seed_file).to_string()
}

/// `reproduce`'s closing table over several experiments: per experiment its seed, its
/// published figures inside the bar and the published figures inside the model's band.
pub fn render_summary(rows: &[SummaryRow]) -> String {
    let w = crate::column_width(rows.iter().map(|r| r.experiment.len() + 2), 12);
    let mut out = String::from("\nSummary: published figures inside the bar, and inside the model's band\n");
    let _ = writeln!(
        out,
        "{:<6}{:<w$}{:>16}{:>28}",
        "seed", "experiment", "inside the bar", "published inside its band"
    );
    let mut all = Tally::default();
    for r in rows {
        let _ = writeln!(
            out,
            "{:<6}{:<w$}{:>16}{:>28}",
            r.seed,
            r.experiment,
            r.tally.inside_text(),
            r.tally.in_band_text()
        );
        all.judged += r.tally.judged;
        all.inside += r.tally.inside;
        all.banded += r.tally.banded;
        all.published_in_band += r.tally.published_in_band;
    }
    let _ = writeln!(
        out,
        "{:<6}{:<w$}{:>16}{:>28}",
        "",
        "all",
        all.inside_text(),
        all.in_band_text()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bar_judges_its_kind_of_figure() {
        let w = Bar::Within(1.5);
        assert_eq!(w.holds(126.0, Some(84.0), None), Some(true));
        assert_eq!(w.holds(127.0, Some(84.0), None), Some(false));
        assert_eq!(w.holds(56.0, Some(84.0), None), Some(true));
        assert_eq!(w.holds(55.0, Some(84.0), None), Some(false));
        // Nothing published: none in the model.
        assert_eq!(w.holds(0.0, Some(0.0), None), Some(true));
        assert_eq!(w.holds(1.0, Some(0.0), None), Some(false));
        assert_eq!(w.holds(1.0, None, Some([1.0, 2.0])), None);
        let b = Bar::BucketWithin(2.0);
        assert_eq!(b.holds(64.0, None, Some([128.0, 256.0])), Some(true));
        assert_eq!(b.holds(63.0, None, Some([128.0, 256.0])), Some(false));
        assert_eq!(b.holds(512.0, None, Some([128.0, 256.0])), Some(true));
        assert_eq!(b.holds(513.0, None, Some([128.0, 256.0])), Some(false));
        // The seed's +25 %: 1.125-1.5; a loss is never inside.
        let g = Bar::GainWithin(2.0);
        assert_eq!(g.holds(1.5, Some(1.25), None), Some(true));
        assert_eq!(g.holds(1.13, Some(1.25), None), Some(true));
        assert_eq!(g.holds(1.66, Some(1.25), None), Some(false));
        assert_eq!(g.holds(1.1, Some(1.25), None), Some(false));
        assert_eq!(g.holds(0.8, Some(1.25), None), Some(false));
        assert_eq!(Bar::Equal.holds(0.0, Some(0.0), None), Some(true));
        assert_eq!(Bar::Equal.holds(1.0, Some(2.0), None), Some(false));
        assert_eq!(Bar::Equal.holds(1.0, None, None), None);
    }

    #[test]
    fn a_tally_counts_only_judged_figures_and_says_its_bars() {
        let row = |figure: &str, model: f64, published: Option<f64>, bar: Option<Bar>| {
            let mut r = CompareRow {
                run: "r".into(),
                variant: "v".into(),
                stream: None,
                case: None,
                figure: figure.into(),
                unit: "ms".into(),
                model,
                published,
                published_range: None,
                source: "s".into(),
                bar,
                inside: None,
                band: None,
                published_in_band: None,
            };
            r.judge();
            r
        };
        let mut rows = vec![
            row("max_latency", 88.0, Some(84.0), Some(Bar::Within(1.5))),
            row("max_latency", 6.0, Some(36.0), Some(Bar::Within(1.5))),
            row("writes_over_100ms", 0.0, Some(0.0), Some(Bar::Within(1.5))),
            // A sample count sets the run's length: published, not judged.
            row("samples", 10.0, Some(10.0), None),
            row("max_latency", 1.0, None, Some(Bar::Within(1.5))),
        ];
        rows[0].set_band(Some([60.0, 88.0, 120.0]));
        let t = Tally::of(&rows);
        assert_eq!(
            t,
            Tally {
                judged: 3,
                inside: 2,
                banded: 1,
                published_in_band: 1
            }
        );
        let line = summary_line(&rows);
        assert_eq!(
            line,
            "2 of 3 published figures inside the bar (the bar: max_latency within 1.5x; \
             writes_over_100ms within 1.5x, none where the seed has none); 1 of 1 published figures inside the model's band\n"
        );
        assert!(summary_line(&rows[3..]).contains("no published figures"));
        let s = render_summary(&[
            SummaryRow {
                seed: seed_of("000_5c15.txt"),
                experiment: "mini-ll".into(),
                tally: t,
            },
            SummaryRow {
                seed: "002".into(),
                experiment: "sched-cost".into(),
                tally: Tally::default(),
            },
        ]);
        let cells = |l: &str| {
            s.lines()
                .find(|x| x.contains(l))
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(cells("mini-ll"), ["000", "mini-ll", "2", "of", "3", "1", "of", "1"]);
        assert_eq!(cells("sched-cost"), ["002", "sched-cost", "-", "-"]);
        assert_eq!(cells("all"), ["all", "2", "of", "3", "1", "of", "1"]);
    }
}
