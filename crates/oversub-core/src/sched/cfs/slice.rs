//! Linux 6.1 (CFS): the period and a task's share of it: `__sched_period()`,
//! `sched_slice()` (ALT_PERIOD and BASE_SLICE, both on in 6.1) and
//! `sched_vslice()`.

use super::tunables::SCHED_NR_LATENCY;
use super::Cfs;
use crate::sched::ids::{CfsRqId, SeId};
use crate::sched::weight::{__calc_delta, calc_delta_fair, LoadWeight};

impl Cfs<'_> {
    /// Linux 6.1 (CFS): `__sched_period()`: `sysctl_sched_latency`, stretched
    /// to nr_running × min_granularity beyond `sched_nr_latency` tasks.
    pub fn __sched_period(&self, nr_running: u64) -> u64 {
        let t = self.cfg.cfs_tunables();
        if nr_running > SCHED_NR_LATENCY {
            nr_running * t.sched_min_granularity
        } else {
            t.sched_latency
        }
    }

    /// Linux 6.1 (CFS): `sched_slice()`: the period (ALT_PERIOD: from the
    /// root's `h_nr_running`, plus one for an entity not yet queued) scaled
    /// by the entity's weight share at every level of its hierarchy, at
    /// least `sysctl_sched_min_granularity` (BASE_SLICE). SCHED_IDLE
    /// entities are not modelled.
    pub fn sched_slice(&self, cfs: CfsRqId, se: SeId) -> u64 {
        let cpu = self.cfs_rqs[cfs.idx()].cpu;
        let root = self.rqs[cpu.idx()].cfs;
        let nr_running = self.cfs_rqs[root.idx()].h_nr_queued as u64;
        let on_rq = self.ses[se.idx()].on_rq;
        let mut slice = self.__sched_period(nr_running + u64::from(!on_rq));
        let mut s = Some(se);
        while let Some(e) = s {
            let ent = &self.ses[e.idx()];
            let q = &self.cfs_rqs[ent.cfs_rq.idx()];
            slice = if ent.on_rq {
                __calc_delta(slice, ent.load.weight, &q.load)
            } else {
                let lw = LoadWeight::new(q.load.weight + ent.load.weight);
                __calc_delta(slice, ent.load.weight, &lw)
            };
            s = ent.parent;
        }
        slice.max(self.cfg.cfs_tunables().sched_min_granularity)
    }

    /// Linux 6.1 (CFS): `sched_vslice()`: `sched_slice()` in virtual time.
    pub fn sched_vslice(&self, cfs: CfsRqId, se: SeId) -> u64 {
        calc_delta_fair(self.sched_slice(cfs, se), &self.ses[se.idx()].load)
    }
}
