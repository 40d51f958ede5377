#!/usr/bin/env bash
# make test-mutation: prove that the functional effect tests can see the series' core
# assignment.  Rebuilds the patched kernel with the borrow's one assignment removed
# (`cfs_rq->next_borrow = se;` in yield_to_borrow(), kernel/sched/fair.c), boots it in the
# emulated host and requires at least one functional effect test to fail there.
#
# The mutant is built from the patched source tree (edited in place under the build lock,
# restored afterwards) into its own O= directory under that tree, so ccache serves every
# unchanged object.
# Not part of `make test`: it costs one more kernel link and one more boot (~5-10 min).
source "$(dirname "$0")/common.sh"

MUTATION='cfs_rq->next_borrow = se;'
TESTS=${MUTATION_TESTS:-deboost_switches_to_target,deboost_fresh_cgroup}

ensure_deps
tree=$(tree_of patched)
out=$(out_of "$tree" mutant)
mkdir -p "$BUILD"
exec 8>"$BUILD/.lock-patched"
flock 8
f=$tree/kernel/sched/fair.c
n=$(grep -cF "$MUTATION" "$f" || true)
[[ $n == 1 ]] || die "mutation site '$MUTATION' found $n times in $f (expected 1)"
restore() { git -C "$tree" checkout -q -- kernel/sched/fair.c; }
trap restore EXIT
grep -vF "$MUTATION" "$f" >"$f.mut" && mv "$f.mut" "$f"
log "mutant: removed '$MUTATION' from kernel/sched/fair.c"
configure_tree "$tree" "$out"
t0=$SECONDS
kmake "$tree" "$out" bzImage >&2
log "mutant bzImage built in $((SECONDS - t0))s"
cp "$out/arch/x86/boot/bzImage" "$out/bzImage.mutant"
restore
trap - EXIT
flock -u 8

log "booting the mutant with the functional tests $TESTS"
rc=0
FT_BZIMAGE_PATCHED=$out/bzImage.mutant FT_TREE_PATCHED=$tree \
	python3 "$KDIR/functional/run.py" --variants patched --suites functional --tests "$TESTS" \
	>"$BUILD/mutant.log" 2>&1 || rc=$?
grep -E '^functional:' "$BUILD/mutant.log" || true
if grep -qE '^functional:\S+ .*NOT MET' "$BUILD/mutant.log"; then
	echo "[kernel] PASS: the mutant (no borrow assignment) fails: $(grep -E '^functional:\S+ .*NOT MET' "$BUILD/mutant.log" | awk '{print $1}' | tr '\n' ' ')"
	echo "1 passed, 0 failed"
	exit 0
fi
tail -30 "$BUILD/mutant.log"
echo "[kernel] FAIL: every functional test passed on the mutant (run.py exit $rc): the tests cannot see the borrow"
echo "0 passed, 1 failed"
exit 1
