//! A program VM's idle guest CPU: `do_idle` -> `cpuidle_idle_call`
//! (kernel/sched/idle.c, Linux 6.12). Without a cpuidle driver
//! `default_idle_call` executes HLT at once; with cpuidle-haltpoll
//! (`[guest] cpuidle_haltpoll`) the `haltpoll` governor (`guest::haltpoll`)
//! picks polling in the guest (`poll_idle`: the vCPU keeps running, the host
//! sees a busy task) or HLT, and a wakeup of a polling CPU sends no IPI: the
//! waker's `set_nr_and_not_polling` sees `TIF_POLLING_NRFLAG` on the idle
//! task and only sets `TIF_NEED_RESCHED`, which the polling loop notices.

use super::super::Simulator;
use super::state::{Cat, Phase};
use super::{Act, FOREVER};
use crate::engine::{Nanos, Time};
use crate::guest::haltpoll::{
    haltpoll_reflect, haltpoll_select, poll_idle_end, HaltpollParams, IdleState,
};
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::CpuId;

impl Simulator {
    /// `cpuidle_idle_call` of VM `vi`'s idle guest CPU `i`: the governor's
    /// state (always HLT without cpuidle-haltpoll). Polling is a burst of
    /// `poll_limit_ns` (`cpuidle_poll_time`) in the guest.
    pub(super) fn cpuidle_idle_call(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx) -> Act {
        let now = self.now;
        let vm = &mut self.vms[vi];
        if vm.haltpoll && haltpoll_select(&vm.g[i].cpuidle) == IdleState::Poll {
            let until = now + Nanos(vm.g[i].cpuidle.poll_limit_ns);
            vm.stats.guest_polls += 1;
            vm.g[i].phase = Phase::IdlePoll { until };
            return Act::Run(Cat::GuestPoll, until - now);
        }
        // HLT until an interrupt (the guest's hrtimers and reschedule IPIs
        // arrive as interrupts).
        vm.stats.halts += 1;
        vm.g[i].wait_start = Time(FOREVER.0);
        vm.g[i].hlt_since = now;
        self.halt(cpu, vi, i, None)
    }

    /// `poll_idle`'s loop looks again (its burst ended or was cut short by a
    /// poke): on `need_resched()` the CPU leaves idle; past the limit
    /// (`poll_time_limit`) `do_idle` calls the governor again, which HLTs;
    /// else keep polling. The limit is guest time from the poll's start, so
    /// time the vCPU spent preempted counts. None: look at the phase again.
    pub(super) fn idle_poll_phase(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        until: Time,
    ) -> Option<Act> {
        let now = self.now;
        let woken = self.guest_need_resched(vi, i);
        if !woken && now < until {
            return Some(Act::Run(Cat::GuestPoll, until - now));
        }
        if woken {
            self.idle_poll_woken(vi, i);
            return None;
        }
        let dev = &mut self.vms[vi].g[i].cpuidle;
        poll_idle_end(dev, true);
        // The poll's residency is not used by the governor.
        haltpoll_reflect(dev, &HaltpollParams::default(), IdleState::Poll, 0);
        Some(self.cpuidle_idle_call(cpu, vi, i))
    }

    /// `poll_idle` of guest CPU `i` saw `need_resched()`: the poll ends
    /// before its limit and the CPU leaves idle (`NestedStage::Guest`; it polls
    /// afresh if it finds nothing to run).
    pub(super) fn idle_poll_woken(&mut self, vi: VmId, i: VcpuIdx) {
        let vm = &mut self.vms[vi];
        let dev = &mut vm.g[i].cpuidle;
        poll_idle_end(dev, false);
        haltpoll_reflect(dev, &HaltpollParams::default(), IdleState::Poll, 0);
        vm.stats.guest_polls_woken += 1;
        vm.g[i].phase = Phase::GUEST;
    }

    /// An idle HLT of guest CPU `i` returned: `haltpoll_reflect` with the
    /// time since the HLT as the guest's clock saw it (`last_residency_ns`,
    /// including any wait for a host CPU after the wakeup).
    pub(super) fn cpuidle_hlt_end(&mut self, vi: VmId, i: VcpuIdx) {
        let now = self.now;
        let vm = &mut self.vms[vi];
        if vm.haltpoll {
            let residency = (now - vm.g[i].hlt_since).0;
            let dev = &mut vm.g[i].cpuidle;
            haltpoll_reflect(dev, &HaltpollParams::default(), IdleState::Halt, residency);
        }
    }

    /// `TIF_POLLING_NRFLAG` of guest CPU `i`'s idle task: it polls in
    /// `poll_idle` (the short windows of `do_idle` outside it are not
    /// modelled).
    pub(super) fn guest_cpu_polling(&self, vi: VmId, i: VcpuIdx) -> bool {
        matches!(self.vms[vi].g[i].phase, Phase::IdlePoll { .. })
    }

    /// `need_resched()` of idle guest CPU `i`: marked, or a task queued.
    fn guest_need_resched(&self, vi: VmId, i: VcpuIdx) -> bool {
        let g = self.vms[vi].guest.as_ref().expect("a program VM");
        let rq = &g.kernel.sched.rqs[i.idx()];
        rq.need_resched || (rq.curr.is_none() && rq.nr_running > 0)
    }
}
