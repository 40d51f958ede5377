//! rt-app JSON (Debian `rt-app` 1.0, scheduler-tools/rt-app tag v1.0) to the
//! program IR.
//!
//! Grammar as rt-app 1.0 reads it (`src/rt-app_parse_config.c`):
//! * root: `global` (optional), `tasks` (required), `resources` (accepted,
//!   unused: 1.0 creates resources on first use);
//! * a task object: `instance` (threads made from it), `policy`, `priority`
//!   (the nice value for SCHED_OTHER), `cpus`, `delay` (us), `loop`, and
//!   either `phases` (an object of phase objects; thread `loop` default -1 =
//!   forever) or the events of a single phase directly (then `loop` is that
//!   phase's loop count and the thread repeats it forever, as rt-app does);
//! * a phase object: `loop` (default 1), `cpus`, events;
//! * events are keys *starting with* an event name, so `run0`, `run1`
//!   number repeated events (rt-app tests prefixes in this order: lock,
//!   unlock, wait, signal, broad, sync, sleep, runtime, run, timer, suspend,
//!   resume, mem, iorun, yield, barrier). Times are integers in us.
//!
//! Unlike rt-app, unknown keys are errors, repeated keys are refused (json-c
//! keeps only the last one; workgen numbers them), and what the model cannot
//! run is refused rather than logged and skipped: other policies than
//! SCHED_OTHER, `mem` / `iorun`, phase-level affinity changes.
//!
//! Extensions (keys rt-app ignores, so the same file runs on the real
//! rt-app): the root object `oversub` (host parameters, read by the scenario
//! layer), the events `syscall`, `munmap` and `smp_call` for guest-kernel
//! behaviour (docs/workloads.md, "Extensions"), and `put` / `get` on
//! bounded, counted queues (docs/workloads.md, "Queues").

use super::ir::{
    BarrierId, CondId, Event, Fidelity, FidelityNote, KlockId, MutexId, Phase, Program, QueueId,
    SleepMode, Thread, TimerId,
};
use super::json::{self, Json};
use super::InputError;
use crate::engine::Nanos;

/// A parsed rt-app file.
#[derive(Clone, Debug)]
pub struct RtApp {
    pub program: Program,
    /// The `oversub` extension object (host parameters), if present.
    pub oversub: Option<Json>,
}

/// rt-app's event names in the order it tests them as key prefixes.
const EVENTS: [&str; 16] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "mem", "iorun", "yield", "barrier",
];
/// Extension events (not prefixes of, nor prefixed by, an rt-app event).
const EXT_EVENTS: [&str; 5] = ["syscall", "munmap", "smp_call", "put", "get"];
/// The largest queue capacity and batch (items).
const MAX_QUEUE_ITEMS: i64 = 1 << 32;
const GLOBAL_KEYS: [&str; 13] = [
    "duration",
    "calibration",
    "default_policy",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];
const TASK_KEYS: [&str; 12] = [
    "instance",
    "policy",
    "priority",
    "cpus",
    "delay",
    "loop",
    "phases",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "period",
    "oversub",
];
const POLICIES: &str = "SCHED_OTHER (the model has the fair class only)";

/// The event an rt-app key names, by rt-app's prefix rule, or an extension.
fn event_kind(key: &str) -> Option<&'static str> {
    EVENTS
        .iter()
        .chain(EXT_EVENTS.iter())
        .find(|e| key.starts_with(*e))
        .copied()
}

fn us(v: i64) -> Nanos {
    Nanos((v as u64).saturating_mul(1000))
}

/// A queue as the file references it: name, capacity (from the first
/// reference that gives one, with its path), and its first reference's path.
type QueueRef = (String, Option<(u64, String)>, String);

struct Builder {
    mutexes: Vec<String>,
    conds: Vec<String>,
    barriers: Vec<(String, u32)>,
    timers: Vec<String>,
    klocks: Vec<String>,
    queues: Vec<QueueRef>,
    fidelity: Vec<FidelityNote>,
}

fn intern(v: &mut Vec<String>, name: &str) -> u32 {
    match v.iter().position(|n| n == name) {
        Some(i) => i as u32,
        None => {
            v.push(name.to_string());
            (v.len() - 1) as u32
        }
    }
}

fn obj<'a>(v: &'a Json, at: &str) -> Result<&'a [(String, Json)], InputError> {
    match v {
        Json::Object(kv) => Ok(kv),
        o => Err(InputError::new(
            at,
            format!("expected an object, found {}", o.kind()),
        )),
    }
}

/// Refuses repeated keys (json-c would keep only the last one).
fn no_dups(kv: &[(String, Json)], at: &str) -> Result<(), InputError> {
    for (i, (k, _)) in kv.iter().enumerate() {
        if kv[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(InputError::new(
                format!("{at}.{k}"),
                "repeated key (rt-app keeps only the last): number repeated events as run0, run1, ... like workgen does",
            ));
        }
    }
    Ok(())
}

fn int(v: &Json, at: &str, lo: i64, hi: i64, unit: &str) -> Result<i64, InputError> {
    match v {
        Json::Int(i) if (lo..=hi).contains(i) => Ok(*i),
        Json::Int(i) => Err(InputError::new(
            at,
            format!("{i} is out of range: allowed {lo} ..= {hi}{unit}"),
        )),
        // An integer beyond 64 bits is read as a number.
        Json::Float(x) if x.fract() == 0.0 && x.abs() >= i64::MAX as f64 => Err(InputError::new(
            at,
            format!("{x:.0} is out of range: allowed {lo} ..= {hi}{unit}"),
        )),
        o => Err(InputError::new(
            at,
            format!("expected an integer{unit}, found {}", o.kind()),
        )),
    }
}

/// A non-negative number of microseconds (extensions accept fractions).
fn micros(v: &Json, at: &str) -> Result<Nanos, InputError> {
    let f = match v {
        Json::Int(i) => *i as f64,
        Json::Float(f) => *f,
        o => {
            return Err(InputError::new(
                at,
                format!("expected a number of us, found {}", o.kind()),
            ))
        }
    };
    if !(0.0..=3.6e9).contains(&f) {
        return Err(InputError::new(
            at,
            format!("{f} is out of range: allowed 0 ..= 3600000000 us"),
        ));
    }
    Ok(Nanos((f * 1000.0).round() as u64))
}

fn string<'a>(v: &'a Json, at: &str) -> Result<&'a str, InputError> {
    match v {
        Json::Str(s) => Ok(s),
        o => Err(InputError::new(
            at,
            format!("expected a string, found {}", o.kind()),
        )),
    }
}

fn boolean(v: &Json, at: &str) -> Result<bool, InputError> {
    match v {
        Json::Bool(b) => Ok(*b),
        o => Err(InputError::new(
            at,
            format!("expected true or false, found {}", o.kind()),
        )),
    }
}

fn cpus(v: &Json, at: &str) -> Result<Vec<u32>, InputError> {
    let Json::Array(a) = v else {
        return Err(InputError::new(
            at,
            format!("expected an array of CPU ids, found {}", v.kind()),
        ));
    };
    if a.is_empty() {
        return Err(InputError::new(
            at,
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
fn fields<'a>(
    v: &'a Json,
    at: &str,
    allowed: &[&str],
    required: &[&str],
) -> Result<Vec<(&'a str, &'a Json)>, InputError> {
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
    Ok(kv.iter().map(|(k, v)| (k.as_str(), v)).collect())
}

fn policy(v: &Json, at: &str) -> Result<(), InputError> {
    let p = string(v, at)?;
    if p == "SCHED_OTHER" {
        Ok(())
    } else if ["SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"].contains(&p) {
        Err(InputError::new(
            at,
            format!("{p} is not modelled: allowed {POLICIES}"),
        ))
    } else {
        Err(InputError::new(
            at,
            format!("unknown policy \"{p}\": allowed {POLICIES}"),
        ))
    }
}

impl Builder {
    fn note(&mut self, at: &str, fidelity: Fidelity, why: &str) {
        // Instances of a task repeat its notes: keep one per place.
        if self.fidelity.iter().any(|n| n.at == at) {
            return;
        }
        self.fidelity.push(FidelityNote {
            at: at.to_string(),
            fidelity,
            why: why.to_string(),
        });
    }

    fn global(&mut self, g: &Json) -> Result<Option<Nanos>, InputError> {
        let kv = fields(g, "global", &GLOBAL_KEYS, &[])?;
        let mut duration = None;
        if !kv.iter().any(|(k, _)| *k == "log_size") {
            self.note(
                "global.log_size",
                Fidelity::Approximated,
                "absent: rt-app 1.0 writes a log line per phase loop to a file; not modelled (use 0 to disable)",
            );
        }
        for (k, v) in kv {
            let at = format!("global.{k}");
            match k {
                "duration" => {
                    let d = int(v, &at, -1, 3600, " s (-1: until every thread ends)")?;
                    if d == 0 {
                        return Err(InputError::new(
                            at,
                            "0 is not a duration: allowed -1 (until every thread ends) or 1 ..= 3600 s",
                        ));
                    }
                    duration = (d > 0).then(|| Nanos::from_secs(d as u64));
                }
                "calibration" => {
                    match v {
                        Json::Str(_) | Json::Int(_) => {}
                        o => {
                            return Err(InputError::new(
                                at,
                                format!("expected \"CPUn\" or ns per loop, found {}", o.kind()),
                            ))
                        }
                    }
                    self.note(
                        &at,
                        Fidelity::Ignored,
                        "run is CPU time in the model: no loop calibration",
                    );
                }
                "default_policy" => policy(v, &at)?,
                "pi_enabled" => {
                    if boolean(v, &at)? {
                        self.note(
                            &at,
                            Fidelity::Approximated,
                            "PI futex mutexes (FUTEX_LOCK_PI handoff) run as plain futex mutexes",
                        );
                    }
                }
                "lock_pages" => {
                    if boolean(v, &at)? {
                        self.note(&at, Fidelity::Ignored, "no paging in the model");
                    }
                }
                "ftrace" | "gnuplot" | "cumulative_slack" => {
                    boolean(v, &at)?;
                }
                "logdir" | "log_basename" | "io_device" => {
                    string(v, &at)?;
                }
                "log_size" => match v {
                    // rt-app 1.0 inverts its string test (strcmp != 0):
                    // "disable" selects per-loop file writes, any other
                    // string disables logging; an integer is a buffer in MB
                    // (0: no log).
                    Json::Str(s) if s == "disable" => self.note(
                        &at,
                        Fidelity::Approximated,
                        "rt-app 1.0 reads \"disable\" as file mode (inverted strcmp) and writes a log line per phase loop; not modelled (use 0 to disable)",
                    ),
                    Json::Str(_) => {}
                    Json::Int(n) if *n >= 0 => {}
                    o => {
                        return Err(InputError::new(
                            at,
                            format!("expected a string or a size in MB >= 0, found {}", o.kind()),
                        ))
                    }
                },
                "mem_buffer_size" => {
                    int(v, &at, 0, i64::MAX, "")?;
                }
                _ => unreachable!("checked by fields()"),
            }
        }
        Ok(duration)
    }

    /// One event of a phase; `out` receives its IR (rt-app's compound
    /// events become several).
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        key: &str,
        v: &Json,
        at: &str,
        thread: &str,
        task: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), InputError> {
        let kind = event_kind(key).expect("caller checked");
        let time = |v: &Json| int(v, at, 0, 3_600_000_000, " us").map(us);
        match kind {
            "run" => out.push(Event::Run(time(v)?)),
            "runtime" => {
                out.push(Event::Runtime(time(v)?));
                self.note(
                    at,
                    Fidelity::Approximated,
                    "runtime (busy until a wall-clock time) runs as CPU time: a preempted runtime event ends later than rt-app's",
                );
            }
            "sleep" => out.push(Event::Sleep(time(v)?)),
            "timer" => {
                let f = fields(v, at, &["ref", "period", "mode"], &["ref", "period"])?;
                let mut r = String::new();
                let mut period = Nanos::ZERO;
                let mut absolute = false;
                for (k, x) in f {
                    let a = format!("{at}.{k}");
                    match k {
                        "ref" => r = string(x, &a)?.to_string(),
                        // 0 is allowed: the timer never sleeps (rt-app's
                        // tune_json.py uses it to switch timers off).
                        "period" => period = int(x, &a, 0, 3_600_000_000, " us").map(us)?,
                        _ => {
                            absolute = match string(x, &a)? {
                                "relative" => false,
                                "absolute" => true,
                                m => {
                                    return Err(InputError::new(
                                        a,
                                        format!("unknown mode \"{m}\": allowed relative, absolute"),
                                    ))
                                }
                            }
                        }
                    }
                }
                // A "unique..." timer is per thread (rt-app tags it with the
                // thread); any other name is shared by every thread using it.
                let name = if r.starts_with("unique") {
                    format!("{r}@{thread}")
                } else {
                    r
                };
                out.push(Event::Timer {
                    timer: TimerId(intern(&mut self.timers, &name)),
                    period,
                    absolute,
                });
            }
            "lock" | "unlock" => {
                let m = MutexId(intern(&mut self.mutexes, string(v, at)?));
                out.push(if kind == "lock" {
                    Event::Lock(m)
                } else {
                    Event::Unlock(m)
                });
            }
            "signal" | "broad" => {
                let c = CondId(intern(&mut self.conds, string(v, at)?));
                out.push(if kind == "signal" {
                    Event::Signal(c)
                } else {
                    Event::Broad(c)
                });
            }
            "wait" | "sync" => {
                let f = fields(v, at, &["ref", "mutex"], &["ref", "mutex"])?;
                let get = |name: &str| {
                    let (_, x) = f.iter().find(|(k, _)| *k == name).expect("required");
                    string(x, &format!("{at}.{name}"))
                };
                let cond = CondId(intern(&mut self.conds, get("ref")?));
                let mutex = MutexId(intern(&mut self.mutexes, get("mutex")?));
                out.push(if kind == "wait" {
                    Event::Wait { cond, mutex }
                } else {
                    Event::SignalWait { cond, mutex }
                });
            }
            "barrier" => {
                let name = string(v, at)?;
                let i = match self.barriers.iter().position(|(n, _)| n == name) {
                    Some(i) => i,
                    None => {
                        self.barriers.push((name.to_string(), 0));
                        self.barriers.len() - 1
                    }
                };
                // Every reference (per thread instance) is one user.
                self.barriers[i].1 += 1;
                out.push(Event::Barrier(BarrierId(i as u32)));
            }
            "suspend" | "resume" => {
                // rt-app: suspend = lock; cond_wait; unlock on the target's
                // resources; resume = lock; broadcast; unlock. An empty
                // suspend names the thread itself (workgen fills it in).
                let s = string(v, at)?;
                let target = if s.is_empty() { task } else { s };
                let m = MutexId(intern(&mut self.mutexes, &format!("suspend:{target}")));
                let c = CondId(intern(&mut self.conds, &format!("suspend:{target}")));
                out.push(Event::Lock(m));
                out.push(if kind == "suspend" {
                    Event::Wait { cond: c, mutex: m }
                } else {
                    Event::Broad(c)
                });
                out.push(Event::Unlock(m));
            }
            "yield" => out.push(Event::Yield),
            "mem" | "iorun" => return Err(InputError::new(
                at,
                "mem and iorun are not modelled (no memory-bandwidth or I/O device model): use run",
            )),
            "syscall" => {
                let f = fields(v, at, &["lock", "run", "hold", "kind"], &["lock", "hold"])?;
                let mut lock = KlockId(0);
                let (mut run, mut hold) = (Nanos::ZERO, Nanos::ZERO);
                let mut mode = None;
                for (k, x) in f {
                    let a = format!("{at}.{k}");
                    match k {
                        "lock" => lock = KlockId(intern(&mut self.klocks, string(x, &a)?)),
                        "run" => run = micros(x, &a)?,
                        "kind" => {
                            mode = match string(x, &a)? {
                                "spin" => None,
                                "mutex" => Some(SleepMode::Mutex),
                                "rwsem_read" => Some(SleepMode::Read),
                                "rwsem_write" => Some(SleepMode::Write),
                                other => {
                                    return Err(InputError::new(
                                        &a,
                                        format!(
                                        "\"{other}\": allowed spin, mutex, rwsem_read, rwsem_write"
                                    ),
                                    ))
                                }
                            }
                        }
                        _ => hold = micros(x, &a)?,
                    }
                }
                out.push(match mode {
                    None => Event::Syscall { lock, run, hold },
                    Some(mode) => Event::SleepingLock {
                        lock,
                        mode,
                        run,
                        hold,
                    },
                });
            }
            "munmap" => {
                let f = fields(v, at, &["run", "pages"], &["run"])?;
                let mut run = Nanos::ZERO;
                let mut pages = 1;
                for (k, x) in f {
                    let a = format!("{at}.{k}");
                    match k {
                        "run" => run = micros(x, &a)?,
                        _ => pages = int(x, &a, 1, 1 << 30, " pages")? as u32,
                    }
                }
                out.push(Event::Munmap { run, pages });
            }
            "smp_call" => {
                let f = fields(v, at, &["targets", "handler", "wait"], &["handler"])?;
                let (mut targets, mut handler, mut wait) = (1, Nanos::ZERO, true);
                for (k, x) in f {
                    let a = format!("{at}.{k}");
                    match k {
                        "targets" => targets = int(x, &a, 1, 1024, " CPUs")? as u32,
                        "handler" => handler = micros(x, &a)?,
                        _ => wait = boolean(x, &a)?,
                    }
                }
                out.push(Event::SmpCall {
                    targets,
                    handler,
                    wait,
                });
            }
            "put" | "get" => {
                let f = fields(v, at, &["queue", "items", "capacity"], &["queue"])?;
                let (mut name, mut items, mut cap) = ("", 1, None);
                for (k, x) in f {
                    let a = format!("{at}.{k}");
                    match k {
                        "queue" => name = string(x, &a)?,
                        "items" => items = int(x, &a, 1, MAX_QUEUE_ITEMS, " items")? as u32,
                        _ => cap = Some((int(x, &a, 1, MAX_QUEUE_ITEMS, " items")? as u64, a)),
                    }
                }
                let i = match self.queues.iter().position(|(n, ..)| n == name) {
                    Some(i) => i,
                    None => {
                        self.queues.push((name.to_string(), None, at.to_string()));
                        self.queues.len() - 1
                    }
                };
                if let Some((c, a)) = cap {
                    match &self.queues[i].1 {
                        Some((c0, a0)) if *c0 != c => {
                            return Err(InputError::new(
                                a,
                                format!(
                                    "{c}: queue \"{name}\" has capacity {c0} at {a0}: one queue has one capacity"
                                ),
                            ))
                        }
                        Some(_) => {}
                        None => self.queues[i].1 = Some((c, a)),
                    }
                }
                let queue = QueueId(i as u32);
                out.push(if kind == "put" {
                    Event::Put { queue, items }
                } else {
                    Event::Get { queue, items }
                });
            }
            _ => unreachable!("every event kind is handled"),
        }
        Ok(())
    }

    /// A phase object (or a task object without `phases`): `extra` lists the
    /// non-event keys allowed besides `loop` and `cpus`.
    #[allow(clippy::too_many_arguments)]
    fn phase(
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
            let a = format!("{at}.{k}");
            if k == "loop" {
                // -1: the phase repeats forever (rt-app counts up and never
                // meets a negative loop count).
                let l = int(x, &a, -1, i64::MAX, " (-1: forever)")?;
                if l == 0 {
                    return Err(InputError::new(
                        a,
                        "loop 0 is not allowed: -1 (forever) or >= 1",
                    ));
                }
                loops = (l > 0).then_some(l as u64);
            } else if k == "cpus" {
                let c = cpus(x, &a)?;
                if Some(&c) != thread_cpus.as_ref() {
                    return Err(InputError::new(
                        a,
                        "phase-level affinity changes are not modelled yet: put cpus on the task",
                    ));
                }
            } else if event_kind(k).is_some() {
                self.event(k, x, &a, thread, task, &mut events)?;
            } else if !extra.contains(&k.as_str()) {
                let mut allowed: Vec<&str> = vec!["loop", "cpus"];
                allowed.extend_from_slice(extra);
                return Err(InputError::new(
                    a,
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

    fn task(&mut self, task: &str, v: &Json, out: &mut Vec<Thread>) -> Result<(), InputError> {
        let at = format!("tasks.{task}");
        let kv = obj(v, &at)?;
        no_dups(kv, &at)?;
        let get = |k: &str| kv.iter().find(|(n, _)| n == k).map(|(_, x)| x);
        let instances = match get("instance") {
            Some(x) => int(x, &format!("{at}.instance"), 1, 100_000, "")? as u32,
            None => 1,
        };
        if let Some(p) = get("policy") {
            policy(p, &format!("{at}.policy"))?;
        }
        let nice = match get("priority") {
            Some(x) => int(
                x,
                &format!("{at}.priority"),
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
            Some(x) => us(int(x, &format!("{at}.delay"), 0, 3_600_000_000, " us")?),
            None => Nanos::ZERO,
        };
        let timer_slack = match get("oversub") {
            Some(x) => task_extension(x, &format!("{at}.oversub"))?,
            None => None,
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
                            let l = int(x, &format!("{at}.loop"), -1, i64::MAX, " (-1: forever)")?;
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
                    let p = self.phase(task, v, &at, &name, task, &extra, &tcpus)?;
                    (vec![p], None)
                }
            };
            out.push(Thread {
                name,
                task: task.to_string(),
                nice,
                cpus: tcpus.clone(),
                delay,
                loops,
                timer_slack,
                phases,
            });
        }
        Ok(())
    }
}

/// The longest `timer_slack` (us): the scenario TOML's bound.
const MAX_TIMER_SLACK_US: f64 = 1_000_000.0;

/// A task's `oversub` object (extension; rt-app ignores the key, which no
/// event name is a prefix of): `timer_slack`, the thread's
/// `prctl(PR_SET_TIMERSLACK)` in us, 0.001 (1 ns) ..= 1 s. `oversub record`
/// sets it to 1 ns on derived threads, whose sleeps replay measured blocked
/// times that already include the real kernel's slack.
fn task_extension(v: &Json, at: &str) -> Result<Option<Nanos>, InputError> {
    let kv = obj(v, at)?;
    no_dups(kv, at)?;
    let mut slack = None;
    for (k, x) in kv {
        let a = format!("{at}.{k}");
        if k != "timer_slack" {
            return Err(InputError::new(a, "unknown key: allowed timer_slack"));
        }
        let range = "allowed 0.001 ..= 1000000 us (1 ns ..= 1 s; prctl(PR_SET_TIMERSLACK, 0) would restore the default)";
        let f = match x {
            Json::Int(i) => *i as f64,
            Json::Float(f) => *f,
            o => {
                return Err(InputError::new(
                    a,
                    format!("expected a number of us, found {}: {range}", o.kind()),
                ))
            }
        };
        let ns = (f * 1000.0).round();
        if !(f.is_finite() && (1.0..=MAX_TIMER_SLACK_US * 1000.0).contains(&ns)) {
            return Err(InputError::new(a, format!("{f} is out of range: {range}")));
        }
        slack = Some(Nanos(ns as u64));
    }
    Ok(slack)
}

/// Parses rt-app JSON text into a validated program.
pub fn parse(src: &str) -> Result<RtApp, InputError> {
    let root = json::parse(src).map_err(|m| InputError::new("", m))?;
    let kv = obj(&root, "(root)")?;
    no_dups(kv, "(root)")?;
    let mut b = Builder {
        mutexes: Vec::new(),
        conds: Vec::new(),
        barriers: Vec::new(),
        timers: Vec::new(),
        klocks: Vec::new(),
        queues: Vec::new(),
        fidelity: Vec::new(),
    };
    let mut duration = None;
    let mut tasks = None;
    let mut oversub = None;
    for (k, v) in kv {
        match k.as_str() {
            "global" => duration = b.global(v)?,
            "tasks" => tasks = Some(v),
            "resources" => {
                obj(v, "resources")?;
                b.note(
                    "resources",
                    Fidelity::Ignored,
                    "rt-app 1.0 creates resources on first use; the section is only kept for compatibility",
                );
            }
            "oversub" => oversub = Some(v.clone()),
            // Where the program's parameters came from (`oversub record`,
            // docs/workloads.md): documentation only, like a comment, so
            // it is not a fidelity entry; rt-app ignores the key.
            "provenance" => {
                obj(v, "provenance")?;
            }
            _ => {
                return Err(InputError::new(
                    k.clone(),
                    "unknown key: allowed global, tasks, resources, oversub, provenance",
                ))
            }
        }
    }
    let Some(tasks) = tasks else {
        return Err(InputError::new("tasks", "required"));
    };
    let tkv = obj(tasks, "tasks")?;
    no_dups(tkv, "tasks")?;
    if tkv.is_empty() {
        return Err(InputError::new(
            "tasks",
            "no tasks: a program needs at least one",
        ));
    }
    let mut threads = Vec::new();
    for (name, v) in tkv {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(InputError::new(
                format!("tasks.{name}"),
                "task names may use letters, digits, '_', '-', '.'",
            ));
        }
        b.task(name, v, &mut threads)?;
    }
    let mut queues = Vec::new();
    for (name, cap, first) in b.queues {
        let Some((cap, _)) = cap else {
            return Err(InputError::new(
                format!("{first}.capacity"),
                format!("queue \"{name}\" has no capacity: give \"capacity\" (1 ..= {MAX_QUEUE_ITEMS} items) on one of its put or get events"),
            ));
        };
        queues.push((name, cap));
    }
    let program = Program {
        threads,
        mutexes: b.mutexes,
        conds: b.conds,
        barriers: b.barriers,
        timers: b.timers,
        klocks: b.klocks,
        queues,
        duration,
        fidelity: b.fidelity,
    };
    if program.duration.is_none() && !program.finite() {
        let t = program
            .threads
            .iter()
            .find(|t| t.loops.is_none() || t.phases.iter().any(|p| p.loops.is_none()))
            .expect("not finite");
        return Err(InputError::new(
            "global.duration",
            format!(
                "-1 (until every thread ends) but thread {} loops forever: give a duration, or finite task and phase loops with phases",
                t.name
            ),
        ));
    }
    program
        .validate()
        .map_err(|m| InputError::new("tasks", m))?;
    Ok(RtApp { program, oversub })
}

#[cfg(test)]
mod tests;
