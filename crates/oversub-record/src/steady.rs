//! The steady-state guest form of a derived program (`guest.json`,
//! docs/workloads.md, "guest.json: the steady-state form"): the derived
//! threads of [`crate::derive`] repeat their cycle for ever from time 0
//! (rt-app's `loop: -1`), so a VM guest runs the program's steady state for
//! the scenario's whole duration instead of finishing the recorded work;
//! each thread's phase loop carries the real program's ops it stands for
//! (the task `oversub` extension `ops_per_loop`), and the TLB shootdowns
//! the thread started in the recording are `munmap` events at the measured
//! rate per cycle.
//!
//! Not derived, with the reason (also in `provenance.derivation.steady`):
//! the page faults (their CPU time is inside the measured bursts; the
//! recorder does not separate it, and the guest model has no fault path of
//! its own), kernel lock contention (the recording has contention waits by
//! lock kind, not hold times or which lock, so no section can be written
//! without inventing one), call-function IPIs other than the shootdowns'
//! (every recorded one was sent from `on_each_cpu_cond_mask`, the native
//! `flush_tlb_multi`, i.e. they are the shootdowns' own IPIs), reschedule
//! IPIs (the guest scheduler model sends its own).

use crate::profile::{Profile, ThreadAcc};
use serde_json::{json, Value};

/// The most passes written out one after another so that a rate below one
/// `munmap` per pass keeps its place in the cycle (one every `repeat`
/// passes); a lower rate is not written (its thread's entry says so).
pub const MAX_UNROLL: u64 = 8;

/// The `munmap` events of one pass over `l` slots for a thread that
/// started `n` shootdowns in `cycles` cycles: per slot, and how many passes
/// are written out in a row (`repeat` > 1 when the rate is below one per
/// pass: one event every `repeat` passes, in the last slot of the last;
/// none when that would take more than [`MAX_UNROLL`] passes).
pub fn unmaps(n: u64, cycles: u64, l: u64) -> (Vec<u64>, u64) {
    let l = l.max(1);
    let cycles = cycles.max(1);
    if n == 0 {
        return (vec![0; l as usize], 1);
    }
    // Per pass: l * n / cycles.
    if l * n >= cycles {
        let per_pass = (l * n + cycles / 2) / cycles;
        let v = (0..l)
            .map(|i| (i + 1) * per_pass / l - i * per_pass / l)
            .collect();
        return (v, 1);
    }
    let repeat = (cycles + (l * n) / 2) / (l * n);
    if repeat > MAX_UNROLL {
        return (vec![0; l as usize], 1);
    }
    let mut v = vec![0; l as usize];
    v[l as usize - 1] = 1;
    (v, repeat.max(1))
}

/// The real program's ops one phase loop (slot) of thread `t` stands for:
/// its own op markers per cycle when the program marked its ops, else the
/// recording's ops shared out by CPU time (an op costs the same CPU
/// whichever thread does its part: the recording has no per-thread op
/// count) over the thread's cycles.
pub fn ops_per_loop(p: &Profile, t: &ThreadAcc, ops: u64, cycles: u64, chosen_cpu_ns: u64) -> f64 {
    let marks: u64 = p.threads.values().map(|t| t.op_marks).sum();
    let cycles = cycles.max(1) as f64;
    if marks > 0 {
        // The markers are the ops; the recording's count may be the
        // whole run's (ops.txt) where the markers cover the recorded
        // window: scale them to it.
        t.op_marks as f64 / cycles * (ops as f64 / marks as f64)
    } else {
        ops as f64 * t.cpu_ns as f64 / chosen_cpu_ns.max(1) as f64 / cycles
    }
}

/// Adds the steady form's record to `provenance.derivation`.
pub fn annotate(derivation: &mut Value) {
    if let Value::Object(m) = derivation {
        m.insert("steady".into(), json!({
            "form": "guest.json: every t* task loops for ever from time 0 (loop -1, delay 0), its guard too: the steady state of the recorded cycle, for a VM guest that runs for the scenario's duration (a guest ignores global.duration)",
            "ops": "[[vm]] ops = \"t*\" counts each t* task's phase loops times its oversub.ops_per_loop: with op markers, the thread's markers per cycle (scaled to the recording's op count when that is the whole run's); without (Debian's programs: no per-thread count), the recording's ops shared out by the derived threads' CPU time, per cycle (an op costs the same CPU whichever thread does its part); threads.ops_per_loop lists each",
            "tlb_shootdowns": "munmap {run: 0} events at the rate of the thread's measured tlb:tlb_flush TLB_REMOTE_SEND_IPI events per cycle (threads.tlb_shootdowns / cycles), spread over the slots between run pieces; below one per pass, one munmap every repeat passes, those passes written out in a row (threads.slots_per_pass = slots x repeat); below one per 8 passes (MAX_UNROLL) none is written (threads.munmaps_per_pass 0 where tlb_shootdowns > 0: a rate under 1/(8 x slots) per cycle, e.g. dbench's and hackbench's few); the unmapping syscall's kernel CPU is in the measured bursts, so the event carries the flush only; which CPUs it flushes is the guest model's (the mm's other vCPUs not in lazy TLB)",
            "not_derived": [
                "page faults: their CPU is inside the measured run bursts (the recorder counts fault time as user time and does not separate it); the guest has no page-fault path (zone lock, per-VMA locks), so no fault event is written",
                "kernel lock contention: profile.json has contention waits by lock kind (lock:contention_begin/end), not hold times or lock identity; a kernel lock section would need an invented hold time, so none is written",
                "call-function IPIs other than TLB shootdowns: every recorded one was sent from on_each_cpu_cond_mask (native flush_tlb_multi), i.e. they are the shootdowns' own IPIs, which the munmap events send",
                "reschedule IPIs: the guest scheduler model sends its own",
                "start-up and shut-down: every thread loops its whole-run cycle from time 0, so a thread that ran only at start (input reading) or in a later pass runs for ever beside the others"
            ],
        }));
        let nc = m.get_mut("not_captured");
        if let Some(Value::Array(a)) = nc {
            for x in a.iter_mut() {
                if x.as_str()
                    .is_some_and(|s| s.starts_with("page faults, TLB shootdowns"))
                {
                    *x = json!("page faults, IPIs and kernel lock contention (see steady.not_derived); TLB shootdowns are munmap events (steady.tlb_shootdowns)");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmaps_keep_the_measured_rate() {
        // 150 per pass over 16 slots: spread, nothing repeated.
        let (v, r) = unmaps(300, 32, 16);
        assert_eq!((v.iter().sum::<u64>(), r), (150, 1));
        assert!(v.iter().all(|&x| x == 9 || x == 10));
        // 1 shootdown in 80 cycles of 16 slots: one every 5 passes.
        let (v, r) = unmaps(1, 80, 16);
        assert_eq!((v.iter().sum::<u64>(), r), (1, 5));
        assert_eq!(v[15], 1);
        // One every 10 passes would take more than MAX_UNROLL: none.
        assert_eq!(unmaps(1, 160, 16), (vec![0; 16], 1));
        assert_eq!(unmaps(0, 10, 4), (vec![0; 4], 1));
    }
}
