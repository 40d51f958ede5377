//! `[[task]]`: a host task entry (its kind and parameters, cgroup, nice,
//! affinity, count), validated into a [`TaskSpec`], and the host tasks it
//! expands to.

use super::{
    validate_cgroup_path, Ctx, HostSpec, RawTask, Scenario, ScenarioError, TaskKind, TaskSpec,
    KINDS, MAX_TASKS, MIN_OP,
};
use crate::engine::Nanos;
use std::collections::BTreeMap;

impl Scenario {
    pub(super) fn task(
        cx: &Ctx,
        i: usize,
        t: &RawTask,
        host: &HostSpec,
        cgroups: &BTreeMap<String, usize>,
    ) -> Result<TaskSpec, ScenarioError> {
        let f = format!("task[{i}]");
        if t.name.is_empty()
            || !t
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(cx.err(
                format!("{f}.name"),
                format!(
                    "\"{}\" is not allowed: use letters, digits, '_', '-', '.'",
                    t.name
                ),
            ));
        }
        let cgroup = match &t.cgroup {
            None => "/".to_string(),
            Some(p) => {
                let p = validate_cgroup_path(p).map_err(|m| cx.err(format!("{f}.cgroup"), m))?;
                if p != "/" && !cgroups.contains_key(&p) {
                    return Err(cx.err(
                        format!("{f}.cgroup"),
                        format!("cgroup \"{p}\" is not declared in [[cgroup]]"),
                    ));
                }
                p
            }
        };
        let nice = cx.int(&format!("{f}.nice"), t.nice.unwrap_or(0), -20, 19)? as i32;
        let cpus = match &t.cpus {
            None => None,
            Some(list) => {
                if list.is_empty() {
                    return Err(cx.err(
                        format!("{f}.cpus"),
                        "empty affinity list: allowed CPU ids 0 .. cpus-1",
                    ));
                }
                let mut v = Vec::new();
                for &c in list {
                    if c < 0 || c >= host.cpus as i64 {
                        return Err(cx.err(
                            format!("{f}.cpus"),
                            format!("CPU {c} does not exist: allowed 0 ..= {}", host.cpus - 1),
                        ));
                    }
                    if !v.contains(&(c as u32)) {
                        v.push(c as u32);
                    }
                }
                v.sort();
                Some(v)
            }
        };
        let count = cx.int(
            &format!("{f}.count"),
            t.count.unwrap_or(1),
            1,
            MAX_TASKS as i64,
        )? as u32;
        let slice = match &t.slice {
            None => None,
            // __setparam_fair() clamps custom slices to [0.1 ms, 100 ms].
            Some(s) => Some(cx.dur(
                &format!("{f}.slice"),
                s,
                Nanos::from_us(100),
                Nanos::from_ms(100),
            )?),
        };
        // prctl(PR_SET_TIMERSLACK, 0) restores the default instead of
        // setting 0, so 1 ns is the least a task can ask for.
        let timer_slack = match &t.timer_slack {
            None => crate::task::DEFAULT_TIMER_SLACK,
            Some(s) => cx.dur(
                &format!("{f}.timer_slack"),
                s,
                Nanos(1),
                Nanos::from_secs(1),
            )?,
        };
        let allowed: &[&str] = match t.kind.as_str() {
            "hog" => &[],
            "periodic" => &["period", "run", "phase"],
            "yield_loop" => &["work", "target"],
            "pingpong" => &["run"],
            "messaging" => &["fds", "send", "recv", "pipe_pages", "msg_size"],
            k => {
                return Err(cx.err(
                    format!("{f}.kind"),
                    format!("unknown kind \"{k}\": allowed {KINDS}"),
                ));
            }
        };
        let given: [(&str, bool); 10] = [
            ("period", t.period.is_some()),
            ("run", t.run.is_some()),
            ("phase", t.phase.is_some()),
            ("work", t.work.is_some()),
            ("target", t.target.is_some()),
            ("fds", t.fds.is_some()),
            ("send", t.send.is_some()),
            ("recv", t.recv.is_some()),
            ("pipe_pages", t.pipe_pages.is_some()),
            ("msg_size", t.msg_size.is_some()),
        ];
        for (k, set) in given {
            if set && !allowed.contains(&k) {
                let ok = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(cx.err(
                    format!("{f}.{k}"),
                    format!("not a parameter of kind \"{}\": allowed {ok}", t.kind),
                ));
            }
        }
        let big = Nanos::from_secs(3600);
        let kind = match t.kind.as_str() {
            "hog" => TaskKind::Hog,
            "periodic" => {
                let period = match &t.period {
                    Some(p) => cx.dur(&format!("{f}.period"), p, Nanos::from_us(10), big)?,
                    None => {
                        return Err(cx.err(format!("{f}.period"), "required for kind \"periodic\""))
                    }
                };
                let run = match &t.run {
                    Some(r) => {
                        let d = cx.op(&format!("{f}.run"), r)?;
                        if d > period {
                            return Err(cx.err(
                                format!("{f}.run"),
                                format!(
                                    "{r} is longer than the period: allowed {MIN_OP} ..= period"
                                ),
                            ));
                        }
                        d
                    }
                    None => {
                        return Err(cx.err(format!("{f}.run"), "required for kind \"periodic\""))
                    }
                };
                let phase = match &t.phase {
                    Some(p) => cx.dur(&format!("{f}.phase"), p, Nanos::ZERO, big)?,
                    None => Nanos::ZERO,
                };
                TaskKind::Periodic { period, run, phase }
            }
            "yield_loop" => TaskKind::YieldLoop {
                work: cx.op(&format!("{f}.work"), t.work.as_deref().unwrap_or("1us"))?,
                target: t.target.clone(),
            },
            "pingpong" => {
                if count % 2 != 0 {
                    return Err(cx.err(
                        format!("{f}.count"),
                        format!("{count} is odd: pingpong tasks come in pairs"),
                    ));
                }
                TaskKind::PingPong {
                    run: cx.op(&format!("{f}.run"), t.run.as_deref().unwrap_or("5us"))?,
                }
            }
            "messaging" => TaskKind::Messaging {
                fds: cx.int(&format!("{f}.fds"), t.fds.unwrap_or(20), 1, 1000)? as u32,
                send: cx.op(&format!("{f}.send"), t.send.as_deref().unwrap_or("2us"))?,
                recv: cx.op(&format!("{f}.recv"), t.recv.as_deref().unwrap_or("2us"))?,
                pipe_pages: cx.int(
                    &format!("{f}.pipe_pages"),
                    t.pipe_pages
                        .unwrap_or(i64::from(crate::task::pipe::PIPE_DEF_BUFFERS)),
                    1,
                    1 << 16,
                )? as u32,
                msg_size: cx.int(
                    &format!("{f}.msg_size"),
                    t.msg_size.unwrap_or(100),
                    1,
                    i64::from(crate::task::pipe::PAGE_SIZE),
                )? as u32,
            },
            _ => unreachable!("kind validated above"),
        };
        Ok(TaskSpec {
            name: t.name.clone(),
            cgroup,
            nice,
            cpus,
            count,
            slice,
            timer_slack,
            kind,
        })
    }
}

/// How many host tasks a `[[task]]` entry creates (without naming them).
pub fn host_tasks_of(t: &TaskSpec) -> u64 {
    match &t.kind {
        TaskKind::Messaging { fds, .. } => u64::from(t.count) * 2 * u64::from(*fds),
        _ => u64::from(t.count),
    }
}

/// Names of the tasks a `[[task]]` entry creates.
pub fn expanded_names(t: &TaskSpec) -> Vec<String> {
    match &t.kind {
        TaskKind::Messaging { fds, .. } => {
            let mut v = Vec::new();
            for g in 0..t.count {
                for i in 0..*fds {
                    v.push(format!("{}.{g}.s{i}", t.name));
                }
                for i in 0..*fds {
                    v.push(format!("{}.{g}.r{i}", t.name));
                }
            }
            v
        }
        _ if t.count == 1 => vec![t.name.clone()],
        _ => (0..t.count).map(|i| format!("{}.{i}", t.name)).collect(),
    }
}
