#!/usr/bin/env bash
# Build the chosen x86 KVM selftests of a kernel tree, statically linked, into OUTDIR.
# Never writes into the tree's tracked files: UAPI headers go to OUTDIR/hdr (via a separate
# O= object dir when the source tree is clean, else the generated, untracked usr/ of the tree),
# objects and binaries go to OUTDIR/kvm via OUTPUT=.
# Usage: build-selftests.sh TREE OUTDIR TEST...     (TEST like x86_64/xapic_ipi_test)
set -euo pipefail
tree=$(realpath "$1"); out=$2; shift 2
mkdir -p "$out"; out=$(realpath "$out")
jobs=${FT_JOBS:-2}
hdr=$out/hdr
if [[ ! -f $hdr/include/linux/kvm.h || $tree/include/uapi/linux/kvm.h -nt $hdr/include/linux/kvm.h ]]; then
	rm -rf "$hdr"
	if ! make -s -C "$tree" O="$out/hdr-obj" ARCH=x86_64 INSTALL_HDR_PATH="$hdr" headers_install >"$out/hdr.log" 2>&1; then
		# source tree has an in-tree build (.config): headers_install writes only its generated usr/include
		make -s -C "$tree" ARCH=x86_64 INSTALL_HDR_PATH="$hdr" headers_install >>"$out/hdr.log" 2>&1 ||
			{ cat "$out/hdr.log" >&2; exit 1; }
	fi
fi
targets=()
for t in "$@"; do targets+=("$out/kvm/$t"); done
mkdir -p "$out/kvm"
nice -n 5 make -s -C "$tree/tools/testing/selftests/kvm" -j"$jobs" ARCH=x86_64 OUTPUT="$out/kvm" \
	KHDR_INCLUDES="-isystem $hdr/include" EXTRA_CFLAGS="-static" "${targets[@]}" >"$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; exit 1; }
for t in "${targets[@]}"; do [[ -x $t ]] || { echo "missing $t" >&2; exit 1; }; done
