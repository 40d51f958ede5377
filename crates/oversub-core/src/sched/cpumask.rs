//! `struct cpumask` (include/linux/cpumask.h): one bit per CPU, with its
//! weight (`cpumask_weight()`) kept as bits change.
//!
//! Used for a task's allowed CPUs (`p->cpus_mask`; a `Vec<bool>` per task
//! cost 1 KiB per task on a 1024-CPU host, issue 15) and for the balancer's
//! maintained masks (`nohz.idle_cpus_mask` with `nohz.nr_cpus`, and the
//! overloaded CPUs, issue 10). `mask[cpu]` reads a bit as
//! `cpumask_test_cpu()` does.

use std::ops::Index;

/// One bit per CPU of an `nr_cpus`-CPU host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMask {
    bits: Box<[u64]>,
    nr_cpus: usize,
    /// `cpumask_weight()`, kept by [`CpuMask::set`].
    weight: u32,
}

impl CpuMask {
    /// `n` CPUs, none set.
    pub fn empty(n: usize) -> CpuMask {
        CpuMask {
            bits: vec![0u64; n.div_ceil(64)].into_boxed_slice(),
            nr_cpus: n,
            weight: 0,
        }
    }

    /// `n` CPUs, all set.
    pub fn full(n: usize) -> CpuMask {
        let mut m = CpuMask::empty(n);
        for (i, word) in m.bits.iter_mut().enumerate() {
            let left = n - i * 64;
            *word = if left >= 64 {
                u64::MAX
            } else {
                (1 << left) - 1
            };
        }
        m.weight = n as u32;
        m
    }

    /// The mask whose CPU `c` is set where `allowed[c]` is true.
    /// Built a word at a time (every task's mask is built at creation: bit by
    /// bit this was 7% of a 1024-CPU x 4096-task run of 100 ms).
    pub fn from_bools(allowed: &[bool]) -> CpuMask {
        let mut m = CpuMask::empty(allowed.len());
        for (word, chunk) in m.bits.iter_mut().zip(allowed.chunks(64)) {
            *word = chunk
                .iter()
                .enumerate()
                .fold(0, |w, (i, &a)| w | u64::from(a) << i);
        }
        m.weight = m.bits.iter().map(|w| w.count_ones()).sum();
        m
    }

    /// `cpumask_test_cpu()`. A CPU the host does not have is a caller's
    /// bug: debug builds panic on it; release builds panic beyond the last
    /// 64-bit word of a mask that is not full (a full mask answers true
    /// without reading its words: most tasks may run anywhere).
    #[inline]
    pub fn test(&self, cpu: usize) -> bool {
        debug_assert!(cpu < self.nr_cpus, "cpumask: CPU {cpu} of {}", self.nr_cpus);
        self.weight as usize == self.nr_cpus || self.bits[cpu / 64] >> (cpu % 64) & 1 != 0
    }

    /// `cpumask_set_cpu()` (`on`) or `cpumask_clear_cpu()`, keeping the
    /// weight.
    #[inline]
    pub fn set(&mut self, cpu: usize, on: bool) {
        let word = &mut self.bits[cpu / 64];
        let bit = 1u64 << (cpu % 64);
        if (*word & bit != 0) != on {
            *word ^= bit;
            if on {
                self.weight += 1;
            } else {
                self.weight -= 1;
            }
        }
    }

    /// `cpumask_weight()`, kept.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// The first CPU set in `from..to` (`cpumask_next()` bounded by `to`).
    pub fn next_in(&self, from: usize, to: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.bits.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                let c = w * 64 + bits.trailing_zeros() as usize;
                return (c < to).then_some(c);
            }
            w += 1;
            if w * 64 >= to {
                return None;
            }
            bits = *self.bits.get(w)?;
        }
    }

    /// The CPUs set, in increasing order (`for_each_cpu()`).
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// `nr_cpu_ids`: the number of CPUs the mask covers.
    pub fn len(&self) -> usize {
        self.nr_cpus
    }

    pub fn is_empty(&self) -> bool {
        self.nr_cpus == 0
    }
}

impl From<Vec<bool>> for CpuMask {
    fn from(allowed: Vec<bool>) -> CpuMask {
        CpuMask::from_bools(&allowed)
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
        assert_eq!(m.weight() as usize, v.iter().filter(|&&a| a).count());
        let all = CpuMask::from_bools(&[true; 70]);
        assert!((0..70).all(|c| all[c]));
        assert_eq!(all.weight(), 70);
    }

    #[test]
    #[should_panic]
    fn a_cpu_beyond_the_mask_panics() {
        let m = CpuMask::from_bools(&[true, false, true, true]);
        let _ = m[64];
    }

    /// The mask's walk agrees with a plain scan across word boundaries,
    /// for every range, and the count follows `set`.
    #[test]
    fn nohz_mask_walk_matches_a_scan() {
        let n = 130;
        let mut m = CpuMask::full(n);
        assert_eq!(m.weight(), n as u32);
        let idle = |c: usize| c % 7 == 0 || c == 63 || c == 64 || c == 129;
        for c in 0..n {
            m.set(c, idle(c));
        }
        assert_eq!(m.weight() as usize, (0..n).filter(|&c| idle(c)).count());
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            (0..n).filter(|&c| idle(c)).collect::<Vec<_>>()
        );
        for from in 0..=n {
            for to in from..=n {
                let want = (from..to).find(|&c| idle(c));
                assert_eq!(m.next_in(from, to), want, "next_in({from}, {to})");
            }
        }
        m.set(129, false);
        m.set(129, false);
        assert_eq!(m.weight() as usize, (0..n).filter(|&c| idle(c)).count() - 1);
    }
}
