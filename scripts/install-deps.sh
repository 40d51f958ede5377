#!/usr/bin/env bash
# Installs what `make run` / `make test` need on a fresh Debian 12 machine.
# Idempotent: installs only what is missing.  Usage: install-deps.sh [rust|kernel|conform|python|measure|record|all]
set -euo pipefail
what=${1:-all}

apt_pkgs=()
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || apt_pkgs+=("$1"); }

if [[ $what == rust || $what == all ]]; then
	need_pkg build-essential
	# `oversub reproduce` (make run): the eevdf-latency section runs Debian's
	# cyclictest and hackbench, the yield-throttle section perf.
	need_pkg rt-tests
	need_pkg linux-perf
fi
if [[ $what == python || $what == all ]]; then
	# `make python`: a venv for the `oversub` package (python3-venv) and the
	# headers PyO3 builds against (python3-dev). Debian 12's Python is 3.11,
	# for which ray, pandas and maturin publish wheels on PyPI.
	for p in python3 python3-venv python3-dev python3-pip; do
		need_pkg "$p"
	done
fi
if [[ $what == conform || $what == all ]]; then
	# `oversub conform FILE.json` runs rt-app programs with the real rt-app;
	# `make test-eevdf-latency` runs cyclictest and hackbench (rt-tests).
	need_pkg rt-app
	need_pkg rt-tests
fi
if [[ $what == measure || $what == all ]]; then
	# `make measure` (scripts/measure-real.sh): the real programs behind the
	# named workloads, the libraries the project's own programs/ build
	# against, the kernel tree kernbench compiles, and the tools that count
	# (bpftrace: the queue messages of dedup and vips, uprobes).
	for p in build-essential pkg-config dbench rt-tests sysbench libvips-dev zlib1g-dev libssl-dev \
		linux-source-6.12 bc flex bison libelf-dev e2fsprogs time linux-perf bpftrace; do
		need_pkg "$p"
	done
fi
if [[ $what == record || $what == all ]]; then
	# `make test-recordings` re-runs the recorded programs (recordings/*/check.json)
	# under `oversub record` (tracefs, no other tracer needed).
	for p in rt-tests dbench sysbench python3; do
		need_pkg "$p"
	done
fi
if [[ $what == kernel || $what == all ]]; then
	for p in linux-source-6.12 build-essential bc flex bison libelf-dev libssl-dev dwarves cpio \
		kmod rsync ccache sparse python3 python3-ply qemu-system-x86 busybox-static; do
		need_pkg "$p"
	done
fi
if ((${#apt_pkgs[@]})); then
	echo "install-deps: apt-get install ${apt_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -o DPkg::Lock::Timeout=600 -y -q "${apt_pkgs[@]}" >/dev/null
fi

if [[ $what == rust || $what == all ]]; then
	if ! command -v cargo >/dev/null 2>&1; then
		if [[ -x $HOME/.cargo/bin/cargo ]]; then
			echo "install-deps: cargo is in \$HOME/.cargo/bin; add it to PATH" >&2
		else
			echo "install-deps: installing Rust via Debian's cargo package" >&2
			apt-get install -y -q cargo rustc >/dev/null
		fi
	fi
	if command -v rustup >/dev/null 2>&1; then
		rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
	fi
fi
