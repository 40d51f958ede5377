# The sched_yield() throttle comparison patch (kernel/comparison/README-yield-throttle.md):
# built on the series and tested in the emulated host. Not part of `make test` (a full kernel build:
# the patch changes include/linux/sched.h).
.PHONY: test-yield-throttle-kernel
test-yield-throttle-kernel:
	@scripts/install-deps.sh kernel
	bz=$$(kernel/comparison/build-yield-throttle.sh | tail -1) && kernel/comparison/yield-throttle-effect.sh "$$bz"
