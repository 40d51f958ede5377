//! Halt polling as KVM 6.12.117 does it in `kvm_vcpu_halt`
//! (virt/kvm/kvm_main.c): before blocking a halted vCPU, poll for a wakeup
//! for up to `vcpu->halt_poll_ns`, and after the halt adapt that interval to
//! how long the vCPU was halted (`grow_halt_poll_ns` /
//! `shrink_halt_poll_ns`, with the module's default parameters). A guest
//! that polls itself (cpuidle-haltpoll) turns host polling off for its vCPU
//! through `MSR_KVM_POLL_CONTROL` (`kvm_arch_no_poll`, arch/x86/kvm/x86.c).

use crate::engine::{Nanos, Time};

/// Halt polling mode of a host (`[kvm] halt_poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaltPoll {
    Off,
    /// Always poll this long (a what-if; KVM adapts the interval).
    Fixed(Nanos),
    /// KVM's adaptive `vcpu->halt_poll_ns`: starts at 0, grows (x2, at least
    /// 10 us) after a short halt, shrinks (/2, 0 below 10 us) after one
    /// longer than `max` (`halt_poll_ns`, default 200 us on x86).
    Dynamic {
        max: Nanos,
    },
}

/// `halt_poll_ns_grow` (module parameter, default 2).
const HALT_POLL_NS_GROW: u64 = 2;
/// `halt_poll_ns_grow_start` (module parameter, default 10 us).
const HALT_POLL_NS_GROW_START: u64 = 10_000;
/// `halt_poll_ns_shrink` (module parameter, default 2).
const HALT_POLL_NS_SHRINK: u64 = 2;

/// `grow_halt_poll_ns`: the grown interval.
pub fn grow_halt_poll_ns(val: u64) -> u64 {
    (val * HALT_POLL_NS_GROW).max(HALT_POLL_NS_GROW_START)
}

/// `shrink_halt_poll_ns`: the shrunk interval (0 below the grow start).
pub fn shrink_halt_poll_ns(val: u64) -> u64 {
    let v = val / HALT_POLL_NS_SHRINK;
    if v < HALT_POLL_NS_GROW_START {
        0
    } else {
        v
    }
}

/// One vCPU's halt-polling state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaltPollState {
    /// `vcpu->halt_poll_ns` (dynamic halt polling).
    pub halt_poll_ns: u64,
    /// Inside `kvm_vcpu_halt` since `halt_start`.
    pub in_halt: bool,
    pub halt_start: Time,
    /// Bit 0 of `vcpu->arch.msr_kvm_poll_control` clear (its reset value is
    /// 1): the guest's `arch_haltpoll_enable` wrote 0.
    pub no_poll: bool,
}

impl HaltPollState {
    /// Linux 6.12 `kvm_arch_no_poll` (arch/x86/kvm/x86.c): the guest turned
    /// host halt polling off (`MSR_KVM_POLL_CONTROL` bit 0 clear).
    pub fn kvm_arch_no_poll(&self) -> bool {
        self.no_poll
    }

    /// Linux 6.12 `kvm_set_msr_common` for `MSR_KVM_POLL_CONTROL` (only the
    /// enable bit exists): the guest's `arch_haltpoll_enable` writes 0,
    /// `arch_haltpoll_disable` 1.
    pub fn set_msr_kvm_poll_control(&mut self, enable: bool) {
        self.no_poll = !enable;
    }

    /// Entry of `kvm_vcpu_halt` at `now`: the interval to poll for before
    /// blocking (the dynamic interval clamped to `max`,
    /// `kvm_vcpu_max_halt_poll_ns`); none when `kvm_arch_no_poll`.
    pub fn kvm_vcpu_halt_begin(&mut self, mode: HaltPoll, now: Time) -> Nanos {
        self.in_halt = true;
        self.halt_start = now;
        if self.kvm_arch_no_poll() {
            return Nanos::ZERO;
        }
        match mode {
            HaltPoll::Off => Nanos::ZERO,
            HaltPoll::Fixed(d) => d,
            HaltPoll::Dynamic { max } => {
                self.halt_poll_ns = self.halt_poll_ns.min(max.0);
                Nanos(self.halt_poll_ns)
            }
        }
    }

    /// End of `kvm_vcpu_halt` at `now` (if one is in progress): adapt
    /// `vcpu->halt_poll_ns` to how long the vCPU was halted (every wakeup
    /// counts as valid); left alone when `kvm_arch_no_poll`
    /// (`halt_poll_allowed` false).
    pub fn kvm_vcpu_halt_end(&mut self, mode: HaltPoll, now: Time) {
        if !self.in_halt {
            return;
        }
        self.in_halt = false;
        if self.kvm_arch_no_poll() {
            return;
        }
        let HaltPoll::Dynamic { max } = mode else {
            return;
        };
        let (halt_ns, max, hp) = ((now - self.halt_start).0, max.0, self.halt_poll_ns);
        if max == 0 {
            self.halt_poll_ns = 0;
        } else if halt_ns <= hp {
        } else if hp > 0 && halt_ns > max {
            self.halt_poll_ns = shrink_halt_poll_ns(hp);
        } else if hp < max && halt_ns < max {
            self.halt_poll_ns = grow_halt_poll_ns(hp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic() -> HaltPoll {
        HaltPoll::Dynamic {
            max: Nanos(200_000),
        }
    }

    fn halt(s: &mut HaltPollState, at: u64, len: u64) -> Nanos {
        let poll = s.kvm_vcpu_halt_begin(dynamic(), Time(at));
        s.kvm_vcpu_halt_end(dynamic(), Time(at + len));
        poll
    }

    #[test]
    fn short_halts_grow_the_interval_from_the_grow_start() {
        let mut s = HaltPollState::default();
        assert_eq!(halt(&mut s, 0, 5_000), Nanos::ZERO);
        assert_eq!(s.halt_poll_ns, 10_000);
        halt(&mut s, 100_000, 50_000);
        assert_eq!(s.halt_poll_ns, 20_000);
        // A halt within the interval leaves it alone.
        halt(&mut s, 300_000, 15_000);
        assert_eq!(s.halt_poll_ns, 20_000);
    }

    #[test]
    fn a_long_halt_shrinks_and_drops_below_the_grow_start_to_zero() {
        let mut s = HaltPollState {
            halt_poll_ns: 40_000,
            ..HaltPollState::default()
        };
        halt(&mut s, 0, 1_000_000);
        assert_eq!(s.halt_poll_ns, 20_000);
        halt(&mut s, 2_000_000, 1_000_000);
        assert_eq!(s.halt_poll_ns, 10_000);
        halt(&mut s, 4_000_000, 1_000_000);
        assert_eq!(s.halt_poll_ns, 0);
    }

    #[test]
    fn the_interval_is_clamped_to_max_and_fixed_polls_its_length() {
        let mut s = HaltPollState {
            halt_poll_ns: 500_000,
            ..HaltPollState::default()
        };
        assert_eq!(s.kvm_vcpu_halt_begin(dynamic(), Time(0)), Nanos(200_000));
        let mut f = HaltPollState::default();
        assert_eq!(
            f.kvm_vcpu_halt_begin(HaltPoll::Fixed(Nanos(7)), Time(0)),
            Nanos(7)
        );
        assert_eq!(f.kvm_vcpu_halt_begin(HaltPoll::Off, Time(0)), Nanos::ZERO);
    }

    #[test]
    fn a_guest_that_clears_poll_control_gets_no_host_polling_and_no_adaptation() {
        let mut s = HaltPollState {
            halt_poll_ns: 40_000,
            ..HaltPollState::default()
        };
        s.set_msr_kvm_poll_control(false);
        assert_eq!(halt(&mut s, 0, 5_000), Nanos::ZERO);
        halt(&mut s, 100_000, 1_000_000);
        assert_eq!(s.halt_poll_ns, 40_000);
        s.set_msr_kvm_poll_control(true);
        assert_eq!(halt(&mut s, 2_000_000, 5_000), Nanos(40_000));
    }
}
