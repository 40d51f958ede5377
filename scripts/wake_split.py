#!/usr/bin/env python3
"""Splits every timer wakeup of each sleeper in an ftrace text trace
(scripts/wake-path-trace.sh) into the stages of the kernel's wake path, us:

  expiry->irq     the hrtimer's programmed expiry (hrtimer_start expires=) to
                  the local timer interrupt that ran it (in a VM: the
                  hypervisor's delivery of the guest's timer)
  irq->waking     the interrupt to hrtimer_wakeup()'s try_to_wake_up()
  waking->wakeup  ttwu: select_task_rq(), the enqueue (through the group
                  hierarchy), wakeup_preempt()
  wakeup->switch  the enqueue to __schedule() switching to the sleeper (the
                  resched on return from the interrupt, a tick, a slice end,
                  or the reschedule IPI of a remote wakeup)
  switch->user    the switch to clock_nanosleep()'s return (sys_exit NR 230)

and the whole expiry->user. Wakeups are grouped by what the sleeper found
on its CPU: 'idle' (it switched in from the idle task), 'busy-now'
(preempted a task within 50 us of the wakeup), 'busy-late' (waited longer:
a tick or the running task's slice end); 'remote' counts wakeups whose
target CPU was not the CPU that ran the timer. For each sleeper the median
sleep (arm -> expiry) and first timestamp identify it (conform's periodic
workers sleep period - run; the probe batches 0.5-1.5 ms).
  scripts/wake_split.py TRACE [PID...]   (default: every sleeper with >= 100 timer wakeups)
  scripts/wake_split.py --json TRACE [PID...]"""
import json
import re
import sys
from collections import defaultdict

import ftrace_text  # scripts/ftrace_text.py, beside this script

LATE_US = 50
STAGES = ['expiry->irq', 'irq->waking', 'waking->wakeup', 'wakeup->switch',
          'switch->user', 'expiry->switch', 'expiry->user']


def parse(path):
    """One pass: a list of complete wakeups per sleeper pid."""
    last_irq, last_tick = {}, {}
    open_ = {}          # pid -> the wakeup in progress
    by_timer = {}       # hrtimer ptr -> pid
    done = defaultdict(list)
    arms = defaultdict(int)
    for _comm, pid, cpu, ts, name, args in ftrace_text.records(path):
        t = ts * 1e6
        if name == 'local_timer_entry':
            last_irq[cpu] = t
        elif name == 'hrtimer_start':
            if 'function=hrtimer_wakeup' in args:
                ptr = re.search(r'hrtimer=(\w+)', args).group(1)
                exp = int(re.search(r'expires=(\d+)', args).group(1)) / 1e3
                open_[pid] = {'exp': exp, 'arm': t, 'ptr': ptr, 'armcpu': cpu}
                by_timer[ptr] = pid
                arms[pid] += 1
        elif name == 'hrtimer_expire_entry':
            if 'function=tick_' in args:
                last_tick[cpu] = t
            elif 'function=hrtimer_wakeup' in args:
                ptr = re.search(r'hrtimer=(\w+)', args).group(1)
                st = open_.get(by_timer.get(ptr))
                if st is not None and st['ptr'] == ptr and 'fire' not in st:
                    st['fire'], st['firecpu'] = t, cpu
                    st['irq'] = last_irq.get(cpu, t)
        elif name in ('sched_waking', 'sched_wakeup'):
            wp = int(re.search(r'pid=(\d+)', args).group(1))
            st = open_.get(wp)
            if st is None or 'fire' not in st:
                continue
            if name == 'sched_waking' and 'waking' not in st:
                st['waking'], st['wakecpu'] = t, cpu
            elif name == 'sched_wakeup' and 'waking' in st and 'wakeup' not in st:
                st['wakeup'] = t
                st['target'] = int(re.search(r'target_cpu=(\d+)', args).group(1))
        elif name == 'ipi_send_cpu':
            # An IPI sent between the wakeup and the switch to a sleeper.
            dst = int(re.search(r'cpu=(\d+)', args).group(1))
            for st in open_.values():
                if 'wakeup' in st and 'sw' not in st and st.get('target') == dst:
                    st.setdefault('ipi', re.search(r'callsite=(\w+)', args).group(1))
        elif name == 'sched_switch':
            np = int(re.search(r'next_pid=(\d+)', args).group(1))
            st = open_.get(np)
            if st is None or 'wakeup' not in st or 'sw' in st:
                continue
            st['sw'], st['swcpu'] = t, cpu
            st['prev'] = re.search(r'prev_comm=(.*?) prev_pid=', args).group(1)
            st['prevpid'] = int(re.search(r'prev_pid=(\d+)', args).group(1))
            st['idle'] = st['prevpid'] == 0
            st['aftertick'] = 0 <= t - last_tick.get(cpu, -1e18) < 30 and \
                last_tick.get(cpu, -1e18) > st['wakeup']
        elif name == 'sys_exit' and 'NR 230' in args:
            st = open_.get(pid)
            if st is not None and 'sw' in st:
                st['ret'] = t
                done[pid].append(open_.pop(pid))
    return done, arms


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] if v else float('nan')


def summary(rows):
    out = {}
    for name, f in [('expiry->irq', lambda s: s['irq'] - s['exp']),
                    ('irq->waking', lambda s: s['waking'] - s['irq']),
                    ('waking->wakeup', lambda s: s['wakeup'] - s['waking']),
                    ('wakeup->switch', lambda s: s['sw'] - s['wakeup']),
                    ('switch->user', lambda s: s['ret'] - s['sw']),
                    ('expiry->switch', lambda s: s['sw'] - s['exp']),
                    ('expiry->user', lambda s: s['ret'] - s['exp'])]:
        v = [f(s) for s in rows]
        out[name] = [pct(v, 0.1), pct(v, 0.5), pct(v, 0.9)]
    return out


def classify(s):
    if s['idle']:
        return 'idle'
    return 'busy-now' if s['sw'] - s['wakeup'] <= LATE_US else 'busy-late'


def main(argv):
    as_json = '--json' in argv
    argv = [a for a in argv if a != '--json']
    if not argv:
        sys.exit(__doc__)
    done, arms = parse(argv[0])
    pids = [int(p) for p in argv[1:]] or sorted(
        (p for p in done if len(done[p]) >= 100), key=lambda p: done[p][0]['exp'])
    report = {}
    for p in pids:
        rows = [s for s in done.get(p, []) if 'irq' in s and s['irq'] <= s['waking']]
        if not rows:
            print(f'pid {p}: no complete timer wakeups', file=sys.stderr)
            continue
        groups = defaultdict(list)
        for s in rows:
            groups[classify(s)].append(s)
        r = {'wakeups': len(rows), 'first_s': rows[0]['exp'] / 1e6,
             'sleep_us': pct([s['exp'] - s['arm'] for s in rows], 0.5),
             'cpus': sorted({s['swcpu'] for s in rows}),
             'remote': sum(1 for s in rows if s['target'] != s['firecpu']),
             'ipi': sum(1 for s in rows if 'ipi' in s),
             'after_tick': sum(1 for s in rows if s['aftertick']),
             'all': summary(rows),
             'groups': {g: {'n': len(v), 'stages': summary(v),
                            'prev': sorted({x['prev'] for x in v})[:4]}
                        for g, v in sorted(groups.items())}}
        report[p] = r
        if as_json:
            continue
        print(f"pid {p}: {r['wakeups']} wakeups from t={r['first_s']:.3f} s, sleep "
              f"{r['sleep_us']:.0f} us, on CPUs {r['cpus']}; remote {r['remote']}, "
              f"IPI sent {r['ipi']}, switched right after a tick {r['after_tick']}")
        print(f"  {'':10} {'n':>5} " + ' '.join(f'{n:>15}' for n in STAGES))
        for g, v in [('all', {'n': len(rows), 'stages': r['all']})] + list(r['groups'].items()):
            print(f"  {g:10} {v['n']:5} " + ' '.join(
                f"{v['stages'][n][1]:15.1f}" for n in STAGES) + '   (p50)')
        print(f"  {'all p10/p90':16} " + ' '.join(
            f"{r['all'][n][0]:7.1f}/{r['all'][n][2]:<7.1f}" for n in STAGES))
    if as_json:
        print(json.dumps(report, indent=1))


if __name__ == '__main__':
    main(sys.argv[1:])
