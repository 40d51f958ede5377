#!/bin/bash
# Records the timer wake path of a command (root, tracefs) in a private
# ftrace instance and splits every wakeup of one sleeper into its stages
# (scripts/wake_path.py, scripts/wake_split.py): timer expiry -> local timer
# interrupt (the hypervisor's delivery, in a VM) -> hrtimer_wakeup's
# sched_waking -> sched_wakeup -> sched_switch to the sleeper -> its return
# from clock_nanosleep() (raw_syscalls/sys_exit, NR 230). Also recorded: the
# reschedule and call-function IPIs (a remote wakeup or a wakeup of an idle
# CPU), the IPIs sent (ipi/ipi_send_cpu), migrations, and /proc/stat before
# and after (OUT.stat: the steal column is the hypervisor's). Used to compare
# `oversub calibrate`'s probes with conform's periodic workers
# (docs/conformance.md, "Where the waker's latency goes").
#   scripts/wake-path-trace.sh OUT.trace CMD...
#   scripts/wake_path.py OUT.trace PID
#   scripts/wake_split.py OUT.trace [PID...]
set -eu
out=$1; shift
T=/sys/kernel/tracing
[ -d $T/instances ] || T=/sys/kernel/debug/tracing
I=$T/instances/oversub-wake-path-$$
mkdir "$I"
trap 'echo 0 > "$I/tracing_on"; rmdir "$I"' EXIT
echo 65536 > "$I/buffer_size_kb"
for e in timer/hrtimer_expire_entry timer/hrtimer_start sched/sched_waking \
	sched/sched_wakeup sched/sched_switch sched/sched_migrate_task \
	irq_vectors/local_timer_entry irq_vectors/reschedule_entry \
	irq_vectors/call_function_single_entry ipi/ipi_send_cpu \
	raw_syscalls/sys_exit; do
	[ -d "$I/events/$e" ] || continue
	echo 1 > "$I/events/$e/enable"
done
# Only clock_nanosleep()'s return (x86_64 NR 230): the sleeper back in user space.
[ -d "$I/events/raw_syscalls/sys_exit" ] && echo 'id == 230' > "$I/events/raw_syscalls/sys_exit/filter"
echo mono > "$I/trace_clock"
{ date -u +%FT%TZ; uptime; grep '^cpu' /proc/stat; } > "$out.stat"
echo 1 > "$I/tracing_on"
"$@" || true
echo 0 > "$I/tracing_on"
{ date -u +%FT%TZ; uptime; grep '^cpu' /proc/stat; } >> "$out.stat"
cat "$I/trace" > "$out"
echo "wrote $out (and $out.stat); sleepers by timer count:" >&2
grep hrtimer_start "$out" | grep hrtimer_wakeup | awk '{print $1}' | sort | uniq -c | sort -rn | head -8 >&2
