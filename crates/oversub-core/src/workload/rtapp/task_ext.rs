//! A task's `oversub` object (rt-app extension; rt-app ignores the key,
//! which no event name is a prefix of): thread attributes rt-app 1.0 has no
//! key for (docs/workloads.md, "Host parameters: the `oversub` object").
//!
//! * `timer_slack`: the thread's `prctl(PR_SET_TIMERSLACK)` in us, 0.001
//!   (1 ns) ..= 1 s. `oversub record` sets it to 1 ns on derived threads,
//!   whose sleeps replay measured blocked times that already include the
//!   real kernel's slack.
//! * `ops_per_loop`: how many of the real program's ops one phase loop of
//!   this thread stands for (0 ..= 1e9, fractional allowed); a VM's
//!   `[[vm]] ops` counts a chosen thread's phase loops times this (default
//!   1). Derived programs set it from the recording's op count.

use super::value::{no_dups, obj};
use crate::engine::Nanos;
use crate::workload::json::Json;
use crate::workload::InputError;

/// The longest `timer_slack` (us): the scenario TOML's bound.
const MAX_TIMER_SLACK_US: f64 = 1_000_000.0;
/// The largest `ops_per_loop`.
pub const MAX_OPS_PER_LOOP: f64 = 1e9;

/// What a task's `oversub` object said.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(in crate::workload::rtapp) struct TaskExt {
    pub timer_slack: Option<Nanos>,
    pub ops_per_loop: Option<f64>,
}

fn number(x: &Json, a: &str, what: &str, range: &str) -> Result<f64, InputError> {
    match x {
        Json::Int(i) => Ok(*i as f64),
        Json::Float(f) => Ok(*f),
        o => Err(InputError::new(
            a,
            format!("expected {what}, found {}: {range}", o.kind()),
        )),
    }
}

/// Parses a task's `oversub` object at `at`.
pub(in crate::workload::rtapp) fn parse(v: &Json, at: &str) -> Result<TaskExt, InputError> {
    let kv = obj(v, at)?;
    no_dups(kv, at)?;
    let mut out = TaskExt::default();
    for (k, x) in kv {
        let a = format!("{at}.{k}");
        match k.as_str() {
            "timer_slack" => {
                let range = "allowed 0.001 ..= 1000000 us (1 ns ..= 1 s; prctl(PR_SET_TIMERSLACK, 0) would restore the default)";
                let f = number(x, &a, "a number of us", range)?;
                let ns = (f * 1000.0).round();
                if !(f.is_finite() && (1.0..=MAX_TIMER_SLACK_US * 1000.0).contains(&ns)) {
                    return Err(InputError::new(a, format!("{f} is out of range: {range}")));
                }
                out.timer_slack = Some(Nanos(ns as u64));
            }
            "ops_per_loop" => {
                let range = "allowed 0 ..= 1e9 ops per phase loop";
                let f = number(x, &a, "a number", range)?;
                if !(f.is_finite() && (0.0..=MAX_OPS_PER_LOOP).contains(&f)) {
                    return Err(InputError::new(a, format!("{f} is out of range: {range}")));
                }
                out.ops_per_loop = Some(f);
            }
            _ => {
                return Err(InputError::new(
                    a,
                    "unknown key: allowed timer_slack, ops_per_loop",
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::workload::rtapp::parse;

    fn prog(ext: &str) -> String {
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"run": 10, "oversub": {ext}}}}}}}"#
        )
    }

    #[test]
    fn ops_per_loop_reaches_the_thread() {
        let r = parse(&prog(r#"{"ops_per_loop": 2.5, "timer_slack": 0.001}"#)).unwrap();
        let t = &r.program.threads[0];
        assert_eq!(t.ops_per_loop, Some(2.5));
        assert_eq!(t.timer_slack, Some(crate::engine::Nanos(1)));
        let r = parse(&prog("{}")).unwrap();
        assert_eq!(r.program.threads[0].ops_per_loop, None);
    }

    #[test]
    fn bad_ops_per_loop_names_field_value_and_range() {
        for (v, want) in [
            (
                "-1",
                "tasks.t.oversub.ops_per_loop: -1 is out of range: allowed 0 ..= 1e9",
            ),
            (
                "2e9",
                "tasks.t.oversub.ops_per_loop: 2000000000 is out of range",
            ),
            (
                "\"x\"",
                "tasks.t.oversub.ops_per_loop: expected a number, found a string",
            ),
        ] {
            let e = parse(&prog(&format!(r#"{{"ops_per_loop": {v}}}"#)))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{v}: {e}");
        }
    }
}
