#!/usr/bin/env bash
# The real programs behind the named workloads, each in one defined
# configuration (docs/workloads.md, "Real programs"): `make measure`.
#
#   scripts/measure-real.sh [--duration S] [--perf] [NAME...]
#
# Default: records each program with the project's recorder ($OVERSUB_BIN,
# default target/release/oversub),
#   oversub record --out recordings/NAME --duration L --buffer-kb 262144 -- CMD
# (the program runs about S seconds by its own options; L, 6 S within
# 300..600 s, only bounds it) and appends the program's op count to
# recordings/NAME/ops.txt ("program op markers" in docs/workloads.md); then
# `oversub derive recordings/NAME` gives the derived workload those ops (a
# Debian program has no markers). Fails with one line if the oversub has no
# `record` subcommand.
# --perf: instead runs each program once under `perf stat` and /usr/bin/time
# and prints one markdown row per program (the table in docs/workloads.md).
# --run NAME: runs one program in its configuration (what is recorded);
# also kernbench-b, kernbench's smaller build for its part B (below).
# --mm NAME...: runs each program (ebizzy-M, -M-64, -M-80, ebizzy-64) once more, untraced by the
# recorder, under scripts/measure-mm.bt (mmap_lock acquisitions and holds
# by call site, page faults, shootdowns, per op) into recordings/NAME/mm.txt,
# then scripts/derive-mm.py NAME (docs/workloads.md, "Memory paths"). The
# record mode does this after recording each of them.
#
# Programs (NAME): dbench-tmpfs dbench-ext4 vips hackbench kernbench
# sysbench-threads sysbench-mutex dedup ebizzy ebizzy-M pingpong idle, and ebizzy-64,
# ebizzy-M-64, ebizzy-M-80 (ebizzy's default of 2 threads per CPU for the
# history scenarios' 64- and 80-vCPU guests: 128 and 160 threads, on this
# machine's CPUs), kernbench-64 (make -j128, kernbench's 2 jobs per CPU). Needs root (mounts,
# tracepoints); installs what it needs (scripts/install-deps.sh measure) and
# builds programs/ (dedup, ebizzy, vipsbench). Inputs, mounts and the kernel
# tree live in $OVERSUB_MEASURE_DIR (default /tmp/oversub-measure).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
W=${OVERSUB_MEASURE_DIR:-/tmp/oversub-measure}
THREADS=16 # the published runs' vCPUs per VM: 16 threads/clients/jobs
ALL=(dbench-tmpfs dbench-ext4 vips hackbench kernbench sysbench-threads sysbench-mutex dedup ebizzy ebizzy-M
	pingpong idle ebizzy-64 ebizzy-M-64 ebizzy-M-80 kernbench-64)
bin=$here/programs/bin
# kernbench-b (--run only, not recorded by `make measure`): the objects of
# kernbench's part B, the first 48 of mm/'s defconfig objects by name.
KERNBENCH_B=(backing-dev.o compaction.o debug.o dmapool.o early_ioremap.o execmem.o fadvise.o filemap.o
	folio-compat.o gup.o highmem.o hugetlb.o hugetlb_cgroup.o hugetlb_vmemmap.o init-mm.o interval_tree.o
	list_lru.o maccess.o madvise.o memblock.o memfd.o memory-tiers.o memory.o mempolicy.o mempool.o migrate.o
	mincore.o mlock.o mm_init.o mmap.o mmap_lock.o mmu_gather.o mmu_notifier.o mmzone.o mprotect.o mremap.o
	mseal.o msync.o numa.o numa_memblks.o oom_kill.o page-writeback.o page_alloc.o page_counter.o page_io.o
	page_vma_mapped.o pagewalk.o percpu.o)

die() {
	echo "measure: $*" >&2
	exit 2
}

# ---- setup (idempotent) ----

mounted() { mountpoint -q "$1"; }

setup_tmpfs() {
	mkdir -p "$W/tmpfs"
	mounted "$W/tmpfs" || mount -t tmpfs -o size=2g oversub-measure "$W/tmpfs"
}

setup_ext4() {
	mkdir -p "$W/ext4"
	if ! mounted "$W/ext4"; then
		[[ -f $W/ext4.img ]] || { truncate -s 2G "$W/ext4.img" && mkfs.ext4 -q -F "$W/ext4.img"; }
		mount -o loop "$W/ext4.img" "$W/ext4"
	fi
}

# PARSEC simlarge sizes: dedup 184 MiB of input, vips a 2662x5500 image.
setup_inputs() {
	mkdir -p "$W"
	[[ -f $W/dedup-simlarge.dat ]] || "$bin/dedup" -g 184 -o "$W/dedup-simlarge.dat"
	[[ -f $W/vips-simlarge.v ]] || "$bin/vipsbench" -g 2662x5500 "$W/vips-simlarge.v"
}

# kernbench: the 6.12 tree, configured (defconfig) and prepared once; the
# timed part compiles kernel/sched/ and mm/ from scratch.
setup_kernel() {
	local k=$W/linux
	if [[ ! -f $k/.oversub-prepared ]]; then
		rm -rf "$k"
		mkdir -p "$k"
		echo "measure: unpacking /usr/src/linux-source-6.12.tar.xz into $k" >&2
		tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$k" --strip-components=1
		make -s -C "$k" defconfig
		make -s -C "$k" -j"$(nproc)" prepare
		touch "$k/.oversub-prepared"
	fi
}

setup() {
	"$here/scripts/install-deps.sh" measure
	make -s -C "$here/programs"
	setup_tmpfs
	setup_ext4
	setup_inputs
	if [[ " ${names[*]} " == *" kernbench"* ]]; then setup_kernel; fi
}

# ---- one program in its configuration ----

# ops FILE PROGRAM UNIT N SECONDS: the op line of a program that has no
# markers of its own (Debian's programs), from its output.
ops_line() {
	[[ -n ${OVERSUB_OPS_FILE:-} ]] || return 0
	echo "program=$1 unit=$2 ops=$3 seconds=$4" >>"$OVERSUB_OPS_FILE"
}

run_one() { # NAME; stdout = the program's output
	local name=$1 d=$DURATION out t0 t1
	out=$(mktemp /tmp/oversub-measure-out.XXXXXX)
	t0=$(date +%s.%N)
	case $name in
	dbench-tmpfs | dbench-ext4)
		local dir=$W/${name#dbench-}/dbench
		rm -rf "$dir" && mkdir -p "$dir"
		dbench -t "$d" -D "$dir" "$THREADS" >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line "$name" operations \
			"$(awk '/^ Operation/ { on = 1; next } on && NF == 4 && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }' "$out")" \
			"$(echo "$t1 - $t0" | bc)"
		;;
	vips)
		# One pass takes a few seconds here; enough passes for the duration.
		"$bin/vipsbench" -t "$THREADS" -p "$((d / 4 + 1))" "$W/vips-simlarge.v" "$W/tmpfs/vips-out.v" >"$out" 2>&1
		;;
	hackbench)
		# Threads, 2 groups of 8 senders x 8 receivers (32 threads), sockets.
		hackbench -T -g 2 -f 8 -l "$((1000 * d))" >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line hackbench messages "$((2 * 8 * 8 * 1000 * d))" "$(echo "$t1 - $t0" | bc)"
		;;
	kernbench | kernbench-64)
		# kernbench-64: kernbench's default of 2 jobs per CPU for the history
		# scenarios' 64-vCPU guests (make -j128), on this machine's CPUs.
		local k=$W/linux jobs=$THREADS
		[[ $name == kernbench-64 ]] && jobs=128
		[[ -f $k/.oversub-prepared ]] || die "$k is not prepared (scripts/measure-real.sh kernbench sets it up)"
		find "$k/kernel/sched" "$k/mm" -name '*.o' -delete
		# 128 jobs on a shared machine: niced (nice -n 19), so the other
		# users keep their CPU; -j16 runs at the default nice.
		local nice=0
		[[ $jobs -gt $THREADS ]] && nice=19
		# One build in the tree at a time (flock); ccache off (a cache hit
		# runs no cc1).
		CCACHE_DISABLE=1 flock "$k/.oversub-build-lock" \
			nice -n "$nice" make -s -C "$k" -j"$jobs" kernel/sched/ mm/ >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line "$name" objects "$(find "$k/kernel/sched" "$k/mm" -name '*.o' -newer "$out" | wc -l)" \
			"$(echo "$t1 - $t0" | bc)"
		;;
	kernbench-b)
		# kernbench's part B (scripts/check-recordings.py --guest): the same
		# build, smaller, to be run six times beside hogs and without:
		# make -j16 of a fixed list of KERNBENCH_B objects (the first 48 of
		# mm/'s defconfig objects by name), ccache off. Besides the whole
		# run, the op line gives the steady window (steady_ops,
		# steady_seconds): from the first object's completion to the one
		# after which make starts the last object, while all 16 jobs are
		# busy (the derived program's job slots loop for ever: it has no
		# start-up and no tail); steady_from is its start (epoch seconds).
		local k=$W/linux jobs=$THREADS objs=()
		[[ -f $k/.oversub-prepared ]] || die "$k is not prepared (scripts/measure-real.sh kernbench sets it up)"
		local o
		for o in "${KERNBENCH_B[@]}"; do
			[[ -f $k/mm/${o%.o}.c ]] || die "$k/mm/${o%.o}.c is missing: KERNBENCH_B names objects of the 6.12 tree"
			rm -f "$k/mm/$o"
			objs+=("mm/$o")
		done
		CCACHE_DISABLE=1 flock "$k/.oversub-build-lock" make -s -C "$k" -j"$jobs" "${objs[@]}" >"$out" 2>&1
		t1=$(date +%s.%N)
		local times n
		times=$(for o in "${objs[@]}"; do if [[ $k/$o -nt $out ]]; then stat -c %.9Y "$k/$o"; fi; done | sort -n)
		n=$(grep -c . <<<"$times" || true)
		[[ $n == "${#objs[@]}" ]] || die "kernbench-b built $n of ${#objs[@]} objects"
		if [[ -n ${OVERSUB_OPS_FILE:-} ]]; then
			awk -v n="$n" -v j="$jobs" -v s="$(echo "$t1 - $t0" | bc)" '{ t[NR] = $1 }
				END { printf "program=kernbench-b unit=objects ops=%d seconds=%s steady_ops=%d steady_seconds=%.6f steady_from=%.6f\n",
					n, s, n - j - 1, t[n - j] - t[1], t[1] }' <<<"$times" >>"$OVERSUB_OPS_FILE"
		fi
		;;
	pingpong)
		# Two threads handing a turn back and forth through two pipes
		# (perf bench sched pipe -T: each writes a word to the other's
		# pipe, then blocks reading its own). Fixed work: ~11 us a round
		# trip here untraced. One op is a turn (a hand-off): 2 per loop.
		local loops=$((40000 * d))
		perf bench sched pipe -T -l "$loops" >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line pingpong turns "$((2 * loops))" "$(echo "$t1 - $t0" | bc)"
		;;
	idle)
		# An idle guest's user space: a process that sleeps (coreutils'
		# sleep, one nanosleep). No ops: nothing is done.
		sleep "$d" >"$out" 2>&1
		;;
	sysbench-threads)
		sysbench threads --threads="$THREADS" --time="$d" run >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line "$name" events "$(awk '/total number of events/ { print $NF }' "$out")" "$(echo "$t1 - $t0" | bc)"
		;;
	sysbench-mutex)
		# Fixed work (sysbench's defaults: 4096 mutexes, 50000 locks of 10000 loops per thread).
		sysbench mutex --threads="$THREADS" run >"$out" 2>&1
		t1=$(date +%s.%N)
		ops_line "$name" locks "$((THREADS * 50000))" "$(echo "$t1 - $t0" | bc)"
		;;
	dedup)
		"$bin/dedup" -t "$THREADS" -p "$((d / 8 + 1))" -i "$W/dedup-simlarge.dat" -o "$W/tmpfs/dedup-out.dd" >"$out" 2>&1
		;;
	ebizzy)
		"$bin/ebizzy" -t "$THREADS" -S "$d" >"$out" 2>&1
		;;
	ebizzy-M)
		"$bin/ebizzy" -t "$THREADS" -S "$d" -M >"$out" 2>&1
		;;
	# The guest's CPU count sets glibc's arena limit (8 per CPU on 64-bit):
	# on this machine's 2 CPUs, 128 threads would share 16 arenas, and -M's
	# free would rarely trim (1.9 page faults per record instead of 96);
	# on a 64- or 80-CPU guest every thread has its own arena.
	ebizzy-64)
		GLIBC_TUNABLES=glibc.malloc.arena_max=512 "$bin/ebizzy" -t 128 -S "$d" >"$out" 2>&1
		;;
	ebizzy-M-64)
		GLIBC_TUNABLES=glibc.malloc.arena_max=512 "$bin/ebizzy" -t 128 -S "$d" -M >"$out" 2>&1
		;;
	ebizzy-M-80)
		GLIBC_TUNABLES=glibc.malloc.arena_max=640 "$bin/ebizzy" -t 160 -S "$d" -M >"$out" 2>&1
		;;
	*) die "unknown program $name (known: ${ALL[*]})" ;;
	esac
	cat "$out"
	rm -f "$out"
}

# ---- modes ----

DURATION=10
MODE=record
names=()
while (($#)); do
	case $1 in
	--duration)
		[[ ${2:-} =~ ^[0-9]+$ ]] && ((${2} >= 1 && ${2} <= 600)) || die "--duration ${2:-}: allowed 1..600 (seconds)"
		DURATION=$2
		shift 2
		;;
	--perf)
		MODE=perf
		shift
		;;
	--mm)
		MODE=mm
		shift
		;;
	--run)
		[[ -n ${2:-} ]] || die "--run needs a program name"
		MODE=run
		names=("$2")
		shift 2
		;;
	-*) die "unknown option $1 (allowed: --duration S, --perf, --mm, --run NAME)" ;;
	*)
		names+=("$1")
		shift
		;;
	esac
done
((${#names[@]})) || names=("${ALL[@]}")
for n in "${names[@]}"; do
	if [[ $MODE == run && $n == kernbench-b ]]; then continue; fi
	[[ " ${ALL[*]} " == *" $n "* ]] || die "unknown program $n (known: ${ALL[*]}; --run only: kernbench-b)"
done
[[ $(id -u) == 0 ]] || die "needs root (tmpfs/loop mounts, tracepoints)"

if [[ $MODE == run ]]; then
	run_one "${names[0]}"
	exit 0
fi

# The queue messages of dedup and vips (docs/workloads.md, "Queue
# messages"): bpftrace uprobes on the program's queue (dedup) or libvips'
# semaphore functions, beside the recorder in the same run, printed at its
# end into recordings/NAME/queues.txt. The recording's wakeups say who woke
# whom, not how many items a wakeup carried; these counts do.
bt_pid=
queues_start() { # NAME FILE
	local probe target
	case $1 in
	dedup) probe=$here/scripts/measure-queues-dedup.bt target=$bin/dedup ;;
	vips)
		probe=$here/scripts/measure-queues-vips.bt
		target=$(ldd "$bin/vipsbench" | awk '$1 ~ /^libvips\.so/ { print $3 }')
		[[ -f $target ]] || die "vipsbench links no libvips.so (ldd $bin/vipsbench)"
		;;
	*) return 0 ;;
	esac
	command -v bpftrace >/dev/null || die "bpftrace is missing (scripts/install-deps.sh measure)"
	bpftrace "$probe" "$target" >"$2" 2>"$2.err" &
	bt_pid=$!
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '^Attaching' "$2" 2>/dev/null && return 0
		kill -0 "$bt_pid" 2>/dev/null || die "bpftrace $probe failed: $(tail -1 "$2.err")"
		sleep 0.1
	done
	kill "$bt_pid"
	die "bpftrace $probe did not attach in 60 s"
}
queues_stop() {
	[[ -n $bt_pid ]] || return 0
	kill -INT "$bt_pid"
	wait "$bt_pid" || true
	rm -f "$new.queues.err"
	bt_pid=
}

# The memory paths of an ebizzy* program (docs/workloads.md, "Memory
# paths"): bpftrace scripts/measure-mm.bt beside one untraced run of the
# program (the recorder's tracing of every fault would slow the faults it
# times), into recordings/NAME/mm.txt; its first line says what ran.
mm_measure() { # NAME
	local n=$1 dir=$here/recordings/$1 tmp pid i
	# The recordings scripts/derive-mm.py derives (its GUEST_MM); plain
	# ebizzy's copies stay in the arena (no memory paths to derive).
	[[ " ebizzy-M ebizzy-M-64 ebizzy-M-80 ebizzy-64 " == *" $n "* ]] || return 0
	[[ -d $dir ]] || die "recordings/$n does not exist (record it first)"
	command -v bpftrace >/dev/null || die "bpftrace is missing (scripts/install-deps.sh measure)"
	tmp=$dir/mm.txt.new
	printf '{"type": "oversub_mm_run", "data": {"command": "scripts/measure-real.sh --duration %s --run %s", "kernel": "%s", "machine": "%s CPUs, %s", "date": "%s", "load": "%s", "probe": "scripts/measure-mm.bt"}}\n' \
		"$DURATION" "$n" "$(uname -r)" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(uptime | sed 's/.*load average: //')" >"$tmp"
	ulimit -l unlimited 2>/dev/null || true
	bpftrace -f json "$here/scripts/measure-mm.bt" ebizzy >>"$tmp" 2>"$tmp.err" &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q attached_probes "$tmp" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || { rm -f "$tmp"; die "bpftrace measure-mm.bt failed: $(tail -1 "$tmp.err")"; }
		sleep 0.1
	done
	((i < 600)) || { kill "$pid"; rm -f "$tmp" "$tmp.err"; die "bpftrace measure-mm.bt did not attach in 60 s"; }
	echo "measure: memory paths of $n (${DURATION} s; $(uptime | sed 's/.*load/load/'))" >&2
	OVERSUB_OP_MARK=1 "$here/scripts/measure-real.sh" --duration "$DURATION" --run "$n" >/dev/null ||
		{ kill "$pid"; rm -f "$tmp" "$tmp.err"; die "$n failed under measure-mm.bt"; }
	kill -INT "$pid"
	wait "$pid" || true
	rm -f "$tmp.err"
	mv "$tmp" "$dir/mm.txt"
	python3 "$here/scripts/derive-mm.py" "$n" >&2 || die "scripts/derive-mm.py $n failed"
}

if [[ $MODE == mm ]]; then
	make -s -C "$here/programs"
	for n in "${names[@]}"; do mm_measure "$n"; done
	exit 0
fi

oversub=${OVERSUB_BIN:-$here/target/release/oversub}
if [[ $MODE == record ]]; then
	[[ -x $oversub ]] || die "$oversub is not built (cargo build --release --locked)"
	"$oversub" record --help >/dev/null 2>&1 ||
		die "$oversub has no 'record' subcommand yet (issue 24 item 1); use --perf to measure without it"
fi

setup

if [[ $MODE == record ]]; then
	mkdir -p "$here/recordings"
	for n in "${names[@]}"; do
		new=$here/recordings/$n.new
		rm -rf "$new" "$new.ops"
		# The program's own options set its length; the recorder's limit is
		# only a bound (dbench adds warm-up and clean-up, dedup, vips and
		# kernbench do fixed work): a run it cuts short writes no op count.
		limit=$((DURATION * 6 > 600 ? 600 : (DURATION * 6 < 300 ? 300 : DURATION * 6)))
		echo "measure: recording $n (${DURATION} s, at most ${limit} s; $(uptime | sed 's/.*load/load/'))" >&2
		# The recorder creates --out itself; the op count joins it after.
		# 256 MiB of ring buffer per CPU: hackbench, sysbench threads and
		# dbench make about a million trace events a second, more than a
		# reader sharing a loaded machine keeps up with in 32 MiB.
		queues_start "$n" "$new.queues"
		OVERSUB_OPS_FILE=$new.ops OVERSUB_OP_MARK=1 \
			"$oversub" record --out "$new" --duration "${limit}s" --buffer-kb 262144 -- \
			"$here/scripts/measure-real.sh" --duration "$DURATION" --run "$n" ||
			{ queues_stop; rm -rf "$new" "$new.ops" "$new.queues"; die "recording $n failed"; }
		queues_stop
		# idle does nothing and counts nothing: it has no ops.
		if [[ $n != idle ]]; then
			[[ -s $new.ops ]] || { rm -rf "$new" "$new.ops"; die "$n wrote no op count (OVERSUB_OPS_FILE)"; }
			mv "$new.ops" "$new/ops.txt"
		fi
		if [[ -f $new.queues ]]; then mv "$new.queues" "$new/queues.txt"; fi
		rm -rf "$here/recordings/$n"
		mv "$new" "$here/recordings/$n"
		# Debian's programs have no op markers: their derived workload
		# takes its ops from ops.txt.
		"$oversub" derive "$here/recordings/$n" >&2 || die "oversub derive recordings/$n failed"
		mm_measure "$n"
	done
	exit 0
fi

# --perf: per program, over its process tree (perf inherits to children).
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), $(uptime | sed 's/.*load/load/')"
echo
echo "| program | wall s | CPU s | CPU util (of $(nproc)) | ops | ops/s | CPU us/op | switches/op | vol. / invol. switches | wakeups/op | futex calls/op | IPIs/op | TLB shootdowns/op | page faults/op |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
tmp=$(mktemp -d /tmp/oversub-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for n in "${names[@]}"; do
	rm -f "$tmp/ops"
	t0=$(date +%s.%N)
	OVERSUB_OPS_FILE=$tmp/ops /usr/bin/time -f '%c %w' -o "$tmp/time" \
		perf stat -x, -o "$tmp/perf" \
		-e task-clock,context-switches,page-faults,sched:sched_wakeup,ipi:ipi_send_cpu,ipi:ipi_send_cpumask \
		-e syscalls:sys_enter_futex \
		-e tlb:tlb_flush --filter 'reason==4' -- \
		"$here/scripts/measure-real.sh" --duration "$DURATION" --run "$n" >"$tmp/out" 2>&1 ||
		{ echo "measure: $n failed:" >&2; tail -5 "$tmp/out" >&2; continue; }
	t1=$(date +%s.%N)
	# idle counts no ops (no op line).
	ops=
	if [[ -f $tmp/ops ]]; then ops=$(sed -n 's/.* ops=\([0-9]*\) .*/\1/p' "$tmp/ops" | tail -1); fi
	read -r invol vol <"$tmp/time"
	awk -F, -v name="$n" -v wall="$(echo "$t1 - $t0" | bc)" -v ops="${ops:-0}" -v cpus="$(nproc)" \
		-v vol="$vol" -v invol="$invol" '
		$3 == "task-clock" { cpu = $1 / 1000 }
		$3 == "context-switches" { cs = $1 }
		$3 == "page-faults" { pf = $1 }
		$3 == "sched:sched_wakeup" { wk = $1 }
		$3 == "ipi:ipi_send_cpu" || $3 == "ipi:ipi_send_cpumask" { ipi += $1 }
		$3 == "syscalls:sys_enter_futex" { fx = $1 }
		$3 == "tlb:tlb_flush" { tlb = $1 }
		END { o = ops > 0 ? ops : 1
			printf "| %s | %.2f | %.2f | %.0f%% | %d | %.1f | %.1f | %.4g | %d / %d | %.4g | %.4g | %.4g | %.4g | %.4g |\n",
			name, wall, cpu, 100 * cpu / (wall * cpus), ops, ops / wall, cpu * 1e6 / o, cs / o, vol, invol,
			wk / o, fx / o, ipi / o, tlb / o, pf / o }' "$tmp/perf"
done
