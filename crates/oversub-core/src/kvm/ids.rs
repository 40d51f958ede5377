//! Strong ids for KVM objects: a VM, a vCPU's index inside its VM
//! (`vcpu->vcpu_idx`, which is also its xAPIC physical id in this model) and an
//! interrupt vector.

use std::fmt;

/// A virtual machine (one `struct kvm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VmId(pub u32);

/// A vCPU's index in its VM (`vcpu->vcpu_idx`, the position in `kvm->vcpu_array`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VcpuIdx(pub u32);

impl VmId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl VcpuIdx {
    pub fn idx(self) -> usize {
        self.0 as usize
    }

    /// The indexes of a VM's `n` vCPUs, in order.
    pub fn all(n: u32) -> impl Iterator<Item = VcpuIdx> {
        (0..n).map(VcpuIdx)
    }
}

/// An x86 interrupt vector (0..=255).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Vector(pub u8);

impl fmt::Display for VmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vm{}", self.0)
    }
}

impl fmt::Display for VcpuIdx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vcpu{}", self.0)
    }
}

impl fmt::Display for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#04x}", self.0)
    }
}
