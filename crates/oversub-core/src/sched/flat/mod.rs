//! sched/flat: Peter Zijlstra's "sched/eevdf: Move to a single runqueue"
//! (v3, 5 Jun 2026, branch sched/flat of his queue tree), the fair class of
//! the `flat` kernel preset (`KernelPreset::Flat`) for the host and for
//! guests. Only the posting's description is public here: this module is
//! our reading of it (docs/model.md, "The flat preset (sched/flat)").
//!
//! What the description says, and what is modelled:
//! * the cgroup hierarchy stays as it is for load tracking, weights and
//!   shares (enqueue/dequeue of the group entities, PELT,
//!   `calc_group_shares()`): the EEVDF model's `load_avg` and `group` code,
//!   unchanged;
//! * the EEVDF runqueue moves to the root and holds tasks only: one queue
//!   per CPU (`FlatState::rq`), each task present there as one entity
//!   (`FlatState::se`) whose weight is its effective weight, the
//!   hierarchical fraction `se->load / cfs_rq->load` down its path
//!   (`weight.rs`), recomputed on enqueue, `set_next_task` and tick;
//! * EEVDF counts `h_nr_queued` (the flat queue holds tasks only, so its
//!   `nr_running` is that count); only tasks are delayed; `current` is kept
//!   both hierarchically (the group queues' `curr`, the kernel's `h_curr`)
//!   and flat (the flat queue's `curr`).
//!
//! Simplification: the kernel keeps one `struct sched_entity` per task, used
//! by both sides (its TODO is to split it); the model splits it: the task's
//! hierarchy entity (`Task::se`: nice weight, PELT, leaf cfs_rq) and its flat
//! entity (vruntime, deadline, lag, slice, effective weight). Both carry
//! `sched_delayed`; `update_curr()` copies the run time to the hierarchy
//! entity (what the statistics read).
//!
//! Layout: `weight` (the effective weight and re-weighting on the flat
//! queue), `enqueue` (enqueue/dequeue), `pick` (`update_curr()`, pick,
//! put_prev/set_next, tick). Wakeup preemption and `yield_task_fair()` /
//! `yield_to_task_fair()` are `fair/`'s functions acting on the flat
//! entities ([`Scheduler::eevdf_se`]); so are the yield_to policies.

pub mod enqueue;
pub mod pick;
pub mod weight;

#[cfg(test)]
mod tests;

use std::ops::{Deref, DerefMut};

use super::entity::{CfsRq, SchedEntity};
use super::ids::{CfsRqId, CpuId, SeId, TaskId};
use super::{Scheduler, ROOT_GROUP};

/// The single runqueues and the tasks' flat entities.
#[derive(Clone, Debug, Default)]
pub struct FlatState {
    /// The EEVDF runqueue of each CPU (the kernel's `rq->cfs` in the flat
    /// sense), indexed by CPU.
    pub rq: Vec<CfsRqId>,
    /// Each task's entity on the flat runqueue, indexed by task.
    pub se: Vec<SeId>,
}

/// The sched/flat fair class acting on a [`Scheduler`].
pub struct Flat<'a>(pub &'a mut Scheduler);

impl Deref for Flat<'_> {
    type Target = Scheduler;
    fn deref(&self) -> &Scheduler {
        self.0
    }
}

impl DerefMut for Flat<'_> {
    fn deref_mut(&mut self) -> &mut Scheduler {
        self.0
    }
}

/// The scheduler under the view, for code shared with the other presets
/// (`fair::switch_levels`).
impl std::borrow::Borrow<Scheduler> for Flat<'_> {
    fn borrow(&self) -> &Scheduler {
        self.0
    }
}

impl std::borrow::BorrowMut<Scheduler> for Flat<'_> {
    fn borrow_mut(&mut self) -> &mut Scheduler {
        self.0
    }
}

impl Scheduler {
    /// The sched/flat view of this scheduler.
    #[inline]
    pub fn flat_fair(&mut self) -> Flat<'_> {
        Flat(self)
    }

    /// The entity of `p` that the EEVDF pick, the buddies and the yield
    /// policies act on: its flat entity under sched/flat, else its own.
    #[inline]
    pub fn eevdf_se(&self, p: TaskId) -> SeId {
        match &self.flat {
            Some(f) => f.se[p.idx()],
            None => self.tasks[p.idx()].se,
        }
    }

    /// The flat entity of `p` (None unless sched/flat).
    #[inline]
    pub fn flat_task_se(&self, p: TaskId) -> Option<SeId> {
        self.flat.as_ref().map(|f| f.se[p.idx()])
    }

    /// The flat runqueue of `cpu` (None unless sched/flat).
    #[inline]
    pub fn flat_rq(&self, cpu: CpuId) -> Option<CfsRqId> {
        self.flat.as_ref().map(|f| f.rq[cpu.idx()])
    }

    /// One flat runqueue per CPU (after the root cfs_rqs).
    pub(super) fn flat_init(&mut self) {
        let mut st = FlatState::default();
        for c in 0..self.nr_cpus() {
            let id = CfsRqId(self.cfs_rqs.len() as u32);
            self.cfs_rqs
                .push(CfsRq::new(ROOT_GROUP, CpuId(c as u32), None));
            st.rq.push(id);
        }
        self.flat = Some(st);
    }

    /// The flat entity of a new task: its nice weight until its first
    /// enqueue computes the effective one, its slice.
    pub(super) fn flat_init_task(&mut self, p: TaskId) {
        let h = self.tasks[p.idx()].se;
        let cpu = self.tasks[p.idx()].cpu;
        let rq = self
            .flat_rq(cpu)
            .expect("flat_init_task without flat state");
        let he = &self.ses[h.idx()];
        let mut se = SchedEntity::new(he.load, rq);
        se.task = Some(p);
        se.slice = he.slice;
        se.custom_slice = he.custom_slice;
        let id = SeId(self.ses.len() as u32);
        self.ses.push(se);
        let st = self.flat.as_mut().expect("flat state");
        debug_assert_eq!(st.se.len(), p.idx());
        st.se.push(id);
    }
}

impl Flat<'_> {
    /// The flat runqueue of `cpu`.
    #[inline]
    pub(super) fn rq_of(&self, cpu: CpuId) -> CfsRqId {
        self.flat.as_ref().expect("flat state").rq[cpu.idx()]
    }

    /// The flat entity of `p`.
    #[inline]
    pub(super) fn fse(&self, p: TaskId) -> SeId {
        self.flat.as_ref().expect("flat state").se[p.idx()]
    }
}
