#!/bin/sh
# /init of the functional-test initramfs (busybox). Runs inside the emulated host (QEMU TCG).
# Kernel command line:
#   ft.suites=selftests,functional   which suites to run (default both)
#   ft.tests=a,b                     only these selftests / functional tests (names; default all)
#   ft.st_timeout=SECS               per-selftest timeout (default 300)
#   ft.ft_timeout=SECS               whole functional suite timeout (default 1200)
#   ft.verbose=1                     ftest prints every trace line it reads
# Output markers parsed by kernel/functional/run.py (one per line, at line start):
#   @@BEGIN, @@ST_BEGIN name, @@ST_RETRY name rc=N, @@ST_END name rc=N, @@FT_BEGIN, @@FT_END rc=N, @@DMESG_BEGIN/END, @@DONE
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup

suites=selftests,functional
tests=
st_timeout=300
ft_timeout=1200
for a in $(cat /proc/cmdline); do
	case $a in
	ft.suites=*) suites=${a#ft.suites=} ;;
	ft.tests=*) tests=${a#ft.tests=} ;;
	ft.st_timeout=*) st_timeout=${a#ft.st_timeout=} ;;
	ft.ft_timeout=*) ft_timeout=${a#ft.ft_timeout=} ;;
	ft.verbose=1) export FTEST_VERBOSE=1 ;;
	esac
done
tests=$(echo "$tests" | tr ',' ' ')
selected() { # name -> 0 if selected
	[ -z "$tests" ] && return 0
	for t in $tests; do [ "$t" = "$1" ] && return 0; done
	return 1
}

echo "@@BEGIN kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) version=$(cat /proc/version | cut -d' ' -f3-4)"
if [ -e /dev/kvm ]; then echo "@@KVM yes"; else echo "@@KVM no"; dmesg | grep -i -e kvm -e svm | tail -5; fi
echo "@@KNOBS $(ls /sys/module/kvm/parameters 2>/dev/null | tr '\n' ' ')"

case ",$suites," in *,selftests,*)
	for st in $(cat /st/list); do
		name=${st##*/}
		selected "$name" || continue
		echo "@@ST_BEGIN $name"
		t0=$(cut -d' ' -f1 /proc/uptime)
		timeout "$st_timeout" /st/$name $(grep "^$name " /st/args | cut -d' ' -f2-) >/tmp/st.out 2>&1
		rc=$?
		# One retry of a failure (not a skip or timeout), the same on every
		# kernel: upstream selftests bound guest waits in TSC cycles sized
		# for hardware (xapic_ipi_test: 2e9 cycles for an IPI round trip),
		# which TCG on a loaded host can exceed.  The retry is reported.
		if [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$rc" != 124 ] && [ "$rc" != 143 ]; then
			tail -n 25 /tmp/st.out
			echo "@@ST_RETRY $name rc=$rc"
			timeout "$st_timeout" /st/$name $(grep "^$name " /st/args | cut -d' ' -f2-) >/tmp/st.out 2>&1
			rc=$?
		fi
		t1=$(cut -d' ' -f1 /proc/uptime)
		tail -n 25 /tmp/st.out
		echo "@@ST_END $name rc=$rc t0=$t0 t1=$t1"
	done
esac

case ",$suites," in *,functional,*)
	ft_tests=
	for t in $(/ftest list); do selected "$t" && ft_tests="$ft_tests $t"; done
	if [ -n "$ft_tests" ]; then
		echo "@@FT_BEGIN"
		timeout "$ft_timeout" /ftest $ft_tests
		echo "@@FT_END rc=$?"
	fi
esac

# The whole kernel log (every level), scanned by run.py for WARNING/BUG/lockdep/UBSAN reports.
echo "@@DMESG_BEGIN"
dmesg
echo "@@DMESG_END"
echo "@@DONE"
sync
reboot -f
