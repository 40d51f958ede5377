//! `[host]`: CPUs, HZ, the kernel preset and its sched features, duration,
//! seed, `[host.yield]` and `[host.costs]`, validated into a [`HostSpec`].

use super::{
    yield_spec, Ctx, HostSpec, RawHost, Scenario, ScenarioError, MAX_DURATION, MAX_HOST_COST,
    MAX_SEED, MIN_DURATION,
};
use crate::engine::Nanos;
use crate::sched::features::{KernelPreset, FEATURE_NAMES};
use crate::sched::{HostCosts, SchedFeatures};

impl Scenario {
    pub(super) fn host(cx: &Ctx, h: RawHost) -> Result<HostSpec, ScenarioError> {
        let cpus = cx.int("host.cpus", h.cpus.unwrap_or(2), 1, 1024)? as u32;
        let hz = h.hz.unwrap_or(250);
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(cx.err(
                "host.hz",
                format!("{hz} is not a kernel HZ: allowed 100, 250, 300, 1000"),
            ));
        }
        let kname = h.kernel.unwrap_or_else(|| "6.12.117".into());
        let kernel = KernelPreset::parse(&kname).ok_or_else(|| {
            cx.err(
                "host.kernel",
                format!(
                    "unknown kernel preset \"{kname}\": allowed {}",
                    KernelPreset::names()
                ),
            )
        })?;
        let duration = cx.dur(
            "host.duration",
            h.duration.as_deref().unwrap_or("5s"),
            MIN_DURATION,
            MAX_DURATION,
        )?;
        let seed = h.seed.unwrap_or(1);
        if seed < 0 {
            return Err(cx.err(
                "host.seed",
                format!("{seed} is negative: allowed 0 ..= {MAX_SEED}"),
            ));
        }
        let yield_cfg = yield_spec::yield_cfg(cx, h.yield_)?;
        if kernel.is_cfs() && yield_cfg.policy != crate::sched::yield_to::YieldToPolicy::Upstream {
            return Err(cx.err(
                "host.yield.yield_to",
                format!(
                    "\"{}\" is an EEVDF policy and kernel 6.1 is CFS: allowed \"upstream\"",
                    yield_cfg.policy.name()
                ),
            ));
        }
        let mut features = kernel.features();
        set_features(cx, "host.features", kernel, &mut features, &h.features)?;
        let mut costs = HostCosts::default();
        for (k, v) in &h.costs {
            let field = format!("host.costs.{k}");
            let Some(slot) = costs.get_mut(k) else {
                return Err(cx.err(
                    field,
                    format!("unknown cost: allowed {}", HostCosts::NAMES.join(", ")),
                ));
            };
            *slot = cx.dur(&field, v, Nanos::ZERO, MAX_HOST_COST)?.0;
        }
        Ok(HostSpec {
            cpus,
            hz: hz as u32,
            kernel,
            duration,
            seed: seed as u64,
            features,
            overrides: h.features,
            yield_cfg,
            costs,
        })
    }
}

/// `[host.features]` / `[vm.features]` (`prefix`): sets each `NAME = bool`
/// on `features` of preset `kernel`; a feature that preset does not have
/// (naming the presets that do) or an unknown name is refused.
pub(in crate::scenario) fn set_features<'a>(
    cx: &Ctx,
    prefix: &str,
    kernel: KernelPreset,
    features: &mut SchedFeatures,
    set: impl IntoIterator<Item = (&'a String, &'a bool)>,
) -> Result<(), ScenarioError> {
    for (k, v) in set {
        if kernel.absent_features().contains(&k.as_str()) {
            return Err(cx.err(
                format!("{prefix}.{k}"),
                format!(
                    "{k} does not exist in kernel {}: allowed on {}",
                    kernel.name(),
                    KernelPreset::ALL
                        .iter()
                        .filter(|p| !p.absent_features().contains(&k.as_str()))
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if !features.set(k, *v) {
            return Err(cx.err(
                format!("{prefix}.{k}"),
                format!("unknown feature: allowed {}", FEATURE_NAMES.join(", ")),
            ));
        }
    }
    Ok(())
}
