//! Values as a distribution: median, and the modes the values fall into by
//! a gap rule. Conformance (oversub-conform) compares two distributions, the
//! simulated seeds of a scenario and the real runs: the kernel can settle in
//! one of several placements (an unpinned hog gets 40% or 43-44% of the
//! time), so a row reports how often each side landed in each mode. A
//! sweep's summary counts the modes of each point's values over seeds
//! (`sweep::summary`, with its own gap).

use serde::Serialize;

/// One mode: the values of a cluster (sorted values with no gap wider than
/// the row's mode gap between neighbours).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Mode {
    /// The median of the cluster's values.
    pub center: f64,
    pub min: f64,
    pub max: f64,
    /// How many values fell in it.
    pub count: usize,
}

/// The median of `v` (the mean of the two middle values for an even
/// count); 0 for no values.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The modes of `v`, lowest first: sorted, a new mode starts where two
/// neighbouring values lie more than `gap` apart. One value (or none) is
/// one mode (or none).
pub fn modes(v: &[f64], gap: f64) -> Vec<Mode> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mut clusters: Vec<Vec<f64>> = Vec::new();
    for x in s {
        match clusters.last_mut() {
            Some(c) if x - c[c.len() - 1] <= gap => c.push(x),
            _ => clusters.push(vec![x]),
        }
    }
    clusters
        .into_iter()
        .map(|c| Mode {
            center: median(&c),
            min: c[0],
            max: c[c.len() - 1],
            count: c.len(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_none() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn a_gap_wider_than_the_rule_splits_a_mode() {
        let m = modes(&[0.44, 0.40, 0.441, 0.402, 0.439], 0.01);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].count, m[1].count), (2, 3));
        assert_eq!((m[0].min, m[0].max), (0.40, 0.402));
        assert_eq!(m[1].center, 0.44);
        // Neighbours within the gap chain into one mode even when the ends
        // are further apart than the gap.
        assert_eq!(modes(&[1.0, 1.8, 2.6, 3.4], 1.0).len(), 1);
        assert_eq!(modes(&[], 1.0), vec![]);
    }
}
