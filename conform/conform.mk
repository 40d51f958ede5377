# `oversub conform` suite: host-only scenarios and rt-app programs run on the
# real kernel (programs with the real rt-app) and in the simulator
# (docs/conformance.md). Included by the top Makefile.
# On a machine that cannot run it (not root, no writable cpu controller) it
# prints one "conform: SKIP ..." line, counts every scenario as skipped and
# exits 0; a disagreement beyond the tolerances exits 1.
CONFORM_DURATION ?= 2s
# The unpinned scenarios (conform/smp_*.toml) run longer: their start-up
# placement lasts up to one busy balance interval (see the files).
CONFORM_SMP_DURATION ?= 4s
CONFORM_RUNS ?= 3
CONFORM_PINNED = $(filter-out conform/smp_%,$(wildcard conform/*.toml))

.PHONY: test-conform
test-conform: deps
	@scripts/install-deps.sh conform
	$(CARGO) build --release --locked
	@rc=0; \
	target/release/oversub conform $(CONFORM_PINNED) conform/*.json --runs $(CONFORM_RUNS) --duration $(CONFORM_DURATION) || rc=$$?; \
	target/release/oversub conform conform/smp_*.toml --runs $(CONFORM_RUNS) --duration $(CONFORM_SMP_DURATION) || rc=$$?; \
	exit $$rc
