#!/usr/bin/env python3
"""Memory-path programs of the ebizzy recordings (docs/workloads.md, "Memory
paths: mmap_lock, page faults, shootdowns"): from recordings/REC/mm.txt
(bpftrace scripts/measure-mm.bt beside an untraced run of the program,
written by scripts/measure-real.sh --mm) and recordings/REC/guest.json (the
recorder's steady-state form: the threads and their measured CPU per op):

* recordings/REC/mm-profile.json: the measured memory paths per op, with
  provenance: mmap_lock acquisitions by call site kind (a page fault, or the
  syscall: madvise, mmap, mprotect, munmap, brk) and mode, their hold and
  wait times (count, mean, p50, p90, p99 from the probe's 250 ns buckets),
  page faults per op and the time between two faults of one op, madvise's
  duration, TLB flushes by call site and reason, pages moved under
  zone->lock;
* recordings/REC/mm-guest.json and mm-guest-ERA.json: the program, one
  phase loop per op (every derived thread of guest.json is one instance of
  the same task: ebizzy's threads all run the same op), with the guest
  kernel's mmap_lock sections: in mm-guest.json those the recording's
  kernel took ("recorded": the form scripts/check-recordings.py --guest
  holds against the recording), in mm-guest-ERA.json those of the era the
  named workload is run in (GUEST_MM below: a guest-kernel version switch,
  because the recording's 6.18 kernel takes mmap_lock for almost none of
  them):
    "mmap_sem" (Linux <= 6.3: 3.6, 4.16-5.3, the history rows' guests):
      every page fault takes mmap_lock for read (do_user_addr_fault) for
      the measured fault's hold, MADV_DONTNEED for read for the measured
      zap;
    "per_vma" (6.4 to at least 6.12: lock_vma_under_rcu() for anonymous
      faults): faults take the VMA's own lock (one VMA per thread's heap
      here: never contended; no section), except the measured fallback
      rate, which takes mmap_lock for read; MADV_DONTNEED for read
      (madvise_need_mmap_write() is 0 for it in 6.12's mm/madvise.c).
  In both, the measured writers (mmap, mprotect, munmap, brk) take it for
  write at their measured rates and holds, and each measured flush
  (tlb:tlb_flush of the madvise and munmap call sites, any reason: the
  targets are the guest model's, its mm's other vCPUs not in lazy TLB) is
  a `munmap` event after the section.

    python3 scripts/derive-mm.py ebizzy-M-64 ...   # write both files
    python3 scripts/derive-mm.py --check REC ...   # exit 1 if stale

Exit 2 with one line naming the file and what is wrong when a recording
lacks what the derivation needs.
"""
import collections
import json
import math
import sys

from generated_files import write_or_check
import spin_sections

# The guest kernel whose mmap_lock use the program is written for, per
# recording (module docstring): the history scenarios' guests are of the
# mmap_sem era (PV TLB flush 4.16, PV sched yield and queue-head boost 5.3,
# the 2012 rework 3.6); ebizzy-M is the headline scenarios' 6.12 guest.
GUEST_MM = {
    "ebizzy-M": "per_vma",
    "ebizzy-M-64": "mmap_sem",
    "ebizzy-M-80": "mmap_sem",
    "ebizzy-64": "mmap_sem",
}
DERIVE = list(GUEST_MM)
# Figures of scripts/check-recordings.py --guest that are shown, not judged,
# with the measured reason: REC -> {metric: reason}.
_FLUSH = ("every madvise that zapped pages flushed (tlb:tlb_flush reason 3 from madvise: {f} per op in "
          "mm-profile.json) and the program writes each as a munmap event; the simulated guest's other vCPU runs "
          "only the program, so each flush IPIs it. On this shared machine the other CPU ran another program "
          "(load average 15-60 from other users) or the recorder's trace reader during most of them: remote IPIs "
          "{r} per op under oversub record (profile.json), {b} per op with only bpftrace attached (mm.txt). "
          "Which CPUs a flush reaches is the machine's, not the program's")
KNOWN_GAPS = {
    "ebizzy-M": {"tlb_shootdowns/op": _FLUSH.format(f="0.94", r="0.25", b="0.30")},
    "ebizzy-M-64": {"tlb_shootdowns/op": _FLUSH.format(f="1.01", r="0.14", b="0.13")},
    "ebizzy-M-80": {"tlb_shootdowns/op": _FLUSH.format(f="1.02", r="0.19", b="0.16")},
}
# x86-64 syscall numbers of the call sites (arch/x86/entry/syscalls).
SYSCALLS = {9: "mmap", 10: "mprotect", 11: "munmap", 12: "brk", 25: "mremap", 28: "madvise"}
FAULT = -1
MADVISE = 28
TIMER_SLACK_US = 0.001
# The program's threads' comm in profile.json (its spinlock contention).
SPIN_COMM = "ebizzy"
# Most blocks per op of a recording the per-op form takes (see program()).
MAX_BLOCKS_PER_OP = 0.01


def die(msg):
    print(f"derive-mm: {msg}", file=sys.stderr)
    sys.exit(2)


def guest_file(rec, era):
    """recordings/REC/mm-guest.json (the recording's own kernel, checked
    against it) or mm-guest-ERA.json (the named workload's guest kernel)."""
    return f"recordings/{rec}/mm-guest.json" if era == "recorded" else f"recordings/{rec}/mm-guest-{era}.json"


def parse_mm(path):
    """bpftrace -f json lines -> (run header, {map: data})."""
    run, maps = None, {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    die(f"{path}:{n}: not a JSON line")
                if j.get("type") == "oversub_mm_run":
                    run = j["data"]
                elif isinstance(j.get("data"), dict) and j.get("type") in ("map", "hist", "stats"):
                    maps.update(j["data"])
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if run is None:
        die(f"{path}: no oversub_mm_run header line (written by scripts/measure-real.sh --mm)")
    for m in ("@ops", "@faults", "@acq", "@hold_lin", "@sys"):
        if m not in maps:
            die(f"{path}: map {m} missing (scripts/measure-mm.bt prints it)")
    if maps["@ops"] <= 0:
        die(f"{path}: @ops: {maps['@ops']}: the program made no op markers (OVERSUB_OP_MARK=1)")
    return run, maps


def quantiles(buckets):
    """count, p50, p90, p99 (ns, bucket midpoints; the top bucket's floor)
    of a bpftrace lhist."""
    total = sum(b["count"] for b in buckets)
    out = {"count": total}
    for q in (50, 90, 99):
        c, v = 0, None
        for b in buckets:
            c += b["count"]
            if total and c >= total * q / 100:
                lo = b.get("min", 0)
                v = (lo + b["max"] + 1) / 2 if "max" in b else lo
                break
        out[f"p{q}_ns"] = v
    return out


def kind_name(k):
    return "fault" if k == FAULT else SYSCALLS.get(k, f"syscall_{k}")


def summarize(rec, run, m):
    ops = m["@ops"]
    acq = {}
    for key, n in sorted(m["@acq"].items(), key=lambda kv: tuple(int(x) for x in kv[0].split(","))):
        k, w = (int(x) for x in key.split(","))
        h = m.get("@hold_ns", {}).get(key, {})
        wt = m.get("@wait_ns", {}).get(key, {})
        e = collections.OrderedDict([
            ("site", kind_name(k)), ("mode", "write" if w else "read"), ("acquisitions", n),
            ("per_op", n / ops),
            ("hold_ns", collections.OrderedDict(
                [("mean", h.get("average"))] + list(quantiles(m["@hold_lin"].get(key, [])).items()))),
            ("wait_mean_ns", wt.get("average")),
        ])
        acq[f"{kind_name(k)}/{e['mode']}"] = e
    flushes = collections.OrderedDict()
    for key, n in sorted(m.get("@flush_any", {}).items()):
        k, r = (int(x) for x in key.split(","))
        flushes[f"{kind_name(k)}/{r}"] = n / ops
    madv = {("remote" if r == "1" else "local"): quantiles(b) for r, b in m.get("@madv_ns", {}).items()}
    return collections.OrderedDict([
        ("schema", "oversub-mm-profile/1"),
        ("recording", f"recordings/{rec}"),
        ("provenance", collections.OrderedDict([
            ("measured_by", f"bpftrace -f json {run['probe']} ebizzy beside {run['command']} "
                            "(scripts/measure-real.sh --mm; not under oversub record)"),
            ("kernel", run["kernel"]), ("machine", run["machine"]), ("date", run["date"]),
            ("load_average", run["load"]),
            ("raw", f"recordings/{rec}/mm.txt"),
            ("derived_by", "scripts/derive-mm.py"),
            ("note", "wall times: a holder preempted on this shared machine lengthens the tail (the means); "
                     "the program uses the medians. Probe handlers run inside the timed spans (~0.3-0.9 us)."),
        ])),
        ("ops", ops),
        ("page_faults_per_op", m["@faults"] / ops),
        ("fault_interval_ns", quantiles(m.get("@fault_gap_ns", []))),
        ("fault_interval_is", "time between two user page faults of one thread inside one op: the fault "
                              "plus the user code between (ebizzy: copying one 4 KiB page) plus the probe"),
        ("mmap_lock", acq),
        ("downgrades", {kind_name(int(k)): n for k, n in m.get("@downgrades", {}).items()}),
        ("syscalls_per_op", {kind_name(int(k)): n / ops for k, n in m["@sys"].items() if int(k) in SYSCALLS}),
        ("madvise_ns", madv),
        ("tlb_flushes_per_op", flushes),
        ("tlb_flush_reasons", "2 local shootdown, 3 local mm shootdown, 4 remote IPI send, 1 remote "
                              "shootdown (the IPI's receiver), 0 task switch, 5 remote wrong CPU"),
        ("zone_lock_pages_per_op", {"alloc": m.get("@zone_locked", 0) / ops,
                                    "free": m.get("@pcpu_drain", 0) / ops}),
        ("ipi_cpumask_by_callsite", m.get("@ipi_mask", {})),
    ])


def hold_us(prof, key):
    e = prof["mmap_lock"].get(key)
    if not e or not e["hold_ns"]["p50_ns"]:
        return None
    return e["hold_ns"]["p50_ns"] / 1000


def load_guest(rec):
    path = f"recordings/{rec}/guest.json"
    try:
        with open(path) as f:
            return json.load(f, object_pairs_hook=collections.OrderedDict)
    except OSError as e:
        die(f"{path}: {e.strerror}")


def spread(i, n, p):
    """n events spread evenly over p ops starting with op 0: is op i one?"""
    return (i * n) % p < n


def pooled_fault_hold(runs):
    """The page fault's mmap_lock hold (read) pooled over the recordings'
    runs: the same kernel path in the same kernel, timed only when a fault
    fell back from the per-VMA lock (a few hundred per run), so one run's
    median alone is noisy (1.4-2.9 us over these four)."""
    buckets = collections.OrderedDict()
    for rec, (_run, m) in runs.items():
        for b in m["@hold_lin"].get(f"{FAULT},0", []):
            key = (b.get("min"), b.get("max"))
            buckets[key] = buckets.get(key, 0) + b["count"]
    lh = [dict([("count", n)] + ([("min", lo)] if lo is not None else []) + ([("max", hi)] if hi is not None else []))
          for (lo, hi), n in sorted(buckets.items(), key=lambda kv: (kv[0][0] or 0))]
    q = quantiles(lh)
    if not q["count"]:
        die("recordings/*/mm.txt: no page fault took mmap_lock in any run: no measured fault hold")
    q["recordings"] = list(runs)
    gaps = [quantiles(m["@fault_gap_ns"])["p50_ns"] for _run, m in runs.values() if m.get("@fault_gap_ns")]
    q["interval_p50_ns"] = min((g for g in gaps if g), default=None)
    return q


def spin_kinds(rec, cpu_us):
    """The spinlock sections per op of the program's comm, one kind per
    hold class (scripts/spin_sections.py), and the derivation's figures."""
    path = f"recordings/{rec}/profile.json"
    try:
        with open(path) as f:
            p = json.load(f)
        classes, rates, info = spin_sections.derive(p, path)
    except OSError as e:
        die(f"{path}: {e.strerror}")
    except ValueError as e:
        die(f"{path}: {e}")
    except spin_sections.Missing as e:
        die(str(e))
    if SPIN_COMM not in rates:
        die(f"{path}: threads: no {SPIN_COMM} thread listed")
    per_op = rates[SPIN_COMM] * cpu_us * 1e-6
    info["comm"] = SPIN_COMM
    info["per_op"] = round(per_op, 4)
    return [(f"spin/{h}", per_op * q, h, "spin") for h, q in classes], info


def program(rec, prof, guest, era, pooled):
    gpath = f"recordings/{rec}/guest.json"
    threads = [t for t in guest["provenance"]["derivation"]["threads"]]
    markers = sum(t["op_markers"] for t in threads)
    if markers <= 0:
        die(f"{gpath}: derivation.threads: no op markers: the per-op form needs the program's markers")
    # The per-op form is for threads that run their ops back to back: the
    # few blocks the recording saw (a thread woken by another one, once or
    # twice in a run: waits on mmap_lock or an arena's mutex on 2 CPUs) are
    # left to the model's own lock waits.
    blocks = sum(round(t["blocks_per_cycle"] * t["cycles"]) for t in threads)
    yields = sum(round(t["yields_per_cycle"] * t["cycles"]) for t in threads)
    if blocks > MAX_BLOCKS_PER_OP * markers or yields:
        die(f"{gpath}: derivation.threads: {blocks} blocks and {yields} yields in {markers} ops: the per-op "
            f"form takes threads that block at most {MAX_BLOCKS_PER_OP} times per op and never yield")
    cpu_us = sum(t["cpu_ns"] for t in threads) / markers / 1000
    # The pooled hold of the faults that fell back to mmap_lock, bounded
    # by the smallest of the runs' median times between two faults of an
    # op (a fault, the copy of a page and the probe: a fault cannot hold
    # the lock longer). The fallbacks are a few hundred faults of one kind
    # (a VMA's first fault after mmap or brk); under the load of a shared
    # machine their wall-clock median passed that bound (3.6 us against
    # 2.9-3.6 us in the 2026-11-27 18:49-18:57 runs, load 21-53).
    interval = pooled["interval_p50_ns"]
    fault_hold = min(pooled["p50_ns"], interval or pooled["p50_ns"]) / 1000
    madv_local = prof["madvise_ns"].get("local", {}).get("p50_ns")
    if madv_local is None:
        die(f"recordings/{rec}/mm.txt: @madv_ns[0]: no madvise without a remote flush was timed")
    sys_rate = prof["syscalls_per_op"]
    flush = prof["tlb_flushes_per_op"]
    # (name, per op, events): every kind of section, with its rate.
    kinds = []
    if era == "mmap_sem":
        kinds.append(("fault", prof["page_faults_per_op"], fault_hold, "rwsem_read"))
    else:
        kinds.append(("fault", prof["mmap_lock"].get("fault/read", {}).get("per_op", 0), fault_hold, "rwsem_read"))
    if era == "recorded":
        # The recording's own kernel: madvise takes mmap_lock only as often
        # as it was seen to (6.18 takes the VMA's lock for MADV_DONTNEED).
        e = prof["mmap_lock"].get("madvise/read", {})
        kinds.append(("madvise", e.get("per_op", 0), hold_us(prof, "madvise/read") or 0.0, "rwsem_read"))
    else:
        kinds.append(("madvise", sys_rate.get("madvise", 0), madv_local / 1000, "rwsem_read"))
    for site in ("mmap", "mprotect", "munmap", "brk", "mremap"):
        for mode in ("write", "read"):
            e = prof["mmap_lock"].get(f"{site}/{mode}")
            h = hold_us(prof, f"{site}/{mode}")
            if e and h is not None:
                kinds.append((f"{site}/{mode}", e["per_op"], h, f"rwsem_{mode}"))
    # Guest kernel spinlock sections (scripts/spin_sections.py): the
    # recording's contended spinlock waits, per hold class.
    spin, spin_info = spin_kinds(rec, cpu_us)
    kinds.extend(spin)
    ops = prof["ops"]
    # The flushes of the zaps (tlb:tlb_flush of any reason from the call
    # site: every zap that flushed). In an era whose section of that site
    # takes mmap_lock, the flush is inside it (`flush` of the section: 6.12
    # madvise_dontneed_free() -> zap_page_range_single() -> tlb_finish_mmu()
    # before mmap_read_unlock(); munmap's after mmap_write_downgrade(), in
    # vms_complete_munmap_vmas() before mmap_read_unlock()); otherwise (the
    # recording's kernel, whose MADV_DONTNEED takes the VMA's lock) it is a
    # `munmap` event of its own.
    flush_sites = {"madvise": "madvise", "munmap": "munmap/read"}
    flush_rate = {site: sum(v for k, v in flush.items() if k == f"{site}/3") for site in flush_sites}
    sections, standalone = [], {}
    for name, rate, hold, mode in kinds:
        site = next((s for s, sec in flush_sites.items() if sec == name and era != "recorded"), None)
        f = min(flush_rate[site], rate) if site else 0.0
        if f > 0:
            sections.append((name, f, hold, mode, True))
        if rate - f > 0:
            sections.append((name, rate - f, hold, mode, False))
        if site:
            standalone[site] = flush_rate[site] - f
    for site in flush_sites:
        if site not in standalone:
            standalone[site] = flush_rate[site]
    flush_alone = sum(standalone.values())

    def times(rate):
        """The rate as `times` per `per_loops` = the recording's ops (the
        measured count over the measured ops)."""
        return round(rate * ops)

    written = [x for x in sections if times(x[1]) > 0]
    held_per_op = sum(times(r) * h for _n, r, h, _m, _f in written) / ops
    run_us = max(cpu_us - held_per_op, 0.0)
    fault = next((x for x in written if x[0] == "fault"), None)
    nf = times(fault[1]) / ops if fault else 0.0
    # The CPU between the sections: before each fault (the copy up to it)
    # as the section's work before the lock when there is a fault per op
    # or more (`run` - `hold`, fractional us allowed there), the rest (the
    # search) as a `run` before madvise.
    piece = run_us / (nf + 1) if nf >= 1 else 0.0

    def rep(rate):
        n = times(rate)
        return [] if n == ops else [("times", n), ("per_loops", ops)]

    ev = []
    for name, rate, hold, mode, fl in written:
        pre = piece if name == "fault" else 0.0
        if mode == "spin":
            e = spin_sections.event(hold)
            e.update(rep(rate))
            ev.append(("syscall", e))
            continue
        e = collections.OrderedDict([("lock", "mmap_lock"), ("kind", mode), ("run", round(pre + hold, 3)),
                                     ("hold", round(hold, 3))] + ([("flush", 1)] if fl else []) + rep(rate))
        ev.append(("syscall", e))
        if name == "fault":
            ev.append(("run", round(run_us - nf * piece)))
    if not fault:
        ev.insert(0, ("run", round(run_us)))
    if times(flush_alone) > 0:
        ev.append(("munmap", collections.OrderedDict([("run", 0)] + rep(flush_alone))))
    p0 = collections.OrderedDict([("loop", 1)])
    for j, (key, v) in enumerate(ev):
        p0[f"{key}{j}"] = v
    ph = collections.OrderedDict([("p0", p0)])
    task = collections.OrderedDict([
        ("instance", len(threads)), ("delay", 0), ("loop", -1),
        ("oversub", collections.OrderedDict([("ops_per_loop", 1.0), ("timer_slack", TIMER_SLACK_US)])),
        ("phases", ph),
    ])
    gp = guest["provenance"]
    prov = collections.OrderedDict((k, gp[k]) for k in ("command", "date", "machine", "ops", "ops_source",
                                                        "profile", "tool", "tracer", "wall_s") if k in gp)
    prov["mm"] = f"recordings/{rec}/mm-profile.json ({prof['provenance']['date']}, {prof['provenance']['kernel']})"
    prov["derived_by"] = "scripts/derive-mm.py"
    prov["derivation"] = collections.OrderedDict([
        ("method", "derive-mm 2: one task, instance = the derived threads of guest.json, one phase of one "
                   "loop per op (ops_per_loop 1); per op the measured CPU (guest.json's threads: CPU / op "
                   "markers), the sections of the guest kernel's mmap_lock at their measured rates per op and "
                   "median holds (mm-profile.json), each written once with `times` per `per_loops` = its "
                   "measured count over the measured ops (the interpreter's Repeat: spread evenly over each "
                   "thread's loops), the CPU left between them as runs, and each measured flush of a zap inside "
                   "its section (`flush`) where the era's section takes mmap_lock, else a munmap event; the guest "
                   "kernel's spinlock sections at the rate and hold classes derived from the recording's "
                   "contended spinlock waits (derivation.spin, scripts/spin_sections.py), the same way"),
        ("guest_mm", era),
        ("guest_mm_is", {"recorded": "the recording's kernel (" + prof["provenance"]["kernel"] + "): the "
                                     "mmap_lock acquisitions measured, at their measured rates (faults and "
                                     "MADV_DONTNEED take it only when they fall back from the VMA's lock); "
                                     "the form scripts/check-recordings.py --guest holds against the recording",
                         "mmap_sem": "Linux <= 6.3: every user page fault takes mmap_lock for read "
                                     "(do_user_addr_fault), MADV_DONTNEED for read",
                         "per_vma": "Linux 6.4-6.12: anonymous faults take the VMA's lock "
                                    "(lock_vma_under_rcu; only the measured fallback rate takes mmap_lock), "
                                    "MADV_DONTNEED mmap_lock for read"}[era]),
        ("threads", len(threads)),
        ("fault_hold", collections.OrderedDict([
            ("p50_us", fault_hold), ("pooled_p50_us", pooled["p50_ns"] / 1000),
            ("fault_interval_p50_us", (interval or 0) / 1000),
            ("samples", pooled["count"]), ("pooled_over", pooled["recordings"]),
            ("is", "the median mmap_lock read hold of the page faults that took mmap_lock (fell back from the "
                   "per-VMA lock) in the memory-path runs of these recordings, pooled: the fault's work under "
                   "the lock (handle_mm_fault), what a <= 6.3 guest holds mmap_lock for on every fault; "
                   "the runs' median fault_interval_ns (mm-profile.json: a fault, the copy of a page and the "
                   "probe) bounds it: p50_us is the pooled median or the smallest of those, whichever is "
                   "smaller")])),
        ("cpu_us_per_op", cpu_us),
        ("held_us_per_op", held_per_op),
        ("run_us_per_op", run_us),
        ("cpu_exceeded_by_sections_us", max(held_per_op - cpu_us, 0.0)),
        ("measured_ops", ops),
        ("sections", [collections.OrderedDict([("site", n), ("per_op", times(r) / ops), ("hold_us", h),
                                               ("kind", mo), ("flush_inside", fl)])
                      for n, r, h, mo, fl in written]
                     + ([collections.OrderedDict([("site", "flush"), ("per_op", times(flush_alone) / ops),
                                                  ("hold_us", 0.0), ("kind", "munmap"),
                                                  ("flush_inside", False)])]
                        if times(flush_alone) else [])),
        ("spin", spin_info),
        ("not_derived", [
            "the part of a fault or madvise outside its section (exception entry)",
            "the write part of munmap and brk before mmap_write_downgrade() and the read part after are "
            "two measured holds; each is written as its own section, each spread over the loops at its own "
            "rate (so a read part may fall in another op than its write part), munmap's flush inside its "
            "read part",
            "the flushes of mprotect and brk (tlb:tlb_flush from those call sites: " + json.dumps(
                {k: v for k, v in flush.items() if k.split("/")[0] in ("mprotect", "brk")}) + " per op)",
            "which spinlock a spin section is (zone->lock, lru_lock, ...): the recording's contended "
            "spinlock waits are pooled on one lock (derivation.spin)",
            "per-VMA lock sections (never contended here: each thread's arena is its own VMA)",
            "start-up and exit (the threads loop their op from time 0)",
            f"the recording's {blocks} blocks in {markers} ops (threads woken by another thread; on 2 CPUs, "
            "waits on mmap_lock or an arena's mutex): the model's own lock waits stand for them",
        ]),
    ])
    return collections.OrderedDict([
        ("provenance", prov),
        ("global", guest["global"]),
        ("tasks", collections.OrderedDict([("t_ebizzy", task)])),
    ])


def main():
    args = sys.argv[1:]
    check = "--check" in args
    recs = [a for a in args if a != "--check"] or DERIVE
    stale = []
    for rec in recs:
        if rec not in GUEST_MM:
            die(f"{rec}: no memory-path derivation (known: {', '.join(DERIVE)})")
    runs = collections.OrderedDict((rec, parse_mm(f"recordings/{rec}/mm.txt")) for rec in DERIVE)
    pooled = pooled_fault_hold(runs)
    for rec in recs:
        run, m = runs[rec]
        prof = summarize(rec, run, m)
        write_or_check(f"recordings/{rec}/mm-profile.json", json.dumps(prof, indent=1) + "\n", check, stale)
        guest = load_guest(rec)
        for era in ("recorded", GUEST_MM[rec]):
            prog = program(rec, prof, guest, era, pooled)
            write_or_check(guest_file(rec, era), json.dumps(prog, indent=1) + "\n", check, stale)
    if stale:
        print("derive-mm: stale: " + " ".join(stale) + " (python3 scripts/derive-mm.py)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
