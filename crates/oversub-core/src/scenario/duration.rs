//! Durations in scenario files: a decimal number and a unit, "250ms", "1.5us",
//! "5s", "100ns". No unit, unknown units, negative or fractional nanoseconds
//! are errors.

use crate::engine::Nanos;

/// What a duration may be at most, as the refusal of a larger one says it
/// (the field's own bound, if lower, is checked where the field is read).
const TOO_LARGE: &str = "duration too large: allowed at most 18446744073s (2^64 - 1 ns)";

/// Parses "<number><unit>" with unit ns, us, ms or s.
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "\"{s}\" is negative: a duration must be positive (e.g. \"250ms\")"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| {
            format!("\"{s}\" has no unit: allowed units ns, us, ms, s (e.g. \"250ms\")")
        })?;
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => {
            return Err(format!(
                "\"{s}\": unknown unit \"{unit}\": allowed ns, us, ms, s"
            ))
        }
    };
    if num.is_empty() || num.matches('.').count() > 1 || num.starts_with('.') || num.ends_with('.')
    {
        return Err(format!(
            "\"{s}\" is not a number followed by a unit (e.g. \"1.5ms\")"
        ));
    }
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    let int: u64 = int.parse().map_err(|_| format!("\"{s}\": {TOO_LARGE}"))?;
    let mut ns = int
        .checked_mul(scale)
        .ok_or_else(|| format!("\"{s}\": {TOO_LARGE}"))?;
    if !frac.is_empty() {
        if frac.len() > 9 {
            return Err(format!("\"{s}\": at most 9 decimal places"));
        }
        let f: u64 = frac
            .parse()
            .map_err(|_| format!("\"{s}\" is not a number"))?;
        let denom = 10u64.pow(frac.len() as u32);
        let part = f as u128 * scale as u128;
        if part % denom as u128 != 0 {
            return Err(format!("\"{s}\" is not a whole number of nanoseconds"));
        }
        ns = ns
            .checked_add((part / denom as u128) as u64)
            .ok_or_else(|| format!("\"{s}\": {TOO_LARGE}"))?;
    }
    Ok(Nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_beyond_u64_nanoseconds_names_the_bound() {
        for s in [
            "18446744073709551616ns",
            "99999999999999999s",
            "18446744073.8s",
        ] {
            let e = parse_duration(s).unwrap_err();
            assert!(e.contains("allowed at most 18446744073s"), "{s}: {e}");
        }
        assert_eq!(
            parse_duration("18446744073s"),
            Ok(Nanos(18_446_744_073_000_000_000))
        );
    }

    #[test]
    fn units_and_fractions() {
        assert_eq!(parse_duration("5s"), Ok(Nanos(5_000_000_000)));
        assert_eq!(parse_duration("250ms"), Ok(Nanos(250_000_000)));
        assert_eq!(parse_duration("1.5us"), Ok(Nanos(1_500)));
        assert_eq!(parse_duration("100ns"), Ok(Nanos(100)));
        assert_eq!(parse_duration("0.001ms"), Ok(Nanos(1_000)));
    }

    #[test]
    fn rejects_bad_input_with_a_reason() {
        for bad in [
            "5",
            "5 sec",
            "ms",
            "1.5ns",
            "-1ms",
            "1..2ms",
            ".5ms",
            "99999999999999999999s",
            "",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(bad) || bad.is_empty(), "{bad}: {e}");
        }
    }
}
