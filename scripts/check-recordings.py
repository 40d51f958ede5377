#!/usr/bin/env python3
"""Measured vs simulated, against the committed recordings (recordings/check/) (docs/workloads.md,
"Recordings: measured vs simulated"). `make test-recordings` runs it.

For each recordings/check/NAME/ (profile.json and workload.json written by
`oversub record`, check.json saying how to re-run the program):

A. the recording's per-op figures against its derived program simulated
   host-only on this machine's CPU count and as the guest of an
   undercommitted VM of the same size (vCPUs pinned 1:1 to otherwise idle
   pCPUs): CPU/op, switches/op, wakeups/op (both), and the IPIs of remote
   wakeups and preemptions by type, like with like: reschedule IPIs/op
   (the recording's `ipi_send_cpu` with no callback, `smp_send_reschedule`;
   simulated: the host run's `sched_ipis.reschedule`, the VM's
   `ipis_reschedule`) and call-function IPIs/op other than TLB shootdowns
   (the recording's `generic_smp_call_function_single_interrupt` IPIs, in
   6.12 the wakelist's `ttwu_queue_wakelist()` and other
   `smp_call_function_single()` calls; simulated: `sched_ipis.
   call_function_single`, the VM's `ipis_call_function_single`).
   Metrics the simulator cannot produce from a derived program are printed
   as "not modelled" and not judged.
B. a condition the recording did not see: HOGS busy-loop processes on the
   program's CPUs. The real program is recorded again now, with and without
   the hogs (same run, so no machine-speed threshold), and the derived
   program is simulated with and without as many hog threads. Judged: the
   throughput ratio (with hogs / without), switches/op and wakeups/op with
   hogs, each as its ratio with hogs / without (real against simulated).
   The real side is recorded REPEATS times (each time without, then with
   the hogs); a figure whose real repeats spread wider than the tolerance is
   shown as "not judged" with its range, and otherwise judged on its median.

--guest: A and B for the named workloads that are derived programs
(workloads/NAME.json written by scripts/named-workloads.py from
recordings/REC/guest.json, the steady-state form, or for dedup and vips from
recordings/REC/queues.json, the queue program of scripts/derive-queues.py,
or for the ebizzy programs with memory paths from recordings/REC/mm-guest.json,
the recording kernel's form of scripts/derive-mm.py)
and any other queue program: A, the recording's per-op figures
against the workload as the guest of a VM of this machine's size (GUEST_SECONDS simulated, longer for many threads:
guest_seconds), TLB shootdowns/op judged too (a munmap that sent IPIs: the
VM's csd_waits); B, the real program re-run now with and without
HOGS hog processes (scripts/measure-real.sh --run REC under oversub record)
against the VM with and without as many hog threads in the guest (beside the
program's threads on the same scheduler, as the real hogs are). A recording
too long to re-run six times has a smaller run of the same program for B
(PART_B_RUN: kernbench's 48-object build, judged on its steady window); the
simulated B window holds at least B_MIN_LOOPS loops per op-counting thread.
A named program that does no work (idle, from a recorded `sleep`) has no
ops: its threads' CPU, switches and wakeups per second are shown against
the guest's, none judged (a handful of real events), and part B is not run.

Judged: |sim - real| <= 30% of real. Exit 1 if any judged figure fails.
Needs root and tracefs (oversub record) and the programs of check.json.
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

TOL = 0.30
# A per-op figure resting on fewer real events than this is shown, not judged:
# a count of n events has a relative spread of about 1/sqrt(n), so 100 events
# put +-30% at three standard deviations.
MIN_EVENTS = 100
# Real recordings of part B per condition: their spread decides whether a
# figure can be judged at all (Judge.add_repeated).
REPEATS = 3
GAPS = {
    "idle-ipi": "the IPIs of remote wakeups depend on the recording machine's other load, which the "
    "simulated machine does not have: under load (the recordings were made at load averages of about "
    "8-27) the wakee's CPU is busy, so a remote wakeup is activated there at once and sends a "
    "reschedule IPI only if it preempts; the simulated program's other CPU is idle between its "
    "bursts, so its remote wakeups go through the wakelist and send call-function IPIs (6.12's "
    "ttwu_queue_cond; sched::ipis). Both types are compared like with like; shown, not judged "
    "(docs/workloads.md, 'Recordings: measured vs simulated').",
}


def load_ordered(path):
    """A program file: JSON, with the header comment a named workload
    carries after its opening brace (workloads/NAME.json) left out."""
    with open(path) as f:
        text = f.read()
    head = text.lstrip()
    if head.startswith("{") and head[1:].lstrip().startswith("/*"):
        body = head[1:].lstrip()
        text = "{" + body[body.index("*/") + 2:]
    return json.loads(text, object_pairs_hook=collections.OrderedDict)


def finish_s(threads, secs):
    """When the program's last thread finished (the run's end if one did not)."""
    ends = [t.get("finished_ns") for t in threads if is_program(t["name"])]
    if not ends or any(e is None for e in ends):
        return secs
    return max(ends) / 1e9


def sim_host(oversub, workload, cpus, hogs, tmp):
    w = load_ordered(workload)
    w.pop("provenance", None)
    w["oversub"] = {"cpus": cpus}
    secs = w["global"]["duration"]
    if hogs:
        w["tasks"]["hog"] = collections.OrderedDict(
            [("instance", hogs), ("loop", -1), ("run", 100000)]
        )
    path = os.path.join(tmp, "host.json")
    with open(path, "w") as f:
        json.dump(w, f)
    r = json.loads(run([oversub, "run", path, "--json"]))
    loops = {t["name"]: t["phase_loops"] for t in r["program"]["threads"]}
    s = collections.Counter()
    s["ipis_reschedule"] = r["sched_ipis"]["reschedule"]
    s["ipis_call_function"] = r["sched_ipis"]["call_function_single"]
    for t in r["tasks"]:
        if not is_program(t["name"]):
            continue
        s["cpu_ns"] += t["cpu_ns"]
        s["switches"] += t["nr_switches"]
        s["wakeups"] += t["nr_wakeups"]
        s["loops"] += loops.get(t["name"], 0)
    s["secs"] = finish_s(r["program"]["threads"], secs)
    return s


def run_program_vm(oversub, program, cpus, secs, sc, guest=None):
    """Runs `program` as the guest of one VM of `cpus` vCPUs pinned 1:1
    for `secs` s (scenario written to `sc`, with the `[guest]` settings
    `guest`, a dict of booleans); returns the VM's report and the totals
    of the program's threads (cpu_ns, switches, wakeups, loops)."""
    pins = ", ".join(str(i) for i in range(cpus))
    with open(sc, "w") as f:
        f.write(
            f'[host]\ncpus = {cpus}\nduration = "{secs}s"\n\n[[vm]]\nname = "g"\n'
            f'vcpus = {cpus}\npin = [{pins}]\nprogram = "{program}"\nops = "t*"\n'
        )
        if guest:
            f.write("\n[guest]\n" + "".join(f"{k} = {'true' if v else 'false'}\n" for k, v in guest.items()))
    v = json.loads(run([oversub, "run", sc, "--json"]))["vms"][0]
    s = collections.Counter()
    for t in v["threads"]:
        if not is_program(t["name"]):
            continue
        s["cpu_ns"] += t["cpu_ns"]
        s["switches"] += t["nr_switches"]
        s["wakeups"] += t["wakeup_latency_ns"]["samples"]
        s["loops"] += t["phase_loops"]
    return v, s


def sim_vm(oversub, workload, cpus, tmp):
    secs = load_ordered(workload)["global"]["duration"]
    v, s = run_program_vm(oversub, os.path.abspath(workload), cpus, secs, os.path.join(tmp, "vm.toml"))
    s["ipis_reschedule"] = v["ipis_reschedule"]
    s["ipis_call_function"] = v["ipis_call_function_single"]
    s["secs"] = finish_s(v["threads"], secs)
    return s


GUEST_SECONDS = 2
# Simulated CPU per program thread at least (so at least GUEST_SECONDS):
# with 128 threads on 2 vCPUs, 2 s give each ~31 ms, about one of ebizzy
# -t 128's ~20 ms slots, and the CPU of the unfinished loops (no op yet)
# weighed on CPU/op (1.31x; 1.08x at 6 s, 1.03x at 12 s).
GUEST_CPU_PER_THREAD_S = 0.1


# A program that repeats a cycle of the recording (a queue program's input
# pass, scripts/derive-queues.py: its derivation.cycle_cpu_ns) is simulated
# for at least this many cycles: a window inside one pass sees its start-up
# or its drain, not the pass (dedup's wakeups/op: 1.33x at 3 s, 1.01-1.09x
# from 4 s).
GUEST_CYCLES = 3


def guest_seconds(w, cpus):
    n = sum(int(t.get("instance", 1)) for name, t in w["tasks"].items() if is_program(name))
    cycle_ns = w.get("provenance", {}).get("derivation", {}).get("cycle_cpu_ns", 0)
    return max(GUEST_SECONDS, math.ceil(n * GUEST_CPU_PER_THREAD_S / cpus),
               math.ceil(GUEST_CYCLES * cycle_ns / 1e9 / cpus))


# Part B's simulated window holds at least this many loops of each thread
# that counts ops (without hogs): a thread's ops come in whole loops, and
# identical threads started together end their loops together, so in
# kernbench's part A window (3 passes: 6 objects per job slot) one object
# fewer per slot with hogs read as 0.83 where the program kept 0.89 of the
# CPU; at 30 loops the step is 3%.
B_MIN_LOOPS = 30


def op_loops(w, v):
    """The mean loops finished by the threads of the VM report `v` that
    count ops (program threads with a nonzero ops_per_loop; not forked
    process images, whose names carry their parent's), or None."""
    weight = {n: t.get("oversub", {}).get("ops_per_loop", 1) for n, t in w["tasks"].items()}
    loops = [t["phase_loops"] for t in v["threads"] if "/" not in t["name"] and is_program(t["name"])
             and weight.get(t["name"].rsplit(".", 1)[0] if t["name"] not in weight else t["name"], 0)]
    return sum(loops) / len(loops) if loops else None


def sim_guest(oversub, workload, cpus, hogs, tmp, secs=None, guest=None):
    """The steady-state program (recordings/REC/guest.json) as the guest of
    a VM of `cpus` vCPUs pinned 1:1 to otherwise idle pCPUs, with `hogs`
    busy-loop threads added to the guest beside the program's threads (as
    the real hogs run beside the real program's threads on the same CPUs
    and the same scheduler), for `secs` simulated s (default
    guest_seconds), with the `[guest]` settings `guest` (guest_settings)."""
    w = load_ordered(workload)
    secs = secs or guest_seconds(w, cpus)
    w.pop("provenance", None)
    if hogs:
        w["tasks"]["hog"] = collections.OrderedDict(
            [("instance", hogs), ("loop", -1), ("run", 100000)]
        )
    prog = os.path.join(tmp, "guest-program.json")
    with open(prog, "w") as f:
        json.dump(w, f)
    v, s = run_program_vm(oversub, prog, cpus, secs, os.path.join(tmp, "guest.toml"), guest)
    ops = max(v["ops_per_s"] * secs, 1e-9)
    hog_ns = sum(t["cpu_ns"] for t in v["threads"] if t["name"].startswith("hog"))
    return {"hog_share": hog_ns / max(hog_ns + s["cpu_ns"], 1), "cpu_ns": s["cpu_ns"] / ops,
            "switches": s["switches"] / ops, "wakeups": s["wakeups"] / ops,
            "ipis_reschedule": v["ipis_reschedule"] / ops,
            "ipis_call_function": v["ipis_call_function_single"] / ops,
            # Remote flushes (flush_tlb_multi: the mm's cpumask had another
            # CPU), IPIs sent or not, as the recorder's TLB_REMOTE_SEND_IPI.
            "tlb_shootdowns": v["program"]["tlb_shootdowns"] / ops,
            "ops_per_s": v["ops_per_s"], "secs": secs, "op_loops": op_loops(w, v)}


def guest_settings(gj, prof):
    """The `[guest]` settings of the guest that replays program `gj` of a
    recording (its profile `prof`): the kernel-build programs
    (scripts/derive-kernbench.py) take their recording kernel's TLB code
    (derive-kernbench's guest_settings); the others the defaults (6.12)."""
    if os.path.basename(gj) != "forks.json":
        return None
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import importlib
    return importlib.import_module("derive-kernbench").guest_settings(prof, gj)


def named_guest_list():
    """(name, recording, program file, known gaps) of every checked guest
    program: the named workloads (scripts/named-workloads.py), each from the
    recording's program it is written from (recordings/REC/guest.json, or
    recordings/REC/queues.json for the queue programs of
    scripts/derive-queues.py, with its KNOWN_GAPS), and the queue programs
    no named workload is written from."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import importlib
    nw = importlib.import_module("named-workloads")
    dq = importlib.import_module("derive-queues")
    dm = importlib.import_module("derive-mm")

    dk = importlib.import_module("derive-kernbench")

    def known(name, rec):
        src = nw.SOURCE.get(name, "")
        if src.startswith("mm-guest"):
            return dm.KNOWN_GAPS.get(rec, {})
        if src == "forks.json":
            return dk.KNOWN_GAPS.get(rec, {})
        return dq.KNOWN_GAPS.get(rec, {}) if src else nw.KNOWN_GAPS.get(name, {})
    out = [(name, rec, nw.check_source(name), known(name, rec)) for name, (rec, _op, _counted) in nw.NAMED.items()]
    # The queue programs no named workload is written from (none today).
    named = {nw.source(name) for name in nw.NAMED}
    out += [(f"{rec} (queues)", rec, f"recordings/{rec}/queues.json", dq.KNOWN_GAPS.get(rec, {}))
            for rec in dq.DERIVE if f"recordings/{rec}/queues.json" not in named]
    return out


# Part B of a recording whose program is too long to run six times here:
# REC -> (the measure-real.sh --run program of the same build, smaller;
# the recorder's limit in s, only a bound). kernbench's recording compiles
# kernel/sched/ and mm/ (~220 s here); kernbench-b compiles 48 of mm/'s
# objects with the same -j16 and reports its steady window (all 16 jobs
# busy), which is what the derived program's looping job slots replay.
PART_B_RUN = {"kernbench": ("kernbench-b", 600)}
# Named workloads whose part B is not run, with the reason.
NO_PART_B = {
    "kernbench-64": "make -j128 has no steady window in a build this machine can repeat six times (48 objects "
    "start at once; the whole kernel/sched/ mm/ build, 76 objects, too): not run",
}


class CpuSampler:
    """On-CPU time (ns, /proc/PID/schedstat) of the hogs and of the
    recorded program's processes (the process group the recorder starts
    it in; a process's main thread: the build's and the hogs' processes
    are single-threaded), sampled every SAMPLE_S while a recording runs
    (~4 ms of CPU a scan here, in both runs of a pair). A process that
    starts and ends between two samples is missed (kernbench: the short sh,
    rm, fixdep, as processes, ~3% of the build's CPU), so the program's
    figure is a lower bound."""

    SAMPLE_S = 0.5

    def __init__(self, hogs, recorder):
        self.hogs, self.recorder = hogs, recorder
        self.pgrp = None
        self.last = {}
        self.samples = []  # (time, program ns, hogs ns)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def ns(pid):
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def scan(self):
        t = time.time()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            ppid, pgrp = int(st[1]), int(st[2])
            # The recorder starts the program as a process group leader.
            if self.pgrp is None and ppid == self.recorder and pgrp == int(d):
                self.pgrp = pgrp
            if self.pgrp is not None and pgrp == self.pgrp:
                v = self.ns(d)
                if v is not None:
                    self.last[d] = v
        hogs = sum(self.ns(p) or 0 for p in self.hogs)
        self.samples.append((t, sum(self.last.values()), hogs))

    def run(self):
        while not self.stop.is_set():
            self.scan()
            self.stop.wait(self.SAMPLE_S)

    def finish(self):
        self.stop.set()
        self.thread.join()

    def window(self, t0, t1):
        """(program ns, hogs ns) between t0 and t1, linearly interpolated
        between samples; None when the samples do not cover the window."""
        s = self.samples
        if len(s) < 2 or s[0][0] > t0 or s[-1][0] < t1:
            return None

        def at(t):
            for (ta, pa, ha), (tb, pb, hb) in zip(s, s[1:]):
                if ta <= t <= tb:
                    f = (t - ta) / (tb - ta) if tb > ta else 0.0
                    return pa + f * (pb - pa), ha + f * (hb - ha)
            return s[-1][1], s[-1][2]
        (p0, h0), (p1, h1) = at(t0), at(t1)
        return p1 - p0, h1 - h0


def record_named(oversub, rec, seconds, out, hogs):
    """The real program of recordings/REC run now (measure-real.sh --run,
    or its PART_B_RUN program) under oversub record, beside `hogs` busy
    loops: per-op figures and its own throughput (ops.txt: ops / seconds,
    or steady_ops / steady_seconds when the program reports a steady
    window; `throughput_run` is always the whole run's). For a PART_B_RUN
    program with hogs, also the hogs' share of the CPU that the program and
    the hogs received in the steady window (`hog_share`, CpuSampler)."""
    # Beside --out, not in it: oversub record writes a new or empty
    # directory whole, so nothing may appear in it during the recording.
    opsf = out + ".ops"
    prog, limit = PART_B_RUN.get(rec, (rec, max(6 * seconds, 60)))
    procs = []
    sampler = None
    try:
        for _ in range(hogs):
            procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        env = dict(os.environ, OVERSUB_OPS_FILE=opsf, OVERSUB_OP_MARK="1")
        p = subprocess.Popen([oversub, "record", "--out", out, "--duration", f"{limit}s",
                              "--buffer-kb", "262144", "--", "scripts/measure-real.sh", "--duration",
                              str(seconds), "--run", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        # Without hogs too, so its own CPU (~4 ms a scan here) is in both
        # runs of a pair.
        if rec in PART_B_RUN:
            sampler = CpuSampler([q.pid for q in procs], p.pid)
        _, err = p.communicate()
        if sampler:
            sampler.finish()
        if p.returncode != 0:
            sys.exit(f"check-recordings: recording {prog} failed ({p.returncode}): {err.strip()[-300:]}")
    finally:
        for q in procs:
            q.kill()
            q.wait()
    with open(opsf) as f:
        kv = dict(w.split("=", 1) for w in f.read().split("\n")[-2].split())
    ops, secs = int(kv["ops"]), float(kv["seconds"])
    with open(os.path.join(out, "profile.json")) as f:
        t = json.load(f)["totals"]
    steady = int(kv["steady_ops"]) / float(kv["steady_seconds"]) if "steady_ops" in kv else None
    share = None
    if sampler and hogs and "steady_from" in kv:
        t0 = float(kv["steady_from"])
        w = sampler.window(t0, t0 + float(kv["steady_seconds"]))
        if w and w[0] + w[1] > 0:
            share = w[1] / (w[0] + w[1])
    return {"throughput": steady or ops / secs, "throughput_run": ops / secs, "steady": steady is not None,
            "switches": t["switches"] / ops, "wakeups": t["wakeups"] / ops,
            "n_switches": t["switches"], "n_wakeups": t["wakeups"],
            "load": os.getloadavg()[0], "hog_share": share}


def no_ops(oversub, j, name, gj, prof, cpus, tmp, no_real):
    """A named program without ops (idle: a recorded `sleep`): its
    threads' figures per second, real (the recorded threads of the
    program's comm, scripts/named-workloads.py) against the guest. Each
    rests on a handful of real events (one sleep in the recording), so
    none is judged (MIN_EVENTS); part B has no throughput to compare and
    is not run."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import importlib
    nw = importlib.import_module("named-workloads")
    w = load_ordered(gj)
    comms = {t.split("_", 1)[1] for t in w["tasks"] if is_program(t)}
    threads = [t for t in prof["threads"] if t["comm"] in comms]
    secs = prof["wall_ns"] / 1e9
    real = {"cpu_ns": sum(t["cpu_ns"] for t in threads) / secs,
            "switches": sum(sum(t["switches"].values()) for t in threads) / secs,
            "wakeups": sum(w_["count"] for t in threads for w_ in t.get("woken_by", [])) / secs}
    counts = {"cpu_ns": round(real["switches"] * secs), "switches": round(real["switches"] * secs),
              "wakeups": round(real["wakeups"] * secs)}
    gsecs = guest_seconds(w, cpus)
    w.pop("provenance", None)
    prog = os.path.join(tmp, "guest-program.json")
    with open(prog, "w") as f:
        json.dump(w, f)
    v, s = run_program_vm(oversub, prog, cpus, gsecs, os.path.join(tmp, "guest.toml"))
    side = f"guest of {cpus}-vCPU VM ({gj}), per second"
    for m in ("cpu_ns", "switches", "wakeups"):
        j.add(name, side, m + "/s", real[m], s[m] / gsecs, count=counts[m])
    if not no_real:
        print(f"# {name}: no ops ({nw.NAMED[name][1]}): part B has no throughput to compare, not run")


def guest(oversub, only, no_real, seconds):
    cpus = os.cpu_count()
    j = Judge()
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="oversub-guest-") as tmp:
        for name, rec, gj, known in named_guest_list():
            if only and name not in only and rec not in only:
                continue
            with open(f"recordings/{rec}/profile.json") as f:
                prof = json.load(f)
            ops = load_ordered(gj)["provenance"]["ops"]
            if not ops:
                # A program that does no work (idle): no per-op figures.
                no_ops(oversub, j, name, gj, prof, cpus, tmp, no_real)
                continue
            t = prof["totals"]
            real = {"cpu_ns": t["cpu_ns"] / ops, "switches": t["switches"] / ops, "wakeups": t["wakeups"] / ops,
                    "ipis_reschedule": t.get("ipis", {}).get("reschedule", 0) / ops,
                    "ipis_call_function": call_function_ipis(t.get("ipis", {}), t["tlb_shootdowns"]) / ops,
                    "tlb_shootdowns": t["tlb_shootdowns"] / ops}
            counts = {"switches": t["switches"], "wakeups": t["wakeups"],
                      "ipis_reschedule": t.get("ipis", {}).get("reschedule", 0),
                      "ipis_call_function": round(call_function_ipis(t.get("ipis", {}), t["tlb_shootdowns"])),
                      "tlb_shootdowns": t["tlb_shootdowns"]}
            gs = guest_settings(gj, prof)
            sim = sim_guest(oversub, gj, cpus, 0, tmp, guest=gs)
            side = f"guest of {cpus}-vCPU VM ({gj}{''.join(f', guest.{k}' for k, v in (gs or {}).items() if v)})"
            for m in ("cpu_ns", "switches", "wakeups", "tlb_shootdowns"):
                j.add(name, side, m + "/op", real[m], sim[m], count=counts.get(m), known=known.get(m + "/op"))
            for m, label in IPI_ROWS:
                j.add(name, side, label, real[m], sim[m], count=counts[m], gap="idle-ipi")
            j.add(name, side, "page faults/op", t["page_faults"] / ops, None)
            if no_real:
                continue
            if name in NO_PART_B:
                print(f"# {name}: part B {NO_PART_B[name]}")
                continue
            hogs = cpus
            pairs = [(record_named(oversub, rec, seconds, os.path.join(tmp, f"{name}-b{i}"), 0),
                      record_named(oversub, rec, seconds, os.path.join(tmp, f"{name}-h{i}"), hogs))
                     for i in range(REPEATS)]
            for i, (b, h) in enumerate(pairs):
                hs = "" if h["hog_share"] is None else f", hogs' CPU share {h['hog_share']:.3f}"
                print(f"# {name} part B repeat {i}: without hogs {b['throughput']:.4g} ops/s (whole run "
                      f"{b['throughput_run']:.4g}; 1-min load {b['load']:.1f} at its end), with {hogs} hogs "
                      f"{h['throughput']:.4g} (whole run {h['throughput_run']:.4g}; load {h['load']:.1f}{hs})")
            s0 = sim
            if sim["op_loops"] and sim["op_loops"] < B_MIN_LOOPS:
                s0 = sim_guest(oversub, gj, cpus, 0, tmp,
                               math.ceil(sim["secs"] * B_MIN_LOOPS / max(sim["op_loops"], 1)), guest=gs)
                print(f"# {name} part B: {s0['secs']} simulated s ({sim['op_loops']:.3g} loops per op-counting "
                      f"thread in part A's {sim['secs']} s)")
            s1 = sim_guest(oversub, gj, cpus, hogs, tmp, s0["secs"], guest=gs)
            side = f"{hogs} hogs, guest of {cpus}-vCPU VM"
            steady = all(b["steady"] and h["steady"] for b, h in pairs)
            j.add_repeated(name, side, "throughput with/without hogs" + (" (steady window)" if steady else ""),
                           [h["throughput"] / b["throughput"] for b, h in pairs], s1["ops_per_s"] / s0["ops_per_s"],
                           known=known.get("hogs throughput"))
            if steady:
                # The whole build, start-up and tail included, which the
                # program's looping job slots do not replay: shown only.
                r = sorted(h["throughput_run"] / b["throughput_run"] for b, h in pairs)
                j.add(name, side, "throughput with/without hogs (whole build)", r[len(r) // 2],
                      s1["ops_per_s"] / s0["ops_per_s"], judged=False)
            shares = [h["hog_share"] for _, h in pairs if h["hog_share"] is not None]
            if shares:
                # The hogs' share of the CPU the program and the hogs got in
                # the steady window: the throughput effect with the other
                # users' load divided out (both sides of the ratio scale
                # with the CPU this session gets), so it can be judged
                # where the throughput ratio itself is too noisy.
                j.add_repeated(name, side, "hogs' CPU share (steady window)", shares, s1["hog_share"])
            for m in ("switches", "wakeups"):
                n = min(min(b["n_" + m], h["n_" + m]) for b, h in pairs)
                j.add_repeated(name, side, f"{m}/op with/without hogs",
                               [h[m] / b[m] if b[m] else 0.0 for b, h in pairs],
                               s1[m] / s0[m] if s0[m] else 0.0, count=n, known=known.get(f"hogs {m}/op"))
    print(j.table())
    print(f"\n{cpus} CPUs, {os.uname().release}, {time.time() - t0:.0f} s")
    for g in j.gaps:
        print(f"- known gap ({g}): {GAPS[g]}")
    print(f"named guest workloads: {j.passed} passed, {j.failed} failed")
    return 1 if j.failed else 0


def is_program(name):
    # Derived threads are t<i>_<comm>; guard_ and hog tasks are not the program.
    return name.startswith("t") and not name.startswith("guard_")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"check-recordings: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


# The IPIs of remote wakeups and preemptions, by type, like with like
# (sched::ipis in the simulator; profile.rs ipi_type in the recorder).
IPI_ROWS = (("ipis_reschedule", "reschedule IPIs/op"), ("ipis_call_function", "call-function IPIs/op"))


def call_function_ipis(ipis, shootdowns):
    """The recorded call-function IPIs other than TLB shootdowns'
    (`generic_smp_call_function_single_interrupt` and any other callback;
    per op or in all, as `ipis` and `shootdowns` are). A recording made
    before the recorder told shootdown IPIs apart (no "tlb_shootdown" type:
    recordings/check/* of 2026-11-26) files them under the generic
    callback: its TLB_REMOTE_SEND_IPI events (`shootdowns`), each of which
    sent at least one IPI (exactly one on 2 CPUs), are taken off."""
    cf = sum(v for k, v in ipis.items() if k.startswith("call_function"))
    return cf if "tlb_shootdown" in ipis else max(0.0, cf - shootdowns)


def real_per_op(profile):
    o = profile["per_op"]
    ipis = o.get("ipis", {})
    return {
        "cpu_ns": o["cpu_ns"],
        "switches": o["switches"],
        "wakeups": o["wakeups"],
        "futex_waits": o["futex_blocked_waits"],
        "ipis_reschedule": ipis.get("reschedule", 0.0),
        "ipis_call_function": call_function_ipis(ipis, o["tlb_shootdowns"]),
        "ipis_tlb_shootdown": ipis.get("tlb_shootdown", 0.0),
        "tlb_shootdowns": o["tlb_shootdowns"],
        "page_faults": o["page_faults"],
    }


def sim_per_op(s, ops_per_loop):
    ops = max(s["loops"] * ops_per_loop, 1e-9)
    out = {
        "cpu_ns": s["cpu_ns"] / ops,
        "switches": s["switches"] / ops,
        "wakeups": s["wakeups"] / ops,
        "ops_per_s": ops / s["secs"],
    }
    for m in ("ipis_reschedule", "ipis_call_function"):
        if m in s:
            out[m] = s[m] / ops
    return out


class Judge:
    def __init__(self):
        self.rows = []
        self.passed = 0
        self.failed = 0
        self.gaps = {}

    def add(self, name, side, metric, real, sim, judged=True, gap=None, count=None, known=None):
        if sim is None:
            self.rows.append((name, side, metric, real, None, "not modelled"))
            return
        if count is not None and count < MIN_EVENTS:
            self.rows.append((name, side, metric, real, sim, f"not judged ({count} real events)"))
            return
        if known:
            gap = gap or f"{name}: {metric}"
            GAPS.setdefault(gap, known)
        if gap:
            self.gaps[gap] = True
            ok = abs(sim - real) <= TOL * abs(real) if real != 0 else abs(sim) < 1e-9
            self.rows.append((name, side, metric, real, sim, f"known gap ({gap}){': now within 30%' if ok else ''}"))
            return
        if not judged:
            self.rows.append((name, side, metric, real, sim, "not judged"))
            return
        ok = abs(sim - real) <= TOL * abs(real) if real != 0 else abs(sim) < 1e-9
        self.passed += ok
        self.failed += not ok
        self.rows.append((name, side, metric, real, sim, "pass" if ok else "FAIL"))

    def add_repeated(self, name, side, metric, reals, sim, count=None, known=None):
        """A real figure measured len(reals) times in this run: judged on its
        median only when the repeats agree within TOL (else the tolerance
        would be narrower than the figure's own noise: not judged)."""
        reals = sorted(reals)
        med = reals[len(reals) // 2]
        lo, hi = reals[0], reals[-1]
        if not known and (count is None or count >= MIN_EVENTS) and hi - lo > TOL * abs(med):
            self.rows.append((name, side, metric, med, sim,
                              f"not judged (real ranged {lo:.3g}..{hi:.3g} over {len(reals)} repeats)"))
            return
        self.add(name, side, metric, med, sim, count=count, known=known)

    def table(self):
        out = ["| recording | side | metric | real | sim | sim/real | verdict |",
               "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for name, side, metric, real, sim, verdict in self.rows:
            ratio = f"{sim / real:.2f}" if sim is not None and real else "-"
            s = "-" if sim is None else f"{sim:.4g}"
            out.append(f"| {name} | {side} | {metric} | {real:.4g} | {s} | {ratio} | {verdict} |")
        return "\n".join(out)


def record(oversub, meta, out, hogs):
    procs = []
    try:
        for _ in range(hogs):
            procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        # 256 MiB of ring buffer per CPU: sysbench's yield loop makes about a
        # million trace events a second, and a reader descheduled by the hogs
        # (or by other load) must not fall behind 32 MiB (the default).
        cmd = [oversub, "record", "--out", out, "--duration", meta["duration"],
               "--buffer-kb", "262144"]
        if "ops" in meta:
            cmd += ["--ops", str(meta["ops"])]
        if "ops_from" in meta:
            cmd += ["--ops-from", meta["ops_from"]]
        # The program's own files go beside --out (which the recorder
        # writes whole: nothing may appear in it during the recording).
        cwd = None
        if meta.get("cwd_tmp"):
            cwd = out + ".cwd"
            os.makedirs(cwd, exist_ok=True)
        run(cmd + ["--"] + meta["command"], cwd=cwd)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    with open(os.path.join(out, "profile.json")) as f:
        return json.load(f)


def throughput(profile):
    return profile["per_op"]["ops"] / (profile["wall_ns"] / 1e9)


def named(oversub, top):
    """Part A for every recordings/NAME of `make measure` (profile.json,
    workload.json, ops.txt): recorded per-op figures against the derived
    program host-only and as the guest of a VM of this machine's size.
    Printed, not judged: these recordings carry no known gaps or op counts
    checked by a person yet."""
    cpus = os.cpu_count()
    out = ["| recording | ops | load at start | side | CPU us/op | switches/op | wakeups/op | resched IPIs/op |",
           "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    with tempfile.TemporaryDirectory(prefix="oversub-named-") as tmp:
        for name in sorted(os.listdir(top)):
            d = os.path.join(top, name)
            if not os.path.isfile(os.path.join(d, "workload.json")):
                continue
            with open(os.path.join(d, "profile.json")) as f:
                prof = json.load(f)
            wl = os.path.join(d, "workload.json")
            w = load_ordered(wl)
            ops = w["provenance"].get("ops")
            opl = w["provenance"]["derivation"]["ops_per_phase_loop"]
            if not ops or opl is None:
                print(f"# {name}: no op count, skipped")
                continue
            t = prof["totals"]
            ipis = t.get("ipis", {})
            real = {"cpu_ns": t["cpu_ns"] / ops, "switches": t["switches"] / ops,
                    "wakeups": t["wakeups"] / ops, "ipis_reschedule": ipis.get("reschedule", 0) / ops}
            load = " ".join(prof["provenance"]["machine"].get("load_average_at_start", "?").split()[:3])
            rows = [("real", real), ("sim host-only", sim_per_op(sim_host(oversub, wl, cpus, 0, tmp), opl)),
                    (f"sim guest of {cpus}-vCPU VM", sim_per_op(sim_vm(oversub, wl, cpus, tmp), opl))]
            for side, r in rows:
                ipi = r.get("ipis_reschedule")
                out.append(f"| {name} | {ops} | {load} | {side} | {r['cpu_ns'] / 1000:.4g} | {r['switches']:.4g} | "
                           f"{r['wakeups']:.4g} | {'-' if ipi is None else f'{ipi:.3g}'} |")
    print("\n".join(out))
    print(f"\n{cpus} CPUs, {os.uname().release}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--oversub", default="target/release/oversub")
    ap.add_argument("--dir", default="recordings/check")
    ap.add_argument("--only", action="append")
    ap.add_argument("--no-real", action="store_true", help="part A only (no root needed)")
    ap.add_argument("--named", action="store_true",
                    help="part A for the named workloads' recordings (recordings/NAME, make measure): "
                         "shown, not judged (they have no check.json)")
    ap.add_argument("--guest", action="store_true",
                    help="A and B for the named workloads derived from recordings (steady-state guest form)")
    ap.add_argument("--seconds", type=int, default=3, help="--guest: the real runs' measure-real.sh --duration")
    a = ap.parse_args()
    if a.guest:
        return guest(a.oversub, a.only, a.no_real, a.seconds)
    if a.named:
        return named(a.oversub, "recordings" if a.dir == "recordings/check" else a.dir)
    cpus = os.cpu_count()
    j = Judge()
    names = sorted(d for d in os.listdir(a.dir) if os.path.isfile(os.path.join(a.dir, d, "check.json")))
    if a.only:
        names = [n for n in names if n in a.only]
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="oversub-check-") as tmp:
        for name in names:
            d = os.path.join(a.dir, name)
            with open(os.path.join(d, "check.json")) as f:
                meta = json.load(f)
            with open(os.path.join(d, "profile.json")) as f:
                prof = json.load(f)
            wl = os.path.join(d, "workload.json")
            opl = load_ordered(wl)["provenance"]["derivation"]["ops_per_phase_loop"]
            rec_cpus = prof["provenance"]["machine"]["cpus"]
            if rec_cpus != cpus:
                print(f"# {name}: recorded on {rec_cpus} CPUs, this machine has {cpus}")
            real = real_per_op(prof)
            ops = prof["per_op"]["ops"]
            known = meta.get("known_gaps", {})
            host = sim_per_op(sim_host(a.oversub, wl, cpus, 0, tmp), opl)
            vm = sim_per_op(sim_vm(a.oversub, wl, cpus, tmp), opl)
            for side, s in (("host-only", host), (f"guest of {cpus}-vCPU VM", vm)):
                for m in ("cpu_ns", "switches", "wakeups"):
                    n = None if m == "cpu_ns" else round(real[m] * ops)
                    j.add(name, side, m + "/op", real[m], s[m], count=n, known=known.get(m + "/op"))
                j.add(name, side, "futex waits/op", real["futex_waits"], None)
                # IPIs of remote wakeups and preemptions, by type.
                for m, label in IPI_ROWS:
                    j.add(name, side, label, real[m], s.get(m), count=round(real[m] * ops), gap="idle-ipi")
                j.add(name, side, "TLB shootdowns/op", real["tlb_shootdowns"], None)
                j.add(name, side, "page faults/op", real["page_faults"], None)
            if a.no_real:
                continue
            hogs = meta.get("hogs", cpus)
            # The real side is recorded REPEATS times back to back, each
            # time without then with hogs: its spread in this run is the
            # noise a real figure carries here, measured, not assumed.
            pairs = [(record(a.oversub, meta, os.path.join(tmp, f"{name}-base{i}"), 0),
                      record(a.oversub, meta, os.path.join(tmp, f"{name}-hogs{i}"), hogs))
                     for i in range(REPEATS)]
            s0 = sim_per_op(sim_host(a.oversub, wl, cpus, 0, tmp), opl)
            s1 = sim_per_op(sim_host(a.oversub, wl, cpus, hogs, tmp), opl)
            side = f"{hogs} hogs, host-only"
            # Each figure as its ratio with hogs / without, real (both
            # measured now, back to back) against simulated.
            j.add_repeated(name, side, "throughput with/without hogs",
                           [throughput(h) / throughput(b) for b, h in pairs],
                           s1["ops_per_s"] / s0["ops_per_s"], known=known.get("hogs throughput"))
            for m in ("switches", "wakeups"):
                ratios, n = [], None
                for b, h in pairs:
                    rb, rh = real_per_op(b), real_per_op(h)
                    ratios.append(rh[m] / rb[m] if rb[m] else 0.0)
                    c = min(round(rh[m] * h["per_op"]["ops"]), round(rb[m] * b["per_op"]["ops"]))
                    n = c if n is None else min(n, c)
                j.add_repeated(name, side, f"{m}/op with/without hogs", ratios,
                               s1[m] / s0[m] if s0[m] else 0.0, count=n, known=known.get(f"hogs {m}/op"))
    print(j.table())
    print(f"\n{cpus} CPUs, {os.uname().release}, {time.time() - t0:.0f} s")
    for g in j.gaps:
        print(f"- known gap ({g}): {GAPS[g]}")
    print(f"recordings: {j.passed} passed, {j.failed} failed")
    return 1 if j.failed else 0


if __name__ == "__main__":
    sys.exit(main())
