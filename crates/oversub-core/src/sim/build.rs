//! The simulator's builder: reads a validated scenario once and builds the
//! host level (its cgroups and tasks), then each VM (its vCPU tasks on the
//! host, its runtime and, for a program VM, its guest level). Nothing here
//! runs the model; `Simulator::new` is `SimBuilder::new(sc).build()`.

use super::level::{allowed_mask, KernelLevel};
use super::vm::{self, VcpuTasks, VmRt};
use super::{hrtimer, Body, Simulator, TaskSim};
use crate::engine::{EventQueue, Nanos, SimRng, Time};
use crate::kvm::{VcpuIdx, VmId};
use crate::limits;
use crate::scenario::{expanded_names, Scenario, TaskKind};
use crate::sched::weight::scale_load;
use crate::sched::{GroupId, SchedConfig, TaskId, ROOT_GROUP};
use crate::task::{Behaviour, World};
use std::collections::BTreeMap;

/// Guest threads are created one after another by the program's main
/// thread, so they do not start in the same instant: each thread of a
/// program VM starts after a uniform draw below one host tick from the run's
/// seed (stream 1000 + VM index). This is also what makes a program VM's
/// seeds differ, as the phase generator's random bursts do
/// (docs/workloads.md, "Seeds").
fn start_jitter(
    p: &crate::workload::ir::Program,
    seed: u64,
    hz: u32,
    vm: usize,
) -> crate::workload::ir::Program {
    let mut p = p.clone();
    let mut rng = SimRng::new(seed, 1000 + vm as u64);
    let tick = 1_000_000_000 / u64::from(hz.max(1));
    for t in &mut p.threads {
        t.delay = crate::engine::Nanos(t.delay.0 + rng.below(tick));
    }
    p
}

/// Builds a [`Simulator`] from a validated scenario, one part of the
/// scenario at a time, in the order the tasks get their ids: the cgroups,
/// the host's tasks, then the vCPU tasks and runtime of each VM.
pub struct SimBuilder<'a> {
    sc: &'a Scenario,
    sim: Simulator,
    /// Task group of each cgroup path.
    by_path: BTreeMap<String, GroupId>,
}

impl<'a> SimBuilder<'a> {
    /// The host level of `sc` without cgroups or tasks.
    pub fn new(sc: &'a Scenario) -> SimBuilder<'a> {
        let mut host = KernelLevel::new(SchedConfig {
            nr_cpus: sc.host.cpus,
            hz: sc.host.hz,
            features: sc.host.features,
            preset: sc.host.kernel,
            costs: sc.host.costs,
        });
        host.sched.yield_cfg = sc.host.yield_cfg;
        let n = sc.host.cpus as usize;
        let tick = host.sched.cfg.tick_nsec();
        let sim = Simulator {
            host,
            queue: EventQueue::new(),
            tasks: Vec::new(),
            world: World {
                pipe_wake_writer_on_free: sc.host.features.pipe_wake_writer_on_free,
                ..World::default()
            },
            cpu_gen: vec![0; n],
            tick_armed: vec![false; n],
            switch_end: vec![Time::ZERO; n],
            resched_deferred: vec![false; n],
            hrtimers: hrtimer::HrtimerBases::new(n),
            due_timers: Vec::new(),
            tick,
            now: Time::ZERO,
            end: Time(u64::MAX),
            events: 0,
            stale: 0,
            // Debug builds check every event; release builds on request.
            check_invariants: cfg!(debug_assertions),
            _rng: SimRng::new(sc.host.seed, 0),
            vms: vm::Vms::default(),
            vm_ops: sc
                .vms
                .iter()
                .map(|v| {
                    let w = |i: usize| {
                        v.program
                            .as_ref()
                            .and_then(|p| p.threads.get(i))
                            .and_then(|t| t.ops_per_loop)
                            .unwrap_or(1.0)
                    };
                    v.ops_threads
                        .as_ref()
                        .map(|sel| sel.iter().map(|&i| (i, w(i))).collect())
                })
                .collect(),
            kvm: sc.kvm.clone(),
            pv: sc.pv,
            until_done: false,
            trace: None,
            trace_yield: Default::default(),
            trace_guest: Vec::new(),
            trace_st: Default::default(),
            budget_cpus: u64::from(sc.host.cpus)
                + sc.vms.iter().map(|v| u64::from(v.vcpus)).sum::<u64>(),
            budget_rate: limits::MAX_EVENTS_PER_CPU_SECOND,
            budget_allowance: limits::EVENT_ALLOWANCE,
        };
        let mut by_path = BTreeMap::new();
        by_path.insert("/".into(), ROOT_GROUP);
        SimBuilder { sc, sim, by_path }
    }

    /// The whole simulator: cgroups, host tasks, VMs.
    pub fn build(self) -> Simulator {
        self.cgroups().host_tasks().vms().sim
    }

    /// The scenario's cgroups as task groups (`sched_create_group`),
    /// parents first.
    fn cgroups(mut self) -> Self {
        let sched = &mut self.sim.host.sched;
        // Declared parents come first after sorting by depth.
        let mut cgs = self.sc.cgroups.clone();
        cgs.sort_by_key(|c| c.path.matches('/').count());
        for c in &cgs {
            let parent = self.by_path[&crate::scenario::parent_path(&c.path)];
            // cpu.weight w is cpu.shares w * 1024 / 100 (sched_group_set_shares).
            let shares = scale_load(c.weight as u64 * 1024 / 100).max(scale_load(2));
            let g = sched.create_group(&c.path, parent, shares);
            self.by_path.insert(c.path.clone(), g);
        }
        self
    }

    /// The host's own tasks (`[[task]]`), placed by the level, with their
    /// behaviours; a host program's runtime.
    fn host_tasks(mut self) -> Self {
        let (sc, sim) = (self.sc, &mut self.sim);
        let n = sc.host.cpus as usize;
        let mut names: BTreeMap<String, TaskId> = BTreeMap::new();
        let mut pending_targets: Vec<(TaskId, String)> = Vec::new();
        for t in &sc.tasks {
            let allowed = allowed_mask(n, t.cpus.as_deref());
            let group = self.by_path[&t.cgroup];
            let slice = t.slice.map(|s| s.0);
            let mut ids = Vec::new();
            for name in &expanded_names(t) {
                let id = sim.host.spawn(name, group, t.nice, allowed.clone(), slice);
                names.insert(name.clone(), id);
                ids.push(id);
            }
            match &t.kind {
                TaskKind::Hog => ids.iter().for_each(|_| sim.push_task(Behaviour::Hog)),
                TaskKind::Periodic { period, run, phase } => {
                    for _ in &ids {
                        sim.push_task(Behaviour::Periodic {
                            period: *period,
                            run: *run,
                            next_expiry: Time::ZERO + *phase,
                            active: false,
                        });
                    }
                }
                TaskKind::YieldLoop { work, target } => {
                    for &id in &ids {
                        sim.push_task(Behaviour::YieldLoop {
                            work: *work,
                            target: None,
                        });
                        if let Some(tg) = target {
                            pending_targets.push((id, tg.clone()));
                        }
                    }
                }
                TaskKind::PingPong { run } => {
                    for pair in ids.chunks(2) {
                        // One token in flight: the pipes never fill.
                        let a_to_b = sim.world.new_pipe(u32::MAX, 1);
                        let b_to_a = sim.world.new_pipe(u32::MAX, 1);
                        sim.push_task(Behaviour::PingPong {
                            run: *run,
                            rx: b_to_a,
                            tx: a_to_b,
                            partner: pair[1],
                            working: true,
                        });
                        sim.push_task(Behaviour::PingPong {
                            run: *run,
                            rx: a_to_b,
                            tx: b_to_a,
                            partner: pair[0],
                            working: false,
                        });
                    }
                }
                TaskKind::Program { thread } => {
                    sim.push_task(Behaviour::Program { thread: *thread });
                    sim.world.program_tasks.push(ids[0]);
                }
                TaskKind::Messaging {
                    fds,
                    send,
                    recv,
                    pipe_pages,
                    msg_size,
                } => {
                    let f = *fds as usize;
                    for group_ids in ids.chunks(2 * f) {
                        let pipes: Vec<usize> = (0..f)
                            .map(|_| sim.world.new_pipe(*pipe_pages, *msg_size))
                            .collect();
                        let readers: Vec<TaskId> = group_ids[f..].to_vec();
                        let group = sim.world.groups.len();
                        sim.world.groups.push(crate::task::MsgGroup {
                            pipes: pipes.clone(),
                            readers,
                        });
                        // hackbench's senders each start at the first pipe.
                        for _ in 0..f {
                            sim.push_task(Behaviour::Sender {
                                send: *send,
                                group,
                                cursor: 0,
                                waited: false,
                            });
                        }
                        for &p in &pipes {
                            sim.push_task(Behaviour::Receiver {
                                recv: *recv,
                                pipe: p,
                            });
                        }
                    }
                }
            }
            for id in &ids {
                sim.tasks[id.idx()].timer_slack = t.timer_slack;
            }
        }
        if let Some(p) = &sc.program {
            debug_assert_eq!(sim.world.program_tasks.len(), p.threads.len());
            // A host task's FUTEX_WAKE returns to user mode before it goes
            // on: the wakee may preempt it there.
            sim.world.program =
                Some(crate::task::program::ProgramRt::new(p.clone()).preempt_at_syscall_exit(true));
            sim.until_done = sc.until_done;
        }
        for (id, tg) in pending_targets {
            if let Body::Steps(Behaviour::YieldLoop { target, .. }) = &mut sim.tasks[id.idx()].body
            {
                *target = Some(names[&tg]);
            }
        }
        self
    }

    /// The VMs: one host task per vCPU, created after the plain tasks; the
    /// VM runtime; a program VM's guest level.
    fn vms(mut self) -> Self {
        let (sc, sim) = (self.sc, &mut self.sim);
        let n = sc.host.cpus as usize;
        for (vi, v) in sc.vms.iter().enumerate() {
            let tasks = VcpuTasks::new(TaskId(sim.tasks.len() as u32));
            for k in 0..v.vcpus {
                let allowed = match &v.pin {
                    Some(pin) => allowed_mask(n, Some(&[pin[k as usize]])),
                    None => allowed_mask(n, v.cpus.as_deref()),
                };
                let group = self.by_path[&v.vcpu_cgroups[k as usize]];
                let name = format!("{}.vcpu{k}", v.name);
                let id = sim.host.spawn(&name, group, 0, allowed, None);
                assert_eq!(id, tasks.task(VcpuIdx(k)), "vCPU task ids are consecutive");
                sim.push_vcpu_task(VmId(vi as u32), VcpuIdx(k));
            }
            let rng = SimRng::new(sc.host.seed, 1 + vi as u64);
            let mut rt = VmRt::new(v, &sc.kvm, &sc.pv, tasks, rng);
            if let Some(p) = &v.program {
                // The guest kernel ([vm] kernel/features, default the
                // host's); its HZ is the guest tick rate when that is a
                // kernel HZ.
                let hz = match sc.kvm.guest_hz {
                    100 | 250 | 300 | 1000 => sc.kvm.guest_hz,
                    _ => sc.host.hz,
                };
                // The wakeup-path locks come after the program's own.
                let wakeup = sc
                    .pv
                    .wakeup_locks
                    .then(|| crate::guest::wakeup::WakeupLocks::new(p));
                // Which locks are waited for with IRQs off: the program's
                // by their `irqsave` attribute, then the wakeup path's as
                // 6.12 takes them (`WakeupLocks::irqs_off`).
                let mut irqsave = p.klock_irqsave.clone();
                irqsave.resize(p.klocks.len(), false);
                if let Some(w) = wakeup {
                    irqsave.extend(w.irqs_off());
                }
                rt.set_program_locks(&irqsave, irqsave.len(), &sc.pv);
                if sc.pv.cpuidle_haltpoll {
                    rt.cpuidle_haltpoll_init();
                }
                let p = &start_jitter(p, sc.host.seed, sc.host.hz, vi);
                rt.set_guest(vm::GuestLevel::new(
                    p,
                    v.vcpus,
                    hz,
                    v.guest_kernel,
                    v.guest_features,
                ));
                if let Some(g) = rt.guest.as_mut() {
                    g.wakeup = wakeup;
                    // `[guest] lazy_mm_cpumask`: one mask per mm (the
                    // start-up process's and each forked copy's).
                    g.mm_cpumasks = crate::guest::tlb::MmCpumasks::new(
                        sc.pv.lazy_mm_cpumask,
                        p.threads.len() + 1,
                        v.vcpus as usize,
                    );
                }
            }
            sim.vms.push(rt);
            sim.arm_guest_ticks(VmId(vi as u32));
        }
        self
    }
}

impl Simulator {
    /// Builds the host and its tasks from a validated scenario
    /// ([`SimBuilder`]).
    pub fn new(sc: &Scenario) -> Simulator {
        SimBuilder::new(sc).build()
    }

    /// A host task that runs behaviour `b`.
    fn push_task(&mut self, b: Behaviour) {
        self.push_body(Body::Steps(b));
    }

    /// The host task of vCPU `idx` of VM `vm`: a thread in `KVM_RUN`
    /// whose preempt notifier `vcpu_load()` registered.
    fn push_vcpu_task(&mut self, vm: VmId, idx: VcpuIdx) {
        self.push_body(Body::Notified(vm::PreemptNotifier::register(vm, idx)));
    }

    fn push_body(&mut self, body: Body) {
        self.tasks.push(TaskSim {
            body,
            running_since: None,
            started: false,
            overhead: Nanos::ZERO,
            timer_slack: hrtimer::DEFAULT_TIMER_SLACK,
        });
        self.hrtimers.add_task(TaskId(self.tasks.len() as u32 - 1));
    }
}
