//! An rt-app task object and its phases lowered to IR threads (instances,
//! loops, affinity, delay), and a task's `oversub` extension object.

use super::value::{cpus, int, no_dups, obj, policy, Sub};
use super::{event_kind, us, Builder, EVENTS, EXT_EVENTS, TASK_KEYS};
use crate::engine::Nanos;
use crate::workload::ir::{Event, Fidelity, Phase, Thread};
use crate::workload::json::Json;
use crate::workload::InputError;

impl Builder {
    /// A phase object (or a task object without `phases`): `extra` lists the
    /// non-event keys allowed besides `loop` and `cpus`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn phase(
        &mut self,
        name: &str,
        v: &Json,
        at: &str,
        thread: &str,
        task: &str,
        extra: &[&str],
        thread_cpus: &Option<Vec<u32>>,
    ) -> Result<Phase, InputError> {
        let kv = obj(v, at)?;
        no_dups(kv, at)?;
        let mut loops = Some(1);
        let mut events = Vec::new();
        for (k, x) in kv {
            let a = Sub(&at, k.as_str());
            if k == "loop" {
                // -1: the phase repeats forever (rt-app counts up and never
                // meets a negative loop count).
                let l = int(x, a, -1, i64::MAX, " (-1: forever)")?;
                if l == 0 {
                    return Err(InputError::new(
                        a.to_string(),
                        "loop 0 is not allowed: -1 (forever) or >= 1",
                    ));
                }
                loops = (l > 0).then_some(l as u64);
            } else if k == "cpus" {
                let c = cpus(x, a)?;
                if Some(&c) != thread_cpus.as_ref() {
                    return Err(InputError::new(
                        a.to_string(),
                        "phase-level affinity changes are not modelled yet: put cpus on the task",
                    ));
                }
            } else if event_kind(k).is_some() {
                self.event(k, x, a, thread, task, &mut events)?;
            } else if !extra.contains(&k.as_str()) {
                let mut allowed: Vec<&str> = vec!["loop", "cpus"];
                allowed.extend_from_slice(extra);
                return Err(InputError::new(
                    a.to_string(),
                    format!(
                        "unknown key: allowed {}, or an event ({}, {}; numbered like run0, run1)",
                        allowed.join(", "),
                        EVENTS.join(", "),
                        EXT_EVENTS.join(", ")
                    ),
                ));
            }
        }
        if events.is_empty() {
            return Err(InputError::new(
                at,
                format!(
                    "no events: allowed {}, {}",
                    EVENTS.join(", "),
                    EXT_EVENTS.join(", ")
                ),
            ));
        }
        Ok(Phase {
            name: name.to_string(),
            loops,
            events,
        })
    }

    pub(super) fn task(
        &mut self,
        task: &str,
        v: &Json,
        out: &mut Vec<Thread>,
    ) -> Result<(), InputError> {
        let at = format!("tasks.{task}");
        let kv = obj(v, &at)?;
        no_dups(kv, &at)?;
        let get = |k: &str| kv.iter().find(|(n, _)| n == k).map(|(_, x)| x);
        let instances = match get("instance") {
            Some(x) => int(x, format!("{at}.instance"), 1, 100_000, "")? as u32,
            None => 1,
        };
        if let Some(p) = get("policy") {
            policy(p, &format!("{at}.policy"))?;
        }
        let nice = match get("priority") {
            Some(x) => int(
                x,
                format!("{at}.priority"),
                -20,
                19,
                " (the nice value for SCHED_OTHER)",
            )? as i32,
            None => 0,
        };
        for k in ["dl-runtime", "dl-period", "dl-deadline", "period"] {
            if let Some(x) = get(k) {
                let a = format!("{at}.{k}");
                int(x, &a, 0, i64::MAX, "")?;
                self.note(
                    &a,
                    Fidelity::Ignored,
                    "SCHED_DEADLINE parameters have no effect on SCHED_OTHER",
                );
            }
        }
        let tcpus = match get("cpus") {
            Some(x) => Some(cpus(x, &format!("{at}.cpus"))?),
            None => None,
        };
        let delay = match get("delay") {
            Some(x) => us(int(x, format!("{at}.delay"), 0, 3_600_000_000, " us")?),
            None => Nanos::ZERO,
        };
        let ext = match get("oversub") {
            Some(x) => super::task_ext::parse(x, &format!("{at}.oversub"))?,
            None => super::task_ext::TaskExt::default(),
        };
        // One cap on threads however they are spelled (instances of many
        // tasks included), checked before any is built.
        let total = out.len() as u64 + u64::from(instances);
        if total > crate::limits::MAX_TASKS {
            return Err(InputError::new(
                format!("{at}.instance"),
                format!(
                    "{instances} makes {total} threads in the program: allowed at most {} threads in all",
                    crate::limits::MAX_TASKS
                ),
            ));
        }
        // Instance 0's phases, when the next instances read the same: an
        // instance's events differ from the first's only in its "unique"
        // timers (named per thread) and in its barrier references (each
        // counted); every other event interns the same names again.
        let mut same: Option<Vec<Phase>> = None;
        for i in 0..instances {
            let name = if instances == 1 {
                task.to_string()
            } else {
                format!("{task}.{i}")
            };
            let (phases, loops) = match get("phases") {
                Some(ph) => {
                    let pat = format!("{at}.phases");
                    let pkv = obj(ph, &pat)?;
                    no_dups(pkv, &pat)?;
                    if pkv.is_empty() {
                        return Err(InputError::new(pat, "no phases"));
                    }
                    let phases = match &same {
                        Some(p) => p.clone(),
                        None => {
                            let mut phases = Vec::new();
                            for (pn, pv) in pkv {
                                phases.push(self.phase(
                                    pn,
                                    pv,
                                    &format!("{pat}.{pn}"),
                                    &name,
                                    task,
                                    &[],
                                    &tcpus,
                                )?);
                            }
                            phases
                        }
                    };
                    // Unknown task keys (events are not allowed beside phases).
                    for (k, _) in kv {
                        if !TASK_KEYS.contains(&k.as_str()) {
                            return Err(InputError::new(
                                format!("{at}.{k}"),
                                format!(
                                    "unknown key beside phases: allowed {}",
                                    TASK_KEYS.join(", ")
                                ),
                            ));
                        }
                    }
                    let loops = match get("loop") {
                        Some(x) => {
                            let l = int(x, format!("{at}.loop"), -1, i64::MAX, " (-1: forever)")?;
                            if l == 0 {
                                return Err(InputError::new(
                                    format!("{at}.loop"),
                                    "loop 0 runs nothing: allowed -1 (forever) or >= 1",
                                ));
                            }
                            (l > 0).then_some(l as u64)
                        }
                        None => None,
                    };
                    (phases, loops)
                }
                None => {
                    // One phase made of the task object itself; its `loop`
                    // is the phase's, and the thread repeats it forever
                    // (parse_thread_data: data->loop = -1).
                    let extra: Vec<&str> = TASK_KEYS
                        .iter()
                        .copied()
                        .filter(|k| *k != "loop" && *k != "cpus" && *k != "phases")
                        .collect();
                    let phases = match &same {
                        Some(p) => p.clone(),
                        None => vec![self.phase(task, v, &at, &name, task, &extra, &tcpus)?],
                    };
                    (phases, None)
                }
            };
            if i == 0 && instances > 1 && !phases.iter().any(per_instance) {
                same = Some(phases.clone());
            }
            out.push(Thread {
                name,
                task: task.to_string(),
                nice,
                cpus: tcpus.clone(),
                delay,
                loops,
                timer_slack: ext.timer_slack,
                ops_per_loop: ext.ops_per_loop,
                parent: None,
                phases,
            });
        }
        Ok(())
    }
}

/// Whether a phase holds events that differ between a task's instances
/// (a timer, which may be "unique" to its thread) or whose every reference
/// counts (a barrier's users).
fn per_instance(p: &Phase) -> bool {
    p.events
        .iter()
        .any(|e| matches!(e, Event::Timer { .. } | Event::Barrier(_)))
}
