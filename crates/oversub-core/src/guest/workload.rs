//! Named guest workload profiles: parameter sets that drive the guest side of
//! a simulated VM (compute bursts, lock critical sections, IPIs, blocking).
//!
//! Every number is a first-principles, order-of-magnitude estimate with its
//! derivation written next to it; none is fitted to published benchmark
//! results (project rule). Every field can be overridden from a TOML table
//! with [`WorkloadProfile::merge`]; unknown fields are rejected with the list
//! of allowed ones.

use std::fmt;

/// Which guest lock implementation the workload's hot locks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// PV qspinlock (KVM guest with KVM_FEATURE_PV_UNHALT; the default).
    PvQspinlock,
    /// Native qspinlock (PV spinlocks disabled, e.g. `nopvspin`).
    NativeQspinlock,
    /// Ticket lock (pre-4.2 kernels; FIFO reference).
    Ticket,
    /// `virt_spin_lock` test-and-set (hypervisor without PV_UNHALT).
    Tas,
}

impl LockKind {
    pub const NAMES: [&'static str; 4] = ["pv_qspinlock", "native_qspinlock", "ticket", "tas"];

    pub fn parse(s: &str) -> Option<LockKind> {
        Some(match s {
            "pv_qspinlock" => LockKind::PvQspinlock,
            "native_qspinlock" => LockKind::NativeQspinlock,
            "ticket" => LockKind::Ticket,
            "tas" => LockKind::Tas,
            _ => return None,
        })
    }
}

/// How the phase generator's vCPUs take the profile's locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockPattern {
    /// Each acquisition takes one of the `locks` hot locks, drawn uniformly.
    Random,
    /// Two vCPUs take turns on one lock (`pingpong`): a vCPU whose turn it
    /// is not spins (or, with `turn_yield`, yields to the turn holder).
    Turns,
}

/// A workload's parameters. Times are means of exponential distributions
/// unless noted.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadProfile {
    pub name: String,
    /// Mean guest compute between two lock acquisitions, in ns.
    pub compute_ns: u64,
    /// Fraction of compute time at CPL 0 (guest kernel), 0..=1.
    pub kernel_fraction: f64,
    /// Mean lock hold time (critical section), in ns.
    pub cs_ns: u64,
    /// Number of distinct hot locks the acquisitions spread over (uniformly).
    pub locks: u32,
    pub lock_kind: LockKind,
    /// How the vCPUs take the locks (a profile's property, not an override).
    pub pattern: LockPattern,
    /// Unicast IPIs (call-function-single / reschedule) sent per vCPU per ms
    /// of compute.
    pub ipi_per_ms: f64,
    /// The sender waits for the IPI handler (`smp_call_function_single`
    /// with `wait`, `csd_lock_wait`).
    pub ipi_sync: bool,
    /// Multicast TLB shootdowns per vCPU per ms of compute (synchronous).
    pub tlb_shootdown_per_ms: f64,
    /// Probability that a compute burst ends in blocking (HLT) instead of a
    /// lock acquisition, 0..=1.
    pub block_prob: f64,
    /// Mean time blocked, in ns.
    pub block_ns: u64,
    /// Lock round trips to run (0 = unbounded).
    pub iterations: u64,
    /// vCPUs that run the workload (`None` = all of the VM's vCPUs).
    pub active_vcpus: Option<u32>,
    /// pingpong only: a vCPU that finds it is not its turn yields to the
    /// turn holder with the PV sched_yield hypercall (KVM_HC_SCHED_YIELD, the
    /// x86 analogue of s390's diag 0x9c) after each spin burst, instead of
    /// relying on PAUSE-loop exits alone.
    pub turn_yield: bool,
}

/// A TOML override error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadError {
    UnknownProfile {
        name: String,
        allowed: Vec<&'static str>,
    },
    UnknownField {
        field: String,
        allowed: Vec<&'static str>,
    },
    BadValue {
        field: String,
        expected: String,
    },
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::UnknownProfile { name, allowed } => {
                write!(
                    f,
                    "unknown workload profile `{name}`; allowed: {}",
                    allowed.join(", ")
                )
            }
            WorkloadError::UnknownField { field, allowed } => write!(
                f,
                "unknown workload field `{field}`; allowed fields: {}",
                allowed.join(", ")
            ),
            WorkloadError::BadValue { field, expected } => {
                write!(f, "workload field `{field}`: expected {expected}")
            }
        }
    }
}

impl std::error::Error for WorkloadError {}

/// Names of the built-in profiles.
pub const PROFILES: [&str; 7] = [
    "dbench",
    "dedup",
    "vips",
    "ebizzy",
    "kernbench",
    "pingpong",
    "idle",
];

/// Overridable fields (everything but `name`).
pub const FIELDS: [&str; 13] = [
    "compute_ns",
    "kernel_fraction",
    "cs_ns",
    "locks",
    "lock_kind",
    "ipi_per_ms",
    "ipi_sync",
    "tlb_shootdown_per_ms",
    "block_prob",
    "block_ns",
    "iterations",
    "active_vcpus",
    "turn_yield",
];

impl WorkloadProfile {
    fn base(name: &str) -> WorkloadProfile {
        WorkloadProfile {
            name: name.to_string(),
            compute_ns: 10_000,
            kernel_fraction: 0.5,
            cs_ns: 500,
            locks: 1,
            lock_kind: LockKind::PvQspinlock,
            pattern: LockPattern::Random,
            ipi_per_ms: 0.0,
            ipi_sync: false,
            tlb_shootdown_per_ms: 0.0,
            block_prob: 0.0,
            block_ns: 0,
            iterations: 0,
            active_vcpus: None,
            turn_yield: false,
        }
    }

    /// A built-in profile by name. The derivations are in the comments and
    /// in docs/kvm-model.md ("Workload profiles").
    pub fn named(name: &str) -> Result<WorkloadProfile, WorkloadError> {
        let mut p = Self::base(name);
        match name {
            // dbench: clients replay file-system metadata/data operations
            // against the page cache. A VFS syscall costs a few µs; a loadfile
            // "operation" bundles several, so ~20 µs between kernel lock
            // acquisitions, mostly in the kernel (~80%: the client does almost
            // nothing in user space). Hot locks: dentry/inode/journal
            // spinlocks held ~0.5-1 µs (a few hundred instructions); a handful
            // of them hot. Clients wake each other rarely; some ops wait on
            // the journal (block ~5% of bursts, ~50 µs: a short journal
            // commit wait, not disk latency, since dbench runs in memory).
            "dbench" => {
                p.compute_ns = 20_000;
                p.kernel_fraction = 0.8;
                p.cs_ns = 800;
                p.locks = 4;
                p.ipi_per_ms = 0.5;
                p.block_prob = 0.05;
                p.block_ns = 50_000;
            }
            // dedup (PARSEC): a 5-stage pipeline (fragment, refine, dedup,
            // compress, reorder) connected by mutex+condvar queues. Per ~4 KiB
            // chunk: SHA-1 at ~0.5 GB/s is ~8 µs, zlib at ~50 MB/s ~80 µs; so
            // a stage handoff every ~20-80 µs, i.e. ~50 µs compute, mostly in
            // user space (~15% kernel: futex and allocator). A handoff wakes the
            // next stage only if its thread sleeps on an empty queue; assuming
            // a quarter of the ~20 handoffs/ms find it asleep gives ~5
            // reschedule IPIs/ms (an assumption, not a measurement). Futex
            // hash-bucket spinlocks are held < 0.5 µs. Consumers block on
            // empty queues for ~20% of bursts.
            "dedup" => {
                p.compute_ns = 50_000;
                p.kernel_fraction = 0.15;
                p.cs_ns = 300;
                p.locks = 2;
                p.ipi_per_ms = 5.0;
                p.block_prob = 0.2;
                p.block_ns = 30_000;
            }
            // vips (PARSEC): a thread pool processes image tiles through an
            // operation graph; per tile (~128x128 px, several ops at
            // ~1-10 ns/px) ~100 µs of user compute. Region buffers are
            // protected by GLib mutexes (futex under contention). Kernel time
            // is small (~10%: futex, page faults on new buffers). Wakeups when
            // a tile is handed to the sink thread: ~1 IPI per tile.
            "vips" => {
                p.compute_ns = 100_000;
                p.kernel_fraction = 0.1;
                p.cs_ns = 400;
                p.locks = 2;
                p.ipi_per_ms = 2.0;
                p.block_prob = 0.1;
                p.block_ns = 20_000;
            }
            // ebizzy: threads repeatedly allocate (mmap) chunks, memcpy and
            // search them, then free (munmap). Each munmap of a shared mm
            // takes mmap_lock (a rwsem whose wait_lock is a spinlock) and
            // flushes the TLB of every CPU running the mm: a synchronous
            // multicast shootdown. A 256 KiB chunk copy+search at ~5 GB/s is
            // ~50 µs; about half the time in the kernel (page faults on fresh
            // mappings, zeroing, unmapping). One shootdown per chunk: 20/ms.
            "ebizzy" => {
                p.compute_ns = 50_000;
                p.kernel_fraction = 0.5;
                p.cs_ns = 1_000;
                p.locks = 1;
                p.tlb_shootdown_per_ms = 20.0;
            }
            // kernbench: parallel kernel build (make -jN). Compilers are user
            // space (~85% user); the kernel side is fork/exec/exit/page
            // faults with short spinlock sections (page-table, LRU, dcache
            // ~0.3 µs) spread over many locks. exec/exit flush TLBs: about
            // one shootdown per process lifetime of ~100 ms, i.e. 0.01/ms.
            // Reads from pipes and make's wait4 block ~5% of bursts.
            "kernbench" => {
                p.compute_ns = 30_000;
                p.kernel_fraction = 0.15;
                p.cs_ns = 300;
                p.locks = 8;
                p.tlb_shootdown_per_ms = 0.01;
                p.ipi_per_ms = 0.2;
                p.block_prob = 0.05;
                p.block_ns = 200_000;
            }
            // pingpong: two vCPUs hand a counter back and forth under one
            // lock N times. The critical section is a load/increment/store
            // (~50 ns incl. the cache-line transfer); between turns a vCPU
            // only spins, so compute is minimal (~100 ns of loop overhead).
            // In the guest kernel (a test module), PV qspinlock.
            "pingpong" => {
                p.compute_ns = 100;
                p.kernel_fraction = 1.0;
                p.cs_ns = 50;
                p.locks = 1;
                p.iterations = 100_000;
                p.active_vcpus = Some(2);
                p.pattern = LockPattern::Turns;
            }
            // idle: the guest halts; with NO_HZ_IDLE the vCPU wakes for
            // housekeeping timers, about once per second (order of
            // magnitude of the longest deferrable timers), runs ~10 µs.
            "idle" => {
                p.compute_ns = 10_000;
                p.kernel_fraction = 1.0;
                p.cs_ns = 0;
                p.locks = 0;
                p.block_prob = 1.0;
                p.block_ns = 1_000_000_000;
            }
            _ => {
                return Err(WorkloadError::UnknownProfile {
                    name: name.to_string(),
                    allowed: PROFILES.to_vec(),
                })
            }
        }
        Ok(p)
    }

    /// Applies a TOML table of overrides field by field. On error nothing
    /// is changed.
    pub fn merge(&mut self, t: &toml::Table) -> Result<(), WorkloadError> {
        let mut p = self.clone();
        for (k, v) in t {
            let bad = |expected: &str| WorkloadError::BadValue {
                field: k.clone(),
                expected: expected.to_string(),
            };
            let uint = || {
                v.as_integer()
                    .and_then(|i| u64::try_from(i).ok())
                    .ok_or_else(|| bad("a non-negative integer"))
            };
            let float = || {
                v.as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| bad("a non-negative number"))
            };
            let fraction = || {
                float().and_then(|f| {
                    if f <= 1.0 {
                        Ok(f)
                    } else {
                        Err(bad("a number in 0..=1"))
                    }
                })
            };
            match k.as_str() {
                "compute_ns" => p.compute_ns = uint()?,
                "kernel_fraction" => p.kernel_fraction = fraction()?,
                "cs_ns" => p.cs_ns = uint()?,
                "locks" => p.locks = u32::try_from(uint()?).map_err(|_| bad("a u32"))?,
                "lock_kind" => {
                    p.lock_kind = v
                        .as_str()
                        .and_then(LockKind::parse)
                        .ok_or_else(|| bad(&format!("one of {}", LockKind::NAMES.join(", "))))?
                }
                "ipi_per_ms" => p.ipi_per_ms = float()?,
                "ipi_sync" => p.ipi_sync = v.as_bool().ok_or_else(|| bad("a boolean"))?,
                "tlb_shootdown_per_ms" => p.tlb_shootdown_per_ms = float()?,
                "block_prob" => p.block_prob = fraction()?,
                "block_ns" => p.block_ns = uint()?,
                "iterations" => p.iterations = uint()?,
                "turn_yield" => p.turn_yield = v.as_bool().ok_or_else(|| bad("a boolean"))?,
                "active_vcpus" => {
                    p.active_vcpus = Some(u32::try_from(uint()?).map_err(|_| bad("a u32"))?)
                }
                _ => {
                    return Err(WorkloadError::UnknownField {
                        field: k.clone(),
                        allowed: FIELDS.to_vec(),
                    })
                }
            }
        }
        *self = p;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn every_profile_builds_and_is_sane() {
        for n in PROFILES {
            let p = WorkloadProfile::named(n).expect(n);
            assert_eq!(p.name, n);
            assert!((0.0..=1.0).contains(&p.kernel_fraction), "{n}");
            assert!((0.0..=1.0).contains(&p.block_prob), "{n}");
            assert!(p.compute_ns > 0, "{n}");
            // An empty override changes nothing.
            let mut q = p.clone();
            q.merge(&toml::Table::new()).unwrap();
            assert_eq!(p, q);
        }
        let pp = WorkloadProfile::named("pingpong").unwrap();
        assert_eq!(pp.active_vcpus, Some(2));
        assert!(pp.iterations > 0);
        // Only pingpong takes turns; the pattern is typed, not its name.
        for n in PROFILES {
            let p = WorkloadProfile::named(n).unwrap();
            assert_eq!(p.pattern == LockPattern::Turns, n == "pingpong", "{n}");
        }
    }

    #[test]
    fn overrides_apply() {
        let mut p = WorkloadProfile::named("dbench").unwrap();
        p.merge(&table(
            "cs_ns = 1234\nkernel_fraction = 1\nlock_kind = \"tas\"\nipi_sync = true\nactive_vcpus = 3\nipi_per_ms = 2.5",
        ))
        .unwrap();
        assert_eq!(p.cs_ns, 1234);
        assert_eq!(p.kernel_fraction, 1.0);
        assert_eq!(p.lock_kind, LockKind::Tas);
        assert!(p.ipi_sync);
        assert_eq!(p.active_vcpus, Some(3));
        assert_eq!(p.ipi_per_ms, 2.5);
        assert_eq!(
            p.compute_ns, 20_000,
            "untouched fields keep the profile's value"
        );
    }

    #[test]
    fn unknown_field_and_profile_rejected_clearly() {
        let mut p = WorkloadProfile::named("vips").unwrap();
        let before = p.clone();
        let e = p.merge(&table("cs_ns = 1\ncsns = 5")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("`csns`") && msg.contains("cs_ns") && msg.contains("active_vcpus"),
            "{msg}"
        );
        assert_eq!(p, before, "failed merge leaves the profile unchanged");
        let e = WorkloadProfile::named("nope").unwrap_err().to_string();
        assert!(e.contains("`nope`") && e.contains("kernbench"), "{e}");
    }

    #[test]
    fn bad_values_rejected() {
        let mut p = WorkloadProfile::named("idle").unwrap();
        for (src, field) in [
            ("block_prob = 1.5", "block_prob"),
            ("cs_ns = -1", "cs_ns"),
            ("lock_kind = \"mcs\"", "lock_kind"),
            ("ipi_sync = 1", "ipi_sync"),
            ("locks = 5000000000", "locks"),
        ] {
            let e = p.merge(&table(src)).unwrap_err();
            assert!(
                matches!(&e, WorkloadError::BadValue { field: f, .. } if f == field),
                "{src}: {e}"
            );
        }
        assert!(p
            .merge(&table("lock_kind = \"mcs\""))
            .unwrap_err()
            .to_string()
            .contains("pv_qspinlock"));
    }
}
