//! `latlab validate`'s verdicts: each stream of a scenario on the model's twin of this
//! machine beside the same stream on the machine itself (issue 31's bar).
//!
//! For every stream both engines measured, seven figures: the sample count, p50, p99, p99.9,
//! maximum, average and missed events. The machine's figure is the median over its runs,
//! with the lowest and highest beside it (its spread); the ratio is model / machine. The
//! judged figures and their bars: p50, p99 and the average within 2x ([`Bar::Within`]), the
//! maximum within 10x. The count, p99.9 and missed events are shown, not judged.
//!
//! **Noise.** A figure the machine's own noise (hypervisor steal, SMIs) decides is marked
//! `noise` and counted on neither side, since the model does not replay that noise. When
//! every machine run was traced (`Stream::host_out`: each sample with the host's time the
//! tracepoints show in it taken out), a tail figure (p99, maximum) is the noise's when
//! taking the host's time out changes its verdict, and that figure is shown beside
//! (`machine_host_out`); the body (p50, average) is judged as measured, since the twin's
//! costs were calibrated on the machine, the host's everyday share of each interrupt in
//! them. Otherwise the calibration's `[host.noise]` decides: a maximum whose excess over the
//! model's is no longer than the longest noise gap measured, and a quantile `q` whose tail
//! (`1 - q` of the samples) the noise could fill by itself: a wakeup due at a time the CPU
//! is lost to a gap is late by it, so the share of the time lost (`lost_percent`) is the
//! share of samples the noise can delay, and a quantile is the noise's when that share is at
//! least `1 - q`; the average is then never the noise's. With `latlab validate --replay-noise` the model also
//! runs with that noise replayed (its gaps on every CPU, `SimConfig::replay_noise`), and each
//! figure set aside as the noise's shows the replayed model's figure beside the kernel-only
//! one ([`with_replayed`]), still counted on neither side: it says whether the machine's
//! noise explains the machine's figure.
//!
//! Pure: runs are given, nothing is run or read here.

use crate::compare::fmt_latency;
use crate::verdict::Bar;
use latlab_core::{LatencyHistogram, Nanos, RunResult, Stream};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A figure of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    Count,
    P50,
    P99,
    #[serde(rename = "p99.9")]
    P999,
    Max,
    Avg,
    Missed,
}

impl Figure {
    /// Every figure, in the order tables show them.
    pub const ALL: [Figure; 7] = [
        Figure::Count,
        Figure::P50,
        Figure::P99,
        Figure::P999,
        Figure::Max,
        Figure::Avg,
        Figure::Missed,
    ];

    /// The figure's name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Count => "count",
            Figure::P50 => "p50",
            Figure::P99 => "p99",
            Figure::P999 => "p99.9",
            Figure::Max => "max",
            Figure::Avg => "avg",
            Figure::Missed => "missed",
        }
    }

    /// The figure's bar, `None` where it is shown but not judged.
    pub fn bar(self) -> Option<Bar> {
        match self {
            Figure::P50 | Figure::P99 | Figure::Avg => Some(Bar::Within(2.0)),
            Figure::Max => Some(Bar::Within(10.0)),
            Figure::Count | Figure::P999 | Figure::Missed => None,
        }
    }

    /// Is the figure a latency (ns), rather than a count?
    fn is_latency(self) -> bool {
        !matches!(self, Figure::Count | Figure::Missed)
    }

    /// The quantile a latency figure is, if it is one.
    fn quantile(self) -> Option<f64> {
        match self {
            Figure::P50 => Some(0.5),
            Figure::P99 => Some(0.99),
            Figure::P999 => Some(0.999),
            _ => None,
        }
    }

    /// The figure of `s`.
    pub fn of(self, s: &Stream) -> f64 {
        match self {
            Figure::Count => s.hist.count() as f64,
            Figure::Missed => s.missed as f64,
            latency => latency.of_latencies(&s.hist),
        }
    }
    /// Is the figure a tail of the distribution (p99, maximum), where the host's rare long
    /// gaps show, rather than its body (p50, average), which the costs the twin was
    /// calibrated with on this machine describe, the host's everyday share of each interrupt
    /// and wakeup in them?
    fn is_tail(self) -> bool {
        matches!(self, Figure::P99 | Figure::Max)
    }

    /// A tail figure of `s` with the host's time out of its samples (`Stream::host_out`),
    /// when the stream has them; `None` for the others.
    pub fn host_out(self, s: &Stream) -> Option<f64> {
        self.is_tail()
            .then_some(s.host_out.as_ref()?)
            .map(|h| self.of_latencies(h))
    }

    /// This latency figure of the latencies `h`.
    fn of_latencies(self, h: &LatencyHistogram) -> f64 {
        match self {
            Figure::Max => h.max() as f64,
            Figure::Avg => h.mean(),
            q => h.quantile(q.quantile().expect("a latency figure")) as f64,
        }
    }
}

/// The machine's noise that is not its kernel's, as `latlab probe calibrate` measured it
/// (`[host.noise]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// The longest gap measured.
    pub max_gap_ns: Nanos,
    /// The share of a CPU's time lost to the gaps (`lost_percent` / 100).
    pub lost_fraction: f64,
}

impl Noise {
    /// Could the noise decide `figure`, the model's being `model` and the machine's `machine`?
    fn decides(self, figure: Figure, model: f64, machine: f64) -> bool {
        match figure {
            Figure::Max => machine > model && machine - model <= self.max_gap_ns as f64,
            f => f.quantile().is_some_and(|q| self.lost_fraction >= 1.0 - q),
        }
    }
}

/// A figure's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model's figure within the bar of the machine's median.
    Inside,
    Outside,
    /// The machine's noise may decide the figure: counted on neither side.
    Noise,
    /// Shown, not judged.
    NotJudged,
}

impl Verdict {
    /// The verdict as tables print it.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Inside => "inside",
            Verdict::Outside => "OUTSIDE",
            Verdict::Noise => "noise",
            Verdict::NotJudged => "-",
        }
    }
}

/// One figure of one stream, model beside machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureRow {
    pub scenario: String,
    pub stream: String,
    pub figure: Figure,
    pub model: f64,
    /// The median over the machine's runs.
    pub machine: f64,
    /// The lowest and highest over the machine's runs.
    pub machine_spread: [f64; 2],
    /// model / machine, `None` where the machine's figure is 0.
    pub ratio: Option<f64>,
    pub verdict: Verdict,
    /// For a figure the noise decides, the model's with the machine's noise replayed
    /// ([`with_replayed`]); not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_replayed: Option<f64>,
    /// For a tail figure (p99, maximum) of traced machine runs, their median with the host's
    /// time taken out of each sample (`Stream::host_out`): the kernel's own figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_host_out: Option<f64>,
    /// For the maximum, the machine's worst sample without the host's time, over its runs,
    /// in one line ([`crate::summary::why`]), when its runs explained their samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_worst: Option<String>,
}

impl FigureRow {
    /// The replayed model's figure within the figure's bar of the machine's?
    fn replayed_within(&self) -> Option<bool> {
        let bar = self.figure.bar()?;
        bar.holds(self.model_replayed?, Some(self.machine), None)
    }

    /// The replayed model's figure for a table cell, with its ratio to the machine's.
    fn replayed_cell(&self) -> String {
        match self.model_replayed {
            Some(v) => format!(
                "{} ({})",
                cell(self.figure, v),
                crate::compare::ratio(self.machine, v).map_or("-".into(), |x| format!("{x:.2}x"))
            ),
            None => String::new(),
        }
    }

    /// The machine's figure with the host's time out for a table cell, with the model's
    /// ratio to it.
    fn host_out_cell(&self) -> String {
        match self.machine_host_out {
            Some(v) => format!(
                "{} ({})",
                cell(self.figure, v),
                crate::compare::ratio(v, self.model).map_or("-".into(), |x| format!("{x:.2}x"))
            ),
            None => String::new(),
        }
    }
}

/// The worst explained sample of `streams` (the same stream's runs) without its host time,
/// in one line; `None` when no kept sample was explained.
fn worst_explained(streams: &[&Stream]) -> Option<String> {
    streams
        .iter()
        .flat_map(|s| &s.worst)
        .filter(|w| !w.attribution.note.is_empty())
        .max_by_key(|w| w.latency_ns.saturating_sub(w.attribution.steal_ns))
        .map(crate::summary::why)
}

/// The lines under the table: for each maximum outside its bar, the machine's worst sample
/// without the host's time, and what held it.
fn why_lines(rows: &[FigureRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.figure == Figure::Max && r.verdict == Verdict::Outside)
        .filter_map(|r| Some(format!("{} / {}: {}", r.scenario, r.stream, r.machine_worst.as_ref()?)))
        .collect()
}

/// The heading of [`why_lines`].
const WHY_HEAD: &str =
    "the maxima outside their bar: the machine's worst sample without the host's time, and what held it";

/// The median of `v` (the mean of the middle two for an even count); `v` is not empty.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// What a scenario's runs gave: its figure rows, and the streams only one engine measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRows {
    pub scenario: String,
    pub rows: Vec<FigureRow>,
    /// Streams the model measured that no machine run did, or the other way round.
    pub unpaired: Vec<String>,
}

/// The rows of scenario `scenario`: every stream both the model's run and each of the
/// machine's `runs` measured (a stream missing from some machine run is unpaired).
pub fn scenario_rows(scenario: &str, model: &RunResult, runs: &[RunResult], noise: Option<Noise>) -> ScenarioRows {
    let mut out = ScenarioRows {
        scenario: scenario.to_string(),
        ..Default::default()
    };
    for s in &model.streams {
        let on_machine: Vec<&Stream> = runs
            .iter()
            .filter_map(|r| r.streams.iter().find(|m| m.name == s.name))
            .collect();
        if runs.is_empty() || on_machine.len() < runs.len() {
            out.unpaired.push(s.name.clone());
            continue;
        }
        let traced = on_machine.iter().all(|m| m.host_out.is_some());
        for figure in Figure::ALL {
            let values: Vec<f64> = on_machine.iter().map(|m| figure.of(m)).collect();
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let machine = median(values);
            let model_v = figure.of(s);
            // Every run traced: the figure with the host's time out, their median.
            let machine_host_out = on_machine
                .iter()
                .map(|m| figure.host_out(m))
                .collect::<Option<Vec<f64>>>()
                .map(median);
            let within = |bar: Bar, of: f64| bar.holds(model_v, Some(of), None) == Some(true);
            let verdict = match (figure.bar(), machine_host_out) {
                (None, _) => Verdict::NotJudged,
                // The trace tells the host's time in the very samples: the host decides the
                // figure when taking it out changes the verdict.
                (Some(bar), Some(own)) if within(bar, machine) != within(bar, own) => Verdict::Noise,
                // Untraced, the calibration's noise says what it may decide.
                (Some(_), None) if !traced && noise.is_some_and(|n| n.decides(figure, model_v, machine)) => {
                    Verdict::Noise
                }
                (Some(bar), _) => match within(bar, machine) {
                    true => Verdict::Inside,
                    false => Verdict::Outside,
                },
            };
            out.rows.push(FigureRow {
                scenario: scenario.to_string(),
                stream: s.name.clone(),
                figure,
                model: model_v,
                machine,
                machine_spread: [lo, hi],
                ratio: crate::compare::ratio(machine, model_v),
                verdict,
                model_replayed: None,
                machine_host_out,
                machine_worst: (figure == Figure::Max).then(|| worst_explained(&on_machine)).flatten(),
            });
        }
    }
    for r in runs {
        for m in &r.streams {
            if !model.streams.iter().any(|s| s.name == m.name) && !out.unpaired.contains(&m.name) {
                out.unpaired.push(m.name.clone());
            }
        }
    }
    out
}

/// Beside each figure of `rows` the noise decides, the figure of the same stream in
/// `replayed`, the model's run with the machine's noise replayed (a stream it lacks leaves
/// the figure without one). The verdicts do not change.
pub fn with_replayed(rows: &mut ScenarioRows, replayed: &RunResult) {
    for r in rows.rows.iter_mut().filter(|r| r.verdict == Verdict::Noise) {
        r.model_replayed = replayed
            .streams
            .iter()
            .find(|s| s.name == r.stream)
            .map(|s| r.figure.of(s));
    }
}

/// What the replayed model says of the figures set aside as the noise's, for the line
/// under the tally; None when the model did not replay the noise.
pub fn replayed_line(rows: &[FigureRow]) -> Option<String> {
    let set_aside: Vec<&FigureRow> = rows.iter().filter(|r| r.model_replayed.is_some()).collect();
    if set_aside.is_empty() {
        return None;
    }
    let within = set_aside.iter().filter(|r| r.replayed_within() == Some(true)).count();
    Some(format!(
        "with the machine's noise replayed in the model: {within} of {} figures set aside as the noise's come within their bar of the machine's (shown, not counted)",
        set_aside.len()
    ))
}

/// The verdicts counted, and issue 31's bar: at least 75 % of the judged p50, p99 and
/// average figures inside, and no maximum off by more than 10x.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// p50, p99 and average figures judged (not the noise's).
    pub judged: usize,
    pub inside: usize,
    /// Maxima judged, and those within 10x.
    pub maxima: usize,
    pub maxima_inside: usize,
    /// Figures the noise may decide, on neither side.
    pub noise: usize,
}

impl Tally {
    /// The verdicts of `rows`.
    pub fn of(rows: &[FigureRow]) -> Tally {
        let mut t = Tally::default();
        for r in rows {
            match (r.figure, r.verdict) {
                (_, Verdict::NotJudged) => {}
                (_, Verdict::Noise) => t.noise += 1,
                (Figure::Max, v) => {
                    t.maxima += 1;
                    t.maxima_inside += usize::from(v == Verdict::Inside);
                }
                (_, v) => {
                    t.judged += 1;
                    t.inside += usize::from(v == Verdict::Inside);
                }
            }
        }
        t
    }

    /// Does the suite meet the bar (at least 75 % inside, every maximum within 10x)? `None`
    /// when nothing was judged.
    pub fn passes(&self) -> Option<bool> {
        (self.judged + self.maxima > 0).then(|| 4 * self.inside >= 3 * self.judged && self.maxima_inside == self.maxima)
    }

    /// The table's last line.
    pub fn line(&self) -> String {
        let pct = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
        format!(
            "{} of {} p50/p99/avg figures within 2x ({:.0} %, bar 75 %); {} of {} maxima within 10x; {} decided by the machine's noise, not counted: {}",
            self.inside,
            self.judged,
            pct(self.inside, self.judged),
            self.maxima_inside,
            self.maxima,
            self.noise,
            match self.passes() {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "nothing judged",
            }
        )
    }
}

/// A figure's value for a table cell.
fn cell(figure: Figure, v: f64) -> String {
    if figure.is_latency() {
        fmt_latency(v.round() as Nanos)
    } else {
        format!("{v:.0}")
    }
}

/// The table `latlab validate` prints: per stream its figures, model beside the machine's
/// median, the machine's spread over `runs` runs, the ratio and the verdict; then the tally.
/// With the model's run replaying the machine's noise ([`with_replayed`]), a last column
/// gives its figure beside each set aside as the noise's, and a line under the tally says
/// how many of them come within their bar.
pub fn render(scenarios: &[ScenarioRows], runs: usize) -> String {
    let extras = extra_columns(scenarios);
    let mut table = vec![vec![
        "scenario / stream".to_string(),
        "figure".into(),
        "model".into(),
        format!("machine (median of {runs})"),
        "machine spread".into(),
        "model/machine".into(),
        "verdict".into(),
    ]];
    table[0].extend(extras.iter().map(|(head, _)| head.to_string()));
    let mut all = Vec::new();
    let mut notes = String::new();
    for sc in scenarios {
        let mut last = String::new();
        for r in &sc.rows {
            let head = format!("{} / {}", r.scenario, r.stream);
            let first = if head == last { String::new() } else { head.clone() };
            last = head;
            table.push(vec![
                first,
                r.figure.name().into(),
                cell(r.figure, r.model),
                cell(r.figure, r.machine),
                format!(
                    "{} - {}",
                    cell(r.figure, r.machine_spread[0]),
                    cell(r.figure, r.machine_spread[1])
                ),
                r.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                r.verdict.mark().into(),
            ]);
            table
                .last_mut()
                .expect("a row")
                .extend(extras.iter().map(|(_, of)| of(r)));
        }
        all.extend(sc.rows.iter().cloned());
        if !sc.unpaired.is_empty() {
            let _ = writeln!(
                notes,
                "{}: measured by one engine only, left out: {}",
                sc.scenario,
                sc.unpaired.join(", ")
            );
        }
    }
    let mut out = crate::compare::render_table(&table);
    out.push_str(&notes);
    let why = why_lines(&all);
    if !why.is_empty() {
        let _ = writeln!(out, "{WHY_HEAD}:");
        for w in &why {
            let _ = writeln!(out, "  {w}");
        }
    }
    out.push_str(&Tally::of(&all).line());
    out.push('\n');
    if let Some(line) = replayed_line(&all) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A column shown only when some row has a figure for it: its heading and its cell.
type Extra = (&'static str, fn(&FigureRow) -> String);

/// The columns after the verdict that `scenarios`' rows fill: the machine's maximum with
/// the host's time out (traced runs), the model's figure with the noise replayed.
fn extra_columns(scenarios: &[ScenarioRows]) -> Vec<Extra> {
    let rows = || scenarios.iter().flat_map(|s| &s.rows);
    let mut v: Vec<Extra> = Vec::new();
    if rows().any(|r| r.machine_host_out.is_some()) {
        v.push(("machine, host's time out", FigureRow::host_out_cell));
    }
    if rows().any(|r| r.model_replayed.is_some()) {
        v.push(("model, noise replayed", FigureRow::replayed_cell));
    }
    v
}

/// The element id of scenario `name`'s section on the HTML page: `sc-` and the name with
/// anything but ASCII letters, digits, `-` and `_` as `-`.
pub fn anchor(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("sc-{safe}")
}

/// [`render`] as HTML for the report page: the tally first (PASS or FAIL), then the table,
/// a row group per stream whose name links to its scenario's section ([`anchor`]), each
/// verdict's cell classed `inside`, `outside` or `noise`; then what one engine alone measured.
pub fn render_html(scenarios: &[ScenarioRows], runs: usize) -> String {
    use crate::html::escape;
    let all: Vec<FigureRow> = scenarios.iter().flat_map(|s| s.rows.iter().cloned()).collect();
    let t = Tally::of(&all);
    let class = match t.passes() {
        Some(true) => "pass",
        Some(false) => "fail",
        None => "note",
    };
    let mut out = format!("<p class=\"{class}\">{}</p>\n", escape(&t.line()));
    let replayed = replayed_line(&all);
    if let Some(line) = &replayed {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(line));
    }
    let extras = extra_columns(scenarios);
    let _ = writeln!(
        out,
        "<table class=\"num verdicts\">\n<thead><tr><th>scenario / stream</th><th>figure</th><th>model</th><th>machine (median of {runs})</th><th>machine spread</th><th>model/machine</th><th>verdict</th>{}</tr></thead>",
        extras.iter().map(|(head, _)| format!("<th>{}</th>", escape(head))).collect::<String>()
    );
    for sc in scenarios {
        let mut streams: Vec<&str> = sc.rows.iter().map(|r| r.stream.as_str()).collect();
        streams.dedup();
        for stream in streams {
            let rows: Vec<&FigureRow> = sc.rows.iter().filter(|r| r.stream == stream).collect();
            out.push_str("<tbody>\n");
            for (k, r) in rows.iter().enumerate() {
                out.push_str("<tr>");
                if k == 0 {
                    let _ = write!(
                        out,
                        "<th rowspan=\"{}\"><a href=\"#{}\">{}</a> / {}</th>",
                        rows.len(),
                        anchor(&sc.scenario),
                        escape(&sc.scenario),
                        escape(stream)
                    );
                }
                let v = match r.verdict {
                    Verdict::Inside => "inside",
                    Verdict::Outside => "outside",
                    Verdict::Noise => "noise",
                    Verdict::NotJudged => "",
                };
                let _ = write!(
                    out,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{} - {}</td><td>{}</td><td class=\"{v}\">{}</td>",
                    r.figure.name(),
                    cell(r.figure, r.model),
                    cell(r.figure, r.machine),
                    cell(r.figure, r.machine_spread[0]),
                    cell(r.figure, r.machine_spread[1]),
                    r.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                    r.verdict.mark()
                );
                for (_, of) in &extras {
                    let _ = write!(out, "<td>{}</td>", escape(&of(r)));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</tbody>\n");
        }
    }
    out.push_str("</table>\n");
    let why = why_lines(&all);
    if !why.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}:</p>\n<ul class=\"note\">", escape(WHY_HEAD));
        for w in &why {
            let _ = writeln!(out, "<li>{}</li>", escape(w));
        }
        out.push_str("</ul>\n");
    }
    for sc in scenarios.iter().filter(|s| !s.unpaired.is_empty()) {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}: measured by one engine only, left out: {}</p>",
            escape(&sc.scenario),
            escape(&sc.unpaired.join(", "))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::{Engine, RunMeta};

    fn run(engine: Engine, samples: &[(&str, &[Nanos])]) -> RunResult {
        let meta = RunMeta {
            engine,
            machine: "m".into(),
            kernel: "k".into(),
            workload: "w".into(),
            seed: 0,
            duration_ns: 1_000_000_000,
            version: "0".into(),
            settings: Default::default(),
        };
        let mut r = RunResult::new(meta);
        for (name, vs) in samples {
            let mut s = Stream::new(*name, "wakeup");
            for &v in *vs {
                s.hist.record(v);
            }
            r.streams.push(s);
        }
        r
    }

    fn row<'a>(rows: &'a ScenarioRows, stream: &str, f: Figure) -> &'a FigureRow {
        rows.rows.iter().find(|r| r.stream == stream && r.figure == f).unwrap()
    }

    #[test]
    fn the_machines_figure_is_the_median_over_its_runs_with_its_spread() {
        let model = run(Engine::Sim, &[("t0", &[10_000; 100])]);
        let runs: Vec<RunResult> = [8_000, 30_000, 12_000]
            .iter()
            .map(|&v| run(Engine::Probe, &[("t0", &[v; 100])]))
            .collect();
        let rows = scenario_rows("idle", &model, &runs, None);
        let p50 = row(&rows, "t0", Figure::P50);
        // hdrhistogram keeps 3 significant digits: 12000 reads back within 0.1 %.
        assert!((p50.machine - 12_000.0).abs() < 20.0, "{}", p50.machine);
        assert!((p50.machine_spread[0] - 8_000.0).abs() < 20.0);
        assert!((p50.machine_spread[1] - 30_000.0).abs() < 40.0);
        assert_eq!(p50.verdict, Verdict::Inside);
        assert_eq!(row(&rows, "t0", Figure::Count).verdict, Verdict::NotJudged);
        assert_eq!(row(&rows, "t0", Figure::Count).machine, 100.0);
    }

    #[test]
    fn a_figure_off_by_more_than_its_bar_is_outside_and_a_max_has_10x() {
        let model = run(Engine::Sim, &[("t0", &[1_000; 100])]);
        let runs = vec![run(Engine::Probe, &[("t0", &[5_000; 100])])];
        let rows = scenario_rows("s", &model, &runs, None);
        assert_eq!(row(&rows, "t0", Figure::P50).verdict, Verdict::Outside);
        assert_eq!(row(&rows, "t0", Figure::Avg).verdict, Verdict::Outside);
        assert_eq!(row(&rows, "t0", Figure::Max).verdict, Verdict::Inside);
        let t = Tally::of(&rows.rows);
        assert_eq!((t.judged, t.inside, t.maxima, t.maxima_inside), (3, 0, 1, 1));
        assert_eq!(t.passes(), Some(false));
    }

    #[test]
    fn a_max_within_the_longest_noise_gap_of_the_models_is_the_noises() {
        let model = run(Engine::Sim, &[("t0", &[1_000; 100])]);
        let mut spike: Vec<Nanos> = vec![1_000; 99];
        spike.push(200_000);
        let runs = vec![run(Engine::Probe, &[("t0", &spike)])];
        let quiet = Noise {
            max_gap_ns: 250_000,
            lost_fraction: 0.000_025,
        };
        let rows = scenario_rows("s", &model, &runs, Some(quiet));
        assert_eq!(row(&rows, "t0", Figure::Max).verdict, Verdict::Noise);
        // 0.0025 % of the time lost: no quantile is the noise's.
        assert_eq!(row(&rows, "t0", Figure::P99).verdict, Verdict::Inside);
        let short = Noise {
            max_gap_ns: 50_000,
            ..quiet
        };
        let rows = scenario_rows("s", &model, &runs, Some(short));
        assert_eq!(row(&rows, "t0", Figure::Max).verdict, Verdict::Outside);
        let busy = Noise {
            max_gap_ns: 250_000,
            lost_fraction: 0.025,
        };
        let rows = scenario_rows("s", &model, &runs, Some(busy));
        assert_eq!(row(&rows, "t0", Figure::P99).verdict, Verdict::Noise);
        // The spike triples the average, and the average is never put down to the noise.
        assert_eq!(row(&rows, "t0", Figure::Avg).verdict, Verdict::Outside);
        assert_eq!(Tally::of(&rows.rows).noise, 2, "p99 and the max");
    }

    #[test]
    fn the_replayed_models_figure_stands_beside_those_the_noise_decides_and_counts_for_nothing() {
        let model = run(Engine::Sim, &[("t0", &[1_000; 100])]);
        let mut spike: Vec<Nanos> = vec![1_000; 99];
        spike.push(200_000);
        let runs = vec![run(Engine::Probe, &[("t0", &spike)])];
        let noise = Noise {
            max_gap_ns: 250_000,
            lost_fraction: 0.025,
        };
        let mut rows = scenario_rows("s", &model, &runs, Some(noise));
        let before = Tally::of(&rows.rows);
        let plain = render(std::slice::from_ref(&rows), 1);
        assert!(!plain.contains("noise replayed"), "{plain}");
        let mut replayed_spike = vec![1_000; 99];
        replayed_spike.push(150_000);
        with_replayed(&mut rows, &run(Engine::Sim, &[("t0", &replayed_spike)]));
        let max = row(&rows, "t0", Figure::Max);
        assert_eq!(
            (max.verdict, max.model_replayed.map(|v| v.round())),
            (Verdict::Noise, Some(150_000.0))
        );
        assert!(row(&rows, "t0", Figure::P99).model_replayed.is_some());
        assert_eq!(
            row(&rows, "t0", Figure::P50).model_replayed,
            None,
            "judged: none beside it"
        );
        assert_eq!(Tally::of(&rows.rows), before, "the counting is unchanged");
        let text = render(std::slice::from_ref(&rows), 1);
        assert!(text.contains("model, noise replayed"), "{text}");
        assert!(text.contains("150.0 us (0.75x)"), "{text}");
        assert!(
            text.contains("noise replayed in the model: 2 of 2 figures set aside"),
            "{text}"
        );
        let json = serde_json::to_string(&rows).unwrap();
        assert_eq!(json.matches("\"model_replayed\"").count(), 2, "{json}");
        let html = render_html(&[rows], 1);
        assert!(html.contains("<th>model, noise replayed</th>"), "{html}");
    }

    /// A traced machine run of stream t0: 99 samples of 10 us and one of 3 ms, of which
    /// `host` ns were the host's.
    fn traced(host: Nanos) -> RunResult {
        let mut spike: Vec<Nanos> = vec![10_000; 99];
        spike.push(3_000_000);
        let mut r = run(Engine::Probe, &[("t0", &spike)]);
        let mut own = LatencyHistogram::new();
        own.record_n(10_000, 99);
        own.record(3_000_000 - host);
        r.streams[0].host_out = Some(own);
        r
    }

    #[test]
    fn a_traced_tail_is_the_hosts_when_its_host_time_decides_the_verdict() {
        let mut quiet: Vec<Nanos> = vec![10_000; 99];
        quiet.push(30_000);
        let model = run(Engine::Sim, &[("t0", &quiet)]);
        // Rules that would set any of these maxima and p99s aside: the trace decides instead.
        let noise = Some(Noise {
            max_gap_ns: 5_000_000,
            lost_fraction: 0.5,
        });
        // 3 ms, 2.975 ms of it the host's: 25 us of the kernel's.
        let rows = scenario_rows("s", &model, &[traced(2_975_000)], noise);
        let max = row(&rows, "t0", Figure::Max);
        assert_eq!(max.verdict, Verdict::Noise);
        assert!((max.machine_host_out.unwrap() - 25_000.0).abs() < 30.0, "{max:?}"); // The average, 40 us on the machine and 10.15 us without the host, is judged as
                                                                                     // measured (the body of the distribution, which the calibrated costs describe): the
                                                                                     // model's 10.2 us is outside; the p50 inside.
        assert_eq!(row(&rows, "t0", Figure::Avg).verdict, Verdict::Outside);
        assert_eq!(row(&rows, "t0", Figure::P50).verdict, Verdict::Inside);
        assert_eq!(row(&rows, "t0", Figure::Avg).machine_host_out, None, "the tails' alone");
        let text = render(std::slice::from_ref(&rows), 1);
        assert!(text.contains("machine, host's time out"), "{text}");
        assert!(text.contains("25.0 us (1.20x)"), "{text}"); // The same 3 ms with no host time in it: the kernel's, judged, outside; the p99
                                                             // (10 us either way) inside, though the lost time's rule would set it aside.
        let mut kernel = traced(0);
        let attribution = latlab_core::Attribution {
            preempt_wait_ns: 2_990_000,
            tasks: vec![latlab_core::TaskSlice {
                comm: "khugepaged".into(),
                pid: 38,
                ns: 2_995_000,
            }],
            note: "ftrace".into(),
            ..Default::default()
        };
        let worst = latlab_core::Sample {
            at_ns: 0,
            latency_ns: 3_000_000,
            tag: Default::default(),
            attribution,
        };
        kernel.streams[0].offer_worst(worst, 10);
        let rows = scenario_rows("s", &model, &[kernel], noise);
        let max = row(&rows, "t0", Figure::Max);
        assert_eq!(max.verdict, Verdict::Outside);
        // Under the table, what held the machine's worst sample.
        let text = render(std::slice::from_ref(&rows), 1);
        assert!(
            text.contains("  s / t0: 3.000 ms: khugepaged/38 on the CPU 2.995 ms; waiting for preemption 2.990 ms\n"),
            "{text}"
        );
        assert!(text.trim_end().lines().last().unwrap().contains("within 2x"), "{text}");
        assert!(render_html(std::slice::from_ref(&rows), 1).contains("<li>s / t0: 3.000 ms: khugepaged/38"));
        assert_eq!(row(&rows, "t0", Figure::P99).verdict, Verdict::Inside);
        // Untraced: the calibration's rules.
        let mut plain = traced(0);
        plain.streams[0].host_out = None;
        let rows = scenario_rows("s", &model, &[plain], noise);
        assert_eq!(row(&rows, "t0", Figure::Max).verdict, Verdict::Noise);
        assert_eq!(row(&rows, "t0", Figure::P99).verdict, Verdict::Noise);
        assert_eq!(
            row(&rows, "t0", Figure::Avg).verdict,
            Verdict::Outside,
            "never the noise's"
        );
        assert!(!render(&[rows], 1).contains("host's time out"));
    }

    #[test]
    fn streams_one_engine_lacks_are_named_not_judged() {
        let model = run(Engine::Sim, &[("a", &[1_000]), ("b", &[1_000])]);
        let runs = vec![
            run(Engine::Probe, &[("a", &[1_000]), ("c", &[1_000])]),
            run(Engine::Probe, &[("a", &[1_000]), ("b", &[1_000])]),
        ];
        let rows = scenario_rows("s", &model, &runs, None);
        assert_eq!(rows.unpaired, ["b", "c"]);
        assert!(rows.rows.iter().all(|r| r.stream == "a"));
        let text = render(&[rows], 2);
        assert!(text.contains("s / a"), "{text}");
        assert!(text.contains("left out: b, c"), "{text}");
        assert!(text.trim_end().ends_with("PASS"), "{text}");
    }

    #[test]
    fn the_bar_is_three_quarters_inside_and_every_max_within_10x() {
        let mut t = Tally {
            judged: 4,
            inside: 3,
            maxima: 2,
            maxima_inside: 2,
            noise: 0,
        };
        assert_eq!(t.passes(), Some(true));
        t.inside = 2;
        assert_eq!(t.passes(), Some(false));
        t.inside = 4;
        t.maxima_inside = 1;
        assert_eq!(t.passes(), Some(false));
        assert_eq!(Tally::default().passes(), None);
    }

    #[test]
    fn the_html_table_links_each_stream_and_classes_each_verdict() {
        let model = run(Engine::Sim, &[("t<0>", &[1_000; 100])]);
        let runs = vec![run(Engine::Probe, &[("t<0>", &[5_000; 100])])];
        let rows = scenario_rows("idle & co", &model, &runs, None);
        let html = render_html(&[rows], 1);
        assert!(html.starts_with("<p class=\"fail\">0 of 3 p50/p99/avg"), "{html}");
        assert!(
            html.contains("<th rowspan=\"7\"><a href=\"#sc-idle---co\">idle &amp; co</a> / t&lt;0&gt;</th>"),
            "{html}"
        );
        assert_eq!(html.matches("<td class=\"outside\">OUTSIDE</td>").count(), 3, "{html}");
        assert_eq!(
            html.matches("<td class=\"inside\">inside</td>").count(),
            1,
            "the max, within 10x"
        );
        assert_eq!(html.matches("<tbody>").count(), 1);
    }
}
