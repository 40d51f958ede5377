#!/usr/bin/env python3
"""Writes the named workloads that are derived programs (docs/workloads.md,
"The named workloads as programs") from their recordings:
workloads/NAME.json = recordings/REC/guest.json (the steady-state form
written by `oversub record` or `oversub derive recordings/REC`) or, for the
pipelines whose queue messages were counted (dedup, vips),
recordings/REC/queues.json (scripts/derive-queues.py), with a header naming
the recording and a `provenance.status`; idle from recordings/idle/profile.json
(idle_program: a recorded `sleep`).

    python3 scripts/named-workloads.py          # rewrite them all
    python3 scripts/named-workloads.py --check  # exit 1 if one is stale, or a
                                                # workloads/*.json is not written here
"""
import collections
import json
import os
import sys

from generated_files import write_or_check

# NAME: (recording, what one op is, how the recording counted it)
NAMED = collections.OrderedDict([
    ("dbench", ("dbench-tmpfs", "a dbench client operation",
                "dbench's own operation table (ops.txt); the published filesystem is unknown: the tmpfs "
                "recording is the one whose derived program runs as a guest (dbench-ext4's clients wait on "
                "each other through lost-wakeup guards, see why_not in docs)")),
    ("ebizzy", ("ebizzy", "a record search (ebizzy default: malloc'd chunks, glibc's dynamic mmap threshold)",
                "the program's op markers (programs/ebizzy)")),
    ("ebizzy-M", ("ebizzy-M", "a record search (ebizzy -M: every free trims the arena, shootdowns and faults)",
                  "the program's op markers (programs/ebizzy)")),
    ("hackbench", ("hackbench", "a message (hackbench -T -g 2 -f 8: 2 x 8 x 8 x loops)",
                   "hackbench's message count (ops.txt)")),
    # The ping-pong pair (docs/workloads.md, "pingpong"): two threads
    # handing a turn back and forth through two pipes.
    ("pingpong", ("pingpong", "a turn (perf bench sched pipe -T: one thread's write that hands the turn to the "
                              "other; 2 per perf loop)",
                  "perf's loop count (ops.txt: 2 x -l)")),
    # The history scenarios' 64- and 80-vCPU guests: ebizzy's default of 2
    # threads per CPU, recorded on this machine's CPUs with the arena limit
    # glibc computes for the guest's (scripts/measure-real.sh).
    ("ebizzy-64", ("ebizzy-64", "a record search (ebizzy -t 128, default: glibc's dynamic mmap threshold; glibc "
                                "arena limit of a 64-CPU machine)",
                   "the program's op markers (programs/ebizzy)")),
    ("ebizzy-M-64", ("ebizzy-M-64", "a record search (ebizzy -t 128 -M: every free trims the arena; glibc arena "
                                    "limit of a 64-CPU machine)",
                     "the program's op markers (programs/ebizzy)")),
    ("ebizzy-M-80", ("ebizzy-M-80", "a record search (ebizzy -t 160 -M: every free trims the arena; glibc arena "
                                    "limit of an 80-CPU machine)",
                     "the program's op markers (programs/ebizzy)")),
    # The pipeline, from its counted queue messages (SOURCE below). One op
    # is what the published PARSEC throughput counts, in finer units: a run
    # is one pass over the simlarge input, so the published figure is
    # passes per second, and a pass writes a fixed number of fine chunks:
    # chunks written per second are proportional to it (docs/workloads.md,
    # "The named workloads as programs").
    ("dedup", ("dedup", "a fine chunk written in order by reorder (~5 KiB of the input deduplicated and compressed; "
                        "36 809 per 184 MiB pass)",
               "the program's op markers (programs/dedup: a chunk written)")),
    # The image pass is PARSEC vips' op (a run processes the simlarge image
    # once); the derived program counts it per 128x128 unit computed, 903
    # to a pass (recordings/vips/queues.json, derivation.ops_per_loop).
    ("vips", ("vips", "an image pass (vipsbench: PARSEC vips' operation chain over the 2662x5500 simlarge image; "
                      "counted per 128x128 unit computed, 903 to a pass)",
              "the program's op markers (programs/vips/vipsbench: a pass)")),
    # A build as processes (the fork extension), from the recordings' per-comm
    # processes, CPU and blocks (scripts/derive-kernbench.py). kernbench-64
    # is the history scenarios' 64-vCPU guest (make -j128), recorded on
    # this machine's 2 CPUs: what does not carry over is in docs/workloads.md.
    ("kernbench", ("kernbench", "a compiled object (make -j16 kernel/sched/ mm/ of the 6.12 tree)",
                   "the objects the build wrote (ops.txt)")),
    ("kernbench-64", ("kernbench-64", "a compiled object (make -j128 kernel/sched/ mm/ of the 6.12 tree, "
                                      "recorded on 2 CPUs)",
                      "the objects the build wrote (ops.txt)")),
    # An idle guest's user space: a process that sleeps (idle_program
    # below). No op: it does nothing.
    ("idle", ("idle", "none (an idle guest does no work)", "nothing: the program does no work")),
])

# Known gaps of the steady-state programs (guest.json) as guests against
# their recordings (scripts/check-recordings.py --guest): metric -> why.
KNOWN_GAPS = {
    "pingpong": {
        "switches/op": "the recording's switches include its threads' preemptions (profile.json "
                       "totals.involuntary_switches, 0.43 per turn at load average 1.0 as at 11 and 35): the "
                       "reader woken by a pipe write often runs on the writer's CPU and preempts it, which then "
                       "finds the turn back without blocking (which wakeup path co-locates them is not "
                       "established); the simulated pair stays on two vCPUs and switches once per wait: its switches/op match the recorded voluntary ones "
                       "(totals.voluntary_switches / ops). docs/workloads.md, \"pingpong and idle\"",
    },
}

# Which derived program of the recording a named workload is: the steady
# form of `oversub derive` (guest.json, the default) or the queue program
# from the counted messages (queues.json, scripts/derive-queues.py).
# The ebizzy -M programs and ebizzy-64 are the per-op programs with the
# guest kernel's mmap_lock sections (mm-guest.json, scripts/derive-mm.py:
# mmap_sem era for the history rows, per-VMA faults for ebizzy-M's 6.12
# guest).
SOURCE = {"dedup": "queues.json", "vips": "queues.json", "ebizzy-M": "mm-guest-per_vma.json",
          "ebizzy-M-64": "mm-guest-mmap_sem.json", "ebizzy-M-80": "mm-guest-mmap_sem.json",
          "ebizzy-64": "mm-guest-mmap_sem.json",
          "kernbench": "forks.json", "kernbench-64": "forks.json", "idle": "profile.json"}

# The idle recording's program: `sleep` (scripts/measure-real.sh idle); the
# recording's other threads are measure-real.sh's shell and its tools.
IDLE_COMM = "sleep"


def idle_program(rec):
    """The idle workload from recordings/REC/profile.json (`sleep D` under
    oversub record): the program's thread blocked once, in a timer sleep
    ended by the timer interrupt, for nearly its whole life; its CPU (exec,
    the dynamic loader, exit) lies outside that sleep (its lifetime minus
    the sleep is at least its CPU): start-up and exit, which the steady
    form does not replay (oversub derive's guest.json would loop them for
    ever: a burst every sleep). What recurs is the sleep alone, so the
    program is one thread that sleeps the measured sleep, over and over:
    vCPUs that only halt. Refuses a recording that is not of that shape."""
    path = f"recordings/{rec}/profile.json"
    with open(path) as f:
        prof = json.load(f, object_pairs_hook=collections.OrderedDict)
    threads = [t for t in prof["threads"] if t["comm"] == IDLE_COMM]
    if len(threads) != 1:
        sys.exit(f"{path}: threads: {len(threads)} with comm {IDLE_COMM!r}; allowed exactly 1 (the idle program)")
    t = threads[0]
    blocks = t.get("blocked_by_cause_ns", {})
    sleep = blocks.get("sleep", {})
    others = {k: v["count"] for k, v in blocks.items() if k != "sleep" and v["count"]}
    life = t["last_ns"] - t["first_ns"]
    if sleep.get("count") != 1 or others or life - sleep["sum_ns"] < t["cpu_ns"]:
        sys.exit(f"{path}: thread {t['tid']} ({IDLE_COMM}): blocks {dict(others, sleep=sleep.get('count', 0))}, "
                 f"lifetime {life} ns, CPU {t['cpu_ns']} ns; allowed one sleep and no other block, with the CPU "
                 "outside the sleep (start-up and exit)")
    sleep_us = round(sleep["sum_ns"] / 1000)
    rp = prof["provenance"]
    prov = collections.OrderedDict()
    prov["status"] = ("measured: derived from the recording recordings/" + rec + " (scripts/named-workloads.py, "
                      "idle_program; docs/workloads.md, \"idle\"): an idle guest's user space is a process that "
                      "sleeps, and its only recurring event is that sleep; the guest kernel's own housekeeping "
                      "(timers, kworkers, RCU) is not a program and is not in it (derivation.not_derived)")
    prov["recording"] = f"recordings/{rec}"
    prov["op"] = "none: the program does no work ([[vm]] without ops)"
    for k in ("command", "date", "machine", "tool", "tracer", "wall_s"):
        if k in rp:
            prov[k] = rp[k]
    prov["ops"] = None
    prov["derivation"] = collections.OrderedDict([
        ("method", f"the thread with comm {IDLE_COMM!r} (the other recorded threads are scripts/measure-real.sh's "
                   "shell and tools): its one block, a timer sleep ended by the interrupt, is the cycle; its CPU "
                   "lies outside that sleep (lifetime - sleep >= CPU), so it is start-up and exit, not written"),
        ("thread", collections.OrderedDict([
            ("tid", t["tid"]), ("cpu_ns", t["cpu_ns"]), ("lifetime_ns", life), ("sleep_ns", sleep["sum_ns"]),
            ("page_faults", t["page_faults"]), ("woken_by", [w["waker"] for w in t.get("woken_by", [])])])),
        ("not_derived", [
            "the guest kernel's housekeeping while idle (deferrable timers, vmstat and other kworkers, RCU, the "
            "soft-lockup watchdog): it is the kernel's, not the program's, and the recorder records the "
            "program's threads; on this shared machine it is driven by the other users' load and cannot be "
            "measured as an idle guest's (docs/workloads.md, \"idle\")",
            "the start-up and exit CPU (cpu_ns above), done once"]),
    ])
    prog = collections.OrderedDict([
        ("provenance", prov),
        ("global", collections.OrderedDict([("duration", 10)])),
        ("tasks", collections.OrderedDict([
            (f"t0_{IDLE_COMM}", collections.OrderedDict([("loop", -1), ("sleep", sleep_us)]))])),
    ])
    header = (f"/* MEASURED (provenance below): derived from recordings/{rec}\n"
              f" * ({' '.join(rp['command'])}; {rp.get('date', '?')}) by scripts/named-workloads.py\n"
              f" * (idle_program) from {path}: one thread that sleeps the measured\n"
              " * sleep; no ops. Do not edit: re-derive. */\n")
    body = json.dumps(prog, indent=1)
    return body[0] + "\n" + header + body[1:] + "\n"


def source(name):
    """recordings/REC/FILE the named workload is written from."""
    return f"recordings/{NAMED[name][0]}/{SOURCE.get(name, 'guest.json')}"


def check_source(name):
    """recordings/REC/FILE scripts/check-recordings.py --guest holds against
    the recording: the named workload's own source, except for a program
    written for another guest kernel than the recording's (mm-guest-ERA.json),
    whose recording-kernel form (mm-guest.json) is checked instead, and
    idle, whose program is written from the profile (workloads/idle.json)."""
    if SOURCE.get(name) == "profile.json":
        return f"workloads/{name}.json"
    src = source(name)
    return f"recordings/{NAMED[name][0]}/mm-guest.json" if "/mm-guest-" in src else src


def build(name):
    rec, op, counted = NAMED[name]
    if SOURCE.get(name) == "profile.json":
        return idle_program(rec)
    src = source(name)
    with open(src) as f:
        g = json.load(f, object_pairs_hook=collections.OrderedDict)
    prov = g["provenance"]
    cmd = " ".join(prov["command"])
    new = collections.OrderedDict()
    if SOURCE.get(name, "").startswith("mm-guest"):
        era = prov["derivation"]["guest_mm"]
        new["status"] = ("measured: the per-op program derived from the recording "
                         f"recordings/{rec} and its measured memory paths (recordings/{rec}/mm-profile.json, "
                         "scripts/derive-mm.py; docs/workloads.md, \"Memory paths\"), with the guest kernel's "
                         f"mmap_lock sections of the {era!r} era (derivation.guest_mm); what is not derived is "
                         "listed in derivation.not_derived")
    elif SOURCE.get(name) == "forks.json":
        new["status"] = ("measured: the build as processes (fork extension) derived from the recording "
                         f"recordings/{rec} (scripts/derive-kernbench.py; docs/workloads.md, \"kernbench: a build "
                         "as processes\"); the process tree is kbuild's, not recorded; what is not derived is "
                         "listed in derivation.not_derived")
    elif name in SOURCE:
        new["status"] = ("measured: the queue program derived from the recording "
                         f"recordings/{rec} and its counted queue messages (scripts/derive-queues.py; "
                         "docs/workloads.md, \"Queue messages: dedup and vips\"); what is not derived is listed "
                         "in derivation.not_derived")
    else:
        new["status"] = ("measured: the steady-state form of the program derived from the recording "
                         f"recordings/{rec} (oversub derive; docs/workloads.md, \"guest.json\"); what is not "
                         "derived is listed in derivation.steady.not_derived and derivation.not_captured")
    new["recording"] = f"recordings/{rec}"
    new["op"] = f"{op}; counted by {counted}; [[vm]] ops = \"t*\" weights each t* task's phase loops by its oversub.ops_per_loop"
    new.update(prov)
    g["provenance"] = new
    body = json.dumps(g, indent=1)
    header = (f"/* MEASURED (provenance below): derived from recordings/{rec}\n"
              f" * ({cmd}; {prov.get('date', '?')}) by scripts/named-workloads.py from\n"
              f" * {src}. One op = {op}. Do not edit: re-derive. */\n")
    return body[0] + "\n" + header + body[1:] + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name in NAMED:
        text = build(name)
        path = f"workloads/{name}.json"
        write_or_check(path, text, check, stale)
    # Every workloads/*.json is written from a recording (issue 24): a file
    # this script does not write has no recording behind it.
    unknown = sorted(f for f in os.listdir("workloads") if f.endswith(".json") and f[:-5] not in NAMED)
    if unknown:
        print("not derived from a recording (add it to NAMED): " + ", ".join(f"workloads/{f}" for f in unknown))
    if stale:
        print("stale (run python3 scripts/named-workloads.py): " + ", ".join(stale))
    return 1 if stale or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
