#!/usr/bin/env python3
"""The tail of one sleeper's timer wakeups in an ftrace text trace
(scripts/wake-path-trace.sh): which wakeups took over THRESHOLD us from
timer expiry to running, and why. For each slow one: the hypervisor's
delivery (expiry -> local timer interrupt), the CPU it woke on, and the
scheduler's part (sched_wakeup -> sched_switch, whether the switch came
right after a tick, i.e. the wakeup did not preempt and the tick did).
Also the wakeups' phase after the last tick on their CPU, slow vs fast.
  scripts/wake_tail.py TRACE PID [THRESHOLD_US]"""
import re
import sys
from collections import Counter

import ftrace_text  # scripts/ftrace_text.py, beside this script


def main(path, spid, thr):
    last_irq, last_tick, rows, st = {}, {}, [], None
    for _comm, pid, cpu, ts, name, args in ftrace_text.records(path):
        t = ts * 1e6
        if name == 'local_timer_entry':
            last_irq[cpu] = t
        elif name == 'hrtimer_expire_entry' and 'function=tick_' in args:
            last_tick[cpu] = t
        elif name == 'hrtimer_start' and pid == spid and 'hrtimer_wakeup' in args:
            st = {'exp': int(re.search(r'expires=(\d+)', args).group(1)) / 1e3, 'arm': cpu}
        elif st is None:
            continue
        elif name == 'sched_waking' and f'pid={spid} ' in args and 'waking' not in st:
            st['waking'], st['irq'] = t, last_irq.get(cpu, float('nan'))
        elif name == 'sched_wakeup' and f'pid={spid} ' in args and 'wakeup' not in st:
            c = int(re.search(r'target_cpu=(\d+)', args).group(1))
            st.update(wakeup=t, cpu=c, phase=t - last_tick.get(c, float('nan')))
        elif name == 'sched_switch' and f'next_pid={spid} ' in args and 'wakeup' in st:
            prev = re.search(r'prev_pid=(\d+)', args).group(1)
            st.update(sw=t, prev=prev, tick=0 <= t - last_tick.get(cpu, -1e18) < 30)
            rows.append(st)
            st = None
    if not rows:
        sys.exit(f'no complete timer wakeups of pid {spid} in {path}')
    lat = sorted(r['sw'] - r['exp'] for r in rows)
    n = len(lat)
    print(f'pid {spid}: {n} wakeups, expiry->switch p50 {lat[n // 2]:.1f} p99 '
          f'{lat[n * 99 // 100]:.1f} max {lat[-1]:.1f} us; woke on CPU {dict(Counter(r["cpu"] for r in rows))}')
    slow = [r for r in rows if r['sw'] - r['exp'] > thr]
    late_irq = [r for r in slow if r['irq'] - r['exp'] > thr / 2]
    moved = [r for r in slow if r['cpu'] != r['arm']]
    at_tick = [r for r in slow if r['tick'] and r['sw'] - r['wakeup'] > thr / 2]
    print(f'{len(slow)} over {thr:.0f} us ({100 * len(slow) / n:.2f}%): late timer interrupt {len(late_irq)}, '
          f'woke on another CPU {len(moved)}, not preempting until a tick {len(at_tick)}')
    bucket = lambda rs: sorted(Counter(int(r['phase'] // 500) * 500 for r in rs
                                       if r['phase'] == r['phase']).items())
    print('phase of the wakeup after the last tick on its CPU (us, 500 us buckets):')
    print('  fast', bucket([r for r in rows if r not in slow]))
    print('  slow', bucket(slow))


if __name__ == '__main__':
    if len(sys.argv) not in (3, 4):
        sys.exit('usage: wake_tail.py TRACE PID [THRESHOLD_US]')
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) == 4 else 500.0)
