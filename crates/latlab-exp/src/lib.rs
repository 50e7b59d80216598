//! latlab-exp: experiment files and the built-in catalog of machines, kernel variants,
//! workloads and experiments.
//!
//! An experiment file (`experiments/*.toml`, format in `docs/experiments.md`) names a machine,
//! a workload and a list of runs, each a kernel variant with the figures the seed published
//! for it. [`load`] parses and validates one, resolving names against the built-ins, and
//! returns [`Experiment`]: ready-to-run [`latlab_sim::SimConfig`]s plus the published figures.
//!
//! Every error names the file, the line and the field, and says why; an unknown name lists
//! the valid ones. Nothing here panics on input.
//!
//! **Architecture invariant.** This crate reads text, never the file system: the CLI reads
//! files and hands their contents here (the machine, variant and workload files an experiment
//! names by path through a [`Files`] reader it supplies); built-ins are compiled in.

#![forbid(unsafe_code)]

pub mod builtin;
mod extends;
mod file;
pub mod scenario;
pub mod workload;

pub use file::{
    is_path, machine, machine_fields, machine_values, no_files, variant, vary, ExpError, Experiment, FieldValue, Files,
    PreloadRepr, Published, Run, TableKind, MAX_RUN_SECONDS, VARY_KEYS,
};

/// Parse and resolve an experiment from its text; `origin` names the file in errors. Its
/// machine and variants must be built-in names: [`load_with`] for one that names files.
pub fn load(origin: &str, text: &str) -> Result<Experiment, ExpError> {
    file::parse(origin, text, &no_files)
}

/// As [`load`], with `files` reading the machine and variant files the experiment names by
/// path (`variant = "./my-kernel.toml"`).
pub fn load_with(origin: &str, text: &str, files: Files) -> Result<Experiment, ExpError> {
    file::parse(origin, text, files)
}

/// A built-in experiment by name (`mini-ll`), or an error listing the valid names.
pub fn builtin_experiment(name: &str) -> Result<Experiment, ExpError> {
    match builtin::EXPERIMENTS.iter().find(|(n, _)| *n == name) {
        Some((n, text)) => load(&format!("experiments/{n}.toml"), text),
        None => Err(ExpError::Unknown {
            origin: "command line".into(),
            line: 0,
            what: "experiment",
            name: name.into(),
            valid: builtin::EXPERIMENTS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}
