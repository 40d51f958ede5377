# Kernel patch series: build, static checks and KUnit (see kernel/README.md).
.PHONY: test-kernel test-mutation kernel-patched kernel-unpatched

## make test-kernel: apply the series to linux-source-6.12, run checkpatch,
## per-patch builds, W=1/sparse/i386 checks, the patched bzImage and its KUnit
## suite (booted under QEMU TCG).
test-kernel:
	@kernel/scripts/test.sh

## make test-mutation: rebuild the patched kernel with one bug each (MUTANTS=borrow,token,wrap:
## the borrow reverted (no pick ahead of eligibility, no reschedule after the budget), the token
## taken on cross-CPU yields, v1's wrap guard back; borrow_pick on request: only the borrow's
## assignment removed) and require the effect test named after it to fail (not in make test:
## a build + boot each).
test-mutation:
	@kernel/scripts/mutation.sh

kernel-patched:
	@kernel/scripts/build.sh patched

kernel-unpatched:
	@kernel/scripts/build.sh unpatched

EXTRA_TESTS += test-kernel
