#!/usr/bin/env python3
"""The activation cycles of two periodic tasks that share a CPU (smp_nested's
p1 and p2), from a real ftrace text trace (scripts/wake-path-trace.sh) or
from a simulated Perfetto trace (`oversub run --trace`), so that the kernel's
and the model's sequences of the same wakeups can be compared
(docs/conformance.md, "Two cycles of smp_nested's p1").

For every wakeup of A and B: its phase in the tick period (0.5 ms steps;
real: against the tick_nohz_handler expiries, simulated: against
--tick-offset) and whether it ran within 50 us ('prompt'), later ('late'),
or, for B, after A was switched in first ('A first': B waited behind A).
For every activation of A: how it ran ('ran through': one stretch; 'resumed
at B's wakeup' (4.9-5.1 ms after A's wakeup), 'resumed before', 'resumed
later'), and the transitions between consecutive activations.
  scripts/wake_cycles.py TRACE A_PID B_PID
  scripts/wake_cycles.py --sim TRACE.json A_NAME B_NAME [--tick-offset MS]"""
import collections
import json
import re
import sys

import ftrace_text  # scripts/ftrace_text.py, beside this script

KV = re.compile(r'(\w+)=(\S+)')


def real_events(path, a, b):
    """(t_ms, kind, task, other) with kind wake/in/out(state); tick phase origin."""
    ev, ticks = [], []
    for _comm, _pid, _cpu, ts, name, rest in ftrace_text.records(path):
        t = ts * 1e3
        if name == 'hrtimer_expire_entry' and 'tick_nohz_handler' in rest:
            ticks.append(t)
        elif name == 'sched_wakeup':
            d = dict(KV.findall(rest))
            if d.get('pid') in (a, b):
                ev.append((t, 'wake', d['pid'], ''))
        elif name == 'sched_switch':
            d = dict(KV.findall(rest))
            if d['next_pid'] in (a, b):
                ev.append((t, 'in', d['next_pid'], ''))
            if d['prev_pid'] in (a, b):
                ev.append((t, 'out', d['prev_pid'], d['prev_state'][:1]))
    if not ticks:
        sys.exit('%s: no tick_nohz_handler expiries' % path)
    return ev, ticks[len(ticks) // 2]


def sim_events(path, a, b):
    d = json.load(open(path))
    ev = []
    for e in (d['traceEvents'] if isinstance(d, dict) else d):
        if e.get('ph') != 'i':
            continue
        x, t = e.get('args', {}), e['ts'] / 1e3
        if e['name'] == 'sched_wakeup' and x.get('comm') in (a, b):
            ev.append((t, 'wake', x['comm'], ''))
        elif e['name'] == 'sched_switch':
            if x.get('next_comm') in (a, b):
                ev.append((t, 'in', x['next_comm'], ''))
            if x.get('prev_comm') in (a, b):
                ev.append((t, 'out', x['prev_comm'], x.get('prev_state', '')[:1]))
    ev.sort(key=lambda e: e[0])
    return ev


def pattern(segs):
    if len(segs) == 1:
        return 'ran through'
    s = segs[1][0]
    return ('resumed at B wakeup' if 4.9 <= s <= 5.1 else
            'resumed before B wakeup' if s < 4.9 else 'resumed later')


def main(argv):
    if argv and argv[0] == '--sim':
        off = 0.0
        if '--tick-offset' in argv:
            i = argv.index('--tick-offset')
            off = float(argv[i + 1])
            argv = argv[:i] + argv[i + 2:]
        if len(argv) != 4:
            sys.exit(__doc__)
        ev, origin = sim_events(argv[1], argv[2], argv[3]), off
        a, b = argv[2], argv[3]
    else:
        if len(argv) != 3:
            sys.exit(__doc__)
        a, b = argv[1], argv[2]
        ev, origin = real_events(argv[0], a, b)
    ph = lambda t: round((((t - origin) % 4.0) * 2)) / 2 % 4.0
    wake = collections.defaultdict(collections.Counter)
    acts = []
    pending = {}  # task -> (wake time, phase, seen anything)
    cur = None
    last_in = None
    for t, kind, task, st in ev:
        if kind == 'wake':
            pending[task] = (t, ph(t))
            if task == a:
                cur = {'w': t, 'ph': ph(t), 'segs': [], 'lat': None}
                acts.append(cur)
        elif kind == 'in':
            if task in pending:
                w, p = pending.pop(task)
                lat = t - w
                if task == b and b in pending:
                    pass
                res = 'prompt' if lat < 0.05 else 'late'
                if task == b and last_in and last_in[1] == a and w <= last_in[0] and last_in[0] - w < 0.05:
                    res = 'A first'
                wake[(task, p)][res] += 1
            if task == a and cur is not None:
                cur['s'] = t
                if cur['lat'] is None:
                    cur['lat'] = t - cur['w']
            last_in = (t, task)
        elif kind == 'out' and task == a and cur is not None and 's' in cur:
            cur['segs'].append((cur['s'] - cur['w'], t - cur['w']))
            del cur['s']
    print('wakeups (task, phase after the tick in ms): outcome counts')
    for k in sorted(wake):
        print('  %s %.1f  %s' % (k[0], k[1], dict(sorted(wake[k].items()))))
    tr = collections.defaultdict(collections.Counter)
    for x, y in zip(acts, acts[1:]):
        if y['lat'] is None or x['lat'] is None or not x['segs']:
            continue
        lx = 'late' if x['lat'] >= 0.05 else 'prompt'
        ly = 'late' if y['lat'] >= 0.05 else 'prompt'
        tr[(x['ph'], y['ph'])][('%s, %s' % (lx, pattern(x['segs'])), ly)] += 1
    print('A: activation (phase; wakeup, how it ran) -> next wakeup: counts')
    for k in sorted(tr):
        for (f, to), n in sorted(tr[k].items()):
            print('  %.1f -> %.1f  %-36s -> %-6s %d' % (k[0], k[1], f, to, n))


if __name__ == '__main__':
    main(sys.argv[1:])
