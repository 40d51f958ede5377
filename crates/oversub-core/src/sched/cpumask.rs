//! `struct cpumask` (include/linux/cpumask.h): a task's allowed CPUs
//! (`p->cpus_mask`) as one bit per CPU, as the kernel keeps it.
//!
//! A `Vec<bool>` per task cost one byte per CPU: 1 KiB per task on a
//! 1024-CPU host, half of the simulator's memory per task there (issue 15).
//! `mask[cpu]` reads a bit as `cpumask_test_cpu()` does.

use std::ops::Index;

/// One bit per CPU of an `nr_cpus`-CPU host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMask {
    bits: Box<[u64]>,
    nr_cpus: usize,
    /// Every CPU set (`cpumask_full()`), the usual case: tested first.
    full: bool,
}

impl CpuMask {
    /// The mask whose CPU `c` is set where `allowed[c]` is true.
    pub fn from_bools(allowed: &[bool]) -> CpuMask {
        let bits: Box<[u64]> = allowed
            .chunks(64)
            .map(|word| {
                word.iter()
                    .enumerate()
                    .fold(0u64, |w, (i, &a)| w | (a as u64) << i)
            })
            .collect();
        CpuMask {
            bits,
            nr_cpus: allowed.len(),
            full: allowed.iter().all(|&a| a),
        }
    }

    /// `cpumask_test_cpu()`. A CPU the host does not have is a caller's
    /// bug: debug builds panic on it; release builds panic beyond the last
    /// 64-bit word of a mask that is not full (a full mask answers true
    /// without reading its words: most tasks may run anywhere).
    #[inline]
    pub fn test(&self, cpu: usize) -> bool {
        debug_assert!(cpu < self.nr_cpus, "cpumask: CPU {cpu} of {}", self.nr_cpus);
        self.full || self.bits[cpu / 64] >> (cpu % 64) & 1 != 0
    }

    /// `nr_cpu_ids`: the number of CPUs the mask covers.
    pub fn len(&self) -> usize {
        self.nr_cpus
    }

    pub fn is_empty(&self) -> bool {
        self.nr_cpus == 0
    }
}

impl Index<usize> for CpuMask {
    type Output = bool;

    #[inline]
    fn index(&self, cpu: usize) -> &bool {
        if self.test(cpu) {
            &true
        } else {
            &false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CpuMask;

    #[test]
    fn bits_follow_the_bools() {
        let v: Vec<bool> = (0..130).map(|c| c % 3 == 0 || c == 129).collect();
        let m = CpuMask::from_bools(&v);
        assert_eq!(m.len(), 130);
        for (c, &a) in v.iter().enumerate() {
            assert_eq!(m[c], a, "cpu {c}");
        }
        let all = CpuMask::from_bools(&[true; 70]);
        assert!((0..70).all(|c| all[c]));
    }

    #[test]
    #[should_panic]
    fn a_cpu_beyond_the_mask_panics() {
        let m = CpuMask::from_bools(&[true, false, true, true]);
        let _ = m[64];
    }
}
