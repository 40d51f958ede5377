# Kernel patch series: build, static checks and KUnit (see kernel/README.md).
.PHONY: test-kernel test-mutation kernel-patched kernel-unpatched

## make test-kernel: apply the series to linux-source-6.12, run checkpatch,
## per-patch builds, W=1/sparse/i386 checks, the patched bzImage and its KUnit
## suite (booted under QEMU TCG).
test-kernel:
	@kernel/scripts/test.sh

## make test-mutation: rebuild the patched kernel once per mutant (one mechanism broken each:
## scheduler borrow, budget_stop, lag_bound; comparison h3_clamp, m4_skip, lag_credit, token, wrap;
## KVM record_filter, irr_isr, window, receiver_first, init, cpl3, seq; MUTANTS=a,b selects) and
## require a test named after it to fail with a decided verdict (kill table: kernel/README.md; not in
## make test: a build + boot each).
test-mutation:
	@kernel/scripts/mutation.sh

kernel-patched:
	@kernel/scripts/build.sh patched

kernel-unpatched:
	@kernel/scripts/build.sh unpatched

EXTRA_TESTS += test-kernel
