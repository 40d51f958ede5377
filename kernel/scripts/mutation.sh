#!/usr/bin/env bash
# make test-mutation: prove that the functional effect tests can see what the series does.
# Each mutant is the patched kernel with one change in kernel/sched/; it is booted in the
# emulated host with the functional tests that must catch it, and at least one of them must
# fail there:
#
#  borrow  the borrow reverted: yield_to_borrow() returns before it computes the budget, so
#          no level gets ->next_borrow (the pick ahead of eligibility) and no target becomes
#          rq->yield_borrower (the reschedule once it has run the budget); the kernel then
#          behaves as with YIELD_TO_BORROW off     -> deboost_switches_to_target
#  borrow_pick (not in the default list) only the assignment `cfs_rq->next_borrow = se;`
#          removed: the target is still made the borrower and rescheduled after the budget
#          if it runs                              -> deboost_switches_to_target
#  token   a yield_to() whose target is on another CPU takes the rate-limit token of
#          every cfs_rq of the yielder's CPU (in yield_to_penalty(), instead of returning
#          before the token)       -> deboost_cross_cpu_token
#  wrap    v1's vruntime wrap guard back in yield_penalty_new_vruntime() (review item M2:
#          every penalty refused while the yielder's entity is below zero, as it is in a
#          fresh cgroup)           -> deboost_fresh_cgroup
#
# A mutant is built from the patched source tree (edited in place under the build lock,
# restored afterwards) into its own O= directory under that tree, so ccache serves every
# unchanged object.  Not part of `make test`: one kernel build and one boot per mutant
# (about 3-5 min each with a warm ccache).  MUTANTS=borrow,token,wrap (the default) selects
# them.
source "$(dirname "$0")/common.sh"

MUTANTS=${MUTANTS:-borrow,token,wrap}
ensure_deps
tree=$(tree_of patched)
out=$(out_of "$tree" mutant)
f=$tree/kernel/sched/fair.c
h=$tree/kernel/sched/yield_to.h
restore() { git -C "$tree" checkout -q -- kernel/sched/fair.c kernel/sched/yield_to.h; }

# replace_once FILE SITE NEW: replace the one occurrence of SITE in FILE by NEW; fails
# unless SITE occurs exactly once.
replace_once() {
	python3 - "$@" <<'PY'
import sys
p, site, new = sys.argv[1:4]
s = open(p).read()
if s.count(site) != 1:
    sys.exit(1)
open(p, "w").write(s.replace(site, new))
PY
}

# mutate NAME: edit fair.c or yield_to.h in place; prints the functional tests that must
# catch it.
mutate() {
	local site new
	case $1 in
	borrow)
		site=$'\t/* A new yield ends the bound of an earlier borrow. */\n\trq->yield_borrower = NULL;\n'
		replace_once "$f" "$site" "$site"$'\treturn 0;\n' ||
			die "borrow mutation site not found in $f"
		echo "deboost_switches_to_target"
		;;
	borrow_pick)
		local m='cfs_rq->next_borrow = se;' n
		n=$(grep -cF "$m" "$f" || true)
		[[ $n == 1 ]] || die "mutation site '$m' found $n times in $f (expected 1)"
		grep -vF "$m" "$f" >"$f.mut" && mv "$f.mut" "$f"
		echo "deboost_switches_to_target"
		;;
	token)
		site=$'\t/* A target on another CPU must not consume this CPU\'s token. */\n'
		new=$'\tif (task_rq(p) != rq) {\n\t\tstruct sched_entity *m;\n\n'
		new+=$'\t\tfor (m = &curr->se; m; m = parent_entity(m))\n'
		new+=$'\t\t\tyield_penalty_commit(&cfs_rq_of(m)->yield_penalty, curr->pid,\n'
		new+=$'\t\t\t\t\t     p->pid, rq_clock(rq), false);\n\t\treturn 0;\n\t}\n'
		replace_once "$f" "$site" "$site$new" ||
			die "token mutation site not found in $f"
		echo "deboost_cross_cpu_token"
		;;
	wrap)
		replace_once "$h" $'\tif (!penalty)\n\t\treturn false;\n\t*new_vruntime = vruntime + penalty;\n' \
			$'\tif (!penalty || vruntime + penalty < vruntime)\n\t\treturn false;\n\t*new_vruntime = vruntime + penalty;\n' ||
			die "wrap mutation site not found in $h"
		echo "deboost_fresh_cgroup"
		;;
	*) die "unknown mutant '$1' (allowed: borrow, borrow_pick, token, wrap)" ;;
	esac
}

pass_n=0
fail_n=0
for mut in ${MUTANTS//,/ }; do
	mkdir -p "$BUILD"
	exec 8>"$BUILD/.lock-patched"
	flock 8
	trap restore EXIT
	tests=$(mutate "$mut")
	log "mutant '$mut': kernel/sched/ edited ($(git -C "$tree" diff --stat | tail -1)); must be caught by $tests"
	configure_tree "$tree" "$out"
	t0=$SECONDS
	kmake "$tree" "$out" bzImage >&2
	log "mutant '$mut' bzImage built in $((SECONDS - t0))s"
	cp "$out/arch/x86/boot/bzImage" "$out/bzImage.$mut"
	restore
	trap - EXIT
	flock -u 8

	log "booting mutant '$mut' with the functional tests $tests"
	logf=$BUILD/mutant-$mut.log
	rc=0
	FT_BZIMAGE_PATCHED=$out/bzImage.$mut FT_TREE_PATCHED=$tree \
		python3 "$KDIR/functional/run.py" --variants patched --suites functional --tests "$tests" \
		>"$logf" 2>&1 || rc=$?
	grep -E '^functional:' "$logf" || true
	if grep -qE '^functional:\S+ .*NOT MET' "$logf"; then
		echo "[kernel] PASS: mutant '$mut' is caught by: $(grep -E '^functional:\S+ .*NOT MET' "$logf" | awk '{print $1}' | tr '\n' ' ')"
		pass_n=$((pass_n + 1))
	else
		tail -30 "$logf"
		echo "[kernel] FAIL: every functional test passed on mutant '$mut' (run.py exit $rc)"
		fail_n=$((fail_n + 1))
	fi
done
echo "$pass_n passed, $fail_n failed"
((fail_n == 0))
