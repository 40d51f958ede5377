//! `[host.yield]`: the yield_to() policy and the seed constants as knobs
//! (docs/yield-policies.md).
//!
//! ```toml
//! [host.yield]
//! yield_to = "deboost"          # upstream (default), deboost-v1, deboost-v2, deboost,
//!                               # lag-credit-v3, lag-credit, kpn-walk, kpn-charge, borrow
//! yield_interval = "0ns"        # sched_yield() throttle (Kuba Piecuch's RFC), 0 = off
//! deboost_ratelimit = "6ms"     # one deboost (v3: forced resched) per rq per window
//! deboost_debounce = "600us"    # reverse-pair window
//! deboost_cap = [6.0, 4.0, 2.5, 2.0, 1.5, 1.0]  # penalty cap x gran for 2, 3, 4-6, 7-8, 9-12, more
//! ```

use super::{Ctx, ScenarioError};
use crate::engine::Nanos;
use crate::sched::yield_to::{YieldConfig, YieldToPolicy};
use serde::Deserialize;

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawYield {
    yield_to: Option<String>,
    yield_interval: Option<String>,
    deboost_ratelimit: Option<String>,
    deboost_debounce: Option<String>,
    deboost_cap: Option<Vec<f64>>,
}

pub(crate) fn yield_cfg(cx: &Ctx, y: Option<RawYield>) -> Result<YieldConfig, ScenarioError> {
    let mut c = YieldConfig::default();
    let Some(y) = y else {
        return Ok(c);
    };
    if let Some(n) = &y.yield_to {
        c.policy = YieldToPolicy::parse(n).ok_or_else(|| {
            cx.err(
                "host.yield.yield_to",
                format!("unknown policy \"{n}\": allowed {}", YieldToPolicy::names()),
            )
        })?;
    }
    let big = Nanos::from_secs(10);
    if let Some(v) = &y.yield_interval {
        c.yield_interval_ns = cx.dur("host.yield.yield_interval", v, Nanos::ZERO, big)?.0;
    }
    if let Some(v) = &y.deboost_ratelimit {
        c.ratelimit_ns = cx
            .dur("host.yield.deboost_ratelimit", v, Nanos::ZERO, big)?
            .0;
    }
    if let Some(v) = &y.deboost_debounce {
        c.debounce_ns = cx
            .dur("host.yield.deboost_debounce", v, Nanos::ZERO, big)?
            .0;
    }
    if let Some(caps) = &y.deboost_cap {
        let f = "host.yield.deboost_cap";
        if caps.len() != 6 {
            return Err(cx.err(
                f,
                format!(
                    "{} values given: allowed exactly 6 (for 2, 3, 4-6, 7-8, 9-12, more queued)",
                    caps.len()
                ),
            ));
        }
        for (i, &x) in caps.iter().enumerate() {
            let halves = x * 2.0;
            if !(1.0..=64.0).contains(&x) || halves.fract() != 0.0 {
                return Err(cx.err(
                    f,
                    format!("{x} is not allowed: multiples of 0.5 in 1.0 ..= 64.0"),
                ));
            }
            c.cap_halves[i] = halves as u32;
        }
    }
    Ok(c)
}
