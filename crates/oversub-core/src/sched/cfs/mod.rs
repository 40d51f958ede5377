//! Linux 6.1 (CFS): the Completely Fair Scheduler of kernel/sched/fair.c as
//! Linux 6.1 LTS has it (Debian's linux-source-6.1, 6.1.192), the fair class
//! of the `6.1` kernel preset (`KernelPreset::V6_1`) for the host and for
//! guests. Every function here is named after the 6.1 function it models.
//!
//! The functions are methods of [`Cfs`], a view of the [`Scheduler`] (the
//! EEVDF functions of `fair/` have the same kernel names); the fair-class
//! entry points (`sched::class`) dispatch here when the preset is CFS. Shared
//! machinery (PELT, group shares, the load balancer, wakeup placement, the
//! timeline vector) is the EEVDF model's, which 6.1 has in the same form;
//! docs/model.md, "CFS (Linux 6.1)", lists what is and is not modelled.
//!
//! Layout, one concern per file: `tunables` (the sysctls and their log2
//! scaling), `slice` (`sched_slice()`), `vruntime` (`update_curr()`,
//! `update_min_vruntime()`, `place_entity()`, fork and migration),
//! `buddies` (NEXT/LAST/SKIP and `wakeup_preempt_entity()`), `enqueue`
//! (enqueue/dequeue), `pick` (`pick_next_entity()` and the pick walk),
//! `preempt` (tick and wakeup preemption), `yield_fair` (`yield_task_fair()`,
//! `yield_to_task_fair()`).

pub mod buddies;
pub mod enqueue;
pub mod pick;
pub mod preempt;
pub mod slice;
pub mod tunables;
pub mod vruntime;
pub mod yield_fair;

#[cfg(test)]
mod tests;

use std::ops::{Deref, DerefMut};

use super::Scheduler;

pub use tunables::CfsTunables;

/// The CFS (Linux 6.1) fair class acting on a [`Scheduler`].
pub struct Cfs<'a>(pub &'a mut Scheduler);

impl Deref for Cfs<'_> {
    type Target = Scheduler;
    fn deref(&self) -> &Scheduler {
        self.0
    }
}

impl DerefMut for Cfs<'_> {
    fn deref_mut(&mut self) -> &mut Scheduler {
        self.0
    }
}

/// The scheduler under the view, for code shared with the other presets
/// (`fair::switch_levels`).
impl std::borrow::Borrow<Scheduler> for Cfs<'_> {
    fn borrow(&self) -> &Scheduler {
        self.0
    }
}

impl std::borrow::BorrowMut<Scheduler> for Cfs<'_> {
    fn borrow_mut(&mut self) -> &mut Scheduler {
        self.0
    }
}

impl Scheduler {
    /// The CFS (Linux 6.1) view of this scheduler.
    #[inline]
    pub fn cfs(&mut self) -> Cfs<'_> {
        Cfs(self)
    }
}

/// `max_vruntime()`: the later of two vruntimes (wrapping-safe).
#[inline]
pub fn max_vruntime(max: u64, v: u64) -> u64 {
    if (v.wrapping_sub(max) as i64) > 0 {
        v
    } else {
        max
    }
}

/// `min_vruntime()`: the earlier of two vruntimes (wrapping-safe).
#[inline]
pub fn min_vruntime(min: u64, v: u64) -> u64 {
    if (v.wrapping_sub(min) as i64) < 0 {
        v
    } else {
        min
    }
}
