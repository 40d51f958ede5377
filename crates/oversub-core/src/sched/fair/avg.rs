//! The EEVDF queue's weighted average and its timeline: `avg_vruntime()`,
//! `entity_lag()`, `vruntime_eligible()`, `cfs_rq_min_slice()` and
//! `__enqueue_entity()`/`__dequeue_entity()` of kernel/sched/fair.c,
//! Linux 6.12.117 (the augmented rb-tree is a sorted timeline here,
//! `sched/timeline.rs`).

use super::*;

impl Scheduler {
    /// `entity_key()`: v - zero_vruntime.
    #[inline]
    pub fn entity_key(&self, cfs: CfsRqId, se: SeId) -> i64 {
        vdiff(
            self.ses[se.idx()].vruntime(),
            self.cfs_rqs[cfs.idx()].zero_vruntime,
        )
    }

    /// `avg_vruntime_add()`.
    pub(in crate::sched) fn avg_vruntime_add(&mut self, cfs: CfsRqId, se: SeId) {
        let w = scale_load_down(self.ses[se.idx()].load.weight) as i64;
        let key = self.entity_key(cfs, se);
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime += key * w;
        q.avg_load += w;
    }

    /// `avg_vruntime_sub()`.
    pub(in crate::sched) fn avg_vruntime_sub(&mut self, cfs: CfsRqId, se: SeId) {
        let w = scale_load_down(self.ses[se.idx()].load.weight) as i64;
        let key = self.entity_key(cfs, se);
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime -= key * w;
        q.avg_load -= w;
    }

    /// `update_zero_vruntime()`: moves the reference point, keeping the sum exact.
    pub(super) fn update_zero_vruntime(&mut self, cfs: CfsRqId, delta: i64) {
        let q = &mut self.cfs_rqs[cfs.idx()];
        q.avg_vruntime -= q.avg_load * delta;
        q.zero_vruntime = q.zero_vruntime.wrapping_add(delta as u64);
    }

    /// The queue's curr if it is queued (`curr && curr->on_rq`).
    #[inline]
    pub(in crate::sched) fn queued_curr(&self, cfs: CfsRqId) -> Option<SeId> {
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
    pub(in crate::sched) fn update_entity_lag(&mut self, cfs: CfsRqId, se: SeId) {
        let v = self.avg_vruntime(cfs);
        self.ses[se.idx()].vlag = self.entity_lag(v, se);
    }

    /// The (Σ(v_i - v0)w_i, Σw_i) pair of `vruntime_eligible()`, curr included.
    #[inline]
    pub(super) fn eligibility_sums(&self, cfs: CfsRqId) -> (i64, i64) {
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
    pub(super) fn eligible_with(
        &self,
        cfs: CfsRqId,
        (avg, load): (i64, i64),
        vruntime: u64,
    ) -> bool {
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
    pub(super) fn __enqueue_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.avg_vruntime_add(cfs, se);
        let seq = self.next_enqueue_seq();
        self.ses[se.idx()].enqueue_seq = seq;
        self.timeline_insert(cfs, se);
    }

    /// `__dequeue_entity()`.
    pub(super) fn __dequeue_entity(&mut self, cfs: CfsRqId, se: SeId) {
        self.timeline_remove(cfs, se);
        self.avg_vruntime_sub(cfs, se);
    }

    /// `__dequeue_entity()` for callers outside this file (re-weighting).
    pub(in crate::sched) fn dequeue_from_timeline(&mut self, cfs: CfsRqId, se: SeId) {
        self.__dequeue_entity(cfs, se);
    }

    /// `__enqueue_entity()` for callers outside this file (re-weighting).
    pub(in crate::sched) fn enqueue_into_timeline(&mut self, cfs: CfsRqId, se: SeId) {
        self.__enqueue_entity(cfs, se);
    }

    /// Re-places a queued entity at lag `vlag` the way
    /// `requeue_delayed_entity()` does (dequeue, `place_entity()`, enqueue),
    /// for the yield policies that credit lag.
    pub(in crate::sched) fn requeue_with_lag(&mut self, cfs: CfsRqId, se: SeId, vlag: i64) {
        self.cfs_rqs[cfs.idx()].nr_running -= 1;
        self.__dequeue_entity(cfs, se);
        self.ses[se.idx()].vlag = vlag;
        self.place_entity(cfs, se, 0);
        self.__enqueue_entity(cfs, se);
        self.cfs_rqs[cfs.idx()].nr_running += 1;
    }
}
