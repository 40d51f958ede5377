//! Scheduler feature switches (kernel/sched/features.h) and kernel presets.
//!
//! Every behaviour that differs between the kernels we model is a switch here,
//! never a silent choice. A preset fixes the defaults of one kernel version;
//! a scenario may override any switch by its kernel name in `[host.features]`.

use std::fmt;

/// The kernel versions the host scheduler model can follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelPreset {
    /// Linux 6.1 (CFS), the LTS before EEVDF (Debian's linux-source-6.1,
    /// 6.1.192): the fair class is the CFS model of `sched::cfs`, not EEVDF
    /// (docs/model.md, "CFS (Linux 6.1)").
    V6_1,
    /// Vanilla v6.12.0: NEXT_BUDDY gates the buddy pick, no forfeit on yield.
    V6_12_0,
    /// Debian 6.12.117 (the project's base): PICK_BUDDY and forfeit backported.
    V6_12_117,
    /// v6.18 (the conform host's mainline base): 6.12.117 plus the v6.13
    /// wakeup of a delayed task on a busy CPU (TTWU_DEQUEUE_DELAYED) and the
    /// v6.17 run-to-parity rework (VPROT in the vlag union, WAKEUP_PICK_PROTECT,
    /// RESCHED_UNPROTECTED). docs/model.md, "Kernel versions", lists what of
    /// 6.13..6.18 is and is not switched here.
    V6_18,
    /// v6.19: 6.18 plus PICK_BUDDY inside `__pick_eevdf()` (523afd46059d).
    V6_19,
    /// Peter Zijlstra's "sched/eevdf: Move to a single runqueue" (v3, 5 Jun
    /// 2026, branch sched/flat of his queue tree) on the model's base
    /// 6.12.117: one EEVDF runqueue per CPU over tasks, each task weighted
    /// by its hierarchical fraction (`sched::flat`; docs/model.md, "The
    /// flat preset (sched/flat)"). Feature defaults are 6.12.117's.
    Flat,
}

impl KernelPreset {
    pub const ALL: [KernelPreset; 6] = [
        KernelPreset::V6_1,
        KernelPreset::V6_12_0,
        KernelPreset::V6_12_117,
        KernelPreset::V6_18,
        KernelPreset::V6_19,
        KernelPreset::Flat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KernelPreset::V6_1 => "6.1",
            KernelPreset::V6_12_0 => "6.12.0",
            KernelPreset::V6_12_117 => "6.12.117",
            KernelPreset::V6_18 => "6.18",
            KernelPreset::V6_19 => "6.19",
            KernelPreset::Flat => "flat",
        }
    }

    /// The preset names, comma-separated (for error messages).
    pub fn names() -> String {
        KernelPreset::ALL.map(|p| p.name()).join(", ")
    }

    pub fn parse(s: &str) -> Option<KernelPreset> {
        KernelPreset::ALL.into_iter().find(|p| p.name() == s)
    }

    /// `sched_feat` names this kernel does not have (a scenario may not set
    /// them on this preset).
    pub fn absent_features(self) -> &'static [&'static str] {
        match self {
            // 6.1 is CFS: none of the EEVDF switches exist. HRTICK exists in
            // 6.1 (off by default) but is not modelled for CFS.
            KernelPreset::V6_1 => &[
                "PLACE_LAG",
                "PLACE_DEADLINE_INITIAL",
                "PLACE_REL_DEADLINE",
                "RUN_TO_PARITY",
                "PREEMPT_SHORT",
                "PICK_BUDDY",
                "DELAY_DEQUEUE",
                "DELAY_ZERO",
                "HRTICK",
                "FORFEIT_YIELD",
                "PICK_BUDDY_IN_PICK_EEVDF",
                "VPROT",
                "VPROT_IN_VLAG",
                "WAKEUP_PICK_PROTECT",
                "RESCHED_UNPROTECTED",
                "TTWU_DEQUEUE_DELAYED",
                "NEXT_BUDDY_GATES_PICK",
            ],
            // PICK_BUDDY came with 2a77e4be12cb (v6.13, backported to 6.12.y);
            // the CFS placement switches went with EEVDF (v6.6).
            KernelPreset::V6_12_0 => &["PICK_BUDDY", "GENTLE_FAIR_SLEEPERS", "START_DEBIT"],
            _ => &["GENTLE_FAIR_SLEEPERS", "START_DEBIT"],
        }
    }

    /// The feature defaults of this kernel.
    pub fn features(self) -> SchedFeatures {
        let base = SchedFeatures {
            place_lag: true,
            place_deadline_initial: true,
            place_rel_deadline: true,
            run_to_parity: true,
            preempt_short: true,
            next_buddy: false,
            pick_buddy: true,
            cache_hot_buddy: true,
            delay_dequeue: true,
            delay_zero: true,
            wakeup_preemption: true,
            hrtick: false,
            forfeit_yield: true,
            buddy_in_pick_eevdf: false,
            vprot: false,
            vprot_in_vlag: false,
            wakeup_pick_protect: false,
            resched_unprotected: false,
            ttwu_dequeue_delayed: false,
            next_buddy_gates_pick: false,
            wa_idle: true,
            wa_weight: true,
            wa_bias: true,
            sis_util: true,
            last_buddy: false,
            gentle_fair_sleepers: false,
            start_debit: false,
            pipe_wake_writer_on_free: false,
        };
        match self {
            // kernel/sched/features.h of 6.1: GENTLE_FAIR_SLEEPERS,
            // START_DEBIT, LAST_BUDDY, CACHE_HOT_BUDDY, WAKEUP_PREEMPTION,
            // WA_*, SIS_UTIL on; NEXT_BUDDY, HRTICK off. The EEVDF switches
            // are off (absent in 6.1, see `absent_features`).
            KernelPreset::V6_1 => SchedFeatures {
                place_lag: false,
                place_deadline_initial: false,
                place_rel_deadline: false,
                run_to_parity: false,
                preempt_short: false,
                pick_buddy: false,
                delay_dequeue: false,
                delay_zero: false,
                forfeit_yield: false,
                last_buddy: true,
                gentle_fair_sleepers: true,
                start_debit: true,
                ..base
            },
            KernelPreset::V6_12_0 => SchedFeatures {
                pick_buddy: false,
                forfeit_yield: false,
                next_buddy_gates_pick: true,
                ..base
            },
            // sched/flat changes the runqueue, not the switches: the preset
            // is 6.12.117's defaults (its own base, tip of June 2026, is not
            // modelled; its 6.13..6.19 switches may be set on it).
            KernelPreset::V6_12_117 | KernelPreset::Flat => base,
            KernelPreset::V6_18 => SchedFeatures {
                vprot: true,
                vprot_in_vlag: true,
                wakeup_pick_protect: true,
                resched_unprotected: true,
                ttwu_dequeue_delayed: true,
                pipe_wake_writer_on_free: true,
                ..base
            },
            // 6.19 is 6.18 plus the buddy check inside `__pick_eevdf()`.
            KernelPreset::V6_19 => SchedFeatures {
                buddy_in_pick_eevdf: true,
                ..KernelPreset::V6_18.features()
            },
        }
    }
}

impl fmt::Display for KernelPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `sched_feat()` switches plus the version-dependent behaviours that are not
/// sched_feat bits in the kernel (named in upper case like the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedFeatures {
    pub(crate) place_lag: bool,
    pub(crate) place_deadline_initial: bool,
    pub(crate) place_rel_deadline: bool,
    pub(crate) run_to_parity: bool,
    pub(crate) preempt_short: bool,
    /// 6.12.0: also gates honouring `cfs_rq->next` at pick. 6.12.117+: only
    /// wakeup-preemption buddy nomination.
    pub(crate) next_buddy: bool,
    /// Honour `cfs_rq->next` at pick if eligible (2a77e4be12cb; absent in 6.12.0).
    pub(crate) pick_buddy: bool,
    pub(crate) cache_hot_buddy: bool,
    pub(crate) delay_dequeue: bool,
    pub(crate) delay_zero: bool,
    pub(crate) wakeup_preemption: bool,
    /// Slice expiry enforced by a high-resolution timer instead of the tick.
    pub(crate) hrtick: bool,
    /// FORFEIT_YIELD: `yield_task_fair()` sets vruntime = deadline when eligible
    /// (79104becf42b). Not a sched_feat bit in the kernel.
    pub(crate) forfeit_yield: bool,
    /// PICK_BUDDY_IN_PICK_EEVDF: the buddy check sits in `__pick_eevdf()` after the
    /// single-entity shortcut and before curr/RUN_TO_PARITY (523afd46059d, v6.19).
    pub(crate) buddy_in_pick_eevdf: bool,
    /// VPROT: slice protection ends at `se->vprot` = min(deadline, v + the
    /// queue's minimum slice) (v6.17: 74eec63661d4 "Fix NO_RUN_TO_PARITY
    /// case", 052c3d87c82e "Limit run to parity to the min slice of enqueued
    /// entities", 3a0baa8e6c57 "Fix entity's lag with run to parity") instead
    /// of the 6.12 "vlag == deadline" stash.
    pub(crate) vprot: bool,
    /// VPROT_IN_VLAG: from v6.17 `vprot` is a union with `vlag`
    /// (74eec63661d4), so `reweight_entity()`'s `update_entity_lag()` of a
    /// queued curr overwrites it with the lag. 80390ead2080 "Separate
    /// se->vlag from se->vprot" (tip sched/core 2025-12-15, after the v6.19
    /// merge window, so v7.0) gave vprot a field of its own.
    pub(crate) vprot_in_vlag: bool,
    /// WAKEUP_PICK_PROTECT: `check_preempt_wakeup_fair()` asks
    /// `__pick_eevdf(cfs_rq, !do_preempt_short)`, cancels curr's protection
    /// only when it preempts, and otherwise shortens it with
    /// `update_protect_slice()` (v6.17: 9de74a9850b9 "Remove spurious shorter
    /// slice preemption", 3a0baa8e6c57). Off: 6.12's `do_preempt_short()`,
    /// which cancels the protection even when the wakee is not picked.
    pub(crate) wakeup_pick_protect: bool,
    /// RESCHED_UNPROTECTED: `update_curr()` reschedules whenever curr's
    /// protection has ended and others are queued (v6.17: 0b9ca2dcabc3
    /// "Always trigger resched at the end of a protected period"). Off:
    /// only on deadline expiry or 6.12's `did_preempt_short()`.
    pub(crate) resched_unprotected: bool,
    /// TTWU_DEQUEUE_DELAYED: `ttwu_runnable()` fully dequeues a delayed task
    /// woken on a CPU with other tasks (nr_running > 1) when it may run on
    /// another CPU, and lets it take the whole wakeup path
    /// (`select_task_rq()`, ENQUEUE_WAKEUP placement) (d68803506ffb
    /// "sched/fair: Dequeue sched_delayed tasks when waking to a busy CPU",
    /// tip sched/urgent 2024-11-11, in v6.13; not in Debian's 6.12.117
    /// source). Off: the delayed task is re-queued where it
    /// is by `requeue_delayed_entity()`. Not a sched_feat bit in the kernel.
    pub(crate) ttwu_dequeue_delayed: bool,
    /// NEXT_BUDDY_GATES_PICK: 6.12.0's `pick_next_entity()` honours the buddy
    /// under NEXT_BUDDY (there is no PICK_BUDDY bit before 2a77e4be12cb).
    pub(crate) next_buddy_gates_pick: bool,
    /// WA_IDLE: `wake_affine()` prefers an idle waker or prev CPU.
    pub(crate) wa_idle: bool,
    /// WA_WEIGHT: `wake_affine()` compares the two CPUs' loads.
    pub(crate) wa_weight: bool,
    /// WA_BIAS: that comparison is biased towards prev by half of
    /// `imbalance_pct`.
    pub(crate) wa_bias: bool,
    /// SIS_UTIL: `select_idle_cpu()` scans as many CPUs as the LLC's idle
    /// share allows (`nr_idle_scan`, set by the load balancer).
    pub(crate) sis_util: bool,
    /// LAST_BUDDY: K Prateek Nayak's suggestion (seed 000): `schedule()`
    /// re-nominates a preempted, still runnable prev as the next buddy, so a
    /// yield_to() hint survives one pick. Not in any kernel we model (CFS had
    /// a different LAST_BUDDY until v6.6); off in every EEVDF preset. On
    /// 6.1 (CFS) it is that kernel's LAST_BUDDY: `check_preempt_wakeup()`
    /// nominates the preempted curr as `cfs_rq->last` (on by default).
    pub(crate) last_buddy: bool,
    /// GENTLE_FAIR_SLEEPERS (6.1, CFS): a waking sleeper's credit in
    /// `place_entity()` is half of `sysctl_sched_latency`.
    pub(crate) gentle_fair_sleepers: bool,
    /// START_DEBIT (6.1, CFS): a new task starts one `sched_vslice()` after
    /// `min_vruntime` (`place_entity(initial)`).
    pub(crate) start_debit: bool,
    /// PIPE_WAKE_WRITER_ON_FREE (fs/pipe.c, not the scheduler):
    /// `pipe_read()` wakes a writer only when the read released a slot of a
    /// full pipe ("pipe_read: don't wake up the writer if the pipe is still
    /// full", Oleg Nesterov, 2025; in 6.18). Off: 6.1's and 6.12's
    /// `was_full`, a writer woken by every read that began on a full pipe
    /// (`task::pipe`). Not a sched_feat bit in the kernel.
    pub(crate) pipe_wake_writer_on_free: bool,
}

/// Names accepted in `[host.features]`, in the order they are documented.
pub const FEATURE_NAMES: [&str; 28] = [
    "PLACE_LAG",
    "PLACE_DEADLINE_INITIAL",
    "PLACE_REL_DEADLINE",
    "RUN_TO_PARITY",
    "PREEMPT_SHORT",
    "NEXT_BUDDY",
    "PICK_BUDDY",
    "CACHE_HOT_BUDDY",
    "DELAY_DEQUEUE",
    "DELAY_ZERO",
    "WAKEUP_PREEMPTION",
    "HRTICK",
    "FORFEIT_YIELD",
    "PICK_BUDDY_IN_PICK_EEVDF",
    "VPROT",
    "VPROT_IN_VLAG",
    "WAKEUP_PICK_PROTECT",
    "RESCHED_UNPROTECTED",
    "TTWU_DEQUEUE_DELAYED",
    "NEXT_BUDDY_GATES_PICK",
    "WA_IDLE",
    "WA_WEIGHT",
    "WA_BIAS",
    "SIS_UTIL",
    "LAST_BUDDY",
    "GENTLE_FAIR_SLEEPERS",
    "START_DEBIT",
    "PIPE_WAKE_WRITER_ON_FREE",
];

impl SchedFeatures {
    fn slot(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "PLACE_LAG" => &mut self.place_lag,
            "PLACE_DEADLINE_INITIAL" => &mut self.place_deadline_initial,
            "PLACE_REL_DEADLINE" => &mut self.place_rel_deadline,
            "RUN_TO_PARITY" => &mut self.run_to_parity,
            "PREEMPT_SHORT" => &mut self.preempt_short,
            "NEXT_BUDDY" => &mut self.next_buddy,
            "PICK_BUDDY" => &mut self.pick_buddy,
            "CACHE_HOT_BUDDY" => &mut self.cache_hot_buddy,
            "DELAY_DEQUEUE" => &mut self.delay_dequeue,
            "DELAY_ZERO" => &mut self.delay_zero,
            "WAKEUP_PREEMPTION" => &mut self.wakeup_preemption,
            "HRTICK" => &mut self.hrtick,
            "FORFEIT_YIELD" => &mut self.forfeit_yield,
            "PICK_BUDDY_IN_PICK_EEVDF" => &mut self.buddy_in_pick_eevdf,
            "VPROT" => &mut self.vprot,
            "VPROT_IN_VLAG" => &mut self.vprot_in_vlag,
            "WAKEUP_PICK_PROTECT" => &mut self.wakeup_pick_protect,
            "RESCHED_UNPROTECTED" => &mut self.resched_unprotected,
            "TTWU_DEQUEUE_DELAYED" => &mut self.ttwu_dequeue_delayed,
            "NEXT_BUDDY_GATES_PICK" => &mut self.next_buddy_gates_pick,
            "WA_IDLE" => &mut self.wa_idle,
            "WA_WEIGHT" => &mut self.wa_weight,
            "WA_BIAS" => &mut self.wa_bias,
            "SIS_UTIL" => &mut self.sis_util,
            "LAST_BUDDY" => &mut self.last_buddy,
            "GENTLE_FAIR_SLEEPERS" => &mut self.gentle_fair_sleepers,
            "START_DEBIT" => &mut self.start_debit,
            "PIPE_WAKE_WRITER_ON_FREE" => &mut self.pipe_wake_writer_on_free,
            _ => return None,
        })
    }

    /// Sets a switch by its kernel name; false if the name is unknown.
    pub fn set(&mut self, name: &str, on: bool) -> bool {
        match self.slot(name) {
            Some(s) => {
                *s = on;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, name: &str) -> Option<bool> {
        let mut c = *self;
        c.slot(name).map(|s| *s)
    }

    /// Is a buddy honoured at pick time? (6.12.0: NEXT_BUDDY; later: PICK_BUDDY.)
    pub fn honour_buddy(&self) -> bool {
        if self.next_buddy_gates_pick {
            self.next_buddy
        } else {
            self.pick_buddy
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_differ_where_the_kernels_do() {
        let v0 = KernelPreset::V6_12_0.features();
        let v117 = KernelPreset::V6_12_117.features();
        let v18 = KernelPreset::V6_18.features();
        let v19 = KernelPreset::V6_19.features();
        assert!(!v0.pick_buddy && !v0.forfeit_yield && !v0.honour_buddy());
        assert!(v117.pick_buddy && v117.forfeit_yield && !v117.buddy_in_pick_eevdf);
        assert!(!v117.vprot && !v117.ttwu_dequeue_delayed && !v117.resched_unprotected);
        assert!(v18.vprot && v18.vprot_in_vlag && v18.ttwu_dequeue_delayed);
        assert!(v18.wakeup_pick_protect && v18.resched_unprotected && !v18.buddy_in_pick_eevdf);
        assert!(v19.buddy_in_pick_eevdf && v19.vprot && v19.forfeit_yield);
        assert!(v19.vprot_in_vlag && v19.ttwu_dequeue_delayed);
        assert!(v18.pipe_wake_writer_on_free && v19.pipe_wake_writer_on_free);
        assert!(!v117.pipe_wake_writer_on_free && !v0.pipe_wake_writer_on_free);
        assert!(!v117.hrtick && !v117.next_buddy);
        let v61 = KernelPreset::V6_1.features();
        assert!(KernelPreset::V6_1.is_cfs() && !KernelPreset::V6_12_117.is_cfs());
        assert!(v61.gentle_fair_sleepers && v61.start_debit && v61.last_buddy);
        assert!(!v61.next_buddy && !v61.hrtick && v61.wakeup_preemption && v61.cache_hot_buddy);
        assert!(!v117.gentle_fair_sleepers && !v117.start_debit && !v117.last_buddy);
        assert!(!v61.pipe_wake_writer_on_free);
    }

    #[test]
    fn every_documented_name_is_settable() {
        let mut f = KernelPreset::V6_12_117.features();
        for n in FEATURE_NAMES {
            let before = f.get(n).unwrap();
            assert!(f.set(n, !before));
            assert_eq!(f.get(n), Some(!before));
        }
        assert!(!f.set("NO_SUCH_FEATURE", true));
    }
}
