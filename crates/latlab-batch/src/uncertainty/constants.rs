//! The constants an experiment rests on, each with the range its source allows: every number
//! field of the machine profile (its `[uncertainty]` table), both numbers of every catalog
//! cost (`#[spread(...)]`) and every workload size the experiment's script has
//! (`workload::sizes`). Each is named by its `--vary` key, so a draw is applied through the
//! same path as a sweep's setting (`latlab_exp::vary`).

use latlab_exp::{Experiment, FieldValue};
use latlab_sim::kernel::catalog::COST_ITEMS;
use latlab_sim::spread::Spread;
use latlab_sim::workload::sizes;
use serde::{Deserialize, Serialize};

/// One varied constant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Constant {
    /// Its `--vary` key (`machine.mem_latency_ns`, `catalog.unfile.misses`, `make.cc_ms_max`).
    pub key: String,
    /// The value the experiment gives it.
    pub value: f64,
    /// Its source's class (`counted`) or bounds (`160..197`).
    pub spread: String,
    /// The bounds it is drawn within, log-uniformly.
    pub low: f64,
    pub high: f64,
    /// Whole numbers only (rounded after the draw).
    pub whole: bool,
    /// The constant whose draw it takes (the two ends of one range), by index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawn_with: Option<usize>,
}

/// The constants `exp` rests on that its sources let vary, in a fixed order (machine fields
/// in the profile's order, when every run has the same machine; catalog items in the
/// catalog's, sizes in `SIZES`'). An error names
/// a machine field without a spread (a user's machine file) or bounds that miss a value.
pub fn constants(exp: &Experiment) -> Result<Vec<Constant>, String> {
    let Some(first) = exp.runs.first() else {
        return Ok(Vec::new());
    };
    let m = &first.config.machine;
    let mut out = Vec::new();
    let mut push = |key: String, value: f64, spread: Spread, whole: bool| -> Result<(), String> {
        spread.check(value).map_err(|why| format!("{key}: {why}"))?;
        if let Some((low, high)) = spread.bounds(value) {
            out.push(Constant {
                key,
                value,
                spread: spread.name(),
                low,
                high,
                whole,
                drawn_with: None,
            });
        }
        Ok(())
    };
    // An experiment on more than one machine (rt-vs-lazy) draws no machine field: a drawn
    // value would be set on every run's machine, and each machine's fields have their own
    // values and sources. Its bands span the catalog's and the workload's constants only.
    let one_machine = exp.runs.iter().all(|r| r.config.machine.name == m.name);
    for (field, v) in latlab_exp::machine_values(m).into_iter().filter(|_| one_machine) {
        let (value, whole) = match v {
            FieldValue::Whole(i) => (i as f64, true),
            FieldValue::Number(x) => (x, false),
            FieldValue::Flag(_) => continue,
        };
        let spread = m.uncertainty.get(&field).ok_or_else(|| {
            format!(
                "machine {}: field `{field}` states no spread in its [uncertainty] table (given, measured, counted, estimate or [lo, hi]: docs/fidelity.md \"Uncertainty\")",
                m.name
            )
        })?;
        push(format!("machine.{field}"), value, spread, whole)?;
    }
    for item in COST_ITEMS {
        let spread = item
            .spread
            .ok_or_else(|| format!("catalog item `{}` states no spread", item.name))?;
        let o = m.catalog.get(item.name).copied().unwrap_or_default();
        let instr = o.instr.unwrap_or(item.instructions);
        let misses = o.misses.unwrap_or(item.misses);
        push(format!("catalog.{}.instr", item.name), instr, spread.instr, false)?;
        push(format!("catalog.{}.misses", item.name), misses, spread.misses, false)?;
    }
    let commands = &first.config.workload.commands;
    for size in sizes::SIZES {
        if let Some(v) = sizes::get(commands, size.key) {
            push(size.key.to_string(), v as f64, size.spread, true)?;
        }
    }
    for (key, with) in sizes::DRAWN_WITH {
        let lead = out.iter().position(|c| c.key == *with);
        if let Some(c) = out.iter_mut().find(|c| c.key == *key) {
            c.drawn_with = lead;
        }
    }
    Ok(out)
}

impl Constant {
    /// The value at position `u` (0..1) of its range, log-uniformly; whole constants rounded
    /// to the nearest whole number within the range.
    pub fn at(&self, u: f64) -> f64 {
        let x = (self.low.ln() + u * (self.high.ln() - self.low.ln())).exp();
        if self.whole {
            x.round().clamp(self.low.ceil(), self.high.floor().max(self.low.ceil()))
        } else {
            x
        }
    }

    /// The value as `--vary` reads it: a whole number without a point, any other in Rust's
    /// shortest form that reads back to the same f64.
    pub fn text(&self, v: f64) -> String {
        if self.whole {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_000_experiment_rests_on_its_machine_catalog_and_compile_times() {
        let exp = latlab_exp::builtin_experiment("mini-ll").unwrap();
        let c = constants(&exp).unwrap();
        let get = |k: &str| c.iter().find(|c| c.key == k);
        let mem = get("machine.mem_latency_ns").unwrap();
        assert_eq!((mem.value, mem.low, mem.high), (175.0, 160.0, 197.0));
        let unfile = get("catalog.unfile.misses").unwrap();
        assert_eq!(unfile.spread, "counted");
        assert!((unfile.low - 4.2).abs() < 1e-9 && (unfile.high - 7.8).abs() < 1e-9);
        // Given by the seed: not drawn.
        assert!(get("machine.cpu_mhz").is_none() && get("machine.ram_mib").is_none());
        assert!(get("make.jobs").is_none());
        // A zero stays zero.
        assert!(get("catalog.free_block.misses").is_none());
        let lead = c.iter().position(|c| c.key == "make.cc_ms_min").unwrap();
        assert_eq!(get("make.cc_ms_max").unwrap().drawn_with, Some(lead));
        // Every constant's bounds hold its value; every one reads back through --vary.
        for k in &c {
            assert!(k.low <= k.value && k.value <= k.high, "{k:?}");
            for u in [0.0, 0.5, 0.999] {
                latlab_exp::vary(&exp, "test", &k.key, &k.text(k.at(u))).unwrap();
            }
        }
    }

    #[test]
    fn draws_are_log_uniform_and_whole_where_the_field_is() {
        let c = Constant {
            key: "k".into(),
            value: 6.0,
            spread: "estimate".into(),
            low: 3.0,
            high: 12.0,
            whole: false,
            drawn_with: None,
        };
        assert!((c.at(0.0) - 3.0).abs() < 1e-9 && (c.at(0.5) - 6.0).abs() < 1e-9);
        assert_eq!(c.text(0.1 + 0.2), "0.30000000000000004");
        let w = Constant {
            whole: true,
            low: 1.4,
            high: 2.6,
            ..c
        };
        assert_eq!((w.at(0.0), w.at(1.0)), (2.0, 2.0));
        assert_eq!(w.text(2.0), "2");
    }

    #[test]
    fn a_machine_field_without_a_spread_is_named() {
        let mut exp = latlab_exp::builtin_experiment("sched-cost").unwrap();
        for r in &mut exp.runs {
            r.config.machine.uncertainty.0.remove("syscall_ns");
        }
        let e = constants(&exp).unwrap_err();
        assert!(e.contains("field `syscall_ns` states no spread"), "{e}");
    }
}
