//! Guest spinlock implementations as pure state machines, driven by
//! `lock` / `spin` (one PAUSE-loop iteration) / `release` calls from the
//! guest CPU (= vCPU) that runs them. Models, for Linux 6.12.117 guests:
//! * [`TicketLock`]: the classic x86 ticket lock (removed from mainline in
//!   4.2, kept as the FIFO reference point): strict FIFO, spin with PAUSE.
//! * [`NativeQspinlock`]: kernel/locking/qspinlock.c without paravirt,
//!   simplified to an MCS FIFO queue (the pending-bit fast path for the first
//!   waiter is folded into the queue; see docs/kvm-model.md).
//! * [`PvQspinlock`]: kernel/locking/qspinlock_paravirt.h: waiters spin
//!   `SPIN_THRESHOLD` (1 << 15, arch/x86/include/asm/spinlock.h) iterations,
//!   then `pv_wait` (halt, `kvm_wait`); unlock of a lock with a halted head
//!   kicks it with KVM_HC_KICK_CPU (`pv_kick` -> `kvm_kick_cpu`); a
//!   waiter behind a halted one halts early (`pv_wait_early`), and a
//!   newcomer may steal a free lock while the head is not spinning
//!   (`pv_hybrid_queued_unfair_trylock`): [`PvSlowpath`].
//! * [`TasLock`]: `virt_spin_lock` (arch/x86/include/asm/qspinlock.h), the
//!   test-and-set fallback used when running under a hypervisor without PV
//!   spinlocks: unfair, no queue.

use crate::guest::workload::LockKind;
use crate::kvm::VcpuIdx;
use std::collections::VecDeque;

/// `SPIN_THRESHOLD` (arch/x86/include/asm/spinlock.h, 6.12.117).
pub const SPIN_THRESHOLD: u32 = 1 << 15;

/// What the calling CPU does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockStep {
    /// The caller owns the lock.
    Acquired,
    /// Keep spinning (PAUSE and call `spin` again).
    Spin,
    /// Halt in `pv_wait` until kicked.
    Halt,
}

/// What a release does besides freeing the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Nobody is waiting, or waiters will notice on their own.
    Free,
    /// FIFO handoff: this CPU owns the lock now (it notices on its next spin).
    HandedTo(VcpuIdx),
    /// KVM_HC_KICK_CPU to this halted waiter (it resumes spinning).
    Kick(VcpuIdx),
}

/// Misuse of a lock model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockError {
    /// `release` by a CPU that does not own the lock.
    NotOwner(VcpuIdx),
    /// `lock` by a CPU that already owns or waits for the lock.
    AlreadyHeldOrQueued(VcpuIdx),
    /// `spin` by a CPU that is not waiting.
    NotWaiting(VcpuIdx),
}

/// x86 ticket lock: `head`/`tail` counters, wrapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TicketLock {
    head: u32,
    tail: u32,
    /// Holder and waiters with their tickets, in ticket order.
    tickets: VecDeque<(VcpuIdx, u32)>,
}

impl TicketLock {
    pub fn new() -> Self {
        Self::default()
    }

    /// The current owner.
    pub fn owner(&self) -> Option<VcpuIdx> {
        self.tickets
            .front()
            .filter(|(_, t)| *t == self.head)
            .map(|(c, _)| *c)
    }

    /// Take a ticket (`xadd` on tail).
    pub fn lock(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if self.tickets.iter().any(|(c, _)| *c == cpu) {
            return Err(LockError::AlreadyHeldOrQueued(cpu));
        }
        let t = self.tail;
        self.tail = self.tail.wrapping_add(1);
        self.tickets.push_back((cpu, t));
        Ok(if t == self.head {
            LockStep::Acquired
        } else {
            LockStep::Spin
        })
    }

    /// One spin iteration: acquired once `head` reaches the CPU's ticket.
    pub fn spin(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        match self.tickets.iter().find(|(c, _)| *c == cpu) {
            Some((_, t)) if *t == self.head => Ok(LockStep::Acquired),
            Some(_) => Ok(LockStep::Spin),
            None => Err(LockError::NotWaiting(cpu)),
        }
    }

    /// Unlock: `head += 1`; the next ticket holder owns the lock.
    pub fn release(&mut self, cpu: VcpuIdx) -> Result<Release, LockError> {
        if self.owner() != Some(cpu) {
            return Err(LockError::NotOwner(cpu));
        }
        self.tickets.pop_front();
        self.head = self.head.wrapping_add(1);
        Ok(match self.tickets.front() {
            Some((c, _)) => Release::HandedTo(*c),
            None => Release::Free,
        })
    }
}

/// Native qspinlock as an MCS FIFO queue with direct handoff.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeQspinlock {
    owner: Option<VcpuIdx>,
    queue: VecDeque<VcpuIdx>,
}

impl NativeQspinlock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn owner(&self) -> Option<VcpuIdx> {
        self.owner
    }

    /// `queued_spin_lock`: the fast path succeeds only on an all-zero word.
    pub fn lock(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if self.owner == Some(cpu) || self.queue.contains(&cpu) {
            return Err(LockError::AlreadyHeldOrQueued(cpu));
        }
        if self.owner.is_none() && self.queue.is_empty() {
            self.owner = Some(cpu);
            return Ok(LockStep::Acquired);
        }
        self.queue.push_back(cpu);
        Ok(LockStep::Spin)
    }

    pub fn spin(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if self.owner == Some(cpu) {
            Ok(LockStep::Acquired)
        } else if self.queue.contains(&cpu) {
            Ok(LockStep::Spin)
        } else {
            Err(LockError::NotWaiting(cpu))
        }
    }

    pub fn release(&mut self, cpu: VcpuIdx) -> Result<Release, LockError> {
        if self.owner != Some(cpu) {
            return Err(LockError::NotOwner(cpu));
        }
        self.owner = self.queue.pop_front();
        Ok(self.owner.map_or(Release::Free, Release::HandedTo))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PvWaiter {
    cpu: VcpuIdx,
    spins: u32,
    halted: bool,
}

/// `PV_PREV_CHECK_MASK` (kernel/locking/qspinlock_paravirt.h, 6.12.117):
/// a queued waiter looks at the previous node's state every 256 spins.
pub const PV_PREV_CHECK_MASK: u32 = 0xff;

/// The version switches of the PV qspinlock's slow path
/// (kernel/locking/qspinlock_paravirt.h); both on is Linux 6.12.117.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PvSlowpath {
    /// `pv_wait_early()` in `pv_wait_node()` (6.12.117): a queued waiter
    /// that is not the head halts at its next check (every
    /// [`PV_PREV_CHECK_MASK`] + 1 spins, the first at once) when the
    /// previous node's state is not `vcpu_running` (that waiter halted in
    /// `pv_wait`). Off: it spins its whole `SPIN_THRESHOLD`, as the PV
    /// qspinlock did before adaptive queue-node spinning (which kernel
    /// release added it is not verified here).
    pub wait_early: bool,
    /// Lock stealing, 6.12.117's hybrid queued/unfair lock
    /// (`queued_spin_trylock` is `pv_hybrid_queued_unfair_trylock` at
    /// `pv_queue`, before queueing): a newcomer that misses the fast path
    /// takes the lock when it is free and the pending bit is clear (the
    /// queue head is not in its active spin: halted, kicked but not yet
    /// running, or not yet head); while waiters queue and the bit is clear
    /// it spins on the lock word unqueued (never halting), and it queues
    /// once the queue empties or the head sets the bit. Off: every
    /// newcomer that misses the fast path (lock word not zero) queues,
    /// FIFO, as the PV qspinlock did before lock stealing (release not
    /// verified here).
    pub steal: bool,
}

impl PvSlowpath {
    /// Linux 6.12.117: both on.
    pub const V6_12: PvSlowpath = PvSlowpath {
        wait_early: true,
        steal: true,
    };
}

/// Paravirt qspinlock (`pv_wait_node` / `pv_wait_head_or_lock` / `pv_kick`,
/// `pv_hybrid_queued_unfair_trylock`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvQspinlock {
    owner: Option<VcpuIdx>,
    queue: VecDeque<PvWaiter>,
    /// The pending bit: the queue head spins in its active loop of
    /// `pv_wait_head_or_lock` (`set_pending`), which stops lock stealing.
    pending: bool,
    /// Newcomers spinning unqueued in `pv_hybrid_queued_unfair_trylock`.
    unfair: Vec<VcpuIdx>,
    /// Spin iterations before `pv_wait` (default `SPIN_THRESHOLD`).
    pub spin_threshold: u32,
    /// Which slow path (version switches).
    pub slowpath: PvSlowpath,
}

impl Default for PvQspinlock {
    fn default() -> Self {
        PvQspinlock {
            owner: None,
            queue: VecDeque::new(),
            pending: false,
            unfair: Vec::new(),
            spin_threshold: SPIN_THRESHOLD,
            slowpath: PvSlowpath::V6_12,
        }
    }
}

impl PvQspinlock {
    pub fn new() -> Self {
        Self::default()
    }

    /// A lock with the given slow path.
    pub fn with_slowpath(slowpath: PvSlowpath) -> Self {
        PvQspinlock {
            slowpath,
            ..Self::default()
        }
    }

    pub fn owner(&self) -> Option<VcpuIdx> {
        self.owner
    }

    /// Whether `cpu` is halted in `pv_wait`.
    pub fn is_halted(&self, cpu: VcpuIdx) -> bool {
        self.queue.iter().any(|w| w.cpu == cpu && w.halted)
    }

    /// Whether `cpu` spins unqueued in `pv_hybrid_queued_unfair_trylock`.
    pub fn is_unfair(&self, cpu: VcpuIdx) -> bool {
        self.unfair.contains(&cpu)
    }

    fn enqueue(&mut self, cpu: VcpuIdx) {
        self.queue.push_back(PvWaiter {
            cpu,
            spins: 0,
            halted: false,
        });
    }

    /// `queued_spin_lock`: the fast path takes a lock word of zero (free,
    /// nobody queued); else the slow path: the hybrid trylock (lock
    /// stealing, [`PvSlowpath::steal`]) or the queue.
    pub fn lock(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if self.owner == Some(cpu)
            || self.queue.iter().any(|w| w.cpu == cpu)
            || self.unfair.contains(&cpu)
        {
            return Err(LockError::AlreadyHeldOrQueued(cpu));
        }
        if self.owner.is_none() && self.queue.is_empty() && !self.pending {
            self.owner = Some(cpu);
            return Ok(LockStep::Acquired);
        }
        if self.slowpath.steal {
            if self.owner.is_none() && !self.pending {
                // pv_lock_stealing.
                self.owner = Some(cpu);
                return Ok(LockStep::Acquired);
            }
            if !self.queue.is_empty() && !self.pending {
                self.unfair.push(cpu);
                return Ok(LockStep::Spin);
            }
        }
        self.enqueue(cpu);
        Ok(LockStep::Spin)
    }

    /// One spin iteration: an unqueued (unfair) spinner steals a free lock
    /// or queues once it may not; a queued waiter: the head sets the
    /// pending bit and takes a free lock; a waiter behind a halted one
    /// halts early ([`PvSlowpath::wait_early`]); after `spin_threshold`
    /// iterations the waiter halts. A halted waiter keeps answering
    /// `Halt` until kicked.
    pub fn spin(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if let Some(k) = self.unfair.iter().position(|&c| c == cpu) {
            if self.owner.is_none() && !self.pending {
                self.unfair.swap_remove(k);
                self.owner = Some(cpu);
                return Ok(LockStep::Acquired);
            }
            if self.queue.is_empty() || self.pending {
                // The hybrid loop breaks: pv_queue goes on and queues.
                self.unfair.swap_remove(k);
                self.enqueue(cpu);
            }
            return Ok(LockStep::Spin);
        }
        let pos = self
            .queue
            .iter()
            .position(|w| w.cpu == cpu)
            .ok_or(LockError::NotWaiting(cpu))?;
        if self.queue[pos].halted {
            return Ok(LockStep::Halt);
        }
        if pos == 0 {
            if self.owner.is_none() {
                // trylock_clear_pending (or the xchg of _Q_SLOW_VAL).
                self.queue.pop_front();
                self.owner = Some(cpu);
                self.pending = false;
                return Ok(LockStep::Acquired);
            }
            self.pending = true;
        } else if self.slowpath.wait_early
            && self.queue[pos - 1].halted
            && self.at_prev_check(self.queue[pos].spins)
        {
            self.queue[pos].halted = true;
            return Ok(LockStep::Halt);
        }
        let w = &mut self.queue[pos];
        w.spins = w.spins.saturating_add(1);
        if w.spins >= self.spin_threshold {
            w.halted = true;
            if pos == 0 {
                self.pending = false;
            }
            return Ok(LockStep::Halt);
        }
        Ok(LockStep::Spin)
    }

    /// Whether `pv_wait_node`'s loop, having spun `spins` times, looks at
    /// the previous node now (`loop & PV_PREV_CHECK_MASK == 0`, `loop`
    /// counting down from the threshold).
    fn at_prev_check(&self, spins: u32) -> bool {
        self.spin_threshold.saturating_sub(spins) & PV_PREV_CHECK_MASK == 0
    }

    /// Iterations from `spins` on until `pv_wait_early()` halts a waiter
    /// whose previous node is halted, counting the halting one.
    fn early_left(&self, spins: u32) -> u32 {
        (self.spin_threshold.saturating_sub(spins) & PV_PREV_CHECK_MASK) + 1
    }

    /// Whether the waiter at `pos` would halt early (its previous node
    /// halted, with `pv_wait_early`).
    fn waits_early(&self, pos: usize) -> bool {
        self.slowpath.wait_early && pos > 0 && self.queue[pos - 1].halted
    }

    /// `n` spin iterations at once (n >= 1): the same as calling [`spin`]
    /// up to `n` times, stopping at the first non-`Spin` answer.
    ///
    /// [`spin`]: PvQspinlock::spin
    pub fn spin_many(&mut self, cpu: VcpuIdx, n: u64) -> Result<LockStep, LockError> {
        let first = self.spin(cpu)?;
        if first != LockStep::Spin || n <= 1 {
            return Ok(first);
        }
        // The lock state cannot change between iterations: only the count.
        // An unqueued spinner's answer stays the same.
        let Some(pos) = self.queue.iter().position(|w| w.cpu == cpu) else {
            return Ok(LockStep::Spin);
        };
        let more = u32::try_from(n - 1).unwrap_or(u32::MAX);
        if self.waits_early(pos) {
            let k = self.early_left(self.queue[pos].spins) - 1;
            if k < more {
                let w = &mut self.queue[pos];
                w.spins = w.spins.saturating_add(k).min(self.spin_threshold);
                w.halted = true;
                return Ok(LockStep::Halt);
            }
        }
        let w = &mut self.queue[pos];
        w.spins = w.spins.saturating_add(more);
        if w.spins >= self.spin_threshold {
            w.spins = self.spin_threshold;
            w.halted = true;
            if pos == 0 {
                self.pending = false;
            }
            return Ok(LockStep::Halt);
        }
        Ok(LockStep::Spin)
    }

    /// `pv_wait` returned without a kick (an interrupt woke the halted
    /// vCPU): the waiter spins another `spin_threshold` iterations before it
    /// halts again (the `for (;;)` loops of `pv_wait_node` /
    /// `pv_wait_head_or_lock`).
    pub fn pv_wait_returned(&mut self, cpu: VcpuIdx) {
        if let Some(w) = self.queue.iter_mut().find(|w| w.cpu == cpu) {
            w.halted = false;
            w.spins = 0;
        }
    }

    /// Spin iterations `cpu` has left before `pv_wait` (None if not
    /// queued: an unqueued spinner never halts).
    pub fn spins_left(&self, cpu: VcpuIdx) -> Option<u32> {
        let pos = self.queue.iter().position(|w| w.cpu == cpu)?;
        let spins = self.queue[pos].spins;
        let left = self.spin_threshold.saturating_sub(spins);
        Some(if self.waits_early(pos) {
            left.min(self.early_left(spins))
        } else {
            left
        })
    }

    /// The queue head (the waiter that takes the lock when it is freed).
    pub fn head(&self) -> Option<VcpuIdx> {
        self.queue.front().map(|w| w.cpu)
    }

    /// The waiter queued right behind `cpu` (it watches `cpu`'s node in
    /// `pv_wait_early`).
    pub fn next_waiter(&self, cpu: VcpuIdx) -> Option<VcpuIdx> {
        let pos = self.queue.iter().position(|w| w.cpu == cpu)?;
        self.queue.get(pos + 1).map(|w| w.cpu)
    }

    /// The `k`-th CPU that must look at the lock word after a release:
    /// the queue head, then the unqueued spinners.
    pub fn contender(&self, k: usize) -> Option<VcpuIdx> {
        match self.head() {
            Some(h) if k == 0 => Some(h),
            Some(_) => self.unfair.get(k - 1).copied(),
            None => self.unfair.get(k).copied(),
        }
    }

    /// Unlock; kicks the queue head if it is halted (`_Q_SLOW_VAL`).
    pub fn release(&mut self, cpu: VcpuIdx) -> Result<Release, LockError> {
        if self.owner != Some(cpu) {
            return Err(LockError::NotOwner(cpu));
        }
        self.owner = None;
        match self.queue.front_mut() {
            Some(w) if w.halted => {
                w.halted = false;
                w.spins = 0;
                Ok(Release::Kick(w.cpu))
            }
            _ => Ok(Release::Free),
        }
    }
}

/// `virt_spin_lock`: test-and-set with `cpu_relax`, no queue, unfair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TasLock {
    owner: Option<VcpuIdx>,
}

impl TasLock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn owner(&self) -> Option<VcpuIdx> {
        self.owner
    }

    /// One `cmpxchg(0 -> locked)` attempt (first try or a spin iteration).
    pub fn try_lock(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        match self.owner {
            Some(o) if o == cpu => Err(LockError::AlreadyHeldOrQueued(cpu)),
            Some(_) => Ok(LockStep::Spin),
            None => {
                self.owner = Some(cpu);
                Ok(LockStep::Acquired)
            }
        }
    }

    pub fn release(&mut self, cpu: VcpuIdx) -> Result<Release, LockError> {
        if self.owner != Some(cpu) {
            return Err(LockError::NotOwner(cpu));
        }
        self.owner = None;
        Ok(Release::Free)
    }
}

/// `kvm_spinlock_init()` (arch/x86/kernel/kvm.c, Linux 6.12) after
/// `native_pv_lock_init()` (arch/x86/kernel/paravirt.c): the lock a KVM
/// guest's qspinlock becomes. `native_pv_lock_init()` enables
/// `virt_spin_lock_key` in every guest (X86_FEATURE_HYPERVISOR); then
/// `kvm_spinlock_init()` disables it (native qspinlock) with one possible
/// CPU, with `nopvspin`, or with the KVM_HINTS_REALTIME hint (not
/// modelled: the dedicated-pCPU hint also turns off PV TLB flush and PV
/// sched yield); keeps it (test-and-set `virt_spin_lock()`) when the host
/// does not offer KVM_FEATURE_PV_UNHALT; and otherwise installs the PV
/// slow path. Only a profile's default `pv_qspinlock` (the lock of a KVM
/// guest kernel) goes through this; a profile that names another kind
/// (`ticket`, `tas`, `native_qspinlock`) keeps it.
pub fn kvm_spinlock_init(
    requested: LockKind,
    pv_unhalt: bool,
    nopvspin: bool,
    possible_cpus: u32,
) -> LockKind {
    if requested != LockKind::PvQspinlock {
        return requested;
    }
    if possible_cpus == 1 || nopvspin {
        LockKind::NativeQspinlock
    } else if !pv_unhalt {
        LockKind::Tas
    } else {
        LockKind::PvQspinlock
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn kvm_spinlock_init_picks_the_lock_as_6_12_does() {
        use LockKind::*;
        // PV_UNHALT offered: the PV slow path.
        assert_eq!(kvm_spinlock_init(PvQspinlock, true, false, 16), PvQspinlock);
        // No PV_UNHALT: virt_spin_lock() stays on, a test-and-set lock.
        assert_eq!(kvm_spinlock_init(PvQspinlock, false, false, 16), Tas);
        // nopvspin or one CPU: virt_spin_lock_key off, the native qspinlock,
        // whatever the host offers.
        assert_eq!(
            kvm_spinlock_init(PvQspinlock, true, true, 16),
            NativeQspinlock
        );
        assert_eq!(
            kvm_spinlock_init(PvQspinlock, false, true, 16),
            NativeQspinlock
        );
        assert_eq!(
            kvm_spinlock_init(PvQspinlock, true, false, 1),
            NativeQspinlock
        );
        // A profile that names its lock keeps it.
        for k in [Ticket, Tas, NativeQspinlock] {
            assert_eq!(kvm_spinlock_init(k, false, false, 16), k);
        }
    }

    fn c(i: u32) -> VcpuIdx {
        VcpuIdx(i)
    }

    #[test]
    fn ticket_fifo_handoff() {
        let mut l = TicketLock::new();
        assert_eq!(l.lock(c(0)), Ok(LockStep::Acquired));
        assert_eq!(l.lock(c(2)), Ok(LockStep::Spin));
        assert_eq!(l.lock(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.release(c(0)), Ok(Release::HandedTo(c(2))));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(2)), Ok(LockStep::Acquired));
        assert_eq!(l.release(c(1)), Err(LockError::NotOwner(c(1))));
        assert_eq!(l.release(c(2)), Ok(Release::HandedTo(c(1))));
        assert_eq!(l.release(c(1)), Ok(Release::Free));
        assert_eq!(l.lock(c(3)), Ok(LockStep::Acquired));
    }

    #[test]
    fn ticket_counters_wrap() {
        let mut l = TicketLock {
            head: u32::MAX,
            tail: u32::MAX,
            tickets: VecDeque::new(),
        };
        assert_eq!(l.lock(c(0)), Ok(LockStep::Acquired));
        assert_eq!(l.lock(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.release(c(0)), Ok(Release::HandedTo(c(1))));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
    }

    #[test]
    fn native_qspinlock_is_fifo_and_rejects_misuse() {
        let mut l = NativeQspinlock::new();
        assert_eq!(l.lock(c(0)), Ok(LockStep::Acquired));
        assert_eq!(l.lock(c(0)), Err(LockError::AlreadyHeldOrQueued(c(0))));
        l.lock(c(3)).ok();
        l.lock(c(1)).ok();
        assert_eq!(l.release(c(0)), Ok(Release::HandedTo(c(3))));
        // No stealing: a newcomer queues behind.
        assert_eq!(l.lock(c(4)), Ok(LockStep::Spin));
        assert_eq!(l.release(c(3)), Ok(Release::HandedTo(c(1))));
        assert_eq!(l.spin(c(9)), Err(LockError::NotWaiting(c(9))));
    }

    #[test]
    fn pv_waits_after_threshold_and_is_kicked_on_unlock() {
        let mut l = PvQspinlock::new();
        l.lock(c(0)).ok();
        assert_eq!(l.lock(c(1)), Ok(LockStep::Spin));
        for _ in 1..SPIN_THRESHOLD {
            assert_eq!(l.spin(c(1)), Ok(LockStep::Spin));
        }
        assert_eq!(l.spin(c(1)), Ok(LockStep::Halt));
        assert!(l.is_halted(c(1)));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Halt));
        assert_eq!(l.release(c(0)), Ok(Release::Kick(c(1))));
        assert!(!l.is_halted(c(1)));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
        assert_eq!(l.release(c(1)), Ok(Release::Free));
    }

    #[test]
    fn pv_lock_can_be_stolen_between_unlock_and_head_spin() {
        let mut l = PvQspinlock {
            spin_threshold: 4,
            ..PvQspinlock::new()
        };
        l.lock(c(0)).ok();
        l.lock(c(1)).ok();
        for _ in 0..4 {
            l.spin(c(1)).ok();
        }
        assert_eq!(l.release(c(0)), Ok(Release::Kick(c(1))));
        // The kicked head has not run yet: a newcomer takes the free lock.
        assert_eq!(l.lock(c(2)), Ok(LockStep::Acquired));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Spin));
        // Not halted head: release does not kick.
        assert_eq!(l.release(c(2)), Ok(Release::Free));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
    }

    /// The pending bit: a head in its active spin stops lock stealing; a
    /// newcomer queues behind it and the head takes the freed lock.
    #[test]
    fn pv_a_spinning_head_is_not_stolen_from() {
        let mut l = PvQspinlock::new();
        l.lock(c(0)).ok();
        assert_eq!(l.lock(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Spin)); // set_pending
        assert_eq!(l.release(c(0)), Ok(Release::Free));
        assert_eq!(l.lock(c(2)), Ok(LockStep::Spin));
        assert!(!l.is_unfair(c(2)), "queued, not stealing");
        assert_eq!(l.spin(c(2)), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
    }

    /// `pv_hybrid_queued_unfair_trylock`: while the head is halted a
    /// newcomer spins unqueued (never halting) and takes the lock the
    /// release frees before the kicked head runs; once the head spins
    /// again (pending set) the unqueued spinner queues behind it. Off:
    /// the newcomer queues, halts in turn and the head gets the lock.
    #[test]
    fn pv_a_newcomer_steals_from_a_halted_head() {
        let run = |steal: bool| {
            let mut l = PvQspinlock {
                spin_threshold: 4,
                ..PvQspinlock::with_slowpath(PvSlowpath {
                    wait_early: false,
                    steal,
                })
            };
            l.lock(c(0)).ok();
            l.lock(c(1)).ok();
            assert_eq!(l.spin_many(c(1), 4), Ok(LockStep::Halt));
            assert_eq!(l.lock(c(2)), Ok(LockStep::Spin));
            let unfair = l.is_unfair(c(2));
            let c2_halts = l.spin_many(c(2), 100) == Ok(LockStep::Halt);
            assert_eq!(l.release(c(0)), Ok(Release::Kick(c(1))));
            let c2 = l.spin(c(2));
            let c1 = l.spin(c(1));
            (unfair, c2_halts, c2, c1, l)
        };
        let (unfair, halts, c2, c1, mut l) = run(true);
        assert!(unfair && !halts);
        assert_eq!((c2, c1), (Ok(LockStep::Acquired), Ok(LockStep::Spin)));
        assert_eq!(l.spins_left(c(2)), None);
        // The head spins (pending): the next newcomer queues.
        assert_eq!(l.lock(c(3)), Ok(LockStep::Spin));
        assert!(!l.is_unfair(c(3)));
        assert_eq!(l.release(c(2)), Ok(Release::Free));
        assert_eq!(l.spin(c(3)), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
        let (unfair, halts, c2, c1, _) = run(false);
        assert!(!unfair && halts);
        assert_eq!((c2, c1), (Ok(LockStep::Halt), Ok(LockStep::Acquired)));
    }

    /// An unqueued spinner queues when the queue empties (the hybrid loop
    /// breaks on a zero tail) and then takes the free lock as head.
    #[test]
    fn pv_an_unqueued_spinner_queues_when_the_queue_empties() {
        let mut l = PvQspinlock {
            spin_threshold: 4,
            ..PvQspinlock::new()
        };
        l.lock(c(0)).ok();
        l.lock(c(1)).ok();
        l.spin_many(c(1), 4).ok();
        l.lock(c(2)).ok();
        assert!(l.is_unfair(c(2)));
        assert_eq!(l.release(c(0)), Ok(Release::Kick(c(1))));
        assert_eq!(l.spin(c(1)), Ok(LockStep::Acquired));
        assert_eq!(l.contender(0), Some(c(2)));
        assert_eq!(l.spin(c(2)), Ok(LockStep::Spin));
        assert!(!l.is_unfair(c(2)));
        assert_eq!(l.head(), Some(c(2)));
    }

    /// `pv_wait_early`: a waiter whose previous node halted halts at its
    /// next check (every 256 spins, the first at once), long before
    /// `SPIN_THRESHOLD`; off, it spins the whole threshold.
    #[test]
    fn pv_wait_early_halts_behind_a_halted_waiter() {
        let run = |wait_early: bool| {
            // No stealing: every waiter queues (stealing has its tests).
            let mut l = PvQspinlock::with_slowpath(PvSlowpath {
                wait_early,
                steal: false,
            });
            l.lock(c(0)).ok();
            l.lock(c(1)).ok();
            l.lock(c(2)).ok();
            l.lock(c(3)).ok();
            assert_eq!(l.spin_many(c(2), 10), Ok(LockStep::Spin));
            assert_eq!(
                l.spin_many(c(1), u64::from(SPIN_THRESHOLD)),
                Ok(LockStep::Halt)
            );
            l
        };
        let mut l = run(true);
        // 10 spins done: the next check is at loop 32512, 246 spins on.
        assert_eq!(l.spins_left(c(2)), Some(247));
        assert_eq!(l.spin_many(c(2), 246), Ok(LockStep::Spin));
        assert_eq!(l.spin_many(c(2), 1), Ok(LockStep::Halt));
        // Its follower had not spun: it halts on its first check.
        assert_eq!(l.spins_left(c(3)), Some(1));
        assert_eq!(l.spin(c(3)), Ok(LockStep::Halt));
        let mut l = run(false);
        assert_eq!(l.spins_left(c(2)), Some(SPIN_THRESHOLD - 10));
        assert_eq!(l.spin_many(c(2), 246), Ok(LockStep::Spin));
        assert_eq!(l.spin(c(3)), Ok(LockStep::Spin));
    }

    #[test]
    fn tas_is_unfair() {
        let mut l = TasLock::new();
        assert_eq!(l.try_lock(c(0)), Ok(LockStep::Acquired));
        assert_eq!(l.try_lock(c(1)), Ok(LockStep::Spin)); // long-time waiter
        assert_eq!(l.release(c(0)), Ok(Release::Free));
        // A newcomer wins before the waiter's next iteration.
        assert_eq!(l.try_lock(c(2)), Ok(LockStep::Acquired));
        assert_eq!(l.try_lock(c(1)), Ok(LockStep::Spin));
        assert_eq!(l.release(c(1)), Err(LockError::NotOwner(c(1))));
    }
}
