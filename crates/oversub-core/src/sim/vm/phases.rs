//! The phase generator's workload: a vCPU's compute bursts and what follows
//! each (an IPI, a TLB shootdown, a block or a guest spinlock section, as the
//! profile draws them), and the guest spinlock sections themselves
//! (`lock` / critical section / `unlock` with the next waiter's wakeup).

use super::super::Simulator;
use super::irq::draw_idle_vcpu;
use super::state::{AfterStage, Cat, GenStage, ModelStage, Phase, Wait};
use super::Act;
use crate::engine::Nanos;
use crate::guest::spinlock::{LockStep, Release};
use crate::kvm::irq_vectors::{CALL_FUNCTION_SINGLE_VECTOR, RESCHEDULE_VECTOR};
use crate::kvm::pv::kvm_pv_kick_cpu_op;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::CpuId;

impl Simulator {
    /// [`Self::after_compute`] from `stage` on, one stage after the other
    /// while the vCPU stays in the post-compute phase with no interrupt
    /// pending (what `vcpu_next`'s loop would do, without its passes).
    pub(super) fn after_stages(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        mut stage: AfterStage,
        mut len: Nanos,
    ) -> Option<Act> {
        loop {
            if let Some(a) = self.after_compute(cpu, vi, i, stage, len) {
                return Some(a);
            }
            let g = &self.vms[vi].g[i];
            match g.phase {
                Phase::Model(ModelStage::Gen(GenStage::After { stage: s, len: l }))
                    if g.irqs.is_empty() =>
                {
                    (stage, len) = (s, l)
                }
                _ => return None,
            }
        }
    }

    /// The post-compute stages. None: continue the loop.
    pub(super) fn after_compute(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        stage: AfterStage,
        len: Nanos,
    ) -> Option<Act> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let pv = self.pv;
        // AVIC: which vCPUs run now (an IPI to one that does not exits);
        // built only once an IPI is drawn.
        let avic = self.kvm.avic;
        let vm = &mut self.vms[vi];
        let me = i;
        let ms = len.0 as f64 / 1e6;
        match stage {
            AfterStage::Ipi => {
                vm.g[i].phase = Phase::gen(GenStage::After {
                    stage: AfterStage::Shootdown,
                    len,
                });
                if vm.active > 1
                    && vm.prof.ipi_per_ms > 0.0
                    && vm.rng.chance(vm.prof.ipi_per_ms * ms)
                {
                    let sync = vm.prof.ipi_sync;
                    // A reschedule IPI carries a work item (a task woken on
                    // another CPU): the guest's wakeup picks an idle CPU when
                    // there is one (select_idle_sibling), so an idle-halted
                    // vCPU gets it; otherwise, and for call-function IPIs, a
                    // uniformly drawn other vCPU.
                    let drawn = if sync {
                        None
                    } else {
                        draw_idle_vcpu(&vm.g.as_slice()[..vm.active as usize], i, &mut vm.rng)
                    };
                    let t = match drawn {
                        Some(t) => t,
                        None => {
                            let t = vm.rng.below(u64::from(vm.active - 1)) as u32;
                            VcpuIdx(t + u32::from(t >= i.0))
                        }
                    };
                    let vector = if sync {
                        CALL_FUNCTION_SINGLE_VECTOR
                    } else {
                        RESCHEDULE_VECTOR
                    };
                    // A synchronous call goes on t's call_single_queue
                    // (smp_call_function_single -> __smp_call_single_queue):
                    // no IPI when one is pending already.
                    let send = !sync || vm.smp_call_single_queue(t, i, true, Nanos::ZERO);
                    if sync {
                        vm.g[i].csd_pending += 1;
                        vm.g[i].phase = Phase::Spin {
                            wait: Wait::Csd {
                                then: ModelStage::Gen(GenStage::After {
                                    stage: AfterStage::Shootdown,
                                    len,
                                }),
                            },
                            ple: false,
                        };
                    }
                    if send {
                        vm.stats.ipis_sent += 1;
                        vm.stats.ipis_reschedule += u64::from(vector == RESCHEDULE_VECTOR);
                        vm.stats.ipis_call_function_single += u64::from(sync);
                        let running = self.vcpus_running_if(avic, vi);
                        self.send_unicast_ipi(vi, me, t, vector, &running, cpu);
                    }
                }
                None
            }
            AfterStage::Shootdown => {
                vm.g[i].phase = Phase::gen(GenStage::After {
                    stage: AfterStage::BlockOrLock,
                    len,
                });
                if vm.active > 1
                    && vm.prof.tlb_shootdown_per_ms > 0.0
                    && vm.rng.chance(vm.prof.tlb_shootdown_per_ms * ms)
                {
                    // flush_tlb_multi: kvm_flush_tlb_multi drops preempted
                    // vCPUs (they flush on entry) when PV TLB flush is on.
                    // (Into the VM's kept buffer: no allocation per shootdown.)
                    let mut targets = std::mem::take(&mut vm.targets_buf);
                    targets.clear();
                    targets.extend(
                        VcpuIdx::all(vm.active)
                            .filter(|&t| t != i)
                            .filter(|&t| !(pv.tlb_flush && pv.steal_time && vm.vcpus[t].preempted)),
                    );
                    if targets.is_empty() {
                        vm.targets_buf = targets;
                        return None;
                    }
                    let then = Phase::Spin {
                        wait: Wait::Csd {
                            then: ModelStage::Gen(GenStage::After {
                                stage: AfterStage::BlockOrLock,
                                len,
                            }),
                        },
                        ple: false,
                    };
                    let running = self.vcpus_running_if(avic, vi);
                    let sw = self.smp_call_function_many(
                        cpu,
                        vi,
                        i,
                        &targets,
                        Nanos::ZERO,
                        Some(then),
                        &running,
                    );
                    self.vms[vi].targets_buf = targets;
                    if let Some(sw) = sw {
                        return Some(Act::Switched(sw));
                    }
                }
                None
            }
            AfterStage::BlockOrLock => {
                if vm.prof.block_prob > 0.0 && vm.rng.chance(vm.prof.block_prob) {
                    // Idle: HLT until the guest timer (or an interrupt). The
                    // compute burst was a unit of work.
                    vm.stats.ops += 1;
                    vm.stats.op_latency.add((now - vm.g[i].op_start).0);
                    vm.stats.halts += 1;
                    vm.g[i].pending_exit += exit;
                    let until = now + Nanos(vm.rng.exp(vm.prof.block_ns).max(1));
                    vm.g[i].wait_start = until;
                    return Some(self.halt(cpu, vi, i, None));
                }
                if vm.pingpong {
                    vm.g[i].phase = Phase::Spin {
                        wait: Wait::Turn,
                        ple: false,
                    };
                    return None;
                }
                if vm.locks.is_empty() {
                    vm.stats.ops += 1;
                    vm.stats.op_latency.add((now - vm.g[i].op_start).0);
                    vm.g[i].phase = Phase::Start;
                    return None;
                }
                let l = vm.rng.below(vm.locks.len() as u64) as usize;
                self.lock_start(vi, i, l);
                None
            }
        }
    }

    pub(super) fn lock_start(&mut self, vi: VmId, i: VcpuIdx, l: usize) {
        let now = self.now;
        let vm = &mut self.vms[vi];
        vm.g[i].wait_start = now;
        match vm.locks[l].lock(i) {
            LockStep::Acquired => self.lock_acquired(vi, i, l),
            _ => {
                vm.g[i].phase = Phase::Spin {
                    wait: Wait::Lock(l),
                    ple: false,
                }
            }
        }
    }

    pub(super) fn lock_acquired(&mut self, vi: VmId, i: VcpuIdx, l: usize) {
        let now = self.now;
        let vm = &mut self.vms[vi];
        vm.stats.lock_wait.add((now - vm.g[i].wait_start).0);
        vm.stats.lock_wait_total_ns += (now - vm.g[i].wait_start).0;
        vm.g[i].hold_start = now;
        let cs = match vm.g[i].hold_next.take() {
            Some(hold) => hold,
            None => Nanos(vm.rng.exp(vm.prof.cs_ns)),
        };
        vm.g[i].phase = Phase::Hold { lock: l, left: cs };
    }

    /// Unlock, wake or kick the next waiter. Some(act) if the releaser yielded.
    pub(super) fn lock_release(
        &mut self,
        cpu: CpuId,
        vi: VmId,
        i: VcpuIdx,
        l: usize,
    ) -> Option<Act> {
        let now = self.now;
        let exit = self.kvm.round_trip();
        let vm = &mut self.vms[vi];
        vm.stats.lock_hold.add((now - vm.g[i].hold_start).0);
        if !std::mem::take(&mut vm.g[i].wake_section) {
            vm.stats.ops += 1;
            vm.stats.op_latency.add((now - vm.g[i].op_start).0);
        }
        vm.g[i].phase = Phase::Start;
        let r = vm.locks[l].release(i);
        let mut kicked = None;
        match r {
            Release::HandedTo(c) => self.poke(vi, c),
            Release::Free => {
                // (A poke does not touch the lock.)
                let mut k = 0;
                while let Some(c) = self.vms[vi].locks[l].contender(k) {
                    self.poke(vi, c);
                    k += 1;
                }
            }
            Release::Kick(c) => {
                // pv_kick -> KVM_HC_KICK_CPU: kvm_pv_kick_cpu_op, then
                // kvm_sched_yield towards the kicked vCPU.
                vm.stats.pv_kicks += 1;
                vm.g[i].pending_exit += exit;
                let was_ready = vm.vcpus[c].ready;
                if kvm_pv_kick_cpu_op(&mut vm.vcpus, u64::from(c.0)) {
                    let task = vm.task(c);
                    if self.host.sched.try_to_wake_up(task, 0, Some(cpu)) {
                        self.trace_wakeup_from(task, Some(cpu));
                    } else {
                        self.vms[vi].vcpus[c].ready = was_ready;
                    }
                } else {
                    self.poke(vi, c);
                }
                kicked = Some(c);
                // The unqueued spinners may steal the lock meanwhile.
                let mut k = 1;
                while let Some(c) = self.vms[vi].locks[l].contender(k) {
                    self.poke(vi, c);
                    k += 1;
                }
            }
        }
        let vm = &mut self.vms[vi];
        if vm.pingpong {
            let other = VcpuIdx((i.0 + 1) % vm.active.max(1));
            vm.turn = other;
            self.poke(vi, other);
        }
        // KVM_HC_KICK_CPU's kvm_sched_yield (266e85a5ec9; `[kvm] kick_yield`).
        if let Some(c) = kicked.filter(|_| self.kvm.kick_yield) {
            if let Some(sw) = self.pv_sched_yield(cpu, vi, i, c) {
                return Some(Act::Switched(sw));
            }
        }
        None
    }

    /// The phase generator's next op on vCPU `i`: done (inactive vCPU, or
    /// the profile's iterations reached), or a compute burst drawn from the
    /// profile. None: look at the phase again.
    pub(super) fn start_op(&mut self, vi: VmId, i: VcpuIdx) -> Option<Act> {
        let now = self.now;
        let vm = &mut self.vms[vi];
        let done =
            i.0 >= vm.active || (vm.prof.iterations > 0 && vm.stats.ops >= vm.prof.iterations);
        if done {
            vm.g[i].phase = Phase::Done;
            return None;
        }
        let len = Nanos(vm.rng.exp(vm.prof.compute_ns).max(1));
        let user = !vm.rng.chance(vm.prof.kernel_fraction);
        vm.g[i].op_start = now;
        vm.g[i].phase = Phase::gen(GenStage::Compute {
            left: len,
            len,
            user,
        });
        // What the next pass would do: no interrupt is pending
        // (this pass found none) and `len` > 0.
        Some(Act::Run(Cat::Useful, len))
    }
}
