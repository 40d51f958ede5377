//! Statistics over runs: mean and 95% confidence intervals over seeds
//! (Student's t), paired deltas against a baseline, Jain's fairness index.
//!
//! Reads only numbers; it knows nothing of the simulator (a sweep hands it
//! one value per seed).

pub mod distribution;
pub mod hist;

use serde::Serialize;

/// Two-sided 95% quantiles of Student's t, t(0.975, df) for df = 1 ..= 30
/// (standard tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df); above the table, the Cornish-Fisher expansion around the
/// normal quantile (error < 0.001 for df > 30).
pub fn t975(df: usize) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    if df <= T975.len() {
        return T975[df - 1];
    }
    let z: f64 = 1.959_964;
    let n = df as f64;
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}

/// Mean of a sample and the half-width of its 95% confidence interval.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Ci {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for n = 1.
    pub sd: f64,
    /// Half-width: t(0.975, n - 1) * sd / sqrt(n); NaN for n < 2.
    pub half: f64,
}

impl Ci {
    pub fn of(xs: &[f64]) -> Ci {
        let n = xs.len();
        if n == 0 {
            return Ci {
                n,
                mean: f64::NAN,
                sd: f64::NAN,
                half: f64::NAN,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Ci {
                n,
                mean,
                sd: 0.0,
                half: f64::NAN,
            };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        Ci {
            n,
            mean,
            sd,
            half: t975(n - 1) * sd / (n as f64).sqrt(),
        }
    }

    /// Whether the interval excludes zero (a paired delta that is "real" at 95%).
    pub fn excludes_zero(&self) -> bool {
        self.half.is_finite() && (self.mean - self.half > 0.0 || self.mean + self.half < 0.0)
    }

    /// Whether every sample had the same value (n >= 2, no spread): the
    /// seeds change nothing, so an interval says nothing either.
    pub fn deterministic(&self) -> bool {
        self.n >= 2 && self.sd == 0.0
    }

    /// "12.3 ± 0.4", "12.3 (deterministic)" when every sample is equal, or
    /// "12.3" without an interval (one sample).
    pub fn fmt(&self, prec: usize) -> String {
        if self.deterministic() {
            format!("{:.p$} (deterministic)", self.mean, p = prec)
        } else if self.half.is_finite() {
            format!("{:.p$} ± {:.p$}", self.mean, self.half, p = prec)
        } else {
            format!("{:.p$}", self.mean, p = prec)
        }
    }
}

/// Paired comparison of `x` against `base` over the same seeds.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct PairedDelta {
    /// x - base per seed.
    pub abs: Ci,
    /// 100 * (x - base) / base per seed, in percent.
    pub pct: Ci,
}

/// Paired delta; pairs are (x, base) for the same seed. Pairs whose base is 0
/// are left out of the relative delta.
pub fn paired_delta(pairs: &[(f64, f64)]) -> PairedDelta {
    let abs: Vec<f64> = pairs.iter().map(|(x, b)| x - b).collect();
    PairedDelta {
        abs: Ci::of(&abs),
        pct: Ci::of(&pct_deltas(pairs)),
    }
}

/// The relative deltas 100 * (x - base) / base of (x, base) pairs, in
/// percent; pairs whose base is 0 are left out.
pub fn pct_deltas(pairs: &[(f64, f64)]) -> Vec<f64> {
    pairs
        .iter()
        .filter(|(_, b)| *b != 0.0)
        .map(|(x, b)| 100.0 * (x - b) / b)
        .collect()
}

/// Two-sided p-value of a paired t test that the mean of the per-seed
/// differences `d` is zero (Student's t with n - 1 degrees of freedom, from
/// `statrs`). NaN below two pairs. Without spread the answer is exact: 1 when
/// every difference is 0, 0 when they are all the same non-zero value (the
/// model is deterministic there; [`Ci::deterministic`]).
pub fn paired_p(d: &Ci) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if d.n < 2 || !d.mean.is_finite() {
        return f64::NAN;
    }
    if d.sd == 0.0 {
        return if d.mean == 0.0 { 1.0 } else { 0.0 };
    }
    let t = d.mean / (d.sd / (d.n as f64).sqrt());
    match StudentsT::new(0.0, 1.0, (d.n - 1) as f64) {
        Ok(dist) => (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// Holm's step-down adjustment of a family of p-values (Holm 1979): the
/// i-th smallest of m is multiplied by m - i + 1, then made monotone and
/// capped at 1. Rejecting where the adjusted p < alpha bounds the chance of
/// any false claim in the family by alpha, whatever the dependence between
/// the tests (a sweep's cells share their baseline runs). NaN stays NaN and
/// does not count in m.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..ps.len()).filter(|&i| ps[i].is_finite()).collect();
    idx.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]).then(a.cmp(&b)));
    let m = idx.len();
    let mut out = vec![f64::NAN; ps.len()];
    let mut run = 0.0f64;
    for (k, &i) in idx.iter().enumerate() {
        run = run.max(((m - k) as f64 * ps[i]).min(1.0));
        out[i] = run;
    }
    out
}

/// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all are equal,
/// 1/n when one gets everything. 1 for an empty or all-zero input.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_of_known_sample() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample sd sqrt(32/7).
        let c = Ci::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(c.n, 8);
        assert!((c.mean - 5.0).abs() < 1e-12);
        assert!((c.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let half = 2.365 * (32.0f64 / 7.0).sqrt() / 8f64.sqrt();
        assert!((c.half - half).abs() < 1e-12);
        assert!(c.excludes_zero());
    }

    #[test]
    fn ci_degenerate() {
        assert!(Ci::of(&[]).mean.is_nan());
        let one = Ci::of(&[3.0]);
        assert_eq!(one.mean, 3.0);
        assert!(one.half.is_nan());
        assert!(!one.excludes_zero());
        assert_eq!(Ci::of(&[1.0, 1.0, 1.0]).half, 0.0);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(4), 2.776);
        assert_eq!(t975(30), 2.042);
        // t(0.975, 60) = 2.000, t(0.975, 120) = 1.980 (tables).
        assert!((t975(60) - 2.000).abs() < 0.002);
        assert!((t975(120) - 1.980).abs() < 0.002);
        assert!(t975(0).is_nan());
    }

    #[test]
    fn paired_delta_known() {
        // Deltas 1, 2, 3 -> mean 2, sd 1, half 4.303 / sqrt(3).
        let d = paired_delta(&[(11.0, 10.0), (22.0, 20.0), (33.0, 30.0)]);
        assert!((d.abs.mean - 2.0).abs() < 1e-12);
        assert!((d.abs.half - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        // Every relative delta is 10%.
        assert!((d.pct.mean - 10.0).abs() < 1e-9);
        assert!(d.pct.half.abs() < 1e-9);
        // A zero baseline is left out of the relative delta only.
        let z = paired_delta(&[(1.0, 0.0), (2.0, 1.0)]);
        assert_eq!(z.abs.n, 2);
        assert_eq!(z.pct.n, 1);
    }

    #[test]
    fn paired_p_matches_tables() {
        // t = 2.776 with 4 df is the two-sided 5% point; t = 4.604 the 1% one.
        let at = |t: f64| Ci {
            n: 5,
            mean: t,
            sd: 5f64.sqrt(),
            half: f64::NAN,
        };
        assert!((paired_p(&at(2.776)) - 0.05).abs() < 2e-4);
        assert!((paired_p(&at(4.604)) - 0.01).abs() < 1e-4);
        assert!((paired_p(&at(0.0)) - 1.0).abs() < 1e-12);
        // Deterministic: exact answers; one pair: no test.
        assert_eq!(paired_p(&Ci::of(&[2.0, 2.0, 2.0])), 0.0);
        assert_eq!(paired_p(&Ci::of(&[0.0, 0.0])), 1.0);
        assert!(paired_p(&Ci::of(&[1.0])).is_nan());
        assert!(Ci::of(&[2.0, 2.0]).deterministic());
        assert_eq!(Ci::of(&[2.0, 2.0]).fmt(1), "2.0 (deterministic)");
    }

    #[test]
    fn holm_steps_down() {
        // m = 4: 0.01*4, 0.02*3, 0.03*2 -> 0.06, monotone; 0.5*1.
        let a = holm(&[0.03, 0.01, f64::NAN, 0.5, 0.02]);
        let want = [0.06, 0.04, f64::NAN, 0.5, 0.06];
        for (x, w) in a.iter().zip(want) {
            assert!((x.is_nan() && w.is_nan()) || (x - w).abs() < 1e-12, "{a:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[1.0, 1.0, 1.0, 1.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+3)^2 / (2 * 10) = 0.8
        assert!((jain(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
    }
}
