//! The PELT glue of kernel/sched/fair.c (Linux 6.12.117, CONFIG_SMP,
//! CONFIG_FAIR_GROUP_SCHED): `update_load_avg()` with its attach/detach/
//! propagate steps, `remove_entity_load_avg()` from `migrate_task_rq_fair()`,
//! the blocked-load decay of `sched_balance_update_blocked_averages()` and
//! the hierarchical load `task_h_load()` the load balancer moves tasks by.
//!
//! The PELT clock is the rq clock (`cfs_rq_clock_pelt()` without capacity or
//! frequency scaling and without throttling); `migrate_se_pelt_lag()` is
//! therefore exact: a migrating sleeper is decayed to the current time.

use super::entity::{CfsRq, SchedEntity};
use super::ids::{CfsRqId, CpuId, SeId, TaskId};
use super::pelt::{add_positive, get_pelt_divider, sub_positive, PELT_MIN_DIV};
use super::pelt::{SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT};
use super::weight::scale_load_down;
use super::{Scheduler, ROOT_GROUP};

/// `update_load_avg()` flags.
pub const UPDATE_TG: u32 = 0x1;
pub const SKIP_AGE_LOAD: u32 = 0x2;
pub const DO_ATTACH: u32 = 0x4;
pub const DO_DETACH: u32 = 0x8;

impl Scheduler {
    /// `se_weight()`.
    #[inline]
    fn se_weight(&self, se: SeId) -> u64 {
        scale_load_down(self.ses[se.idx()].load.weight)
    }

    /// `se_update_runnable()`.
    #[inline]
    pub(super) fn se_update_runnable(&mut self, se: SeId) {
        if let Some(q) = self.ses[se.idx()].my_q {
            self.ses[se.idx()].runnable_weight = self.cfs_rqs[q.idx()].h_nr_runnable;
        }
    }

    /// `init_entity_runnable_average()`: a new task starts with full load.
    pub(super) fn init_entity_runnable_average(&mut self, se: SeId) {
        let w = self.se_weight(se);
        let e = &mut self.ses[se.idx()];
        e.avg = Default::default();
        if e.is_task() {
            e.avg.load_avg = w;
        }
    }

    /// `post_init_entity_util_avg()`: a new task's util is extrapolated from
    /// its cfs_rq's, capped at half the spare capacity.
    pub(super) fn post_init_entity_util_avg(&mut self, p: TaskId) {
        let se = self.tasks[p.idx()].se;
        let cfs = self.cfs_rq_of(se);
        let q = &self.cfs_rqs[cfs.idx()].avg;
        let cap = (SCHED_CAPACITY_SCALE as i64 - q.util_avg as i64) / 2;
        let (util, load) = (q.util_avg, q.load_avg);
        let w = self.se_weight(se);
        let sa = &mut self.ses[se.idx()].avg;
        if cap > 0 {
            if util != 0 {
                sa.util_avg = (util * w / (load + 1)).min(cap as u64);
            } else {
                sa.util_avg = cap as u64;
            }
        }
        sa.runnable_avg = sa.util_avg;
    }

    /// `__update_load_avg_blocked_se()`.
    fn __update_load_avg_blocked_se(&mut self, now: u64, se: SeId) {
        let w = self.se_weight(se);
        let sa = &mut self.ses[se.idx()].avg;
        if sa.update_load_sum(now, 0, 0, false) {
            sa.update_load_avg(w);
        }
    }

    /// `update_cfs_rq_load_avg()`: subtract what `remove_entity_load_avg()`
    /// queued, then decay/accumulate. Returns "decayed".
    #[inline]
    pub(super) fn update_cfs_rq_load_avg(&mut self, now: u64, cfs: CfsRqId) -> bool {
        self.cfs_rqs[cfs.idx()].update_cfs_rq_load_avg(now)
    }

    /// `add_tg_cfs_propagate()`.
    #[inline]
    fn add_tg_cfs_propagate(&mut self, cfs: CfsRqId, runnable_sum: i64) {
        self.cfs_rqs[cfs.idx()].add_tg_cfs_propagate(runnable_sum);
    }

    /// `enqueue_load_avg()`.
    pub(super) fn enqueue_load_avg(&mut self, cfs: CfsRqId, se: SeId) {
        let w = self.se_weight(se);
        let (la, ls) = (
            self.ses[se.idx()].avg.load_avg,
            self.ses[se.idx()].avg.load_sum,
        );
        let sa = &mut self.cfs_rqs[cfs.idx()].avg;
        sa.load_avg += la;
        sa.load_sum += w * ls;
    }

    /// `dequeue_load_avg()`.
    pub(super) fn dequeue_load_avg(&mut self, cfs: CfsRqId, se: SeId) {
        let w = self.se_weight(se);
        let (la, ls) = (
            self.ses[se.idx()].avg.load_avg,
            self.ses[se.idx()].avg.load_sum,
        );
        let sa = &mut self.cfs_rqs[cfs.idx()].avg;
        sub_positive(&mut sa.load_avg, la);
        sub_positive(&mut sa.load_sum, w * ls);
        sa.load_sum = sa.load_sum.max(sa.load_avg * PELT_MIN_DIV);
    }

    /// `attach_entity_load_avg()`: align the entity on the cfs_rq's decay
    /// window and add its averages.
    fn attach_entity_load_avg(&mut self, cfs: CfsRqId, se: SeId) {
        let divider = get_pelt_divider(&self.cfs_rqs[cfs.idx()].avg);
        let (lut, pc) = {
            let a = &self.cfs_rqs[cfs.idx()].avg;
            (a.last_update_time, a.period_contrib)
        };
        let w = self.se_weight(se);
        let sa = &mut self.ses[se.idx()].avg;
        sa.last_update_time = lut;
        sa.period_contrib = pc;
        sa.util_sum = sa.util_avg * divider;
        sa.runnable_sum = sa.runnable_avg * divider;
        sa.load_sum = sa.load_avg * divider;
        if w < sa.load_sum {
            sa.load_sum /= w.max(1);
        } else {
            sa.load_sum = 1;
        }
        let (ua, us, ra, rs, ls) = (
            sa.util_avg,
            sa.util_sum,
            sa.runnable_avg,
            sa.runnable_sum,
            sa.load_sum,
        );
        self.enqueue_load_avg(cfs, se);
        let q = &mut self.cfs_rqs[cfs.idx()].avg;
        q.util_avg += ua;
        q.util_sum += us;
        q.runnable_avg += ra;
        q.runnable_sum += rs;
        self.add_tg_cfs_propagate(cfs, ls as i64);
    }

    /// `detach_entity_load_avg()`.
    fn detach_entity_load_avg(&mut self, cfs: CfsRqId, se: SeId) {
        self.dequeue_load_avg(cfs, se);
        let e = self.ses[se.idx()].avg.clone();
        let q = &mut self.cfs_rqs[cfs.idx()].avg;
        sub_positive(&mut q.util_avg, e.util_avg);
        sub_positive(&mut q.util_sum, e.util_sum);
        q.util_sum = q.util_sum.max(q.util_avg * PELT_MIN_DIV);
        sub_positive(&mut q.runnable_avg, e.runnable_avg);
        sub_positive(&mut q.runnable_sum, e.runnable_sum);
        q.runnable_sum = q.runnable_sum.max(q.runnable_avg * PELT_MIN_DIV);
        self.add_tg_cfs_propagate(cfs, -(e.load_sum as i64));
    }

    /// `update_tg_cfs_util()`.
    fn update_tg_cfs_util(&mut self, cfs: CfsRqId, se: SeId, gcfs: CfsRqId) {
        let g = self.cfs_rqs[gcfs.idx()].avg.util_avg;
        let delta_avg = g as i64 - self.ses[se.idx()].avg.util_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let divider = get_pelt_divider(&self.cfs_rqs[cfs.idx()].avg);
        let sa = &mut self.ses[se.idx()].avg;
        sa.util_avg = g;
        let new_sum = g * divider;
        let delta_sum = new_sum as i64 - sa.util_sum as i64;
        sa.util_sum = new_sum;
        let q = &mut self.cfs_rqs[cfs.idx()].avg;
        add_positive(&mut q.util_avg, delta_avg);
        add_positive(&mut q.util_sum, delta_sum);
        q.util_sum = q.util_sum.max(q.util_avg * PELT_MIN_DIV);
    }

    /// `update_tg_cfs_runnable()`.
    fn update_tg_cfs_runnable(&mut self, cfs: CfsRqId, se: SeId, gcfs: CfsRqId) {
        let g = self.cfs_rqs[gcfs.idx()].avg.runnable_avg;
        let delta_avg = g as i64 - self.ses[se.idx()].avg.runnable_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let divider = get_pelt_divider(&self.cfs_rqs[cfs.idx()].avg);
        let sa = &mut self.ses[se.idx()].avg;
        sa.runnable_avg = g;
        let new_sum = g * divider;
        let delta_sum = new_sum as i64 - sa.runnable_sum as i64;
        sa.runnable_sum = new_sum;
        let q = &mut self.cfs_rqs[cfs.idx()].avg;
        add_positive(&mut q.runnable_avg, delta_avg);
        add_positive(&mut q.runnable_sum, delta_sum);
        q.runnable_sum = q.runnable_sum.max(q.runnable_avg * PELT_MIN_DIV);
    }

    /// `update_tg_cfs_load()`: re-derive the group entity's load from the
    /// runnable sum that was attached to/detached from its queue.
    fn update_tg_cfs_load(&mut self, cfs: CfsRqId, se: SeId, gcfs: CfsRqId) {
        let mut runnable_sum = self.cfs_rqs[gcfs.idx()].prop_runnable_sum;
        if runnable_sum == 0 {
            return;
        }
        self.cfs_rqs[gcfs.idx()].prop_runnable_sum = 0;
        let divider = get_pelt_divider(&self.cfs_rqs[cfs.idx()].avg) as i64;
        let se_load_sum = self.ses[se.idx()].avg.load_sum as i64;
        if runnable_sum >= 0 {
            runnable_sum += se_load_sum;
            runnable_sum = runnable_sum.min(divider);
        } else {
            let gq = &self.cfs_rqs[gcfs.idx()];
            let gw = scale_load_down(gq.load.weight);
            let load_sum = gq.avg.load_sum.checked_div(gw).unwrap_or(0) as i64;
            runnable_sum = se_load_sum.min(load_sum);
        }
        let running_sum = (self.ses[se.idx()].avg.util_sum >> SCHED_CAPACITY_SHIFT) as i64;
        runnable_sum = runnable_sum.max(running_sum);
        let w = self.se_weight(se) as i64;
        let load_sum = w * runnable_sum;
        let load_avg = load_sum / divider;
        let delta_avg = load_avg - self.ses[se.idx()].avg.load_avg as i64;
        if delta_avg == 0 {
            return;
        }
        let delta_sum = load_sum - w * se_load_sum;
        let sa = &mut self.ses[se.idx()].avg;
        sa.load_sum = runnable_sum as u64;
        sa.load_avg = load_avg as u64;
        let q = &mut self.cfs_rqs[cfs.idx()].avg;
        add_positive(&mut q.load_avg, delta_avg);
        add_positive(&mut q.load_sum, delta_sum);
        q.load_sum = q.load_sum.max(q.load_avg * PELT_MIN_DIV);
    }

    /// `propagate_entity_load_avg()` for the group entity `se` of `gcfs`.
    #[inline]
    fn propagate_entity_load_avg(&mut self, se: SeId, gcfs: CfsRqId) -> bool {
        if !self.cfs_rqs[gcfs.idx()].propagate {
            return false;
        }
        self.propagate_entity_load_avg_pending(se, gcfs);
        true
    }

    /// `propagate_entity_load_avg()` once `gcfs->propagate` is set.
    #[inline(never)]
    fn propagate_entity_load_avg_pending(&mut self, se: SeId, gcfs: CfsRqId) {
        self.cfs_rqs[gcfs.idx()].propagate = false;
        let cfs = self.cfs_rq_of(se);
        let prs = self.cfs_rqs[gcfs.idx()].prop_runnable_sum;
        self.add_tg_cfs_propagate(cfs, prs);
        self.update_tg_cfs_util(cfs, se, gcfs);
        self.update_tg_cfs_runnable(cfs, se, gcfs);
        self.update_tg_cfs_load(cfs, se, gcfs);
    }

    /// `skip_blocked_update()`.
    fn skip_blocked_update(&self, se: SeId) -> bool {
        let e = &self.ses[se.idx()];
        if e.avg.load_avg != 0 || e.avg.util_avg != 0 {
            return false;
        }
        let g = e.my_q.expect("group entity");
        !self.cfs_rqs[g.idx()].propagate
    }

    /// `update_load_avg()` (6.12.117): age the entity and its cfs_rq, apply a
    /// pending propagation, attach a migrated entity (DO_ATTACH with a zero
    /// `last_update_time`) or detach a migrating one (DO_DETACH), and push
    /// the change into `tg->load_avg` (UPDATE_TG).
    ///
    /// The entity and its cfs_rq are borrowed once for the two PELT updates
    /// (the per-event part); the rarer steps index again.
    #[inline]
    pub fn update_load_avg(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let now = self.clock_pelt();
        let e = &mut self.ses[se.idx()];
        let q = &mut self.cfs_rqs[cfs.idx()];
        if e.avg.last_update_time != 0 && flags & SKIP_AGE_LOAD == 0 {
            __update_load_avg_se(now, e, q.curr == Some(se));
        }
        let mut decayed = q.update_cfs_rq_load_avg(now);
        let attach = e.avg.last_update_time == 0 && flags & DO_ATTACH != 0;
        if let Some(gcfs) = e.my_q {
            decayed |= self.propagate_entity_load_avg(se, gcfs);
        }
        if attach {
            self.attach_entity_load_avg(cfs, se);
            self.update_tg_load_avg(cfs);
        } else if flags & DO_DETACH != 0 {
            self.detach_entity_load_avg(cfs, se);
            self.update_tg_load_avg(cfs);
        } else if decayed && flags & UPDATE_TG != 0 {
            self.update_tg_load_avg(cfs);
        }
    }

    /// `remove_entity_load_avg()`: a task leaving its CPU while not queued
    /// is synced to now (`sync_entity_load_avg()` + the exact
    /// `migrate_se_pelt_lag()`) and queued for removal from its old cfs_rq.
    pub(super) fn remove_entity_load_avg(&mut self, se: SeId) {
        let now = self.clock_pelt();
        let cfs = self.cfs_rq_of(se);
        self.__update_load_avg_blocked_se(now, se);
        let a = self.ses[se.idx()].avg.clone();
        let r = &mut self.cfs_rqs[cfs.idx()].removed;
        r.nr += 1;
        r.util_avg += a.util_avg;
        r.load_avg += a.load_avg;
        r.runnable_avg += a.runnable_avg;
    }

    /// The load part of `migrate_task_rq_fair()` (`sched::class`), called by
    /// `set_task_cpu()` before the task's entity moves. A queued
    /// (balancer-)migrating task was detached by its dequeue (DO_DETACH); a
    /// waking one is removed here. Either way the new CPU attaches it at
    /// enqueue.
    pub(super) fn migrate_task_rq_load(&mut self, p: TaskId) {
        let se = self.tasks[p.idx()].se;
        if !self.tasks[p.idx()].migrating {
            self.remove_entity_load_avg(se);
        }
        self.ses[se.idx()].avg.last_update_time = 0;
    }

    /// `cfs_rq_is_decayed()` without the child test (done by the caller).
    fn cfs_rq_is_decayed(&self, cfs: CfsRqId) -> bool {
        let q = &self.cfs_rqs[cfs.idx()];
        q.load.weight == 0 && q.avg.load_sum == 0 && q.avg.util_sum == 0 && q.avg.runnable_sum == 0
    }

    /// `cfs_rq_has_blocked()`.
    fn cfs_rq_has_blocked(&self, cfs: CfsRqId) -> bool {
        let a = &self.cfs_rqs[cfs.idx()].avg;
        a.load_avg != 0 || a.util_avg != 0
    }

    /// `list_add_leaf_cfs_rq()` for `cfs` and its ancestors (enqueue).
    pub(super) fn list_add_leaf_cfs_rq(&mut self, cfs: CfsRqId) {
        let mut q = Some(cfs);
        while let Some(c) = q {
            if self.cfs_rqs[c.idx()].on_list {
                break;
            }
            self.cfs_rqs[c.idx()].on_list = true;
            q = self.cfs_rqs[c.idx()].owner.map(|se| self.cfs_rq_of(se));
        }
    }

    /// `__update_blocked_fair()`: decay every cfs_rq on the CPU's leaf list,
    /// bottom-up, push the result into `tg->load_avg` and propagate into the
    /// group entities; fully decayed cfs_rqs leave the list. Returns
    /// (root decayed, still has blocked load).
    fn __update_blocked_fair(&mut self, cpu: CpuId) -> (bool, bool) {
        let now = self.clock_pelt();
        let mut decayed = false;
        let mut blocked = false;
        let ng = self.groups.len();
        let mut child_on = std::mem::take(&mut self.scratch_child_on);
        child_on.clear();
        child_on.resize(ng, false);
        // Groups are created parent first, so reverse order is bottom-up.
        for g in (0..ng).rev() {
            let cfs = self.groups[g].cfs_rq[cpu.idx()];
            if !self.cfs_rqs[cfs.idx()].on_list {
                continue;
            }
            if self.update_cfs_rq_load_avg(now, cfs) {
                self.update_tg_load_avg(cfs);
                if g == ROOT_GROUP.idx() {
                    decayed = true;
                }
            }
            if let Some(se) = self.groups[g].se[cpu.idx()] {
                if !self.skip_blocked_update(se) {
                    let pq = self.cfs_rq_of(se);
                    self.update_load_avg(pq, se, UPDATE_TG);
                }
            }
            if self.cfs_rq_is_decayed(cfs) && !child_on[g] {
                self.cfs_rqs[cfs.idx()].on_list = false;
            } else if let Some(parent) = self.groups[g].parent {
                child_on[parent.idx()] = true;
            }
            if self.cfs_rq_has_blocked(cfs) {
                blocked = true;
            }
        }
        self.scratch_child_on = child_on;
        (decayed, blocked)
    }

    /// `sched_balance_update_blocked_averages()`: decay the blocked load of
    /// `cpu` (idle CPUs' and departed groups' contributions go away).
    pub fn sched_balance_update_blocked_averages(&mut self, cpu: CpuId) {
        let jiffies = self.jiffies();
        self.rqs[cpu.idx()].last_blocked_load_update_tick = jiffies;
        let (_, blocked) = self.__update_blocked_fair(cpu);
        if !blocked {
            self.rqs[cpu.idx()].has_blocked_load = false;
        }
    }

    /// `cfs_rq_clock_pelt()`: the rq clock, offset by one PELT unit so that a
    /// zero `last_update_time` keeps meaning "migrated, attach me" at t = 0.
    #[inline]
    pub fn clock_pelt(&self) -> u64 {
        self.now + 1024
    }

    /// `jiffies` on the model's aligned tick grid.
    pub fn jiffies(&self) -> u64 {
        self.now / self.cfg.tick_nsec()
    }

    /// `update_cfs_rq_h_load()`: the hierarchical load factor of `cfs` and
    /// its ancestors, top-down from the first one already computed this
    /// jiffy (or the root), cached per jiffy. The kernel walks up with
    /// `h_load_next` and back down; here the recursion keeps the walk (no
    /// allocation, depth is the hierarchy's).
    fn update_cfs_rq_h_load(&mut self, cfs: CfsRqId) {
        let now = Some(self.jiffies());
        if self.cfs_rqs[cfs.idx()].last_h_load_update == now {
            return;
        }
        let load = match self.cfs_rqs[cfs.idx()].owner {
            None => self.cfs_rqs[cfs.idx()].avg.load_avg,
            Some(s) => {
                let parent = self.cfs_rq_of(s);
                self.update_cfs_rq_h_load(parent);
                let q = &self.cfs_rqs[parent.idx()];
                (q.h_load as u128 * self.ses[s.idx()].avg.load_avg as u128
                    / (q.avg.load_avg as u128 + 1)) as u64
            }
        };
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.h_load = load;
        q.last_h_load_update = now;
    }

    /// `task_h_load()`: the task's share of its CPU's root load.
    pub fn task_h_load(&mut self, p: TaskId) -> u64 {
        let cfs = self.task_cfs_rq(p);
        self.update_cfs_rq_h_load(cfs);
        let se = self.tasks[p.idx()].se;
        let q = &self.cfs_rqs[cfs.idx()];
        (self.ses[se.idx()].avg.load_avg as u128 * q.h_load as u128 / (q.avg.load_avg as u128 + 1))
            as u64
    }

    /// `cpu_load()`: `cfs_rq_load_avg(&rq->cfs)`.
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        self.cfs_rqs[self.rqs[cpu].cfs.idx()].avg.load_avg
    }

    /// `cpu_runnable()`.
    pub fn cpu_runnable(&self, cpu: usize) -> u64 {
        self.cfs_rqs[self.rqs[cpu].cfs.idx()].avg.runnable_avg
    }

    /// `cpu_util_cfs()` without util_est: util_avg capped at the capacity.
    pub fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        self.cfs_rqs[self.rqs[cpu].cfs.idx()]
            .avg
            .util_avg
            .min(SCHED_CAPACITY_SCALE)
    }
}

/// `se_runnable()` (6.12.117): a delayed entity is not runnable; a task is
/// runnable while queued, a group entity by its cached `runnable_weight`.
#[inline]
fn se_runnable(e: &SchedEntity) -> u64 {
    if e.sched_delayed {
        0
    } else if e.is_task() {
        e.on_rq as u64
    } else {
        e.runnable_weight as u64
    }
}

/// `__update_load_avg_se()` of an entity whose cfs_rq's curr it is (or not).
#[inline(always)]
fn __update_load_avg_se(now: u64, e: &mut SchedEntity, running: bool) -> bool {
    let delta = e.avg.advance(now);
    if delta == 0 {
        return false;
    }
    let runnable = se_runnable(e);
    let w = scale_load_down(e.load.weight);
    let sa = &mut e.avg;
    if sa.accumulate(delta, e.on_rq as u64, runnable, running) {
        sa.update_load_avg(w);
        true
    } else {
        false
    }
}

impl CfsRq {
    /// `update_cfs_rq_load_avg()`: subtract what `remove_entity_load_avg()`
    /// queued, then decay/accumulate (`__update_load_avg_cfs_rq()`). Returns
    /// "decayed".
    #[inline(always)]
    fn update_cfs_rq_load_avg(&mut self, now: u64) -> bool {
        let mut decayed = false;
        if self.removed.nr > 0 {
            self.update_removed();
            decayed = true;
        }
        // __update_load_avg_cfs_rq()
        let delta = self.avg.advance(now);
        if delta != 0 {
            let load = scale_load_down(self.load.weight);
            let runnable = (self.h_nr_queued - self.h_nr_delayed) as u64;
            if self
                .avg
                .accumulate(delta, load, runnable, self.curr.is_some())
            {
                self.avg.update_load_avg(1);
                decayed = true;
            }
        }
        decayed
    }

    /// The `cfs_rq->removed` part of `update_cfs_rq_load_avg()` (rare: only
    /// after a sleeping task migrated away).
    #[inline(never)]
    fn update_removed(&mut self) {
        let r = std::mem::take(&mut self.removed);
        let divider = get_pelt_divider(&self.avg);
        let sa = &mut self.avg;
        sub_positive(&mut sa.load_avg, r.load_avg);
        sub_positive(&mut sa.load_sum, r.load_avg * divider);
        sa.load_sum = sa.load_sum.max(sa.load_avg * PELT_MIN_DIV);
        sub_positive(&mut sa.util_avg, r.util_avg);
        sub_positive(&mut sa.util_sum, r.util_avg * divider);
        sa.util_sum = sa.util_sum.max(sa.util_avg * PELT_MIN_DIV);
        sub_positive(&mut sa.runnable_avg, r.runnable_avg);
        sub_positive(&mut sa.runnable_sum, r.runnable_avg * divider);
        sa.runnable_sum = sa.runnable_sum.max(sa.runnable_avg * PELT_MIN_DIV);
        let prop = -(((r.runnable_avg * divider) >> SCHED_CAPACITY_SHIFT) as i64);
        self.add_tg_cfs_propagate(prop);
    }

    /// `add_tg_cfs_propagate()`.
    #[inline]
    fn add_tg_cfs_propagate(&mut self, runnable_sum: i64) {
        self.propagate = true;
        self.prop_runnable_sum += runnable_sum;
    }
}
