//! Typed, bounded readers of rt-app JSON values (objects without repeated
//! keys, integers and times in us, CPU lists, the scheduling policy), each
//! error naming the value's path in the file.

use super::POLICIES;
use crate::engine::Nanos;
use crate::workload::json::Json;
use crate::workload::InputError;
use std::fmt::{self, Display};

/// The path of `parent`'s member `key` (`parent.key`), spelled out only
/// when something keeps or reports it: a program's half a million event
/// fields are read without formatting their paths.
#[derive(Clone, Copy)]
pub(super) struct Sub<'a, P>(pub &'a P, pub &'a str);

impl<P: Display> Display for Sub<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// Objects longer than this are checked for repeated keys with a hash set.
const NO_DUPS_LINEAR: usize = 16;

pub(super) fn obj(v: &Json, at: impl Display) -> Result<&[(String, Json)], InputError> {
    match v {
        Json::Object(kv) => Ok(kv),
        o => Err(InputError::new(
            at.to_string(),
            format!("expected an object, found {}", o.kind()),
        )),
    }
}

/// Refuses repeated keys (json-c would keep only the last one), naming the
/// first key that repeats an earlier one.
pub(super) fn no_dups(kv: &[(String, Json)], at: impl Display) -> Result<(), InputError> {
    let mut seen = std::collections::HashSet::with_capacity(if kv.len() > NO_DUPS_LINEAR {
        kv.len()
    } else {
        0
    });
    for (i, (k, _)) in kv.iter().enumerate() {
        let repeated = if kv.len() <= NO_DUPS_LINEAR {
            kv[..i].iter().any(|(k2, _)| k2 == k)
        } else {
            !seen.insert(k.as_str())
        };
        if repeated {
            return Err(InputError::new(
                format!("{at}.{k}"),
                "repeated key (rt-app keeps only the last): number repeated events as run0, run1, ... like workgen does",
            ));
        }
    }
    Ok(())
}

pub(super) fn int(
    v: &Json,
    at: impl Display,
    lo: i64,
    hi: i64,
    unit: &str,
) -> Result<i64, InputError> {
    match v {
        Json::Int(i) if (lo..=hi).contains(i) => Ok(*i),
        Json::Int(i) => Err(InputError::new(
            at.to_string(),
            format!("{i} is out of range: allowed {lo} ..= {hi}{unit}"),
        )),
        // An integer beyond 64 bits is read as a number.
        Json::Float(x) if x.fract() == 0.0 && x.abs() >= i64::MAX as f64 => Err(InputError::new(
            at.to_string(),
            format!("{x:.0} is out of range: allowed {lo} ..= {hi}{unit}"),
        )),
        o => Err(InputError::new(
            at.to_string(),
            format!("expected an integer{unit}, found {}", o.kind()),
        )),
    }
}

/// A non-negative number of microseconds (extensions accept fractions).
pub(super) fn micros(v: &Json, at: impl Display) -> Result<Nanos, InputError> {
    let f = match v {
        Json::Int(i) => *i as f64,
        Json::Float(f) => *f,
        o => {
            return Err(InputError::new(
                at.to_string(),
                format!("expected a number of us, found {}", o.kind()),
            ))
        }
    };
    if !(0.0..=3.6e9).contains(&f) {
        return Err(InputError::new(
            at.to_string(),
            format!("{f} is out of range: allowed 0 ..= 3600000000 us"),
        ));
    }
    Ok(Nanos((f * 1000.0).round() as u64))
}

pub(super) fn string(v: &Json, at: impl Display) -> Result<&str, InputError> {
    match v {
        Json::Str(s) => Ok(s),
        o => Err(InputError::new(
            at.to_string(),
            format!("expected a string, found {}", o.kind()),
        )),
    }
}

pub(super) fn boolean(v: &Json, at: impl Display) -> Result<bool, InputError> {
    match v {
        Json::Bool(b) => Ok(*b),
        o => Err(InputError::new(
            at.to_string(),
            format!("expected true or false, found {}", o.kind()),
        )),
    }
}

pub(super) fn cpus(v: &Json, at: impl Display + Copy) -> Result<Vec<u32>, InputError> {
    let Json::Array(a) = v else {
        return Err(InputError::new(
            at.to_string(),
            format!("expected an array of CPU ids, found {}", v.kind()),
        ));
    };
    if a.is_empty() {
        return Err(InputError::new(
            at.to_string(),
            "empty affinity list: allowed CPU ids >= 0",
        ));
    }
    let mut out = Vec::new();
    for x in a {
        let c = int(x, at, 0, 1023, "")? as u32;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The fields of a small object: every key known, the required ones present.
pub(super) fn fields<'a>(
    v: &'a Json,
    at: impl Display + Copy,
    allowed: &[&str],
    required: &[&str],
) -> Result<&'a [(String, Json)], InputError> {
    let kv = obj(v, at)?;
    no_dups(kv, at)?;
    for (k, _) in kv {
        if !allowed.contains(&k.as_str()) {
            return Err(InputError::new(
                format!("{at}.{k}"),
                format!("unknown key: allowed {}", allowed.join(", ")),
            ));
        }
    }
    for r in required {
        if !kv.iter().any(|(k, _)| k == r) {
            return Err(InputError::new(format!("{at}.{r}"), "required"));
        }
    }
    Ok(kv)
}

pub(super) fn policy(v: &Json, at: impl Display + Copy) -> Result<(), InputError> {
    let p = string(v, at)?;
    if p == "SCHED_OTHER" {
        Ok(())
    } else if ["SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"].contains(&p) {
        Err(InputError::new(
            at.to_string(),
            format!("{p} is not modelled: allowed {POLICIES}"),
        ))
    } else {
        Err(InputError::new(
            at.to_string(),
            format!("unknown policy \"{p}\": allowed {POLICIES}"),
        ))
    }
}
