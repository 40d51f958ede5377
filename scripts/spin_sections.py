"""Guest kernel spinlock sections from a recording's lock contention
(docs/workloads.md, "Spinlock sections from lock contention"): the rate of
spinlock acquisitions per CPU-second and their hold-time distribution,
derived from `lock:contention_begin/end` waits of flag `SPIN` (a qspinlock's
slow path, kernel/locking/qspinlock.c) that `oversub record` keeps per
thread in profile.json (`lock_contention_ns.SPIN`: count and histogram).

What the recording has: contended acquisitions only (a `contention_begin` is
traced when the fast path fails), their waits at the trace's microsecond
resolution, and no lock identity or call site. What is derived, on a
2-CPU recording machine:

* hold distribution: with two CPUs there is at most one holder and no queue,
  so a contended wait is the residual of the other CPU's hold; for
  acquisitions that arrive independently of the lock's state the residual's
  density is S(r) / E[H] (S the holds' survival function), so
  S(k) = density(k) / density(1) over 1-us bins (k >= 1; no hold below the
  trace's 1 us resolution), made non-increasing, cut where S falls below
  CUT_SURVIVAL (the longer waits, a few per run, are the recording VM's own
  vCPU preemption: counted as contentions, not as holds);
* acquisition rate: an acquisition finds the lock held with probability
  p = lambda * E[H] when the other CPU runs work that takes the lock at the
  same rate (an estimate: this machine is shared, the other CPU runs the
  program or another user's build), so contended per CPU-second
  c = lambda * p and lambda = sqrt(c / E[H]); a comm's rate is its own
  contended rate / p.

All spinlocks of a recording are pooled as one lock (`LOCK`): the recorder
keeps no lock address, and in the page-fault-heavy programs where they are
contended the spinlocks are the page allocator's zone->lock and the LRU's
lruvec->lru_lock (both taken with interrupts off in 6.12: `irqsave`), which
the sections stand for together.
"""

import collections
import math

# The one guest kernel spinlock the sections take (docs/workloads.md).
LOCK = "kernel_spin"
# The recording's contention flag of a queued spinlock's slow path
# (include/trace/events/lock.h: LCB_F_SPIN alone; SPIN|READ and SPIN|WRITE
# are rwlocks, SPIN|MUTEX a mutex's optimistic spin).
FLAG = "SPIN"
# Holds whose survival falls below this are cut (see the module doc).
CUT_SURVIVAL = 0.01
# Longest hold class written (us): a bound on the cut.
MAX_HOLD_US = 64


class Missing(Exception):
    """The recording lacks what the derivation needs (the caller exits 2)."""


def bucket_upper(v):
    """oversub-record's histogram bucket of `v` ns (crates/oversub-record/
    src/hist.rs: 8 linear steps per power of two), as its upper bound."""
    if v < 2:
        return 1
    oct_ = v.bit_length() - 1
    frac = (v >> (oct_ - 3)) & 7 if oct_ >= 3 else (v << (3 - oct_)) & 7
    return (1 << oct_) + ((frac + 1) << oct_) // 8


def contention(profile, path, comm_of=lambda t: t["comm"]):
    """Per key (comm_of(thread)) over the listed threads: contended SPIN
    acquisitions, their CPU and the pooled wait histogram (bucket upper
    bound, ns -> n)."""
    if "threads" not in profile:
        raise Missing(f"{path}: field threads missing")
    per = collections.OrderedDict()
    hist = collections.Counter()
    for t in profile["threads"]:
        for k in ("comm", "cpu_ns"):
            if k not in t:
                raise Missing(f"{path}: threads[tid {t.get('tid')}].{k} missing")
        key = comm_of(t)
        e = per.setdefault(key, collections.Counter())
        e["cpu_ns"] += t["cpu_ns"]
        d = t.get("lock_contention_ns", {}).get(FLAG)
        if d:
            e["contended"] += d["count"]
            for b, n in d.get("hist", []):
                hist[int(b)] += n
    return per, hist


def hold_distribution(hist, path):
    """Hold classes [(hold_us, probability)] and E[H] (us) from the pooled
    wait histogram (bucket upper bound, ns -> count; the trace's waits are
    whole us), by the residual inversion of the module doc."""
    width = collections.Counter(bucket_upper(k * 1000) for k in range(1, MAX_HOLD_US + 2))

    def density(k):
        b = bucket_upper(k * 1000)
        return hist.get(b, 0) / width[b]

    d1 = density(1)
    if not d1:
        raise Missing(f"{path}: lock_contention_ns.{FLAG}: no contended wait of 1 us: no hold distribution")
    surv = []
    s = 1.0
    for k in range(1, MAX_HOLD_US + 1):
        s = min(s, density(k) / d1)
        if s < CUT_SURVIVAL:
            break
        surv.append(s)
    surv.append(0.0)
    classes = [(k + 0.5, a - b) for k, (a, b) in enumerate(zip(surv, surv[1:]), start=1) if a - b > 0]
    mean = sum(h * q for h, q in classes)
    return classes, mean


def derive(profile, path, comm_of=lambda t: t["comm"]):
    """The derivation: hold classes, E[H], the pooled rate and per key
    acquisitions per CPU-second, with the figures it came from."""
    per, hist = contention(profile, path, comm_of)
    contended = sum(e["contended"] for e in per.values())
    cpu_s = sum(e["cpu_ns"] for e in per.values()) / 1e9
    if contended == 0 or cpu_s <= 0:
        raise Missing(f"{path}: threads[].lock_contention_ns.{FLAG}: no contended spinlock acquisition recorded")
    classes, mean_us = hold_distribution(hist, path)
    c = contended / cpu_s
    lam = math.sqrt(c / (mean_us * 1e-6))
    p = lam * mean_us * 1e-6
    rates = collections.OrderedDict(
        (k, e["contended"] / (e["cpu_ns"] / 1e9) / p if e["cpu_ns"] else 0.0) for k, e in per.items())
    info = collections.OrderedDict([
        ("lock", LOCK),
        ("irqsave", True),
        ("contended", contended),
        ("cpu_s", round(cpu_s, 6)),
        ("contended_per_cpu_s", round(c, 3)),
        ("wait_hist_ns", collections.OrderedDict((str(k), hist[k]) for k in sorted(hist))),
        ("hold_classes_us", [[h, round(q, 4)] for h, q in classes]),
        ("mean_hold_us", round(mean_us, 4)),
        ("p_found_held", round(p, 5)),
        ("acquisitions_per_cpu_s", round(lam, 1)),
        ("is", "estimated from measured waits (scripts/spin_sections.py): holds by the residual inversion of the "
               "2-CPU recording's contended waits (1 us resolution, survival cut at "
               f"{CUT_SURVIVAL}), acquisitions per CPU-second sqrt(contended per CPU-second / E[hold]) assuming "
               "the other CPU takes the lock at the same rate; every spinlock pooled as one (no lock identity "
               "recorded), irqsave assumed (zone->lock, lru_lock)"),
    ])
    return classes, rates, info


def counts(n, classes):
    """n sections shared out over the hold classes (largest remainder, ties
    to the shorter hold): [(hold_us, count)]."""
    raw = [(h, n * q) for h, q in classes]
    out = [[h, int(math.floor(x))] for h, x in raw]
    left = n - sum(k for _h, k in out)
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i][1] - math.floor(raw[i][1])), i))
    for i in order[:left]:
        out[i][1] += 1
    return [(h, k) for h, k in out if k]


def event(hold_us, pre_us=0.0):
    """The IR's `syscall` event of one section: `pre_us` of kernel work, then
    `hold_us` under the pooled lock."""
    return collections.OrderedDict([("lock", LOCK), ("irqsave", True), ("run", round(pre_us + hold_us, 3)),
                                    ("hold", round(hold_us, 3))])
