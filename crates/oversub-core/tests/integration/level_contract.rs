//! The scheduler's behaviour as a contract every kernel level keeps: the
//! same situation (a thread program on N CPUs) is run once as host tasks
//! and once as the guest threads of an undercommitted VM (N vCPUs, each
//! pinned to a host CPU of its own, nothing else on the host), and each
//! test asserts the same effect at both levels: who gets how much CPU, who
//! loses it, who runs next. Both levels are one `KernelLevel` type
//! (src/sim/level.rs) driving one `Scheduler`; what a test here catches is
//! a level whose driver serves the scheduler differently (a dropped
//! reschedule, HRTICK or timer, a lost wakeup).
//!
//! The guest level differs from the host by design where the platform
//! does: its wakeups pass through HLT and the LAPIC, its switch costs are
//! not charged, so the tolerances are those of the behaviour judged, not
//! of a level.

use oversub::report::Report;
use oversub::scenario::Scenario;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The two levels a contract test runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Host,
    Guest,
}

const LEVELS: [Level; 2] = [Level::Host, Level::Guest];

/// What a test reads of one thread, whichever level ran it.
#[derive(Debug)]
struct Thread {
    name: String,
    cpu_ns: u64,
    nr_switches: u64,
    phase_loops: u64,
}

/// A situation: `cpus` CPUs at HZ=250 with the `features` switches, for
/// `secs` seconds, running the rt-app `tasks` object (JSON text).
struct Situation<'a> {
    name: &'a str,
    cpus: u32,
    secs: u32,
    features: &'a [(&'a str, bool)],
    tasks: &'a str,
}

impl Situation<'_> {
    fn dir() -> PathBuf {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("level_contract");
        std::fs::create_dir_all(&d).expect("the test's scratch directory");
        d
    }

    /// Runs the situation at `level` (scheduler invariants checked after
    /// every event) and returns each thread's figures by name.
    fn run(&self, level: Level) -> Vec<Thread> {
        let dir = Self::dir();
        let program = format!(
            r#"{{"global": {{"duration": {}}}, "tasks": {}}}"#,
            self.secs, self.tasks
        );
        let feats = |sep: &str| {
            self.features
                .iter()
                .map(|(k, v)| format!("\"{k}\"{sep}{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let sc = match level {
            Level::Host => {
                // The host-only form: the same program with the host in its
                // "oversub" object.
                let src = program.replacen(
                    '{',
                    &format!(
                        r#"{{"oversub": {{"cpus": {}, "hz": 250, "features": {{{}}}}}, "#,
                        self.cpus,
                        feats(": ")
                    ),
                    1,
                );
                let f = dir.join(format!("{}-host.json", self.name));
                std::fs::write(&f, src).expect("write the host program");
                Scenario::load(&f)
            }
            Level::Guest => {
                let prog = dir.join(format!("{}-guest.json", self.name));
                std::fs::write(&prog, &program).expect("write the guest program");
                let pin: Vec<String> = (0..self.cpus).map(|c| c.to_string()).collect();
                let mut toml = format!(
                    "[host]\ncpus = {n}\nhz = 250\nduration = \"{s}s\"\n\
                     [kvm]\nguest_hz = 250\n\
                     [[vm]]\nname = \"g\"\nvcpus = {n}\npin = [{pin}]\n\
                     program = \"{prog}\"\n[vm.features]\n",
                    n = self.cpus,
                    s = self.secs,
                    pin = pin.join(", "),
                    prog = prog.display(),
                );
                for (k, v) in self.features {
                    writeln!(toml, "{k} = {v}").unwrap();
                }
                let f = dir.join(format!("{}-guest.toml", self.name));
                std::fs::write(&f, toml).expect("write the guest scenario");
                Scenario::load(&f)
            }
        }
        .unwrap_or_else(|e| panic!("{level:?}: {e}"));
        let mut sim = oversub::sim::Simulator::new(&sc);
        sim.set_check_invariants(true);
        let r = sim
            .run_polled(sc.host.duration, &mut |_| true)
            .unwrap_or_else(|e| panic!("{level:?}: {e}"));
        threads(&r, level)
    }
}

fn threads(r: &Report, level: Level) -> Vec<Thread> {
    match level {
        Level::Host => {
            let prog = r.program.as_ref().expect("a host program");
            prog.threads
                .iter()
                .map(|p| {
                    let t = r.tasks.iter().find(|t| t.name == p.name).unwrap();
                    Thread {
                        name: p.name.clone(),
                        cpu_ns: t.cpu_ns,
                        nr_switches: t.nr_switches,
                        phase_loops: p.phase_loops,
                    }
                })
                .collect()
        }
        Level::Guest => r.vms[0]
            .threads
            .iter()
            .map(|t| Thread {
                name: t.name.clone(),
                cpu_ns: t.cpu_ns,
                nr_switches: t.nr_switches,
                phase_loops: t.phase_loops,
            })
            .collect(),
    }
}

fn get<'a>(ts: &'a [Thread], name: &str) -> &'a Thread {
    ts.iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no thread {name} in {ts:?}"))
}

/// Two always-running threads on one CPU, nice 0 and nice 5: EEVDF gives
/// them CPU in the ratio of their weights, 1024 : 335 (3.057 : 1).
#[test]
fn nice_0_vs_nice_5_is_3_057_to_1_at_every_level() {
    let s = Situation {
        name: "nice",
        cpus: 1,
        secs: 4,
        features: &[],
        tasks: r#"{"n0": {"run": 1000}, "n5": {"priority": 5, "run": 1000}}"#,
    };
    for level in LEVELS {
        let ts = s.run(level);
        let ratio = get(&ts, "n0").cpu_ns as f64 / get(&ts, "n5").cpu_ns as f64;
        assert!(
            (ratio - 1024.0 / 335.0).abs() < 3.057 * 0.01,
            "{level:?}: ratio {ratio}"
        );
    }
}

/// Affinity: two threads pinned to CPU 0 of 2 share it (each about half of
/// the run); a third pinned to CPU 1 has that CPU to itself and never
/// switches out for another thread.
#[test]
fn pinned_threads_share_their_cpu_and_leave_the_other_alone_at_every_level() {
    let s = Situation {
        name: "pinned",
        cpus: 2,
        secs: 2,
        features: &[],
        tasks: r#"{"a": {"cpus": [0], "run": 1000}, "b": {"cpus": [0], "run": 1000},
                   "c": {"cpus": [1], "run": 1000}}"#,
    };
    for level in LEVELS {
        let ts = s.run(level);
        let (a, b, c) = (get(&ts, "a"), get(&ts, "b"), get(&ts, "c"));
        let share = a.cpu_ns as f64 / (a.cpu_ns + b.cpu_ns) as f64;
        assert!((share - 0.5).abs() < 0.01, "{level:?}: a's share {share}");
        // The pair fills CPU 0 (all but switch costs and the start).
        let run = 2e9;
        let pair = (a.cpu_ns + b.cpu_ns) as f64;
        assert!(pair > 0.97 * run && pair <= run, "{level:?}: pair {pair}");
        // c alone on CPU 1: about the whole run, and more than either of a, b.
        assert!(c.cpu_ns as f64 > 0.97 * run, "{level:?}: c {}", c.cpu_ns);
        // a and b preempt each other; c is preempted by nobody.
        assert!(
            a.nr_switches > 100,
            "{level:?}: a switched {}",
            a.nr_switches
        );
        assert!(
            c.nr_switches < a.nr_switches / 10,
            "{level:?}: c switched {} times, a {}",
            c.nr_switches,
            a.nr_switches
        );
    }
}

/// `sched_yield()` with and without FORFEIT_YIELD: a thread that runs 2 us
/// and yields, against an always-running one on one CPU. With forfeit each
/// yield costs the yielder a whole slice of vruntime, so it gets little;
/// without it the yielder stays eligible and keeps being picked next.
#[test]
fn forfeit_on_yield_starves_a_yield_loop_against_a_hog_at_every_level() {
    let tasks = r#"{"y": {"run": 2, "yield": 0}, "h": {"run": 1000}}"#;
    for level in LEVELS {
        let share = |forfeit: bool| {
            let s = Situation {
                name: if forfeit { "forfeit-on" } else { "forfeit-off" },
                cpus: 1,
                secs: 2,
                features: &[("FORFEIT_YIELD", forfeit)],
                tasks,
            };
            let ts = s.run(level);
            let (y, h) = (get(&ts, "y"), get(&ts, "h"));
            y.cpu_ns as f64 / (y.cpu_ns + h.cpu_ns) as f64
        };
        let (on, off) = (share(true), share(false));
        assert!(on < off, "{level:?}: forfeit {on} vs no forfeit {off}");
        assert!(on < 0.2, "{level:?}: with forfeit the yielder gets {on}");
    }
}

/// Wakeup preemption: a thread that runs 100 us every 2 ms (rt-app's
/// periodic timer) against an always-running one on one CPU. The waker's
/// lag at each wakeup puts its deadline ahead of the hog's, so it runs
/// before the hog's slice ends: it completes (about) every period and the
/// hog loses the CPU once per period.
#[test]
fn a_periodic_waker_preempts_a_hog_every_period_at_every_level() {
    let s = Situation {
        name: "waker",
        cpus: 1,
        secs: 2,
        features: &[],
        tasks: r#"{"w": {"run": 100, "timer": {"ref": "unique", "period": 2000}},
                   "h": {"run": 1000}}"#,
    };
    for level in LEVELS {
        let ts = s.run(level);
        let (w, h) = (get(&ts, "w"), get(&ts, "h"));
        // 2 s / 2 ms = 1000 periods; each completed needs the CPU in time.
        assert!(
            w.phase_loops >= 990,
            "{level:?}: the waker completed {} periods",
            w.phase_loops
        );
        // The hog is switched out for each of them (and back).
        assert!(
            h.nr_switches >= 990,
            "{level:?}: the hog lost the CPU {} times",
            h.nr_switches
        );
        // 100 us per 2 ms; at the host plus what the host charges a
        // program thread per period: its switch and its sleep (the CPU is
        // busy with the hog when the timer fires: no idle exit).
        let c = oversub::sched::HostCosts::default();
        let extra = match level {
            Level::Host => (c.context_switch + c.nanosleep) as f64,
            Level::Guest => 0.0,
        };
        let want = (100_000.0 + extra) / 2e6;
        let share = w.cpu_ns as f64 / 2e9;
        assert!(
            (share - want).abs() < 0.005,
            "{level:?}: waker {share}, want {want}"
        );
    }
}

/// HRTICK: two always-running threads on one CPU at HZ=250. Without the
/// feature the running one is preempted at a tick (its 0.75 ms slice is
/// seen used up only then: a turn of 4 ms); with HRTICK the level arms a
/// timer at the end of the slice (`hrtick_start()`) and the switch comes
/// there, several times as often. A level that drops the HRTICK request
/// switches at the tick rate and fails here.
#[test]
fn hrtick_ends_a_slice_between_ticks_at_every_level() {
    let tasks = r#"{"a": {"run": 1000}, "b": {"run": 1000}}"#;
    for level in LEVELS {
        let switches = |hrtick: bool| {
            let s = Situation {
                name: if hrtick { "hrtick-on" } else { "hrtick-off" },
                cpus: 1,
                secs: 1,
                features: &[("HRTICK", hrtick)],
                tasks,
            };
            let ts = s.run(level);
            get(&ts, "a").nr_switches + get(&ts, "b").nr_switches
        };
        let (on, off) = (switches(true), switches(false));
        // 1 s of 4 ms turns: about 250 switches without HRTICK.
        assert!(off <= 260, "{level:?}: {off} switches at the tick rate");
        assert!(
            on > 3 * off,
            "{level:?}: HRTICK {on} vs tick {off} switches"
        );
    }
}
