//! Linux 6.1 (CFS): the scheduler sysctls `sysctl_sched_latency`,
//! `sysctl_sched_min_granularity`, `sysctl_sched_wakeup_granularity` and
//! `sched_nr_latency`, scaled by `get_update_sysctl_factor()` under
//! SCHED_TUNABLESCALING_LOG (`sysctl_sched_tunable_scaling` = 1, 6.1's
//! default).

use crate::sched::SchedConfig;

/// `normalized_sysctl_sched_latency` (ns).
pub const NORMALIZED_SYSCTL_SCHED_LATENCY: u64 = 6_000_000;
/// `normalized_sysctl_sched_min_granularity` (ns).
pub const NORMALIZED_SYSCTL_SCHED_MIN_GRANULARITY: u64 = 750_000;
/// `normalized_sysctl_sched_wakeup_granularity` (ns).
pub const NORMALIZED_SYSCTL_SCHED_WAKEUP_GRANULARITY: u64 = 1_000_000;
/// `sched_nr_latency`: latency / min_granularity (the scaling cancels).
pub const SCHED_NR_LATENCY: u64 = 8;

/// The scaled sysctls of one host (what `update_sysctl()` sets at boot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsTunables {
    pub(crate) sched_latency: u64,
    pub(crate) sched_min_granularity: u64,
    pub(crate) sched_wakeup_granularity: u64,
}

/// Linux 6.1 (CFS): `get_update_sysctl_factor()` under
/// SCHED_TUNABLESCALING_LOG: 1 + ilog2(min(ncpus, 8)).
pub fn get_update_sysctl_factor(nr_cpus: u32) -> u64 {
    let cpus = nr_cpus.clamp(1, 8);
    1 + (31 - cpus.leading_zeros()) as u64
}

/// Linux 6.1 (CFS): `update_sysctl()`: each tunable is its normalized value
/// times the factor.
pub fn update_sysctl(nr_cpus: u32) -> CfsTunables {
    let factor = get_update_sysctl_factor(nr_cpus);
    CfsTunables {
        sched_latency: factor * NORMALIZED_SYSCTL_SCHED_LATENCY,
        sched_min_granularity: factor * NORMALIZED_SYSCTL_SCHED_MIN_GRANULARITY,
        sched_wakeup_granularity: factor * NORMALIZED_SYSCTL_SCHED_WAKEUP_GRANULARITY,
    }
}

impl SchedConfig {
    /// Linux 6.1 (CFS): the tunables of this host (`update_sysctl()`).
    pub fn cfs_tunables(&self) -> CfsTunables {
        update_sysctl(self.nr_cpus)
    }
}
