#!/usr/bin/env bash
# Build the oversub kernel from Debian's linux-source-6.12.
#
#   build.sh patched|unpatched        -> prints the absolute bzImage path last
#   build.sh --print-tree patched|unpatched  -> prints the source tree path
#
# Cache: ${OVERSUB_CACHE:-~/.cache/oversub} (src/, build/, ccache/); the bzImage is built in
# TREE/oversub-build (see out_of in common.sh).
source "$(dirname "$0")/common.sh"

usage() { die "usage: build.sh [--print-tree] patched|unpatched"; }

print_tree=0
if [[ ${1:-} == --print-tree ]]; then print_tree=1; shift; fi
variant=${1:-}
[[ $variant == patched || $variant == unpatched ]] || usage

ensure_deps
tree=$(tree_of "$variant")
if ((print_tree)); then
	echo "$tree"
	exit 0
fi

out=$(out_of "$tree")
# One build per O= directory at a time (make test-kernel and the functional
# stage may both ask for the patched kernel).
mkdir -p "$BUILD"
exec 8>"$BUILD/.lock-$variant"
flock 8
configure_tree "$tree" "$out"
log "building bzImage ($variant) in $out"
t0=$SECONDS
kmake "$tree" "$out" bzImage >&2
log "bzImage ($variant) built in $((SECONDS - t0))s"
echo "$out/arch/x86/boot/bzImage"
