//! Scenarios (`scenarios/*.toml`, rt-app JSON: `latlab_scenario`) on the model: the scenario's
//! tasks as the workload's `[[task]]`s, its loads as the workload's commands, on a given
//! machine and kernel variant, for the scenario's duration.

use crate::ExpError;
use latlab_scenario::{Load, Scenario};
use latlab_sim::{CommandSpec, MachineProfile, SimConfig, Variant, Workload};

/// The files of the probe's `make:N` tree (`latlab_probe::load::make`): 60 sources and
/// `main.c`, one shared header.
const MAKE_TREE_FILES: u32 = 61;

/// The model's command for a scenario's load. `make`: `make-kernel` of the probe's tree (61
/// objects, each reading the one header, the tree not cached at the start), each compile the
/// load's `cc_ms`; the model's build then links for 8 s and ends, where the probe's builds
/// again. `video`: 25 fps, 12 ms of decoding a frame, no X server (the probe's `video`).
pub fn command(l: &Load) -> CommandSpec {
    match l {
        Load::Make { jobs, cc_ms } => CommandSpec::MakeKernel {
            jobs: *jobs,
            objects: MAKE_TREE_FILES,
            headers: 1,
            cc_ms: (cc_ms[0], cc_ms[1]),
            tree_files: MAKE_TREE_FILES,
            cc1_mib: None,
        },
        Load::Video => CommandSpec::Video {
            fps: 25,
            decode_us: 12_000,
            x_us: 0,
        },
    }
}

/// The model's workload for `s`: its tasks, its loads side by side (one command for one
/// load), on a box booted for the test (`fresh-boot`).
pub fn workload(s: &Scenario) -> Workload {
    let mut commands: Vec<CommandSpec> = s.loads.iter().map(command).collect();
    if commands.len() > 1 {
        commands = vec![CommandSpec::Parallel(commands)];
    }
    Workload {
        name: s.name.clone(),
        commands,
        gap_ms: 0,
        preload: crate::workload::PreloadBase::FreshBoot.preload(),
        tasks: s.tasks.clone(),
    }
}

/// A model run of `s` on `machine` under `variant`: `duration_ns` (default the scenario's)
/// of simulated time from seed `seed`, the scenario's periodic tasks its streams (no
/// realfeel), its `count_per_cpu` tasks resolved for the machine's CPUs
/// ([`Scenario::on_cpus`]); an error when neither gives a duration (an rt-app file's -1) or
/// a task's copies exceed the cap on this machine.
/// `latlab_sim::simulate` checks the tasks against the kernel (its CPUs, its POSIX timers)
/// and refuses, naming the scenario and field, what this one cannot run.
pub fn config(
    s: &Scenario,
    machine: MachineProfile,
    variant: Variant,
    duration_ns: Option<u64>,
    seed: u64,
) -> Result<SimConfig, ExpError> {
    let d = s.duration(duration_ns).map_err(|why| ExpError::Field {
        origin: s.name.clone(),
        line: 0,
        field: "duration_s".into(),
        why,
    })?;
    let s = s.on_cpus(machine.cpus).map_err(|e| match e {
        latlab_scenario::ScenarioError::Field { file, line, field, why } => ExpError::Field {
            origin: file,
            line,
            field,
            why: format!("{why} (machine `{}`)", machine.name),
        },
        latlab_scenario::ScenarioError::Syntax { file, line, msg } => ExpError::Syntax {
            origin: file,
            line,
            col: 0,
            msg,
        },
    })?;
    Ok(SimConfig {
        workload: workload(&s),
        machine,
        variant,
        rtc_hz: 2048,
        rt_priority: 99,
        seed,
        min_duration_ns: d,
        max_duration_ns: d,
        posix_timer: None,
        realfeel: false,
        preempt_off: None,
        maxcpus: None,
        keep_records: false,
        record_events: None,
        replay_noise: false,
    })
}

/// Keep a model run's measured streams only (the scenario's `measure`: the model measures
/// every periodic task, the probe those `measure` names).
pub fn keep_measured(s: &Scenario, r: &mut latlab_core::RunResult) {
    r.streams.retain(|x| s.measure.contains(&x.name));
}
