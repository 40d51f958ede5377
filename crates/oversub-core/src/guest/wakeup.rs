//! The spinlocks of a guest's wakeup path (`[guest] wakeup_locks`), Linux
//! 6.12: the futex hash-bucket lock (`hb->lock`, kernel/futex/core.c
//! `futex_hash`; taken by `futex_wake` around its waiter scan and by
//! `futex_wait_setup` / `futex_queue` while the waiter queues) and the
//! wakee's `p->pi_lock`, which `try_to_wake_up` (kernel/sched/core.c) holds
//! across the whole wakeup (the target's `rq->lock` is taken inside it and
//! is not a lock of its own here). They are guest spinlocks: the same
//! implementations as the program's kernel spinlocks (PV qspinlock, or the
//! test-and-set `virt_spin_lock` without PV_UNHALT, `kvm_spinlock_init`), so
//! a holder whose vCPU is preempted makes the next waker spin.
//!
//! Which lock a wakeup takes, for a program: one hash bucket per futex word
//! (each mutex, condition variable, barrier and queue of the program:
//! `futex_hashsize` is `roundup_pow_of_two(256 * CPUs)` buckets, so the few
//! futexes of a program rarely share one; collisions are not modelled), and
//! one `pi_lock` per thread. The layout puts them after the program's own
//! kernel locks.

use crate::engine::Nanos;
use crate::workload::ir::Program;

/// Hold time of `hb->lock` in `futex_wake` / `futex_wait_setup`+`futex_queue`.
/// ESTIMATE: not measurable here (this machine's 6.18 guest kernel has no
/// kprobes or BPF trampolines); the tracepoint bounds measured on it
/// (scripts/measure-wakeup-locks.bt, docs/workloads.md) are 2.7 us for the
/// locked part of a FUTEX_WAKE that wakes one waiter (its syscall minus a
/// waiter-less one and minus its try_to_wake_up) and 4 us for FUTEX_WAIT up
/// to the switch out (schedule() included); the locked part is a short
/// chain walk and one futex_q (un)queue, taken as 0.5 us.
pub const FUTEX_HB_HOLD: Nanos = Nanos(500);

/// Hold time of `p->pi_lock` in `try_to_wake_up`. MEASURED on this machine
/// (a KVM guest itself, 6.18.44, 2026-11-27,
/// scripts/measure-wakeup-locks.bt): the span from `sched_waking` (pi_lock
/// held) to `sched_wakeup` (task activated under the rq lock) in the
/// waker's thread has its mode at 2.0-2.5 us; the tracer's own span (the
/// same two-tracepoint measurement around getppid) is 0.45-0.75 us, so 1.5
/// us held. An upper bound: the measurement misses the lock's first and
/// last instructions but includes the tracepoint's residual cost.
pub const TTWU_PI_LOCK_HOLD: Nanos = Nanos(1_500);

/// Where a program's wakeup-path locks are among its VM's guest spinlocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeupLocks {
    /// Index of the first one (after the program's kernel locks).
    base: usize,
    futexes: usize,
    threads: usize,
}

impl WakeupLocks {
    /// The layout for `prog`, whose own kernel locks come first.
    pub fn new(prog: &Program) -> WakeupLocks {
        WakeupLocks {
            base: prog.klocks.len(),
            futexes: prog.mutexes.len()
                + prog.conds.len()
                + prog.barriers.len()
                + prog.queues.len(),
            threads: prog.threads.len(),
        }
    }

    /// How many locks the layout adds.
    pub fn count(&self) -> usize {
        self.futexes + self.threads
    }

    /// `futex_hash(key)`'s bucket lock of futex word `f` (an index of
    /// `ProgramRt::take_futex_ops`).
    pub fn futex_hash(&self, f: usize) -> usize {
        debug_assert!(f < self.futexes);
        self.base + f
    }

    /// `p->pi_lock` of thread `t`.
    pub fn pi_lock(&self, t: usize) -> usize {
        debug_assert!(t < self.threads);
        self.base + self.futexes + t
    }

    /// Whether each added lock, in layout order, is waited for with
    /// interrupts off, as 6.12 takes it: `hb->lock` with `spin_lock()`
    /// (`futex_wake`, kernel/futex/waitwake.c; `futex_q_lock`,
    /// kernel/futex/core.c), IRQs on; `p->pi_lock` with
    /// `raw_spin_lock_irqsave()` (`try_to_wake_up`'s `scoped_guard
    /// (raw_spinlock_irqsave, &p->pi_lock)`, kernel/sched/core.c), IRQs off
    /// while it waits, so an interrupt for the waker's vCPU waits until it
    /// has taken and dropped the lock.
    pub fn irqs_off(&self) -> impl Iterator<Item = bool> {
        std::iter::repeat_n(false, self.futexes).chain(std::iter::repeat_n(true, self.threads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wakeup_locks_follow_the_program_locks_without_overlap() {
        // 2 kernel locks, 3 futex words, 3 threads.
        let w = WakeupLocks {
            base: 2,
            futexes: 3,
            threads: 3,
        };
        assert_eq!(w.count(), 3 + 3);
        assert_eq!(w.futex_hash(0), 2);
        assert_eq!(w.futex_hash(2), 4);
        assert_eq!(w.pi_lock(0), 5);
        assert_eq!(w.pi_lock(2), 7);
        // Bucket locks are spin_lock(), pi_locks raw_spin_lock_irqsave().
        assert_eq!(
            w.irqs_off().collect::<Vec<_>>(),
            [false, false, false, true, true, true]
        );
    }
}
