# oversub: the two commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
OVERSUB := target/release/oversub

.PHONY: run test deps build test-sim lint bench

## make run: install what is missing, build release, run the quick reproduction
## of the seeds' evaluation (README "make run"); the report is out/reproduce-quick/report.html.
run: deps build
	$(OVERSUB) reproduce --quick --out out/reproduce-quick

deps:
	@scripts/install-deps.sh rust

build: deps
	$(CARGO) build --release --locked

# Sub-makefiles add their test targets to EXTRA_TESTS (kernel series, emulated host, conformance).
EXTRA_TESTS :=
-include conform/conform.mk
EXTRA_TESTS += test-conform
-include kernel/kernel.mk
-include kernel/functional/functional.mk

## make test: every test in the repository.
test: test-sim $(EXTRA_TESTS)

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --all-targets -- -D warnings

test-sim: lint
	$(CARGO) test --release --locked

## make bench: events/s against a lean event loop, scaling, peak memory (docs/performance.md).
bench: build
	nice -n 10 target/release/oversub-bench
