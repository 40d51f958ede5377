#!/usr/bin/env python3
"""Kernel-build programs from recordings (docs/workloads.md, "kernbench: a
build as processes"): recordings/REC/forks.json from recordings/REC/profile.json
and recordings/REC/ops.txt (oversub record of scripts/measure-real.sh's
kernbench and kernbench-64: make -jN kernel/sched/ mm/ of the 6.12 tree).

A build is hundreds of short-lived processes (make -> sh -> gcc -> cc1, as;
sh -> fixdep, rm, mkdir, ...), which the steady form of `oversub derive`
(threads that loop for ever) cannot replay. This derivation writes them with
the program IR's `fork` extension (docs/workloads.md, "Child processes"):
each of make's N job slots (`t_job`, one op = one compiled object, as the
recording counts them in ops.txt) forks, per pass of PASS_OPS objects, the
processes the recording shows per object, each comm's count rounded to the
pass, each process running its comm's measured mean CPU and exiting; its
parent waits for it (wait4). Measured per comm (profile.json's listed
threads plus `threads_folded`, summed by comm): processes per object, CPU
per process, blocks per process. Not measured (the recorder folds processes
by comm and keeps no fork tree): who forks whom. That tree is kbuild's
(scripts/Makefile.build, rule_cc_o_c: make runs the object's command in
`sh -c`, which runs gcc (which runs cc1 and as), fixdep and rm): per pass,
gcc processes are shared out over the sh processes, cc1 and as over the gcc
processes, fixdep, rm and mkdir over the sh processes, round robin; the
other comms (make's recursive makes, sed, grep, ...) are forked by the job
slot, their CPU pooled as one `misc` process per pass.

Blocks that are not a wait for a child (a pipe read of a child's output, a
vfork parent waiting for its child's exec, I/O) are written as sleeps at the
comm's measured count per process beyond its children, each of the measured
mean blocked time of that comm's listed threads, else MISC_BLOCK_US (a
wait on another process replayed as a fixed sleep: not causal).

    python3 scripts/derive-kernbench.py kernbench kernbench-64          # write forks.json
    python3 scripts/derive-kernbench.py --check kernbench kernbench-64  # exit 1 if stale

Exit 2 with one line naming the file and what is wrong when a recording
lacks what the derivation needs.
"""
import collections
import json
import re
import sys

from generated_files import write_or_check
import spin_sections

# Objects per pass of a job slot: each comm's processes per object are
# rounded to a pass (cc1 1.51 per object -> 3 per pass of 2).
PASS_OPS = 2
# The chain, from kbuild's rule for an object: parent comm -> children.
CHAIN = {"sh": ["gcc", "fixdep", "rm", "mkdir"], "gcc": ["cc1", "as"]}
# Comms that start their children with vfork (CLONE_VFORK: the parent
# blocks until the child's exec, then in wait4): make (glibc's posix_spawn,
# clone3 with CLONE_VFORK in the recording) and gcc (libiberty's pex-unix);
# the recording agrees: make blocks 6.75 times per object with 3.7
# children, gcc 4.7 times per process with 1.9. sh (dash) forks.
VFORK = {"make", "gcc"}
# The mean blocked time of a block that is not a wait for a child, when no
# listed thread of the comm measured one (us): a vfork parent's wait for
# its child's exec and a pipe read of a short child's output, both ~ a
# short process's lifetime (the folded comms' mean CPU per process is
# 1-2 ms). An estimate: the recorder keeps durations per listed thread only.
MISC_BLOCK_US = 1000
TIMER_SLACK_US = 0.001
# Figures of scripts/check-recordings.py --guest shown, not judged, with
# the measured reason: REC -> {metric: reason}.
_SHOOTDOWNS = ("the flushes are written at the recorded rate of each cc1's flush_tlb_mm_range calls (derivation.tlb_flushes); "
               "which of them are remote is the guest model's mm_cpumask, here the recording kernel's lazy one "
               "([guest] lazy_mm_cpumask: a CPU the process left stays in the mask until a flush IPI finds it on "
               "another mm, e.g. the once-a-second trim's). A single-threaded cc1's flush is then remote after it "
               "migrated, until that IPI: the row follows cc1's migrations, which the recorder does not trace. The "
               "recording implies many: every IPI a cc1 flush sent (21 per cc1 CPU-second at -j16, 3.1 at -j128) "
               "found the other CPU in the mask, which a CPU leaves at such an IPI, so most need a migration since "
               "the last one; the model's cc1s migrate 0.25 times per CPU-second at -j16 (21 in 84 CPU-s, "
               "2026-11-28) and 0.025 at -j128, so 24 remote flushes per object against 284 (0.09x) and 0.12 "
               "against 7.5. The flushes that freed page tables (IPIs to lazy CPUs too) are not derived "
               "(derivation.tlb_flushes.cc1.freed_tables); at their upper bound (6.4% of the flushes) the remote "
               "ones fall to 1.6 per object at -j16. Shown, not judged")
KNOWN_GAPS = {
    "kernbench": {"tlb_shootdowns/op": _SHOOTDOWNS},
    "kernbench-64": {"tlb_shootdowns/op": _SHOOTDOWNS},
}


# The first kernel whose x86 TLB code updates mm_cpumask lazily (209954cbc7d0
# "x86/mm/tlb: Update mm_cpumask lazily" with 6db2526c1d69's once-a-second
# trim; tip x86/mm, Nov-Dec 2024, for 6.14): the guest of the recordings
# check takes `[guest] lazy_mm_cpumask` when the recording ran on it or later.
LAZY_MM_CPUMASK_SINCE = (6, 14)


def guest_settings(p, path):
    """The `[guest]` settings of the guest that replays the recording whose
    profile is `p` (scripts/check-recordings.py --guest): its kernel's
    mm_cpumask form, from provenance.machine.kernel."""
    k = p.get("provenance", {}).get("machine", {}).get("kernel", "")
    m = re.match(r"(\d+)\.(\d+)", k)
    if not m:
        die(f"{path}: provenance.machine.kernel {k!r}: no MAJOR.MINOR version")
    return {"lazy_mm_cpumask": (int(m.group(1)), int(m.group(2))) >= LAZY_MM_CPUMASK_SINCE}


def die(msg):
    print(f"derive-kernbench: {msg}", file=sys.stderr)
    sys.exit(2)


def load(rec):
    path = f"recordings/{rec}/profile.json"
    try:
        with open(path) as f:
            p = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    opath = f"recordings/{rec}/ops.txt"
    try:
        with open(opath) as f:
            line = f.read().strip().split("\n")[-1]
    except OSError as e:
        die(f"{opath}: {e}")
    m = re.search(r"\bops=(\d+)", line)
    if not m or int(m.group(1)) < 1:
        die(f"{opath}: last line has no ops=N >= 1: {line!r}")
    for k in ("threads", "threads_folded", "provenance", "totals"):
        if k not in p:
            die(f"{path}: field {k} missing")
    return p, int(m.group(1))


def jobs_of(prov, path):
    """make's -jN from the recorded command (measure-real.sh --run NAME)."""
    cmd = prov.get("command", [])
    name = cmd[-1] if cmd else ""
    if name == "kernbench":
        return 16
    if name == "kernbench-64":
        return 128
    die(f"{path}: provenance.command {cmd!r}: not a kernbench recording of scripts/measure-real.sh")


def per_comm(p):
    """comm -> processes, cpu_ns, blocks, and (listed threads only) the
    blocked time of blocks not caused by a child."""
    a = collections.defaultdict(collections.Counter)
    for t in p["threads"]:
        c = a[t["comm"]]
        c["n"] += 1
        c["cpu_ns"] += t["cpu_ns"]
        c["blocks"] += t["switches"]["blocked"]
        for cause, d in t.get("blocked_by_cause_ns", {}).items():
            if cause != "child":
                c["timed_blocks"] += d["count"]
                c["timed_ns"] += d["sum_ns"]
    for t in p["threads_folded"]:
        c = a[t["comm"]]
        c["n"] += t["threads"]
        c["cpu_ns"] += t["cpu_ns"]
        c["blocks"] += t["switches"]["blocked"]
    return a


def us(ns):
    """rt-app's times are integer us (at least 1)."""
    return max(1, round(ns / 1000.0))


# Comms whose processes get TLB flushes (`munmap` events): cc1, whose
# flush_tlb_mm_range calls are 99% of the leaves' in the recordings (the
# others' rates are listed in derivation.tlb_flushes.not_written).
FLUSH_COMMS = ("cc1",)


def flush_rates(p):
    """comm -> (TLB_LOCAL_MM_SHOOTDOWN events, TLB_REMOTE_SEND_IPI events,
    call-function IPIs sent, CPU ns) of its listed threads (the folded
    ones carry no tlb:tlb_flush counts)."""
    a = collections.defaultdict(lambda: [0, 0, 0, 0])
    for t in p["threads"]:
        f = t.get("tlb_flush", {})
        r = a[t["comm"]]
        r[0] += f.get("local_mm_shootdown", {}).get("events", 0)
        r[1] += f.get("remote_send_ipi", {}).get("events", 0)
        r[2] += sum(v["events"] for k, v in t.get("ipis_sent", {}).items() if k.startswith("call_function"))
        r[3] += t["cpu_ns"]
    return a


def freed_tables_bounds(p, c):
    """What the recording says about comm `c`'s flushes that freed page
    tables (its listed threads): its call-function IPIs sent, the most
    once-a-second trims its processes could have sent (one per whole
    second of each process's life after the first: should_trim_cpumask()),
    and its munmap and brk calls per flush_tlb_mm_range (each at most one
    freed_tables flush: a bound)."""
    ts = [t for t in p["threads"] if t["comm"] == c]
    local = sum(t.get("tlb_flush", {}).get("local_mm_shootdown", {}).get("events", 0) for t in ts)
    calls = sum(t.get("syscalls", {}).get(s, {}).get("count", 0) for t in ts for s in ("munmap", "brk"))
    return collections.OrderedDict([
        ("written", 0),
        ("recorded_ipis", sum(v["events"] for t in ts for k, v in t.get("ipis_sent", {}).items()
                              if k.startswith("call_function"))),
        ("trims_at_most", sum(int((t["last_ns"] - t["first_ns"]) // 1_000_000_000) for t in ts)),
        ("munmap_brk_per_flush_at_most", round(calls / local, 4) if local else None),
        ("is", "not derived: tlb:tlb_flush does not say which flushes freed page tables; the IPIs a flush sends "
               "(recorded_ipis) are those freed_tables flushes and the once-a-second trims (trims_at_most, more "
               "than recorded_ipis), so the two cannot be told apart; munmap_brk_per_flush_at_most bounds the "
               "freed_tables fraction from above (every munmap and brk call freeing page tables). The munmap "
               "events carry no freed_tables (the option exists: docs/workloads.md, munmap)")])


def add_flushes(ph, m):
    """`m` flushes (`munmap` events of no kernel work beyond the flush: the
    unmapping syscall's CPU is in the measured runs) spread evenly over the
    spinlock-section phases `ph` of a leaf process (the `times` /
    `per_loops` repeat, per section loop)."""
    loops = sum(v["loop"] for k, v in ph.items() if "_spin" in k)
    for k, v in ph.items():
        if "_spin" in k:
            v["munmap"] = collections.OrderedDict([("run", 0), ("pages", 1), ("times", m), ("per_loops", loops)])


# Comms whose processes get guest kernel spinlock sections: the leaves of
# the tree (one run, no children), where the recording's contention is
# (cc1: 98% of it at -j16); the others' rates are listed in not_derived.
SPIN_LEAVES = ("cc1", "as", "fixdep", "rm", "mkdir")


def spin_phases(ev, n, classes):
    """A leaf process's events `ev` (its runs and sleeps, in order) as
    phases whose runs are `n` spinlock sections in all
    (scripts/spin_sections.py), shared out over the runs: per run one phase
    per hold class, the run's CPU between the sections as each section's
    work before the lock; each sleep a phase of its own."""
    runs = [k for k in ev if k.startswith("run")]
    ph = collections.OrderedDict()
    for i, (key, v) in enumerate(ev.items()):
        if not key.startswith("run"):
            ph[f"p{i}"] = collections.OrderedDict([(key, v)])
            continue
        r = runs.index(key)
        m = n * (r + 1) // len(runs) - n * r // len(runs)
        if m == 0:
            ph[f"p{i}"] = collections.OrderedDict([(key, v)])
            continue
        shares = spin_sections.counts(m, classes)
        gap = max(0.0, v - sum(h * k for h, k in shares)) / m
        for j, (h, k) in enumerate(shares):
            ph[f"p{i}_spin{j}"] = collections.OrderedDict([("loop", k), ("syscall", spin_sections.event(h, gap))])
    return ph


def derive(rec):
    path = f"recordings/{rec}/profile.json"
    p, ops = load(rec)
    jobs = jobs_of(p["provenance"], path)
    a = per_comm(p)
    try:
        spin_classes, spin_rates, spin_info = spin_sections.derive(p, path)
    except spin_sections.Missing as e:
        die(str(e))
    for c in ["make", "sh", "gcc", "cc1"]:
        if a[c]["n"] == 0:
            die(f"{path}: no {c} process recorded: not a kernel build")
    total_cpu = sum(c["cpu_ns"] for c in a.values())
    named = set(CHAIN) | {x for v in CHAIN.values() for x in v}
    misc = [c for c in a if c not in named and c != "make"]
    # Processes per pass of PASS_OPS objects, by comm.
    k = {c: max(1, round(a[c]["n"] * PASS_OPS / ops)) for c in named if a[c]["n"]}
    # make: the recording's make processes are the top make and its
    # recursive makes; their CPU per object goes to the job slot (the make
    # that runs the job), their blocks beyond children to its sleeps.
    misc_n = sum(a[c]["n"] for c in misc)
    misc_cpu = sum(a[c]["cpu_ns"] for c in misc)
    k_misc = round(misc_n * PASS_OPS / ops)
    derivation = collections.OrderedDict()
    derivation["jobs"] = jobs
    derivation["pass_ops"] = PASS_OPS
    derivation["ops"] = ops
    derivation["cpu_ns_per_op"] = round(total_cpu / ops)
    derivation["comms"] = collections.OrderedDict()
    tasks = collections.OrderedDict()

    def block_us(c):
        cc = a[c]
        return us(cc["timed_ns"] / cc["timed_blocks"]) if cc["timed_blocks"] else MISC_BLOCK_US

    def process(c, children):
        """The task of one process of comm `c` forking `children` (names)."""
        cc = a[c]
        cpu = cc["cpu_ns"] / cc["n"]
        # Blocks per process beyond its children's wait4 (each child's
        # exit ends one block of its parent).
        waits = (2 if c in VFORK else 1) * len(children)
        extra = max(0.0, cc["blocks"] / cc["n"] - waits)
        nsleep = round(extra)
        pieces = 1 + len(children) + nsleep
        ev = collections.OrderedDict()
        run = us(cpu / pieces)
        i = 0
        ev[f"run{i}"] = run
        fork = "vfork" if c in VFORK else "fork"
        for j, ch in enumerate(children):
            ev[f"{fork}{j}"] = ch
            i += 1
            ev[f"run{i}"] = run
        for j in range(nsleep):
            ev[f"sleep{j}"] = block_us(c)
            i += 1
            ev[f"run{i}"] = run
        derivation["comms"].setdefault(c, collections.OrderedDict([
            ("processes_per_op", round(cc["n"] / ops, 4)),
            ("per_pass", k.get(c, k_misc if c == "misc" else None)),
            ("cpu_ns_per_process", round(cpu)),
            ("blocks_per_process", round(cc["blocks"] / cc["n"], 3)),
            ("sleeps_per_process", nsleep),
            ("sleep_us", block_us(c) if nsleep else None),
        ]))
        return ev

    def share(parents, kids):
        """kids (list of names) shared out round robin over parents."""
        out = [[] for _ in parents]
        for i, kid in enumerate(kids):
            out[i % len(parents)].append(kid)
        return out

    # Leaves and the chain, bottom up: names are COMM_I (a process image).
    leaf = lambda c: [f"{c}_{i}" for i in range(k.get(c, 0))]
    gccs = leaf("gcc")
    gkids = share(gccs, leaf("cc1") + leaf("as"))
    shs = leaf("sh")
    skids = share(shs, gccs + leaf("fixdep") + leaf("rm") + leaf("mkdir"))
    images = collections.OrderedDict()
    for name, kids in zip(shs, skids):
        images[name] = process("sh", kids)
    for name, kids in zip(gccs, gkids):
        images[name] = process("gcc", kids)
    spin_per_process = collections.OrderedDict()
    rates = flush_rates(p)
    flushes = collections.OrderedDict()
    for c in FLUSH_COMMS:
        local, remote, ipis, cpu = rates[c]
        if local and cpu:
            flushes[c] = round(local / (cpu / 1e9) * a[c]["cpu_ns"] / a[c]["n"] / 1e9)
    for c in ("cc1", "as", "fixdep", "rm", "mkdir"):
        n = round(spin_rates.get(c, 0.0) * a[c]["cpu_ns"] / a[c]["n"] / 1e9) if a[c]["n"] else 0
        if c in SPIN_LEAVES and n > 0:
            spin_per_process[c] = n
        for name in leaf(c):
            ev = process(c, [])
            if c in spin_per_process:
                ph = spin_phases(ev, n, spin_classes)
                if flushes.get(c):
                    add_flushes(ph, flushes[c])
                ev = collections.OrderedDict([("phases", ph)])
            elif flushes.get(c):
                die(f"{path}: {c} has TLB flushes but no spinlock sections to place them in")
            images[name] = ev
    spin_info["sections_per_process"] = spin_per_process
    spin_info["not_written"] = collections.OrderedDict(
        (c, round(r, 1)) for c, r in spin_rates.items() if c not in spin_per_process and r > 0)
    spin_info["not_written_are"] = ("acquisitions per CPU-second of the comms whose processes are not leaves of the "
                                    "tree (their CPU is split around their children) or were not written "
                                    "(rustc, nm: another user's or the recorder's processes)")
    derivation["spin"] = spin_info
    tf = collections.OrderedDict()
    for c in FLUSH_COMMS:
        local, remote, ipis, cpu = rates[c]
        tf[c] = collections.OrderedDict([
            ("per_cpu_s", round(local / (cpu / 1e9), 1) if cpu else 0.0),
            ("per_process", flushes.get(c, 0)),
            ("recorded_remote_fraction", round(remote / local, 4) if local else None),
            ("recorded_ipis_per_cpu_s", round(ipis / (cpu / 1e9), 2) if cpu else 0.0),
            ("freed_tables", freed_tables_bounds(p, c))])
    tf["is"] = ("measured: per cc1 process, its listed threads' tlb:tlb_flush TLB_LOCAL_MM_SHOOTDOWN events (every "
                "flush_tlb_mm_range of its mm on its CPU) per CPU-second times its comm's mean CPU per process; "
                "written as munmap events (run 0: the syscalls' CPU is in the measured runs; pages 1: the recorded "
                "mean is 1.06 pages, and the model's flush cost does not depend on it) spread evenly over the "
                "process's spinlock sections (times / per_loops); which CPUs a flush interrupts is the guest "
                "model's (the process's own mm_cpumask, should_flush_tlb(); the recordings check's guest takes the "
                "recording kernel's lazy mm_cpumask, [guest] lazy_mm_cpumask); recorded_remote_fraction and "
                "recorded_ipis_per_cpu_s are the recording's (6.18: mm_cpumask updated lazily), shown")
    tf["not_written"] = collections.OrderedDict(
        (c, round(r[0] / (r[3] / 1e9), 1)) for c, r in sorted(rates.items())
        if c not in FLUSH_COMMS and r[0] and r[3] and c in SPIN_LEAVES + ("sh", "gcc", "make"))
    per_op = lambda c: rates[c][0] / rates[c][3] * a[c]["cpu_ns"] / ops if rates[c][3] else 0.0
    tf["not_written_per_op_vs_written"] = round(
        sum(per_op(c) for c in tf["not_written"]) / max(sum(per_op(c) for c in FLUSH_COMMS), 1e-9), 4)
    tf["not_written_are"] = ("flush_tlb_mm_range calls per CPU-second of the other comms of the tree (listed "
                             "threads; not_written_per_op_vs_written: their flushes per object, all processes' "
                             "CPU, against cc1's); the non-leaves' CPU is split around their children")
    derivation["tlb_flushes"] = tf
    # The misc comms as one pooled process image.
    if k_misc:
        a["misc"] = collections.Counter(n=misc_n, cpu_ns=misc_cpu,
                                        blocks=sum(a[c]["blocks"] for c in misc))
        for i in range(k_misc):
            images[f"misc_{i}"] = process("misc", [])
    # The job slot: per object, make's CPU per object (spread over the
    # jobs' make processes: the recording's make CPU / ops), then its share
    # of the pass's top-level forks.
    top = shs + [f"misc_{i}" for i in range(k_misc)]
    per_phase = share(list(range(PASS_OPS)), top)
    make_cpu = a["make"]["cpu_ns"] / ops
    make_sleeps = max(0.0, a["make"]["blocks"] / ops - 2 * len(top) / PASS_OPS)
    phases = collections.OrderedDict()
    for j in range(PASS_OPS):
        ev = collections.OrderedDict()
        ns = round(make_sleeps * (j + 1)) - round(make_sleeps * j)
        pieces = 1 + len(per_phase[j]) + ns
        run = us(make_cpu / pieces)
        ev["run0"] = run
        i = 0
        for m, ch in enumerate(per_phase[j]):
            ev[f"vfork{m}"] = ch
            i += 1
            ev[f"run{i}"] = run
        for m in range(ns):
            ev[f"sleep{m}"] = block_us("make")
            i += 1
            ev[f"run{i}"] = run
        phases[f"obj{j}"] = ev
    derivation["comms"]["make (the job slot)"] = collections.OrderedDict([
        ("cpu_ns_per_op", round(make_cpu)), ("sleeps_per_op", round(make_sleeps, 3)),
        ("sleep_us", block_us("make"))])
    tasks["t_job"] = collections.OrderedDict([
        ("instance", jobs), ("loop", -1),
        ("oversub", collections.OrderedDict([("timer_slack", TIMER_SLACK_US), ("ops_per_loop", 1)])),
        ("phases", phases)])
    for name, ev in images.items():
        t = collections.OrderedDict()
        t["oversub"] = collections.OrderedDict([("timer_slack", TIMER_SLACK_US), ("ops_per_loop", 0)])
        t.update(ev)
        tasks[name] = t
    # The simulated CPU of one pass of every job slot (check-recordings'
    # window: a few of them).
    derivation["cycle_cpu_ns"] = round(total_cpu / ops * PASS_OPS * jobs)
    derivation["tree"] = ("kbuild's (scripts/Makefile.build rule_cc_o_c: make -> sh -> gcc -> cc1, as; "
                          "sh -> fixdep, rm, mkdir), not recorded: the recorder folds processes by comm")
    derivation["not_derived"] = [
        "which process forks which (the tree above is kbuild's, the counts and CPU the recording's)",
        "blocks other than a wait for a child's exec (vfork) or exit (wait4): pipe reads, I/O, are sleeps of a "
        "measured or estimated mean (sleep_us per comm), not waits on the process that ends them",
        "page faults (23 k per object): their CPU is in each process's measured CPU; TLB flushes of the comms other "
        "than cc1 (derivation.tlb_flushes.not_written) and the freed_tables flushes' IPIs to lazy CPUs (the "
        "recording cannot tell which flushes freed page tables)",
        "spinlock sections outside the leaf processes (derivation.spin.not_written) and which lock a section "
        "is: every contended spinlock of the recording is pooled on one lock (derivation.spin)",
        "exec balancing (sched_exec: select_task_rq with WF_EXEC right after the fork balance)",
        "the processes' start-up and the build's own start and end (the job slots loop for ever)",
    ]
    prov = collections.OrderedDict()
    prov["recording"] = f"recordings/{rec}"
    prov["command"] = p["provenance"]["command"]
    prov["date"] = p["provenance"].get("date")
    prov["machine"] = p["provenance"].get("machine")
    prov["ops"] = ops
    prov["derived_by"] = "scripts/derive-kernbench.py"
    prov["derivation"] = derivation
    prog = collections.OrderedDict([("provenance", prov),
                                    ("global", collections.OrderedDict([("duration", 10), ("log_size", 0)])),
                                    ("tasks", tasks)])
    return json.dumps(prog, indent=1) + "\n"


def main():
    args = sys.argv[1:]
    check = "--check" in args
    recs = [a for a in args if not a.startswith("--")] or ["kernbench", "kernbench-64"]
    stale = []
    for rec in recs:
        write_or_check(f"recordings/{rec}/forks.json", derive(rec), check, stale)
    if stale:
        print("stale (run python3 scripts/derive-kernbench.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
