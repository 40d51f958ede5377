//! `[guest]` and `[guest.pv]`: which KVM paravirtual features the guest
//! kernel uses, validated into a [`PvSpec`].

use serde::Deserialize;

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuest {
    pv: Option<RawPv>,
    nopvspin: Option<bool>,
    cpuidle_haltpoll: Option<bool>,
    osq: Option<bool>,
    wakeup_locks: Option<bool>,
    pv_wait_early: Option<bool>,
    pv_lock_stealing: Option<bool>,
    lazy_mm_cpumask: Option<bool>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPv {
    steal_time: Option<bool>,
    spinlock: Option<bool>,
    sched_yield: Option<bool>,
    tlb_flush: Option<bool>,
    send_ipi: Option<bool>,
}

/// `[guest.pv]`, validated: which KVM paravirtual features the guest uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PvSpec {
    /// Steal-time `preempted` flag (`vcpu_is_preempted`).
    pub steal_time: bool,
    /// The host offers KVM_FEATURE_PV_UNHALT: the guest's qspinlock is the PV
    /// one (halt/kick); without it, the test-and-set `virt_spin_lock()`
    /// (`guest::spinlock::kvm_spinlock_init`).
    pub spinlock: bool,
    /// KVM_HC_SCHED_YIELD in `smp_call_function_many` towards a preempted target.
    pub sched_yield: bool,
    /// PV TLB flush: preempted targets are not sent the shootdown IPI.
    pub tlb_flush: bool,
    /// KVM_HC_SEND_IPI for multicast IPIs (one exit, never tracked).
    pub send_ipi: bool,
    /// `[guest] nopvspin`, the guest kernel parameter: PV spinlocks and
    /// `virt_spin_lock()` off, the native qspinlock, whatever the host
    /// offers.
    pub nopvspin: bool,
    /// `[guest] cpuidle_haltpoll`: the guest loaded the cpuidle-haltpoll
    /// driver (6.12 loads it only with the host's KVM_HINTS_REALTIME hint,
    /// i.e. dedicated pCPUs, or `cpuidle_haltpoll.force=1`; hence off by
    /// default). Program VMs only (`guest::haltpoll`).
    pub cpuidle_haltpoll: bool,
    /// `[guest] osq`: optimistic spinners of a kernel sleeping lock queue on
    /// its OSQ (`osq_lock`), one spins on the owner, as every Linux since
    /// 3.15 does; false: every spinner spins on the owner (the model before
    /// the OSQ).
    pub osq: bool,
    /// `[guest] wakeup_locks`: a program guest's futex waits and wakeups
    /// take the futex hash-bucket lock and each wakee's `pi_lock` as guest
    /// spinlocks (`guest::wakeup`); false (the default): they cost nothing.
    pub wakeup_locks: bool,
    /// `[guest] pv_wait_early`: the PV qspinlock's queued waiter halts
    /// early behind a halted one, as 6.12.117's `pv_wait_node()` does;
    /// false: it spins its whole `SPIN_THRESHOLD`
    /// (`guest::spinlock::PvSlowpath::wait_early`).
    pub pv_wait_early: bool,
    /// `[guest] pv_lock_stealing`: the PV qspinlock's hybrid
    /// queued/unfair trylock of 6.12.117 (a newcomer steals a free lock
    /// while the queue head is not spinning); false: every newcomer that
    /// misses the fast path queues (`guest::spinlock::PvSlowpath::steal`).
    pub pv_lock_stealing: bool,
    /// `[guest] lazy_mm_cpumask`: the guest's x86 TLB code keeps a CPU in
    /// the `mm_cpumask` of the mm it switched away from, and clears it
    /// only when a flush IPI finds the CPU on another mm (Linux 6.14's
    /// "x86/mm/tlb: Update mm_cpumask lazily", 209954cbc7d0, with the
    /// once-a-second trim of 6db2526c1d69); false (the default): 6.12's
    /// `switch_mm_irqs_off()` clears it at the switch
    /// (`sim::vm::guest`, `guest_tlb_shootdown`).
    pub lazy_mm_cpumask: bool,
}

impl Default for PvSpec {
    fn default() -> Self {
        PvSpec {
            steal_time: true,
            spinlock: true,
            sched_yield: true,
            tlb_flush: true,
            send_ipi: true,
            nopvspin: false,
            cpuidle_haltpoll: false,
            osq: true,
            wakeup_locks: false,
            pv_wait_early: true,
            pv_lock_stealing: true,
            lazy_mm_cpumask: false,
        }
    }
}

pub(super) fn pv(g: Option<RawGuest>) -> PvSpec {
    let d = PvSpec::default();
    let g = g.unwrap_or_default();
    let p = g.pv.unwrap_or_default();
    PvSpec {
        steal_time: p.steal_time.unwrap_or(d.steal_time),
        spinlock: p.spinlock.unwrap_or(d.spinlock),
        sched_yield: p.sched_yield.unwrap_or(d.sched_yield),
        tlb_flush: p.tlb_flush.unwrap_or(d.tlb_flush),
        send_ipi: p.send_ipi.unwrap_or(d.send_ipi),
        nopvspin: g.nopvspin.unwrap_or(d.nopvspin),
        cpuidle_haltpoll: g.cpuidle_haltpoll.unwrap_or(d.cpuidle_haltpoll),
        osq: g.osq.unwrap_or(d.osq),
        wakeup_locks: g.wakeup_locks.unwrap_or(d.wakeup_locks),
        pv_wait_early: g.pv_wait_early.unwrap_or(d.pv_wait_early),
        pv_lock_stealing: g.pv_lock_stealing.unwrap_or(d.pv_lock_stealing),
        lazy_mm_cpumask: g.lazy_mm_cpumask.unwrap_or(d.lazy_mm_cpumask),
    }
}
