//! The optimistic spin queue (OSQ) of a guest sleeping lock, as
//! kernel/locking/osq_lock.c of Linux 6.12 (`osq_lock` / `osq_unlock`,
//! unchanged since 4.x in what is modelled): an MCS queue of per-CPU nodes
//! that `mutex_optimistic_spin` and `rwsem_optimistic_spin` take before they
//! spin on the lock owner, so that one spinner (the OSQ holder) spins on the
//! owner and the others spin on their own node.
//!
//! A pure state machine driven by the guest CPU (= vCPU) that runs it:
//! * [`Osq::osq_lock`]: `atomic_xchg(&lock->tail, curr)`: an empty queue is
//!   taken at once (the caller spins on the owner), else the node queues
//!   behind the tail;
//! * [`Osq::osq_poll`]: one look of a queued node's
//!   `smp_cond_load_relaxed(&node->locked, VAL || need_resched() ||
//!   vcpu_is_preempted(node_cpu(node->prev)))`: locked (the previous holder
//!   passed it on), or cancelled (need_resched, or the previous node's vCPU
//!   is preempted): the node unqueues (steps A-C) and the caller goes to the
//!   sleeping slow path;
//! * [`Osq::osq_unlock`]: the holder passes the queue to the next node
//!   (`next->locked = 1`), or empties it.
//!
//! Simplifications (docs/workloads.md, "Guest kernel primitives"): the
//! queue is a list in queue order, each step atomic, so the races of
//! `osq_wait_next` (an unqueue racing an unlock: the node is then granted
//! instead of cancelled) do not happen: a cancelled node leaves at once.

use crate::kvm::VcpuIdx;

/// What a queued CPU does after a look at its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsqStep {
    /// The CPU holds the OSQ: it spins on the lock owner.
    Locked,
    /// Spin on its own node (`node->locked` still 0).
    Queued,
    /// `osq_lock` returned false: unqueued, go to the sleeping slow path.
    Cancelled,
}

/// Misuse of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsqError {
    /// `osq_lock` by a CPU whose node is already queued (one node per CPU;
    /// the kernel spins with preemption off, so a CPU queues once).
    AlreadyQueued(VcpuIdx),
    /// `osq_poll` / `osq_unlock` by a CPU that is not queued / not holding.
    NotQueued(VcpuIdx),
    NotHolder(VcpuIdx),
}

/// `struct optimistic_spin_queue` with its nodes: `nodes[0]` holds the
/// queue (`osq_lock` returned true), the others wait in order; the node
/// before a waiter is its `node->prev`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Osq {
    nodes: Vec<VcpuIdx>,
}

impl Osq {
    pub fn new() -> Self {
        Self::default()
    }

    /// `osq_is_locked`.
    pub fn osq_is_locked(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// The CPU holding the queue (spinning on the owner).
    pub fn holder(&self) -> Option<VcpuIdx> {
        self.nodes.first().copied()
    }

    /// Whether `cpu`'s node is in the queue (holding or waiting).
    pub fn is_queued(&self, cpu: VcpuIdx) -> bool {
        self.nodes.contains(&cpu)
    }

    /// Whether `cpu`'s node waits behind another (spins on its node).
    pub fn is_waiting(&self, cpu: VcpuIdx) -> bool {
        self.nodes.iter().skip(1).any(|&c| c == cpu)
    }

    /// `node_cpu(node->prev)` of a waiting node.
    pub fn prev(&self, cpu: VcpuIdx) -> Option<VcpuIdx> {
        let k = self.nodes.iter().position(|&c| c == cpu)?;
        k.checked_sub(1).map(|p| self.nodes[p])
    }

    /// The waiting nodes in queue order.
    pub fn waiters(&self) -> &[VcpuIdx] {
        self.nodes.get(1..).unwrap_or(&[])
    }

    /// `osq_lock`'s queueing: `Locked` when the queue was empty
    /// (`old == OSQ_UNLOCKED_VAL`), else `Queued` behind the tail.
    pub fn osq_lock(&mut self, cpu: VcpuIdx) -> Result<OsqStep, OsqError> {
        if self.is_queued(cpu) {
            return Err(OsqError::AlreadyQueued(cpu));
        }
        self.nodes.push(cpu);
        Ok(if self.nodes.len() == 1 {
            OsqStep::Locked
        } else {
            OsqStep::Queued
        })
    }

    /// One look of `cpu`'s wait in `osq_lock`: `Locked` once its node was
    /// passed the queue; else `Cancelled` (and unqueued) when
    /// `need_resched` or `vcpu_is_preempted(prev)` says so; else `Queued`.
    pub fn osq_poll(
        &mut self,
        cpu: VcpuIdx,
        need_resched: bool,
        vcpu_is_preempted: impl Fn(VcpuIdx) -> bool,
    ) -> Result<OsqStep, OsqError> {
        let k = self
            .nodes
            .iter()
            .position(|&c| c == cpu)
            .ok_or(OsqError::NotQueued(cpu))?;
        if k == 0 {
            return Ok(OsqStep::Locked);
        }
        if need_resched || vcpu_is_preempted(self.nodes[k - 1]) {
            // Steps A-C: unlink; the next node's prev becomes ours.
            self.nodes.remove(k);
            return Ok(OsqStep::Cancelled);
        }
        Ok(OsqStep::Queued)
    }

    /// `osq_unlock` by the holder (after it took the lock or gave up
    /// spinning): the next node, now holding the queue, if any.
    pub fn osq_unlock(&mut self, cpu: VcpuIdx) -> Result<Option<VcpuIdx>, OsqError> {
        if self.holder() != Some(cpu) {
            return Err(OsqError::NotHolder(cpu));
        }
        self.nodes.remove(0);
        Ok(self.holder())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(i: u32) -> VcpuIdx {
        VcpuIdx(i)
    }

    #[test]
    fn first_spinner_holds_the_others_queue_in_order() {
        let mut q = Osq::new();
        assert_eq!(q.osq_lock(c(3)), Ok(OsqStep::Locked));
        assert_eq!(q.osq_lock(c(1)), Ok(OsqStep::Queued));
        assert_eq!(q.osq_lock(c(2)), Ok(OsqStep::Queued));
        assert_eq!(q.osq_lock(c(1)), Err(OsqError::AlreadyQueued(c(1))));
        assert_eq!(q.holder(), Some(c(3)));
        assert_eq!(q.waiters(), [c(1), c(2)]);
        assert_eq!(q.prev(c(2)), Some(c(1)));
        assert_eq!(q.prev(c(3)), None);
        // Queued nodes keep waiting while nothing cancels them.
        assert_eq!(q.osq_poll(c(2), false, |_| false), Ok(OsqStep::Queued));
        // The holder passes the queue to the next node only.
        assert_eq!(q.osq_unlock(c(1)), Err(OsqError::NotHolder(c(1))));
        assert_eq!(q.osq_unlock(c(3)), Ok(Some(c(1))));
        assert_eq!(q.osq_poll(c(1), false, |_| false), Ok(OsqStep::Locked));
        assert_eq!(q.osq_poll(c(2), false, |_| false), Ok(OsqStep::Queued));
        assert_eq!(q.osq_unlock(c(1)), Ok(Some(c(2))));
        assert_eq!(q.osq_unlock(c(2)), Ok(None));
        assert!(!q.osq_is_locked());
    }

    #[test]
    fn a_preempted_predecessor_cancels_only_its_successor() {
        let mut q = Osq::new();
        for i in 0..4 {
            q.osq_lock(c(i)).unwrap();
        }
        // vCPU 1 is preempted: node 2 (prev = 1) gives up, node 3 (prev =
        // 2) and node 1 itself do not.
        let preempted = |v: VcpuIdx| v == c(1);
        assert_eq!(q.osq_poll(c(3), false, preempted), Ok(OsqStep::Queued));
        assert_eq!(q.osq_poll(c(1), false, preempted), Ok(OsqStep::Queued));
        assert_eq!(q.osq_poll(c(2), false, preempted), Ok(OsqStep::Cancelled));
        // Unlinked: 3's prev is 1 now, so it gives up at its next look.
        assert_eq!(q.waiters(), [c(1), c(3)]);
        assert_eq!(q.prev(c(3)), Some(c(1)));
        assert_eq!(q.osq_poll(c(3), false, preempted), Ok(OsqStep::Cancelled));
        assert_eq!(
            q.osq_poll(c(2), false, preempted),
            Err(OsqError::NotQueued(c(2)))
        );
        // The holder's own preemption is the owner check's business.
        assert_eq!(q.osq_poll(c(0), true, |_| true), Ok(OsqStep::Locked));
    }

    #[test]
    fn need_resched_cancels_a_waiting_node() {
        let mut q = Osq::new();
        q.osq_lock(c(0)).unwrap();
        q.osq_lock(c(1)).unwrap();
        q.osq_lock(c(2)).unwrap();
        assert_eq!(q.osq_poll(c(1), true, |_| false), Ok(OsqStep::Cancelled));
        assert_eq!(q.osq_unlock(c(0)), Ok(Some(c(2))));
    }
}
