//! Per-task scheduling summary of a run's events, as `perf sched latency`
//! prints one from `sched_switch` and `sched_waking`: run time, times
//! switched in, times switched out runnable (preempted or yielded:
//! `nr_involuntary_switches`), successful `yield_to()` calls, wakeups, and
//! the wakeup latency (from `sched_waking` to the `sched_switch` that runs
//! the task) as mean, p50, p99 and maximum (µs) with the maximum's time.
//!
//! [`Latency`] is a trace sink (`oversub run --latency`), and
//! [`super::report`] feeds it the events of a trace file (`oversub trace
//! report`): both print the same table for the same run. Memory is bounded
//! by the number of tasks (latencies go to a [`LogHist`], whose quantiles
//! are within 1.6% of the sample).

use super::{TraceEvent, TraceSink};
use crate::stats::hist::LogHist;

#[derive(Clone, Debug, Default)]
struct TaskLat {
    /// On a CPU since (None: not running).
    since: Option<u64>,
    /// Woken at, not yet run.
    woken: Option<u64>,
    runtime: u64,
    switches: u64,
    preempted: u64,
    yield_to: u64,
    wakeups: u64,
    lat: LogHist,
    /// When the longest wakeup latency ended.
    max_at: u64,
}

/// The summary being built; [`Latency::table`] prints it.
#[derive(Clone, Debug, Default)]
pub struct Latency {
    names: Vec<String>,
    tasks: Vec<TaskLat>,
    /// The first event's time (tasks found running were running since).
    first: Option<u64>,
}

impl Latency {
    /// A summary of host tasks named `names` (by task id).
    pub fn new(names: Vec<String>) -> Latency {
        let tasks = vec![TaskLat::default(); names.len()];
        Latency {
            names,
            tasks,
            first: None,
        }
    }

    fn task(&mut self, p: u32) -> Option<&mut TaskLat> {
        self.tasks.get_mut(p as usize)
    }

    /// Takes one event.
    pub fn event(&mut self, e: &TraceEvent) {
        let first = *self.first.get_or_insert(e.time());
        match *e {
            TraceEvent::SchedSwitch {
                t,
                prev,
                prev_runnable,
                next,
                ..
            } => {
                if let Some(s) = prev.and_then(|p| self.task(p)) {
                    s.runtime += t.saturating_sub(s.since.take().unwrap_or(first));
                    if prev_runnable {
                        s.preempted += 1;
                    }
                }
                if let Some(s) = next.and_then(|n| self.task(n)) {
                    s.since = Some(t);
                    s.switches += 1;
                    if let Some(w) = s.woken.take() {
                        let l = t.saturating_sub(w);
                        if l >= s.lat.max() || s.lat.count() == 0 {
                            s.max_at = t;
                        }
                        s.lat.add(l);
                    }
                }
            }
            TraceEvent::SchedWaking { t, pid, .. } => {
                if let Some(s) = self.task(pid) {
                    if s.since.is_none() && s.woken.is_none() {
                        s.woken = Some(t);
                        s.wakeups += 1;
                    }
                }
            }
            TraceEvent::SchedYieldTo { yielder, .. } => {
                if let Some(s) = self.task(yielder) {
                    s.yield_to += 1;
                }
            }
            _ => {}
        }
    }

    /// Ends the summary at `end`: tasks still running are charged to it.
    pub fn finish(&mut self, end: u64) {
        for s in &mut self.tasks {
            if let Some(since) = s.since.take() {
                s.runtime += end.saturating_sub(since);
            }
        }
    }

    /// The table, longest wakeup latency first (then most wakeups, then by
    /// name), tasks that
    /// never ran left out; a TOTAL line at the end.
    pub fn table(&self) -> String {
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
        let mut rows: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].switches > 0 || self.tasks[i].runtime > 0)
            .collect();
        rows.sort_by(|&a, &b| {
            let (x, y) = (&self.tasks[a], &self.tasks[b]);
            (y.lat.max(), y.lat.count())
                .cmp(&(x.lat.max(), x.lat.count()))
                .then_with(|| self.names[a].cmp(&self.names[b]))
        });
        let w = rows
            .iter()
            .map(|&i| self.names[i].len())
            .max()
            .unwrap_or(4)
            .max(5);
        let mut out = format!(
            "{:<w$} | {:>10} | {:>8} | {:>7} | {:>8} | {:>7} | {:>10} | {:>8} | {:>8} | {:>8} | {:>12}\n",
            "Task",
            "Runtime ms",
            "Switches",
            "Preempt",
            "Yield_to",
            "Wakeups",
            "Lat avg us",
            "p50 us",
            "p99 us",
            "max us",
            "Max at s"
        );
        out.push_str(&format!("{}\n", "-".repeat(w + 120)));
        let (mut rt, mut sw, mut pr, mut yt, mut wk) = (0, 0, 0, 0, 0);
        for &i in &rows {
            let s = &self.tasks[i];
            let q = |p: f64| s.lat.quantile(p).map_or("-".to_string(), us);
            let (avg, max, at) = if s.lat.count() == 0 {
                ("-".to_string(), "-".to_string(), "-".to_string())
            } else {
                (
                    us(s.lat.mean()),
                    us(s.lat.max()),
                    format!("{:.6}", s.max_at as f64 / 1e9),
                )
            };
            out.push_str(&format!(
                "{:<w$} | {:>10} | {:>8} | {:>7} | {:>8} | {:>7} | {:>10} | {:>8} | {:>8} | {:>8} | {:>12}\n",
                self.names[i],
                ms(s.runtime),
                s.switches,
                s.preempted,
                s.yield_to,
                s.wakeups,
                avg,
                q(0.5),
                q(0.99),
                max,
                at
            ));
            (rt, sw, pr, yt, wk) = (
                rt + s.runtime,
                sw + s.switches,
                pr + s.preempted,
                yt + s.yield_to,
                wk + s.wakeups,
            );
        }
        out.push_str(&format!("{}\n", "-".repeat(w + 120)));
        out.push_str(&format!(
            "{:<w$} | {:>10} | {:>8} | {:>7} | {:>8} | {:>7} |\n",
            "TOTAL",
            ms(rt),
            sw,
            pr,
            yt,
            wk
        ));
        out.push_str("(wakeup latency: from sched_waking to the sched_switch that ran the task)\n");
        out
    }
}

impl TraceSink for Latency {
    fn record(&mut self, ev: TraceEvent) {
        self.event(&ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(t: u64, prev: Option<u32>, r: bool, next: Option<u32>) -> TraceEvent {
        TraceEvent::SchedSwitch {
            t,
            cpu: 0,
            prev,
            prev_runnable: r,
            next,
            prev_prio: 120,
            next_prio: 120,
        }
    }

    fn waking(t: u64, pid: u32) -> TraceEvent {
        TraceEvent::SchedWaking {
            t,
            cpu: 0,
            pid,
            prio: 120,
            target_cpu: 0,
            waker: None,
        }
    }

    /// Two tasks on one CPU: runtime, switches, preemptions and the
    /// wakeup latencies are those of the events.
    #[test]
    fn sums_and_latencies() {
        let mut l = Latency::new(vec!["a".into(), "b".into()]);
        for e in [
            sw(0, None, false, Some(0)),
            waking(100, 1),
            sw(400, Some(0), true, Some(1)), // b waited 300
            sw(1_000, Some(1), false, Some(0)),
            waking(1_500, 1),
            sw(1_600, Some(0), false, Some(1)), // b waited 100
        ] {
            l.event(&e);
        }
        l.finish(2_000);
        let (a, b) = (&l.tasks[0], &l.tasks[1]);
        assert_eq!((a.runtime, a.switches, a.preempted), (400 + 600, 2, 1));
        assert_eq!((b.runtime, b.switches, b.wakeups), (600 + 400, 2, 2));
        assert_eq!((b.lat.max(), b.lat.count(), b.max_at), (300, 2, 400));
        let t = l.table();
        // b (the longer latency) comes first.
        let first = t.lines().nth(2).unwrap();
        assert!(first.starts_with("b "), "{t}");
    }

    /// A wakeup of a running task is no latency sample.
    #[test]
    fn waking_a_running_task_is_not_a_wakeup() {
        let mut l = Latency::new(vec!["a".into()]);
        l.event(&sw(0, None, false, Some(0)));
        l.event(&waking(10, 0));
        l.event(&sw(20, Some(0), false, None));
        assert_eq!((l.tasks[0].wakeups, l.tasks[0].lat.count()), (0, 0));
    }
}
