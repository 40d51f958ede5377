# Kernel patch series: build, static checks and KUnit (see kernel/README.md).
.PHONY: test-kernel test-mutation kernel-patched kernel-unpatched

## make test-kernel: apply the series to linux-source-6.12, run checkpatch,
## per-patch builds, W=1/sparse/i386 checks, the patched bzImage and KUnit.
test-kernel:
	@kernel/scripts/test.sh

## make test-mutation: rebuild the patched kernel without the borrow's core assignment and
## require a functional effect test to fail on it (not in make test: one more build + boot).
test-mutation:
	@kernel/scripts/mutation.sh

kernel-patched:
	@kernel/scripts/build.sh patched

kernel-unpatched:
	@kernel/scripts/build.sh unpatched

EXTRA_TESTS += test-kernel
