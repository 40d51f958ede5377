//! One rt-app event (`run`, `sleep`, `lock`, `wait`, `barrier`, the
//! extensions, ...) lowered to the program IR.

use super::value::{boolean, fields, int, micros, string, Sub};
use super::{event_kind, intern, us, Builder, MAX_QUEUE_BATCH, MAX_QUEUE_ITEMS};
use crate::engine::Nanos;
use crate::workload::ir::{
    BarrierId, CondId, CounterId, Event, Fidelity, KlockId, MutexId, QueueId, SleepMode, ThreadId,
    TimerId, MAX_REPEAT_PER_LOOP,
};
use crate::workload::json::Json;
use crate::workload::InputError;
use std::fmt::Display;

impl Builder {
    /// One event of a phase; `out` receives its IR (rt-app's compound
    /// events become several).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event(
        &mut self,
        key: &str,
        v: &Json,
        at: impl Display + Copy,
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
                    &at.to_string(),
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
                    let a = Sub(&at, k.as_str());
                    match k.as_str() {
                        "ref" => r = string(x, a)?.to_string(),
                        // 0 is allowed: the timer never sleeps (rt-app's
                        // tune_json.py uses it to switch timers off).
                        "period" => period = int(x, a, 0, 3_600_000_000, " us").map(us)?,
                        _ => {
                            absolute = match string(x, a)? {
                                "relative" => false,
                                "absolute" => true,
                                m => {
                                    return Err(InputError::new(
                                        a.to_string(),
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
                    string(x, Sub(&at, name))
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
                at.to_string(),
                "mem and iorun are not modelled (no memory-bandwidth or I/O device model): use run",
            )),
            "syscall" => {
                let f = fields(
                    v,
                    at,
                    &[
                        "lock",
                        "run",
                        "hold",
                        "kind",
                        "irqsave",
                        "flush",
                        "times",
                        "per_loops",
                    ],
                    &["lock", "hold"],
                )?;
                let mut lock = KlockId(0);
                let (mut run, mut hold) = (Nanos::ZERO, Nanos::ZERO);
                let mut mode = None;
                let mut irqsave = None;
                let mut flush = None;
                let mut rep = Repeat::default();
                for (k, x) in f {
                    let a = Sub(&at, k.as_str());
                    if rep.field(k, x, a)? {
                        continue;
                    }
                    match k.as_str() {
                        "flush" => flush = Some((int(x, a, 1, 1 << 30, " pages")? as u32, a)),
                        "lock" => {
                            lock = KlockId(intern(&mut self.klocks, string(x, a)?));
                            if self.klock_irqsave.len() < self.klocks.len() {
                                self.klock_irqsave.push((None, a.to_string()));
                            }
                        }
                        "run" => run = micros(x, a)?,
                        "irqsave" => irqsave = Some((boolean(x, a)?, a)),
                        "kind" => {
                            mode = match string(x, a)? {
                                "spin" => None,
                                "mutex" => Some(SleepMode::Mutex),
                                "rwsem_read" => Some(SleepMode::Read),
                                "rwsem_write" => Some(SleepMode::Write),
                                other => {
                                    return Err(InputError::new(
                                        a.to_string(),
                                        format!(
                                        "\"{other}\": allowed spin, mutex, rwsem_read, rwsem_write"
                                    ),
                                    ))
                                }
                            }
                        }
                        _ => hold = micros(x, a)?,
                    }
                }
                if let Some((irq, a)) = irqsave {
                    let a = a.to_string();
                    if mode.is_some() {
                        return Err(InputError::new(
                            a.to_string(),
                            "irqsave is a spinlock's attribute: allowed only with kind \"spin\" (or no kind)",
                        ));
                    }
                    self.klock_irqsave_set(lock, irq, &a)?;
                }
                if let (Some((_, a)), None) = (&flush, mode) {
                    return Err(InputError::new(
                        a.to_string(),
                        "flush is a sleeping lock's section's: allowed only with kind mutex, rwsem_read or rwsem_write",
                    ));
                }
                rep.push(out, at)?;
                out.push(match mode {
                    None => Event::Syscall { lock, run, hold },
                    Some(mode) => Event::SleepingLock {
                        lock,
                        mode,
                        run,
                        hold,
                        flush: flush.map_or(0, |(n, _)| n),
                    },
                });
            }
            "munmap" => {
                let f = fields(
                    v,
                    at,
                    &["run", "pages", "freed_tables", "times", "per_loops"],
                    &["run"],
                )?;
                let mut run = Nanos::ZERO;
                let mut pages = 1;
                let mut freed_tables = false;
                let mut rep = Repeat::default();
                for (k, x) in f {
                    let a = Sub(&at, k.as_str());
                    if rep.field(k, x, a)? {
                        continue;
                    }
                    match k.as_str() {
                        "run" => run = micros(x, a)?,
                        "freed_tables" => freed_tables = boolean(x, a)?,
                        _ => pages = int(x, a, 1, 1 << 30, " pages")? as u32,
                    }
                }
                rep.push(out, at)?;
                out.push(Event::Munmap {
                    run,
                    pages,
                    freed_tables,
                });
            }
            "smp_call" => {
                let f = fields(v, at, &["targets", "handler", "wait"], &["handler"])?;
                let (mut targets, mut handler, mut wait) = (1, Nanos::ZERO, true);
                for (k, x) in f {
                    let a = Sub(&at, k.as_str());
                    match k.as_str() {
                        "targets" => targets = int(x, a, 1, 1024, " CPUs")? as u32,
                        "handler" => handler = micros(x, a)?,
                        _ => wait = boolean(x, a)?,
                    }
                }
                out.push(Event::SmpCall {
                    targets,
                    handler,
                    wait,
                });
            }
            "put" | "get" => {
                // Only a put takes a rate (`times`, `per_loops`) and
                // `if_waited` (a watchdog's kick).
                let keys: &[&str] = if kind == "put" {
                    &[
                        "queue",
                        "items",
                        "capacity",
                        "times",
                        "per_loops",
                        "if_waited",
                    ]
                } else {
                    &["queue", "items", "capacity"]
                };
                let f = fields(v, at, keys, &["queue"])?;
                let (mut name, mut items, mut cap) = ("", 1, None);
                let mut rep = Repeat::default();
                let mut if_waited = None;
                for (k, x) in f {
                    let a = Sub(&at, k.as_str());
                    if rep.field(k, x, a)? {
                        continue;
                    }
                    match k.as_str() {
                        "queue" => name = string(x, a)?,
                        "if_waited" => if_waited = Some(micros(x, a)?),
                        "items" => items = int(x, a, 1, MAX_QUEUE_BATCH, " items")? as u32,
                        _ => {
                            cap = Some((
                                int(x, a, 1, MAX_QUEUE_ITEMS, " items")? as u64,
                                a.to_string(),
                            ))
                        }
                    }
                }
                let queue = self.queue(name, cap, at)?;
                rep.push(out, at)?;
                out.push(if kind == "put" {
                    Event::Put {
                        queue,
                        items,
                        if_waited,
                    }
                } else {
                    Event::Get { queue, items }
                });
            }
            "count" => {
                let f = fields(
                    v,
                    at,
                    &["counter", "every", "first", "queue", "items"],
                    &["counter", "every", "queue"],
                )?;
                let (mut counter, mut name, mut items) = ("", "", 1);
                let (mut every, mut first) = (0, None);
                let max = i64::from(u32::MAX);
                for (k, x) in f {
                    let a = Sub(&at, k.as_str());
                    match k.as_str() {
                        "counter" => counter = string(x, a)?,
                        "queue" => name = string(x, a)?,
                        "every" => every = int(x, a, 1, max, " counts")? as u32,
                        "first" => first = Some(int(x, a, 1, max, " counts")? as u32),
                        _ => items = int(x, a, 1, max, " items")? as u32,
                    }
                }
                let queue = self.queue(name, None, at)?;
                out.push(Event::Count {
                    counter: CounterId(intern(&mut self.counters, counter)),
                    every,
                    first: first.unwrap_or(every),
                    queue,
                    items,
                });
            }
            // The child is named by its task; the task list is resolved
            // after every task is read (`Builder::expand_forks`): the id is
            // an index into `self.forks` until then.
            "fork" | "vfork" => {
                let name = string(v, at)?;
                let i = match self.forks.iter().position(|(n, _)| n == name) {
                    Some(i) => i,
                    None => {
                        self.forks.push((name.to_string(), at.to_string()));
                        self.forks.len() - 1
                    }
                };
                out.push(Event::Fork {
                    child: ThreadId(i as u32),
                    vfork: kind == "vfork",
                });
            }
            _ => unreachable!("every event kind is handled"),
        }
        Ok(())
    }

    /// The queue `name` as an event at `at` references it, with the
    /// capacity it gives (`cap`, with its path): one queue has one capacity.
    fn queue(
        &mut self,
        name: &str,
        cap: Option<(u64, String)>,
        at: impl Display,
    ) -> Result<QueueId, InputError> {
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
                        a.to_string(),
                        format!(
                            "{c}: queue \"{name}\" has capacity {c0} at {a0}: one queue has one capacity"
                        ),
                    ))
                }
                Some(_) => {}
                None => self.queues[i].1 = Some((c, a)),
            }
        }
        Ok(QueueId(i as u32))
    }
}

/// `times` and `per_loops` of a `syscall`, `munmap` or `put` (the `Repeat`
/// extension: the event runs `times` times every `per_loops` loops).
#[derive(Default)]
struct Repeat {
    times: Option<u32>,
    per_loops: Option<u32>,
}

impl Repeat {
    /// Takes key `k` if it is one of the two; true when it was.
    fn field(&mut self, k: &str, x: &Json, at: impl Display + Copy) -> Result<bool, InputError> {
        let n = |x| int(x, at, 1, u32::MAX.into(), "").map(|n| n as u32);
        match k {
            "times" => self.times = Some(n(x)?),
            "per_loops" => self.per_loops = Some(n(x)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The `Repeat` event before the event, unless both are absent (once
    /// per loop).
    fn push(&self, out: &mut Vec<Event>, at: impl Display) -> Result<(), InputError> {
        if self.times.is_some() || self.per_loops.is_some() {
            let (times, per_loops) = (self.times.unwrap_or(1), self.per_loops.unwrap_or(1));
            if times.div_ceil(per_loops) > MAX_REPEAT_PER_LOOP {
                return Err(InputError::new(
                    format!("{at}.times"),
                    format!("{times} per {per_loops} loops: allowed at most {MAX_REPEAT_PER_LOOP} per loop"),
                ));
            }
            out.push(Event::Repeat { times, per_loops });
        }
        Ok(())
    }
}
