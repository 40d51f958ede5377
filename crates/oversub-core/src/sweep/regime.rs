//! Virtualization regimes: named bundles of the guest's PV features and the
//! host's APIC acceleration, the sweep axis `key = "regime"`. Each regime is
//! a set of `--set` overrides over every key it owns, so a sweep point's
//! regime says all of `[guest.pv]` and `kvm.{apicv, avic, ipiv}` at once.
//!
//! The keys follow KVM 6.12.117's module parameters: `kvm.apicv` is
//! `kvm_intel.enable_apicv` (posted interrupts and virtualized EOIs),
//! `kvm.avic` is `kvm_amd.avic` (and implies APIC virtualization), `kvm.ipiv`
//! is `kvm_intel.enable_ipiv` (needs APICv). What each changes in the model:
//! docs/kvm-model.md, "APIC acceleration".

use crate::scenario::overrides::{parse_override, Override};

/// The PV feature keys (`[guest.pv]`).
const PV: [&str; 5] = [
    "guest.pv.steal_time",
    "guest.pv.spinlock",
    "guest.pv.sched_yield",
    "guest.pv.tlb_flush",
    "guest.pv.send_ipi",
];

/// Every key a regime sets: a point may not set one of them elsewhere.
pub const KEYS: [&str; 8] = [
    PV[0],
    PV[1],
    PV[2],
    PV[3],
    PV[4],
    "kvm.apicv",
    "kvm.avic",
    "kvm.ipiv",
];

/// The regimes: name, every PV feature on, then (apicv, avic, ipiv).
pub const REGIMES: [(&str, bool, [bool; 3]); 5] = [
    // Every PV feature, no APIC acceleration: what the seed series' v3
    // benchmarks state ("APICv disabled") and the scenarios' default.
    ("pv-on", true, [false, false, false]),
    // No PV feature, no APIC acceleration.
    ("pv-off", false, [false, false, false]),
    // Intel APICv with posted interrupts, without IPIv (pre-Sapphire Rapids).
    ("apicv", true, [true, false, false]),
    // AMD AVIC (its APIC virtualization is APICv in KVM's terms).
    ("avic", true, [true, true, false]),
    // Intel APICv with IPI virtualization.
    ("ipiv", true, [true, false, true]),
];

/// The names, for messages.
pub fn names() -> String {
    REGIMES.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")
}

/// The overrides of regime `name`, in [`KEYS`] order; an error naming the
/// allowed regimes for an unknown name.
pub fn overrides(name: &str) -> Result<Vec<Override>, String> {
    let Some(&(_, pv, [apicv, avic, ipiv])) = REGIMES.iter().find(|r| r.0 == name) else {
        return Err(format!(
            "\"{}\" is not a regime: allowed {}",
            crate::limits::echo(name),
            names()
        ));
    };
    let vals = [pv, pv, pv, pv, pv, apicv, avic, ipiv];
    KEYS.iter()
        .zip(vals)
        .map(|(k, v)| parse_override(&format!("{k}={v}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str) -> Vec<(String, bool)> {
        overrides(name)
            .unwrap()
            .into_iter()
            .map(|o| (o.path.join("."), o.value.as_bool().unwrap()))
            .collect()
    }

    #[test]
    fn every_regime_sets_every_key() {
        for (n, ..) in REGIMES {
            let keys: Vec<String> = set(n).into_iter().map(|(k, _)| k).collect();
            assert_eq!(keys, KEYS.map(String::from), "{n}");
        }
    }

    #[test]
    fn regimes_expand_to_their_keys() {
        let on = |n: &str, k: &str| set(n).iter().find(|(a, _)| a == k).unwrap().1;
        for k in PV {
            assert!(on("pv-on", k) && !on("pv-off", k) && on("ipiv", k), "{k}");
        }
        assert!(!on("pv-on", "kvm.apicv") && !on("pv-off", "kvm.apicv"));
        assert!(on("apicv", "kvm.apicv") && !on("apicv", "kvm.ipiv") && !on("apicv", "kvm.avic"));
        assert!(on("avic", "kvm.avic") && on("avic", "kvm.apicv") && !on("avic", "kvm.ipiv"));
        assert!(on("ipiv", "kvm.ipiv") && on("ipiv", "kvm.apicv") && !on("ipiv", "kvm.avic"));
        let e = overrides("x2avic").unwrap_err();
        assert!(
            e.contains("allowed pv-on, pv-off, apicv, avic, ipiv"),
            "{e}"
        );
    }
}
