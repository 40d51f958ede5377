# Kernel patch series: build, static checks and KUnit (see kernel/README.md).
.PHONY: test-kernel kernel-patched kernel-unpatched

## make test-kernel: apply the series to linux-source-6.12, run checkpatch,
## per-patch builds, W=1/sparse/i386 checks, the patched bzImage and KUnit.
test-kernel:
	@kernel/scripts/test.sh

kernel-patched:
	@kernel/scripts/build.sh patched

kernel-unpatched:
	@kernel/scripts/build.sh unpatched

EXTRA_TESTS += test-kernel
