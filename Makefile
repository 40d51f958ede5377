# oversub: the two commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
OVERSUB := target/release/oversub

.PHONY: run test deps build test-sim test-docs test-docs-slow lint bench python test-python measure measure-perf test-recordings man

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
-include kernel/comparison/yield-throttle.mk

## make test-eevdf-latency: the short form of `oversub reproduce`'s eevdf-latency
## section, judged: cyclictest under hackbench on the running kernel against the
## simulated running-kernel preset, costs calibrated in the same run (docs/reproduce.md).
.PHONY: test-eevdf-latency
test-eevdf-latency: deps
	@scripts/install-deps.sh conform
	$(CARGO) build --release --locked
	$(OVERSUB) reproduce --manifest sweeps/eevdf-latency-check.toml --out out/eevdf-latency-check
EXTRA_TESTS += test-eevdf-latency

## make test: every test in the repository.
test: test-sim test-python test-recordings $(EXTRA_TESTS)

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --all-targets -- -D warnings

test-sim: lint
	$(CARGO) test --release --locked

## make test-docs: the examples of README.md and docs/*.md run and compared
## (docs/usage.md, "Docs that run"); part of test-sim, here alone.
test-docs: deps
	$(CARGO) test --release --locked -p oversub-cli --test integration docs:: -- --nocapture

## make test-docs-slow: the same with the slow examples too (the README's
## `make run` table: 708 simulations).
test-docs-slow: deps
	OVERSUB_DOCS_SLOW=1 $(CARGO) test --release --locked -p oversub-cli --test integration docs:: -- --nocapture

## make man: the man pages (clap_mangen) into out/man; `man -l out/man/oversub.1`.
## Shell completions: `oversub completions bash|zsh|fish|elvish|powershell`.
man: build
	$(OVERSUB) __man out/man
	@echo "man pages: out/man/*.1"

## make bench: events/s against a lean event loop, scaling, peak memory, and
## runs/s of one sweep on the local backend and local Ray clusters (docs/performance.md).
bench: build python
	nice -n 10 target/release/oversub-bench
	nice -n 10 $(VENV)/bin/python bench/ray_scaling.py

## make measure: record the real programs behind the named workloads with
## `oversub record` into recordings/NAME (docs/workloads.md, "Real programs");
## not part of `make test`. MEASURE_SECONDS sets each recording's length.
MEASURE_SECONDS ?= 10
measure: build
	scripts/measure-real.sh --duration $(MEASURE_SECONDS)

## make measure-perf: the same programs under perf stat, one table row each.
measure-perf:
	scripts/measure-real.sh --perf --duration $(MEASURE_SECONDS)

## make python: the project's .venv with the `oversub` Python package built
## from crates/oversub-python and python/ (docs/python.md).
PYTHON ?= python3
VENV := .venv
# Pinned: the versions the tests were written against (a fresh machine gets the same).
PY_DEPS := maturin==1.16.0 pandas==3.1.1 ray==2.60.0 pytest==9.2.0
python: deps
	@scripts/install-deps.sh python
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/python -c "import maturin, pandas, ray, pytest" 2>/dev/null || \
		$(VENV)/bin/pip install -q --disable-pip-version-check $(PY_DEPS)
	cd python && VIRTUAL_ENV=$(CURDIR)/$(VENV) $(CURDIR)/$(VENV)/bin/maturin develop --release --locked

## The Python package's tests against the CLI (run, errors, sweep local == Ray).
test-python: python build
	$(CARGO) clippy --release --locked -p oversub-python --all-targets -- -D warnings
	$(VENV)/bin/python -m pytest -q python/tests

## Measured vs simulated against the committed recordings (recordings/check/,
## docs/workloads.md "Recordings"): each derived program simulated host-only
## and as an undercommitted VM's guest against its recording, and the real
## program re-recorded now with and without hog processes against the
## simulated program with and without hog threads. Needs root and tracefs.
## Then the named workloads derived from recordings (workloads/*.json from
## recordings/*/guest.json), the queue programs (recordings/*/queues.json,
## scripts/derive-queues.py) and the ebizzy memory-path programs
## (recordings/*/mm-guest*.json, scripts/derive-mm.py): not stale, and as
## guests against their recordings (deterministic; part B of those: --guest
## without --no-real).
test-recordings: build
	@scripts/install-deps.sh record
	mkdir -p /tmp/oversub-record-dbench
	python3 scripts/check-recordings.py --oversub $(OVERSUB)
	python3 scripts/named-workloads.py --check
	python3 scripts/derive-queues.py --check
	python3 scripts/derive-mm.py --check
	python3 scripts/derive-kernbench.py --check
	python3 scripts/check-recordings.py --guest --no-real --oversub $(OVERSUB)
