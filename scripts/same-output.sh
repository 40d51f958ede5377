#!/bin/sh
# Issue 15: performance work must not change results. Runs `oversub run --json`
# of every scenario in scenarios/ and bench/ (plus generated scaling hosts, the
# yield scenarios under every yield_to policy, and two runs with --check) with
# a reference binary and with $NEW (default target/release/oversub), and
# compares the JSON with `wall_ns` removed. Runs $JOBS (default 2) at a time.
# Usage: scripts/same-output.sh REF_BINARY [CACHE_DIR]
# The reference outputs are cached in CACHE_DIR (default /tmp/same-output-ref).
set -eu
ref=${1:?usage: scripts/same-output.sh REF_BINARY [CACHE_DIR]}
cache=${2:-/tmp/same-output-ref}
new=${NEW:-target/release/oversub}
jobs=${JOBS:-2}
bench=target/release/oversub-bench
for b in "$ref" "$new"; do
    [ -f "$b" ] && [ -x "$b" ] || { echo "same-output: $b is not an executable file (give the oversub binary, not its directory)" >&2; exit 2; }
done
mkdir -p "$cache" "$cache/gen"
for spec in 16:64:2000 16:4096:500 1024:4096:100; do
    f="$cache/gen/gen-$(echo "$spec" | tr : -).toml"
    [ -f "$f" ] || "$bench" --toml "$spec" >"$f"
done
cases=$(mktemp)
trap 'rm -f "$cases"' EXIT
# One case per line: NAME FILE [ARGS...] (NAME names the cached output).
name() { echo "$1" | tr '/ =' '___'; }
for f in $(find scenarios bench -name '*.toml' -o -name '*.json' | sort) "$cache"/gen/*.toml; do
    echo "$(name "$f") $f" >>"$cases"
done
for f in scenarios/yield/*.toml; do
    for p in upstream deboost-v1 deboost-v2 deboost lag-credit-v3 kpn-walk kpn-charge borrow; do
        echo "$(name "$f yield_to=$p") $f --set host.yield.yield_to=$p" >>"$cases"
    done
done
for f in scenarios/yield/cg-bystander.toml bench/b-16cpu-64tasks.toml; do
    echo "$(name "$f --check") $f --check --duration 300ms" >>"$cases"
done
# Each case: reference output (cached) and new output, compared.
export ref new cache
xargs -P "$jobs" -I{} sh -c '
    set -- {}
    out="$cache/$1.json"
    f=$2; shift 2
    if [ ! -f "$out" ]; then
        "$ref" run --json "$@" "$f" | sed -E "s/\"wall_ns\":[0-9]+,//" >"$out.tmp" && mv "$out.tmp" "$out"
    fi
    "$new" run --json "$@" "$f" | sed -E "s/\"wall_ns\":[0-9]+,//" | cmp -s - "$out" || echo "DIFFERS: $f $*"
' <"$cases" >"$cases.out"
n=$(wc -l <"$cases")
if [ -s "$cases.out" ]; then
    cat "$cases.out"
    rm -f "$cases.out"
    exit 1
fi
rm -f "$cases.out"
echo "same output: $n runs identical"
