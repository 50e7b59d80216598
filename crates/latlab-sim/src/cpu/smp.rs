//! The CPU loop's side of per-CPU runqueues ([`crate::sched::smp`]: CFS and EEVDF on
//! several CPUs): a wakeup is placed before it is queued (`try_to_wake_up` ->
//! `select_task_rq`), a CPU other than the waker's learns it must reschedule by a
//! reschedule IPI that arrives [`resched_ipi_ns`] later (`resched_curr` ->
//! `smp_send_reschedule`; a lazy reschedule sets its flag without one, as `__resched_curr`
//! does for TIF_NEED_RESCHED_LAZY), and each CPU's tick runs its periodic balance.
//!
//! A timer's wakeup comes from the sleeper's own CPU (hrtimers and the timer wheel fire on
//! the CPU that armed them); a device interrupt's from CPU 0, where the model delivers every
//! device interrupt (the default affinity: `irqbalance` and per-queue vectors are not
//! modelled). Kernel threads are not per-CPU (one kswapd, one flusher, one kjournald, as the
//! model's subsystems start them); they run where the scheduler places them.

use super::{Ev, Kernel};
use crate::kernel::path::Chan;
use crate::kernel::preempt;
use crate::kernel::task::{Policy, TaskId};
use crate::kernel::tracepoint::{self, Event, IrqCtx};
use crate::machine::MachineProfile;
use latlab_core::Nanos;

/// Instructions of a reschedule IPI between its sender and its handler: the sender's
/// `smp_send_reschedule` (`native_smp_send_reschedule`: an APIC ICR write, arch/x86/kernel/
/// apic/ipi.c) after `ttwu_queue_wakelist`'s `__smp_call_single_queue`, the target's
/// `sysvec_reschedule_ipi` -> `scheduler_ipi` and `sched_ttwu_pending`: about 300, with 2
/// cache misses (the target runqueue's wake list and `ttwu_pending` lines). Arithmetic from
/// 6.18 kernel/sched/core.c and arch/x86/kernel/smp.c; the target's interrupt entry and exit
/// is the machine's (`MachineProfile::irq_entry_exit`: an idle target's when it is idle).
const RESCHED_IPI_INSTR: f64 = 300.0;
/// Cache misses of a reschedule IPI (see [`RESCHED_IPI_INSTR`]).
const RESCHED_IPI_MISSES: f64 = 2.0;

/// From a remote `resched_curr` to the target CPU running its interrupt's return: the IPI's
/// instructions and misses at the machine's speed, and the interrupt entry and exit of the
/// target, `idle` or not.
fn resched_ipi_ns(m: &MachineProfile, idle: bool) -> Nanos {
    m.cost(RESCHED_IPI_INSTR, RESCHED_IPI_MISSES) + m.irq_entry_exit(idle)
}

impl<S: tracepoint::Sink> Kernel<S> {
    /// The CPU a wakeup of `t` on `chan` comes from: the sleeper's own for a timer fired in
    /// interrupt context, else the CPU whose code runs (CPU 0 for a device interrupt).
    pub(super) fn waker_cpu(&self, chan: Chan, t: TaskId) -> usize {
        let timer = matches!(
            chan,
            Chan::Timer(_) | Chan::Signal(_) | Chan::Throttle(_) | Chan::Congestion(_)
        );
        if timer && self.irq_ctx != IrqCtx::Task {
            usize::from(self.tasks[t].cpu)
        } else {
            self.cpu
        }
    }

    /// `try_to_wake_up` / `wake_up_new_task` of `t` (`new`) from CPU `from` with per-CPU
    /// runqueues: `select_task_rq`, enqueue there, `wakeup_preempt` against that CPU's task.
    pub(super) fn enqueue_woken_per_cpu(&mut self, t: TaskId, new: bool, from: usize) {
        let target = self.sched.select_task_rq(&self.tasks, t, from, new, self.now);
        self.sched.enqueue(&self.tasks, t, self.now);
        trace_event!(self, SCHED_WAKEUP, Event::SchedWakeup { task: t, new });
        let cur = self.ext(self.cpus[target].current);
        if self.sched.wakeup_preempt(&self.tasks, t, cur, self.now) {
            let fair = |x: TaskId| x != 0 && self.tasks[x].policy == Policy::Other;
            self.resched_cpu(target, preempt::resched_is_lazy(&self.v, fair(cur), fair(t)));
        }
        self.send_kicks();
    }

    /// `resched_curr` of CPU `cpu` from CPU `self.cpu`: at once on this CPU (or lazily),
    /// else by a reschedule IPI.
    fn resched_cpu(&mut self, cpu: usize, lazy: bool) {
        if cpu == self.cpu || lazy {
            self.resched_curr(cpu, lazy);
        } else {
            let idle = self.is_idle(self.cpus[cpu].current);
            let at = self.now + resched_ipi_ns(&self.m, idle);
            self.q.schedule(at, Ev::Ipi(cpu));
        }
    }

    /// The reschedule IPI reaches CPU `cpu` (`sysvec_reschedule_ipi`): its task is told to
    /// reschedule and does at the interrupt's return if its context allows.
    pub(super) fn resched_ipi(&mut self, cpu: usize) {
        self.cpu = cpu;
        self.touch(cpu);
        self.resched_curr(cpu, false);
        self.maybe_preempt_after_irq();
    }

    /// Tell the CPUs the scheduler moved tasks to (RT push, a balance) to reschedule.
    pub(super) fn send_kicks(&mut self) {
        while let Some(c) = self.sched.take_kick() {
            self.resched_cpu(c, false);
        }
    }

    /// Each CPU's `sched_balance_trigger` at its tick (the model fires every CPU's tick
    /// with CPU 0's): a CPU that pulled a task to run reschedules.
    pub(super) fn balance_ticks(&mut self) {
        for c in 0..self.cpus.len() {
            if self.sched.balance_tick(&self.tasks, c, self.now) {
                self.resched_curr(c, false);
            }
        }
        self.send_kicks();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipi_to_an_idle_cpu_pays_the_idle_entry_when_the_machine_has_one() {
        let mut m = crate::cpu::tests::machine();
        let (busy, sent) = (resched_ipi_ns(&m, false), resched_ipi_ns(&m, true));
        assert_eq!(busy, sent, "no idle cost: the busy one everywhere");
        m.idle_irq_entry_exit_ns = Some(m.irq_entry_exit_ns + 7_000);
        assert_eq!(resched_ipi_ns(&m, true), busy + 7_000);
        assert_eq!(resched_ipi_ns(&m, false), busy);
    }
}
