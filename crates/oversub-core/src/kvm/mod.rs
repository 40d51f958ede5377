//! KVM (x86) building blocks, modelled on Linux 6.12.117 unless a switch says
//! otherwise: per-vCPU scheduling state (`vcpu`), pause-loop exiting windows
//! (`ple`), halt polling (`halt_poll`), the directed-yield decision
//! `kvm_vcpu_on_spin` (`on_spin`), the local-APIC IPI delivery / IPI tracking
//! model of the seed series (`lapic`) and the guest's interrupt vectors
//! (`irq_vectors`).
//!
//! These are pure functions and state machines; the simulator's event loop
//! attaches them to host tasks (see docs/kvm-model.md, "Integration plan").

pub mod halt_poll;
pub mod ids;
pub mod ipi_hint;
pub mod irq_vectors;
pub mod lapic;
pub mod on_spin;
pub mod ple;
pub mod pv;
pub mod vcpu;

pub use ids::{VcpuIdx, Vector, VmId};
