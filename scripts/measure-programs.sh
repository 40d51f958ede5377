#!/usr/bin/env bash
# Runs the Debian programs behind the named workloads on this machine under
# `perf stat` and prints one markdown table row each (docs/workloads.md,
# "Measured on this machine"). Counts are per process tree (perf inherits to
# children), so other load on the machine does not enter them:
#   task-clock            CPU time of the program's threads
#   context-switches      switches out of the program's threads
#   sched:sched_wakeup    wakeups done in the program's context (the waker)
#   ipi:ipi_send_cpu      unicast IPIs sent from it (reschedule, call-function-single)
#   tlb:tlb_flush reason==4 (TLB_REMOTE_SEND_IPI): remote TLB shootdowns it started
# Needs root (tracepoints) and: dbench, stress-ng, hackbench (rt-tests),
# sysbench, rt-app, perf. Usage: scripts/measure-programs.sh [SECONDS]
set -euo pipefail
secs=${1:-3}
tmp=$(mktemp -d /tmp/oversub-measure.XXXXXX)
trap 'rm -rf "$tmp" /tmp/oversub-dbench' EXIT
here=$(cd "$(dirname "$0")/.." && pwd)
# rt-app 1.0 writes its per-thread logs to the working directory.
cd "$tmp"

echo "machine: $(nproc) CPUs, $(uname -r), $(uptime | sed 's/.*load/load/')"
echo
echo "Rates are per second of the program's own CPU time (less sensitive to other load than per wall second)."
echo
echo "| program | command | wall s | CPU s | switches | wakeups | IPIs sent | TLB shootdowns | program's own figure |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"

row() { # name, own-figure-extractor, command...
	local name=$1 extract=$2
	shift 2
	local start end out
	start=$(date +%s.%N)
	perf stat -x, -o "$tmp/perf" -e task-clock,context-switches,sched:sched_wakeup,ipi:ipi_send_cpu \
		-e tlb:tlb_flush --filter 'reason==4' -- "$@" >"$tmp/out" 2>&1
	end=$(date +%s.%N)
	out=$(eval "$extract" <"$tmp/out" || true)
	awk -F, -v name="$name" -v cmd="$*" -v wall="$(echo "$end - $start" | bc)" -v own="$out" '
		$3 == "task-clock" { cpu = $1 / 1000 }
		$3 == "context-switches" { cs = $1 }
		$3 == "sched:sched_wakeup" { wk = $1 }
		$3 == "ipi:ipi_send_cpu" { ipi = $1 }
		$3 == "tlb:tlb_flush" { tlb = $1 }
		END { c = cpu > 0 ? cpu : 1
			printf "| %s | `%s` | %.2f | %.2f | %d (%.0f/s) | %d (%.0f/s) | %d (%.0f/s) | %d (%.0f/s) | %s |\n",
			name, cmd, wall, cpu, cs, cs / c, wk, wk / c, ipi, ipi / c, tlb, tlb / c, own }' "$tmp/perf"
}

mkdir -p /tmp/oversub-dbench
row dbench "grep -o 'Throughput.*clients'" dbench -t "$secs" -D /tmp/oversub-dbench 4
row "hackbench (processes)" "grep -o 'Time: .*'" hackbench -g 2 -f 10 -l 2000
row "hackbench (threads)" "grep -o 'Time: .*'" hackbench -T -g 2 -f 10 -l 2000
row "stress-ng futex" "grep -o 'futex .*' | tail -1 | awk '{print \$2\" bogo ops\"}'" \
	stress-ng --futex 2 -t "$secs" --metrics-brief
row "stress-ng tlb-shootdown" "grep -o 'tlb-shootdown .*' | tail -1 | awk '{print \$2\" bogo ops\"}'" \
	stress-ng --tlb-shootdown 2 -t "$secs" --metrics-brief
row "stress-ng mmap (ebizzy-like)" "grep -o 'mmap .*' | tail -1 | awk '{print \$2\" bogo ops\"}'" \
	stress-ng --mmap 2 --mmap-bytes 16M -t "$secs" --metrics-brief
row "sysbench threads (mutex+yield)" "grep -o 'total number of events: *[0-9]*' | awk '{print \$NF\" events\"}'" \
	sysbench threads --threads=4 --time="$secs" run
row "sysbench mutex" "grep -o 'total time: *[0-9.]*s'" sysbench mutex --threads=4 run
sed "s/\"duration\": 2/\"duration\": $secs/" "$here/conform/rtapp_mutex.json" >/tmp/oversub-rtapp-mutex.json
row "rt-app (conform/rtapp_mutex.json)" "true" rt-app /tmp/oversub-rtapp-mutex.json  # log_size 0: writes no log
rm -f /tmp/oversub-rtapp-mutex.json
