#!/usr/bin/env bash
# Build the functional-test initramfs: busybox-static + init.sh + ftest + KVM selftests.
# Usage: build-initramfs.sh OUT.cpio.gz FTEST_BIN SELFTEST_DIR SELFTEST...   (SELFTEST like x86_64/xapic_ipi_test[:args])
set -euo pipefail
out=$1 ftest=$2 stdir=$3; shift 3
here=$(dirname "$(realpath "$0")")
bb=$(command -v busybox || echo /bin/busybox)
if readelf -l "$(realpath "$bb")" 2>/dev/null | grep -q 'Requesting program interpreter'; then
	echo "busybox at $bb is not static (apt-get install busybox-static)" >&2; exit 1
fi
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,st,etc,root}
cp "$bb" "$root/bin/busybox"
for app in $("$bb" --list); do [[ $app == busybox ]] || ln -sf busybox "$root/bin/$app"; done
cp "$here/init.sh" "$root/init"; chmod 755 "$root/init"
cp "$ftest" "$root/ftest"
: >"$root/st/list"; : >"$root/st/args"
for spec in "$@"; do
	t=${spec%%:*}; args=; [[ $spec == *:* ]] && args=${spec#*:}
	name=${t##*/}
	cp "$stdir/$t" "$root/st/$name"
	echo "$name" >>"$root/st/list"
	[[ -n $args ]] && echo "$name $args" >>"$root/st/args"
done
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
