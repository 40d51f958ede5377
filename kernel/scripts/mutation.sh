#!/usr/bin/env bash
# make test-mutation: prove that the effect tests can see what the series does.  Each mutant
# is the patched kernel (posted + comparison series) with one mechanism broken; it is booted
# in the emulated host with the tests named after it, and at least one of them must fail
# there with a decided verdict: a KUnit suite of that boot failing, or a functional test NOT
# MET for a reason other than an undecided one ("no power", "not judged", "cannot judge",
# "not shown equal", "feature absent", a failed scenario, too few events: those say the run
# could not tell, not that the mechanism is missing, and count as a survivor).  The kill
# table with measured results is in kernel/README.md.
#
# Scheduler (posted series):
#  borrow         the borrow reverted: yield_to_borrow() returns right after cancelling an
#                 earlier borrow; no pick ahead of eligibility, no stop -> deboost_switches_to_target
#  borrow_pick    (on request) only `cfs_rq_of(se)->next_borrow = se;` removed
#                                                                  -> deboost_switches_to_target
#  budget_stop    the stop removed: neither update_curr()'s check nor the hrtick; the target
#                 runs on to its group entity's deadline
#                          -> kunit:sched_yield_to_fair (yt_fair_budget_stop_test)
#  lag_bound      yield_borrow_allowed() not consulted: every level borrows whatever its lag
#                                      -> deboost_sibling_share ("borrow changes C's share")
# Scheduler (comparison series):
#  h3_clamp       the penalty no longer clamped to yield_lag_room()
#                          -> kunit:sched_yield_to_fair (yt_fair_push_clamped_test)
#  m4_skip        yielder and target in one cfs_rq penalised too
#                          -> kunit:sched_yield_to_fair (yt_fair_level_same_cfs_rq_test)
#  lag_credit     the credit computed but not applied                -> deboost_sibling_share
#  token          a cross-CPU yield_to() takes the rate-limit token of every cfs_rq of the
#                 yielder's CPU                                      -> deboost_cross_cpu_token
#  wrap           v1's vruntime wrap guard back (review item M2)
#                                         -> deboost_fresh_cgroup, kunit:sched_yield_to
# KVM (posted series):
#  record_filter  an IPI that is not recorded leaves the older hint in place
#                                         -> on_spin_untracked_ipi_keeps_upstream_boost
#  irr_isr        kvm_ipi_hint_owed() true for any vector: the hint survives the EOI
#                                         -> on_spin_after_eoi, kunit:kvm_x86_ipi_hint
#  window         the freshness check skipped                        -> ipi_hint_default_window
#  receiver_first the receiver is not tried before the scan         -> on_spin_prefers_ipi_receiver
#  init           a sender's hint survives its INIT/reset            -> on_spin_after_init
#  seq            a later message of the recorded vector (another sender's) no longer drops
#                 the hint: "owed" per vector again (review item N7) -> kunit:kvm_x86_ipi_hint
#  cpl3           an owed IPI no longer counts as a pending interrupt for a receiver
#                 preempted in user mode                             -> on_spin_cpl3_receiver
#
# A mutant is built from the patched source tree (edited in place under the build lock,
# restored afterwards) into its own O= directory under that tree, so ccache serves every
# unchanged object.  Not part of `make test`: one kernel build and one boot per mutant.
# MUTANTS=a,b,... selects them (default: every one above except borrow_pick).
source "$(dirname "$0")/common.sh"

ALL_MUTANTS=borrow,budget_stop,lag_bound,h3_clamp,m4_skip,lag_credit,token,wrap,record_filter,irr_isr,window,receiver_first,init,cpl3,seq
MUTANTS=${MUTANTS:-$ALL_MUTANTS}
ensure_deps
tree=$(tree_of patched)
out=$(out_of "$tree" mutant)
f=$tree/kernel/sched/fair.c
h=$tree/kernel/sched/yield_to.h
lapic=$tree/arch/x86/kvm/lapic.c
x86=$tree/arch/x86/kvm/x86.c
kvm_main=$tree/virt/kvm/kvm_main.c
MUTATED="kernel/sched/fair.c kernel/sched/yield_to.h arch/x86/kvm/lapic.c arch/x86/kvm/x86.c virt/kvm/kvm_main.c"
# shellcheck disable=SC2086
restore() { git -C "$tree" checkout -q -- $MUTATED; }

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

# mutate NAME: edit the tree in place; prints the tests (functional test names, or
# kunit:SUITE) that must catch it, comma-separated.
mutate() {
	local site new
	case $1 in
	borrow)
		site=$'\t/* A new yield ends an earlier borrow. */\n\tyield_borrow_cancel(rq);\n'
		replace_once "$f" "$site" "$site"$'\treturn 0;\n' || die "borrow: site not found in $f"
		echo "deboost_switches_to_target"
		;;
	borrow_pick)
		replace_once "$f" $'\t\tcfs_rq_of(se)->next_borrow = se;\n' "" ||
			die "borrow_pick: site not found in $f"
		echo "deboost_switches_to_target"
		;;
	budget_stop)
		replace_once "$f" $'\t\tif (unlikely(cfs_rq->borrow_running) &&\n' \
			$'\t\tif (0 && unlikely(cfs_rq->borrow_running) &&\n' ||
			die "budget_stop: update_curr() site not found in $f"
		replace_once "$f" $'\tif (hrtick_enabled(rq))\n\t\thrtick_start(rq, rq->yield_borrow_ns);\n' "" ||
			die "budget_stop: hrtick site not found in $f"
		echo "kunit:sched_yield_to_fair"
		;;
	lag_bound)
		replace_once "$f" $'\t\tif (!yield_borrow_allowed(se->vruntime, avg_vruntime(cfs_rq),\n' \
			$'\t\tif (0 && !yield_borrow_allowed(se->vruntime, avg_vruntime(cfs_rq),\n' ||
			die "lag_bound: site not found in $f"
		echo "deboost_sibling_share"
		;;
	h3_clamp)
		replace_once "$f" $'\tpenalty = min(penalty, room);\n' $'\t(void)room;\n' ||
			die "h3_clamp: site not found in $f"
		echo "kunit:sched_yield_to_fair"
		;;
	m4_skip)
		replace_once "$f" $'\tfind_matching_se(&se_y, &se_t);\n\tif (se_y == *se_yp)\n\t\treturn NULL;\n' \
			$'\tfind_matching_se(&se_y, &se_t);\n' || die "m4_skip: site not found in $f"
		echo "kunit:sched_yield_to_fair"
		;;
	lag_credit)
		replace_once "$f" $'\t\t\tse->vruntime -= credit;\n\t\t\tse->deadline -= credit;\n' \
			$'\t\t\t(void)credit;\n' || die "lag_credit: site not found in $f"
		echo "deboost_sibling_share"
		;;
	token)
		site=$'\t/* A target on another CPU must not consume this CPU\'s token. */\n'
		new=$'\tif (task_rq(p) != rq) {\n\t\tstruct sched_entity *m;\n\n'
		new+=$'\t\tfor (m = &curr->se; m; m = parent_entity(m))\n'
		new+=$'\t\t\tyield_penalty_commit(&cfs_rq_of(m)->yield_penalty, curr->pid,\n'
		new+=$'\t\t\t\t\t     p->pid, rq_clock(rq), false);\n\t\treturn 0;\n\t}\n'
		replace_once "$f" "$site" "$site$new" || die "token: site not found in $f"
		echo "deboost_cross_cpu_token"
		;;
	wrap)
		replace_once "$h" $'\tif (!penalty)\n\t\treturn false;\n\t*new_vruntime = vruntime + penalty;\n' \
			$'\tif (!penalty || vruntime + penalty < vruntime)\n\t\treturn false;\n\t*new_vruntime = vruntime + penalty;\n' ||
			die "wrap: site not found in $h"
		echo "deboost_fresh_cgroup,kunit:sched_yield_to"
		;;
	record_filter)
		replace_once "$lapic" $'\tif (READ_ONCE(sender->arch.ipi_hint))\n\t\tWRITE_ONCE(sender->arch.ipi_hint, 0);\n' "" ||
			die "record_filter: site not found in $lapic"
		echo "on_spin_untracked_ipi_keeps_upstream_boost"
		;;
	irr_isr)
		replace_once "$lapic" $'\treturn kvm_apic_pending_eoi(vcpu, vector) ||\n' \
			$'\treturn vector || kvm_apic_pending_eoi(vcpu, vector) ||\n' ||
			die "irr_isr: site not found in $lapic"
		echo "on_spin_after_eoi,kunit:kvm_x86_ipi_hint"
		;;
	window)
		replace_once "$lapic" $'\tif (!ipi_hint_fresh(kvm_ipi_hint_now(), FIELD_GET(KVM_IPI_HINT_TIME, hint),\n' \
			$'\tif (!window && !ipi_hint_fresh(kvm_ipi_hint_now(), FIELD_GET(KVM_IPI_HINT_TIME, hint),\n' ||
			die "window: site not found in $lapic"
		echo "ipi_hint_default_window"
		;;
	receiver_first)
		replace_once "$kvm_main" $'\treceiver = kvm_arch_dy_ipi_receiver(me);\n' \
			$'\treceiver = kvm_arch_dy_ipi_receiver(me) ? NULL : NULL;\n' ||
			die "receiver_first: site not found in $kvm_main"
		echo "on_spin_prefers_ipi_receiver"
		;;
	init)
		replace_once "$x86" $'\tkvm_lapic_reset(vcpu, init_event);\n\tWRITE_ONCE(vcpu->arch.ipi_hint, 0);\n' \
			$'\tkvm_lapic_reset(vcpu, init_event);\n' || die "init: site not found in $x86"
		echo "on_spin_after_init"
		;;
	cpl3)
		replace_once "$kvm_main" $'yield_to_kernel_mode && !owes_ipi &&\n' \
			$'yield_to_kernel_mode && (owes_ipi || 1) &&\n' || die "cpl3: site not found in $kvm_main"
		echo "on_spin_cpl3_receiver"
		;;
	seq)
		replace_once "$lapic" $'\tif (READ_ONCE(dst->arch.ipi_hint_seq[vector]) !=\n' \
			$'\tif (0 && READ_ONCE(dst->arch.ipi_hint_seq[vector]) !=\n' ||
			die "seq: site not found in $lapic"
		echo "kunit:kvm_x86_ipi_hint"
		;;
	*) die "unknown mutant '$1' (allowed: ${ALL_MUTANTS//,/, }, borrow_pick)" ;;
	esac
}

# Reasons of a NOT MET that say the run could not tell (ftest.c's fail() texts).
UNDECIDED='^(no power|not judged|cannot judge|feature absent|cgroup2 not mounted|cannot (move|create|set)|scenario|too few|[a-z_ ]+: only [0-9]+ )|not shown equal|: no power$'
pass_n=0
fail_n=0
for mut in ${MUTANTS//,/ }; do
	mkdir -p "$BUILD"
	exec 8>"$BUILD/.lock-patched"
	flock 8
	trap restore EXIT
	tests=$(mutate "$mut")
	log "mutant '$mut': $(git -C "$tree" diff --stat | tail -1); must be caught by $tests"
	configure_tree "$tree" "$out"
	t0=$SECONDS
	kmake "$tree" "$out" bzImage >&2
	log "mutant '$mut' bzImage built in $((SECONDS - t0))s"
	cp "$out/arch/x86/boot/bzImage" "$out/bzImage.$mut"
	restore
	trap - EXIT
	flock -u 8

	# Functional tests by name; kunit:SUITE entries are judged from the same boot.
	ft=$(tr ',' '\n' <<<"$tests" | { grep -v '^kunit:' || true; } | paste -sd, -)
	# A mutant judged by KUnit alone boots with the harness check only (no name = every test).
	[[ -n $ft ]] || ft=vmm_selfcheck
	log "booting mutant '$mut' with $tests"
	logf=$BUILD/mutant-$mut.log
	rc=0
	t0=$SECONDS
	FT_BZIMAGE_PATCHED=$out/bzImage.$mut FT_TREE_PATCHED=$tree \
		python3 "$KDIR/functional/run.py" --variants patched --suites functional --tests "$ft" \
		>"$logf" 2>&1 || rc=$?
	grep -E '^(functional|kunit):' "$logf" || true
	caught=""
	undecided=""
	for t in ${tests//,/ }; do
		if [[ $t == kunit:* ]]; then
			grep -qE "^$t\\S* .*NOT MET" "$logf" && caught+="$t "
			continue
		fi
		# ftest's own line carries the whole reason (run.py's table truncates it).
		why=$(grep -oE "not ok [0-9]+ - $t # .*" "$logf" | head -1 | sed 's/^[^#]*# //' || true)
		[[ -n $why ]] || continue
		if grep -qE "$UNDECIDED" <<<"$why"; then
			undecided+="$t ($why) "
		else
			caught+="$t ($why) "
		fi
	done
	if [[ -n $caught ]]; then
		echo "[kernel] PASS: mutant '$mut' is caught by: $caught(boot $((SECONDS - t0))s)"
		pass_n=$((pass_n + 1))
	else
		tail -30 "$logf"
		[[ -z $undecided ]] || echo "[kernel] undecided, not a kill: $undecided"
		echo "[kernel] FAIL: mutant '$mut' survives $tests (run.py exit $rc)"
		fail_n=$((fail_n + 1))
	fi
done
echo "$pass_n passed, $fail_n failed"
((fail_n == 0))
