//! KVM (x86) building blocks, modelled on Linux 6.12.117 unless a switch says
//! otherwise: per-vCPU scheduling state (`vcpu`), pause-loop exiting windows
//! (`ple`), the directed-yield decision `kvm_vcpu_on_spin` (`on_spin`) and the
//! local-APIC IPI delivery / IPI tracking model of the seed series (`lapic`).
//!
//! These are pure functions and state machines; the simulator's event loop
//! attaches them to host tasks (see docs/kvm-model.md, "Integration plan").

pub mod ids;
pub mod ipi_hint;
pub mod lapic;
pub mod on_spin;
pub mod ple;
pub mod pv;
pub mod vcpu;

pub use ids::{VcpuIdx, Vector, VmId};
