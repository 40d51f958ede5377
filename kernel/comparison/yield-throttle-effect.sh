#!/usr/bin/env bash
# Effect test of the sched_yield() throttle comparison patch in the emulated
# host: boots BZIMAGE (the series + yield-throttle patches, built with
# build-yield-throttle.sh) under QEMU TCG with 2 CPUs and runs the RFC's
# benchmark (kernel/functional/yield_bench.c: ITIMER_PROF, 4 threads, two
# per CPU, each yielding in a loop) with debugfs yield_interval_ns at 0,
# 1 ns, 10 us and 1 ms. Counts per setting: the yields made and the
# involuntary switches (getrusage), i.e. the yields that reached schedule()
# and switched to the other thread of their CPU. Also runs the
# sched_yield_throttle KUnit suite at boot and reads its KTAP totals.
#
# Passes when: the knob exists; at 0 and 1 ns nearly every yield switches
# (>= 50%); at 1 ms the share of yields that switch falls below a tenth of
# its share at 0 (the throttle stops them before schedule()); KUnit
# reports its cases passed. The 10 us figures are printed, not judged:
# under TCG one loop iteration can take longer than 10 us (timings in TCG
# mean nothing), so how many calls 10 us stops depends on the host's speed.
#
# Usage: yield-throttle-effect.sh BZIMAGE
set -euo pipefail
bz=$1
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
bb=$(command -v busybox || echo /bin/busybox)
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$bb" "$root/bin/busybox"
for app in $("$bb" --list); do [[ $app == busybox ]] || ln -sf busybox "$root/bin/$app"; done
gcc -O2 -static -pthread -o "$root/yield_bench" "$here/../functional/yield_bench.c"
cat >"$root/init" <<'INIT'
#!/bin/sh
mount -t proc none /proc
mount -t sysfs none /sys
mount -t debugfs none /sys/kernel/debug
echo "@@KTAP"
dmesg | grep -E "sched_yield_throttle|# Totals|^\s*(not )?ok " | sed 's/^\[[^]]*\] //'
echo "@@KTAP_END"
k=/sys/kernel/debug/sched/yield_interval_ns
if [ ! -w $k ]; then
	echo "@@NOKNOB"
else
	for v in 0 1 10000 1000000; do
		echo $v > $k
		echo "@@RUN interval=$v $(/yield_bench 4 2 | head -1)"
	done
	echo 0 > $k
fi
echo "@@END"
poweroff -f
INIT
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"
log=$work/console.log
timeout 600 qemu-system-x86_64 -accel tcg -cpu EPYC -smp 2 -m 512 -nographic -no-reboot \
	-kernel "$bz" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet kunit.filter_glob=sched_yield_throttle" >"$log" 2>&1 || true
grep -q "@@END" "$log" || { echo "FAIL: the emulated host did not reach the end"; tail -20 "$log"; exit 1; }
grep -q "@@NOKNOB" "$log" && { echo "FAIL: no debugfs yield_interval_ns in this kernel"; exit 1; }
python3 - "$log" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
runs = {}
for m in re.finditer(r"@@RUN interval=(\d+) (.*)", text):
    kv = dict(f.split("=", 1) for f in m.group(2).split() if "=" in f)
    runs[int(m.group(1))] = (int(kv["yields"]), int(kv["nivcsw"]))
ktap = re.search(r"@@KTAP(.*?)@@KTAP_END", text, re.S)
tot = re.search(r"# Totals: pass:(\d+) fail:(\d+)", ktap.group(1) if ktap else "")
fails = []
print("interval_ns  yields  switched  switched/yields")
for v in sorted(runs):
    y, s = runs[v]
    print(f"{v:>11}  {y:>6}  {s:>8}  {s / max(y, 1):.3f}")
share = {v: runs[v][1] / max(runs[v][0], 1) for v in runs}
if set(runs) != {0, 1, 10000, 1000000}:
    fails.append(f"runs missing: {sorted(runs)}")
else:
    for v in (0, 1):
        if share[v] < 0.5:
            fails.append(f"interval {v}: only {share[v]:.2f} of the yields switched")
    if share[1000000] >= share[0] / 10:
        fails.append(f"1 ms: {share[1000000]:.3f} of the yields switched, not below a tenth of {share[0]:.3f}")
if not tot:
    fails.append("KUnit: no sched_yield_throttle totals in the log")
elif int(tot.group(2)) or not int(tot.group(1)):
    fails.append(f"KUnit: pass {tot.group(1)} fail {tot.group(2)}")
else:
    print(f"KUnit sched_yield_throttle: pass {tot.group(1)} fail 0")
for f in fails:
    print("FAIL:", f)
print("PASS" if not fails else f"{len(fails)} failed")
sys.exit(1 if fails else 0)
PY
