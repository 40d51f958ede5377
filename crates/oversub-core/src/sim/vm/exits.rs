//! The VM exits of a spinning or halting vCPU: HLT / `pv_wait` into
//! `kvm_vcpu_halt` (halt polling, `kvm::halt_poll`), a spin burst's PAUSE
//! exit (`handle_pause` / `pause_interception` -> `kvm_vcpu_on_spin`) and the
//! directed-yield hypercall (`KVM_HC_SCHED_YIELD`).

use super::super::Simulator;
use super::state::{Cat, Phase, Wait};
use super::{Act, FOREVER};
use crate::engine::Nanos;
use crate::kvm::irq_vectors::LOCAL_TIMER_VECTOR;
use crate::kvm::on_spin::{kvm_vcpu_on_spin_into, yield_to_ret, OnSpinCall, OnSpinVariant, Tier};
use crate::kvm::ple::{cycles_to_ns, ple_fires, PauseLoop, PleKind, PleOutcome};
use crate::kvm::pv::{kvm_sched_yield, SchedYield};
use crate::kvm::{VcpuIdx, VmId};
use crate::scenario::{KvmSpec, OnSpinSpec};
use crate::sched::core::{Switch, YieldTo};
use crate::sched::CpuId;

/// Spin iterations in `spun` of guest time.
pub(super) fn spin_iters(kvm: &KvmSpec, spun: Nanos) -> u64 {
    let cycles = u128::from(spun.0) * u128::from(kvm.guest_tsc_khz) / 1_000_000;
    u64::try_from(cycles / u128::from(kvm.pause_cycles.max(1))).unwrap_or(u64::MAX)
}

impl Simulator {
    /// `kvm_vcpu_halt` for an HLT (idle, guest timer at `wait_start`) or a
    /// `pv_wait`: poll first if the interval is non-zero and the CPU has
    /// nothing else to run (`kvm_vcpu_can_poll`: `single_task_running()`),
    /// else block.
    pub(super) fn halt(&mut self, cpu: CpuId, vi: VmId, i: VcpuIdx, pv_lock: Option<usize>) -> Act {
        self.trace_exit(cpu, self.vms[vi].task(i), "HLT");
        let now = self.now;
        let single = self.host.sched.rqs[cpu.idx()].nr_running == 1;
        let vm = &mut self.vms[vi];
        let poll = vm.vcpus[i]
            .halt_poll
            .kvm_vcpu_halt_begin(self.kvm.halt_poll, now);
        let g = &mut vm.g[i];
        let poll = match pv_lock {
            None => poll.min(g.wait_start - now),
            Some(_) => poll,
        };
        if poll > Nanos::ZERO && single {
            g.phase = Phase::Poll {
                pv_lock,
                left: poll,
            };
            return Act::Run(Cat::Poll, poll);
        }
        g.phase = Phase::Halted { pv_lock };
        let timer = pv_lock.is_none().then_some(g.wait_start);
        Act::Sleep(timer)
    }

    /// End of `kvm_vcpu_halt`: adapt `vcpu->halt_poll_ns` to how long the
    /// vCPU was halted (`kvm::halt_poll`).
    pub(super) fn halt_done(&mut self, vi: VmId, i: VcpuIdx) {
        let now = self.now;
        let hp = self.vms[vi].vcpus[i].halt_poll;
        if hp.in_halt {
            let waited = matches!(self.vms[vi].g[i].phase, Phase::Halted { .. });
            self.trace_vcpu_wakeup(vi, i, (now - hp.halt_start).0, waited);
        }
        self.vms[vi].vcpus[i]
            .halt_poll
            .kvm_vcpu_halt_end(self.kvm.halt_poll, now);
    }

    /// Length of the next spin burst and whether it ends in a PAUSE exit.
    pub(super) fn plan_spin(&self, vi: VmId, i: VcpuIdx, wait: Wait) -> (Nanos, bool) {
        let vm = &self.vms[vi];
        let me = i;
        let cap = match wait {
            Wait::Lock(l) => vm.locks[l].spins_left(me),
            _ => None,
        };
        let lp = PauseLoop {
            iterations: cap.unwrap_or(u64::MAX),
            cycles_per_iter: self.kvm.pause_cycles,
            tsc_khz: self.kvm.guest_tsc_khz,
            cpl0: true,
        };
        let out = match self.kvm.ple {
            Some(p) => ple_fires(&p, vm.vcpus[i].ple_window, &lp, true),
            None => PleOutcome::NoExit,
        };
        match out {
            PleOutcome::Exit { after, .. } => (after.max(Nanos(1)), true),
            PleOutcome::NoExit => match cap {
                Some(n) => (
                    cycles_to_ns(
                        n.saturating_mul(self.kvm.pause_cycles),
                        self.kvm.guest_tsc_khz,
                    )
                    .max(Nanos(1)),
                    false,
                ),
                None => (FOREVER, false),
            },
        }
    }

    /// `handle_pause` / `pause_interception`: grow the window, then
    /// `kvm_vcpu_on_spin(vcpu, true)`. Returns the switch if it yielded.
    pub(super) fn handle_pause(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
    ) -> Option<Option<Switch>> {
        self.trace_exit(cpu, self.vms[vi].task(i), "PAUSE_INSTRUCTION");
        let now = self.now;
        let kvm = &self.kvm;
        let vm = &mut self.vms[vi];
        vm.stats.ple_exits += 1;
        if let Some(p) = kvm.ple {
            vm.vcpus[i].ple_window = p.grow_ple_window(vm.vcpus[i].ple_window);
        }
        vm.g[i].pending_exit += kvm.round_trip();
        let OnSpinSpec::Variant(variant) = kvm.on_spin else {
            return None;
        };
        vm.stats.on_spin_calls += 1;
        let me = i;
        let receiver = match variant {
            OnSpinVariant::IpiAware { .. } => vm.tracker.confirmed_receiver(me, now),
            OnSpinVariant::IpiHint => {
                let mut h = vm.hint.take();
                let r = h
                    .as_mut()
                    .and_then(|h| h.owed_receiver(me, now, |r, v| vm.owes(r, v)));
                vm.hint = h;
                r
            }
            _ => None,
        };
        let tasks = vm.tasks;
        let sched = &mut self.host.sched;
        let mut out = None;
        // handle_pause (VMX) passes true; pause_interception (SVM) passes
        // `!sev_es_guest && CPL == 0` (every spin here is at CPL 0).
        let ytkm = !(vm.protected && kvm.ple.is_some_and(|p| p.kind == PleKind::Svm));
        let call = OnSpinCall {
            me,
            yield_to_kernel_mode: ytkm,
            variant,
            receiver,
        };
        let buf = std::mem::take(&mut vm.attempts_buf);
        // yield_to()'s own CPU time (HostCosts::yield_to), the vCPU's: paid
        // as exit overhead before it enters the guest again.
        let mut cost = Nanos::ZERO;
        let dec = kvm_vcpu_on_spin_into(buf, &mut vm.spin, &mut vm.vcpus, call, |t| {
            let r = sched.yield_to(cpu, tasks.task(t), true);
            cost += Nanos(sched.cfg.costs.yield_to_cost(r));
            if let YieldTo::Yielded(sw) = r {
                out = Some(sw);
            }
            yield_to_ret(r)
        });
        vm.g[i].pending_exit += cost;
        if let Some(Some(sw)) = out {
            if sw.prev == Some(tasks.task(me)) {
                // Switched out inside kvm_vcpu_on_spin(): in_spin_loop stays
                // set until the vCPU runs again (issue 11, bug 2).
                vm.vcpus[i].in_spin_loop = true;
                vm.vcpus[i].yielded_in_spin_loop = true;
            }
        }
        if let Some(t) = dec.target.filter(|_| dec.yielded > 0) {
            if matches!(vm.g[t].phase, Phase::Spin { .. }) {
                vm.stats.boosts_to_spinner += 1;
            }
        }
        if self.trace.is_some() {
            self.trace_on_spin(cpu, vi, i, &dec);
        }
        let vm = &mut self.vms[vi];
        vm.stats.yield_attempts += dec.attempts.len() as u64;
        vm.stats.yield_esrch += dec.attempts.iter().filter(|a| a.result < 0).count() as u64;
        // Boosted: 2013's `bool kvm_vcpu_yield_to()` may report `yielded = 1`
        // for a -ESRCH (no target).
        if dec.target.is_some() {
            vm.stats.yield_ok += 1;
            if dec.tier == Some(Tier::IpiReceiver) {
                vm.stats.boosts_receiver += 1;
                // Does the boosted receiver still owe me an IPI (queued, or
                // its handler running)? If not, the preference was stale.
                let t = dec.target.unwrap_or(VcpuIdx(0));
                let owes = vm.g[t]
                    .irqs
                    .iter()
                    .any(|q| q.from == me && q.vector != LOCAL_TIMER_VECTOR)
                    // An IPI handler in service counts as owing (async IPIs
                    // do not record their sender): undercounts stale boosts.
                    || matches!(vm.g[t].phase, Phase::Handler { vector, .. } if vector != LOCAL_TIMER_VECTOR);
                if !owes {
                    vm.stats.boosts_stale_receiver += 1;
                }
            }
        }
        vm.attempts_buf = dec.attempts;
        out
    }

    /// KVM_HC_SCHED_YIELD (also done by KVM_HC_KICK_CPU) towards `target`.
    pub(super) fn pv_sched_yield(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        target: VcpuIdx,
    ) -> Option<Option<Switch>> {
        let single = self.host.sched.rqs[cpu.idx()].nr_running == 1;
        let vm = &mut self.vms[vi];
        vm.stats.dy_attempted += 1;
        let tasks = vm.tasks;
        let sched = &mut self.host.sched;
        let mut out = None;
        let mut cost = Nanos::ZERO;
        let r = kvm_sched_yield(&vm.vcpus, i, u64::from(target.0), single, |t| {
            let r = sched.yield_to(cpu, tasks.task(t), true);
            cost = Nanos(sched.cfg.costs.yield_to_cost(r));
            if let YieldTo::Yielded(sw) = r {
                out = Some(sw);
            }
            yield_to_ret(r)
        });
        vm.g[i].pending_exit += cost;
        if let SchedYield::Yielded(t) = r {
            vm.stats.dy_successful += 1;
            self.trace_yield_to(cpu, tasks.task(i).0, tasks.task(t).0);
        }
        out
    }
}
