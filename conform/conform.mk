# `oversub conform` suite: host-only scenarios and rt-app programs run on the
# real kernel (programs with the real rt-app) and in the simulator
# (docs/conformance.md). Included by the top Makefile.
# On a machine that cannot run it (not root, no writable cpu controller) it
# prints one "conform: SKIP ..." line, counts every scenario as skipped and
# exits 0; a disagreement beyond the tolerances exits 1.
CONFORM_DURATION ?= 2s
CONFORM_RUNS ?= 3

.PHONY: test-conform
test-conform: deps
	@scripts/install-deps.sh conform
	$(CARGO) build --release --locked
	target/release/oversub conform conform/*.toml conform/*.json --runs $(CONFORM_RUNS) --duration $(CONFORM_DURATION)
