//! Property tests: every allocator, driven by random operation sequences, against a
//! reference model that is just the set of slots handed out.
//!
//! - a slot is never handed out twice, and always inside the area;
//! - an allocation fails only when every slot is taken;
//! - frees make slots reusable, and a bad free changes nothing;
//! - `used()`, `is_allocated()` and the allocator's own bookkeeping agree with the model.

use std::collections::BTreeSet;

use latlab_swap::{by_name, AllocRequest, SwapAllocator, SwapError, ALLOCATORS};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        owner: u8,
        vpage: u16,
        cpu: u8,
    },
    /// Free the n-th slot handed out (modulo how many are out).
    FreeHeld(usize),
    /// Free an arbitrary slot number: out of range, never allocated, already free, or held.
    FreeAny(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (any::<u8>(), any::<u16>(), 0u8..8).prop_map(|(owner, vpage, cpu)| Op::Alloc { owner, vpage, cpu }),
        3 => any::<usize>().prop_map(Op::FreeHeld),
        1 => (0u64..2100).prop_map(Op::FreeAny),
    ]
}

/// Sizes around the interesting boundaries: one 256-slot cluster or chunk, a partial
/// 512-slot cluster, several blist leaves and a terminator.
fn slots() -> impl Strategy<Value = u64> {
    prop_oneof![Just(256u64), Just(300), Just(512), Just(700), Just(1024), Just(2000)]
}

fn agree(a: &dyn SwapAllocator, model: &BTreeSet<u64>) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.used(), model.len() as u64);
    for s in 0..a.slots() + 3 {
        prop_assert_eq!(a.is_allocated(s), model.contains(&s), "slot {}", s);
    }
    a.check_invariants().map_err(|e| TestCaseError::fail(e.to_string()))
}

fn run_ops(name: &str, slots: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut a = by_name(name, slots).unwrap();
    let mut model = BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Alloc { owner, vpage, cpu } => {
                let req = AllocRequest {
                    owner: 0xffff_8800_0000_0000 + owner as u64 * 40,
                    vpage: vpage as u64,
                    cpu: cpu as u32,
                };
                let r = a.alloc(&req).unwrap();
                prop_assert!(r.work.max_locked <= r.work.entries, "{:?}", r.work);
                match r.slot {
                    Some(s) => {
                        prop_assert!(s < slots, "slot {} outside {}", s, slots);
                        prop_assert!(model.insert(s), "slot {} handed out twice", s);
                    }
                    None => prop_assert_eq!(model.len() as u64, slots, "failed with free slots"),
                }
            }
            Op::FreeHeld(n) => {
                if let Some(&s) = model.iter().nth(n % model.len().max(1)) {
                    a.free(s).unwrap();
                    model.remove(&s);
                    prop_assert!(!a.is_allocated(s));
                }
            }
            Op::FreeAny(s) => {
                let before = a.used();
                match a.free(s) {
                    Ok(_) => prop_assert!(model.remove(&s), "freed {} which was not held", s),
                    Err(SwapError::SlotOutOfRange { .. }) => prop_assert!(s >= slots),
                    Err(SwapError::NotAllocated { .. }) => {
                        prop_assert!(s < slots && !model.contains(&s));
                        prop_assert_eq!(a.used(), before);
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
                }
            }
        }
        prop_assert_eq!(a.used(), model.len() as u64);
        if i % 16 == 0 {
            agree(a.as_ref(), &model)?;
        }
    }
    agree(a.as_ref(), &model)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_match_the_reference_model(
        slots in slots(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        for name in ALLOCATORS {
            run_ops(name, slots, &ops)?;
        }
    }

    #[test]
    fn long_runs_reach_full_and_come_back(
        slots in slots(),
        ops in prop::collection::vec(op(), 1500..3000),
    ) {
        // more allocations than slots: the area fills, fails, and recovers
        for name in ALLOCATORS {
            run_ops(name, slots, &ops)?;
        }
    }

    #[test]
    fn frees_of_a_full_area_are_exactly_what_comes_back(
        slots in slots(),
        picks in prop::collection::btree_set(0u64..2000, 1..64),
    ) {
        let freed: BTreeSet<u64> = picks.into_iter().filter(|&s| s < slots).collect();
        for name in ALLOCATORS {
            let mut a = by_name(name, slots).unwrap();
            let req = |i: u64| AllocRequest { owner: 1, vpage: i, cpu: (i % 3) as u32 };
            for i in 0..slots {
                prop_assert!(a.alloc(&req(i)).unwrap().slot.is_some());
            }
            prop_assert_eq!(a.alloc(&req(0)).unwrap().slot, None);
            for &s in &freed {
                a.free(s).unwrap();
            }
            let mut back = BTreeSet::new();
            for i in 0..freed.len() as u64 {
                back.insert(a.alloc(&req(i)).unwrap().slot.unwrap());
            }
            prop_assert_eq!(&back, &freed, "{}", name);
            prop_assert_eq!(a.alloc(&req(0)).unwrap().slot, None);
            a.check_invariants().map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
}
