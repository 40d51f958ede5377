# Emulated-host functional stage (kernel/functional/README.md).
#   make test-functional                                   both kernels, both suites
#   make test-functional FT_TESTS=on_spin_relaxed_round FT_VARIANTS=patched
#   make test-functional FT_SUITES=selftests
FT_VARIANTS ?= unpatched,patched
FT_SUITES ?= selftests,functional
FT_TESTS ?=

.PHONY: test-functional
test-functional:
	@scripts/install-deps.sh kernel
	python3 kernel/functional/run.py --variants '$(FT_VARIANTS)' --suites '$(FT_SUITES)' --tests '$(FT_TESTS)'

EXTRA_TESTS += test-functional
