//! `[host.costs]`: each cost changes what happens where the kernel pays it,
//! seen in the results (who waits how long, how much work gets done).

use oversub::scenario::Scenario;

fn run(src: &str) -> oversub::report::Report {
    run_checked(&Scenario::parse("costs.toml", src).unwrap())
}

/// The whole run of `sc`, the core's invariants checked at every event.
fn run_checked(sc: &Scenario) -> oversub::report::Report {
    let mut sim = oversub::sim::Simulator::new(sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

fn costs(tw: &str, idle: &str, cs: &str, remote: &str) -> String {
    format!(
        "[host.costs]\ntimer_wake = \"{tw}\"\nidle_exit = \"{idle}\"\ncontext_switch = \"{cs}\"\n\
         remote_wakeup = \"{remote}\"\nmigration = \"0ns\"\n"
    )
}

// 1 ns of timer slack (what `prctl(PR_SET_TIMERSLACK, 1)` gives, as
// conform's workers do): the interrupt path alone, not the default 50 us.
const PERIODIC: &str = "[[task]]\nname = \"w\"\nkind = \"periodic\"\nperiod = \"1100us\"\nrun = \"50us\"\ncpus = [0]\ntimer_slack = \"1ns\"\n";
const HOG: &str = "[[task]]\nname = \"hog\"\nkind = \"hog\"\ncpus = [0]\n";

fn task<'a>(r: &'a oversub::report::Report, name: &str) -> &'a oversub::report::TaskReport {
    r.tasks.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn timer_wake_against_a_hog_is_the_interrupt_path_plus_the_switch() {
    let src = format!(
        "[host]\ncpus = 1\nduration = \"200ms\"\n{}{HOG}{PERIODIC}",
        costs("7us", "30us", "2us", "0ns")
    );
    let r = run(&src);
    let lat = &task(&r, "w").wakeup_latency_ns;
    assert!(lat.samples > 100);
    // The hog keeps the CPU during the interrupt path: no idle exit.
    assert_eq!(lat.p50, 9_001, "{lat:?}");
    // Zero costs: the model of old, 0 us.
    let r = run(&format!(
        "[host]\ncpus = 1\nduration = \"200ms\"\n{}{HOG}{PERIODIC}",
        costs("0ns", "0ns", "0ns", "0ns")
    ));
    assert_eq!(task(&r, "w").wakeup_latency_ns.p50, 1);
}

#[test]
fn timer_wake_on_an_idle_cpu_adds_the_idle_exit() {
    let src = format!(
        "[host]\ncpus = 1\nduration = \"200ms\"\n{}{PERIODIC}",
        costs("7us", "30us", "2us", "0ns")
    );
    let r = run(&src);
    let lat = &task(&r, "w").wakeup_latency_ns;
    assert_eq!(lat.p50, 39_001, "{lat:?}");
    assert_eq!(lat.max, 39_001, "{lat:?}");
}

/// hrtimer_nanosleep()'s slack (sim/hrtimer.rs): on an otherwise idle CPU
/// the clock event fires at the hard expiry, the default 50 us after the
/// time asked for, and the interrupt path follows.
#[test]
fn a_sleeper_on_a_quiet_cpu_wakes_at_its_hard_expiry() {
    let periodic = PERIODIC.replace("timer_slack = \"1ns\"\n", "");
    let src = format!(
        "[host]\ncpus = 1\nduration = \"200ms\"\n{}{periodic}",
        costs("7us", "30us", "2us", "0ns")
    );
    let lat = task(&run(&src), "w").wakeup_latency_ns.clone();
    assert_eq!((lat.p50, lat.max), (89_000, 89_000), "{lat:?}");
}

/// The tick of a busy CPU is an hrtimer interrupt: it runs a sleeper whose
/// soft expiry has passed, before the hard expiry. With 900 us of slack and
/// a 1 ms tick, every wakeup comes at the first tick after the soft expiry
/// (or the hard expiry, whichever is first), never later.
#[test]
fn the_tick_of_a_busy_cpu_runs_a_sleeper_past_its_soft_expiry() {
    // A short slice: the woken sleeper preempts the hog at once
    // (PREEMPT_SHORT), so its latency is the timer's.
    let periodic = PERIODIC.replace(
        "timer_slack = \"1ns\"",
        "timer_slack = \"900us\"\nslice = \"100us\"",
    );
    let src = format!(
        "[host]\ncpus = 1\nhz = 1000\nduration = \"400ms\"\n{}{HOG}{periodic}",
        costs("7us", "30us", "2us", "0ns")
    );
    let lat = task(&run(&src), "w").wakeup_latency_ns.clone();
    assert!(lat.samples > 100, "{lat:?}");
    // Woken within the slack (plus the switch into it) every time ...
    assert!(lat.max <= 900_000 + 9_000, "{lat:?}");
    // ... and mostly by a tick before the hard expiry: the 1100 us period
    // walks the soft expiry through the 1 ms tick grid, so a tick comes
    // within 900 us nine times in ten, after half a tick on average
    // (without the tick's run of the queues every wakeup would take 909 us).
    assert!(lat.p50 < 700_000, "{lat:?}");
    assert!(lat.mean < 700_000, "{lat:?}");
}

#[test]
fn a_switch_costs_cpu_time_ping_pong_slows_down() {
    // One pair on one CPU: a hop is 10 us of work plus the switch into the
    // partner, so 2 us of switch cost cuts the hops by 1/6.
    let pp =
        "[[task]]\nname = \"pp\"\nkind = \"pingpong\"\nrun = \"10us\"\ncount = 2\ncpus = [0]\n";
    let hops = |cs: &str| {
        let r = run(&format!(
            "[host]\ncpus = 1\nduration = \"120ms\"\n{}{pp}",
            costs("0ns", "0ns", cs, "0ns")
        ));
        task(&r, "pp.0").nr_switches + task(&r, "pp.1").nr_switches
    };
    let (free, costly) = (hops("0ns"), hops("2us"));
    assert!((11_990..=12_010).contains(&free), "{free}");
    assert!((9_990..=10_010).contains(&costly), "{costly}");
    // The CPU stays busy all the time: the switch is CPU time, not idle.
    let r = run(&format!(
        "[host]\ncpus = 1\nduration = \"120ms\"\n{}{pp}",
        costs("0ns", "0ns", "2us", "0ns")
    ));
    assert_eq!(r.cpus[0].busy_ns, 120_000_000);
}

#[test]
fn a_remote_wakeup_arrives_after_the_ipi_latency() {
    // The pair on two CPUs: every hop wakes the partner on the other, idle
    // CPU through its wakelist.
    let pp = "[[task]]\nname = \"a\"\nkind = \"pingpong\"\nrun = \"10us\"\ncount = 2\n";
    let src = |remote: &str| {
        format!(
            "[host]\ncpus = 2\nduration = \"100ms\"\n{}{pp}",
            costs("0ns", "0ns", "1us", remote)
        )
    };
    let r = run(&src("20us"));
    let (a0, a1) = (task(&r, "a.0"), task(&r, "a.1"));
    assert_ne!(
        a0.cpu, a1.cpu,
        "the pair sits on both CPUs (fork placement)"
    );
    assert_eq!(
        a1.wakeup_latency_ns.p50, 21_000,
        "{:?}",
        a1.wakeup_latency_ns
    );
    // A hop is 10 us of work + 20 us of IPI + 1 us of switch: 31 us.
    let hops = a0.nr_wakeups + a1.nr_wakeups;
    assert!((3_200..=3_240).contains(&hops), "{hops}");
    let r = run(&src("0ns"));
    let hops0 = task(&r, "a.0").nr_wakeups + task(&r, "a.1").nr_wakeups;
    assert!(hops0 > 2 * hops, "{hops0} vs {hops}");
}

/// Two unpinned threads on two CPUs, each holding one mutex for 1 ms and
/// taking it again `gap_us` after releasing it, with `remote` as the
/// wakeup's IPI latency (the other costs zero): (cpu_ns, loops) per thread.
fn mutex_pair(remote: &str, gap_us: u32) -> [(u64, u64); 2] {
    let json = format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"instance": 2,
            "lock": "m", "run": 1000, "unlock": "m", "run1": {gap_us}}}}}}}"#
    );
    let mut sc = oversub::scenario::rtapp::scenario("mutex.json", &json).unwrap();
    sc.host.costs = oversub::sched::HostCosts::ZERO;
    sc.host.costs.remote_wakeup = oversub::scenario::parse_duration(remote).unwrap().0;
    let r = run_checked(&sc);
    let p = r.program.as_ref().unwrap();
    [0, 1].map(|i| (task(&r, &format!("t.{i}")).cpu_ns, p.threads[i].phase_loops))
}

#[test]
fn a_slow_remote_wakeup_loses_the_mutex_to_the_releasing_thread() {
    // pthread mutexes are not handed over: the releaser wakes the waiter
    // (on the other, idle CPU, through its wakelist) and takes the lock
    // again after `gap`. A waiter that needs longer than the gap to run
    // finds it taken every time and sleeps again (lock barging); this is
    // the kernel's and glibc's behaviour, not a fairness bug of the model.
    let [(c0, l0), (c1, l1)] = mutex_pair("24us", 10);
    assert!(l0 > 900 && l1 == 0, "loops {l0} {l1}");
    assert!(c1 < c0 / 50, "cpu {c0} {c1}");
    // The same wakeup beats a longer gap: the lock alternates.
    let [(c0, l0), (c1, l1)] = mutex_pair("24us", 40);
    assert!(l0.abs_diff(l1) <= 1 && l0 > 400, "loops {l0} {l1}");
    assert!(c0 > 400_000_000 && c1 > 400_000_000, "cpu {c0} {c1}");
    // And a free wakeup beats the short gap.
    let [(_, l0), (_, l1)] = mutex_pair("0ns", 10);
    assert!(l0.abs_diff(l1) <= 1 && l0 > 400, "loops {l0} {l1}");
}

/// The rt-app task extension `"oversub": {"timer_slack": us}` reaches the
/// sleeps (what `oversub record` sets on derived threads, whose sleeps
/// replay measured blocked times): alone on a CPU with free interrupts, a
/// sleeper wakes at its hard expiry, the default 50 us late, or 1 ns late.
#[test]
fn an_rtapp_threads_timer_slack_sets_how_late_its_sleeps_end() {
    let lat = |ext: &str| {
        let json = format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"w": {{{ext}"cpus": [0],
                "loop": 1, "phases": {{"p": {{"loop": 100, "run": 50, "sleep": 1000}}}}}}}}}}"#
        );
        let mut sc = oversub::scenario::rtapp::scenario("slack.json", &json).unwrap();
        sc.host.costs = oversub::sched::HostCosts::ZERO;
        let r = run_checked(&sc);
        task(&r, "w").wakeup_latency_ns.clone()
    };
    let default = lat("");
    assert!(default.samples >= 99, "{default:?}");
    assert_eq!((default.p50, default.max), (50_000, 50_000), "{default:?}");
    let fine = lat(r#""oversub": {"timer_slack": 0.001}, "#);
    assert_eq!((fine.p50, fine.max), (1, 1), "{fine:?}");
    let coarse = lat(r#""oversub": {"timer_slack": 300}, "#);
    assert_eq!((coarse.p50, coarse.max), (300_000, 300_000), "{coarse:?}");
}

/// `__schedule()` runs with IRQs and preemption off until the switch is
/// done: a reschedule raised while a CPU pays for its switch-in waits for
/// the switch's end (`schedule()`'s `need_resched()` loop). Two short-slice
/// sleepers wake 300 ns apart on a CPU that runs a hog; the second wakes
/// while the CPU is switching into the first and preempts it
/// (PREEMPT_SHORT), 2.7 us after that switch began, never earlier.
#[test]
fn a_reschedule_during_a_switch_waits_for_its_end() {
    let w = |name: &str, slice: &str, phase: &str| {
        format!(
            "[[task]]\nname = \"{name}\"\nkind = \"periodic\"\nperiod = \"1ms\"\nrun = \"50us\"\n\
             cpus = [0]\ntimer_slack = \"1ns\"\nslice = \"{slice}\"\nphase = \"{phase}\"\n"
        )
    };
    let src = format!(
        "[host]\ncpus = 1\nduration = \"50ms\"\n{}{HOG}{}{}",
        costs("0ns", "0ns", "2700ns", "0ns"),
        w("w1", "200us", "100us"),
        w("w2", "100us", "100300ns"),
    );
    let sc = Scenario::parse("costs.toml", &src).unwrap();
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.set_check_invariants(true);
    let sink = std::sync::Arc::new(std::sync::Mutex::new(oversub::trace::VecSink::window(
        0,
        u64::MAX,
    )));
    sim.set_trace(Box::new(oversub::trace::Shared(sink.clone())));
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes");
    let events = std::mem::take(&mut sink.lock().unwrap().events);
    // Each preemption (prev left runnable): how long after prev's switch-in.
    let mut since = None;
    let mut preempted_after = Vec::new();
    for ev in events {
        if let oversub::trace::TraceEvent::SchedSwitch {
            t, prev_runnable, ..
        } = ev
        {
            if let (true, Some(s)) = (prev_runnable, since) {
                preempted_after.push(t - s);
            }
            since = Some(t);
        }
    }
    // w2 preempts w1 in most of the 50 periods.
    let early = preempted_after.iter().filter(|&&d| d < 100_000).count();
    assert!(early >= 40, "{preempted_after:?}");
    let min = preempted_after.iter().min().copied();
    assert_eq!(min, Some(2_700), "{preempted_after:?}");
}

/// `yield_to()` costs its caller `yield_to` of CPU time whenever it gets
/// past the -ESRCH test (kernel/sched/syscalls.c: `double_rq_lock()`, the
/// checks, `yield_to_task_fair()`), refused or not; a -ESRCH (both
/// runqueues hold one task) costs nothing. A `yield_loop` task `a` does
/// 10 us of work between calls to `yield_to(b)`, `b` a hog running on the
/// other CPU (refused: it is on a CPU). With a hog `c` sharing `a`'s CPU,
/// every call is refused after the locks: at 5 us each, `a` fits 2/3 as
/// many loops into its half of the CPU. Alone on its CPU, every call is
/// -ESRCH: the cost changes nothing.
#[test]
fn yield_to_costs_its_caller_unless_it_returns_esrch() {
    let loops = |cost: &str, with_c: bool| {
        let c = if with_c {
            "[[task]]\nname = \"c\"\nkind = \"hog\"\ncpus = [0]\n"
        } else {
            ""
        };
        let src = format!(
            "[host]\ncpus = 2\nduration = \"200ms\"\n[host.costs]\ncontext_switch = \"0ns\"\n\
             timer_wake = \"0ns\"\nidle_exit = \"0ns\"\nyield_to = \"{cost}\"\n\
             [[task]]\nname = \"b\"\nkind = \"hog\"\ncpus = [1]\n\
             [[task]]\nname = \"a\"\nkind = \"yield_loop\"\nwork = \"10us\"\ntarget = \"b\"\ncpus = [0]\n{c}"
        );
        let r = run(&src);
        let a = task(&r, "a");
        assert_eq!(a.nr_yield_to_ok, 0, "b always runs: refused or -ESRCH");
        a.nr_yield_to
    };
    let free = loops("0ns", true);
    let paid = loops("5us", true);
    assert!(free > 4_000, "{free}");
    // 10 us of work per loop, plus 5 us of yield_to(): 2/3 as many.
    let ratio = paid as f64 / free as f64;
    assert!((0.65..0.69).contains(&ratio), "{paid} / {free} = {ratio}");
    // Alone on CPU 0: -ESRCH every time, no cost.
    let alone_free = loops("0ns", false);
    let alone_paid = loops("5us", false);
    assert!(alone_free > 15_000, "{alone_free}");
    assert_eq!(alone_free, alone_paid);
}

/// The rt-app producer/consumer of conform/rtapp_condvar.json (one CPU, a
/// 6 ms periodic producer running 0.5 ms and signalling a consumer that
/// runs 1 ms), optionally with a hog thread on the same CPU, under `costs`
/// (every other cost zero). Per thread: (cpu_ns, loops).
fn condvar_pair(costs: oversub::sched::HostCosts, hog: bool) -> Vec<(String, u64, u64)> {
    let hog = if hog {
        r#", "hog": {"cpus": [0], "run": 1000000}"#
    } else {
        ""
    };
    let json = format!(
        r#"{{"global": {{"duration": 1}}, "tasks": {{
            "prod": {{"cpus": [0], "run": 500, "signal": "q", "timer": {{"ref": "p", "period": 6000}}}},
            "cons": {{"cpus": [0], "lock": "m", "wait": {{"ref": "q", "mutex": "m"}}, "unlock": "m", "run": 1000}}{hog}}}}}"#
    );
    let mut sc = oversub::scenario::rtapp::scenario("condvar.json", &json).unwrap();
    sc.host.costs = costs;
    let r = run_checked(&sc);
    let p = r.program.as_ref().unwrap();
    p.threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let name = r.tasks[i].name.clone();
            (name, r.tasks[i].cpu_ns, t.phase_loops)
        })
        .collect()
}

/// Only the three system-call costs, round figures: 10 us per timed sleep,
/// 5 us more when its timer fires on an idle CPU, 2 us per waking FUTEX_WAKE.
fn syscall_costs() -> oversub::sched::HostCosts {
    oversub::sched::HostCosts {
        nanosleep: 10_000,
        nanosleep_idle: 5_000,
        futex_wake: 2_000,
        ..oversub::sched::HostCosts::ZERO
    }
}

/// A program thread pays the CPU time of its system calls where the kernel
/// does: each timed sleep costs it `nanosleep` (+ `nanosleep_idle` when the
/// timer fires on an idle CPU), each FUTEX_WAKE that wakes a waiter costs
/// the waker `futex_wake`; a thread that only blocks on a futex pays
/// nothing beyond the switch.
#[test]
fn a_programs_sleeps_and_futex_wakes_cost_its_threads_cpu() {
    let (zero, costs) = (oversub::sched::HostCosts::ZERO, syscall_costs());
    let free = condvar_pair(zero, false);
    let paid = condvar_pair(costs, false);
    assert_eq!(free[0].0, "prod");
    let (prod0, prod) = (&free[0], &paid[0]);
    assert!(prod.2 >= 160 && prod.2 == prod0.2, "{free:?} {paid:?}");
    let loops = prod.2;
    // Free: exactly its 500 us per loop (within the loop in progress).
    assert!(prod0.1.abs_diff(loops * 500_000) <= 500_000, "{free:?}");
    // Paid: 17 us more per loop (its sleep ends on the idle CPU, its signal
    // wakes the waiting consumer).
    let extra = prod.1 as i64 - prod0.1 as i64;
    assert!(
        (extra - loops as i64 * 17_000).abs() <= 17_000,
        "extra {extra} over {loops} loops"
    );
    // The consumer only blocks in FUTEX_WAIT: no extra CPU.
    assert!(
        paid[1].1.abs_diff(free[1].1) <= 1_000_000,
        "{free:?} {paid:?}"
    );
}

/// Against a hog on the same CPU the system calls' CPU time comes out of
/// the hog's share (who gets the CPU), and the CPU is never idle when the
/// producer's timer fires: no `nanosleep_idle`.
#[test]
fn a_programs_system_calls_take_their_cpu_from_the_other_tasks() {
    let (zero, costs) = (oversub::sched::HostCosts::ZERO, syscall_costs());
    let free = condvar_pair(zero, true);
    let paid = condvar_pair(costs, true);
    let prod_extra = paid[0].1 as i64 - free[0].1 as i64;
    let hog_loss = free[2].1 as i64 - paid[2].1 as i64;
    let loops = paid[0].2 as i64;
    assert!(loops >= 150, "{paid:?}");
    // 12 us per loop: the sleep and the wake, never the idle exit.
    assert!(
        (prod_extra - loops * 12_000).abs() <= 12_000,
        "extra {prod_extra} over {loops} loops {free:?} {paid:?}"
    );
    // The hog gives it up (the consumer's share is unchanged).
    assert!(
        (hog_loss - prod_extra).abs() <= 1_000_000,
        "hog lost {hog_loss}, producer gained {prod_extra}"
    );
}
