//! The VM runtime's events on the host's event queue: a halted vCPU's
//! LAPIC timer, the guest tick, and a nested guest's hrtimers and HRTICK.
//! The host loop queues and pops them as one variant (`Ev::Vm`) and asks
//! here what each does and which host CPU it runs on.

use super::super::{Ev, Simulator};
use super::guest::vcpu_of;
use crate::engine::Nanos;
use crate::kvm::{VcpuIdx, VmId};
use crate::sched::{CpuId, TaskId};

/// An event of the VM runtime.
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) enum VmEv {
    /// A halted vCPU's guest timer (LAPIC timer), with its generation.
    LapicTimer(TaskId, u64),
    /// The same after the timer interrupt's delay.
    LapicTimerWake(TaskId, u64),
    /// The guest's periodic tick on vCPU (vm, idx) (`[kvm] guest_hz`).
    Tick(VmId, VcpuIdx),
    /// A guest thread's hrtimer: (vm, guest task, generation).
    ThreadHrtimer(VmId, u32, u64),
    /// A guest CPU's HRTICK timer: (vm, vCPU, generation).
    Hrtick(VmId, VcpuIdx, u64),
}

impl Simulator {
    /// Queues VM event `e` at `at`.
    pub(in crate::sim) fn push_vm_event(&mut self, at: crate::engine::Time, e: VmEv) {
        self.queue.push(at, Ev::Vm(e));
    }

    /// Runs VM event `e`.
    pub(in crate::sim) fn vm_event(&mut self, e: VmEv) {
        match e {
            VmEv::LapicTimer(p, gen) => {
                let d = self.timer_delay(p);
                if d > Nanos::ZERO {
                    // A superseded timer stays superseded: its interrupt
                    // would only pop stale.
                    if self.guest_timer_stale(p, gen) {
                        self.stale += 1;
                    } else {
                        self.push_vm_event(self.now + d, VmEv::LapicTimerWake(p, gen));
                    }
                } else {
                    self.guest_timer(p, gen);
                }
            }
            VmEv::LapicTimerWake(p, gen) => self.guest_timer(p, gen),
            VmEv::Tick(vm, idx) => self.guest_tick(vm, idx),
            VmEv::ThreadHrtimer(vm, t, gen) => self.guest_hrtimer(vm, t, gen),
            VmEv::Hrtick(vm, i, gen) => self.guest_hrtick(vm, i, gen),
        }
    }

    /// The host CPU VM event `e` runs on: the CPU of the vCPU task whose
    /// LAPIC timer it is.
    pub(in crate::sim) fn vm_event_cpu(&self, e: VmEv) -> CpuId {
        let task = match e {
            VmEv::LapicTimer(p, _) | VmEv::LapicTimerWake(p, _) => p,
            VmEv::Tick(vm, idx) | VmEv::Hrtick(vm, idx, _) => self.vcpu_task(vm, idx),
            VmEv::ThreadHrtimer(vm, t, _) => {
                let g = self.vms[vm.idx()].guest.as_ref().expect("a program VM");
                let idx = vcpu_of(g.kernel.sched.tasks[t as usize].cpu);
                self.vcpu_task(vm, idx)
            }
        };
        self.host.sched.tasks[task.idx()].cpu
    }

    /// The host CPU whose timer interrupt delivers VM event `e`, if it is
    /// one (handled with the other timers of that CPU due at the instant).
    pub(in crate::sim) fn vm_timer_irq_cpu(&self, e: VmEv) -> Option<CpuId> {
        match e {
            VmEv::LapicTimerWake(p, _) => Some(self.host.sched.tasks[p.idx()].cpu),
            _ => None,
        }
    }
}
