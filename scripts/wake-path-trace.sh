#!/bin/bash
# Records the timer wake path of a command (root, tracefs) in a private
# ftrace instance and splits every wakeup of one sleeper into its stages
# (scripts/wake_path.py): timer expiry -> local timer interrupt (the
# hypervisor's delivery, in a VM) -> hrtimer_wakeup's sched_waking ->
# sched_wakeup -> sched_switch to the sleeper. Used to compare
# `oversub calibrate`'s probes with conform's periodic workers
# (docs/conformance.md, "Where the waker's latency goes").
#   scripts/wake-path-trace.sh OUT.trace CMD...
#   scripts/wake_path.py OUT.trace PID
set -eu
out=$1; shift
T=/sys/kernel/tracing
[ -d $T/instances ] || T=/sys/kernel/debug/tracing
I=$T/instances/oversub-wake-path-$$
mkdir "$I"
trap 'echo 0 > "$I/tracing_on"; rmdir "$I"' EXIT
echo 16384 > "$I/buffer_size_kb"
for e in timer/hrtimer_expire_entry timer/hrtimer_start sched/sched_waking \
	sched/sched_wakeup sched/sched_switch irq_vectors/local_timer_entry; do
	echo 1 > "$I/events/$e/enable"
done
echo mono > "$I/trace_clock"
echo 1 > "$I/tracing_on"
"$@" || true
echo 0 > "$I/tracing_on"
cat "$I/trace" > "$out"
echo "wrote $out; sleepers by timer count:" >&2
grep hrtimer_start "$out" | grep hrtimer_wakeup | awk '{print $1}' | sort | uniq -c | sort -rn | head -8 >&2
