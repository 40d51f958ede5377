//! A program guest's optimistic spinning on a kernel sleeping lock through
//! the lock's OSQ (`guest::osq`), as `mutex_optimistic_spin` (with
//! `mutex_can_spin_on_owner` and `mutex_spin_on_owner`, kernel/locking/
//! mutex.c) and `rwsem_optimistic_spin` (kernel/locking/rwsem.c) of Linux
//! 6.12 use it: one spinner per lock, the OSQ holder, spins on the owner;
//! later spinners queue on the OSQ and spin on their own node until the
//! holder passes it on, or give up when `need_resched()` or their
//! predecessor's vCPU is preempted. A woken waiter (on the wait list) spins
//! on the owner without the OSQ (`mutex_optimistic_spin`'s `waiter`).
//! `[guest] osq = false` restores the model without the OSQ (every spinner
//! on the owner).

use super::super::Simulator;
use crate::guest::osq::{Osq, OsqStep};
use crate::kvm::{VcpuIdx, VmId};
use crate::workload::ir::{KlockId, SleepMode};

/// What an owner spinner does after a look at its lock (`Wait::Owner`).
pub(super) enum OwnerLook {
    /// Keep spinning.
    Spin,
    /// The lock is free: step the program, which takes it.
    Take,
    /// Give up: join the wait list and sleep.
    Sleep,
}

impl Simulator {
    /// `vcpu_is_preempted(cpu)` in guest `vi`: KVM's steal-time `preempted`
    /// flag with PV steal time (`kvm_vcpu_is_preempted`), else false.
    pub(super) fn guest_vcpu_is_preempted(&self, vi: VmId, c: VcpuIdx) -> bool {
        self.pv.steal_time && self.vms[vi].vcpus[c].preempted
    }

    /// The OSQs of VM `vi`'s sleeping locks, one per kernel lock.
    fn osqs(&mut self, vi: VmId) -> &mut Vec<Osq> {
        &mut self.vms[vi].guest.as_mut().expect("a program VM").osq
    }

    /// Whether guest CPU `j` waits on an OSQ behind its holder (it spins on
    /// its own node: a release of the lock or an owner switch is nothing to
    /// it).
    pub(super) fn guest_osq_waiting(&self, vi: VmId, j: VcpuIdx) -> bool {
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        let me = j;
        match g.osq_node[j.idx()] {
            (0, _) => false,
            (1, l) => g.osq[l].is_waiting(me),
            _ => g.osq.iter().any(|q| q.is_waiting(me)),
        }
    }

    /// Guest CPU `i`'s node entered (`on`) or left OSQ `l`: keeps
    /// `osq_node` in step.
    fn guest_osq_node(&mut self, vi: VmId, i: VcpuIdx, l: usize, on: bool) {
        let g = self.vms[vi].guest.as_mut().expect("a program VM");
        let me = i;
        let (n, _) = g.osq_node[i.idx()];
        g.osq_node[i.idx()] = if on {
            (n + 1, l)
        } else if n == 2 {
            // The one queue left holding a node of the CPU.
            let k = g.osq.iter().position(|q| q.is_queued(me)).unwrap_or(0);
            (1, k)
        } else {
            (n - 1, g.osq_node[i.idx()].1)
        };
    }

    /// `osq_unlock` of lock `l` by guest CPU `i`; the next node, now
    /// holding the queue, looks at the owner at once.
    fn guest_osq_unlock(&mut self, vi: VmId, i: VcpuIdx, l: usize) {
        let next = self.osqs(vi)[l]
            .osq_unlock(i)
            .expect("the OSQ holder unlocks");
        self.guest_osq_node(vi, i, l, false);
        if let Some(n) = next {
            self.poke(vi, n);
        }
    }

    /// `mutex_optimistic_spin` / `rwsem_optimistic_spin` entered by task
    /// `t` on guest CPU `i` that found `lock` taken (by `owner`). True: it
    /// spins (on the owner, or queued on the OSQ); false: the sleeping
    /// slow path. The OSQ holder looping again (it saw the lock free, but
    /// another task took it first) spins on the new owner or gives up and
    /// unlocks the OSQ.
    pub(super) fn guest_optimistic_spin(
        &mut self,
        vi: VmId,
        i: VcpuIdx,
        t: usize,
        lock: KlockId,
        mode: SleepMode,
        owner: Option<usize>,
    ) -> bool {
        let me = i;
        let l = lock.idx();
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        let need_resched = g.kernel.sched.rqs[i.idx()].need_resched;
        let waiter = g.program().sleeping_lock_is_waiter(t);
        let holder = g.osq[l].holder() == Some(me);
        // mutex_can_spin_on_owner / rwsem_can_spin_on_owner, and the
        // loop's mutex_spin_on_owner / rwsem_spin_on_owner: readers do not
        // spin (6.12), nor does a writer on a reader-owned rwsem (its
        // time-bounded spin is not modelled).
        let spin = mode != SleepMode::Read
            && !need_resched
            && owner.is_some_and(|o| o != t && self.guest_owner_on_cpu(vi, o));
        if holder {
            if !spin {
                self.guest_osq_unlock(vi, i, l);
            }
            return spin;
        }
        if !spin {
            return false;
        }
        if waiter {
            return true;
        }
        // osq_lock: holding at once, or queued behind the tail.
        self.osqs(vi)[l].osq_lock(me).expect("one node per CPU");
        self.guest_osq_node(vi, i, l, true);
        true
    }

    /// A look of the spinner on guest CPU `i` at its lock: a node queued
    /// on the OSQ looks only at its own node (passed the queue, or
    /// cancelled by `need_resched()` / `vcpu_is_preempted(prev)`); the OSQ
    /// holder and a woken waiter look at the lock and its owner
    /// (`mutex_spin_on_owner`), the holder unlocking the OSQ when it stops.
    pub(super) fn guest_owner_spin_look(&mut self, vi: VmId, i: VcpuIdx) -> OwnerLook {
        let me = i;
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        let lock = g.kernel.sched.rqs[i.idx()]
            .curr
            .and_then(|t| g.program().sleeping_lock_wanted(t.idx()));
        let Some(l) = lock.map(KlockId::idx) else {
            return OwnerLook::Take;
        };
        if g.osq[l].is_waiting(me) {
            let need_resched = g.kernel.sched.rqs[i.idx()].need_resched;
            let prev = g.osq[l].prev(me);
            let prev_preempted = prev.is_some_and(|p| self.guest_vcpu_is_preempted(vi, p));
            let step = self.osqs(vi)[l]
                .osq_poll(me, need_resched, |p| Some(p) == prev && prev_preempted)
                .expect("a waiting node");
            if step == OsqStep::Cancelled {
                self.guest_osq_node(vi, i, l, false);
            }
            // (Locked: passed the queue; it looks at the owner next time.)
            return match step {
                OsqStep::Queued | OsqStep::Locked => OwnerLook::Spin,
                OsqStep::Cancelled => OwnerLook::Sleep,
            };
        }
        let holder = g.osq[l].holder() == Some(me);
        let look = if self.guest_spun_lock_free(vi, i) {
            OwnerLook::Take
        } else if !self.guest_keeps_spinning(vi, i) {
            OwnerLook::Sleep
        } else {
            return OwnerLook::Spin;
        };
        if holder {
            self.guest_osq_unlock(vi, i, l);
        }
        look
    }
}
