#!/usr/bin/env bash
# Build the chosen x86 KVM selftests of a kernel tree, statically linked, into OUTDIR.
# Never writes into a clean tree: UAPI headers go to OUTDIR/hdr via an O= object dir, objects
# and binaries go to OUTDIR/kvm via OUTPUT=.  Only a tree that already has an in-tree build
# (.config: O= refuses it) gets its headers from an in-tree headers_install.  Never falls back
# from O= to in-tree: the in-tree make leaves arch/x86/include/generated behind, and every O=
# build of the tree then stops with "The source tree is not clean".
# Two runs on one OUTDIR (two `make test` sharing a cache) take turns (flock on OUTDIR/.lock).
# Usage: build-selftests.sh TREE OUTDIR TEST...     (TEST like x86_64/xapic_ipi_test)
set -euo pipefail
tree=$(realpath "$1"); out=$2; shift 2
mkdir -p "$out"; out=$(realpath "$out")
exec 9>"$out/.lock"
flock 9
jobs=${FT_JOBS:-2}
hdr=$out/hdr
if [[ ! -f $hdr/include/linux/kvm.h || $tree/include/uapi/linux/kvm.h -nt $hdr/include/linux/kvm.h ]]; then
	rm -rf "$hdr" "$out/hdr-obj"
	if [[ -e $tree/.config ]]; then
		hdr_obj=()
	else
		hdr_obj=(O="$out/hdr-obj")
	fi
	make -s -C "$tree" "${hdr_obj[@]}" ARCH=x86_64 INSTALL_HDR_PATH="$hdr" headers_install >"$out/hdr.log" 2>&1 ||
		{ echo "build-selftests.sh: headers_install from $tree failed (log: $out/hdr.log):" >&2
		  tail -20 "$out/hdr.log" >&2; exit 1; }
fi
targets=()
for t in "$@"; do targets+=("$out/kvm/$t"); done
mkdir -p "$out/kvm"
nice -n 5 make -s -C "$tree/tools/testing/selftests/kvm" -j"$jobs" ARCH=x86_64 OUTPUT="$out/kvm" \
	KHDR_INCLUDES="-isystem $hdr/include" EXTRA_CFLAGS="-static" "${targets[@]}" >"$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; exit 1; }
for t in "${targets[@]}"; do [[ -x $t ]] || { echo "missing $t" >&2; exit 1; }; done
