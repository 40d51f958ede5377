//! The guest's `cpuidle-haltpoll` driver and `haltpoll` governor, Linux 6.12
//! (drivers/cpuidle/cpuidle-haltpoll.c, drivers/cpuidle/governors/haltpoll.c,
//! drivers/cpuidle/poll_state.c): an idle guest CPU first polls
//! `need_resched()` in the guest (state 0, `poll_idle`) for up to the CPU's
//! `poll_limit_ns`, then executes HLT (state 1, `default_enter_idle`); after
//! each HLT the governor grows or shrinks the limit from how long the CPU
//! stayed halted. A pure state machine: the vCPU run loop (`sim::vm`) asks
//! [`haltpoll_select`] what to enter and reports back through
//! [`haltpoll_reflect`].

/// The governor's module parameters (defaults of 6.12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaltpollParams {
    /// `guest_halt_poll_ns`: the largest poll limit (200 us).
    pub guest_halt_poll_ns: u64,
    /// `guest_halt_poll_shrink`: division factor (2; 0 resets to 0).
    pub guest_halt_poll_shrink: u64,
    /// `guest_halt_poll_grow`: multiplication factor (2).
    pub guest_halt_poll_grow: u64,
    /// `guest_halt_poll_grow_start`: the first non-zero limit (50 us).
    pub guest_halt_poll_grow_start: u64,
    /// `guest_halt_poll_allow_shrink` (true).
    pub guest_halt_poll_allow_shrink: bool,
}

impl Default for HaltpollParams {
    fn default() -> Self {
        HaltpollParams {
            guest_halt_poll_ns: 200_000,
            guest_halt_poll_shrink: 2,
            guest_halt_poll_grow: 2,
            guest_halt_poll_grow_start: 50_000,
            guest_halt_poll_allow_shrink: true,
        }
    }
}

/// The driver's two idle states (`haltpoll_driver.states`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleState {
    /// State 0, `POLL` (`cpuidle_poll_state_init` / `poll_idle`).
    Poll,
    /// State 1, "haltpoll idle" (`default_enter_idle` -> HLT).
    Halt,
}

/// The governor's part of one guest CPU's `struct cpuidle_device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuidleDevice {
    /// `dev->poll_limit_ns` (0 after `haltpoll_enable_device`).
    pub poll_limit_ns: u64,
    /// `dev->last_state_idx` (0 in a zeroed per-CPU device).
    pub last_state_idx: IdleState,
    /// `dev->poll_time_limit`: the last poll ran out its limit.
    pub poll_time_limit: bool,
}

impl Default for CpuidleDevice {
    /// `haltpoll_enable_device` on a zeroed per-CPU device.
    fn default() -> Self {
        CpuidleDevice {
            poll_limit_ns: 0,
            last_state_idx: IdleState::Poll,
            poll_time_limit: false,
        }
    }
}

/// Linux 6.12 `haltpoll_select`: HLT while the limit is 0 or right after a
/// poll that ran out its limit; else poll. (No PM QoS latency request is
/// modelled, so `latency_req == 0` never forces polling; the tick is not
/// stopped in either case.)
pub fn haltpoll_select(dev: &CpuidleDevice) -> IdleState {
    if dev.poll_limit_ns == 0 {
        return IdleState::Halt;
    }
    match dev.last_state_idx {
        IdleState::Poll if dev.poll_time_limit => IdleState::Halt,
        _ => IdleState::Poll,
    }
}

/// Linux 6.12 `poll_idle` ended: `timed_out` when it ran out
/// `cpuidle_poll_time()` (the device's `poll_limit_ns`) without
/// `need_resched()`.
pub fn poll_idle_end(dev: &mut CpuidleDevice, timed_out: bool) {
    dev.poll_time_limit = timed_out;
}

/// Linux 6.12 `adjust_poll_limit`: grow (x grow, at least grow_start, at
/// most `guest_halt_poll_ns`) when the CPU was halted longer than the limit
/// but not longer than `guest_halt_poll_ns`; shrink (/ shrink, 0 below
/// grow_start) when it was halted longer than `guest_halt_poll_ns`.
pub fn adjust_poll_limit(dev: &mut CpuidleDevice, p: &HaltpollParams, block_ns: u64) {
    if block_ns > dev.poll_limit_ns && block_ns <= p.guest_halt_poll_ns {
        let val = dev
            .poll_limit_ns
            .saturating_mul(p.guest_halt_poll_grow)
            .max(p.guest_halt_poll_grow_start)
            .min(p.guest_halt_poll_ns);
        dev.poll_limit_ns = val;
    } else if block_ns > p.guest_halt_poll_ns && p.guest_halt_poll_allow_shrink {
        let val = match p.guest_halt_poll_shrink {
            0 => 0,
            s => {
                let v = dev.poll_limit_ns / s;
                if v < p.guest_halt_poll_grow_start {
                    0
                } else {
                    v
                }
            }
        };
        dev.poll_limit_ns = val;
    }
}

/// Linux 6.12 `haltpoll_reflect`: remember the state entered; after a HLT,
/// adapt the limit to `last_residency_ns` (the time from HLT to its return,
/// as the guest's clock saw it).
pub fn haltpoll_reflect(
    dev: &mut CpuidleDevice,
    p: &HaltpollParams,
    index: IdleState,
    last_residency_ns: u64,
) {
    dev.last_state_idx = index;
    if index != IdleState::Poll {
        adjust_poll_limit(dev, p, last_residency_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halt(dev: &mut CpuidleDevice, ns: u64) {
        haltpoll_reflect(dev, &HaltpollParams::default(), IdleState::Halt, ns);
    }

    #[test]
    fn a_fresh_cpu_halts_and_a_short_halt_starts_polling_at_grow_start() {
        let mut d = CpuidleDevice::default();
        assert_eq!(haltpoll_select(&d), IdleState::Halt);
        halt(&mut d, 10_000);
        assert_eq!(d.poll_limit_ns, 50_000);
        assert_eq!(haltpoll_select(&d), IdleState::Poll);
    }

    #[test]
    fn the_limit_doubles_up_to_guest_halt_poll_ns_and_halves_to_zero() {
        let mut d = CpuidleDevice::default();
        halt(&mut d, 10_000);
        halt(&mut d, 60_000);
        assert_eq!(d.poll_limit_ns, 100_000);
        halt(&mut d, 150_000);
        assert_eq!(d.poll_limit_ns, 200_000);
        // At the maximum a halt within it changes nothing.
        halt(&mut d, 190_000);
        assert_eq!(d.poll_limit_ns, 200_000);
        // Halts longer than guest_halt_poll_ns shrink: 100 us, then below
        // grow_start (50 us) -> 0.
        halt(&mut d, 1_000_000);
        assert_eq!(d.poll_limit_ns, 100_000);
        halt(&mut d, 1_000_000);
        assert_eq!(d.poll_limit_ns, 50_000);
        halt(&mut d, 1_000_000);
        assert_eq!(d.poll_limit_ns, 0);
        assert_eq!(haltpoll_select(&d), IdleState::Halt);
    }

    #[test]
    fn a_halt_shorter_than_the_limit_keeps_it_and_no_shrink_without_allow_shrink() {
        let mut d = CpuidleDevice {
            poll_limit_ns: 100_000,
            ..CpuidleDevice::default()
        };
        halt(&mut d, 80_000);
        assert_eq!(d.poll_limit_ns, 100_000);
        let p = HaltpollParams {
            guest_halt_poll_allow_shrink: false,
            ..HaltpollParams::default()
        };
        haltpoll_reflect(&mut d, &p, IdleState::Halt, 5_000_000);
        assert_eq!(d.poll_limit_ns, 100_000);
    }

    #[test]
    fn a_poll_that_timed_out_is_followed_by_a_halt_and_a_woken_poll_by_a_poll() {
        let p = HaltpollParams::default();
        let mut d = CpuidleDevice {
            poll_limit_ns: 50_000,
            last_state_idx: IdleState::Halt,
            poll_time_limit: false,
        };
        // After a halt: poll.
        assert_eq!(haltpoll_select(&d), IdleState::Poll);
        // Woken while polling: poll again next time; the poll does not
        // change the limit.
        poll_idle_end(&mut d, false);
        haltpoll_reflect(&mut d, &p, IdleState::Poll, 1_000_000);
        assert_eq!(haltpoll_select(&d), IdleState::Poll);
        assert_eq!(d.poll_limit_ns, 50_000);
        // Ran out the limit: HLT.
        poll_idle_end(&mut d, true);
        haltpoll_reflect(&mut d, &p, IdleState::Poll, 50_000);
        assert_eq!(haltpoll_select(&d), IdleState::Halt);
    }
}
