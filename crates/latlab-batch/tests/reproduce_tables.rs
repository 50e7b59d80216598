//! Every built-in experiment run once, as `latlab reproduce` runs it, and both of its outputs
//! made from that one run: the text table must show each figure of the `--json` rows on its
//! own run's row, with the same verdict, and end with the same count; the stored bands must
//! have been drawn from the model as it is built today.

use latlab_batch::bands::{self, Attached};
use latlab_batch::uncertainty::Plan;
use latlab_batch::{text, CompareRow, Tally};
use latlab_core::RunResult;
use latlab_exp::{Experiment, TableKind};
use latlab_report::verdict::mark;
use rayon::prelude::*;

/// The figures each table shows on its runs' rows, and the heading of the block that shows
/// them (a block: the lines between two blank lines).
fn block_of(table: TableKind, r: &CompareRow) -> Option<&'static str> {
    let sysbench = r.stream.as_deref() == Some("sysbench-rndrw");
    match (table, r.figure.as_str()) {
        (TableKind::LogHistogram | TableKind::MaxLatency, "max_latency") => Some("Worst case, model vs seed"),
        (TableKind::PosixTimer, "max_latency" | "avg_latency" | "missed_events") => Some("maximum latency (us)"),
        (TableKind::PreemptOff, "max_latency" | "swap_max_latency") => Some("max model"),
        (TableKind::Percentiles, _) => Some(latlab_batch::text::PERCENTILES_HEAD),
        (
            TableKind::WriteLatency,
            "max_request_latency" | "requests_per_sec" | "mix_throughput" | "throughput_gain",
        ) if sysbench => Some("sysbench fileio rndrw"),
        (
            TableKind::WriteLatency,
            "max_write_latency" | "writes_over_100ms" | "write_throughput" | "throughput_gain",
        ) => Some("worst write (ms)"),
        _ => None,
    }
}

/// A printed number matches `x` to the decimals it is printed with.
fn shows(token: &str, x: f64) -> bool {
    let Ok(v) = token.parse::<f64>() else { return false };
    let decimals = token.split_once('.').map_or(0, |(_, d)| d.len());
    (v - x).abs() <= 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9
}

/// Where the text of `exp` does not show a row of its JSON as the JSON holds it.
fn text_vs_json(exp: &Experiment, text: &str, rows: &[CompareRow], problems: &mut Vec<String>) {
    let blocks: Vec<&str> = text.split("\n\n").collect();
    for r in rows {
        let Some(head) = block_of(exp.table, r) else { continue };
        let what = format!("{}: run `{}` {} = {}", exp.name, r.run, r.figure, r.model);
        let Some(block) = blocks.iter().find(|b| b.contains(head)) else {
            problems.push(format!("{what}: no block headed `{head}` in the text"));
            continue;
        };
        let lines: Vec<&str> = block
            .lines()
            .filter(|l| {
                l.strip_prefix(r.run.as_str())
                    .is_some_and(|rest| rest.starts_with("  "))
            })
            .collect();
        let [line] = lines[..] else {
            problems.push(format!("{what}: {} lines for the run in `{head}`", lines.len()));
            continue;
        };
        let tokens: Vec<&str> = line[r.run.len()..].split_whitespace().collect();
        // The verdict printed after the figure (past the seed's figure where the table puts
        // it second, before any other figure) is the row's; where the figure is printed
        // twice (seed 003's stretch and its get_swap_page stretch can be one), one of them.
        let seeds = |t: &str| r.published.is_some_and(|p| shows(t, p));
        let verdict_after = |at: usize| {
            let after = &tokens[at + 1..];
            let next_number = after
                .iter()
                .position(|t| t.parse::<f64>().is_ok() && !seeds(t))
                .unwrap_or(after.len());
            after[..next_number]
                .iter()
                .find(|t| **t == "inside" || **t == "OUTSIDE")
                .copied()
        };
        let shown: Vec<Option<&str>> = (0..tokens.len())
            .filter(|&i| shows(tokens[i], r.model))
            .map(verdict_after)
            .collect();
        let want = r.inside.map(|v| mark(Some(v)));
        if shown.is_empty() {
            problems.push(format!("{what}: not on its row: {line}"));
        } else if !shown.contains(&want) {
            problems.push(format!(
                "{what}: verdict {shown:?} printed, {want:?} in the JSON: {line}"
            ));
        }
    }
    let t = Tally::of(rows);
    let count = if t.judged == 0 {
        "no published figures (a what-if)".to_string()
    } else {
        format!("{} of {} published figures inside the bar", t.inside, t.judged)
    };
    if !text.contains(&count) {
        problems.push(format!("{}: the text does not say `{count}`", exp.name));
    }
}

/// Where `exp`'s stored bands were not drawn from today's model: a figure as built that is not
/// the stored one (every row must carry its band), or, spot-checked, the first draw of the
/// run that simulated least giving other figures than the stored draw.
fn bands_vs_model(exp: &Experiment, results: &[RunResult], attached: &Attached, problems: &mut Vec<String>) {
    let redraw = bands::redraw_command(&exp.name);
    match attached {
        Attached::All { .. } => {}
        Attached::Stale(rows) => {
            problems.push(format!(
                "{}: stored bands made with other figures for {}: redraw them with `{redraw}`",
                exp.name,
                rows.join(", ")
            ));
            return;
        }
        Attached::NoneStored => {
            problems.push(format!(
                "{}: no stored bands: draw them with `{redraw}` and list the file in latlab-batch's bands::STORED",
                exp.name
            ));
            return;
        }
    }
    let stored = bands::stored(&exp.name).expect("attached").expect("parsed");
    let run = (0..results.len())
        .min_by_key(|&i| results[i].meta.duration_ns)
        .expect("an experiment has runs");
    // The stored draws themselves, by constant key: the check is of the model, not of the
    // design's random stream (a constant that joins the catalog shifts the draws of the
    // constants after it in a fresh design).
    let plan = Plan::of_report(exp, &stored);
    let drawn = plan.job(exp.runs.len() + run).expect("the first draw's job");
    for r in &drawn {
        let same = stored.rows.iter().find(|b| {
            let s = &b.row;
            // By run too: one variant may run on several machines (rt-vs-lazy).
            s.run == r.run && s.variant == r.variant && s.stream == r.stream && s.case == r.case && s.figure == r.figure
        });
        if same.and_then(|b| b.values.first()) != Some(&r.model) {
            problems.push(format!(
                "{}: run `{}` {} in the stored bands' first draw is {:?}, the model gives {} today: re-run the stored draws with `{}`",
                exp.name,
                r.run,
                r.figure,
                same.and_then(|b| b.values.first()),
                r.model,
                bands::rerun_command(&exp.name)
            ));
        }
    }
}

#[test]
fn every_experiments_text_shows_its_json_and_its_bands_are_drawn_from_todays_model() {
    let exps: Vec<Experiment> = latlab_exp::builtin::EXPERIMENTS
        .iter()
        .map(|(name, _)| latlab_exp::builtin_experiment(name).unwrap())
        .collect();
    // Every run of every experiment in one pool, as `reproduce` runs each experiment's.
    let runs: Vec<(&Experiment, usize)> = exps
        .iter()
        .flat_map(|e| (0..e.runs.len()).map(move |i| (e, i)))
        .collect();
    let mut results: Vec<RunResult> = runs
        .par_iter()
        .map(|(e, i)| {
            latlab_batch::simulate(&e.runs[*i].config, &mut |_, _| std::ops::ControlFlow::Continue(())).unwrap()
        })
        .collect::<Vec<_>>();
    let mut problems = Vec::new();
    for exp in &exps {
        let rest = results.split_off(exp.runs.len());
        let mine = std::mem::replace(&mut results, rest);
        let (rows, attached) = latlab_batch::banded_rows(exp, &mine).unwrap();
        // The JSON as `reproduce --json` prints it, read back.
        let doc = latlab_batch::reproduce_doc(exp, &rows);
        let json: Vec<CompareRow> = serde_json::from_value(doc["rows"].clone()).unwrap();
        let summary: Tally = serde_json::from_value(doc["summary"].clone()).unwrap();
        assert_eq!(summary, Tally::of(&json), "{}", exp.name);
        let text = text::report(exp, &mine, &rows, Some(&attached), false);
        text_vs_json(exp, &text, &json, &mut problems);
        bands_vs_model(exp, &mine, &attached, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself: a table that shows another run's figure on a run's row, or another
/// verdict, is caught.
#[test]
fn a_row_showing_another_runs_figure_is_caught() {
    let exp = latlab_exp::builtin_experiment("sched-cost").unwrap();
    let row = |run: &str, model: f64| CompareRow {
        run: run.into(),
        variant: "v".into(),
        stream: None,
        case: None,
        figure: "max_latency".into(),
        unit: "ms".into(),
        model,
        published: Some(84.0),
        published_range: None,
        source: "s".into(),
        bar: Some(latlab_report::verdict::Bar::Within(1.5)),
        inside: Some(model < 126.0),
        band: None,
        published_in_band: None,
    };
    let text = "t\n\nWorst case, model vs seed\nKernel  model\nA, 1 CPU  505.1 ms   84.0 ms  6.01x OUTSIDE\nA  88.5 ms  84.0 ms  1.05x inside\n1 of 2 published figures inside the bar\n";
    let mut problems = Vec::new();
    text_vs_json(&exp, text, &[row("A", 88.5), row("A, 1 CPU", 558.7)], &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("`A, 1 CPU`") && problems[0].contains("not on its row"));
    let mut problems = Vec::new();
    let wrong =
        "Worst case, model vs seed\nA  88.5 ms  84.0 ms  1.05x OUTSIDE\n0 of 1 published figures inside the bar\n";
    text_vs_json(&exp, wrong, &[row("A", 88.5)], &mut problems);
    assert!(
        problems.len() == 2 && problems[0].contains("verdict [Some(\"OUTSIDE\")] printed"),
        "{problems:?}"
    );
}
