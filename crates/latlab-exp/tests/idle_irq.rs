//! `idle_irq_entry_exit_ns` (machine.rs): read from a machine file and checked, naming the file
//! and the field; and charged by the model when an interrupt finds a CPU idle, in place of
//! `irq_entry_exit_ns`, which an idle CPU pays when the field is absent.

use latlab_exp::{machine, no_files, scenario, variant};
use latlab_sim::machine::MachineProfile;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// p4-2006 (2 CPUs) with `line` added after its `irq_entry_exit_ns`, read as `my.toml`.
fn p4_with(line: &str) -> Result<MachineProfile, String> {
    let base = std::fs::read_to_string(root().join("machines/p4-2006.toml")).unwrap();
    let at = base.find("\nirq_entry_exit_ns").expect("p4-2006 has irq_entry_exit_ns");
    let end = at + 1 + base[at + 1..].find('\n').unwrap();
    let text = format!("{}\n{line}{}", &base[..end], &base[end..]);
    let files = move |_: &str| Ok(("my.toml".to_string(), text.clone()));
    machine("exp.toml", "./my.toml", 3, &files).map_err(|e| e.to_string())
}

#[test]
fn the_field_is_read_and_a_bad_value_is_refused_naming_the_file_and_the_field() {
    assert_eq!(p4_with("").unwrap().idle_irq_entry_exit_ns, None, "absent: none");
    assert_eq!(
        p4_with("idle_irq_entry_exit_ns = 9000").unwrap().idle_irq_entry_exit_ns,
        Some(9000)
    );
    for (bad, why) in [
        ("idle_irq_entry_exit_ns = -5", ""),
        ("idle_irq_entry_exit_ns = 2000000000", "must be at most 1000000000 ns"),
        ("idle_irq_entry_exit_ns = \"fast\"", ""),
    ] {
        let e = p4_with(bad).unwrap_err();
        assert!(
            e.contains("my.toml") && e.contains("idle_irq_entry_exit_ns") && e.contains(why),
            "{bad}: {e}"
        );
    }
}

/// The quickest wakeup of the idle scenario's SCHED_FIFO thread (an idle CPU's timer
/// wakeup) on p4-2006 with `idle_irq_entry_exit_ns` = `idle`.
fn quickest_idle_wakeup(idle: Option<u64>) -> u64 {
    let s = latlab_scenario::load(&root().join("scenarios/idle.toml")).unwrap();
    let mut m = machine("test", "p4-2006", 0, &no_files).unwrap();
    m.idle_irq_entry_exit_ns = idle;
    let v = variant("test", "6.18-eevdf-none", 0, &no_files).unwrap();
    let cfg = scenario::config(&s, m, v, Some(200_000_000), 1).unwrap();
    let (r, _) = latlab_sim::simulate(&cfg, &mut |_, _| {}).unwrap();
    let fifo = r.streams.iter().find(|x| x.name == "cyc-fifo").unwrap();
    assert!(fifo.hist.count() > 100);
    fifo.hist.min()
}

#[test]
fn an_idle_cpus_wakeup_pays_the_idle_entry_when_the_machine_has_one() {
    let m = machine("test", "p4-2006", 0, &no_files).unwrap();
    let busy = m.irq_entry_exit_ns;
    let base = quickest_idle_wakeup(None);
    // The same cost given explicitly changes nothing; a cheaper or dearer one moves the
    // idle CPU's wakeup by the difference.
    assert_eq!(quickest_idle_wakeup(Some(busy)), base);
    assert_eq!(quickest_idle_wakeup(Some(busy / 2)), base - (busy - busy / 2));
    assert_eq!(quickest_idle_wakeup(Some(busy + 5_000)), base + 5_000);
}
