//! A compact, deterministic latency histogram: log-bucketed (64 sub-buckets
//! per power of two, so a bucket's bounds are within 1.6% of each other),
//! exact count, sum and maximum. Histograms of the same kind merge by adding
//! buckets, so a per-op distribution can be pooled over VMs, threads and
//! seeds without keeping the samples. Serialized as its non-empty buckets
//! (`[[upper_bound, count], ...]`), in bucket order.

use serde::ser::SerializeStruct;
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHist {
    buckets: Vec<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

impl LogHist {
    const SUB: u32 = 6;

    #[inline(always)]
    fn bucket(v: u64) -> usize {
        if v < (1 << Self::SUB) {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // >= SUB
        let m = (v >> (e - Self::SUB)) & ((1 << Self::SUB) - 1);
        (((e - Self::SUB + 1) << Self::SUB) as u64 + m) as usize
    }

    /// The largest value of bucket `b`.
    fn upper(b: usize) -> u64 {
        let b = b as u64;
        if b < (1 << Self::SUB) {
            return b;
        }
        let e = (b >> Self::SUB) + u64::from(Self::SUB) - 1;
        let m = b & ((1 << Self::SUB) - 1);
        let lo = (1u64 << e) | (m << (e - u64::from(Self::SUB)));
        lo + (1u64 << (e - u64::from(Self::SUB))) - 1
    }

    /// Adds one sample. Inline, with the bucket vector's growth out of
    /// line: one is taken per guest operation and lock wait.
    #[inline]
    pub fn add(&mut self, v: u64) {
        let b = Self::bucket(v);
        if b >= self.buckets.len() {
            self.grow(b);
        }
        self.buckets[b] += 1;
        self.n += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, b: usize) {
        self.buckets.resize(b + 1, 0);
    }

    /// Adds every sample of `o`.
    pub fn merge(&mut self, o: &LogHist) {
        if o.buckets.len() > self.buckets.len() {
            self.buckets.resize(o.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact mean (integer division); 0 when empty.
    pub fn mean(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            (self.sum / u128::from(self.n)) as u64
        }
    }

    /// Nearest-rank quantile `p` in [0, 1]: the upper bound of the bucket
    /// holding the rank, capped at the maximum; None when empty.
    pub fn quantile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let r = ((p * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut acc = 0;
        for (b, &c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= r {
                return Some(Self::upper(b).min(self.max));
            }
        }
        Some(self.max)
    }

    /// The empirical CDF at each non-empty bucket: (value, fraction of
    /// samples <= value), value = the bucket's upper bound capped at the
    /// maximum. Empty for an empty histogram.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let mut acc = 0u64;
        let mut out = Vec::new();
        for (b, &c) in self.buckets.iter().enumerate() {
            if c == 0 {
                continue;
            }
            acc += c;
            out.push((Self::upper(b).min(self.max), acc as f64 / self.n as f64));
        }
        out
    }
}

impl Serialize for LogHist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b: Vec<(u64, u64)> = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (Self::upper(i).min(self.max), c))
            .collect();
        let mut st = s.serialize_struct("LogHist", 4)?;
        st.serialize_field("samples", &self.n)?;
        st.serialize_field("mean", &self.mean())?;
        st.serialize_field("max", &self.max)?;
        st.serialize_field("buckets", &b)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_bounds_are_tight() {
        let mut h = LogHist::default();
        for v in [0, 1, 5, 63] {
            h.add(v);
        }
        assert_eq!(h.cdf(), vec![(0, 0.25), (1, 0.5), (5, 0.75), (63, 1.0)]);
        // Every value lies in a bucket whose upper bound is within 1.6%.
        for v in [64u64, 65, 1000, 123_456, 9_999_999_999] {
            let u = LogHist::upper(LogHist::bucket(v));
            assert!(u >= v && (u - v) as f64 <= v as f64 / 64.0, "{v} -> {u}");
        }
    }

    #[test]
    fn quantiles_merge_and_cdf() {
        let mut a = LogHist::default();
        let mut b = LogHist::default();
        for v in 1..=50 {
            a.add(v);
        }
        for v in 51..=100 {
            b.add(v * 1000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert_eq!(a.quantile(0.5), Some(50));
        assert_eq!(a.max(), 100_000);
        assert_eq!(a.quantile(1.0), Some(100_000));
        let q99 = a.quantile(0.99).unwrap();
        assert!((99_000..=99_000 + 99_000 / 64).contains(&q99), "{q99}");
        let c = a.cdf();
        assert_eq!(c.last().unwrap().1, 1.0);
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(LogHist::default().quantile(0.5), None);
    }
}
