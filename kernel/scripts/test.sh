#!/usr/bin/env bash
# make test-kernel: everything that checks the kernel series.
#
#  0. a cached tree with an in-tree build is cleaned (and the cleaning is tested)
#  1. apply kernel/patches (posted) and kernel/comparison (comparison series) onto pristine
#     linux-source-6.12 with git am
#  2. checkpatch.pl --strict on every patch (0 errors/warnings/checks)
#  3. the patched bzImage
#  4. every patch builds on its own (objects of the directories it touches)
#  5. W=1 and sparse (C=2) over the touched objects: no new warnings vs base
#  6. i386 build of kernel/sched: no 64-bit division libgcc helpers
#  7. KUnit with vectors/*.json turned into C: the sched_yield_to suite is built
#     into the patched x86 bzImage of step 3 (kernel/config/functional.config) and
#     run by booting it under QEMU TCG (no UML build of its own)
#
# Results are cached per (series, config, vectors) in $OVERSUB_CACHE; each
# cached result says so.  Ends with "N passed, N failed"; exit 1 on failure.
source "$(dirname "$0")/common.sh"

PASS=0
FAIL=0
FAILED=()
T_START=$SECONDS

pass() { PASS=$((PASS + 1)); echo "[kernel] PASS: $*"; }
fail() { FAIL=$((FAIL + 1)); FAILED+=("$*"); echo "[kernel] FAIL: $*"; }
# Each stage's cost in load-independent terms: CPU seconds of its child processes and
# ccache hits/misses (wall time depends on the other users of the machine).
STAGE_NAME=
STAGE_CPU=0
read -r STAGE_HIT STAGE_MISS < <(ccache_counts)
stage_cost() {
	local cpu hit miss
	cpu=$(children_cpu)
	read -r hit miss < <(ccache_counts)
	[[ -n $STAGE_NAME ]] &&
		echo "[kernel] cost of '$STAGE_NAME': $(awk -v a="$cpu" -v b="$STAGE_CPU" 'BEGIN { printf "%.1f", a - b }') CPU-s, ccache $((hit - STAGE_HIT)) hits, $((miss - STAGE_MISS)) misses"
	STAGE_CPU=$cpu STAGE_HIT=$hit STAGE_MISS=$miss
}
stage() {
	stage_cost
	STAGE_NAME=$*
	echo
	echo "[kernel] === $* ($((SECONDS - T_START))s elapsed)"
}

finish() {
	trap - ERR
	stage_cost
	echo
	if ((FAIL)); then
		echo "[kernel] failures:"
		printf '[kernel]   %s\n' "${FAILED[@]}"
	fi
	echo "[kernel] test-kernel took $((SECONDS - T_START))s"
	echo "$PASS passed, $FAIL failed"
	((FAIL == 0))
	exit
}

# Any unexpected error still prints the summary and fails.
set -E
trap 'fail "unexpected error at test.sh line $LINENO: $BASH_COMMAND"; finish' ERR

# Cached results: a stamp named after what the result depends on.
STAMPS=$CACHE/stamps
mkdir -p "$STAMPS"
stamp_ok() { [[ -f $STAMPS/$1 ]]; }
stamp_set() { touch "$STAMPS/$1"; }

stage "dependencies"
ensure_deps

stage "cached trees: an in-tree build is removed before an O= build"
# clean_in_tree_build on a small git tree: the files an in-tree make leaves (which make every
# O= build stop with "The source tree is not clean") go; tracked files and the O= directory stay.
ct=$(mktemp -d)
(
	cd "$ct"
	git init -q
	mkdir -p kernel arch/x86/include/generated/uapi include/config "$OUT_SUBDIR"
	echo tracked >kernel/fair.c
	git add kernel/fair.c
	git "${GIT_ID[@]}" commit -q -m base
	echo gen >arch/x86/include/generated/uapi/unistd_64.h
	echo gen >include/config/auto.conf
	echo CONFIG_KVM=y >.config
	echo obj >"$OUT_SUBDIR/fair.o"
) >/dev/null
clean_in_tree_build "$ct" 2>/dev/null
if [[ ! -e $ct/.config && ! -e $ct/include/config && ! -e $ct/arch/x86/include/generated &&
	-f $ct/kernel/fair.c && -f $ct/$OUT_SUBDIR/fair.o ]]; then
	pass "clean_in_tree_build removes .config, include/config, arch/x86/include/generated; keeps tracked files and $OUT_SUBDIR/"
else
	fail "clean_in_tree_build left an in-tree build behind, or removed a tracked file or $OUT_SUBDIR/ (in $ct)"
fi
rm -rf "$ct"

stage "prepare trees (base = pristine linux-source-6.12, series applied with git am)"
if (locked_prepare prepare_patched); then
	pass "series applies with git am ($(series_patches | grep -c /patches/) posted + $(series_patches | grep -c /comparison/) comparison patches)"
else
	fail "series does not apply (see the patch named above)"
	finish
fi
SID=$(series_id)
CID=$(cat "$KDIR"/config/*.config | sha256sum | cut -c1-16)
KEY=${SID:0:16}-$CID

stage "checkpatch --strict"
for p in $(series_patches); do
	n=${p#"$KDIR"/}
	# FILE_PATH_CHANGES ("does MAINTAINERS need updating?") is ignored: the
	# new files are under kernel/sched/, covered by the SCHEDULER entry's
	# F: kernel/sched/, and the series adds no MAINTAINERS entry of its own.
	out=$(cd "$TREE_UNPATCHED" && perl scripts/checkpatch.pl --strict --ignore FILE_PATH_CHANGES "$p" 2>&1 || true)
	if grep -q 'total: 0 errors, 0 warnings, 0 checks' <<<"$out" &&
		grep -q '^Signed-off-by: ' "$p"; then
		pass "checkpatch --strict $n"
	else
		echo "$out" | grep -E '^(ERROR|WARNING|CHECK)|^#|^total' | head -40 || true
		grep -q '^Signed-off-by: ' "$p" || echo "missing Signed-off-by"
		fail "checkpatch --strict $n"
	fi
done

# The vectors first: the bzImage carries the KUnit suite that runs them (step 7).
stage "vectors/*.json -> kernel/sched/yield_to_test_vectors.h"
gen=$TREE_PATCHED/kernel/sched/yield_to_test_vectors.h
vectors_ok=0
if python3 "$KDIR/scripts/gen_vectors.py" "$REPO/vectors" "$gen"; then
	pass "vectors/*.json -> kernel/sched/yield_to_test_vectors.h"
	vectors_ok=1
	if ! git -C "$TREE_PATCHED" diff --quiet -- kernel/sched/yield_to_test_vectors.h; then
		echo "[kernel] note: vectors/ changed since the series was generated; KUnit uses the new vectors"
	fi
else
	fail "vector generation"
fi

# The bzImage next: it warms ccache for the per-patch builds below.
stage "patched bzImage"
img=
if img=$("$KDIR/scripts/build.sh" patched | tail -1) && [[ -f $img ]]; then
	pass "bzImage: $img"
else
	fail "patched bzImage build"
	img=
fi

# Directories a commit's changes need rebuilt.
dirs_for_commit() {
	local tree=$1 c=$2 files
	files=$(git -C "$tree" diff --name-only "$c^" "$c")
	{
		grep -qE '^(kernel/sched/|include/trace/events/sched\.h|lib/Kconfig\.debug)' <<<"$files" && echo kernel/sched/
		grep -qE '^(arch/x86/kvm/|arch/x86/include/asm/kvm|virt/kvm/|include/linux/kvm|include/trace/events/kvm\.h)' <<<"$files" && echo arch/x86/kvm/
		true
	} | sort -u
}

stage "each patch builds on its own"
BISECT_TREE=$SRC/bisect
if stamp_ok "bisect-cfg-$KEY"; then
	pass "per-patch builds (cached result for this series and config)"
else
	ok=1
	if [[ ! -d $BISECT_TREE ]]; then
		git -C "$TREE_UNPATCHED" worktree prune
		git -C "$TREE_UNPATCHED" worktree add -q --detach "$BISECT_TREE" base
	fi
	configure_tree "$BISECT_TREE" "$(out_of "$BISECT_TREE")"
	kmake "$BISECT_TREE" "$(out_of "$BISECT_TREE")" prepare >/dev/null 2>&1 || true
	for c in $(git -C "$TREE_PATCHED" rev-list --reverse base..HEAD); do
		subj=$(git -C "$TREE_PATCHED" log -1 --format=%s "$c")
		git -C "$BISECT_TREE" checkout -q --detach "$c"
		# The config was made at the base, where the series' own symbols (its KUnit
		# suites) do not exist yet: merge the fragments again, so that a patch adding
		# a symbol gets it set as in the full build and its code is compiled here.
		reconfigure_tree "$BISECT_TREE" "$(out_of "$BISECT_TREE")"
		dirs=$(dirs_for_commit "$TREE_PATCHED" "$c")
		[[ -n $dirs ]] || dirs="kernel/sched/"
		t0=$SECONDS
		# shellcheck disable=SC2086
		if kmake "$BISECT_TREE" "$(out_of "$BISECT_TREE")" $dirs >"$BUILD/bisect.log" 2>&1; then
			pass "builds: $subj [$(echo $dirs)] ($((SECONDS - t0))s)"
		else
			tail -30 "$BUILD/bisect.log"
			fail "builds: $subj"
			ok=0
		fi
	done
	((ok)) && stamp_set "bisect-cfg-$KEY"
fi

# Objects containing the files the series touches.
CHECK_OBJS="kernel/sched/core.o kernel/sched/fair.o kernel/sched/build_utility.o
	arch/x86/kvm/lapic.o arch/x86/kvm/x86.o arch/x86/kvm/svm/avic.o arch/x86/kvm/vmx/posted_intr.o arch/x86/kvm/vmx/main.o
	arch/x86/kvm/../../../virt/kvm/kvm_main.o"

# Warnings of the touched files, without line:col (the series moves lines).
norm_warnings() {
	local tree=$1 touched=$2
	sed -E -e "s#$tree/##g" -e 's#^[^ :]*/src/(un)?patched/##' -e 's#^\.\.?/##' |
		{ grep -E '^[^ :]+:[0-9]+(:[0-9]+)?: (warning|error)' || true; } |
		sed -E 's#^([^ :]+):[0-9]+(:[0-9]+)?: #\1: #' |
		{ grep -F -f "$touched" || true; } | sort
}

stage "W=1 and sparse (C=2) on touched objects, compared with the base"
if stamp_ok "wc-$KEY"; then
	pass "W=1: no new warnings (cached result)"
	pass "sparse: no new warnings (cached result)"
else
	touched=$BUILD/touched-files
	git -C "$TREE_PATCHED" diff --name-only base HEAD >"$touched"
	for v in unpatched patched; do
		tree=$TREE_UNPATCHED
		[[ $v == patched ]] && tree=$TREE_PATCHED
		out=$(out_of "$tree" check)
		configure_tree "$tree" "$out"
		# Force the checked objects to be rebuilt so every warning is seen.
		for o in $CHECK_OBJS; do rm -f "$out/$o"; done
		# shellcheck disable=SC2086
		kmake "$tree" "$out" W=1 $CHECK_OBJS >/dev/null 2>"$out/w1.log" || true
		# shellcheck disable=SC2086
		# Same W=1 flags, so nothing is recompiled: this pass only runs sparse.
		kmake "$tree" "$out" W=1 C=2 $CHECK_OBJS >/dev/null 2>"$out/sparse.log" || true
		norm_warnings "$tree" "$touched" <"$out/w1.log" >"$out/w1.norm"
		norm_warnings "$tree" "$touched" <"$out/sparse.log" >"$out/sparse.norm"
		for o in $CHECK_OBJS; do
			[[ -f $out/$o ]] || { fail "W=1 build of $o ($v) failed"; tail -20 "$out/w1.log"; }
		done
	done
	wc_ok=1
	base_out=$(out_of "$TREE_UNPATCHED" check)
	series_out=$(out_of "$TREE_PATCHED" check)
	for k in w1 sparse; do
		new=$(comm -13 "$base_out/$k.norm" "$series_out/$k.norm")
		label=W=1
		[[ $k == sparse ]] && label=sparse
		if [[ -z $new ]]; then
			pass "$label: no new warnings in touched files ($(wc -l <"$series_out/$k.norm") pre-existing)"
		else
			echo "$new"
			fail "$label: new warnings in touched files"
			wc_ok=0
		fi
	done
	((wc_ok)) && stamp_set "wc-$KEY"
fi

stage "i386 build of kernel/sched: no 64-bit division helpers"
# KVM cannot be built for i386 in 6.12 (it depends on X86_64), so only the
# scheduler objects are checked here.
I386=$(out_of "$TREE_PATCHED" i386)
if stamp_ok "i386-$KEY"; then
	pass "i386 kernel/sched has no __udivdi3/__divdi3/__umoddi3/__moddi3 (cached result)"
else
	configure_tree "$TREE_PATCHED" "$I386" i386
	if ! grep -q '^CONFIG_FAIR_GROUP_SCHED=y' "$I386/.config"; then
		fail "i386 config lacks FAIR_GROUP_SCHED"
	fi
	objs="kernel/sched/core.o kernel/sched/fair.o kernel/sched/build_utility.o"
	# shellcheck disable=SC2086
	if kmake "$TREE_PATCHED" "$I386" ARCH=i386 $objs >"$I386/build.log" 2>&1; then
		bad=""
		for o in $objs; do
			b=$(nm -u "$I386/$o" | grep -E '__(u)?(div|mod)di3' || true)
			[[ -n $b ]] && bad+="$o: $b"$'\n'
		done
		if [[ -z $bad ]]; then
			pass "i386 kernel/sched has no __udivdi3/__divdi3/__umoddi3/__moddi3"
			stamp_set "i386-$KEY"
		else
			echo "$bad"
			fail "i386 kernel/sched references 64-bit division helpers"
		fi
	else
		tail -30 "$I386/build.log"
		fail "i386 build of kernel/sched"
	fi
fi

stage "KUnit: sched_yield_to and sched_yield_to_fair in the patched bzImage, booted under QEMU TCG"
# The suites are built into the bzImage of step 3 (CONFIG_SCHED_YIELD_TO_KUNIT_TEST in
# kernel/config/functional.config), so KUnit needs no kernel build of its own: boot it
# without a root file system, let KUnit run at init, and read its KTAP from the console.
# The kernel then panics for want of a root fs and QEMU exits (-no-reboot, panic=-1).
# A timeout only guards against a hang; it is not a threshold.  Each suite prints its
# own "# Totals" line; they are summed.
kout=$BUILD/kunit-boot.log
KUNIT_SCHED_SUITES="sched_yield_to sched_yield_to_fair"
if ((vectors_ok)) && [[ -n $img ]]; then
	krc=0
	timeout "${KUNIT_BOOT_TIMEOUT:-600}" nice -n "${OVERSUB_NICE:-0}" qemu-system-x86_64 -accel tcg -cpu EPYC \
		-smp 1 -m 512 -nographic -no-reboot -monitor none -serial stdio -kernel "$img" \
		-append "console=ttyS0 ignore_loglevel panic=-1 kunit.filter_glob=sched_yield_to*" \
		</dev/null >"$kout" 2>&1 || krc=$?
	{ grep -E '^\[ *[0-9.]+\] +(not )?ok [0-9]+ (yt_|sched_yield_to)' "$kout" || true; } | sed 's/^\[ *[0-9.]*\] */[kernel] KUnit: /'
	reported=1
	for suite in $KUNIT_SCHED_SUITES; do
		grep -qE "^\[ *[0-9.]+\] +(not )?ok [0-9]+ $suite[[:space:]]*\$" "$kout" || reported=0
	done
	read -r kp kf kt < <(grep -oE '# Totals: pass:[0-9]+ fail:[0-9]+ skip:[0-9]+ total:[0-9]+' "$kout" |
		awk -F'[: ]+' '{ p += $4; f += $6 + $8; t += $10 } END { print p + 0, f + 0, t + 0 }')
	if ((reported)) && ((kt > 0)); then
		PASS=$((PASS + kp))
		FAIL=$((FAIL + kf))
		echo "[kernel] KUnit: pass:$kp fail-or-skip:$kf total:$kt ($KUNIT_SCHED_SUITES, boot-time, QEMU exit $krc)"
		((kf == 0)) || FAILED+=("KUnit: pass:$kp fail-or-skip:$kf total:$kt")
	else
		tail -40 "$kout"
		fail "KUnit $KUNIT_SCHED_SUITES did not all report (QEMU exit $krc, console in $kout)"
	fi
else
	fail "KUnit not run (no vectors header or no bzImage)"
fi

finish
