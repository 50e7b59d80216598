//! The discrete-event core: integer-nanosecond time, a timer queue, a seeded PRNG.
//!
//! **Ordering rule.** Events fire in time order; events due at the same nanosecond fire in
//! the order they were scheduled (a monotonically increasing sequence number breaks ties).
//! Together with the seeded [`ChaCha8Rng`] this makes a run a pure function of its inputs:
//! the same configuration and seed give a byte-identical result.
//!
//! ```
//! use latlab_sim::engine::EventQueue;
//! let mut q = EventQueue::new();
//! q.schedule(20, "b");
//! q.schedule(10, "a");
//! q.schedule(20, "c");
//! assert_eq!(q.pop(), Some((10, "a")));
//! assert_eq!(q.pop(), Some((20, "b"))); // same time: scheduling order
//! assert_eq!(q.pop(), Some((20, "c")));
//! ```

use latlab_core::Nanos;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The model's PRNG: seeded, portable, reproducible across platforms.
pub type Rng = ChaCha8Rng;

/// The model's streams of randomness, one per subsystem that draws. Each is its own ChaCha
/// stream of the run seed, so a draw added in one subsystem does not shift another's.
/// The workloads draw (file sizes, compile times, which file a job reads: the kernel
/// itself is deterministic given its inputs), and so does the replay of the machine's host
/// noise when a run asks for it; a subsystem that starts drawing adds its variant here
/// rather than sharing another's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RngStream {
    /// Every workload's draws (`workload::ProgCx::rng`), in the order the programs run.
    Workload = 1,
    /// The replayed host gaps' arrivals and lengths (`cpu/host_gap.rs`), in arrival order.
    HostNoise = 2,
}

/// The PRNG of one stream of randomness, derived from the run seed.
pub fn rng_for(seed: u64, stream: RngStream) -> Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream as u64);
    r
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    at: Nanos,
    seq: u64,
}

/// A timer queue of events of type `E`, popped in (time, scheduling order).
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(Key, Slot)>>,
    items: Vec<Option<E>>,
    free: Vec<usize>,
    seq: u64,
    popped: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Slot(usize);

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            items: Vec::new(),
            free: Vec::new(),
            seq: 0,
            popped: 0,
        }
    }

    /// Schedule `ev` at absolute time `at`.
    pub fn schedule(&mut self, at: Nanos, ev: E) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.items[i] = Some(ev);
                i
            }
            None => {
                self.items.push(Some(ev));
                self.items.len() - 1
            }
        };
        self.heap.push(Reverse((Key { at, seq: self.seq }, Slot(slot))));
        self.seq += 1;
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((k, _))| k.at)
    }

    /// Remove and return the next event.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let Reverse((k, Slot(i))) = self.heap.pop()?;
        self.free.push(i);
        self.popped += 1;
        let ev = self.items[i].take().expect("queued slot holds an event");
        Some((k.at, ev))
    }

    /// Events delivered so far (the engine's unit of work, reported by benchmarks).
    pub fn delivered(&self) -> u64 {
        self.popped
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
