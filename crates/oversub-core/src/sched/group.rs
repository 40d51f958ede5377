//! Task-group weights: `calc_group_shares()`, `update_cfs_group()`,
//! `reweight_entity()`/`reweight_eevdf()` and the load-average plumbing that
//! feeds them (`update_tg_load_avg()`; the PELT side is in `load_avg`), after
//! kernel/sched/fair.c of Linux 6.12.117 (CONFIG_FAIR_GROUP_SCHED, CONFIG_SMP).

use super::entity::VruntimeStep;
use super::ids::{CfsRqId, SeId};
use super::weight::{scale_load_down, MIN_SHARES};
use super::{Scheduler, ROOT_GROUP};

impl Scheduler {
    /// `update_tg_load_avg()`: propagate this CPU's contribution to `tg->load_avg`
    /// when it moved by more than 1/64, at most once per ms.
    pub(super) fn update_tg_load_avg(&mut self, cfs: CfsRqId) {
        let now = self.now;
        let q = &mut self.cfs_rqs[cfs.idx()];
        if q.tg == ROOT_GROUP {
            return;
        }
        if now.saturating_sub(q.last_update_tg_load_avg) < 1_000_000
            && q.last_update_tg_load_avg != 0
        {
            return;
        }
        let delta = q.avg.load_avg as i64 - q.tg_load_avg_contrib;
        if delta.abs() > q.tg_load_avg_contrib / 64 {
            q.tg_load_avg_contrib = q.avg.load_avg as i64;
            q.last_update_tg_load_avg = now.max(1);
            let tg = q.tg;
            self.groups[tg.idx()].load_avg += delta;
        }
    }

    /// `calc_group_shares()`: this CPU's share of `tg->shares`, in proportion to
    /// its load (max of instantaneous weight and PELT average) over the group's
    /// total, clamped to [MIN_SHARES, tg->shares].
    pub fn calc_group_shares(&self, cfs: CfsRqId) -> u64 {
        let q = &self.cfs_rqs[cfs.idx()];
        let tg = &self.groups[q.tg.idx()];
        let tg_shares = tg.shares as i64;
        let load = (scale_load_down(q.load.weight) as i64).max(q.avg.load_avg as i64);
        let mut tg_weight = tg.load_avg;
        tg_weight -= q.tg_load_avg_contrib;
        tg_weight += load;
        let mut shares = tg_shares * load;
        if tg_weight != 0 {
            shares /= tg_weight;
        }
        shares.clamp(MIN_SHARES as i64, tg_shares) as u64
    }

    /// `update_cfs_group()`: re-weight a group entity from its queue's state; an
    /// empty queue keeps its weight (matters for DELAY_DEQUEUE). Linux 6.1
    /// (CFS) re-weights an empty queue's entity too.
    pub fn update_cfs_group(&mut self, se: SeId) {
        let Some(gq) = self.ses[se.idx()].my_q else {
            return;
        };
        if self.cfs_rqs[gq.idx()].load.weight == 0 && self.class.keeps_empty_group_weight() {
            return;
        }
        let shares = self.calc_group_shares(gq);
        if self.ses[se.idx()].load.weight != shares {
            let cfs = self.cfs_rq_of(se);
            self.reweight_entity(cfs, se, shares);
        }
    }

    /// `reweight_entity()`. Linux 6.1 (CFS): `reweight_cfs_entity()`.
    pub(in crate::sched) fn reweight_entity_eevdf(&mut self, cfs: CfsRqId, se: SeId, weight: u64) {
        let is_curr = self.cfs_rqs[cfs.idx()].curr == Some(se);
        let mut avruntime = 0;
        let on_rq = self.ses[se.idx()].on_rq;
        if on_rq {
            self.update_curr(cfs);
            avruntime = self.avg_vruntime(cfs);
            if !is_curr {
                self.dequeue_from_timeline(cfs, se);
            }
            let w = self.ses[se.idx()].load.weight;
            self.cfs_rqs[cfs.idx()].load.sub(w);
        }
        self.dequeue_load_avg(cfs, se);
        if on_rq {
            if is_curr && self.feat.vprot_in_vlag {
                // VPROT_IN_VLAG (v6.17/v6.18): update_entity_lag() writes the
                // lag into the vlag/vprot union, so protect_slice() compares
                // curr's vruntime with its lag from now on.
                self.ses[se.idx()].vprot = self.entity_lag(avruntime, se) as u64;
            }
            self.reweight_eevdf(se, avruntime, weight);
        } else {
            let e = &mut self.ses[se.idx()];
            e.vlag = mul_div(e.vlag, e.load.weight as i64, weight as i64);
        }
        self.ses[se.idx()].load.set(weight);
        {
            // The entity's load average follows its new weight at once.
            let e = &mut self.ses[se.idx()];
            let divider = super::pelt::get_pelt_divider(&e.avg);
            e.avg.load_avg =
                (scale_load_down(weight) as u128 * e.avg.load_sum as u128 / divider as u128) as u64;
        }
        self.enqueue_load_avg(cfs, se);
        if on_rq {
            self.cfs_rqs[cfs.idx()].load.add(weight);
            if !is_curr {
                self.enqueue_into_timeline(cfs, se);
            }
        }
    }

    /// Linux 6.1 (CFS): `reweight_entity()`: charge a running entity, then
    /// swap its weight in the queue's load; its vruntime and its place in
    /// the timeline do not change.
    pub(super) fn reweight_cfs_entity(&mut self, cfs: CfsRqId, se: SeId, weight: u64) {
        let on_rq = self.ses[se.idx()].on_rq;
        if on_rq {
            if self.cfs_rqs[cfs.idx()].curr == Some(se) {
                self.update_curr(cfs);
            }
            let w = self.ses[se.idx()].load.weight;
            self.cfs_rqs[cfs.idx()].load.sub(w);
            if self.cfs_rqs[cfs.idx()].curr != Some(se) {
                // The timeline's average sums follow the weight (kept for
                // the invariant check; CFS does not read them).
                self.avg_vruntime_sub(cfs, se);
                self.ses[se.idx()].load.set(weight);
                self.avg_vruntime_add(cfs, se);
            }
        }
        self.dequeue_load_avg(cfs, se);
        self.ses[se.idx()].load.set(weight);
        {
            let e = &mut self.ses[se.idx()];
            let divider = super::pelt::get_pelt_divider(&e.avg);
            e.avg.load_avg =
                (scale_load_down(weight) as u128 * e.avg.load_sum as u128 / divider as u128) as u64;
        }
        self.enqueue_load_avg(cfs, se);
        if on_rq {
            self.cfs_rqs[cfs.idx()].load.add(weight);
        }
    }

    /// `reweight_eevdf()`: keep lag and the relative deadline across a weight
    /// change: v' = V - (V - v) w/w', d' = V + (d - V) w/w'.
    pub(super) fn reweight_eevdf(&mut self, se: SeId, avruntime: u64, weight: u64) {
        let old_weight = self.ses[se.idx()].load.weight;
        if avruntime != self.ses[se.idx()].vruntime() {
            let vlag = self.entity_lag(avruntime, se);
            let vlag = mul_div(vlag, old_weight as i64, weight as i64);
            self.ses[se.idx()]
                .set_vruntime(avruntime.wrapping_sub(vlag as u64), VruntimeStep::Reweight);
        }
        let e = &mut self.ses[se.idx()];
        let vslice = e.deadline.wrapping_sub(avruntime) as i64;
        let vslice = mul_div(vslice, old_weight as i64, weight as i64);
        e.deadline = avruntime.wrapping_add(vslice as u64);
    }
}

/// a * b / c, truncated, as the kernel's `div_s64(a * b, c)` but exact when
/// the product overflows 64 bits (then computed in 128 bits).
#[inline]
pub(super) fn mul_div(a: i64, b: i64, c: i64) -> i64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a as i128 * b as i128 / c as i128) as i64,
    }
}
