//! The EEVDF fair class: the functions of kernel/sched/fair.c, Linux 6.12.117,
//! named after them and following their control flow. Every function follows
//! 6.12.117 unless its doc names another version; version differences are
//! switches in `SchedFeatures` (6.12.0 buddy gating, forfeit on yield, the
//! v6.17 run-to-parity rework with vprot, the v6.19 buddy placement;
//! docs/model.md, "Kernel versions").
//!
//! Not modelled (docs/model.md): CFS bandwidth (throttling), SCHED_IDLE
//! entities, util_est/uclamp, the dl_server, core scheduling, NUMA balancing.

use super::entity::VruntimeStep;
use super::ids::{CfsRqId, CpuId, SeId, TaskId};
use super::load_avg::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use super::timeline::vec_remove;
use super::weight::{calc_delta_fair, scale_load_down};
use super::{Scheduler, TaskState};
use std::borrow::BorrowMut;

/// `enqueue_entity()`/`enqueue_task_fair()` flags (ENQUEUE_*).
pub const ENQUEUE_WAKEUP: u32 = 0x01;
pub const ENQUEUE_MIGRATED: u32 = 0x40;
pub const ENQUEUE_INITIAL: u32 = 0x80;
pub const ENQUEUE_DELAYED: u32 = 0x200;
/// `dequeue_entity()` flags (DEQUEUE_*).
pub const DEQUEUE_SLEEP: u32 = 0x01;
pub const DEQUEUE_SPECIAL: u32 = 0x10;
pub const DEQUEUE_DELAYED: u32 = 0x200;
/// Wakeup flags (WF_*).
pub const WF_SYNC: u32 = 0x10;
pub const WF_FORK: u32 = 0x04;

/// Signed view of a wrapping u64 difference, as the kernel's `(s64)(a - b)`.
#[inline]
pub fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

impl Scheduler {
    #[inline]
    fn cpu_of(&self, cfs: CfsRqId) -> CpuId {
        self.cfs_rqs[cfs.idx()].cpu
    }

    /// `entity_key()`: v - zero_vruntime.
    #[inline]
    pub fn entity_key(&self, cfs: CfsRqId, se: SeId) -> i64 {
        vdiff(
            self.ses[se.idx()].vruntime(),
            self.cfs_rqs[cfs.idx()].zero_vruntime,
        )
    }

    /// `avg_vruntime_add()`.
    pub(super) fn avg_vruntime_add(&mut self, cfs: CfsRqId, se: SeId) {
        let w = scale_load_down(self.ses[se.idx()].load.weight) as i64;
        let key = self.entity_key(cfs, se);
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime += key * w;
        q.avg_load += w;
    }

    /// `avg_vruntime_sub()`.
    pub(super) fn avg_vruntime_sub(&mut self, cfs: CfsRqId, se: SeId) {
        let w = scale_load_down(self.ses[se.idx()].load.weight) as i64;
        let key = self.entity_key(cfs, se);
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime -= key * w;
        q.avg_load -= w;
    }

    /// `update_zero_vruntime()`: moves the reference point, keeping the sum exact.
    fn update_zero_vruntime(&mut self, cfs: CfsRqId, delta: i64) {
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime -= q.avg_load * delta;
        q.zero_vruntime = q.zero_vruntime.wrapping_add(delta as u64);
    }

    /// The queue's curr if it is queued (`curr && curr->on_rq`).
    #[inline]
    pub(super) fn queued_curr(&self, cfs: CfsRqId) -> Option<SeId> {
        self.cfs_rqs[cfs.idx()]
            .curr
            .filter(|c| self.ses[c.idx()].on_rq)
    }

    /// `avg_vruntime()` (6.12.117): the weighted average vruntime V, with a left
    /// (floor) bias; re-centres `zero_vruntime` on it as a side effect.
    pub fn avg_vruntime(&mut self, cfs: CfsRqId) -> u64 {
        let delta = self.avg_vruntime_delta(cfs);
        self.update_zero_vruntime(cfs, delta);
        self.cfs_rqs[cfs.idx()].zero_vruntime
    }

    /// V as `avg_vruntime()` computes it, without re-centring `zero_vruntime`
    /// (which moves rounding, so the simulation itself never uses this): for
    /// observers such as the tracer, which must not change the run.
    pub fn avg_vruntime_peek(&self, cfs: CfsRqId) -> u64 {
        let zero = self.cfs_rqs[cfs.idx()].zero_vruntime;
        zero.wrapping_add(self.avg_vruntime_delta(cfs) as u64)
    }

    /// `avg_vruntime()`'s V - zero_vruntime.
    fn avg_vruntime_delta(&self, cfs: CfsRqId) -> i64 {
        let curr = self.queued_curr(cfs);
        let q = &self.cfs_rqs[cfs.idx()];
        let mut weight = q.avg_load;
        let mut delta = 0i64;
        if weight != 0 {
            let mut runtime = q.avg_vruntime;
            if let Some(c) = curr {
                let w = scale_load_down(self.ses[c.idx()].load.weight) as i64;
                runtime += self.entity_key(cfs, c) * w;
                weight += w;
            }
            if runtime < 0 {
                runtime -= weight - 1;
            }
            delta = runtime / weight;
        } else if let Some(c) = curr {
            delta = self.entity_key(cfs, c);
        }
        delta
    }

    /// `entity_lag()`: V - v clamped to ±calc_delta_fair(max(2*slice, TICK_NSEC)).
    pub fn entity_lag(&self, avruntime: u64, se: SeId) -> i64 {
        let e = &self.ses[se.idx()];
        let vlag = vdiff(avruntime, e.vruntime());
        let limit = calc_delta_fair((2 * e.slice).max(self.cfg.tick_nsec()), &e.load) as i64;
        vlag.clamp(-limit, limit)
    }

    /// `update_entity_lag()`.
    pub(super) fn update_entity_lag(&mut self, cfs: CfsRqId, se: SeId) {
        let v = self.avg_vruntime(cfs);
        self.ses[se.idx()].vlag = self.entity_lag(v, se);
    }

    /// The (Σ(v_i - v0)w_i, Σw_i) pair of `vruntime_eligible()`, curr included.
    #[inline]
    fn eligibility_sums(&self, cfs: CfsRqId) -> (i64, i64) {
        let q = &self.cfs_rqs[cfs.idx()];
        let mut avg = q.avg_vruntime;
        let mut load = q.avg_load;
        if let Some(c) = self.queued_curr(cfs) {
            let w = scale_load_down(self.ses[c.idx()].load.weight) as i64;
            avg += self.entity_key(cfs, c) * w;
            load += w;
        }
        (avg, load)
    }

    /// The comparison of `vruntime_eligible()` for precomputed sums.
    #[inline]
    fn eligible_with(&self, cfs: CfsRqId, (avg, load): (i64, i64), vruntime: u64) -> bool {
        let zero = self.cfs_rqs[cfs.idx()].zero_vruntime;
        let key = vdiff(vruntime, zero);
        // The kernel's s64 product; the exact 128-bit one only if it overflows.
        match key.checked_mul(load) {
            Some(kl) => avg >= kl,
            None => avg as i128 >= key as i128 * load as i128,
        }
    }

    /// `vruntime_eligible()`: Σ(v_i - v0)w_i >= (v - v0) Σw_i, curr included,
    /// without the division (exact).
    #[inline]
    pub fn vruntime_eligible(&self, cfs: CfsRqId, vruntime: u64) -> bool {
        self.eligible_with(cfs, self.eligibility_sums(cfs), vruntime)
    }

    /// `entity_eligible()`: lag >= 0.
    #[inline]
    pub fn entity_eligible(&self, cfs: CfsRqId, se: SeId) -> bool {
        self.vruntime_eligible(cfs, self.ses[se.idx()].vruntime())
    }

    /// `cfs_rq_min_slice()`: the smallest slice among queued entities, curr
    /// included. The kernel reads the timeline's part from the augmented
    /// rb-tree root (`min_slice`); here from the timeline's `SliceSet`.
    pub fn cfs_rq_min_slice(&self, cfs: CfsRqId) -> u64 {
        let q = &self.cfs_rqs[cfs.idx()];
        let mut min = q.slices.min().unwrap_or(u64::MAX);
        if let Some(c) = self.queued_curr(cfs) {
            min = min.min(self.ses[c.idx()].slice);
        }
        min
    }

    /// `__enqueue_entity()`: into the timeline and the average.
    fn __enqueue_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.avg_vruntime_add(cfs, se);
        let seq = self.next_enqueue_seq();
        self.ses[se.idx()].enqueue_seq = seq;
        self.timeline_insert(cfs, se);
    }

    /// `__dequeue_entity()`.
    fn __dequeue_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.timeline_remove(cfs, se);
        self.avg_vruntime_sub(cfs, se);
    }

    /// `__dequeue_entity()` for callers outside this file (re-weighting).
    pub(super) fn dequeue_from_timeline(&mut self, cfs: CfsRqId, se: SeId) {
        self.__dequeue_entity(cfs, se);
    }

    /// `__enqueue_entity()` for callers outside this file (re-weighting).
    pub(super) fn enqueue_into_timeline(&mut self, cfs: CfsRqId, se: SeId) {
        self.__enqueue_entity(cfs, se);
    }

    /// Re-places a queued entity at lag `vlag` the way
    /// `requeue_delayed_entity()` does (dequeue, `place_entity()`, enqueue),
    /// for the yield policies that credit lag.
    pub(super) fn requeue_with_lag(&mut self, cfs: CfsRqId, se: SeId, vlag: i64) {
        self.cfs_rqs[cfs.idx()].nr_running -= 1;
        self.__dequeue_entity(cfs, se);
        self.ses[se.idx()].vlag = vlag;
        self.place_entity(cfs, se, 0);
        self.__enqueue_entity(cfs, se);
        self.cfs_rqs[cfs.idx()].nr_running += 1;
    }

    /// `set_protect_slice()`: 6.12 stashes the deadline in vlag (RUN_TO_PARITY
    /// lasts until the deadline); with VPROT (v6.17+) protection ends at
    /// min(deadline, v + min slice of the queue).
    pub(super) fn set_protect_slice(&mut self, cfs: CfsRqId, se: SeId) {
        if self.feat.vprot {
            let base = if self.feat.run_to_parity {
                self.cfs_rq_min_slice(cfs)
            } else {
                700_000
            };
            let e = &self.ses[se.idx()];
            let slice = base.min(e.slice);
            let vprot = if slice != e.slice {
                let end = e.vruntime().wrapping_add(calc_delta_fair(slice, &e.load));
                if vdiff(end, e.deadline) < 0 {
                    end
                } else {
                    e.deadline
                }
            } else {
                e.deadline
            };
            self.ses[se.idx()].vprot = vprot;
        } else {
            let e = &mut self.ses[se.idx()];
            e.vlag = e.deadline as i64;
        }
    }

    /// `update_protect_slice()` (v6.17, 3a0baa8e6c57; VPROT): a wakee with a
    /// shorter slice that did not preempt shortens curr's protection to the
    /// queue's minimum slice from now on.
    fn update_protect_slice(&mut self, cfs: CfsRqId, se: SeId) {
        let slice = self.cfs_rq_min_slice(cfs);
        let e = &mut self.ses[se.idx()];
        let end = e.vruntime().wrapping_add(calc_delta_fair(slice, &e.load));
        if vdiff(end, e.vprot) < 0 {
            e.vprot = end;
        }
    }

    /// `protect_slice()`.
    pub fn protect_slice(&self, se: SeId) -> bool {
        let e = &self.ses[se.idx()];
        if self.feat.vprot {
            vdiff(e.vprot, e.vruntime()) > 0
        } else {
            e.vlag == e.deadline as i64
        }
    }

    /// `cancel_protect_slice()`.
    pub(super) fn cancel_protect_slice(&mut self, se: SeId) {
        if self.protect_slice(se) {
            let e = &mut self.ses[se.idx()];
            if self.feat.vprot {
                e.vprot = e.vruntime();
            } else {
                e.vlag = e.deadline as i64 + 1;
            }
        }
    }

    /// `pick_eevdf()` (6.12.117): the eligible entity with the earliest virtual
    /// deadline; curr kept under RUN_TO_PARITY while its slice is protected.
    /// With PICK_BUDDY_IN_PICK_EEVDF (v6.19) an eligible buddy is returned right
    /// after the single-entity shortcut.
    ///
    /// The single-entity shortcut is inlined into the callers (most levels
    /// of a hierarchy walk hold one entity); the rest is `pick_eevdf_queue()`.
    #[inline]
    pub fn pick_eevdf(&self, cfs: CfsRqId) -> Option<SeId> {
        self.__pick_eevdf(cfs, true)
    }

    /// `__pick_eevdf()` (v6.17, 9de74a9850b9): `pick_eevdf()` with curr's
    /// slice protection honoured only if `protect`.
    #[inline]
    #[allow(non_snake_case)]
    pub fn __pick_eevdf(&self, cfs: CfsRqId, protect: bool) -> Option<SeId> {
        let q = &self.cfs_rqs[cfs.idx()];
        if q.nr_running == 1 {
            return match q.curr {
                Some(c) if self.ses[c.idx()].on_rq => Some(c),
                _ => self.first_entity(cfs),
            };
        }
        self.pick_eevdf_queue(cfs, protect)
    }

    /// `pick_eevdf()` past its single-entity shortcut.
    #[inline(never)]
    fn pick_eevdf_queue(&self, cfs: CfsRqId, protect: bool) -> Option<SeId> {
        let q = &self.cfs_rqs[cfs.idx()];
        let mut curr = q.curr;
        if self.feat.buddy_in_pick_eevdf && self.feat.pick_buddy {
            if let Some(n) = q.next {
                if q.next_borrowed || self.entity_eligible(cfs, n) {
                    return Some(n);
                }
            }
        }
        if let Some(c) = curr {
            if !self.ses[c.idx()].on_rq || !self.entity_eligible(cfs, c) {
                curr = None;
            }
        }
        let parity = self.feat.run_to_parity || self.feat.vprot;
        if let Some(c) = curr {
            if parity && protect && self.protect_slice(c) {
                return Some(c);
            }
        }
        // Earliest deadline among eligible queued entities (tree order on
        // ties): the first eligible one of the timeline.
        let sums = self.eligibility_sums(cfs);
        let best = q
            .queued
            .iter()
            .copied()
            .find(|&s| self.eligible_with(cfs, sums, self.ses[s.idx()].vruntime()));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if self.entity_before(c, b) => Some(c),
            (b, _) => b,
        }
    }

    /// `entity_before()`: earlier deadline.
    #[inline]
    pub fn entity_before(&self, a: SeId, b: SeId) -> bool {
        vdiff(self.ses[a.idx()].deadline, self.ses[b.idx()].deadline) < 0
    }

    /// rb-tree order: deadline, then insertion order.
    /// Linux 6.1 (CFS): vruntime, then insertion order.
    #[inline]
    pub fn tree_before(&self, a: SeId, b: SeId) -> bool {
        let (ea, eb) = (&self.ses[a.idx()], &self.ses[b.idx()]);
        let d = if self.is_cfs() {
            vdiff(ea.vruntime(), eb.vruntime())
        } else {
            vdiff(ea.deadline, eb.deadline)
        };
        d < 0 || (d == 0 && ea.enqueue_seq < eb.enqueue_seq)
    }

    /// `__pick_first_entity()`: leftmost of the timeline.
    fn first_entity(&self, cfs: CfsRqId) -> Option<SeId> {
        self.timeline_first(cfs)
    }

    /// `update_deadline()`: once vruntime reaches the deadline, request a new
    /// slice (vd = v + slice/w) and ask for a reschedule.
    fn update_deadline(&mut self, cfs: CfsRqId, se: SeId) -> bool {
        let base = self.cfg.base_slice();
        let e = &mut self.ses[se.idx()];
        if vdiff(e.vruntime(), e.deadline) < 0 {
            return false;
        }
        if !e.custom_slice {
            e.slice = base;
        }
        e.deadline = e.vruntime().wrapping_add(calc_delta_fair(e.slice, &e.load));
        self.avg_vruntime(cfs);
        true
    }

    /// `update_curr()` (6.12.117): charge the running entity, roll its deadline
    /// and reschedule on slice expiry or a cancelled PREEMPT_SHORT protection.
    ///
    /// The early returns (no curr, nothing ran since `exec_start`) are
    /// inlined into the callers: most calls of a pick walk or a yield find
    /// the clock unchanged since the last charge.
    #[inline]
    pub fn update_curr(&mut self, cfs: CfsRqId) {
        if self.is_cfs() {
            return self.cfs().update_curr(cfs);
        }
        if self.is_flat() {
            return self.flat_fair().update_curr(cfs);
        }
        self.update_curr_eevdf(cfs);
    }

    /// `update_curr()` on one EEVDF queue (the hierarchical presets' every
    /// level, the flat preset's single runqueue).
    #[inline]
    pub(super) fn update_curr_eevdf(&mut self, cfs: CfsRqId) {
        let Some(curr) = self.cfs_rqs[cfs.idx()].curr else {
            return;
        };
        let delta_exec = self.now as i64 - self.ses[curr.idx()].exec_start as i64;
        if delta_exec <= 0 {
            return;
        }
        self.update_curr_charge(cfs, curr, delta_exec);
    }

    /// The body of `update_curr()` once `delta_exec > 0`.
    #[inline(never)]
    fn update_curr_charge(&mut self, cfs: CfsRqId, curr: SeId, delta_exec: i64) {
        let now = self.now;
        let e = &mut self.ses[curr.idx()];
        e.exec_start = now;
        e.sum_exec_runtime += delta_exec as u64;
        let v = e
            .vruntime()
            .wrapping_add(calc_delta_fair(delta_exec as u64, &e.load));
        e.set_vruntime(v, VruntimeStep::Accounting);
        let resched = self.update_deadline(cfs, curr);
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            return;
        }
        // RESCHED_UNPROTECTED (v6.17, 0b9ca2dcabc3): reschedule once the
        // protected period is over, whatever PREEMPT_SHORT says.
        let unprotected = if self.feat.resched_unprotected {
            !self.protect_slice(curr)
        } else {
            self.did_preempt_short(cfs, curr)
        };
        if resched || unprotected {
            let cpu = self.cpu_of(cfs);
            self.resched_curr(cpu);
            self.clear_buddies(cfs, curr);
        }
    }

    /// `did_preempt_short()`.
    fn did_preempt_short(&self, cfs: CfsRqId, curr: SeId) -> bool {
        if !self.feat.preempt_short {
            return false;
        }
        if self.protect_slice(curr) {
            return false;
        }
        !self.entity_eligible(cfs, curr)
    }

    /// `do_preempt_short()`.
    fn do_preempt_short(&self, cfs: CfsRqId, pse: SeId, se: SeId) -> bool {
        if !self.feat.preempt_short {
            return false;
        }
        if self.ses[pse.idx()].slice >= self.ses[se.idx()].slice {
            return false;
        }
        if !self.entity_eligible(cfs, pse) {
            return false;
        }
        if self.entity_before(pse, se) {
            return true;
        }
        !self.entity_eligible(cfs, se)
    }

    /// `place_entity()` (6.12.117): v = V - lag with the PLACE_LAG inflation
    /// `lag * (W + w) / W`; the deadline from a kept relative deadline
    /// (PLACE_REL_DEADLINE) or v + vslice (halved for a new task under
    /// PLACE_DEADLINE_INITIAL).
    pub(super) fn place_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let vruntime = self.avg_vruntime(cfs);
        let base = self.cfg.base_slice();
        let curr = self.queued_curr(cfs);
        let q = &self.cfs_rqs[cfs.idx()];
        let nr_running = q.nr_running;
        let mut load = q.avg_load;
        if let Some(c) = curr {
            load += scale_load_down(self.ses[c.idx()].load.weight) as i64;
        }
        let e = &mut self.ses[se.idx()];
        if !e.custom_slice {
            e.slice = base;
        }
        let mut vslice = calc_delta_fair(e.slice, &e.load);
        let mut lag: i64 = 0;
        if self.feat.place_lag && nr_running > 0 {
            lag = e.vlag;
            let w = load + scale_load_down(e.load.weight) as i64;
            let load = if load == 0 { 1 } else { load };
            // 64-bit division when the product fits (the same quotient).
            lag = match lag.checked_mul(w) {
                Some(l) => l / load,
                None => (lag as i128 * w as i128 / load as i128) as i64,
            };
        }
        e.set_vruntime(vruntime.wrapping_sub(lag as u64), VruntimeStep::Place);
        if self.feat.place_rel_deadline && e.rel_deadline {
            e.deadline = e.deadline.wrapping_add(e.vruntime());
            e.rel_deadline = false;
            return;
        }
        if self.feat.place_deadline_initial && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        e.deadline = e.vruntime().wrapping_add(vslice);
    }

    /// `enqueue_entity()`.
    fn enqueue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) {
        let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        if is_curr {
            self.place_entity(cfs, se, flags);
        }
        self.update_curr(cfs);
        self.update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
        self.se_update_runnable(se);
        self.update_cfs_group(se);
        if !is_curr {
            self.place_entity(cfs, se, flags);
        }
        // account_entity_enqueue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.add(w);
        q.nr_running += 1;
        if let Some(t) = self.ses[se.idx()].task {
            // account_entity_enqueue(): head of rq->cfs_tasks.
            let cpu = self.cpu_of(cfs);
            self.rqs[cpu.idx()].cfs_tasks.push(t);
        }
        if flags & ENQUEUE_MIGRATED != 0 {
            self.ses[se.idx()].exec_start = 0;
        }
        if !is_curr {
            self.__enqueue_entity(cfs, se);
        }
        self.ses[se.idx()].on_rq = true;
        if self.cfs_rqs[cfs.idx()].nr_running == 1 {
            self.list_add_leaf_cfs_rq(cfs);
        }
    }

    /// `__clear_buddies_next()` / `clear_buddies()`.
    pub fn clear_buddies(&mut self, cfs: CfsRqId, se: SeId) {
        if self.cfs_rqs[cfs.idx()].next != Some(se) {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = self.cfs_rq_of(e);
            if self.cfs_rqs[q.idx()].next != Some(e) {
                break;
            }
            self.cfs_rqs[q.idx()].next = None;
            self.cfs_rqs[q.idx()].next_borrowed = false;
            s = self.parent_entity(e);
        }
    }

    /// `set_delayed()`: h_nr_runnable/h_nr_delayed move up the hierarchy for tasks.
    pub(super) fn set_delayed(&mut self, se: SeId) {
        self.ses[se.idx()].sched_delayed = true;
        if !self.ses[se.idx()].is_task() {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = &mut self.cfs_rqs[self.ses[e.idx()].cfs_rq.idx()];
            q.h_nr_runnable -= 1;
            q.h_nr_delayed += 1;
            s = self.ses[e.idx()].parent;
        }
    }

    /// `clear_delayed()`.
    pub(super) fn clear_delayed(&mut self, se: SeId) {
        self.ses[se.idx()].sched_delayed = false;
        if !self.ses[se.idx()].is_task() {
            return;
        }
        let mut s = Some(se);
        while let Some(e) = s {
            let q = &mut self.cfs_rqs[self.ses[e.idx()].cfs_rq.idx()];
            q.h_nr_runnable += 1;
            q.h_nr_delayed -= 1;
            s = self.ses[e.idx()].parent;
        }
    }

    /// `finish_delayed_dequeue_entity()`: DELAY_ZERO clips positive lag.
    pub(super) fn finish_delayed_dequeue_entity(&mut self, se: SeId) {
        self.clear_delayed(se);
        if self.feat.delay_zero && self.ses[se.idx()].vlag > 0 {
            self.ses[se.idx()].vlag = 0;
        }
    }

    /// `dequeue_entity()` (6.12.117): with DELAY_DEQUEUE a sleeping entity that is
    /// not eligible stays queued (`sched_delayed`) and competes until it would
    /// be picked; returns false in that case.
    fn dequeue_entity(&mut self, cfs: CfsRqId, se: SeId, flags: u32) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        self.update_curr(cfs);
        self.clear_buddies(cfs, se);
        if flags & DEQUEUE_DELAYED == 0 {
            let delay = sleep && flags & DEQUEUE_SPECIAL == 0;
            if self.feat.delay_dequeue && delay && !self.entity_eligible(cfs, se) {
                self.update_load_avg(cfs, se, 0);
                self.set_delayed(se);
                return false;
            }
        }
        let mut action = UPDATE_TG;
        if self.ses[se.idx()]
            .task
            .is_some_and(|t| self.tasks[t.idx()].migrating)
        {
            action |= DO_DETACH;
        }
        self.update_load_avg(cfs, se, action);
        self.se_update_runnable(se);
        self.update_entity_lag(cfs, se);
        if self.feat.place_rel_deadline && !sleep {
            let e = &mut self.ses[se.idx()];
            e.deadline = e.deadline.wrapping_sub(e.vruntime());
            e.rel_deadline = true;
        }
        if self.cfs_rqs[cfs.idx()].curr != Some(se) {
            self.__dequeue_entity(cfs, se);
        }
        self.ses[se.idx()].on_rq = false;
        // account_entity_dequeue()
        let w = self.ses[se.idx()].load.weight;
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.load.sub(w);
        q.nr_running -= 1;
        if let Some(t) = self.ses[se.idx()].task {
            let cpu = self.cpu_of(cfs);
            let list = &mut self.rqs[cpu.idx()].cfs_tasks;
            if let Some(i) = list.iter().rposition(|&x| x == t) {
                vec_remove(list, i);
            }
        }
        self.update_cfs_group(se);
        if flags & DEQUEUE_DELAYED != 0 {
            self.finish_delayed_dequeue_entity(se);
        }
        true
    }

    /// `set_next_entity()`: take the entity out of the timeline, make it curr and
    /// start its slice protection.
    fn set_next_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.clear_buddies(cfs, se);
        if self.ses[se.idx()].on_rq {
            self.__dequeue_entity(cfs, se);
            self.update_load_avg(cfs, se, UPDATE_TG);
            self.set_protect_slice(cfs, se);
        }
        self.cfs_rqs[cfs.idx()].curr = Some(se);
        let now = self.now;
        let e = &mut self.ses[se.idx()];
        // update_stats_curr_start()
        e.exec_start = now;
        e.prev_sum_exec_runtime = e.sum_exec_runtime;
    }

    /// `put_prev_entity()`.
    fn put_prev_entity(&mut self, cfs: CfsRqId, prev: SeId) {
        if self.ses[prev.idx()].on_rq {
            self.update_curr(cfs);
            self.__enqueue_entity(cfs, prev);
            self.update_load_avg(cfs, prev, 0);
        }
        self.cfs_rqs[cfs.idx()].curr = None;
    }

    /// `pick_next_entity()` (6.12.117): an eligible buddy under PICK_BUDDY (6.12.0:
    /// under NEXT_BUDDY), else `pick_eevdf()`; a picked delayed entity is
    /// dequeued for good and None returned (the caller retries).
    fn pick_next_entity(&mut self, cfs: CfsRqId) -> Option<SeId> {
        if !self.feat.buddy_in_pick_eevdf && self.feat.honour_buddy() {
            if let Some(n) = self.cfs_rqs[cfs.idx()].next {
                // borrow (docs/design.md): a granted buddy is honoured
                // although ineligible.
                if self.cfs_rqs[cfs.idx()].next_borrowed || self.entity_eligible(cfs, n) {
                    return Some(n);
                }
            }
        }
        let se = self.pick_eevdf(cfs)?;
        if self.ses[se.idx()].sched_delayed {
            let cpu = self.cpu_of(cfs);
            self.dequeue_entities(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            return None;
        }
        Some(se)
    }

    /// `requeue_delayed_entity()`: a delayed entity woken before it was picked;
    /// DELAY_ZERO re-places it at zero lag if its lag turned positive.
    fn requeue_delayed_entity(&mut self, se: SeId) {
        let cfs = self.cfs_rq_of(se);
        if self.feat.delay_zero {
            self.update_entity_lag(cfs, se);
            if self.ses[se.idx()].vlag > 0 {
                let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
                self.cfs_rqs[cfs.idx()].nr_running -= 1;
                if !is_curr {
                    self.__dequeue_entity(cfs, se);
                }
                self.ses[se.idx()].vlag = 0;
                self.place_entity(cfs, se, 0);
                if !is_curr {
                    self.__enqueue_entity(cfs, se);
                }
                self.cfs_rqs[cfs.idx()].nr_running += 1;
            }
        }
        self.update_load_avg(cfs, se, 0);
        self.clear_delayed(se);
    }

    /// `enqueue_task_fair()` (6.12.117): enqueue up the hierarchy until an
    /// already-queued ancestor, then update the rest of the chain.
    pub fn enqueue_task_fair(&mut self, p: TaskId, mut flags: u32) {
        if self.is_cfs() {
            return self.cfs().enqueue_task_fair(p, flags);
        }
        if self.is_flat() {
            return self.flat_fair().enqueue_task_fair(p, flags);
        }
        let cpu = self.tasks[p.idx()].cpu;
        let mut se = Some(self.tasks[p.idx()].se);
        let task_new = flags & ENQUEUE_WAKEUP == 0;
        let mut h_nr_delayed = 0;
        if flags & ENQUEUE_DELAYED != 0 {
            self.requeue_delayed_entity(se.unwrap());
            self.hrtick_update(cpu);
            return;
        }
        if task_new {
            h_nr_delayed = self.ses[se.unwrap().idx()].sched_delayed as u32;
        }
        let mut slice = 0u64;
        while let Some(s) = se {
            if self.ses[s.idx()].on_rq {
                if self.ses[s.idx()].sched_delayed {
                    self.requeue_delayed_entity(s);
                }
                break;
            }
            let cfs = self.cfs_rq_of(s);
            if slice != 0 {
                self.ses[s.idx()].slice = slice;
                self.ses[s.idx()].custom_slice = true;
            }
            self.enqueue_entity(cfs, s, flags);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable += 1;
            }
            q.h_nr_queued += 1;
            q.h_nr_delayed += h_nr_delayed;
            flags = ENQUEUE_WAKEUP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.set_queued_slice(s, slice);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable += 1;
            }
            q.h_nr_queued += 1;
            q.h_nr_delayed += h_nr_delayed;
            se = self.parent_entity(s);
        }
        // add_nr_running(): a second runnable task overloads the root domain.
        self.rqs[cpu.idx()].nr_running += 1;
        self.balance_add_nr_running(cpu);
        if self.rqs[cpu.idx()].nr_running >= 2 {
            self.rd_overloaded = true;
        }
        self.hrtick_update(cpu);
    }

    /// `dequeue_entities()` (6.12.117). Returns -1 when the task's own entity
    /// was delayed rather than dequeued, 1 when fully dequeued, 0 otherwise.
    pub fn dequeue_entities(&mut self, cpu: CpuId, se0: SeId, mut flags: u32) -> i32 {
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let task_delayed = flags & DEQUEUE_DELAYED != 0;
        let p = self.ses[se0.idx()].task;
        let mut h_nr_queued = 0;
        let mut h_nr_delayed = 0;
        if p.is_some() {
            h_nr_queued = 1;
            if !task_sleep && !task_delayed {
                h_nr_delayed = self.ses[se0.idx()].sched_delayed as u32;
            }
        }
        let mut se = Some(se0);
        let mut slice = 0u64;
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            if !self.dequeue_entity(cfs, s, flags) {
                if p.is_some() && s == se0 {
                    return -1;
                }
                slice = self.cfs_rq_min_slice(cfs);
                break;
            }
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable -= h_nr_queued;
            }
            q.h_nr_queued -= h_nr_queued;
            q.h_nr_delayed -= h_nr_delayed;
            if q.load.weight != 0 {
                slice = self.cfs_rq_min_slice(cfs);
                se = self.parent_entity(s);
                if task_sleep {
                    if let Some(parent) = se {
                        self.set_next_buddy(parent);
                    }
                }
                break;
            }
            flags |= DEQUEUE_SLEEP;
            flags &= !(DEQUEUE_DELAYED | DEQUEUE_SPECIAL);
            se = self.parent_entity(s);
        }
        // `se` is now the first entity still queued (a delayed group entity or
        // the parent of the last dequeued one), or None past the root.
        while let Some(s) = se {
            let cfs = self.cfs_rq_of(s);
            self.update_load_avg(cfs, s, UPDATE_TG);
            self.se_update_runnable(s);
            self.update_cfs_group(s);
            self.set_queued_slice(s, slice);
            slice = self.cfs_rq_min_slice(cfs);
            let q = &mut self.cfs_rqs[cfs.idx()];
            if h_nr_delayed == 0 {
                q.h_nr_runnable -= h_nr_queued;
            }
            q.h_nr_queued -= h_nr_queued;
            q.h_nr_delayed -= h_nr_delayed;
            se = self.parent_entity(s);
        }
        self.rqs[cpu.idx()].nr_running -= h_nr_queued;
        self.balance_sub_nr_running(cpu, h_nr_queued);
        if let (Some(t), true) = (p, task_delayed) {
            // __block_task(): the delayed task finally leaves the runqueue.
            self.tasks[t.idx()].on_rq = false;
        }
        1
    }

    /// `dequeue_task_fair()`: false if the task stays queued as delayed.
    pub fn dequeue_task_fair(&mut self, p: TaskId, flags: u32) -> bool {
        if self.is_cfs() {
            return self.cfs().dequeue_task_fair(p, flags);
        }
        if self.is_flat() {
            return self.flat_fair().dequeue_task_fair(p, flags);
        }
        let cpu = self.tasks[p.idx()].cpu;
        let se = self.tasks[p.idx()].se;
        let r = self.dequeue_entities(cpu, se, flags);
        self.hrtick_update(cpu);
        r >= 0
    }

    /// `set_next_buddy()`: nominate `se` at every level of its hierarchy.
    pub fn set_next_buddy(&mut self, se: SeId) {
        let mut s = Some(se);
        while let Some(e) = s {
            if !self.ses[e.idx()].on_rq {
                return;
            }
            let q = self.cfs_rq_of(e);
            self.cfs_rqs[q.idx()].next = Some(e);
            self.cfs_rqs[q.idx()].next_borrowed = false;
            s = self.parent_entity(e);
        }
    }

    /// `find_matching_se()`: walk both entities up to siblings on a common cfs_rq.
    pub fn find_matching_se(&self, mut a: SeId, mut b: SeId) -> (SeId, SeId) {
        let (mut da, mut db) = (self.ses[a.idx()].depth, self.ses[b.idx()].depth);
        while da > db {
            a = self.parent_entity(a).expect("depth");
            da -= 1;
        }
        while db > da {
            b = self.parent_entity(b).expect("depth");
            db -= 1;
        }
        while self.cfs_rq_of(a) != self.cfs_rq_of(b) {
            a = self.parent_entity(a).expect("no common cfs_rq");
            b = self.parent_entity(b).expect("no common cfs_rq");
        }
        (a, b)
    }

    /// `check_preempt_wakeup_fair()` (6.12.117): WAKEUP_PREEMPTION with
    /// PREEMPT_SHORT cancelling curr's protection; preempt if the wakee would
    /// be picked at the level where the two hierarchies meet.
    /// With WAKEUP_PICK_PROTECT (v6.17, 9de74a9850b9 and 3a0baa8e6c57) a
    /// shorter-slice wakee is judged by `__pick_eevdf(cfs_rq, false)`, curr's
    /// protection is cancelled only if the wakee preempts, and a declined
    /// shorter-slice wakee shortens it (`update_protect_slice()`).
    pub fn check_preempt_wakeup_fair(&mut self, cpu: CpuId, p: TaskId, wake_flags: u32) {
        if self.is_cfs() {
            return self.cfs().check_preempt_wakeup(cpu, p, wake_flags);
        }
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            self.resched_curr(cpu);
            return;
        };
        let se = self.eevdf_se(curr);
        let pse = self.eevdf_se(p);
        if se == pse {
            return;
        }
        if self.feat.next_buddy && wake_flags & WF_FORK == 0 && !self.ses[pse.idx()].sched_delayed {
            self.set_next_buddy(pse);
        }
        if self.rqs[cpu.idx()].need_resched || !self.feat.wakeup_preemption {
            return;
        }
        let (se, pse) = self.find_matching_se(se, pse);
        let cfs = self.cfs_rq_of(se);
        self.update_curr(cfs);
        if self.feat.wakeup_pick_protect {
            let short =
                self.feat.preempt_short && self.ses[pse.idx()].slice < self.ses[se.idx()].slice;
            if self.__pick_eevdf(cfs, !short) == Some(pse) {
                if short {
                    self.cancel_protect_slice(se);
                }
                self.resched_curr(cpu);
            } else if self.feat.run_to_parity && short {
                self.update_protect_slice(cfs, se);
            }
            return;
        }
        if self.do_preempt_short(cfs, pse, se) {
            self.cancel_protect_slice(se);
        }
        if self.pick_eevdf(cfs) == Some(pse) {
            self.resched_curr(cpu);
        }
    }

    /// `pick_task_fair()`: walk down from the root cfs_rq picking at each level.
    pub fn pick_task_fair(&mut self, cpu: CpuId) -> Option<TaskId> {
        if self.is_cfs() {
            return self.cfs().pick_task_fair(cpu);
        }
        if self.is_flat() {
            return self.flat_fair().pick_task_fair(cpu);
        }
        'again: loop {
            let mut cfs = self.rqs[cpu.idx()].cfs;
            if self.cfs_rqs[cfs.idx()].nr_running == 0 {
                return None;
            }
            loop {
                if self.queued_curr(cfs).is_some() {
                    self.update_curr(cfs);
                }
                let Some(se) = self.pick_next_entity(cfs) else {
                    continue 'again;
                };
                match self.ses[se.idx()].my_q {
                    Some(q) => cfs = q,
                    None => return self.ses[se.idx()].task,
                }
            }
        }
    }

    /// `pick_next_task_fair()` minus the newidle balance (done by the caller):
    /// pick, then put_prev/set_next only on the levels that differ.
    pub fn pick_next_task_fair(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        if self.is_cfs() {
            return self.cfs().pick_next_task_fair(cpu, prev);
        }
        if self.is_flat() {
            return self.flat_fair().pick_next_task_fair(cpu, prev);
        }
        let p = self.pick_task_fair(cpu)?;
        match prev {
            Some(prev) if prev != p => {
                switch_levels(self, p, prev, Self::put_prev_entity, Self::set_next_entity);
                self.cfs_tasks_move_to_head(cpu, p);
                self.hrtick_start_fair(cpu, p);
            }
            Some(_) => {}
            None => {
                self.set_next_task_fair(cpu, p);
            }
        }
        Some(p)
    }

    /// `put_prev_task_fair()`.
    pub fn put_prev_task_fair(&mut self, prev: TaskId) {
        if self.is_cfs() {
            return self.cfs().put_prev_task_fair(prev);
        }
        if self.is_flat() {
            return self.flat_fair().put_prev_task_fair(prev);
        }
        let mut s = Some(self.tasks[prev.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.put_prev_entity(cfs, e);
            s = self.parent_entity(e);
        }
    }

    /// `__set_next_task_fair()`'s list move: the picked task goes to the
    /// head of `rq->cfs_tasks` (most recently used).
    pub(super) fn cfs_tasks_move_to_head(&mut self, cpu: CpuId, p: TaskId) {
        let list = &mut self.rqs[cpu.idx()].cfs_tasks;
        if list.last() == Some(&p) {
            return;
        }
        if let Some(i) = list.iter().rposition(|&x| x == p) {
            list.remove(i);
            list.push(p);
        }
    }

    /// `set_next_task_fair()`.
    pub fn set_next_task_fair(&mut self, cpu: CpuId, p: TaskId) {
        if self.is_cfs() {
            return self.cfs().set_next_task_fair(cpu, p);
        }
        if self.is_flat() {
            return self.flat_fair().set_next_task_fair(cpu, p);
        }
        self.cfs_tasks_move_to_head(cpu, p);
        let mut s = Some(self.tasks[p.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.set_next_entity(cfs, e);
            s = self.parent_entity(e);
        }
        self.hrtick_start_fair(cpu, p);
    }

    /// Kuba Piecuch's RFC (seed 003): with `yield_interval` set, a
    /// `sched_yield()` within that interval of the task's last one is
    /// throttled (counted, and the caller does not reschedule). Shared by the
    /// EEVDF and CFS `yield_task_fair()`, after their `clear_buddies()`.
    pub(super) fn yield_interval_throttled(&mut self, curr: TaskId) -> bool {
        let interval = self.yield_cfg.yield_interval_ns;
        if interval == 0 {
            return false;
        }
        let now = self.now;
        let t = &mut self.tasks[curr.idx()];
        if now < t.last_yield.saturating_add(interval) {
            self.yield_stats.yields_throttled += 1;
            return true;
        }
        t.last_yield = now;
        false
    }

    /// `yield_task_fair()` (6.12.117): charge the yielder and, with FORFEIT_YIELD
    /// (79104becf42b), forfeit the rest of its request if it is eligible:
    /// v = deadline, then a new deadline. Without it (6.12.0) the yielder keeps
    /// its vruntime and its deadline moves one slice later
    /// (`se->deadline += calc_delta_fair(se->slice, se)`).
    ///
    /// Returns false when the caller should not `schedule()`: a single task
    /// on the rq, or a yield throttled by `yield_interval` (Kuba Piecuch's
    /// RFC, seed 003: the bool return and the throttle after
    /// `clear_buddies()`). With the `kpn-walk` policy the forfeit is K Prateek
    /// Nayak's hierarchical loop instead.
    pub fn yield_task_fair(&mut self, cpu: CpuId) -> bool {
        if self.is_cfs() {
            return self.cfs().yield_task_fair(cpu);
        }
        self.yield_rq[cpu.idx()].yield_left_vns = 0;
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            return false;
        };
        if self.rqs[cpu.idx()].nr_running == 1 {
            return false;
        }
        let se = self.eevdf_se(curr);
        let cfs = self.cfs_rq_of(se);
        self.clear_buddies(cfs, se);
        if self.yield_interval_throttled(curr) {
            return false;
        }
        self.update_curr(cfs);
        let e = &self.ses[se.idx()];
        let left = e.deadline.wrapping_sub(e.vruntime()) as i64;
        self.yield_rq[cpu.idx()].yield_left_vns = left.max(0) as u64;
        if self.yield_policy_forfeit(se) {
            // The policy did the forfeit its own way.
        } else if !self.feat.forfeit_yield {
            let e = &mut self.ses[se.idx()];
            e.deadline = e.deadline.wrapping_add(calc_delta_fair(e.slice, &e.load));
        } else if self.entity_eligible(cfs, se) {
            let d = self.ses[se.idx()].deadline;
            self.ses[se.idx()].set_vruntime(d, VruntimeStep::Forfeit);
            self.update_deadline(cfs, se);
        }
        self.yield_rq[cpu.idx()].yielding = Some(curr);
        true
    }

    /// `yield_to_task_fair()` (6.12.117): nominate the target as buddy along its
    /// hierarchy, run the `[host.yield] yield_to` policy (where the seed hooks
    /// its debooster), then yield; `deboost` (the series' YIELD_TO_PENALTY)
    /// and `borrow` (YIELD_TO_BORROW) run after the yield, as in the series.
    pub fn yield_to_task_fair(&mut self, cpu: CpuId, p: TaskId) -> bool {
        if self.is_cfs() {
            return self.cfs().yield_to_task_fair(cpu, p);
        }
        let se = self.eevdf_se(p);
        if !self.ses[se.idx()].on_rq {
            return false;
        }
        self.set_next_buddy(se);
        self.yield_to_policy(cpu, p);
        self.yield_task_fair(cpu);
        self.yield_to_policy_after_yield(cpu, p);
        true
    }

    /// `task_tick_fair()` / `entity_tick()`: charge and re-weight up the chain.
    /// `queued` is the HRTICK expiry: reschedule outright.
    pub fn task_tick_fair(&mut self, cpu: CpuId, curr: TaskId, queued: bool) {
        if self.is_cfs() {
            return self.cfs().task_tick_fair(cpu, curr, queued);
        }
        if self.is_flat() {
            return self.flat_fair().task_tick_fair(cpu, curr, queued);
        }
        let mut s = Some(self.tasks[curr.idx()].se);
        while let Some(e) = s {
            let cfs = self.cfs_rq_of(e);
            self.update_curr(cfs);
            self.update_load_avg(cfs, e, UPDATE_TG);
            self.update_cfs_group(e);
            if queued {
                self.resched_curr(cpu);
                return;
            }
            s = self.parent_entity(e);
        }
    }

    /// `hrtick_start_fair()`: with HRTICK, arm the per-CPU timer for the end of
    /// the current slice (`slice - ran`).
    pub fn hrtick_start_fair(&mut self, cpu: CpuId, p: TaskId) {
        if !self.feat.hrtick {
            return;
        }
        let root = self.rqs[cpu.idx()].cfs;
        if self.cfs_rqs[root.idx()].h_nr_queued > 1 {
            let e = &self.ses[self.eevdf_se(p).idx()];
            let ran = e.sum_exec_runtime - e.prev_sum_exec_runtime;
            let delta = e.slice as i64 - ran as i64;
            if delta < 0 {
                if self.rqs[cpu.idx()].curr == Some(p) {
                    self.resched_curr(cpu);
                }
                return;
            }
            self.hrtick_requests.push((cpu, self.now + delta as u64));
        }
    }

    /// `hrtick_update()`.
    pub(super) fn hrtick_update(&mut self, cpu: CpuId) {
        if !self.feat.hrtick {
            return;
        }
        if let Some(c) = self.rqs[cpu.idx()].curr {
            self.hrtick_start_fair(cpu, c);
        }
    }

    /// Is the task runnable-queued (not delayed) and not running?
    pub fn task_is_waiting(&self, p: TaskId) -> bool {
        let t = &self.tasks[p.idx()];
        t.state == TaskState::Running && t.on_rq && !t.on_cpu
    }
}

/// The hierarchy walk of `pick_next_task_fair()`'s simple path (Linux 6.1
/// and 6.12 alike, kernel/sched/fair.c): from `next`'s and `prev`'s task
/// entities up to the first cfs_rq they share (the `is_same_group()`
/// climb), `put` on each level of prev's that differs and `set` on each of
/// next's, in the kernel's order, then both on the shared queue. One walk
/// for every preset; each gives its own `put_prev_entity()` /
/// `set_next_entity()` (`S` is the scheduler or a preset's view of it).
#[inline]
pub(super) fn switch_levels<S: BorrowMut<Scheduler>>(
    s: &mut S,
    next: TaskId,
    prev: TaskId,
    mut put: impl FnMut(&mut S, CfsRqId, SeId),
    mut set: impl FnMut(&mut S, CfsRqId, SeId),
) {
    let k: &Scheduler = (*s).borrow();
    let (mut se, mut pse) = (k.tasks[next.idx()].se, k.tasks[prev.idx()].se);
    loop {
        let k: &Scheduler = (*s).borrow();
        let (cs, cp) = (k.cfs_rq_of(se), k.cfs_rq_of(pse));
        if cs == cp {
            put(s, cs, pse);
            set(s, cs, se);
            return;
        }
        let (sd, pd) = (k.ses[se.idx()].depth, k.ses[pse.idx()].depth);
        if sd <= pd {
            put(s, cp, pse);
            pse = (*s).borrow().parent_entity(pse).expect("depth");
        }
        if sd >= pd {
            set(s, cs, se);
            se = (*s).borrow().parent_entity(se).expect("depth");
        }
    }
}
