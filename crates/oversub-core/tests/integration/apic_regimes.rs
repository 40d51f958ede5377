//! The APIC-acceleration regimes (`kvm.apicv`, `kvm.avic`, `kvm.ipiv`:
//! KVM 6.12.117's `enable_apicv`, `avic`, `enable_ipiv`) judged by what KVM
//! gets to see: which ICR writes exit and which the seed series' IPI tracker
//! (hooked in `kvm_irq_delivery_to_apic`) records (docs/kvm-model.md, "APIC
//! acceleration").

use crate::common::{run, unicast_ipis, vm};

/// The unicast-IPI VM of the common helpers under `on_spin = "ipi_aware"`.
fn unicasts(kvm: &str) -> String {
    unicast_ipis(&format!("on_spin = \"ipi_aware\"\n{kvm}"))
}

#[test]
fn with_avic_only_ipis_to_targets_not_running_exit_and_none_is_tracked() {
    // APICv without IPIv: every unicast ICR write exits to
    // kvm_apic_send_ipi and the tracker records it.
    let a = run(&unicasts("apicv = true"));
    let a = vm(&a, "v");
    assert!(a.ipis_sent > 100, "{a:?}");
    assert_eq!(a.ipi_exits, a.ipis_sent);
    assert_eq!(a.ipis_tracked, a.ipis_sent);
    // AVIC: the CPU delivers to running targets (no exit); a target that
    // is not running exits (AVIC_IPI_FAILURE_TARGET_NOT_RUNNING), but KVM
    // only kicks it (avic_kick_target_vcpus): kvm_irq_delivery_to_apic is
    // never reached, so the series records nothing.
    let r = run(&unicasts("avic = true"));
    let v = vm(&r, "v");
    assert!(v.ipis_sent > 100, "{v:?}");
    assert!(v.ipi_exits > 0 && v.ipi_exits < v.ipis_sent, "{v:?}");
    assert_eq!(v.ipis_tracked, 0, "{v:?}");
    assert_eq!(v.boosts_to_ipi_receiver, 0, "{v:?}");
    assert_eq!(v.eoi_exits, 0, "AVIC virtualizes the EOI of edge IPIs");
}

/// 4 vCPUs on 2 pCPUs running ebizzy: TLB shootdowns to every other vCPU.
fn shootdowns(kvm: &str) -> String {
    format!(
        r#"
[host]
cpus = 2
duration = "100ms"
[kvm]
on_spin = "ipi_aware"
{kvm}
[guest.pv]
send_ipi = false
tlb_flush = false
[[vm]]
name = "e"
vcpus = 4
workload = "phase:ebizzy"
"#
    )
}

#[test]
fn with_ipiv_a_shorthand_broadcast_still_exits() {
    // IPIv virtualizes fixed, physical, no-shorthand writes only: the
    // all-but-self broadcast of a shootdown takes the APIC-write exit (one
    // per broadcast of 3 IPIs), and is not tracked (a broadcast). A
    // shootdown that finds a target's call queue busy IPIs only the others,
    // one unicast each, which IPIv virtualizes (no exit).
    let r = run(&shootdowns("apicv = true\nipiv = true"));
    let v = vm(&r, "e");
    assert!(v.ipi_exits > 0, "{v:?}");
    assert!(v.ipis_sent >= 3 * v.ipi_exits, "{v:?}");
    assert_eq!(v.ipis_tracked, 0, "{v:?}");
    // The unicasts of the same regime do not exit.
    let u = run(&unicasts("apicv = true\nipiv = true"));
    assert!(vm(&u, "v").ipis_sent > 100);
    assert_eq!(vm(&u, "v").ipi_exits, 0, "{:?}", vm(&u, "v"));
}
