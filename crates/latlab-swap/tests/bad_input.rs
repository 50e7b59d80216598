//! Bad input gives a clear error naming what and why, never a panic, and leaves the
//! allocator as it was.

use latlab_swap::bench::{run, BenchConfig, Cell};
use latlab_swap::stream::StreamConfig;
use latlab_swap::{by_name, AllocRequest, SwapError, ALLOCATORS, MAX_CPUS, MAX_SLOTS, MIN_SLOTS};

const REQ: AllocRequest = AllocRequest {
    owner: 9,
    vpage: 1,
    cpu: 0,
};

#[test]
fn zero_tiny_and_absurd_sizes_are_refused_by_every_allocator() {
    for name in ALLOCATORS {
        for slots in [0, 1, MIN_SLOTS - 1] {
            let e = by_name(name, slots).err().expect("refused");
            assert_eq!(e, SwapError::TooSmall { slots, min: MIN_SLOTS });
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("{slots} slots")) && msg.contains("too small"),
                "{msg}"
            );
        }
        for slots in [MAX_SLOTS + 1, u64::MAX] {
            let e = by_name(name, slots).err().expect("refused");
            assert_eq!(e, SwapError::TooLarge { slots, max: MAX_SLOTS });
            assert!(e.to_string().contains("beyond the model's limit"));
        }
        assert!(by_name(name, MIN_SLOTS).is_ok());
    }
}

#[test]
fn an_unknown_allocator_name_lists_the_valid_ones() {
    let e = by_name("buddy", 1024).err().expect("refused");
    let msg = e.to_string();
    assert!(msg.contains("\"buddy\""), "{msg}");
    for name in ALLOCATORS {
        assert!(msg.contains(name), "{msg} lacks {name}");
    }
}

#[test]
fn bad_frees_and_cpus_are_errors_that_change_nothing() {
    for name in ALLOCATORS {
        let mut a = by_name(name, 1024).unwrap();
        let held = a.alloc(&REQ).unwrap().slot.unwrap();
        let never = (held + 500) % 1024;

        let errors = [
            (
                a.free(1024),
                SwapError::SlotOutOfRange {
                    slot: 1024,
                    slots: 1024,
                },
            ),
            (
                a.free(u64::MAX),
                SwapError::SlotOutOfRange {
                    slot: u64::MAX,
                    slots: 1024,
                },
            ),
            (a.free(never), SwapError::NotAllocated { slot: never }),
        ];
        for (got, want) in errors {
            assert_eq!(got, Err(want), "{name}");
        }
        let bad_cpu = AllocRequest { cpu: MAX_CPUS, ..REQ };
        assert_eq!(
            a.alloc(&bad_cpu),
            Err(SwapError::CpuOutOfRange {
                cpu: MAX_CPUS,
                max: MAX_CPUS
            }),
            "{name}"
        );
        assert_eq!(a.used(), 1, "{name}");
        a.check_invariants().unwrap();

        // double free: the first succeeds, the second is refused and changes nothing
        a.free(held).unwrap();
        let e = a.free(held).unwrap_err();
        assert_eq!(e, SwapError::NotAllocated { slot: held });
        assert!(e.to_string().contains("double free"));
        assert_eq!(a.used(), 0);
        a.check_invariants().unwrap();
        // and the allocator still works
        let last_cpu = AllocRequest {
            cpu: MAX_CPUS - 1,
            ..REQ
        };
        assert!(a.alloc(&last_cpu).unwrap().slot.is_some());
    }
}

#[test]
fn bad_bench_settings_are_refused_with_the_reason() {
    let cases = [
        (
            BenchConfig {
                fills: vec![1.0],
                ..BenchConfig::default()
            },
            "fill level 1",
        ),
        (
            BenchConfig {
                fills: vec![f64::NAN],
                ..BenchConfig::default()
            },
            "fill level NaN",
        ),
        (
            BenchConfig {
                fills: vec![-0.5],
                ..BenchConfig::default()
            },
            "fill level -0.5",
        ),
        (
            BenchConfig {
                slots: vec![0],
                ..BenchConfig::default()
            },
            "0 slots is too small",
        ),
        (
            BenchConfig {
                allocs: 0,
                ..BenchConfig::default()
            },
            "measured allocations per cell must be 1..=1048576, got 0",
        ),
        (
            BenchConfig {
                allocs: usize::MAX,
                ..BenchConfig::default()
            },
            "must be 1..=1048576, got 18446744073709551615",
        ),
        (
            BenchConfig {
                allocators: vec![],
                ..BenchConfig::default()
            },
            "at least one allocator",
        ),
        (
            BenchConfig {
                stream: StreamConfig {
                    owners: 0,
                    ..StreamConfig::default()
                },
                ..BenchConfig::default()
            },
            "at least one process",
        ),
    ];
    for (cfg, why) in cases {
        let msg = run(&cfg).unwrap_err().to_string();
        assert!(msg.contains(why), "{msg:?} should say {why:?}");
    }
    assert!(matches!(
        Cell::prepare("blist", 4096, 1.5, 0, &StreamConfig::default()),
        Err(SwapError::BadFill { .. })
    ));
}
