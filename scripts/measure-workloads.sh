#!/usr/bin/env bash
# Measured vs simulated, per operation (docs/workloads.md, "Measured vs
# simulated"): runs the Debian program on this machine under `perf stat`
# and its workloads/*.json program in the simulator as a nested guest of
# 2 vCPUs pinned to 2 otherwise idle pCPUs (this machine has 2 CPUs), then
# prints one markdown row per side. Per-op counts are used because the
# machine is shared: they move less with other load than rates per second.
#   real: task-clock, context-switches, sched:sched_wakeup, ipi:ipi_send_cpu
#         (reschedule + call-function-single sent), over the program's tree
#   sim:  guest threads' cpu_ns, nr_switches, wakeups (wakeup latency
#         samples), the VM's reschedule IPIs sent
# Needs root (tracepoints), dbench, hackbench (rt-tests), perf, python3 and a
# built target/release/oversub. Usage: scripts/measure-workloads.sh [SECONDS]
set -euo pipefail
secs=${1:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
oversub=$here/target/release/oversub
tmp=$(mktemp -d /tmp/oversub-workloads.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(nproc) CPUs, $(uname -r), $(uptime | sed 's/.*load/load/')"
echo
echo "| workload | side | ops | CPU us/op | switches/op | wakeups/op | IPIs/op |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"

real() { # name, ops, perf file
	awk -F, -v name="$1" -v ops="$2" '
		$3 == "task-clock" { cpu = $1 * 1000 }
		$3 == "context-switches" { cs = $1 }
		$3 == "sched:sched_wakeup" { wk = $1 }
		$3 == "ipi:ipi_send_cpu" { ipi = $1 }
		END { printf "| %s | real | %d | %.2f | %.4f | %.4f | %.4f |\n", name, ops, cpu / ops, cs / ops, wk / ops, ipi / ops }' "$3"
}

sim() { # name, program file, ops line, real operations per simulated op
	cat >"$tmp/sc.toml" <<TOML
[host]
cpus = 2
duration = "${secs}s"
[[vm]]
name = "g"
vcpus = 2
pin = [0, 1]
program = "$2"
$3
TOML
	"$oversub" run "$tmp/sc.toml" --json >"$tmp/r.json"
	python3 - "$1" "$tmp/r.json" "${4:-1}" <<'PY'
import json, sys
v = json.load(open(sys.argv[2]))["vms"][0]
v["ops"] *= int(sys.argv[3])
ops = max(v["ops"], 1)
t = v["threads"]
cpu = sum(x["cpu_ns"] for x in t) / 1e3
cs = sum(x["nr_switches"] for x in t)
wk = sum(x["wakeup_latency_ns"]["samples"] for x in t)
print(f"| {sys.argv[1]} | sim | {v['ops']} | {cpu / ops:.2f} | {cs / ops:.4f} | {wk / ops:.4f} | {v['ipis_sent'] / ops:.4f} |")
PY
}

perf_stat() { # out, command...
	local out=$1
	shift
	perf stat -x, -o "$out" -e task-clock,context-switches,sched:sched_wakeup,ipi:ipi_send_cpu -- "$@"
}

# dbench: 4 clients (2 per CPU); ops = the operations in its summary table.
mkdir -p "$tmp/dbench"
perf_stat "$tmp/dbench.perf" dbench -t "$secs" -D "$tmp/dbench" 4 >"$tmp/dbench.out" 2>&1
ops=$(awk '/^ Operation/ { on = 1; next } on && NF == 4 && $2 ~ /^[0-9]+$/ { s += $2 } END { print s }' "$tmp/dbench.out")
real "dbench (4 clients)" "$ops" "$tmp/dbench.perf"
sed 's/"instance": 16/"instance": 4/' "$here/workloads/dbench.json" >"$tmp/dbench.json"
sim "dbench (4 clients)" "$tmp/dbench.json" ""

# hackbench: threads, 2 groups of 8 senders and 8 receivers; ops = messages.
loops=$((1000 * secs))
perf_stat "$tmp/hb.perf" hackbench -T -g 2 -f 8 -l "$loops" >"$tmp/hb.out" 2>&1
real "hackbench -T -g 2 -f 8" $((2 * 8 * 8 * loops)) "$tmp/hb.perf"
# One simulated op is a sender's pass: 7 rounds of 8 messages.
sim "hackbench -T -g 2 -f 8" "$here/workloads/hackbench.json" 'ops = "sender*"' 56
