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
//!   newcomer may steal a free lock (`pv_hybrid_queued_unfair_trylock`).
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

/// Paravirt qspinlock (`pv_wait_node` / `pv_wait_head_or_lock` / `pv_kick`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvQspinlock {
    owner: Option<VcpuIdx>,
    queue: VecDeque<PvWaiter>,
    /// Spin iterations before `pv_wait` (default `SPIN_THRESHOLD`).
    pub spin_threshold: u32,
}

impl Default for PvQspinlock {
    fn default() -> Self {
        PvQspinlock {
            owner: None,
            queue: VecDeque::new(),
            spin_threshold: SPIN_THRESHOLD,
        }
    }
}

impl PvQspinlock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn owner(&self) -> Option<VcpuIdx> {
        self.owner
    }

    /// Whether `cpu` is halted in `pv_wait`.
    pub fn is_halted(&self, cpu: VcpuIdx) -> bool {
        self.queue.iter().any(|w| w.cpu == cpu && w.halted)
    }

    /// Lock: a free lock is taken even if others queue (lock stealing).
    pub fn lock(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        if self.owner == Some(cpu) || self.queue.iter().any(|w| w.cpu == cpu) {
            return Err(LockError::AlreadyHeldOrQueued(cpu));
        }
        if self.owner.is_none() {
            self.owner = Some(cpu);
            return Ok(LockStep::Acquired);
        }
        self.queue.push_back(PvWaiter {
            cpu,
            spins: 0,
            halted: false,
        });
        Ok(LockStep::Spin)
    }

    /// One spin iteration of a queued waiter: the queue head takes a free
    /// lock; after `spin_threshold` iterations the waiter halts.
    /// A halted waiter keeps answering `Halt` until kicked.
    pub fn spin(&mut self, cpu: VcpuIdx) -> Result<LockStep, LockError> {
        let pos = self
            .queue
            .iter()
            .position(|w| w.cpu == cpu)
            .ok_or(LockError::NotWaiting(cpu))?;
        if self.queue[pos].halted {
            return Ok(LockStep::Halt);
        }
        if pos == 0 && self.owner.is_none() {
            self.queue.pop_front();
            self.owner = Some(cpu);
            return Ok(LockStep::Acquired);
        }
        let w = &mut self.queue[pos];
        w.spins = w.spins.saturating_add(1);
        if w.spins >= self.spin_threshold {
            w.halted = true;
            return Ok(LockStep::Halt);
        }
        Ok(LockStep::Spin)
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
        let pos = self
            .queue
            .iter()
            .position(|w| w.cpu == cpu)
            .ok_or(LockError::NotWaiting(cpu))?;
        let w = &mut self.queue[pos];
        let more = u32::try_from(n - 1).unwrap_or(u32::MAX);
        w.spins = w.spins.saturating_add(more);
        if w.spins >= self.spin_threshold {
            w.spins = self.spin_threshold;
            w.halted = true;
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

    /// Spin iterations `cpu` has left before `pv_wait` (None if not queued).
    pub fn spins_left(&self, cpu: VcpuIdx) -> Option<u32> {
        self.queue
            .iter()
            .find(|w| w.cpu == cpu)
            .map(|w| self.spin_threshold.saturating_sub(w.spins))
    }

    /// The queue head (the waiter that takes the lock when it is freed).
    pub fn head(&self) -> Option<VcpuIdx> {
        self.queue.front().map(|w| w.cpu)
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

/// Whether the guest kernel (Linux 6.12) takes the kernel spinlock a
/// program names with interrupts disabled, so that its waiters spin and
/// `pv_wait` with IRQs off: `zone` is `zone->lock`, taken with
/// `spin_lock_irqsave()` at every site of mm/page_alloc.c. A waiter then
/// takes no interrupt until it has taken and dropped the lock
/// (`spin_unlock_irqrestore()`), and its `pv_wait` -> `kvm_wait()` halts
/// with `halt()` (IF=0), which an interrupt does not end:
/// `kvm_vcpu_has_events()` (arch/x86/kvm/x86.c) counts a pending interrupt
/// only when `kvm_arch_interrupt_allowed()`; only the kick
/// (`pv_unhalted`) does. Every other name is taken as a plain
/// `spin_lock()` (IRQs on: `kvm_wait()`'s `safe_halt()`).
pub fn spin_lock_irqs_off(name: &str) -> bool {
    name == "zone"
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
    fn only_the_zone_lock_is_taken_with_irqs_off() {
        assert!(spin_lock_irqs_off("zone"));
        assert!(!spin_lock_irqs_off("dcache"));
        assert!(!spin_lock_irqs_off("mmap_lock"));
    }

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
