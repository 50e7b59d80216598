//! The bands `latlab reproduce` lays beside its figures without drawing them anew: each
//! built-in experiment's `latlab uncertainty NAME --samples 64 --json` output, stored in
//! `experiments/bands/NAME.json` and compiled in. A stored band is used only for a figure
//! whose as-built value it was made with; one the model has since moved is stale, and
//! `reproduce` says so with the command that redraws it ([`redraw_command`]).

use crate::uncertainty::Report;
use latlab_report::seed_table::CompareRow;

/// Each built-in experiment's stored report, by name.
pub use latlab_exp::builtin::BANDS as STORED;

/// What the stored bands gave a set of rows.
#[derive(Debug, PartialEq)]
pub enum Attached {
    /// Every row has its band.
    All { samples: usize },
    /// No report is stored for the experiment.
    NoneStored,
    /// These rows' as-built figures differ from the stored report's (or it lacks them).
    Stale(Vec<String>),
}

/// The stored report of experiment `name`.
pub fn stored(name: &str) -> Option<Result<Report, String>> {
    STORED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| serde_json::from_str(text).map_err(|e| format!("experiments/bands/{n}.json: {e}")))
}

/// The command that redraws experiment `name`'s stored bands, with as many draws as its
/// stored report has (64 where none is stored).
pub fn redraw_command(name: &str) -> String {
    let samples = stored(name).and_then(Result::ok).map_or(64, |r| r.samples);
    format!("latlab uncertainty {name} --samples {samples} --json > experiments/bands/{name}.json")
}

/// The command that re-runs experiment `name`'s stored draws on today's model and stores
/// the bands they give (after a change of mechanism: the draws stay, the figures move).
pub fn rerun_command(name: &str) -> String {
    format!("latlab uncertainty {name} --stored-draws --json > experiments/bands/{name}.json")
}

/// Put the stored band on each of `rows` whose figure the stored report was made with.
pub fn attach(name: &str, rows: &mut [CompareRow]) -> Result<Attached, String> {
    let Some(report) = stored(name).transpose()? else {
        return Ok(Attached::NoneStored);
    };
    let mut stale = Vec::new();
    for row in rows.iter_mut() {
        let same = report.rows.iter().find(|b| {
            let s = &b.row;
            s.variant == row.variant
                && s.stream == row.stream
                && s.case == row.case
                && s.figure == row.figure
                && s.model == row.model
        });
        match same {
            Some(b) => row.set_band(b.row.band),
            None => stale.push(format!(
                "{}{} {}",
                row.variant,
                row.stream.as_ref().map(|s| format!(" {s}")).unwrap_or_default(),
                row.figure
            )),
        }
    }
    Ok(if stale.is_empty() {
        Attached::All {
            samples: report.samples,
        }
    } else {
        Attached::Stale(stale)
    })
}
