"""`make bench`, Ray part: runs/s of one fixed sweep on the local backend and
on a local Ray cluster of 1, 2 and 4 workers, side by side.

The sweep (``SWEEP``) is 3 yield_to policies x 12 seeds of the nested
2 VMs x 16 vCPUs dedup scenario, 100 ms simulated each: 36 runs, each a pure
function of (scenario, overrides, seed). ``python/tests`` asserts that its Ray
and local frames are identical; this script checks it too and exits 1 if not.

Each Ray cluster is started here by ``ray.init(address="local",
num_cpus=N)`` (N workers, one run per worker at a time) and torn down by
``ray.shutdown()``, also on failure. For every backend the first sweep is timed
separately (it includes starting Ray's worker processes and importing the
package in each), then the sweep is repeated ``REPEATS`` times and the best
wall time gives runs/s. Nothing here asserts a time: the figures are for
people (docs/performance.md, "Ray scaling").

Run from the repository root after ``make python``:
``.venv/bin/python bench/ray_scaling.py``.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]

# The fixed sweep: the keyword arguments of oversub.sweep.
SWEEP: Dict[str, Any] = dict(
    base=ROOT / "scenarios" / "overcommit" / "dedup-2x16.toml",
    axes={"host.yield.yield_to": ["upstream", "deboost", "borrow"]},
    seeds=list(range(1, 13)),
    duration="100ms",
)
RUNS = len(SWEEP["axes"]["host.yield.yield_to"]) * len(SWEEP["seeds"])
WORKERS = (1, 2, 4)
REPEATS = 3


def machine() -> str:
    """CPU model, logical CPUs, load average now, date and commit."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return f"{model}, {os.cpu_count()} logical CPUs, load average {load} at start, {now}, commit {commit}"


def timed_sweep(backend: str) -> Tuple[float, Any]:
    import oversub

    t = time.perf_counter()
    df = oversub.sweep(**SWEEP, backend=backend)
    return time.perf_counter() - t, df


def measure(backend: str) -> Tuple[float, float, Any]:
    """(first sweep s, best of REPEATS s, frame of the first sweep)."""
    first, df = timed_sweep(backend)
    best = min(timed_sweep(backend)[0] for _ in range(REPEATS))
    return first, best, df


def on_ray(workers: int) -> Tuple[float, float, float, Any]:
    """(ray.init s, first sweep s, best s, frame) on a fresh local cluster."""
    import ray

    t = time.perf_counter()
    ray.init(address="local", num_cpus=workers, include_dashboard=False, logging_level="warning",
             log_to_driver=False)
    try:
        init = time.perf_counter() - t
        first, best, df = measure("ray")
    finally:
        ray.shutdown()
    return init, first, best, df


def main() -> int:
    import pandas as pd

    os.environ.pop("RAY_ADDRESS", None)  # a local cluster, never one named outside
    print(f"Ray scaling: {RUNS} runs ({SWEEP['base'].relative_to(ROOT)}, {SWEEP['duration']} each, "
          f"3 policies x {len(SWEEP['seeds'])} seeds), wall time, best of {REPEATS} after a first sweep")
    print(f"machine: {machine()}")
    rows: List[Tuple[str, Optional[float], float, float]] = []
    first, best, local_df = measure("local")
    rows.append((f"local (rayon, {os.cpu_count()} threads)", None, first, best))
    same = True
    for n in WORKERS:
        init, first, best, df = on_ray(n)
        rows.append((f"Ray, local cluster, {n} worker{'s' if n > 1 else ''}", init, first, best))
        try:
            pd.testing.assert_frame_equal(df, local_df, check_exact=True)
        except AssertionError as e:
            same = False
            print(f"Ray with {n} workers: frame differs from the local backend's: {e}", file=sys.stderr)
    local_rate = RUNS / rows[0][3]
    print()
    print("| backend | ray.init s | first sweep s | best sweep s | runs/s | x local |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, init, first, best in rows:
        rate = RUNS / best
        init_s = "-" if init is None else f"{init:.2f}"
        print(f"| {name} | {init_s} | {first:.2f} | {best:.2f} | {rate:.1f} | {rate / local_rate:.2f} |")
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"Ray frames identical to the local backend's: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
