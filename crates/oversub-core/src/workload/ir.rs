//! The program IR: validated thread programs, the one form every workload
//! input becomes (rt-app JSON today; named workloads and TOML tasks later),
//! with a fidelity record of what the input said that the model only
//! approximates or ignores. Anything the model cannot run at all is refused
//! by the front end instead (docs/workloads.md, "Program IR").
//!
//! A program is a set of threads sharing named resources (mutexes,
//! condition variables, barriers, timers, kernel locks). A thread runs its
//! phases in order, each phase `loops` times, the whole list `loops` times
//! (or forever); a phase is a list of events.

use crate::engine::Nanos;
use serde::Serialize;

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub struct $name(pub u32);
        impl $name {
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// A user-space mutex (`pthread_mutex_t`, futex based).
    MutexId
);
id!(
    /// A condition variable (`pthread_cond_t`).
    CondId
);
id!(
    /// A barrier (rt-app's mutex + condvar + counter).
    BarrierId
);
id!(
    /// A timer (the absolute-deadline reference of `timer` events).
    TimerId
);
id!(
    /// A guest kernel lock taken by a syscall (extension).
    KlockId
);
id!(
    /// A thread of the program (after instance expansion).
    ThreadId
);
id!(
    /// A bounded, counted FIFO queue between threads (extension).
    QueueId
);

/// One event of a phase (plain data: `Copy`, so the interpreter reads the
/// current one without a per-variant clone).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// Use this much CPU time (rt-app `run`: a calibrated busy loop).
    Run(Nanos),
    /// Busy-loop until this much wall time has passed (rt-app `runtime`).
    Runtime(Nanos),
    /// `nanosleep` for this long.
    Sleep(Nanos),
    /// Sleep until the timer's next expiry (period `period`); `absolute`:
    /// a missed expiry is not re-based on now.
    Timer {
        timer: TimerId,
        period: Nanos,
        absolute: bool,
    },
    Lock(MutexId),
    Unlock(MutexId),
    /// `pthread_cond_wait(cond, mutex)` (the mutex is held).
    Wait {
        cond: CondId,
        mutex: MutexId,
    },
    /// `pthread_cond_signal`.
    Signal(CondId),
    /// `pthread_cond_broadcast`.
    Broad(CondId),
    /// Signal then wait on the same condition (rt-app `sync`).
    SignalWait {
        cond: CondId,
        mutex: MutexId,
    },
    /// Wait until every user of the barrier arrived.
    Barrier(BarrierId),
    /// `sched_yield()`.
    Yield,
    /// Extension: a syscall that runs `run` in the kernel, of which `hold`
    /// (at the end) under the kernel spinlock `lock`.
    Syscall {
        lock: KlockId,
        run: Nanos,
        hold: Nanos,
    },
    /// Extension: a syscall that runs `run` in the kernel, of which `hold`
    /// (at the end) under the kernel sleeping lock `lock` (a `struct mutex`
    /// or an `rw_semaphore`, by `mode`): a waiter spins optimistically while
    /// the owner runs, else sleeps (`syscall` with `kind`).
    SleepingLock {
        lock: KlockId,
        mode: SleepMode,
        run: Nanos,
        hold: Nanos,
    },
    /// Extension: `munmap` of `pages` pages: `run` of kernel work, then a
    /// TLB shootdown of every other CPU the process's threads ran on
    /// (`flush_tlb_multi`, synchronous).
    Munmap {
        run: Nanos,
        pages: u32,
    },
    /// Extension: `smp_call_function_single` (or `_many` with `targets`
    /// CPUs) with `wait`: the handler runs `handler` on each target.
    SmpCall {
        targets: u32,
        handler: Nanos,
        wait: bool,
    },
    /// Extension: put `items` items into a bounded queue as one batch
    /// (a pthread mutex + two condition variables queue): blocks while the
    /// batch does not fit; then wakes one waiting consumer.
    Put {
        queue: QueueId,
        items: u32,
    },
    /// Extension: take `items` items from a queue as one batch: blocks
    /// while fewer are queued; then wakes one waiting producer.
    Get {
        queue: QueueId,
        items: u32,
    },
}

/// How a `SleepingLock` event takes its kernel lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SleepMode {
    /// `mutex_lock` (kernel/locking/mutex.c).
    Mutex,
    /// `down_read` (kernel/locking/rwsem.c): shared with other readers.
    Read,
    /// `down_write`.
    Write,
}

impl Event {
    /// Whether the event needs the guest kernel model (an extension).
    pub fn is_kernel_extension(&self) -> bool {
        matches!(
            self,
            Event::Syscall { .. }
                | Event::SleepingLock { .. }
                | Event::Munmap { .. }
                | Event::SmpCall { .. }
        )
    }
}

/// A phase: `events`, run `loops` (>= 1) times in a row (None: forever,
/// so later phases are never reached).
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub name: String,
    pub loops: Option<u64>,
    pub events: Vec<Event>,
}

/// One thread (one instance of a task object).
#[derive(Clone, Debug, PartialEq)]
pub struct Thread {
    /// Unique name: the task name, or `NAME.i` for instance i of several.
    pub name: String,
    /// The task object it came from (the real thread's comm).
    pub task: String,
    pub nice: i32,
    /// CPU affinity (None = all CPUs).
    pub cpus: Option<Vec<u32>>,
    /// Start delay after the common start.
    pub delay: Nanos,
    /// Passes over the phase list (None = until the end of the run).
    pub loops: Option<u64>,
    pub phases: Vec<Phase>,
}

/// How faithfully the model runs an input feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Run, but not exactly as the real program does (see `why`).
    Approximated,
    /// Accepted and without effect on scheduling (logging options...).
    Ignored,
}

/// One entry of the fidelity record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FidelityNote {
    /// Where in the input (a JSON path such as `tasks.t0.phases.p1.runtime`).
    pub at: String,
    pub fidelity: Fidelity,
    pub why: String,
}

/// A validated program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub threads: Vec<Thread>,
    pub mutexes: Vec<String>,
    pub conds: Vec<String>,
    /// Barrier names with their number of users (arrivals that release it).
    pub barriers: Vec<(String, u32)>,
    pub timers: Vec<String>,
    pub klocks: Vec<String>,
    /// Queue names with their capacity in items (the `put`/`get`
    /// extension).
    pub queues: Vec<(String, u64)>,
    /// Run length (None: until every thread has finished).
    pub duration: Option<Nanos>,
    pub fidelity: Vec<FidelityNote>,
}

impl Program {
    /// Whether any thread uses a kernel-side extension event.
    pub fn uses_kernel_extensions(&self) -> bool {
        self.threads
            .iter()
            .flat_map(|t| &t.phases)
            .flat_map(|p| &p.events)
            .any(Event::is_kernel_extension)
    }

    /// Multiplies every `run` (not `runtime`, a wall-clock event) by
    /// `factor`: what a calibrated busy loop really uses on some machine.
    pub fn scale_runs(&mut self, factor: f64) {
        for e in self
            .threads
            .iter_mut()
            .flat_map(|t| &mut t.phases)
            .flat_map(|p| &mut p.events)
        {
            if let Event::Run(d) = e {
                *d = Nanos((d.0 as f64 * factor).round() as u64);
            }
        }
    }

    /// Whether every thread ends by itself.
    pub fn finite(&self) -> bool {
        self.threads
            .iter()
            .all(|t| t.loops.is_some() && t.phases.iter().all(|p| p.loops.is_some()))
    }

    /// Checks what the interpreter relies on; the front ends produce
    /// programs that pass (this is their contract, property-tested). The
    /// error names thread, phase and event.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads.is_empty() {
            return Err("a program needs at least one thread".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for t in &self.threads {
            if !names.insert(&t.name) {
                return Err(format!("thread name \"{}\" is used twice", t.name));
            }
            if t.phases.is_empty() {
                return Err(format!("thread {}: no phases", t.name));
            }
            if t.loops == Some(0) {
                return Err(format!("thread {}: loop 0 runs nothing", t.name));
            }
            for p in &t.phases {
                let at = |i: usize| format!("thread {} phase {} event {i}", t.name, p.name);
                if p.loops == Some(0) {
                    return Err(format!(
                        "thread {} phase {}: loop must be >= 1",
                        t.name, p.name
                    ));
                }
                if p.events.is_empty() {
                    return Err(format!("thread {} phase {}: no events", t.name, p.name));
                }
                // Mutexes are taken and released within a phase pass, in
                // any nesting, never twice.
                let mut held: Vec<MutexId> = Vec::new();
                for (i, e) in p.events.iter().enumerate() {
                    let bad = |id: usize, n: usize, what: &str| {
                        (id >= n).then(|| format!("{}: unknown {what} {id}", at(i)))
                    };
                    let check = match e {
                        Event::Lock(m) | Event::Unlock(m) => {
                            bad(m.idx(), self.mutexes.len(), "mutex")
                        }
                        Event::Wait { cond, mutex } | Event::SignalWait { cond, mutex } => {
                            bad(cond.idx(), self.conds.len(), "condition")
                                .or_else(|| bad(mutex.idx(), self.mutexes.len(), "mutex"))
                        }
                        Event::Signal(c) | Event::Broad(c) => {
                            bad(c.idx(), self.conds.len(), "condition")
                        }
                        Event::Barrier(b) => bad(b.idx(), self.barriers.len(), "barrier"),
                        Event::Timer { timer, .. } => bad(timer.idx(), self.timers.len(), "timer"),
                        Event::Syscall { lock, .. } | Event::SleepingLock { lock, .. } => {
                            bad(lock.idx(), self.klocks.len(), "kernel lock")
                        }
                        Event::Put { queue, items } | Event::Get { queue, items } => {
                            bad(queue.idx(), self.queues.len(), "queue").or_else(|| {
                                let (name, cap) = &self.queues[queue.idx()];
                                (*items == 0 || u64::from(*items) > *cap).then(|| {
                                    format!(
                                        "{}: a batch of {items} items on queue \"{name}\" of capacity {cap}: allowed 1 ..= {cap}",
                                        at(i)
                                    )
                                })
                            })
                        }
                        _ => None,
                    };
                    if let Some(msg) = check {
                        return Err(msg);
                    }
                    match e {
                        Event::Lock(m) => {
                            if held.contains(m) {
                                return Err(format!(
                                    "{}: locks mutex \"{}\" it already holds",
                                    at(i),
                                    self.mutexes[m.idx()]
                                ));
                            }
                            held.push(*m);
                        }
                        Event::Unlock(m) => {
                            let Some(k) = held.iter().position(|h| h == m) else {
                                return Err(format!(
                                    "{}: unlocks mutex \"{}\" it does not hold",
                                    at(i),
                                    self.mutexes[m.idx()]
                                ));
                            };
                            held.remove(k);
                        }
                        Event::Wait { mutex, .. } | Event::SignalWait { mutex, .. }
                            if !held.contains(mutex) =>
                        {
                            return Err(format!(
                                "{}: waits with mutex \"{}\" not held (lock it first)",
                                at(i),
                                self.mutexes[mutex.idx()]
                            ));
                        }
                        _ => {}
                    }
                }
                if let Some(m) = held.first() {
                    return Err(format!(
                        "thread {} phase {}: mutex \"{}\" is still held at the end of the phase",
                        t.name,
                        p.name,
                        self.mutexes[m.idx()]
                    ));
                }
            }
        }
        // A kernel lock is one kind: a spinlock, a mutex or an rwsem.
        let mut kinds: Vec<Option<&str>> = vec![None; self.klocks.len()];
        for e in self
            .threads
            .iter()
            .flat_map(|t| &t.phases)
            .flat_map(|p| &p.events)
        {
            let (lock, kind) = match e {
                Event::Syscall { lock, .. } => (lock, "spin"),
                Event::SleepingLock {
                    lock,
                    mode: SleepMode::Mutex,
                    ..
                } => (lock, "mutex"),
                Event::SleepingLock { lock, .. } => (lock, "rwsem"),
                _ => continue,
            };
            match kinds[lock.idx()] {
                Some(k) if k != kind => {
                    return Err(format!(
                    "kernel lock \"{}\" is used as a {k} and as a {kind}: one lock has one kind",
                    self.klocks[lock.idx()]
                ))
                }
                _ => kinds[lock.idx()] = Some(kind),
            }
        }
        for (name, cap) in &self.queues {
            if *cap == 0 {
                return Err(format!(
                    "queue \"{name}\" has capacity 0: a queue holds at least 1 item"
                ));
            }
        }
        for (name, users) in &self.barriers {
            if *users < 2 {
                return Err(format!(
                    "barrier \"{name}\" has {users} user(s): a barrier needs at least 2"
                ));
            }
        }
        Ok(())
    }
}
