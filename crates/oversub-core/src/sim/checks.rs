//! Self-checks of a run at every kernel level, after every event when
//! enabled (debug builds, tests, `oversub run --check`): the host level's
//! scheduler invariants (`KernelLevel::check`, src/sched/invariants.rs), KVM's
//! vCPU state against the host's view of its task, and the same check of
//! the guest level of every nested guest.

use super::Simulator;
use crate::engine::Time;
use crate::error::{Level, RunError};
use crate::kvm::VmId;

impl Simulator {
    /// The invariants of every level, the first broken one as an error
    /// naming its level.
    pub(super) fn check_levels(&self, at: Time) -> Result<(), RunError> {
        let broken = |level, what| RunError::InvariantBroken { level, at, what };
        self.host.check().map_err(|e| broken(Level::Host, e))?;
        self.check_vcpus().map_err(|e| broken(Level::Kvm, e))?;
        for (vi, v) in self.vms.iter().enumerate() {
            if let Some(g) = &v.guest {
                let vm = VmId(vi as u32);
                g.kernel.check().map_err(|e| broken(Level::Guest(vm), e))?;
            }
        }
        Ok(())
    }

    /// A program thread of any level that looped at one instant
    /// (`ProgramRt::zero_time_loop`), as the error that stops the run.
    /// Checked where the event budget is (every `POLL_EVENTS` events) and at
    /// the end of a run, whether or not invariant checks are on.
    pub(super) fn check_zero_time_loops(&self) -> Result<(), RunError> {
        let stuck = |level, p: &crate::task::program::ProgramRt| {
            p.zero_time_loop()
                .map(|(thread, at)| RunError::ZeroTimeLoop {
                    level,
                    thread: thread.to_string(),
                    at,
                })
        };
        if let Some(e) = self
            .world
            .program
            .as_ref()
            .and_then(|p| stuck(Level::Host, p))
        {
            return Err(e);
        }
        for (vi, v) in self.vms.iter().enumerate() {
            if let Some(e) = v
                .guest
                .as_ref()
                .and_then(|g| stuck(Level::Guest(VmId(vi as u32)), g.program()))
            {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested() -> Simulator {
        Simulator::nested_2x2_mutex()
    }

    #[test]
    fn a_consistent_run_passes_every_level() {
        assert_eq!(nested().check_levels(Time::ZERO), Ok(()));
    }

    /// The mutant: a guest runqueue whose count disagrees with its
    /// entities is caught, and named as the guest's (not the host's).
    #[test]
    fn a_broken_guest_scheduler_is_reported_as_its_level() {
        let mut sim = nested();
        let vi = sim
            .vms
            .iter()
            .position(|v| v.guest.is_some())
            .expect("a nested guest");
        let g = sim.vms[vi].guest.as_mut().expect("a nested guest");
        g.kernel.sched.rqs[0].nr_running += 1;
        match sim.check_levels(Time(5)) {
            Err(RunError::InvariantBroken { level, at, .. }) => {
                assert_eq!(level, Level::Guest(VmId(vi as u32)));
                assert_eq!(at, Time(5));
            }
            r => panic!("not caught: {r:?}"),
        }
    }

    #[test]
    fn a_broken_host_scheduler_is_reported_as_the_host() {
        let mut sim = nested();
        sim.host.sched.rqs[0].nr_running += 1;
        assert!(matches!(
            sim.check_levels(Time::ZERO),
            Err(RunError::InvariantBroken {
                level: Level::Host,
                ..
            })
        ));
    }
}
