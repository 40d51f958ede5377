//! Host task behaviours: what a task does with the CPU when it has it.
//!
//! A behaviour is a small state machine. While its task runs it consumes a
//! *burst* of CPU time; when the burst is used up the simulator asks for the
//! next [`Step`]: keep running, yield, yield_to another task, wake others, or
//! block (with an optional timer). Preemption only pauses a burst.
//!
//! Kinds (scenario `kind`): `hog`, `periodic`, `yield_loop`, `pingpong`,
//! `messaging`. Parameters are documented on each variant and in README.md.
//! A thread of an IR program (`program`) is one more behaviour.

/// `init_task.timer_slack_ns`: the slack of a task's sleep timers unless it
/// set its own with `prctl(PR_SET_TIMERSLACK)` (Linux 6.12, unchanged since
/// 2.6.28; 0 for RT and deadline tasks, which the model does not have).
pub const DEFAULT_TIMER_SLACK: crate::engine::Nanos = crate::engine::Nanos(50_000);

pub mod pipe;
pub mod program;

use crate::engine::{Nanos, Time};
use crate::sched::fair::WF_SYNC;
use crate::sched::TaskId;
use pipe::Pipe;
use smallvec::SmallVec;

/// What a task does when its current burst is used up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Keep running for this much more CPU time.
    Run(Nanos),
    /// `sched_yield()`, then run this much when next on a CPU.
    Yield(Nanos),
    /// `yield_to(target, preempt = true)`, then run this much.
    YieldTo(TaskId, Nanos),
    /// Block; wake at the given instant if set (a timer), else when woken.
    Sleep(Option<Time>),
}

/// One step of a behaviour: tasks to wake (in order), then what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub wake: Wake,
    /// The wake flags of those wakeups: `WF_SYNC` for a pipe's
    /// (`pipe_write()`/`pipe_read()` wake with
    /// `wake_up_interruptible_sync_poll()`), 0 for a futex's.
    pub wake_flags: u32,
    /// FUTEX_WAKE system calls that woke a waiter in this step (each costs
    /// the waker `HostCosts::futex_wake`).
    pub futex_wakes: u32,
    pub next: Next,
}

impl Step {
    pub fn just(next: Next) -> Step {
        Step {
            wake: Wake::new(),
            wake_flags: 0,
            futex_wakes: 0,
            next,
        }
    }

    /// Pipe wakeups (fs/pipe.c, 6.12.117): the writer wakes a reader
    /// blocked on an empty pipe and the reader wakes writers blocked on a
    /// full one, both through `wake_up_interruptible_sync_poll()`, i.e.
    /// `__wake_up_sync_key()` with WF_SYNC: the waker is about to sleep.
    fn pipe(wake: Wake, next: Next) -> Step {
        Step {
            wake,
            wake_flags: WF_SYNC,
            futex_wakes: 0,
            next,
        }
    }
}

/// The tasks a step wakes, in order. A step wakes at most one task except
/// for a reader releasing blocked writers and a program step: one wakeup is
/// held inline, so the ping-pong and messaging steps do not allocate (a
/// `Vec` of one cost a malloc/free pair per wakeup on the event loop).
pub type Wake = SmallVec<[TaskId; 1]>;

/// A messaging group's pipes and their readers, shared by its senders (one
/// copy per group, not per sender: 1000 senders x 1000 pipes each would be
/// quadratic memory).
#[derive(Clone, Debug)]
pub struct MsgGroup {
    pub pipes: Vec<usize>,
    pub readers: Vec<TaskId>,
}

/// State shared between behaviours (the pipes of pingpong and messaging,
/// the program whose threads are `Program` tasks).
#[derive(Default)]
pub struct World {
    pub pipes: Vec<Pipe>,
    pub groups: Vec<MsgGroup>,
    pub program: Option<program::ProgramRt>,
    /// The task of each program thread.
    pub program_tasks: Vec<TaskId>,
    /// The child processes the last program step forked (the `fork`
    /// extension): the simulator creates each as a new task.
    pub program_forks: Vec<TaskId>,
    /// A forked child that exited in the last program step: the
    /// simulator runs `task_dead_fair` after its switch-out.
    pub program_dead: Option<TaskId>,
    /// Scratch for `ProgramRt::take_forks`.
    pub fork_buf: Vec<usize>,
    /// PIPE_WAKE_WRITER_ON_FREE (`pipe::Pipe::pipe_read()`): the host
    /// kernel's `pipe_read()` wakes a writer only when it frees a slot of a
    /// full pipe (6.18), not on every read of a full pipe (6.1, 6.12).
    pub pipe_wake_writer_on_free: bool,
}

impl World {
    /// A pipe of `max_usage` page buffers carrying messages of `msg_size`
    /// bytes (`pipe::Pipe::new`).
    pub fn new_pipe(&mut self, max_usage: u32, msg_size: u32) -> usize {
        self.pipes.push(Pipe::new(max_usage, msg_size));
        self.pipes.len() - 1
    }
}

/// A host task's behaviour and its parameters.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Always runnable (a busy loop).
    Hog,
    /// Run `run` every `period`, first expiry at `next_expiry` (cyclictest-like).
    /// An overrun activation is followed at once by the next one.
    Periodic {
        period: Nanos,
        run: Nanos,
        next_expiry: Time,
        active: bool,
    },
    /// `sched_yield()` after every `work` of CPU; with `target`, `yield_to()` it
    /// instead (a spinner handing its CPU to a named task).
    YieldLoop { work: Nanos, target: Option<TaskId> },
    /// Half of a pair passing a token through two pipes: on receiving it, run
    /// `run`, write it to the partner, then block reading.
    PingPong {
        run: Nanos,
        rx: usize,
        tx: usize,
        partner: TaskId,
        working: bool,
    },
    /// A hackbench sender (rt-tests hackbench.c, `sender()`): writes one
    /// message to each of its group's receivers' pipes in turn, from the
    /// first, `send` CPU per message, blocking while a pipe is full.
    Sender {
        send: Nanos,
        /// Index of its group in `World::groups`.
        group: usize,
        /// The pipe it writes next.
        cursor: usize,
        /// Blocked in `pipe_write()`'s wait on the pipe at `cursor`.
        waited: bool,
    },
    /// A hackbench receiver (`receiver()`): reads one message per `read()`,
    /// `recv` CPU per message, blocking on an empty pipe.
    Receiver { recv: Nanos, pipe: usize },
    /// Thread `thread` of the world's program (`task::program`).
    Program { thread: u32 },
}

const FOREVER: Nanos = Nanos(u64::MAX / 4);

impl Behaviour {
    /// The first step after the task is created (it is already on a CPU).
    pub fn start(&mut self, me: TaskId, now: Time, world: &mut World) -> Step {
        match self {
            Behaviour::Periodic { next_expiry, .. } if *next_expiry > now => {
                Step::just(Next::Sleep(Some(*next_expiry)))
            }
            Behaviour::Periodic { .. } => self.on_burst_end(me, now, world),
            Behaviour::PingPong {
                working: true, run, ..
            } => Step::just(Next::Run(*run)),
            Behaviour::Sender { send, .. } => Step::just(Next::Run(*send)),
            Behaviour::YieldLoop { work, .. } => Step::just(Next::Run(*work)),
            _ => self.on_burst_end(me, now, world),
        }
    }

    /// Called when the task's burst is used up, and when a task that blocked
    /// runs again (its wake reason is read from the shared state).
    pub fn on_burst_end(&mut self, me: TaskId, now: Time, world: &mut World) -> Step {
        match self {
            Behaviour::Hog => Step::just(Next::Run(FOREVER)),
            Behaviour::Periodic {
                period,
                run,
                next_expiry,
                active,
            } => {
                if *active && now < *next_expiry {
                    *active = false;
                    return Step::just(Next::Sleep(Some(*next_expiry)));
                }
                // Timer expired (woken by it, or overrun): next activation.
                *active = true;
                while *next_expiry <= now {
                    *next_expiry += *period;
                }
                Step::just(Next::Run(*run))
            }
            Behaviour::YieldLoop { work, target } => match target {
                Some(t) => Step::just(Next::YieldTo(*t, *work)),
                None => Step::just(Next::Yield(*work)),
            },
            Behaviour::PingPong {
                run,
                rx,
                tx,
                partner,
                working,
            } => {
                let mut wake = Wake::new();
                if *working {
                    // Pass the token on (the pipe never fills: one token).
                    *working = false;
                    if let pipe::Write::Done(w) = world.write(*tx, me, false) {
                        debug_assert!(w.iter().all(|t| t == partner));
                        wake = w;
                    }
                }
                let next = if world.read(*rx, me).is_some() {
                    *working = true;
                    Next::Run(*run)
                } else {
                    Next::Sleep(None)
                };
                Step::pipe(wake, next)
            }
            Behaviour::Sender {
                send,
                group,
                cursor,
                waited,
            } => {
                let g = &world.groups[*group];
                let (pi, n) = (g.pipes[*cursor], g.pipes.len());
                match world.write(pi, me, *waited) {
                    pipe::Write::Wait => {
                        *waited = true;
                        Step::just(Next::Sleep(None))
                    }
                    pipe::Write::Done(wake) => {
                        *waited = false;
                        *cursor = (*cursor + 1) % n;
                        Step::pipe(wake, Next::Run(*send))
                    }
                }
            }
            Behaviour::Receiver { recv, pipe } => match world.read(*pipe, me) {
                Some(writers) => Step::pipe(writers, Next::Run(*recv)),
                None => Step::just(Next::Sleep(None)),
            },
            Behaviour::Program { thread } => {
                let prog = world
                    .program
                    .as_mut()
                    .expect("a program task needs its program");
                let (wake, action) = prog.step(*thread as usize, now);
                let wake: Wake = wake.into_iter().map(|i| world.program_tasks[i]).collect();
                prog.take_forks(&mut world.fork_buf);
                let forked = prog.is_forked(*thread as usize);
                for i in world.fork_buf.drain(..) {
                    world.program_forks.push(world.program_tasks[i]);
                }
                let next = match action {
                    program::Action::Run(d) => Next::Run(d),
                    program::Action::Sleep(at) => Next::Sleep(at),
                    program::Action::Yield => Next::Yield(Nanos::ZERO),
                    // A forked child's exit is its task's death.
                    program::Action::Exit => {
                        if forked {
                            world.program_dead = Some(me);
                        }
                        Next::Sleep(None)
                    }
                    // Refused for host tasks when the scenario is built.
                    program::Action::KernelLock { .. } | program::Action::Kernel(_) => {
                        unreachable!("kernel extension events need the guest kernel model")
                    }
                };
                // glibc's futex wakeups (FUTEX_WAKE) are not sync.
                Step {
                    wake,
                    wake_flags: 0,
                    futex_wakes: prog.take_futex_wakes(),
                    next,
                }
            }
        }
    }
}

impl World {
    /// One message into `pipe` by `me` (`Pipe::pipe_write()`).
    fn write(&mut self, pipe: usize, me: TaskId, waited: bool) -> pipe::Write {
        self.pipes[pipe].pipe_write(me, waited)
    }

    /// One message out of `pipe` by its reader `me`: Some(tasks to wake),
    /// or None when `me` blocks on the empty pipe (`Pipe::pipe_read()`).
    fn read(&mut self, pipe: usize, me: TaskId) -> Option<Wake> {
        let wake_on_free = self.pipe_wake_writer_on_free;
        self.pipes[pipe].pipe_read(me, wake_on_free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pipe wakeups carry WF_SYNC in both directions (fs/pipe.c: the writer
    /// wakes a blocked reader, the reader wakes a blocked writer).
    #[test]
    fn pipe_wakeups_are_sync() {
        let now = Time(0);
        let (a, b) = (TaskId(0), TaskId(1));
        let mut w = World::default();
        let (p0, p1) = (w.new_pipe(1, 4096), w.new_pipe(1, 4096));
        let pp = |rx, tx, partner, working| Behaviour::PingPong {
            run: Nanos(1000),
            rx,
            tx,
            partner,
            working,
        };
        let (mut ba, mut bb) = (pp(p0, p1, b, true), pp(p1, p0, a, false));
        // b blocks reading its empty pipe; a passes the token and wakes it.
        assert_eq!(bb.on_burst_end(b, now, &mut w).next, Next::Sleep(None));
        let s = ba.on_burst_end(a, now, &mut w);
        assert_eq!(
            (s.wake.into_iter().collect::<Vec<_>>(), s.wake_flags),
            (vec![b], WF_SYNC)
        );

        // Messaging: a receiver blocked on an empty pipe is woken by the
        // sender's write; a sender blocked on a full pipe by the read.
        let (r, snd) = (TaskId(2), TaskId(3));
        let p = w.new_pipe(1, 4096);
        w.groups.push(MsgGroup {
            pipes: vec![p],
            readers: vec![r],
        });
        let mut recv = Behaviour::Receiver {
            recv: Nanos(1000),
            pipe: p,
        };
        let mut send = Behaviour::Sender {
            send: Nanos(1000),
            group: 0,
            cursor: 0,
            waited: false,
        };
        assert_eq!(recv.on_burst_end(r, now, &mut w).next, Next::Sleep(None));
        let s = send.on_burst_end(snd, now, &mut w);
        assert_eq!(
            (s.wake.into_iter().collect::<Vec<_>>(), s.wake_flags),
            (vec![r], WF_SYNC)
        );
        // The pipe is full now: the sender blocks, the reader wakes it.
        assert_eq!(send.on_burst_end(snd, now, &mut w).next, Next::Sleep(None));
        let s = recv.on_burst_end(r, now, &mut w);
        assert_eq!(
            (s.wake.into_iter().collect::<Vec<_>>(), s.wake_flags),
            (vec![snd], WF_SYNC)
        );
    }
}
