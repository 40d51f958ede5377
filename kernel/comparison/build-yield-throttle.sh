#!/usr/bin/env bash
# Builds the kernel of the sched_yield() throttle comparison: the posted
# series (kernel/patches) plus kernel/comparison/yield-throttle/*.patch, in
# a worktree of its own ($OVERSUB_CACHE/src/yield-throttle, branch
# oversub-yield-throttle) with the series' config and the throttle's KUnit
# suite (CONFIG_SCHED_YIELD_THROTTLE_KUNIT_TEST) built in. Prints the
# bzImage path last.
source "$(dirname "$0")/../scripts/common.sh"
ensure_deps
tree_of patched >/dev/null
tree=$SRC/yield-throttle
prepare_throttle() {
	if [[ ! -d $tree ]]; then
		git -C "$TREE_UNPATCHED" worktree prune
		git -C "$TREE_UNPATCHED" worktree add -q -B oversub-yield-throttle "$tree" oversub-patched
	fi
	(
		cd "$tree"
		git am --abort >/dev/null 2>&1 || true
		git reset -q --hard oversub-patched
		local p
		for p in "$KDIR"/comparison/yield-throttle/yield-throttle-[0-9]*.patch; do
			git "${GIT_ID[@]}" am -q "$p" >/dev/null 2>&1 || {
				git am --abort >/dev/null 2>&1 || true
				die "patch does not apply: $(basename "$p")"
			}
		done
	)
}
locked_prepare prepare_throttle
out=$(out_of "$tree")
configure_tree "$tree" "$out"
"$tree/scripts/config" --file "$out/.config" -e KUNIT -e SCHED_YIELD_THROTTLE_KUNIT_TEST
kmake "$tree" "$out" olddefconfig >/dev/null
grep -q '^CONFIG_SCHED_YIELD_THROTTLE_KUNIT_TEST=y' "$out/.config" ||
	die "CONFIG_SCHED_YIELD_THROTTLE_KUNIT_TEST=y did not survive olddefconfig"
log "building bzImage (series + yield throttle) in $out"
t0=$SECONDS
kmake "$tree" "$out" bzImage >&2
log "bzImage (yield throttle) built in $((SECONDS - t0))s"
echo "$out/arch/x86/boot/bzImage"
