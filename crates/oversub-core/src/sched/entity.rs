//! `struct sched_entity` and `struct cfs_rq` of kernel/sched/sched.h (Linux
//! 6.12.117), reduced to the fields the EEVDF model uses.
//!
//! Simplification: the kernel keeps queued entities in an augmented rb-tree
//! ordered by deadline; here a cfs_rq keeps a vector sorted in the same order
//! (`timeline.rs`), ties broken by enqueue order (the rb-tree puts an equal key
//! to the right), without the per-subtree augmentation. `pick_eevdf()` returns
//! the same entity the tree search returns; only the cost differs.

use super::ids::{CfsRqId, CpuId, GroupId, SeId, TaskId};
use super::pelt::SchedAvg;
use super::timeline::SliceSet;
use super::weight::LoadWeight;

/// Why an entity's vruntime moved. Every write goes through
/// [`SchedEntity::set_vruntime`], so no code path can move vruntime silently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VruntimeStep {
    /// `update_curr()`: `calc_delta_fair(delta_exec)`.
    Accounting,
    /// `place_entity()` at enqueue.
    Place,
    /// `reweight_eevdf()`: lag-preserving rescale on a weight change.
    Reweight,
    /// `yield_task_fair()` forfeit: vruntime = deadline.
    Forfeit,
    /// A yield policy step of a later issue (e.g. a debooster).
    YieldPolicy,
}

pub const VRUNTIME_STEPS: usize = 5;

impl VruntimeStep {
    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Debug)]
pub struct SchedEntity {
    pub(crate) load: LoadWeight,
    vruntime: u64,
    pub(crate) deadline: u64,
    /// Lag stash (`V - v` at dequeue) or, while running under 6.12 semantics,
    /// the RUN_TO_PARITY "protect slice" copy of the deadline.
    pub(crate) vlag: i64,
    /// v6.17+ slice protection bound (VPROT switch).
    pub(crate) vprot: u64,
    pub(crate) slice: u64,
    pub(crate) custom_slice: bool,
    pub(crate) rel_deadline: bool,
    pub(crate) on_rq: bool,
    pub(crate) sched_delayed: bool,
    pub(crate) exec_start: u64,
    pub(crate) sum_exec_runtime: u64,
    pub(crate) prev_sum_exec_runtime: u64,
    pub(crate) depth: u32,
    pub(crate) parent: Option<SeId>,
    /// The cfs_rq this entity is queued on (`cfs_rq_of(se)`).
    pub(crate) cfs_rq: CfsRqId,
    /// The queue a group entity represents (`group_cfs_rq(se)`); None for tasks.
    pub(crate) my_q: Option<CfsRqId>,
    pub(crate) task: Option<TaskId>,
    /// Tie-break among equal deadlines: rb-tree insertion order.
    pub(crate) enqueue_seq: u64,
    /// Per-reason vruntime movement counters (for the audit invariant).
    pub(crate) moved: [u64; VRUNTIME_STEPS],
    /// `se->avg`: the entity's PELT signals.
    pub(crate) avg: SchedAvg,
    /// `se->runnable_weight`: a group entity's `h_nr_runnable` as of its
    /// last `se_update_runnable()`.
    pub(crate) runnable_weight: u32,
}

impl SchedEntity {
    pub fn new(load: LoadWeight, cfs_rq: CfsRqId) -> SchedEntity {
        SchedEntity {
            load,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice: 0,
            custom_slice: false,
            rel_deadline: false,
            on_rq: false,
            sched_delayed: false,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            depth: 0,
            parent: None,
            cfs_rq,
            my_q: None,
            task: None,
            enqueue_seq: 0,
            moved: [0; VRUNTIME_STEPS],
            avg: SchedAvg::default(),
            runnable_weight: 0,
        }
    }

    /// `se->vlag`: the lag kept over a sleep (EEVDF's `place_entity()`).
    pub fn vlag(&self) -> i64 {
        self.vlag
    }

    pub fn vruntime(&self) -> u64 {
        self.vruntime
    }

    /// The only way to change vruntime: names the policy step that does it.
    pub fn set_vruntime(&mut self, v: u64, why: VruntimeStep) {
        if v != self.vruntime {
            self.moved[why.index()] += 1;
        }
        self.vruntime = v;
    }

    pub fn is_task(&self) -> bool {
        self.task.is_some()
    }
}

/// `struct cfs_rq`.
#[derive(Clone, Debug)]
pub struct CfsRq {
    pub(crate) load: LoadWeight,
    /// Entities queued here, curr included (`nr_running`, named `nr_queued` later).
    pub(crate) nr_running: u32,
    pub(crate) h_nr_queued: u32,
    pub(crate) h_nr_runnable: u32,
    pub(crate) h_nr_delayed: u32,
    pub(crate) zero_vruntime: u64,
    /// Σ (v_i - zero_vruntime) * w_i over queued entities, curr excluded.
    pub(crate) avg_vruntime: i64,
    /// Σ w_i (scale_load_down) over queued entities, curr excluded.
    pub(crate) avg_load: i64,
    pub(crate) curr: Option<SeId>,
    pub(crate) next: Option<SeId>,
    /// borrow policy: `next` may be picked although ineligible (cleared with
    /// the buddy).
    pub(crate) next_borrowed: bool,
    /// Linux 6.1 (CFS): `cfs_rq->min_vruntime`, the monotonic floor of the
    /// queue's vruntimes (`update_min_vruntime()`).
    pub(crate) min_vruntime: u64,
    /// Linux 6.1 (CFS): `cfs_rq->last` and `cfs_rq->skip` buddies (the
    /// EEVDF presets never set them).
    pub(crate) last: Option<SeId>,
    pub(crate) skip: Option<SeId>,
    /// The "rb-tree": queued entities other than curr, in tree order
    /// (`timeline.rs`).
    pub(crate) queued: Vec<SeId>,
    /// The slices of `queued`, for `cfs_rq_min_slice()` (the kernel's
    /// per-subtree `min_slice` read at the root; `timeline.rs`).
    pub(crate) slices: SliceSet,
    pub(crate) tg: GroupId,
    pub(crate) cpu: CpuId,
    /// The group entity that represents this queue one level up (None: root).
    pub(crate) owner: Option<SeId>,
    pub(crate) avg: SchedAvg,
    pub(crate) tg_load_avg_contrib: i64,
    pub(crate) last_update_tg_load_avg: u64,
    /// `cfs_rq->removed`: averages of entities that left while not queued
    /// (`remove_entity_load_avg()`), subtracted at the next update.
    pub(crate) removed: Removed,
    /// `cfs_rq->propagate` / `prop_runnable_sum`: a pending change of the
    /// group entity's load to apply one level up.
    pub(crate) propagate: bool,
    pub(crate) prop_runnable_sum: i64,
    /// `cfs_rq->h_load` and the jiffy it was computed at.
    pub(crate) h_load: u64,
    pub(crate) last_h_load_update: Option<u64>,
    /// On the rq's leaf cfs_rq list (`cfs_rq->on_list`): visited by
    /// `update_blocked_averages()` until fully decayed.
    pub(crate) on_list: bool,
    /// `cfs_rq->yield_penalty`: rate limit and debounce of the `deboost`
    /// policy when this cfs_rq is the common ancestor (series v2, patch 0004).
    pub(crate) yield_penalty: crate::sched::yield_to::deboost_helpers::YieldPenaltyState,
}

/// `struct cfs_rq::removed`.
#[derive(Clone, Debug, Default)]
pub struct Removed {
    pub(crate) nr: u32,
    pub(crate) load_avg: u64,
    pub(crate) util_avg: u64,
    pub(crate) runnable_avg: u64,
}

impl CfsRq {
    pub fn new(tg: GroupId, cpu: CpuId, owner: Option<SeId>) -> CfsRq {
        CfsRq {
            load: LoadWeight::default(),
            nr_running: 0,
            h_nr_queued: 0,
            h_nr_runnable: 0,
            h_nr_delayed: 0,
            zero_vruntime: (-(1i64 << 20)) as u64,
            avg_vruntime: 0,
            avg_load: 0,
            curr: None,
            next: None,
            next_borrowed: false,
            min_vruntime: (-(1i64 << 20)) as u64,
            last: None,
            skip: None,
            queued: Vec::new(),
            slices: SliceSet::default(),
            tg,
            cpu,
            owner,
            avg: SchedAvg::default(),
            tg_load_avg_contrib: 0,
            last_update_tg_load_avg: 0,
            removed: Removed::default(),
            propagate: false,
            prop_runnable_sum: 0,
            h_load: 0,
            last_h_load_update: None,
            on_list: false,
            yield_penalty: Default::default(),
        }
    }
}
