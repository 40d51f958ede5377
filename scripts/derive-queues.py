#!/usr/bin/env python3
"""Queue programs from recordings with their queue messages (docs/workloads.md,
"Queue messages: dedup and vips"): recordings/REC/queues.json from
recordings/REC/profile.json (oversub record) and recordings/REC/queues.txt
(bpftrace uprobes in the same run, scripts/measure-queues-REC.bt, written by
scripts/measure-real.sh).

The derivation of `oversub record` turns every recorded wakeup into a signal
on a condition variable: it knows who woke whom, not how many items a wakeup
carried, and rt-app conditions lose a signal nobody waits for. The uprobe
counts say how many items each thread put into and took from each queue (or
semaphore) and in what batches; with them a pipeline is written with the
program IR's counted queues (docs/workloads.md, "Queues"), which lose nothing,
and each thread's measured CPU per item. The result is a steady-state guest
program (every t* task loops for ever, as recordings/REC/guest.json; each
task's oversub.ops_per_loop makes [[vm]] ops = "t*" count the real program's
ops).

    python3 scripts/derive-queues.py dedup vips          # write queues.json
    python3 scripts/derive-queues.py --check dedup vips  # exit 1 if stale

Exit 2 with one line naming the file and what is wrong when a recording
lacks what a derivation needs.
"""
import collections
import json
import re
import sys

from generated_files import write_or_check

# dedup.c's queue capacity (QUEUE_CAP, 2^20 items): a constant of the
# program, read from its source (it never binds: see derive_dedup).
DEDUP_QUEUE_CAP = 1 << 20
# vips: a counting semaphore has no bound; the IR's largest capacity.
SEM_CAP = 1 << 32
TIMER_SLACK_US = 0.001
# Figures of scripts/check-recordings.py --guest that are shown, not judged,
# with the measured reason (docs/workloads.md, "Queue messages"): REC ->
# {metric: reason}, metric as in recordings/check/*/check.json's known_gaps
# ("cpu_ns/op", "hogs throughput", "hogs wakeups/op", ...). None today: vips'
# part B throughput and wakeups were one while its strips' go sat at fixed
# loops of each worker (the pool stalled at the write buffers' bound with 2
# hogs, 0.54 against the real 0.99); with the flush on the pool's allocation
# count (the count event) they are judged.
KNOWN_GAPS = {}


def die(msg):
    print(f"derive-queues: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_bt(path):
    """bpftrace's map dump: @name[k1, k2, ...]: value -> {name: {keys: value}}."""
    maps = collections.defaultdict(dict)
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"@(\w+)\[(.*)\]: (.*)$", line.strip())
                if m:
                    key = tuple(k.strip().strip('"') for k in m.group(2).split(","))
                    maps[m.group(1)][key] = m.group(3).strip()
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return maps


def load(rec):
    try:
        with open(f"recordings/{rec}/profile.json") as f:
            prof = json.load(f)
        with open(f"recordings/{rec}/guest.json") as f:
            guest = json.load(f, object_pairs_hook=collections.OrderedDict)
    except (OSError, ValueError) as e:
        die(f"recordings/{rec}: {e}")
    return prof, guest, parse_bt(f"recordings/{rec}/queues.txt")


def threads_by_tid(prof):
    return {t["tid"]: t for t in prof["threads"]}


def us(ns):
    return max(1, round(ns / 1000))


def task(phases, ops_per_loop):
    t = collections.OrderedDict()
    t["loop"] = -1
    t["oversub"] = collections.OrderedDict([("ops_per_loop", ops_per_loop), ("timer_slack", TIMER_SLACK_US)])
    t["phases"] = phases
    return t


def events(*evs):
    """An ordered phase body from (key, value) pairs, keys suffixed 0.. as rt-app does."""
    out = collections.OrderedDict()
    out["loop"] = 1
    for i, (k, v) in enumerate(evs):
        out[f"{k}{i}"] = v
    return out


def munmap_phases(body, per_loop):
    """A phase body with the stage's measured TLB shootdowns per loop as
    munmap events: a rate r < 1 is one munmap in every round(1/r)-th loop
    (a phase of n-1 loops without, then one with), r >= 1 round(r) munmaps
    each loop (run 0: the unmapping's kernel CPU is in the measured run)."""
    evs = list(body)
    if per_loop <= 0:
        return collections.OrderedDict([("p0", events(*evs))]), 0, 0
    if per_loop >= 1:
        k = round(per_loop)
        return collections.OrderedDict([("p0", events(*(evs + [("munmap", {"run": 0})] * k)))]), 1, k
    n = max(1, round(1 / per_loop))
    ph = collections.OrderedDict()
    if n > 1:
        ph["p0"] = events(*evs)
        ph["p0"]["loop"] = n - 1
    ph[f"p{len(ph)}"] = events(*(evs + [("munmap", {"run": 0})]))
    return ph, n, 1


def shootdowns(t):
    return t.get("tlb_flush", {}).get("remote_send_ipi", {}).get("events", 0)


def derive_dedup(prof, m):
    """The project's dedup (programs/dedup/dedup.c): per input pass,
    fragment -> refine -> dedup -> compress / reorder, the middle stages in
    groups sharing one queue, and the next pass once reorder has written the
    last chunk. From queues.txt: which thread ran which stage (uprobes on the
    stage functions), the items each stage put and took and in what batches;
    from profile.json: each stage's CPU and TLB shootdowns."""
    stage = {int(k[0]): v for k, v in m["stage"].items()}
    if not stage:
        die("recordings/dedup/queues.txt: no @stage entries (uprobes on dedup's stage functions)")
    tids = threads_by_tid(prof)
    st = collections.defaultdict(lambda: collections.Counter())
    queue_getter = {}
    for (tid, q), c in m["get"].items():
        s = stage.get(int(tid))
        queue_getter[q] = s
        st[s]["gets"] += int(c)
        st[s]["got"] += int(m["get_items"][(tid, q)])
        st[s]["in_queues_" + q] = 1
    for (tid, q), c in m["put"].items():
        s = stage.get(int(tid))
        st[s]["puts"] += int(c)
        st[s]["put"] += int(m["put_items"][(tid, q)])
        st[s]["put_to_" + str(queue_getter.get(q))] += int(m["put_items"][(tid, q)])
    for tid, s in stage.items():
        t = tids.get(tid)
        if t is None:
            die(f"recordings/dedup/profile.json: thread {tid} ({s} in queues.txt) not recorded")
        st[s]["threads"] += 1
        st[s]["cpu_ns"] += t["cpu_ns"]
        st[s]["tlb"] += shootdowns(t)
        st[s]["faults"] += t["page_faults"]["user"] + t["page_faults"]["kernel"]
    for s in ("fragment", "refine", "dedup", "compress", "reorder"):
        if not st[s]["threads"] or not st[s]["gets" if s != "fragment" else "puts"]:
            die(f"recordings/dedup/queues.txt: no thread ran stage {s}, or it moved no items")
    passes = st["fragment"]["threads"]
    groups = sum(1 for k in st["refine"] if k.startswith("in_queues_")) // passes
    if groups < 1:
        die("recordings/dedup/queues.txt: refine took from no queue")
    per_group = {s: st[s]["threads"] // (passes * groups) for s in ("refine", "dedup", "compress")}
    coarse = st["fragment"]["put"]
    fine = st["reorder"]["got"]
    if coarse % (passes * groups):
        die(f"recordings/dedup/queues.txt: {coarse} coarse chunks in {passes} passes over {groups} groups: "
            "the pass form needs the same count per group")
    coarse_g = coarse // (passes * groups)  # per group and pass
    put_batch = max(1, round(st["refine"]["put"] / st["refine"]["puts"]))
    # Fine chunks per coarse chunk, in whole refine batches; every stage's
    # batch then divides a group's pass (no item left over at a pass's end).
    puts_per_coarse = max(1, round(st["refine"]["put"] / st["refine"]["got"] / put_batch))
    fpc = puts_per_coarse * put_batch
    b = put_batch  # dedup, compress and reorder move the refine batch (measured means below)
    to_c = round(b * st["dedup"]["put_to_compress"] / st["dedup"]["put"])
    loops_r = coarse_g * fpc // b  # reorder's gets per group and pass
    cap = DEDUP_QUEUE_CAP

    def q(name, g, items):
        return {"queue": f"{name}_g{g}", "items": items, "capacity": cap}

    tasks = collections.OrderedDict()
    d = collections.OrderedDict()
    d["passes"] = passes
    d["groups"] = groups
    d["cycle_cpu_ns"] = round(sum(st[x]["cpu_ns"] for x in ("fragment", "refine", "dedup", "compress", "reorder"))
                              / passes)
    d["coarse_chunks"] = coarse
    d["fine_chunks"] = fine
    # fragment: a pass's coarse chunks, one per group in turn (l1 % queues
    # in dedup.c); then the end of the pass (reorder wrote its last chunk).
    frag_ns = st["fragment"]["cpu_ns"] / coarse
    body = []
    for g in range(groups):
        body += [("run", us(frag_ns)), ("put", q("refine", g, 1))]
    ph = collections.OrderedDict([("p0", events(*body)), ("p1", events(("get", {"queue": "pass_end", "items": 1,
                                                                                "capacity": 1})))])
    ph["p0"]["loop"] = coarse_g
    tasks["t_fragment"] = task(ph, 0.0)
    d["t_fragment"] = {"threads_recorded": st["fragment"]["threads"], "cpu_ns": st["fragment"]["cpu_ns"],
                       "cpu_ns_per_coarse_chunk": round(frag_ns), "coarse_per_group_and_pass": coarse_g,
                       "tlb_shootdowns": st["fragment"]["tlb"], "page_faults": st["fragment"]["faults"]}
    # refine: a coarse chunk, then its fine chunks in batches.
    run_ns = st["refine"]["cpu_ns"] / st["refine"]["got"] / puts_per_coarse
    for g in range(groups):
        ph = collections.OrderedDict()
        ph["p0"] = events(("get", q("refine", g, 1)))
        ph["p1"] = events(("run", us(run_ns)), ("put", q("dedup", g, put_batch)))
        ph["p1"]["loop"] = puts_per_coarse
        t = task(ph, 0.0)
        t["instance"] = per_group["refine"]
        tasks[f"t_refine_g{g}"] = t
    d["t_refine_gN"] = {"threads_recorded": st["refine"]["threads"], "instances_per_group": per_group["refine"],
                        "cpu_ns": st["refine"]["cpu_ns"],
                        "measured_coarse_per_get": st["refine"]["got"] / st["refine"]["gets"],
                        "measured_fine_per_coarse": st["refine"]["put"] / st["refine"]["got"],
                        "measured_fine_per_put": st["refine"]["put"] / st["refine"]["puts"],
                        "written": f"get 1 coarse, then {puts_per_coarse} x (run, put {put_batch} fine)",
                        "tlb_shootdowns": st["refine"]["tlb"]}
    # dedup: a batch of fine chunks; the new ones to compress, the duplicates to reorder.
    run_ns = st["dedup"]["cpu_ns"] / st["dedup"]["got"] * b
    for g in range(groups):
        evs = [("get", q("dedup", g, b)), ("run", us(run_ns))]
        if to_c:
            evs.append(("put", q("compress", g, to_c)))
        if b - to_c:
            evs.append(("put", q("reorder", g, b - to_c)))
        t = task(collections.OrderedDict([("p0", events(*evs))]), 0.0)
        t["instance"] = per_group["dedup"]
        tasks[f"t_dedup_g{g}"] = t
    d["t_dedup_gN"] = {"threads_recorded": st["dedup"]["threads"], "instances_per_group": per_group["dedup"],
                       "cpu_ns": st["dedup"]["cpu_ns"],
                       "measured_fine_per_get": st["dedup"]["got"] / st["dedup"]["gets"],
                       "measured_new_share": st["dedup"]["put_to_compress"] / st["dedup"]["put"],
                       "written": f"get {b}, run, put {to_c} to compress and {b - to_c} to reorder",
                       "tlb_shootdowns": st["dedup"]["tlb"]}
    # compress: a batch of new chunks, zlib, on to reorder; its munmaps
    # (zlib's freed buffers) at the measured rate.
    run_ns = st["compress"]["cpu_ns"] / st["compress"]["got"] * b
    tlb_per_loop = st["compress"]["tlb"] / st["compress"]["got"] * b
    for g in range(groups):
        body = [("get", q("compress", g, b)), ("run", us(run_ns)), ("put", q("reorder", g, b))]
        ph, every, k = munmap_phases(body, tlb_per_loop)
        t = task(ph, 0.0)
        t["instance"] = per_group["compress"]
        tasks[f"t_compress_g{g}"] = t
    d["t_compress_gN"] = {"threads_recorded": st["compress"]["threads"],
                          "instances_per_group": per_group["compress"], "cpu_ns": st["compress"]["cpu_ns"],
                          "measured_chunks_per_get": st["compress"]["got"] / st["compress"]["gets"],
                          "tlb_shootdowns": st["compress"]["tlb"], "tlb_shootdowns_per_loop": tlb_per_loop,
                          "munmaps_per_loop": k, "munmap_every_loops": every, "page_faults": st["compress"]["faults"]}
    # reorder: round robin over the groups' queues, a batch each, one op per
    # chunk; the pass ends with its last batch.
    run_ns = st["reorder"]["cpu_ns"] / fine * b
    evs = []
    for g in range(groups):
        evs += [("get", q("reorder", g, b)), ("run", us(run_ns))]
    ph = collections.OrderedDict([("p0", events(*evs)),
                                  ("p1", events(("put", {"queue": "pass_end", "items": 1, "capacity": 1})))])
    ph["p0"]["loop"] = loops_r
    # ops: the p0 loops count (the p1 loop, the pass's end, would count once
    # more per pass: its share is folded in by the per-pass ratio below).
    opl = b * groups * prof["provenance"]["ops"] / fine * loops_r / (loops_r + 1)
    tasks["t_reorder"] = task(ph, opl)
    d["t_reorder"] = {"threads_recorded": st["reorder"]["threads"], "cpu_ns": st["reorder"]["cpu_ns"],
                      "measured_chunks_per_get": st["reorder"]["got"] / st["reorder"]["gets"],
                      "loops_per_pass": loops_r,
                      "ops_per_loop": "chunks per phase loop (op = a fine chunk written), the pass-end loop included"}
    d["batches"] = (f"dedup.c moves up to {put_batch} items per get; the measured mean batches (above) are "
                    f"{put_batch} except refine's coarse gets (it takes what the queue holds): written as "
                    f"{put_batch} everywhere and 1 coarse chunk per refine get, so that each group's pass "
                    "divides into whole batches")
    d["queue_capacity"] = f"{cap} (dedup.c QUEUE_CAP, from the source; never reached: @max_depth in queues.txt)"
    other = sum(t["cpu_ns"] for t in prof["threads"] if t["tid"] not in stage)
    d["not_derived"] = [
        f"the main thread's input read and the shell around it: {other / 1e6:.0f} ms of CPU "
        f"({100 * other / prof['totals']['cpu_ns']:.1f}% of the recording's): start-up",
        "thread creation and joins between passes (the pass's end is one hand-off from reorder to fragment)",
        "page faults: their CPU is inside the stages' measured CPU (the guest has no fault path)",
        "the queue mutex's hold and contention (not modelled by the IR's queues)",
        f"fragment's, refine's, dedup's and reorder's TLB shootdowns "
        f"({st['fragment']['tlb'] + st['refine']['tlb'] + st['dedup']['tlb'] + st['reorder']['tlb']} in all): "
        "fewer than one per pass and group",
    ]
    return tasks, d


def derive_vips(prof, m):
    """vipsbench over libvips 8.14 (vips_threadpool_run, vips_sink_disc):
    per image pass, W workers compute work units; each unit finished is an
    up of the pass's tick semaphore (which the main thread downs once per
    unit; an up holds the semaphore's GMutex across the wakeup, and the
    woken thread re-takes it) and of its write buffer's nwrite semaphore;
    two write-behind threads each down their buffer's go semaphore, wait
    until its units are all done (downn(nwrite, 0)) and write the strip; the
    worker whose allocation starts a new strip first waits (under the
    allocate lock) for the write of the buffer it reuses, then ups the
    filled buffer's go (wbuffer_allocate_fn -> wbuffer_flush): a count of
    the pool's allocations, not of any one worker's. Roles and counts from
    queues.txt (per semaphore: who ups, who downs, how often), CPU from
    profile.json."""
    comm = {int(k[0]): v for k, v in m["comm"].items()}
    sems = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for kind in ("up", "down"):
        for (tid, s, fn), c in m[kind].items():
            sems[s][(kind, fn)][int(tid)] += int(c)
    main = [t for t, c in comm.items() if c == "vipsbench"]
    if len(main) != 1:
        die(f"recordings/vips/queues.txt: {len(main)} vipsbench threads, expected 1")
    main = main[0]
    # tick: upped by workers, downed by the main thread with down().
    ticks = {s: d for s, d in sems.items() if set(d[("down", "down")]) == {main}
             and sum(d[("up", "upn")].values()) > 100}
    # nwrite: many upn calls by workers, downn by one writer thread.
    nwrite = {s: d for s, d in sems.items() if d[("down", "downn")] and
              set(d[("down", "downn")]) != {main} and sum(d[("up", "upn")].values()) > 100}
    if not ticks or not nwrite:
        die("recordings/vips/queues.txt: no tick or nwrite semaphore found (uprobes on vips_semaphore_*)")
    passes = len(ticks)
    # libvips' threadset reuses its threads: one thread is a worker in one
    # pass and a buffer's writer in another, and a pass's workers come and
    # go (17-21 distinct threads upped a pass's tick with -t 16). So roles
    # are counted per pass (workers: the fewest distinct threads that upped
    # a pass's tick, the closest bound of those at work at once;
    # writers: nwrite semaphores per pass), and CPU is split by what each
    # role did, not by thread.
    n_workers = min(len(d[("up", "upn")]) for d in ticks.values())
    n_writers = max(1, round(len(nwrite) / passes))
    writers = set()
    for d in nwrite.values():
        writers |= set(d[("down", "downn")])
    units = sum(sum(d[("up", "upn")].values()) for d in nwrite.values()) / 2  # upn(-1) at start, (+1) at end
    strips = sum(sum(d[("down", "downn")].values()) for d in nwrite.values())
    ticks_down = sum(sum(d[("down", "down")].values()) for d in ticks.values())
    tids = threads_by_tid(prof)
    for t in writers | {main}:
        if t not in tids:
            die(f"recordings/vips/profile.json: thread {t} (queues.txt) not recorded")
    pool = [t for t in prof["threads"] if t["tgid"] == main and t["tid"] != main]
    # A writer's own CPU: its write() calls' kernel time (the .v format's
    # pixels go out as they are: the user side is a copy into the buffer the
    # workers already filled).
    wr_cpu = sum(tids[t]["syscalls"].get("write", {}).get("kernel_ns", {}).get("sum_ns", 0) for t in writers)
    w_cpu = sum(t["cpu_ns"] for t in pool) - wr_cpu
    m_cpu = tids[main]["cpu_ns"]
    w_tlb = sum(shootdowns(t) for t in pool)
    per_strip = max(1, round(units / strips))
    ops = prof["provenance"]["ops"]
    tasks = collections.OrderedDict()
    # A worker: the allocate lock; in it, the wait for a free write buffer
    # (a strip's units in flight bounded by the two buffers: a bounded
    # queue of 2 strips, which blocks exactly the allocation that starts
    # strip s while strip s - 2 is not written, as wbuffer_flush's wait
    # does); then the unit's CPU; then the unit is done (nwrite) and ticks
    # the main thread.
    unit_ns = w_cpu / units
    # A semaphore up is g_mutex_lock, v += n, g_cond_signal (a futex wake:
    # the pool's median futex call, hold_us), g_mutex_unlock; its waiter
    # re-takes the mutex when woken. So the up holds the semaphore's mutex
    # across the wakeup of its waiter.
    fx = [t["syscalls"]["futex"]["kernel_ns"]["p50_ns"] for t in pool if "futex" in t["syscalls"]]
    hold_us = max(1, round(sorted(fx)[len(fx) // 2] / 1000)) if fx else 1
    body = [("lock", "allocate"), ("put", {"queue": "inflight", "items": 1, "capacity": n_writers * per_strip}),
            ("unlock", "allocate"), ("run", us(unit_ns - 2000 * hold_us)),
            ("lock", "done_m"), ("put", {"queue": "done", "items": 1, "capacity": SEM_CAP}), ("run", hold_us),
            ("unlock", "done_m"),
            ("lock", "tick_m"), ("put", {"queue": "tick", "items": 1, "capacity": SEM_CAP}), ("run", hold_us),
            ("unlock", "tick_m")]
    # libvips flushes a strip (ups its buffer's go) in the allocation that
    # starts the next one (wbuffer_allocate_fn -> wbuffer_flush, after the
    # wait for the other buffer's write): the pool's allocation count
    # per_strip + 1, 2 per_strip + 1, ... whichever worker makes it. The
    # IR's count event says that (docs/workloads.md, "Counters"), under the
    # allocate lock after the buffer wait. The workers are then alike: one
    # task of n_workers instances. The measured TLB shootdowns spread over
    # a worker's per_strip loops as munmaps.
    body.insert(2, ("count", {"counter": "allocated", "every": per_strip, "first": per_strip + 1,
                              "queue": "go", "items": 1}))
    munmaps = round(w_tlb / units * per_strip)
    marks = {(j * per_strip) // munmaps + per_strip // (2 * munmaps) for j in range(munmaps)} if munmaps else set()
    ph = collections.OrderedDict()
    run = 0
    for i in range(per_strip):
        if i not in marks:
            run += 1
            continue
        if run:
            ph[f"p{len(ph)}"] = events(*body)
            ph[f"p{len(ph) - 1}"]["loop"] = run
            run = 0
        ph[f"p{len(ph)}"] = events(*(body + [("munmap", {"run": 0})]))
    if run:
        ph[f"p{len(ph)}"] = events(*body)
        ph[f"p{len(ph) - 1}"]["loop"] = run
    # One op is an image pass (the recording's op markers), counted per
    # unit computed (a pass is `units / passes` units): a strip written (15
    # a pass) would resolve a 100 ms run of a 16-vCPU guest to ~20%.
    t = task(ph, float(ops / units))
    t["instance"] = n_workers
    tasks["t_worker"] = t
    # A writer: its buffer's go, then the strip's units all done (nwrite),
    # its write, the buffer free again.
    strip_ns = wr_cpu / strips
    t = task(collections.OrderedDict([("p0", events(
        ("get", {"queue": "go", "items": 1, "capacity": SEM_CAP}),
        ("get", {"queue": "done", "items": per_strip}), ("lock", "done_m"), ("unlock", "done_m"),
        ("run", us(strip_ns)),
        ("get", {"queue": "inflight", "items": per_strip})))]), 0.0)
    t["instance"] = n_writers
    tasks["t_writer"] = t
    # The main thread: one down of tick per unit (the progress loop).
    tasks["t_main"] = task(collections.OrderedDict([("p0", events(
        ("get", {"queue": "tick", "items": 1}), ("lock", "tick_m"), ("unlock", "tick_m"),
        ("run", us(m_cpu / ticks_down))))]), 0.0)
    derivation = collections.OrderedDict([
        ("passes", passes), ("cycle_cpu_ns", round((w_cpu + wr_cpu + m_cpu) / passes)),
        ("workers_per_pass", n_workers), ("writers_per_pass", n_writers),
        ("units", units), ("strips", strips), ("units_per_strip", per_strip),
        ("tick_downs_by_main", ticks_down),
        ("pool_threads", len(pool)), ("writer_threads", len(writers)),
        ("worker_cpu_ns", w_cpu), ("cpu_ns_per_unit", round(unit_ns)),
        ("writer_cpu_ns", wr_cpu), ("cpu_ns_per_strip", round(strip_ns)),
        ("cpu_split", "writer: the writer threads' write() kernel time; worker: the rest of the pool's CPU"),
        ("semaphore_mutex_hold_us", hold_us),
        ("semaphore_mutex_hold_from", "the median of the pool threads' median futex call kernel time "
                                      "(profile.json syscalls.futex): g_cond_signal's futex wake"),
        ("main_cpu_ns", m_cpu), ("worker_tlb_shootdowns", w_tlb), ("munmaps_per_worker_cycle", munmaps),
        ("ops_per_loop", "t_worker: image passes per unit computed (ops / units)"),
        ("semaphores", "tick: up per unit by the workers, down per unit by vipsbench's main thread; "
                       "nwrite (one per write buffer): upn(-1) when a unit is allocated, upn(+1) when done, "
                       "downn(0) by the buffer's writer per strip (units = upn calls / 2, strips = downn calls)"),
        ("not_derived", [
            f"the main thread's image set-up between passes: its CPU is spread over its ticks "
            f"({m_cpu / 1e6:.0f} ms in all)",
            "page faults: their CPU is inside the workers' measured CPU (the guest has no fault path)",
            "the allocate lock's hold outside the buffer wait (not measured: it is in the workers' CPU)",
            "the go semaphore's mutex (one up per strip)",
            "which strip a finished unit belongs to: the units done are one count (done), so a strip's writer "
            f"starts once {per_strip} units more than the strips before it have finished, where libvips waits "
            "for its own buffer's units (nwrite per buffer; the IR's workers cannot tell the buffers apart)",
        ]),
    ])
    return tasks, derivation


DERIVE = {"dedup": derive_dedup, "vips": derive_vips}


def build(rec):
    prof, guest, m = load(rec)
    tasks, derivation = DERIVE[rec](prof, m)
    prov = collections.OrderedDict()
    for k, v in guest["provenance"].items():
        if k not in ("derivation", "derived_by"):
            prov[k] = v
    prov["queues"] = ("queues.txt (same directory): bpftrace uprobes in the same run "
                      f"(scripts/measure-queues-{rec}.bt, scripts/measure-real.sh)")
    prov["derived_by"] = "scripts/derive-queues.py from profile.json and queues.txt (same directory)"
    d = collections.OrderedDict([("method", " ".join(DERIVE[rec].__doc__.split()))])
    d.update(derivation)
    prov["derivation"] = d
    out = collections.OrderedDict([("provenance", prov), ("global", guest["global"]), ("tasks", tasks)])
    return json.dumps(out, indent=1) + "\n"


def main():
    args = sys.argv[1:]
    check = "--check" in args
    recs = [a for a in args if a != "--check"] or list(DERIVE)
    stale = []
    for rec in recs:
        if rec not in DERIVE:
            die(f"{rec}: no queue derivation (known: {', '.join(DERIVE)})")
        text = build(rec)
        path = f"recordings/{rec}/queues.json"
        write_or_check(path, text, check, stale)
    if stale:
        print("stale (run python3 scripts/derive-queues.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
