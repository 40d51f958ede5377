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
//! behaviour (docs/workloads.md, "Extensions"), `put` / `get` on
//! bounded, counted queues (docs/workloads.md, "Queues") and `count` on a
//! shared counter that puts into a queue every N counts ("Counters").
//!
//! This file holds the grammar's key lists, the IR builder and the root;
//! `rtapp/task.rs` lowers a task and its phases, `rtapp/event.rs` one event,
//! `rtapp/value.rs` reads typed, bounded JSON values.

use super::ir::{Event, Fidelity, FidelityNote, KlockId, Program};
use super::json::{self, Json};
use super::InputError;
use crate::engine::Nanos;
use value::{boolean, fields, int, no_dups, obj, policy, string};

mod event;
mod fork;
mod task;
mod task_ext;
mod value;

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
const EXT_EVENTS: [&str; 8] = [
    "syscall", "munmap", "smp_call", "put", "get", "count", "fork", "vfork",
];
/// The largest queue capacity (items; 2^32 stands for "unbounded" in
/// derived programs).
const MAX_QUEUE_ITEMS: i64 = 1 << 32;
/// The largest batch one event moves (the IR holds it in a u32).
const MAX_QUEUE_BATCH: i64 = u32::MAX as i64;
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
    /// Per kernel lock: its `irqsave` attribute once an event gave it
    /// (with that event's path), else the path of its first reference.
    klock_irqsave: Vec<(Option<bool>, String)>,
    queues: Vec<QueueRef>,
    counters: Vec<String>,
    /// Tasks named by `fork` events (child process images), with the
    /// path of their first reference.
    forks: Vec<(String, String)>,
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

/// The kernel spinlock a program names that 6.12 takes with
/// `spin_lock_irqsave()` and that files written before the `irqsave`
/// attribute relied on by name: `zone` (`zone->lock`, every site of
/// mm/page_alloc.c). Such a file must now say so.
const IRQSAVE_BY_NAME: &str = "zone";

impl Builder {
    /// Sets kernel lock `lock`'s `irqsave` attribute from the event at
    /// `at`: one lock is taken one way.
    fn klock_irqsave_set(&mut self, lock: KlockId, irq: bool, at: &str) -> Result<(), InputError> {
        let slot = &mut self.klock_irqsave[lock.idx()];
        match &slot.0 {
            Some(old) if *old != irq => Err(InputError::new(
                at,
                format!(
                    "{irq}: kernel lock \"{}\" has irqsave {old} at {}; one lock is taken one way (spin_lock_irqsave or spin_lock)",
                    self.klocks[lock.idx()],
                    slot.1
                ),
            )),
            Some(_) => Ok(()),
            None => {
                *slot = (Some(irq), at.to_string());
                Ok(())
            }
        }
    }

    /// Every kernel lock's `irqsave` (false when no event gives it);
    /// refused: a `zone` spinlock without it (its meaning before the
    /// attribute was irqsave, by name).
    fn klock_irqsave(&self, spin: &[bool]) -> Result<Vec<bool>, InputError> {
        self.klock_irqsave
            .iter()
            .zip(&self.klocks)
            .zip(spin)
            .map(|(((v, at), name), &spin)| match v {
                Some(v) => Ok(*v),
                None if spin && name == IRQSAVE_BY_NAME => Err(InputError::new(
                    at,
                    format!(
                        "\"{name}\": zone->lock is taken with spin_lock_irqsave() in Linux 6.12: give \"irqsave\": true (or false) on its syscall events"
                    ),
                )),
                None => Ok(false),
            })
            .collect()
    }

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
            match k.as_str() {
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
        klock_irqsave: Vec::new(),
        queues: Vec::new(),
        counters: Vec::new(),
        forks: Vec::new(),
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
    let threads = fork::expand(threads, &b.forks)?;
    let mut queues = Vec::new();
    // Spinlocks (`syscall` without a sleeping kind) of the file.
    let mut spin = vec![false; b.klocks.len()];
    for e in threads
        .iter()
        .flat_map(|t| &t.phases)
        .flat_map(|p| &p.events)
    {
        if let Event::Syscall { lock, .. } = e {
            spin[lock.idx()] = true;
        }
    }
    let klock_irqsave = b.klock_irqsave(&spin)?;
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
        klock_irqsave,
        queues,
        counters: b.counters,
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
