//! A bounded log-scale histogram of durations (ns): 8 buckets per power of
//! two from 1 ns to 2^40 ns (~18 min), so memory is fixed whatever the
//! number of samples. Percentiles are read from the buckets (the bucket's
//! upper bound, so at most 9% above the true value); count, sum, min and max
//! are exact.

use serde::Serialize;

const SUB: u32 = 8;
const OCTAVES: u32 = 40;
const BUCKETS: usize = (SUB * OCTAVES) as usize + 1;

/// Durations in ns.
#[derive(Clone, Debug)]
pub struct Dist {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Dist {
    fn default() -> Self {
        Dist {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// Bucket index of `v`: octave = floor(log2 v), then 8 linear steps inside it.
fn bucket(v: u64) -> usize {
    if v < 2 {
        return 0;
    }
    let oct = 63 - v.leading_zeros();
    if oct >= OCTAVES {
        return BUCKETS - 1;
    }
    let frac = if oct >= 3 {
        ((v >> (oct - 3)) & 7) as u32
    } else {
        ((v << (3 - oct)) & 7) as u32
    };
    (oct * SUB + frac + 1) as usize
}

/// Upper bound (ns) of bucket `i`.
fn upper(i: usize) -> u64 {
    if i == 0 {
        return 1;
    }
    let i = i as u64 - 1;
    let oct = i / SUB as u64;
    let frac = i % SUB as u64;
    // [2^oct * (1 + frac/8), 2^oct * (1 + (frac+1)/8))
    let base = 1u64 << oct;
    base + (base * (frac + 1)) / SUB as u64
}

impl Dist {
    pub fn add(&mut self, v: u64) {
        self.buckets[bucket(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds `n` samples of 0 (a count read back without its values).
    pub fn add_zeros(&mut self, n: u64) {
        if n > 0 {
            self.buckets[0] += n;
            self.count += n;
            self.min = 0;
        }
    }

    /// Adds every sample of `o`.
    pub fn merge(&mut self, o: &Dist) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> u64 {
        self.sum.min(u64::MAX as u128) as u64
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The `p`-th percentile (0 < p <= 100): the upper bound of the bucket
    /// holding it, clamped to the exact max.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(i).min(self.max).max(self.min);
            }
        }
        self.max
    }

    /// The distribution a [`DistSummary`] as profile.json holds it
    /// describes (its buckets, count, sum, min and max are exact, so
    /// percentiles and means read back as they were written); `at` names
    /// the field in errors.
    pub fn from_json(v: &serde_json::Value, at: &str) -> Result<Dist, String> {
        let num = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| format!("{at}.{k}: expected an integer"))
        };
        let count = num("count")?;
        if count > crate::bounds::MAX_PROFILE_COUNT {
            return Err(format!("{at}.count: {count}: allowed a count 0 ..= 2^36"));
        }
        let mut d = Dist {
            count,
            sum: num("sum_ns")? as u128,
            ..Dist::default()
        };
        if d.count > 0 {
            d.min = num("min_ns")?;
            d.max = num("max_ns")?;
        }
        // An empty distribution's summary has no buckets.
        let none = Vec::new();
        let hist = match v.get("hist") {
            None => &none,
            Some(h) => h.as_array().ok_or_else(|| {
                format!("{at}.hist: expected an array of [upper bound ns, count]")
            })?,
        };
        let mut n = 0u64;
        for (j, b) in hist.iter().enumerate() {
            let pair = b
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)));
            let Some((up, c)) = pair else {
                return Err(format!("{at}.hist[{j}]: expected [upper bound ns, count]"));
            };
            let Some(i) = (0..BUCKETS).find(|&i| upper(i) == up) else {
                return Err(format!(
                    "{at}.hist[{j}]: {up} is not a bucket's upper bound"
                ));
            };
            d.buckets[i] = d.buckets[i].saturating_add(c);
            n = n.saturating_add(c);
        }
        if n != d.count {
            return Err(format!(
                "{at}.hist: its buckets hold {n} samples, count says {}",
                d.count
            ));
        }
        Ok(d)
    }

    /// The serialisable summary: exact count/sum/min/max/mean, bucketed
    /// percentiles and the non-empty buckets as `[upper bound ns, count]`.
    pub fn summary(&self) -> DistSummary {
        DistSummary {
            count: self.count,
            sum_ns: self.sum(),
            mean_ns: self.mean().round() as u64,
            min_ns: if self.count == 0 { 0 } else { self.min },
            p50_ns: self.percentile(50.0),
            p90_ns: self.percentile(90.0),
            p99_ns: self.percentile(99.0),
            max_ns: self.max,
            hist: self
                .buckets
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| [upper(i), c])
                .collect(),
        }
    }
}

impl DistSummary {
    /// Without the buckets (the percentiles stay).
    pub fn brief(mut self) -> DistSummary {
        self.hist = Vec::new();
        self
    }
}

/// A distribution as written to profile.json.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DistSummary {
    pub count: u64,
    pub sum_ns: u64,
    pub mean_ns: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// Non-empty buckets: `[upper bound ns, samples]`, 8 per power of two
    /// (left out of the brief summaries of syscalls).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hist: Vec<[u64; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_bound_their_values() {
        for v in [
            1u64,
            2,
            3,
            7,
            8,
            9,
            100,
            1000,
            12345,
            1 << 30,
            (1 << 39) + 5,
        ] {
            let b = bucket(v);
            assert!(upper(b) >= v, "v {v} bucket {b} upper {}", upper(b));
            if b > 1 {
                assert!(upper(b - 1) <= v, "v {v} below bucket {b}");
            }
        }
        for i in 1..BUCKETS - 1 {
            assert!(upper(i) <= upper(i + 1));
        }
    }

    #[test]
    fn a_summary_reads_back_as_the_same_distribution() {
        let mut d = Dist::default();
        for v in [0u64, 1, 3, 900, 901, 12_345, 1 << 33, (1 << 41) + 7] {
            d.add(v);
        }
        let j = serde_json::to_value(d.summary()).unwrap();
        let e = Dist::from_json(&j, "x").unwrap();
        assert_eq!(e.summary(), d.summary());
        for p in [1.0, 50.0, 99.0, 100.0] {
            assert_eq!(e.percentile(p), d.percentile(p));
        }
        let empty = serde_json::to_value(Dist::default().summary()).unwrap();
        assert_eq!(Dist::from_json(&empty, "x").unwrap().count(), 0);
        let mut bad = j.clone();
        bad["count"] = serde_json::json!(3);
        assert!(Dist::from_json(&bad, "x").unwrap_err().contains("x.hist"));
        bad = j;
        bad["hist"][0][0] = serde_json::json!(1_000_000_001u64);
        assert!(Dist::from_json(&bad, "x")
            .unwrap_err()
            .starts_with("x.hist[0]: 1000000001 is not"));
    }

    #[test]
    fn percentiles_are_within_a_bucket_of_the_truth() {
        let mut d = Dist::default();
        for v in 1..=1000u64 {
            d.add(v * 1000);
        }
        let p50 = d.percentile(50.0) as f64;
        assert!((500_000.0..=500_000.0 * 1.13).contains(&p50), "{p50}");
        assert_eq!(d.percentile(100.0), 1_000_000);
        assert_eq!(d.summary().min_ns, 1000);
        assert_eq!(d.mean().round() as u64, 500_500);
    }
}
