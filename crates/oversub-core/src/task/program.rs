//! The interpreter of IR thread programs (`workload::ir`), as rt-app 1.0's
//! `thread_body` / `run_event` execute them (scheduler-tools/rt-app v1.0,
//! src/rt-app.c), over glibc's futex-based pthread objects.
//!
//! It is level-agnostic: threads are indices, and each `step` returns the
//! threads to wake and what the stepping thread does next with its CPU (run,
//! sleep, yield, exit). The host runs it with host tasks; a guest scheduler
//! instance can run it with guest tasks the same way.
//!
//! Semantics (and what is simplified, docs/workloads.md):
//! * `run` / `runtime`: CPU time (runtime approximated, see the IR).
//! * `sleep`: `nanosleep` relative to now; `timer`: absolute expiry
//!   `t_next += period` from the first user's start; when already late,
//!   relative mode re-bases `t_next` on now and does not sleep.
//! * mutexes (glibc `lll_lock`): a free mutex is taken by whoever asks
//!   (a running thread can steal it from a woken waiter); unlock frees it and
//!   wakes the first waiter (FUTEX_WAKE 1), which retries and queues again at
//!   the tail if it lost. A FUTEX_WAKE that wakes a waiter is counted
//!   ([`ProgramRt::take_futex_wakes`]) so that the host can charge its CPU
//!   time; FUTEX_WAIT's is the switch's.
//! * a FUTEX_WAKE that woke a thread returns to user mode before the waker
//!   goes on (with [`ProgramRt::preempt_at_syscall_exit`]): the step ends
//!   there ([`ProgramRt::syscall_exit_to_user_mode`]), so that the level can
//!   preempt the waker for the thread it woke.
//! * condition variables: FIFO waiters; `wait` releases the mutex, sleeps,
//!   and re-acquires the mutex after the signal (no spurious wakeups);
//!   signals without waiters are lost.
//! * barriers: rt-app's counter starting at users - 1; the last arrival
//!   broadcasts.
//! * `yield`: `sched_yield()`.
//! * queues (extension): a bounded FIFO of counted items behind a pthread
//!   mutex and two condition variables, as PARSEC's and most pipelines'
//!   queues are: `put` of k items blocks while they do not fit, then
//!   signals `not_empty` (one waiting consumer woken per batch); `get` of k
//!   blocks while fewer than k are queued, then signals `not_full` (one
//!   waiting producer). A woken thread retries and waits again, at the
//!   tail, if another thread took the room or the items first. The queue
//!   mutex's hold time is not modelled.
//! * counters (extension): `count` adds 1 to a shared counter; the counts
//!   `first`, `first + every`, ... also put a batch into a queue, as `put`
//!   does (a thread pool's allocator flushing a block it filled, libvips
//!   8.14 `wbuffer_allocate_fn`); the count is taken once, a blocked put
//!   is retried alone.
//! * `fork` (extension): the child thread restarts at its first event as a
//!   new process (the level creates it as a new task: [`ProgramRt::take_forks`]),
//!   the parent blocks in `wait4` until the child's last event is done;
//!   the child's exit wakes it (`do_notify_parent`).

use crate::engine::{Nanos, Time};
use crate::workload::ir::{
    BarrierId, CondId, CounterId, Event, KlockId, MutexId, Program, QueueId, SleepMode, TimerId,
};
use std::collections::VecDeque;

/// What the stepping thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Use this much CPU, then step again.
    Run(Nanos),
    /// Block until the instant (a timer) or until woken; then step again.
    Sleep(Option<Time>),
    /// `sched_yield()`, then step again when it runs.
    Yield,
    /// Take the guest kernel spinlock `lock`, hold it for `hold` of CPU,
    /// release it, then step again (the `syscall` extension; only a guest
    /// kernel runs it).
    KernelLock { lock: KlockId, hold: Nanos },
    /// Guest kernel work only a guest kernel model runs (extensions).
    Kernel(KernelOp),
    /// The thread has finished.
    Exit,
}

/// Guest kernel operations of the extension events (docs/workloads.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelOp {
    /// `smp_call_function_single` (one target) or `_many`: interrupt
    /// `targets` other CPUs to run a `handler`; with `wait`, spin in
    /// `csd_lock_wait` until every handler ran. Step again afterwards.
    SmpCall {
        targets: u32,
        handler: Nanos,
        wait: bool,
    },
    /// `flush_tlb_mm_range` -> `flush_tlb_multi` of the mm's other CPUs
    /// (synchronous). Step again afterwards.
    /// `freed_tables`: page tables were freed (`native_flush_tlb_multi()`
    /// then interrupts lazy CPUs too).
    TlbShootdown { pages: u32, freed_tables: bool },
    /// The sleeping lock `lock` is taken (by `owner` when a task owns it; a
    /// reader-owned rwsem has none). The caller either spins and steps
    /// again (optimistic spinning), or calls `sleeping_lock_wait` and
    /// blocks until woken; stepping again retries.
    SleepingLockBusy {
        lock: KlockId,
        mode: SleepMode,
        owner: Option<usize>,
    },
}

/// Why a thread is not at the start of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    /// At the start of the current event.
    None,
    /// The current event (run, sleep, timer, yield) is complete.
    Done,
    /// Queued on a mutex (the current event is a lock): retry it.
    Mutex(MutexId),
    /// Signalled on a condition: re-acquire the mutex, then the wait ends.
    Reacquire(MutexId),
    /// Released from a barrier.
    Barrier(BarrierId),
    /// A syscall's kernel work ran: its locked part comes next.
    KernelLock(KlockId, Nanos),
    /// munmap's kernel work ran: its TLB shootdown comes next.
    Shootdown(u32, bool),
    /// Wants the sleeping lock, then holds it for the CPU time, then
    /// (pages > 0) flushes the TLB of that many pages holding it.
    SleepingWant(KlockId, SleepMode, Nanos, u32),
    /// Holds the sleeping lock (its hold time ran): its TLB shootdown of
    /// this many pages comes next, still holding it.
    SleepingFlush(KlockId, SleepMode, u32),
    /// Holds the sleeping lock (its hold time ran): release it.
    SleepingHeld(KlockId, SleepMode),
    /// A `count` was taken and its put found the queue full: retry the
    /// put alone.
    CountPut(QueueId, u32),
    /// Forked this child and waits for it (`wait4`).
    Child(usize),
    /// vforked this child and waits for its exec, then for its exit.
    Vfork(usize),
}

/// Per-thread counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// Phase iterations completed (rt-app logs one line per iteration).
    pub phase_loops: u64,
    /// When the thread finished its last loop (None: still running).
    pub finished_at: Option<Time>,
    /// Time from a `lock` that found the mutex taken to its acquisition.
    pub lock_wait_ns: u64,
    pub lock_waits: u64,
    /// Time from a kernel sleeping lock found taken to its acquisition
    /// (spinning and sleeping), and how often it was found taken.
    pub sleeping_lock_wait_ns: u64,
    pub sleeping_lock_waits: u64,
    /// Time from a queue `put` / `get` that found the queue full / short
    /// to its completion (the futex waits on the queue's conditions), and
    /// how often that happened.
    pub queue_wait_ns: u64,
    pub queue_waits: u64,
    /// Duration of each loop iteration (from the thread's start or the end
    /// of the previous one): the program's per-op latency.
    pub loop_ns: crate::stats::hist::LogHist,
}

#[derive(Clone, Debug)]
struct ThreadRt {
    pass: u64,
    phase: usize,
    phase_loop: u64,
    ev: usize,
    pending: Pending,
    started: bool,
    /// When the current loop iteration began.
    loop_since: Option<Time>,
    done: bool,
    /// Since when the thread waits for a mutex.
    lock_wait_since: Option<Time>,
    /// Since when it waits for a kernel sleeping lock.
    sleeping_wait_since: Option<Time>,
    /// On the wait list of the sleeping lock it wants (`Pending::
    /// SleepingWant`: it stays there until it takes that lock, so it is on
    /// at most one list). Spares scanning the list on every uncontended
    /// take.
    sleeping_queued: bool,
    /// Since when it waits on a queue.
    queue_wait_since: Option<Time>,
    /// A forked child that exited and has not yet woken its parent.
    notify_parent: bool,
    /// A vforked child whose parent waits for its exec (its first event).
    vfork_done_pending: bool,
    /// Runs of the current event left after this one (a `Repeat`).
    reps_left: u32,
    stats: ThreadStats,
}

/// A guest kernel sleeping lock (`struct mutex` / `rw_semaphore`).
#[derive(Clone, Debug, Default)]
struct SleepingLockRt {
    /// The mutex owner or rwsem writer.
    owner: Option<usize>,
    readers: u32,
    /// Sleeping waiters in FIFO order; a woken waiter stays queued until it
    /// takes the lock (as on the kernel's wait list).
    waiters: VecDeque<(usize, SleepMode)>,
    /// How many of `waiters` are not readers (a reader's trylock need not
    /// look at the list when there are none).
    waiters_not_read: u32,
}

/// A bounded queue: items queued, capacity, and the threads waiting on its
/// two condition variables (FIFO).
#[derive(Clone, Debug, Default)]
struct QueueRt {
    count: u64,
    cap: u64,
    /// Waiting in `put` (on `not_full`).
    putters: VecDeque<usize>,
    /// Waiting in `get` (on `not_empty`).
    getters: VecDeque<usize>,
}

/// A program being run.
#[derive(Clone, Debug)]
pub struct ProgramRt {
    prog: Program,
    threads: Vec<ThreadRt>,
    mutex_owner: Vec<Option<usize>>,
    mutex_waiters: Vec<VecDeque<usize>>,
    cond_waiters: Vec<VecDeque<usize>>,
    barrier_waiting: Vec<i64>,
    barrier_waiters: Vec<Vec<usize>>,
    timer_next: Vec<Option<Time>>,
    sleeping: Vec<SleepingLockRt>,
    queues: Vec<QueueRt>,
    /// The counters' counts (`count` events so far).
    counters: Vec<u64>,
    /// A sleeping lock was released since the last `take_released`.
    released: bool,
    /// The futex words the current step waited on or woke a waiter of
    /// (FUTEX_WAIT / a FUTEX_WAKE with a waiter), in order, as indices:
    /// mutexes, then conditions, barriers and queues ([`Self::take_futex_ops`]).
    futex_ops: Vec<usize>,
    /// FUTEX_WAKE system calls that woke a waiter in the current step: one
    /// per unlock, signal, broadcast, barrier release or queue operation
    /// that woke a thread ([`Self::take_futex_wakes`]).
    futex_wakes: u32,
    /// The children forked by the last step ([`Self::take_forks`]).
    forks: Vec<usize>,
    /// A step that issued a FUTEX_WAKE that woke a thread ends at the
    /// system call's return ([`Self::syscall_exit_to_user_mode`]); off: the
    /// waker goes on to its next events in the same step.
    exit_to_user: bool,
    /// The first thread that executed more than
    /// [`crate::limits::MAX_ZERO_TIME_STEPS`] events in one step, and when
    /// ([`Self::zero_time_loop`]).
    stuck: Option<(usize, Time)>,
}

/// The futex word of queue `q` in `futex_ops`: mutexes first, then
/// condition variables, barriers, and queues (one word per object).
fn queue_futex(prog: &Program, q: QueueId) -> usize {
    prog.mutexes.len() + prog.conds.len() + prog.barriers.len() + q.idx()
}

impl ProgramRt {
    /// A program at its start (every thread before its first event). The
    /// program must be valid (`Program::validate`).
    pub fn new(prog: Program) -> ProgramRt {
        ProgramRt {
            // A forked child is not running until its parent forks it.
            threads: prog
                .threads
                .iter()
                .map(|t| ThreadRt {
                    pass: 0,
                    phase: 0,
                    phase_loop: 0,
                    ev: 0,
                    pending: Pending::None,
                    started: t.parent.is_some(),
                    loop_since: None,
                    done: t.parent.is_some(),
                    lock_wait_since: None,
                    sleeping_wait_since: None,
                    sleeping_queued: false,
                    queue_wait_since: None,
                    notify_parent: false,
                    vfork_done_pending: false,
                    reps_left: 0,
                    stats: ThreadStats::default(),
                })
                .collect(),
            mutex_owner: vec![None; prog.mutexes.len()],
            mutex_waiters: vec![VecDeque::new(); prog.mutexes.len()],
            cond_waiters: vec![VecDeque::new(); prog.conds.len()],
            barrier_waiting: prog
                .barriers
                .iter()
                .map(|(_, u)| i64::from(*u) - 1)
                .collect(),
            barrier_waiters: vec![Vec::new(); prog.barriers.len()],
            timer_next: vec![None; prog.timers.len()],
            sleeping: vec![SleepingLockRt::default(); prog.klocks.len()],
            queues: prog
                .queues
                .iter()
                .map(|(_, cap)| QueueRt {
                    cap: *cap,
                    ..QueueRt::default()
                })
                .collect(),
            counters: vec![0; prog.counters.len()],
            released: false,
            futex_ops: Vec::new(),
            futex_wakes: 0,
            forks: Vec::new(),
            exit_to_user: false,
            stuck: None,
            prog,
        }
    }

    /// Ends a step at every FUTEX_WAKE that woke a thread
    /// ([`Self::syscall_exit_to_user_mode`]) when `on`. The host level runs
    /// its program with it; a guest level does not yet (docs/workloads.md,
    /// "What the model leaves out").
    pub fn preempt_at_syscall_exit(mut self, on: bool) -> ProgramRt {
        self.exit_to_user = on;
        self
    }

    /// `syscall_exit_to_user_mode()` after a FUTEX_WAKE that woke a thread
    /// (kernel/entry/common.c, Linux 6.12 and 6.18): the waker is still on
    /// its CPU and runnable when the wakeup's `check_preempt_wakeup_fair()`
    /// decides, and `exit_to_user_mode_loop()` calls `schedule()` if it
    /// set TIF_NEED_RESCHED, before the waker's next user instruction (its
    /// next event). So the step ends here with a burst of no CPU: the level
    /// acts on the reschedule, and the thread's next event runs when it
    /// next runs. (The host's voluntary preemption: the switch follows
    /// `sys_exit_futex` in its trace; a fully preemptible kernel switches at
    /// `try_to_wake_up()`'s `preempt_enable()` instead, the same instant in
    /// the model, which charges the FUTEX_WAKE's CPU after the wakeup.)
    fn syscall_exit_to_user_mode(&self) -> Action {
        Action::Run(Nanos::ZERO)
    }

    pub fn program(&self) -> &Program {
        &self.prog
    }

    pub fn stats(&self, t: usize) -> &ThreadStats {
        &self.threads[t].stats
    }

    /// Whether every thread has finished.
    pub fn all_done(&self) -> bool {
        self.threads.iter().all(|t| t.done)
    }

    #[inline]
    fn event(&self, t: usize) -> &Event {
        let th = &self.threads[t];
        &self.prog.threads[t].phases[th.phase].events[th.ev]
    }

    /// Moves past the current event (end of phase, loop, thread).
    fn advance(&mut self, t: usize, now: Time) {
        let spec = &self.prog.threads[t];
        let th = &mut self.threads[t];
        th.pending = Pending::None;
        if th.reps_left > 0 {
            th.reps_left -= 1;
            return;
        }
        th.ev += 1;
        if th.ev < spec.phases[th.phase].events.len() {
            return;
        }
        th.ev = 0;
        th.phase_loop += 1;
        th.stats.phase_loops += 1;
        if let Some(s) = th.loop_since.replace(now) {
            th.stats.loop_ns.add((now - s).0);
        }
        if spec.phases[th.phase]
            .loops
            .is_none_or(|n| th.phase_loop < n)
        {
            return;
        }
        th.phase_loop = 0;
        th.phase += 1;
        if th.phase < spec.phases.len() {
            return;
        }
        th.phase = 0;
        th.pass += 1;
        if spec.loops == Some(th.pass) {
            th.done = true;
            th.stats.finished_at = Some(now);
            th.notify_parent = spec.parent.is_some();
        }
    }

    /// Moves the children forked by the last step into `out`, in order:
    /// the level creates each as a new task (`sched_fork`) and wakes it
    /// with `wake_up_new_task`.
    pub fn take_forks(&mut self, out: &mut Vec<usize>) {
        out.append(&mut self.forks);
    }

    /// Whether thread `t` is a forked child process (its exit is the
    /// task's death: the level runs `task_dead`).
    pub fn is_forked(&self, t: usize) -> bool {
        self.prog.threads[t].parent.is_some()
    }

    /// `copy_process()` of child `c` by `t`: the child restarts at its
    /// first event (its counters go on: a child slot's figures are all
    /// its processes').
    fn fork(&mut self, c: usize, vfork: bool, now: Time) {
        debug_assert!(self.threads[c].done, "a parent waits for its child");
        let th = &mut self.threads[c];
        th.pass = 0;
        th.phase = 0;
        th.phase_loop = 0;
        th.ev = 0;
        th.reps_left = 0;
        th.pending = Pending::None;
        th.done = false;
        th.notify_parent = false;
        th.vfork_done_pending = vfork;
        th.loop_since = Some(now);
        th.stats.finished_at = None;
        self.forks.push(c);
    }

    /// Tries to take mutex `m` for `t`; queues `t` if it is taken.
    fn try_lock(&mut self, t: usize, m: MutexId, now: Time) -> bool {
        if self.mutex_owner[m.idx()].is_none() {
            self.mutex_owner[m.idx()] = Some(t);
            let th = &mut self.threads[t];
            if let Some(since) = th.lock_wait_since.take() {
                th.stats.lock_wait_ns += (now - since).0;
                th.stats.lock_waits += 1;
            }
            return true;
        }
        let th = &mut self.threads[t];
        th.lock_wait_since.get_or_insert(now);
        self.mutex_waiters[m.idx()].push_back(t);
        self.futex_ops.push(m.idx());
        false
    }

    /// `pthread_mutex_unlock`: free, and FUTEX_WAKE the first waiter.
    fn unlock(&mut self, t: usize, m: MutexId, wake: &mut Vec<usize>) {
        debug_assert_eq!(self.mutex_owner[m.idx()], Some(t), "validated program");
        self.mutex_owner[m.idx()] = None;
        if let Some(w) = self.mutex_waiters[m.idx()].pop_front() {
            wake.push(w);
            self.futex_ops.push(m.idx());
            self.futex_wakes += 1;
        }
    }

    /// `mutex_trylock` / `down_write_trylock` / `down_read_trylock` for
    /// `t`. A reader is refused while a writer waits ahead of it (6.12's
    /// `rwsem_read_trylock` fails with waiters queued); a mutex or writer
    /// may steal the lock from woken waiters (no handoff, a simplification).
    fn sleeping_try(&mut self, t: usize, l: KlockId, mode: SleepMode, now: Time) -> bool {
        let s = &mut self.sleeping[l.idx()];
        let ok = s.owner.is_none()
            && match mode {
                SleepMode::Mutex | SleepMode::Write => s.readers == 0,
                SleepMode::Read => {
                    s.waiters_not_read == 0
                        || s.waiters
                            .iter()
                            .take_while(|(w, _)| *w != t)
                            .all(|(_, m)| *m == SleepMode::Read)
                }
            };
        let th = &mut self.threads[t];
        if !ok {
            th.sleeping_wait_since.get_or_insert(now);
            return false;
        }
        match mode {
            SleepMode::Read => s.readers += 1,
            _ => s.owner = Some(t),
        }
        if th.sleeping_queued {
            th.sleeping_queued = false;
            // On the list once (`sleeping_lock_wait`).
            let k = s.waiters.iter().position(|(w, _)| *w == t);
            if let Some((_, m)) = k.and_then(|k| s.waiters.remove(k)) {
                if m != SleepMode::Read {
                    s.waiters_not_read -= 1;
                }
            }
        }
        if let Some(since) = th.sleeping_wait_since.take() {
            th.stats.sleeping_lock_wait_ns += (now - since).0;
            th.stats.sleeping_lock_waits += 1;
        }
        true
    }

    /// `mutex_unlock` / `up_write` / `up_read`: release, and wake the first
    /// waiter (readers at the head of the queue all at once) when the lock
    /// became free.
    fn sleeping_release(&mut self, t: usize, l: KlockId, mode: SleepMode, wake: &mut Vec<usize>) {
        let s = &mut self.sleeping[l.idx()];
        match mode {
            SleepMode::Read => s.readers -= 1,
            _ => {
                debug_assert_eq!(s.owner, Some(t));
                s.owner = None;
            }
        }
        self.released = true;
        if s.readers > 0 {
            return;
        }
        match s.waiters.front() {
            Some(&(w, SleepMode::Read)) => {
                wake.push(w);
                wake.extend(
                    s.waiters
                        .iter()
                        .skip(1)
                        .take_while(|(_, m)| *m == SleepMode::Read)
                        .map(|(w, _)| *w),
                );
            }
            Some(&(w, _)) => wake.push(w),
            None => {}
        }
    }

    /// `t` goes to sleep on the sleeping lock it found busy (the slow path
    /// after optimistic spinning): it joins the wait list, unless already
    /// on it. False (nothing done) if `t` wants no sleeping lock.
    pub fn sleeping_lock_wait(&mut self, t: usize) -> bool {
        let Pending::SleepingWant(l, mode, _, _) = self.threads[t].pending else {
            return false;
        };
        let s = &mut self.sleeping[l.idx()];
        let th = &mut self.threads[t];
        if !th.sleeping_queued {
            th.sleeping_queued = true;
            s.waiters.push_back((t, mode));
            if mode != SleepMode::Read {
                s.waiters_not_read += 1;
            }
        }
        true
    }

    /// Whether the sleeping lock `t` wants could be taken now.
    pub fn sleeping_lock_free(&self, t: usize) -> bool {
        let Pending::SleepingWant(l, mode, _, _) = self.threads[t].pending else {
            return false;
        };
        let s = &self.sleeping[l.idx()];
        s.owner.is_none() && (mode == SleepMode::Read || s.readers == 0)
    }

    /// The owner of the sleeping lock `t` wants (None: free or
    /// reader-owned).
    pub fn sleeping_lock_owner(&self, t: usize) -> Option<usize> {
        match self.threads[t].pending {
            Pending::SleepingWant(l, ..) => self.sleeping[l.idx()].owner,
            _ => None,
        }
    }

    /// The sleeping lock `t` wants (None: it wants none).
    pub fn sleeping_lock_wanted(&self, t: usize) -> Option<KlockId> {
        match self.threads[t].pending {
            Pending::SleepingWant(l, ..) => Some(l),
            _ => None,
        }
    }

    /// Whether `t` is on the wait list of the sleeping lock it wants (it
    /// slept on it and was woken: `mutex_optimistic_spin`'s `waiter`).
    pub fn sleeping_lock_is_waiter(&self, t: usize) -> bool {
        self.sleeping_lock_wanted(t).is_some() && self.threads[t].sleeping_queued
    }

    /// A thread that executed more than [`crate::limits::MAX_ZERO_TIME_STEPS`]
    /// events at one instant (its name, and when): a loop the load-time check
    /// (`Program::check_time_advances`) cannot see, because it depends on the
    /// order threads run in. rt-app's barrier is one: a thread that arrives
    /// while the counter is 0 (the threads released last time woken but not
    /// yet back) passes alone, and passes again on its next arrival. Real
    /// rt-app spins there on the CPU until preempted; the model's events take
    /// no time, so the thread is parked and the run must stop with an error.
    pub fn zero_time_loop(&self) -> Option<(&str, Time)> {
        self.stuck
            .map(|(t, at)| (self.prog.threads[t].name.as_str(), at))
    }

    /// Moves the futex words the last step waited on or woke (see
    /// `futex_ops`) into `out`, in order.
    pub fn take_futex_ops(&mut self, out: &mut Vec<usize>) {
        out.append(&mut self.futex_ops);
    }

    /// The FUTEX_WAKE system calls that woke a waiter in the last step
    /// (see `futex_wakes`); 0 when asked again.
    pub fn take_futex_wakes(&mut self) -> u32 {
        std::mem::take(&mut self.futex_wakes)
    }

    /// Whether a sleeping lock was released since the last call.
    pub fn take_released(&mut self) -> bool {
        std::mem::take(&mut self.released)
    }

    /// `put` (`get` when `!put`) of `items` on `q` for `t`: done (and one
    /// waiter of the other side woken), or `t` queued to wait.
    fn queue_op(
        &mut self,
        t: usize,
        q: QueueId,
        items: u32,
        put: bool,
        now: Time,
        wake: &mut Vec<usize>,
    ) -> bool {
        let k = u64::from(items);
        let qr = &mut self.queues[q.idx()];
        let fits = if put {
            qr.count + k <= qr.cap
        } else {
            qr.count >= k
        };
        let th = &mut self.threads[t];
        let futex = queue_futex(&self.prog, q);
        if !fits {
            self.futex_ops.push(futex);
            th.queue_wait_since.get_or_insert(now);
            if put {
                qr.putters.push_back(t);
            } else {
                qr.getters.push_back(t);
            }
            return false;
        }
        let other = if put {
            qr.count += k;
            qr.getters.pop_front()
        } else {
            qr.count -= k;
            qr.putters.pop_front()
        };
        if let Some(w) = other {
            wake.push(w);
            self.futex_ops.push(futex);
            self.futex_wakes += 1;
        }
        if let Some(since) = th.queue_wait_since.take() {
            th.stats.queue_wait_ns += (now - since).0;
            th.stats.queue_waits += 1;
        }
        true
    }

    /// A `put` of `items` into queue `q` with `if_waited` `d`: when the
    /// first consumer waiting in `get` has waited at least `d` and the
    /// batch fits, it is put and that consumer is woken (as
    /// [`Self::queue_op`]'s put); otherwise nothing happens (no item is
    /// left behind, the kicker never waits).
    fn kick(&mut self, q: QueueId, items: u32, d: Nanos, now: Time, wake: &mut Vec<usize>) {
        let qr = &mut self.queues[q.idx()];
        let k = u64::from(items);
        let stalled = qr.getters.front().is_some_and(|&w| {
            self.threads[w]
                .queue_wait_since
                .is_some_and(|s| now >= s + d)
        });
        if !stalled || qr.count + k > qr.cap {
            return;
        }
        qr.count += k;
        if let Some(w) = qr.getters.pop_front() {
            wake.push(w);
            self.futex_ops.push(queue_futex(&self.prog, q));
            self.futex_wakes += 1;
        }
    }

    /// Items in queue `q` now.
    pub fn queue_len(&self, q: QueueId) -> u64 {
        self.queues[q.idx()].count
    }

    /// Counts taken on counter `c` so far.
    pub fn counter(&self, c: CounterId) -> u64 {
        self.counters[c.idx()]
    }

    fn signal(&mut self, c: CondId, wake: &mut Vec<usize>) {
        if let Some(w) = self.cond_waiters[c.idx()].pop_front() {
            wake.push(w);
            self.futex_ops.push(self.prog.mutexes.len() + c.idx());
            self.futex_wakes += 1;
        }
    }

    fn timer(
        &mut self,
        t: usize,
        timer: TimerId,
        period: Nanos,
        absolute: bool,
        now: Time,
    ) -> Option<Time> {
        let start = Time::ZERO + self.prog.threads[t].delay;
        let next = self.timer_next[timer.idx()].get_or_insert(start);
        *next += period;
        if now < *next {
            Some(*next)
        } else {
            if !absolute {
                *next = now;
            }
            None
        }
    }

    /// Thread `t` has the CPU at `now` (its previous action is over: the run
    /// used, the sleep ended, or it was woken): execute its events until one
    /// needs CPU time or blocks. Returns the threads to wake, in order.
    pub fn step(&mut self, t: usize, now: Time) -> (Vec<usize>, Action) {
        let mut wake = Vec::new();
        let action = self.step_into(t, now, &mut wake);
        (wake, action)
    }

    /// [`Self::step`] appending the threads to wake to `wake` (a buffer the
    /// caller keeps, so the hot path allocates nothing).
    pub fn step_into(&mut self, t: usize, now: Time, wake: &mut Vec<usize>) -> Action {
        self.futex_ops.clear();
        self.futex_wakes = 0;
        self.forks.clear();
        if !self.threads[t].started {
            self.threads[t].started = true;
            let delay = self.prog.threads[t].delay;
            self.threads[t].loop_since = Some(if delay > Nanos::ZERO {
                Time::ZERO + delay
            } else {
                now
            });
            if delay > Nanos::ZERO {
                return Action::Sleep(Some(Time::ZERO + delay));
            }
        }
        let mut steps: u64 = 0;
        loop {
            // complete_vfork_done(): the vforked child's first event (its
            // execve) is over, the parent waiting for it is woken.
            if self.threads[t].vfork_done_pending
                && (self.threads[t].done || self.threads[t].ev > 0 || self.threads[t].phase > 0)
            {
                self.threads[t].vfork_done_pending = false;
                if let Some(p) = self.prog.threads[t].parent {
                    if self.threads[p.idx()].pending == Pending::Vfork(t) {
                        self.threads[p.idx()].pending = Pending::Child(t);
                        wake.push(p.idx());
                    }
                }
            }
            if self.threads[t].done {
                // exit_notify() -> do_notify_parent(): the parent waiting
                // in wait4 is woken (its __wake_up_parent).
                if std::mem::take(&mut self.threads[t].notify_parent) {
                    if let Some(p) = self.prog.threads[t].parent {
                        if self.threads[p.idx()].pending == Pending::Child(t) {
                            wake.push(p.idx());
                        }
                    }
                }
                return Action::Exit;
            }
            // The last event woke a thread with a FUTEX_WAKE and did not
            // block: the system call returns to user mode first.
            if self.exit_to_user && self.futex_wakes > 0 {
                return self.syscall_exit_to_user_mode();
            }
            steps += 1;
            if steps > crate::limits::MAX_ZERO_TIME_STEPS {
                // Parked for good: the run stops at its next check.
                self.stuck.get_or_insert((t, now));
                return Action::Sleep(None);
            }
            match self.threads[t].pending {
                Pending::None => {}
                Pending::Done => {
                    self.advance(t, now);
                    continue;
                }
                Pending::Mutex(m) => {
                    if !self.try_lock(t, m, now) {
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                    continue;
                }
                Pending::Reacquire(m) => {
                    if !self.try_lock(t, m, now) {
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                    continue;
                }
                Pending::Barrier(b) => {
                    self.barrier_waiting[b.idx()] += 1;
                    self.advance(t, now);
                    continue;
                }
                Pending::KernelLock(lock, hold) => {
                    self.threads[t].pending = Pending::Done;
                    return Action::KernelLock { lock, hold };
                }
                Pending::Shootdown(pages, freed_tables) => {
                    self.threads[t].pending = Pending::Done;
                    return Action::Kernel(KernelOp::TlbShootdown {
                        pages,
                        freed_tables,
                    });
                }
                Pending::SleepingWant(lock, mode, hold, flush) => {
                    if !self.sleeping_try(t, lock, mode, now) {
                        let owner = self.sleeping[lock.idx()].owner;
                        return Action::Kernel(KernelOp::SleepingLockBusy { lock, mode, owner });
                    }
                    self.threads[t].pending = if flush > 0 {
                        Pending::SleepingFlush(lock, mode, flush)
                    } else {
                        Pending::SleepingHeld(lock, mode)
                    };
                    if hold > Nanos::ZERO {
                        return Action::Run(hold);
                    }
                    continue;
                }
                // The section's flush (`tlb_finish_mmu()` before the
                // unlock): the lock stays held while its IPIs are out.
                Pending::SleepingFlush(lock, mode, pages) => {
                    self.threads[t].pending = Pending::SleepingHeld(lock, mode);
                    return Action::Kernel(KernelOp::TlbShootdown {
                        pages,
                        freed_tables: false,
                    });
                }
                Pending::SleepingHeld(lock, mode) => {
                    self.sleeping_release(t, lock, mode, wake);
                    self.advance(t, now);
                    continue;
                }
                Pending::CountPut(queue, items) => {
                    if !self.queue_op(t, queue, items, true, now, wake) {
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                    continue;
                }
                Pending::Child(c) => {
                    if !self.threads[c].done {
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                    continue;
                }
                Pending::Vfork(_) => return Action::Sleep(None),
            }
            match *self.event(t) {
                Event::Run(d) | Event::Runtime(d) => {
                    if d == Nanos::ZERO {
                        self.advance(t, now);
                        continue;
                    }
                    self.threads[t].pending = Pending::Done;
                    return Action::Run(d);
                }
                // nanosleep(0): the hrtimer has expired when it is started,
                // so the task never schedules.
                Event::Sleep(d) if d == Nanos::ZERO => self.advance(t, now),
                Event::Sleep(d) => {
                    self.threads[t].pending = Pending::Done;
                    return Action::Sleep(Some(now + d));
                }
                Event::Timer {
                    timer,
                    period,
                    absolute,
                } => match self.timer(t, timer, period, absolute, now) {
                    Some(at) => {
                        self.threads[t].pending = Pending::Done;
                        return Action::Sleep(Some(at));
                    }
                    None => self.advance(t, now),
                },
                Event::Lock(m) => {
                    if !self.try_lock(t, m, now) {
                        self.threads[t].pending = Pending::Mutex(m);
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                }
                Event::Unlock(m) => {
                    self.unlock(t, m, wake);
                    self.advance(t, now);
                }
                Event::Signal(c) => {
                    self.signal(c, wake);
                    self.advance(t, now);
                }
                Event::Broad(c) => {
                    if !self.cond_waiters[c.idx()].is_empty() {
                        self.futex_ops.push(self.prog.mutexes.len() + c.idx());
                        self.futex_wakes += 1;
                    }
                    wake.extend(self.cond_waiters[c.idx()].drain(..));
                    self.advance(t, now);
                }
                Event::Wait { cond, mutex } | Event::SignalWait { cond, mutex } => {
                    if matches!(self.event(t), Event::SignalWait { .. }) {
                        self.signal(cond, wake);
                    }
                    self.unlock(t, mutex, wake);
                    self.futex_ops.push(self.prog.mutexes.len() + cond.idx());
                    self.cond_waiters[cond.idx()].push_back(t);
                    self.threads[t].pending = Pending::Reacquire(mutex);
                    return Action::Sleep(None);
                }
                Event::Barrier(b) => {
                    let futex = self.prog.mutexes.len() + self.prog.conds.len() + b.idx();
                    if self.barrier_waiting[b.idx()] != 0
                        || !self.barrier_waiters[b.idx()].is_empty()
                    {
                        self.futex_ops.push(futex);
                    }
                    if self.barrier_waiting[b.idx()] == 0 {
                        if !self.barrier_waiters[b.idx()].is_empty() {
                            self.futex_wakes += 1;
                        }
                        wake.append(&mut self.barrier_waiters[b.idx()]);
                        self.advance(t, now);
                    } else {
                        self.barrier_waiting[b.idx()] -= 1;
                        self.barrier_waiters[b.idx()].push(t);
                        self.threads[t].pending = Pending::Barrier(b);
                        return Action::Sleep(None);
                    }
                }
                Event::Yield => {
                    self.threads[t].pending = Pending::Done;
                    return Action::Yield;
                }
                // Blocked: stepping again (after the wakeup) retries it.
                // A kick: nothing unless a consumer waits, and it never
                // blocks.
                Event::Put {
                    queue,
                    items,
                    if_waited: Some(d),
                } => {
                    self.kick(queue, items, d, now, wake);
                    self.advance(t, now);
                }
                Event::Put { queue, items, .. } | Event::Get { queue, items } => {
                    let put = matches!(self.event(t), Event::Put { .. });
                    if !self.queue_op(t, queue, items, put, now, wake) {
                        return Action::Sleep(None);
                    }
                    self.advance(t, now);
                }
                Event::Count {
                    counter,
                    every,
                    first,
                    queue,
                    items,
                } => {
                    let c = &mut self.counters[counter.idx()];
                    *c += 1;
                    let (every, first) = (u64::from(every), u64::from(first));
                    if *c >= first && (*c - first) % every == 0 {
                        self.threads[t].pending = Pending::CountPut(queue, items);
                        continue;
                    }
                    self.advance(t, now);
                }
                // `run` in the kernel, the last `hold` of it under `lock`.
                Event::Syscall { lock, run, hold } => {
                    let pre = Nanos(run.0.saturating_sub(hold.0));
                    if pre > Nanos::ZERO {
                        self.threads[t].pending = Pending::KernelLock(lock, hold);
                        return Action::Run(pre);
                    }
                    self.threads[t].pending = Pending::Done;
                    return Action::KernelLock { lock, hold };
                }
                // Kernel work, then the lock (the lock is taken at the end).
                Event::SleepingLock {
                    lock,
                    mode,
                    run,
                    hold,
                    flush,
                } => {
                    self.threads[t].pending = Pending::SleepingWant(lock, mode, hold, flush);
                    let pre = Nanos(run.0.saturating_sub(hold.0));
                    if pre > Nanos::ZERO {
                        return Action::Run(pre);
                    }
                }
                Event::Munmap {
                    run,
                    pages,
                    freed_tables,
                } => {
                    self.threads[t].pending = Pending::Shootdown(pages, freed_tables);
                    if run > Nanos::ZERO {
                        return Action::Run(run);
                    }
                }
                // fork + exec: the child starts; wait4 blocks until it
                // exits (it cannot have exited yet: it has not run).
                Event::Fork { child, vfork } => {
                    self.fork(child.idx(), vfork, now);
                    self.threads[t].pending = if vfork {
                        Pending::Vfork(child.idx())
                    } else {
                        Pending::Child(child.idx())
                    };
                    return Action::Sleep(None);
                }
                // The next event's runs in this loop (validated: there is
                // one, in this phase); none skips it.
                Event::Repeat { times, per_loops } => {
                    let (n, p) = (u128::from(times), u128::from(per_loops));
                    // Thread t of T starts its spread t p / T loops in, so
                    // the instances of one task do not run their rare
                    // repeats at the same loop.
                    let off = t as u128 * p / self.threads.len() as u128;
                    let k = u128::from(self.threads[t].stats.phase_loops) + off;
                    let runs = ((k + 1) * n / p - k * n / p) as u32;
                    self.advance(t, now);
                    if runs == 0 {
                        self.advance(t, now);
                    } else {
                        self.threads[t].reps_left = runs - 1;
                    }
                }
                Event::SmpCall {
                    targets,
                    handler,
                    wait,
                } => {
                    self.threads[t].pending = Pending::Done;
                    return Action::Kernel(KernelOp::SmpCall {
                        targets,
                        handler,
                        wait,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
