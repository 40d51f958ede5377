//! `yield_to_task_fair()` policies: upstream 6.12.117 and every version of the
//! seed's debooster and of the reviewers' alternatives, chosen per run with
//! `[host.yield] yield_to = NAME` (docs/yield-policies.md).
//!
//! Each policy runs where its source hooks it: the seed's deboosters, lag
//! credit, the charge idea and `borrow` inside `yield_to_task_fair()` after
//! `set_next_buddy()` and before `yield_task_fair()`; the series' `deboost`
//! (YIELD_TO_PENALTY) and `lag-credit` (YIELD_TO_LAG_CREDIT) after
//! `yield_task_fair()`; K Prateek Nayak's walk
//! replaces the forfeit of `yield_task_fair()` itself. One file per policy;
//! the pure decision helpers shared with the kernel series are mirrored in
//! `deboost_helpers` and `borrow_helpers` (driven by `vectors/*.json`).

pub mod borrow;
pub mod borrow_helpers;
pub mod deboost;
pub mod deboost_helpers;
pub mod kpn;
pub mod lag_credit;
pub mod lag_credit_series;

use super::core::Switch;
use super::ids::{CpuId, SeId, TaskId};
use super::Scheduler;

/// The policy of `yield_to_task_fair()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldToPolicy {
    /// 6.12.117: buddy along the hierarchy, then `yield_task_fair()`.
    Upstream,
    /// The seed's v1 debooster (2025-11-10), defects included.
    DeboostV1,
    /// The seed's v2 debooster (2025-12-19), defects included.
    DeboostV2,
    /// What `kernel/patches` implements as YIELD_TO_PENALTY (patch 0004,
    /// vectors/deboost_*.json).
    Deboost,
    /// Our reading of the v3 cover letter's lag credit (2026-06-12).
    LagCreditV3,
    /// What `kernel/patches` implements as YIELD_TO_LAG_CREDIT (patch 0005,
    /// `yield_to_lag_credit()`).
    LagCredit,
    /// K Prateek Nayak's hierarchical `yield_task_fair()` walk.
    KpnWalk,
    /// K Prateek Nayak's "account the lost time to the target".
    KpnCharge,
    /// docs/design.md section 1.
    Borrow,
}

impl YieldToPolicy {
    pub const ALL: [YieldToPolicy; 9] = [
        YieldToPolicy::Upstream,
        YieldToPolicy::DeboostV1,
        YieldToPolicy::DeboostV2,
        YieldToPolicy::Deboost,
        YieldToPolicy::LagCreditV3,
        YieldToPolicy::LagCredit,
        YieldToPolicy::KpnWalk,
        YieldToPolicy::KpnCharge,
        YieldToPolicy::Borrow,
    ];

    pub fn name(self) -> &'static str {
        match self {
            YieldToPolicy::Upstream => "upstream",
            YieldToPolicy::DeboostV1 => "deboost-v1",
            YieldToPolicy::DeboostV2 => "deboost-v2",
            YieldToPolicy::Deboost => "deboost",
            YieldToPolicy::LagCreditV3 => "lag-credit-v3",
            YieldToPolicy::LagCredit => "lag-credit",
            YieldToPolicy::KpnWalk => "kpn-walk",
            YieldToPolicy::KpnCharge => "kpn-charge",
            YieldToPolicy::Borrow => "borrow",
        }
    }

    pub fn parse(s: &str) -> Option<YieldToPolicy> {
        YieldToPolicy::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The accepted names, comma separated (for error messages).
    pub fn names() -> String {
        YieldToPolicy::ALL.map(|p| p.name()).join(", ")
    }
}

/// `[host.yield]`: the policy and every constant the seeds give, as knobs with
/// the seed's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YieldConfig {
    pub(crate) policy: YieldToPolicy,
    /// Debooster rate limit (ns, inclusive): v1/v2/deboost 6 ms; lag-credit-v3
    /// uses it for its forced reschedule, lag-credit for the whole credit.
    pub(crate) ratelimit_ns: u64,
    /// Debooster reverse-pair debounce window (ns): 600 µs.
    pub(crate) debounce_ns: u64,
    /// Penalty cap table in halves of `gran` for h_nr_queued = 2, 3, 4..6,
    /// 7..8, 9..12, other: 12, 8, 5, 4, 3, 2 (6.0x .. 1.0x).
    pub(crate) cap_halves: [u32; 6],
    /// Kuba Piecuch's `sched_yield()` throttle (ns, 0 = off).
    pub(crate) yield_interval_ns: u64,
}

impl Default for YieldConfig {
    fn default() -> YieldConfig {
        YieldConfig {
            policy: YieldToPolicy::Upstream,
            ratelimit_ns: deboost_helpers::YIELD_PENALTY_RATELIMIT_NS,
            debounce_ns: deboost_helpers::YIELD_PENALTY_DEBOUNCE_NS,
            cap_halves: deboost_helpers::CAP_HALVES,
            yield_interval_ns: 0,
        }
    }
}

/// Per-rq state of the policies (the seed's `struct rq` fields).
#[derive(Clone, Debug, Default)]
pub struct YieldRqState {
    /// deboost-v1/v2: the seed's per-rq rate-limit / debounce state (the
    /// series' `deboost` keeps it per common-ancestor cfs_rq,
    /// `CfsRq::yield_penalty`).
    pub deboost: deboost_helpers::YieldPenaltyState,
    /// The task whose `yield_task_fair()` asked for the coming `schedule()`
    /// (LAST_BUDDY skips it).
    pub yielding: Option<TaskId>,
    /// lag-credit-v3: last forced reschedule (0 = never).
    pub last_forced_resched: u64,
    /// What `yield_task_fair()` found left of the yielder's slice, in its
    /// entity's virtual time (`deadline - vruntime` after `update_curr()`,
    /// before the forfeit; 0 if none): the borrow budget's source.
    pub yield_left_vns: u64,
    /// borrow: a granted borrow waiting for its target to be picked.
    pub borrow_pending: Option<(TaskId, u64)>,
    /// borrow: the running target and the budget it may run since picked.
    pub borrow_running: Option<(TaskId, u64)>,
}

/// Counters of what the policies did (reported per run).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct YieldStats {
    /// Penalties applied by a debooster.
    pub deboosts_applied: u64,
    /// Of those, `deboost` penalties applied to a reverse pair (the
    /// debounce's smaller penalty, past the rate limit).
    pub deboosts_reverse: u64,
    /// Of those, `deboost` penalties cut to the lag room (review item H3).
    pub deboosts_clamped: u64,
    /// Debooster attempts refused by the rate limit (lag-credit-v3: forced
    /// reschedules refused by it).
    pub deboosts_rate_limited: u64,
    /// Levels credited by lag-credit-v3 / lag-credit / kpn-charge.
    pub credits: u64,
    /// Borrows granted (at least one level up to the LCA allowed; the
    /// target may still lose at a level where it was refused).
    pub borrows: u64,
    /// Borrowed runs ended by the budget bound.
    pub borrow_bounds_hit: u64,
    /// sched_yield() calls throttled by yield_interval.
    pub yields_throttled: u64,
    /// sched_yield() calls that reached `schedule()` (neither throttled nor
    /// alone on their rq): what the RFC's benchmark counts as unthrottled.
    pub yields_scheduled: u64,
}

/// The hook set: every place where the scheduler lets a `yield_to` policy
/// act. Nothing outside `sched/yield_to/` names a policy.
impl Scheduler {
    /// In `yield_task_fair()`, instead of the forfeit: true when the policy
    /// did its own (kpn-walk's hierarchical loop).
    pub(crate) fn yield_policy_forfeit(&mut self, se: SeId) -> bool {
        if self.yield_cfg.policy != YieldToPolicy::KpnWalk {
            return false;
        }
        self.yield_task_fair_kpn_walk(se);
        true
    }

    /// After the `schedule()` of a successful `yield_to()` (borrow arms its
    /// bound when its target was switched in).
    pub(crate) fn yield_policy_after_schedule(&mut self, cpu: CpuId, sw: Option<Switch>) {
        self.borrow_after_schedule(cpu, sw);
    }

    /// From `hrtick()`: the policies' timer shares the HRTICK timer
    /// (borrow's bound). Returns whether the expiry was theirs.
    pub(crate) fn yield_policy_timer(&mut self, cpu: CpuId) -> bool {
        self.borrow_bound(cpu)
    }

    /// The policy step of `yield_to_task_fair()` between `set_next_buddy()` and
    /// `yield_task_fair()` (where the seed hooks its debooster).
    pub(super) fn yield_to_policy(&mut self, cpu: CpuId, p: TaskId) {
        match self.yield_cfg.policy {
            YieldToPolicy::Upstream | YieldToPolicy::KpnWalk => {}
            YieldToPolicy::DeboostV1 => self.yield_to_deboost_v1(cpu, p),
            YieldToPolicy::DeboostV2 => self.yield_to_deboost_v2(cpu, p),
            // The series runs its penalty and its borrow after
            // yield_task_fair().
            YieldToPolicy::Deboost | YieldToPolicy::Borrow | YieldToPolicy::LagCredit => {}
            YieldToPolicy::LagCreditV3 => self.yield_to_lag_credit(cpu, p),
            YieldToPolicy::KpnCharge => self.yield_to_kpn_charge(cpu, p),
        }
    }

    /// The policy step of `yield_to_task_fair()` after `yield_task_fair()`
    /// (where the kernel series runs its policies, on the clock
    /// `yield_task_fair()` updated).
    pub(super) fn yield_to_policy_after_yield(&mut self, cpu: CpuId, p: TaskId) {
        match self.yield_cfg.policy {
            YieldToPolicy::Deboost => {
                self.yield_to_penalty(cpu, p);
            }
            // Patch 0003: the budget is what __yield_task_fair() found left of
            // the yielder's slice before its forfeit (yield_left_vns).
            YieldToPolicy::Borrow => self.yield_to_borrow(cpu, p),
            // Patch 0005.
            YieldToPolicy::LagCredit => {
                self.yield_to_lag_credit_series(cpu, p);
            }
            _ => {}
        }
    }
}
