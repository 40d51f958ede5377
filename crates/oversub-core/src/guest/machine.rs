//! One interface over the guest lock models, as the simulator's vCPU
//! behaviour drives them: `lock`, `poll` (a number of PAUSE iterations at
//! once), `release`, and who must re-check the lock word after a release.

use super::spinlock::{
    LockStep, NativeQspinlock, PvQspinlock, PvSlowpath, Release, TasLock, TicketLock,
};
use super::workload::LockKind;
use crate::kvm::VcpuIdx;

/// A guest spinlock of any kind.
#[derive(Clone, Debug)]
pub enum GuestLock {
    Ticket(TicketLock),
    Native(NativeQspinlock),
    Pv(PvQspinlock),
    /// `virt_spin_lock` with the CPUs currently spinning on it.
    Tas(TasLock, Vec<VcpuIdx>),
}

impl GuestLock {
    pub fn new(kind: LockKind) -> GuestLock {
        GuestLock::with_pv_slowpath(kind, PvSlowpath::V6_12)
    }

    /// A lock of `kind`; a PV qspinlock takes `slowpath`'s switches.
    pub fn with_pv_slowpath(kind: LockKind, slowpath: PvSlowpath) -> GuestLock {
        match kind {
            LockKind::Ticket => GuestLock::Ticket(TicketLock::new()),
            LockKind::NativeQspinlock => GuestLock::Native(NativeQspinlock::new()),
            LockKind::PvQspinlock => GuestLock::Pv(PvQspinlock::with_slowpath(slowpath)),
            LockKind::Tas => GuestLock::Tas(TasLock::new(), Vec::new()),
        }
    }

    /// First acquisition attempt. Misuse (a CPU locking twice) is a bug of the
    /// caller and panics.
    pub fn lock(&mut self, cpu: VcpuIdx) -> LockStep {
        let r = match self {
            GuestLock::Ticket(l) => l.lock(cpu),
            GuestLock::Native(l) => l.lock(cpu),
            GuestLock::Pv(l) => l.lock(cpu),
            GuestLock::Tas(l, w) => {
                let r = l.try_lock(cpu);
                if r == Ok(LockStep::Spin) && !w.contains(&cpu) {
                    w.push(cpu);
                }
                r
            }
        };
        r.expect("guest lock misuse")
    }

    /// `iters` (>= 1) spin iterations of a waiting CPU.
    pub fn poll(&mut self, cpu: VcpuIdx, iters: u64) -> LockStep {
        let r = match self {
            GuestLock::Ticket(l) => l.spin(cpu),
            GuestLock::Native(l) => l.spin(cpu),
            GuestLock::Pv(l) => l.spin_many(cpu, iters.max(1)),
            GuestLock::Tas(l, w) => {
                let r = l.try_lock(cpu);
                if r == Ok(LockStep::Acquired) {
                    w.retain(|&c| c != cpu);
                }
                r
            }
        };
        r.expect("guest lock misuse")
    }

    /// `pv_wait` returned (kicked or not): spin again (PV qspinlock only).
    pub fn pv_wait_returned(&mut self, cpu: VcpuIdx) {
        if let GuestLock::Pv(l) = self {
            l.pv_wait_returned(cpu);
        }
    }

    /// `pv_wait` returned: reset the spin budget, then one spin iteration.
    pub fn pv_wait_then_poll(&mut self, cpu: VcpuIdx) -> LockStep {
        self.pv_wait_returned(cpu);
        self.poll(cpu, 1)
    }

    /// Spin iterations before `pv_wait` (PV qspinlock only).
    pub fn spins_left(&self, cpu: VcpuIdx) -> Option<u64> {
        match self {
            GuestLock::Pv(l) => l.spins_left(cpu).map(u64::from),
            _ => None,
        }
    }

    /// The PV waiter queued right behind `cpu`, which watches it in
    /// `pv_wait_early` (None for other kinds, or with the switch off).
    pub fn pv_next_waiter(&self, cpu: VcpuIdx) -> Option<VcpuIdx> {
        match self {
            GuestLock::Pv(l) if l.slowpath.wait_early => l.next_waiter(cpu),
            _ => None,
        }
    }

    /// Unlock by the owner.
    pub fn release(&mut self, cpu: VcpuIdx) -> Release {
        let r = match self {
            GuestLock::Ticket(l) => l.release(cpu),
            GuestLock::Native(l) => l.release(cpu),
            GuestLock::Pv(l) => l.release(cpu),
            GuestLock::Tas(l, _) => l.release(cpu),
        };
        r.expect("guest lock misuse")
    }

    /// The `k`-th of the CPUs that may take the lock after a
    /// `Release::Free` (they must look at the lock word again): the PV
    /// queue head then its unqueued (stealing) spinners, or every TAS
    /// spinner in order. None past the last. Indexed, so a release walks
    /// them without building a list.
    pub fn contender(&self, k: usize) -> Option<VcpuIdx> {
        match self {
            GuestLock::Pv(l) => l.contender(k),
            GuestLock::Tas(_, w) => w.get(k).copied(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pv_spin_many_halts_at_threshold() {
        let mut l = GuestLock::new(LockKind::PvQspinlock);
        assert_eq!(l.lock(VcpuIdx(0)), LockStep::Acquired);
        assert_eq!(l.lock(VcpuIdx(1)), LockStep::Spin);
        let left = l.spins_left(VcpuIdx(1)).unwrap();
        assert_eq!(left, u64::from(super::super::spinlock::SPIN_THRESHOLD));
        assert_eq!(l.poll(VcpuIdx(1), left - 1), LockStep::Spin);
        assert_eq!(l.poll(VcpuIdx(1), 1), LockStep::Halt);
        assert_eq!(l.release(VcpuIdx(0)), Release::Kick(VcpuIdx(1)));
        assert_eq!(l.poll(VcpuIdx(1), 1), LockStep::Acquired);
    }

    #[test]
    fn tas_tracks_spinners() {
        let mut l = GuestLock::new(LockKind::Tas);
        assert_eq!(l.lock(VcpuIdx(0)), LockStep::Acquired);
        assert_eq!(l.lock(VcpuIdx(1)), LockStep::Spin);
        assert_eq!(l.lock(VcpuIdx(2)), LockStep::Spin);
        assert_eq!(l.release(VcpuIdx(0)), Release::Free);
        let all = |l: &GuestLock| (0..).map_while(|k| l.contender(k)).collect::<Vec<_>>();
        assert_eq!(all(&l), [VcpuIdx(1), VcpuIdx(2)]);
        assert_eq!(l.poll(VcpuIdx(2), 1), LockStep::Acquired);
        assert_eq!(all(&l), [VcpuIdx(1)]);
    }
}
