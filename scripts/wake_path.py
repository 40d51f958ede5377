#!/usr/bin/env python3
"""Splits the timer wakeups of one sleeper (PID) in an ftrace text trace
(scripts/wake-path-trace.sh) into stages and prints p10/p50/p90 of each, us:
expiry -> local timer interrupt -> sched_waking -> sched_wakeup -> switch,
and how many wakeups did not preempt at once (wakeup->switch > 50 us)."""
import re
import sys
from collections import Counter

import ftrace_text  # scripts/ftrace_text.py, beside this script


LATE_US = 50


def main(path, spid):
    last_irq, last_comm = {}, {}
    segs, st = [], None
    for comm, pid, cpu, ts, name, args in ftrace_text.records(path):
        t = ts * 1e6
        if name == 'local_timer_entry':
            last_irq[cpu], last_comm[cpu] = t, comm
        if name == 'hrtimer_start' and pid == spid and 'hrtimer_wakeup' in args:
            st = {'exp': int(re.search(r'expires=(\d+)', args).group(1)) / 1e3}
            continue
        if st is None:
            continue
        if (name == 'hrtimer_expire_entry' and 'hrtimer_wakeup' in args
                and cpu in last_irq and last_irq[cpu] >= st['exp'] - 50):
            st['cand'] = (cpu, last_irq[cpu], last_comm[cpu])
        if name == 'sched_waking' and f'pid={spid} ' in args and 'waking' not in st:
            st['waking'] = t
            if 'cand' in st and st['cand'][0] == cpu:
                st['cpu'], st['irq'], st['icomm'] = st['cand']
        if name == 'sched_wakeup' and f'pid={spid} ' in args and 'wakeup' not in st:
            st['wakeup'] = t
        if name == 'sched_switch' and f'next_pid={spid} ' in args:
            if all(k in st for k in ('irq', 'waking', 'wakeup')):
                segs.append((st['irq'] - st['exp'], st['waking'] - st['irq'],
                             st['wakeup'] - st['waking'], t - st['wakeup'],
                             t - st['exp'], st['icomm'], st['cpu'], cpu))
            st = None
    if not segs:
        sys.exit(f'no complete timer wakeups of pid {spid} in {path}')
    where = Counter((s[5], s[6]) for s in segs).most_common(3)
    print(f'pid {spid}: {len(segs)} wakeups; interrupted (task, cpu): {where}')
    for i, n in enumerate(['expiry->irq', 'irq->waking', 'waking->wakeup',
                           'wakeup->switch', 'expiry->switch']):
        v = sorted(s[i] for s in segs)
        print(f'  {n:15} p10 {v[len(v) // 10]:7.1f}  p50 {v[len(v) // 2]:7.1f}  '
              f'p90 {v[len(v) * 9 // 10]:7.1f}')
    # A wakeup that does not preempt at once waits for the running task's
    # slice end or the next tick: the stage wakeup->switch shows it.
    late = [s for s in segs if s[3] > LATE_US]
    prompt = sorted(s[4] for s in segs if s[3] <= LATE_US)
    remote = sum(1 for s in segs if s[7] != s[6])
    print(f'  wakeup->switch > {LATE_US} us (no immediate preemption): '
          f'{len(late)} of {len(segs)} ({100 * len(late) / len(segs):.0f}%); '
          f'expiry->switch p50 of the others '
          f'{prompt[len(prompt) // 2] if prompt else float("nan"):.1f}; '
          f'run on another CPU than the interrupt: {remote}')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: wake_path.py TRACE PID')
    main(sys.argv[1], int(sys.argv[2]))
