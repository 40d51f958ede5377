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
    "ebizzy-M": {"tlb_shootdowns/op": _FLUSH.format(f="0.93", r="0.19", b="0.30")},
    "ebizzy-M-64": {"tlb_shootdowns/op": _FLUSH.format(f="1.01", r="0.14", b="0.17")},
    "ebizzy-M-80": {"tlb_shootdowns/op": _FLUSH.format(f="1.01", r="0.18", b="0.25")},
}
# x86-64 syscall numbers of the call sites (arch/x86/entry/syscalls).
SYSCALLS = {9: "mmap", 10: "mprotect", 11: "munmap", 12: "brk", 25: "mremap", 28: "madvise"}
FAULT = -1
MADVISE = 28
# Rare events (below one per op) are written over a period of ops: at most
# this many ops (a rate below 1 / MAX_PERIOD per op is not written and is
# listed in not_derived).
MAX_PERIOD = 1000
# Ops of a period that carry its rare events (program size: at most
# 2 x GROUPS phases of one op's events each).
GROUPS = 16
TIMER_SLACK_US = 0.001
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
    return q


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
    fault_hold = pooled["p50_ns"] / 1000
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
    flush_rate = sum(v for k, v in flush.items() if k.split("/")[0] in ("madvise", "munmap")
                     and k.split("/")[1] == "3")
    kinds.append(("flush", flush_rate, 0.0, None))
    written, dropped = [], []
    for name, rate, hold, mode in kinds:
        if rate >= 1 / MAX_PERIOD:
            written.append((name, rate, hold, mode))
        elif rate > 0:
            dropped.append({"site": name, "per_op": rate})
    fractional = [r - math.floor(r) for _n, r, _h, _m in written if r - math.floor(r) >= 1 / MAX_PERIOD]
    period = min(MAX_PERIOD, max([1] + [round(1 / f) for f in fractional]))
    counts = [(name, round(rate * period), hold, mode) for name, rate, hold, mode in written]
    held_per_op = sum(n * h for _name, n, h, _m in counts) / period
    run_us = max(cpu_us - held_per_op, 0.0)

    # Each kind's whole part is in every op; its fractional part (n_k
    # events per period) goes to GROUPS special ops evenly spaced over the
    # period (the last op of each 1/GROUPS of it), spread over them evenly.
    groups = min(period, GROUPS)
    special = {(g + 1) * period // groups - 1: g for g in range(groups)}

    def op_events(i):
        """The events of op i of the period, in the real op's order: the
        copy's faults, the search, free's madvise and its flush, then the
        rare writers (malloc's heap growth and trims)."""
        per = {}
        for name, n, _hold, _mode in counts:
            whole, frac = divmod(n, period)
            g = special.get(i)
            per[name] = whole + (frac // groups + (1 if spread(g, frac % groups, groups) else 0)
                                 if g is not None else 0)
        ev = []
        hold = dict((name, (h, mode)) for name, _n, h, mode in counts)
        nf = per.get("fault", 0)
        # The CPU between the sections: before each fault (the copy up to
        # it) as the section's work before the lock (`run` - `hold`,
        # fractional us allowed there, where rt-app's `run` is whole us);
        # the last piece (the search) before madvise the same way, or as a
        # `run` in an op without madvise.
        piece = run_us / (nf + 1)
        for k in range(nf):
            h = hold["fault"][0]
            ev.append(("syscall", {"lock": "mmap_lock", "kind": "rwsem_read", "run": round(piece + h, 3),
                                   "hold": round(h, 3)}))
        nm = per.get("madvise", 0)
        if nm == 0 and round(piece) > 0:
            ev.append(("run", round(piece)))
        for j in range(nm):
            h = hold["madvise"][0]
            pre = piece if j == 0 else 0.0
            ev.append(("syscall", {"lock": "mmap_lock", "kind": "rwsem_read", "run": round(pre + h, 3),
                                   "hold": round(h, 3)}))
        for _ in range(per.get("flush", 0)):
            ev.append(("munmap", {"run": 0}))
        for name, _n, h, mode in counts:
            if name in ("fault", "madvise", "flush"):
                continue
            for _ in range(per[name]):
                h = round(h, 3)
                ev.append(("syscall", {"lock": "mmap_lock", "kind": mode, "run": h, "hold": h}))
        return ev

    phases = []
    for i in range(period):
        ev = op_events(i)
        if phases and phases[-1][0] == ev:
            phases[-1][1] += 1
        else:
            phases.append([ev, 1])
    ph = collections.OrderedDict()
    for k, (ev, n) in enumerate(phases):
        p = collections.OrderedDict([("loop", n)])
        for j, (key, v) in enumerate(ev):
            p[f"{key}{j}"] = v
        ph[f"p{k}"] = p
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
        ("method", "derive-mm 1: one task, instance = the derived threads of guest.json, one phase loop per op "
                   "(ops_per_loop 1); per op the measured CPU (guest.json's threads: CPU / op markers), the "
                   "sections of the guest kernel's mmap_lock at their measured rates per op and median holds "
                   "(mm-profile.json), the CPU left between them as runs, and a munmap event per measured flush"),
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
            ("p50_us", fault_hold), ("samples", pooled["count"]), ("pooled_over", pooled["recordings"]),
            ("is", "the median mmap_lock read hold of the page faults that took mmap_lock (fell back from the "
                   "per-VMA lock) in the memory-path runs of these recordings, pooled: the fault's work under "
                   "the lock (handle_mm_fault), what a <= 6.3 guest holds mmap_lock for on every fault; "
                   "mm-profile.json's fault_interval_ns (a fault, the copy of a page and the probe) bounds it")])),
        ("cpu_us_per_op", cpu_us),
        ("held_us_per_op", held_per_op),
        ("run_us_per_op", run_us),
        ("cpu_exceeded_by_sections_us", max(held_per_op - cpu_us, 0.0)),
        ("period_ops", period),
        ("rare_events", f"per kind, the whole part of its rate is in every op; the fractional part's "
                        f"events per period are spread evenly over {groups} ops spaced evenly over the period"),
        ("sections", [collections.OrderedDict([("site", n), ("per_op", c / period), ("measured_per_op", r),
                                               ("hold_us", h), ("kind", mo or "munmap")])
                      for (n, c, h, mo), (_n, r, _h, _m) in zip(counts, written)]),
        ("not_derived", [
            "rates below 1 / period_ops per op: " + json.dumps(dropped),
            "the part of a fault or madvise outside its section (exception entry, the flush's IPI wait "
            "inside the zap: the munmap event follows the section instead of ending inside it)",
            "the write part of munmap and brk before mmap_write_downgrade() and the read part after are "
            "two measured holds; each is written as its own section",
            "zone->lock: pages moved under it per op are in mm-profile.json, its hold is not traceable here "
            "(no kprobes); the page allocator's per-CPU lists take it about once per batch",
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
