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
id!(
    /// An address space (`struct mm_struct`): the process a thread belongs
    /// to ([`Program::mm_of`]).
    MmId
);
id!(
    /// A counter shared by the threads that count on it (extension).
    CounterId
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
    /// the owner runs, else sleeps (`syscall` with `kind`). A non-zero
    /// `flush` ends the hold with a synchronous TLB shootdown of that many
    /// pages (as `Munmap`'s) before the release: `madvise(MADV_DONTNEED)`,
    /// whose `tlb_finish_mmu()` flushes before `mmap_read_unlock()` (6.12
    /// mm/madvise.c, mm/mmu_gather.c).
    SleepingLock {
        lock: KlockId,
        mode: SleepMode,
        run: Nanos,
        hold: Nanos,
        flush: u32,
    },
    /// Extension: `munmap` of `pages` pages: `run` of kernel work, then a
    /// TLB shootdown of every other CPU the process's threads ran on
    /// (`flush_tlb_multi`, synchronous). `freed_tables`: the unmap freed
    /// page tables (`mmu_gather::freed_tables`), so the flush also
    /// interrupts CPUs in lazy TLB mode.
    Munmap {
        run: Nanos,
        pages: u32,
        freed_tables: bool,
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
    /// batch does not fit; then wakes one waiting consumer. With
    /// `if_waited` the batch is put only when the first waiting consumer
    /// has waited at least that long (and nothing happens otherwise): a
    /// watchdog's kick of a stalled consumer, which never blocks and
    /// leaves no items behind.
    Put {
        queue: QueueId,
        items: u32,
        if_waited: Option<Nanos>,
    },
    /// Extension: take `items` items from a queue as one batch: blocks
    /// while fewer are queued; then wakes one waiting producer.
    Get {
        queue: QueueId,
        items: u32,
    },
    /// Extension: add 1 to a shared counter; the counts `first`,
    /// `first + every`, `first + 2 every`, ... also `put` `items` into
    /// `queue` (blocking while they do not fit). What a thread pool's
    /// allocator does when its allocation count fills a block (libvips'
    /// `wbuffer_allocate_fn` flushing a write buffer).
    Count {
        counter: CounterId,
        every: u32,
        first: u32,
        queue: QueueId,
        items: u32,
    },
    /// Extension: `fork()` + `execve()` of a child process, then
    /// `wait4()` for it (a job slot running a compiler, a shell running
    /// a command). The child is the thread `child` (a forked thread: see
    /// [`Thread::parent`]): it is created as a new task (the level's
    /// `sched_fork` + `wake_up_new_task`, placed by the fork balance),
    /// runs its phase list once, exits, and its exit wakes this thread.
    /// The kernel CPU of fork/exec/exit is the `run` events around it.
    /// With `vfork` (`vfork()`, glibc's `posix_spawn`: CLONE_VFORK) the
    /// parent first sleeps until the child has run its first event (its
    /// `execve`, which releases the parent's mm: `mm_release()` ->
    /// `complete_vfork_done()`), then waits for its exit.
    Fork {
        child: ThreadId,
        vfork: bool,
    },
    /// Extension: the next event of the phase (a kernel extension event
    /// that takes time, or a `munmap`) runs `times` times every
    /// `per_loops` loops of the thread, spread evenly: on the thread's
    /// k-th phase loop (k from 0, counted over all its phases) of thread i
    /// of the program's T, with o = i p / T, floor((k+o+1) t / p) -
    /// floor((k+o) t / p) times in a row, 0 included (a measured rate per
    /// op, written once instead of unrolled over a period of ops; the
    /// offset o spreads the instances of one task over the period).
    Repeat {
        times: u32,
        per_loops: u32,
    },
}

/// The most repetitions one `Repeat` gives its event in one loop.
pub const MAX_REPEAT_PER_LOOP: u32 = 100_000;

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
    /// Whether the event takes simulated time whenever it runs (the time
    /// check, `Program::check_time_advances`).
    pub fn takes_time(&self) -> bool {
        match *self {
            Event::Run(d) | Event::Runtime(d) | Event::Sleep(d) => d > Nanos::ZERO,
            Event::Timer { period, .. } => period > Nanos::ZERO,
            Event::Syscall { run, hold, .. } | Event::SleepingLock { run, hold, .. } => {
                run > Nanos::ZERO || hold > Nanos::ZERO
            }
            Event::Munmap { run, .. } => run > Nanos::ZERO,
            Event::SmpCall {
                targets,
                handler,
                wait,
            } => wait && targets > 0 && handler > Nanos::ZERO,
            _ => false,
        }
    }

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
    /// `timer_slack_ns` of its sleeps (`prctl(PR_SET_TIMERSLACK)`; None:
    /// the default, `task::DEFAULT_TIMER_SLACK`).
    pub timer_slack: Option<Nanos>,
    /// The real program's ops one phase loop of this thread stands for
    /// (the task `oversub` object's `ops_per_loop`; None: 1). A VM's
    /// `[[vm]] ops` counts phase loops times this.
    pub ops_per_loop: Option<f64>,
    /// A forked thread (a child process of the `fork` extension): the
    /// thread whose `Fork` events start it. It is not started at time 0;
    /// each fork runs its phase list once (`loops` is `Some(1)`).
    pub parent: Option<ThreadId>,
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
    /// Per kernel lock: taken with `spin_lock_irqsave()` (its waiters
    /// wait with IRQs off), the `syscall` attribute `irqsave`.
    pub klock_irqsave: Vec<bool>,
    /// Queue names with their capacity in items (the `put`/`get`
    /// extension).
    pub queues: Vec<(String, u64)>,
    /// Counter names (the `count` extension); each starts at 0.
    pub counters: Vec<String>,
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

    /// The address space of thread `t`: threads started at time 0 are the
    /// threads of one process (`MmId(0)`: they share its mm, as threads
    /// created with CLONE_VM do); a forked thread (the `fork` extension) is
    /// a process of its own (`MmId(1 + t)`): `fork()` / `vfork()` without
    /// CLONE_VM, then `execve()`, give the child a new mm (6.12
    /// kernel/fork.c `copy_mm()` -> `dup_mm()`, fs/exec.c `exec_mmap()`).
    /// A vfork child borrows its parent's mm until its exec, its first
    /// event: the model gives it its own from the start. A copy is forked
    /// again only after its previous process exited (its parent waits),
    /// so one id per copy is one live mm at a time.
    #[inline]
    pub fn mm_of(&self, t: usize) -> MmId {
        match self.threads[t].parent {
            None => MmId(0),
            Some(_) => MmId(1 + t as u32),
        }
    }

    /// Whether any thread forks a child process (the `fork` extension).
    pub fn uses_fork(&self) -> bool {
        self.threads.iter().any(|t| t.parent.is_some())
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
        for (ti, t) in self.threads.iter().enumerate() {
            // A child process's chain of parents ends at a thread started
            // at time 0 (no cycle), and each runs its phases once per fork.
            let mut up = t.parent;
            for _ in 0..=self.threads.len() {
                match up {
                    Some(p) if p.idx() < self.threads.len() && p.idx() != ti => {
                        up = self.threads[p.idx()].parent;
                    }
                    Some(p) if p.idx() == ti => {
                        return Err(format!("thread {}: its parents form a cycle", t.name))
                    }
                    Some(p) => {
                        return Err(format!(
                            "thread {}: parent {} is not another thread of the program",
                            t.name, p.0
                        ))
                    }
                    None => break,
                }
            }
            if up.is_some() {
                return Err(format!("thread {}: its parents form a cycle", t.name));
            }
            if t.parent.is_some() && (t.loops != Some(1) || t.delay != Nanos::ZERO) {
                return Err(format!(
                    "thread {}: a forked child runs its phases once per fork (loop 1, no delay)",
                    t.name
                ));
            }
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
                    // A batch on a queue (put, get, count): a known queue,
                    // 1 ..= its capacity items.
                    let batch = |i: usize, queue: &QueueId, items: &u32| {
                        bad(queue.idx(), self.queues.len(), "queue").or_else(|| {
                            let (name, cap) = &self.queues[queue.idx()];
                            (*items == 0 || u64::from(*items) > *cap).then(|| {
                                format!(
                                    "{}: a batch of {items} items on queue \"{name}\" of capacity {cap}: allowed 1 ..= {cap}",
                                    at(i)
                                )
                            })
                        })
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
                        Event::Repeat { times, per_loops } => {
                            let next = p.events.get(i + 1);
                            if *times == 0 || *per_loops == 0 {
                                Some(format!("{}: repeat {times} times per {per_loops} loops: both allowed 1 ..= 4294967295", at(i)))
                            } else if times.div_ceil(*per_loops) > MAX_REPEAT_PER_LOOP {
                                Some(format!("{}: repeat {times} times per {per_loops} loops: allowed at most {MAX_REPEAT_PER_LOOP} per loop", at(i)))
                            } else if !next.is_some_and(|e| {
                                (e.is_kernel_extension()
                                    && (e.takes_time() || matches!(e, Event::Munmap { .. })))
                                    || matches!(e, Event::Put { .. })
                            }) {
                                Some(format!("{}: a repeat applies to the next event of its phase, a munmap, a put, or a syscall or smp_call that takes time", at(i)))
                            } else {
                                None
                            }
                        }
                        Event::Fork { child, .. } => {
                            bad(child.idx(), self.threads.len(), "thread").or_else(|| {
                                let c = &self.threads[child.idx()];
                                (c.parent.map(ThreadId::idx) != Some(ti)).then(|| {
                                    format!(
                                        "{}: forks thread {}, which is not a child process of this thread",
                                        at(i),
                                        c.name
                                    )
                                })
                            })
                        }
                        Event::Count {
                            counter,
                            every,
                            first,
                            queue,
                            items,
                        } => bad(counter.idx(), self.counters.len(), "counter")
                            .or_else(|| {
                                (*every == 0 || *first == 0).then(|| {
                                    format!(
                                        "{}: counter \"{}\" with every {every} and first {first}: both allowed 1 ..= {}",
                                        at(i),
                                        self.counters[counter.idx()],
                                        u32::MAX
                                    )
                                })
                            })
                            .or_else(|| batch(i, queue, items)),
                        Event::Put { queue, items, .. } | Event::Get { queue, items } => {
                            batch(i, queue, items)
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
        self.check_time_advances()
    }

    /// Refuses a program a thread of which can repeat without simulated
    /// time passing: the interpreter would execute its events forever (or
    /// for a near-endless count) at one instant. Every loop that repeats
    /// without end (a phase of `loop: -1`, a thread's pass when the thread
    /// loops forever) must hold an event that takes time ([`advances`]) or
    /// a blocking wait (a condition wait, a barrier) that a thread which
    /// itself passes this check ends; a finite loop without either may
    /// take at most [`crate::limits::MAX_ZERO_TIME_STEPS`] steps. Lock and
    /// unlock, signal and yield take no simulated time, and a loop of them
    /// alone is refused (a `yield`-only loop piles events at one instant).
    pub fn check_time_advances(&self) -> Result<(), String> {
        use crate::limits::MAX_ZERO_TIME_STEPS;
        // An event a `Repeat` may run 0 times in a loop (fewer times than
        // loops) does not make that loop take time.
        let gated: Vec<Vec<Vec<bool>>> = self
            .threads
            .iter()
            .map(|t| {
                t.phases
                    .iter()
                    .map(|p| {
                        let mut g = vec![false; p.events.len()];
                        for (i, e) in p.events.iter().enumerate() {
                            if let (Event::Repeat { times, per_loops }, Some(x)) =
                                (e, g.get_mut(i + 1))
                            {
                                *x = times < per_loops;
                            }
                        }
                        g
                    })
                    .collect()
            })
            .collect();
        let timed = |t: usize, pi: usize| {
            let g = &gated[t][pi];
            self.threads[t].phases[pi]
                .events
                .iter()
                .enumerate()
                .filter(move |(i, _)| !g[*i])
                .map(|(_, e)| e)
        };
        let advances = |e: &Event| e.takes_time();
        // Blocking waits by resource (conditions, then barriers): the
        // resource a wait blocks on, and the resources a thread can end a
        // wait on (it signals the condition, it uses the barrier).
        let nconds = self.conds.len();
        // A queue is two resources: its items (a `get` waits for them, a
        // `put` ends the wait) and its room (the other way round).
        let nbar = self.barriers.len();
        let nq = self.queues.len();
        let waits_on = |e: &Event| match *e {
            Event::Wait { cond, .. } | Event::SignalWait { cond, .. } => Some(cond.idx()),
            Event::Barrier(b) => Some(nconds + b.idx()),
            Event::Get { queue, .. } => Some(nconds + nbar + queue.idx()),
            // A kick never waits.
            Event::Put {
                queue,
                if_waited: None,
                ..
            } => Some(nconds + nbar + nq + queue.idx()),
            _ => None,
        };
        let ends = |e: &Event| match *e {
            Event::Signal(c) | Event::Broad(c) | Event::SignalWait { cond: c, .. } => Some(c.idx()),
            Event::Barrier(b) => Some(nconds + b.idx()),
            // A count's put ends a get's wait only every `every` counts,
            // but it ends it; it is not taken as a wait of its own (it
            // blocks only when its rare put finds the queue full).
            Event::Put { queue, .. } | Event::Count { queue, .. } => {
                Some(nconds + nbar + queue.idx())
            }
            Event::Get { queue, .. } => Some(nconds + nbar + nq + queue.idx()),
            _ => None,
        };
        let nres = nconds + nbar + 2 * nq;
        let n = self.threads.len();
        let events = |t: usize| self.threads[t].phases.iter().flat_map(|p| &p.events);
        let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); nres];
        let mut wakes: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (t, wake) in wakes.iter_mut().enumerate() {
            for e in events(t) {
                if let Some(r) = waits_on(e) {
                    if waiters[r].last() != Some(&t) {
                        waiters[r].push(t);
                    }
                }
                if let Some(r) = ends(e) {
                    if !wake.contains(&r) {
                        wake.push(r);
                    }
                }
            }
        }
        // A loop is fine if it takes time, or blocks on a wait that a
        // thread already found fine can end (`live[r]`: such a thread ends
        // waits on r; a thread is not yet fine when this is asked, so it
        // never counts for itself).
        let loop_ok = |evs: &mut dyn Iterator<Item = &Event>, live: &[bool]| {
            for e in evs {
                if advances(e) || waits_on(e).is_some_and(|r| live[r]) {
                    return true;
                }
            }
            false
        };
        // The loops of a thread that repeat without end: its `loop: -1`
        // phases, and its whole pass when the thread loops forever.
        let thread_ok = |t: usize, live: &[bool]| -> Result<(), String> {
            let th = &self.threads[t];
            const WHY: &str = "no run, runtime, sleep or timer of non-zero length, nor a wait (condition, barrier, queue) that another thread ends";
            for (pi, p) in th.phases.iter().enumerate() {
                if p.loops.is_none() && !loop_ok(&mut timed(t, pi), live) {
                    return Err(format!(
                        "thread {} phase {}: loops forever without advancing simulated time ({WHY})",
                        th.name, p.name
                    ));
                }
            }
            if th.loops.is_none()
                && !loop_ok(&mut (0..th.phases.len()).flat_map(|pi| timed(t, pi)), live)
            {
                return Err(format!(
                    "thread {} phase {}: the thread loops forever without advancing simulated time ({WHY})",
                    th.name, th.phases[0].name
                ));
            }
            Ok(())
        };
        // Least fixpoint by worklist: two threads that only wake each other
        // at one instant are never found fine.
        let mut ok = vec![false; n];
        let mut live = vec![false; nres];
        let mut work: Vec<usize> = (0..n).rev().collect();
        while let Some(t) = work.pop() {
            if ok[t] || thread_ok(t, &live).is_err() {
                continue;
            }
            ok[t] = true;
            for &r in &wakes[t] {
                if !live[r] {
                    live[r] = true;
                    work.extend(waiters[r].iter().copied().filter(|&w| !ok[w]));
                }
            }
        }
        if let Some(t) = (0..n).find(|&t| !ok[t]) {
            thread_ok(t, &live)?;
        }
        // Finite loops of zero-time events: bounded step counts.
        for (t, th) in self.threads.iter().enumerate() {
            let mut pass: u64 = 0;
            let mut pass_advances = false;
            for (pi, p) in th.phases.iter().enumerate() {
                let steps = p.loops.unwrap_or(1).saturating_mul(p.events.len() as u64);
                if timed(t, pi).any(|e| advances(e) || waits_on(e).is_some_and(|r| live[r])) {
                    pass_advances = true;
                } else if steps > MAX_ZERO_TIME_STEPS {
                    return Err(format!(
                        "thread {} phase {}: {} loops of events that take no simulated time make {steps} steps at one instant: allowed at most {MAX_ZERO_TIME_STEPS} (add a run or sleep, or loop less)",
                        th.name,
                        p.name,
                        p.loops.unwrap_or(1)
                    ));
                }
                pass = pass.saturating_add(steps);
            }
            let total = th.loops.unwrap_or(1).saturating_mul(pass);
            if !pass_advances && total > MAX_ZERO_TIME_STEPS {
                return Err(format!(
                    "thread {} phase {}: {} passes of phases that take no simulated time make {total} steps at one instant: allowed at most {MAX_ZERO_TIME_STEPS} (add a run or sleep, or loop less)",
                    th.name,
                    th.phases[0].name,
                    th.loops.unwrap_or(1)
                ));
            }
        }
        Ok(())
    }
}
