"""The oversub Python package against the CLI it wraps: same report, same
one-line errors; a sweep's frame columns; the local and Ray backends agree."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import oversub

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("OVERSUB_CLI", ROOT / "target" / "release" / "oversub"))
PAIR = ROOT / "scenarios" / "yield" / "cg-pair.toml"


def cli(*args):
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def without_wall(report):
    report = dict(report)
    report.pop("wall_ns")
    return report


def test_run_is_the_cli_json_report():
    out = cli("run", PAIR, "--json", "--seed", "3", "--duration", "200ms",
              "--set", "host.yield.yield_to=borrow")
    assert out.returncode == 0, out.stderr
    py = oversub.run(PAIR, set={"host.yield.yield_to": "borrow"}, seed=3, duration="200ms")
    assert without_wall(py) == without_wall(json.loads(out.stdout))
    # The override took effect: a different policy gives a different run.
    other = oversub.run(PAIR, set={"host.yield.yield_to": "upstream"}, seed=3, duration="200ms")
    assert without_wall(other) != without_wall(py)


def test_a_dict_scenario_runs_like_its_file():
    import tomllib

    with open(PAIR, "rb") as f:
        as_dict = tomllib.load(f)
    a = oversub.run(PAIR, seed=5, duration="100ms")
    b = oversub.run(as_dict, seed=5, duration="100ms")
    assert a["tasks"] == b["tasks"]


@pytest.mark.parametrize(
    "args,kw",
    [
        (["--set", "host.yield.yield_to=nope"], {"set": {"host.yield.yield_to": "nope"}}),
        (["--set", "host.nope=1"], {"set": {"host.nope": 1}}),
        (["--set", "host.cpus=many"], {"set": {"host.cpus": "many"}}),
        (["--seed", "1", "--set", "vm.5.vcpus=2"], {"seed": 1, "set": {"vm.5.vcpus": 2}}),
        (["--duration", "0ns"], {"duration": "0ns"}),
    ],
)
def test_bad_input_raises_the_cli_one_line_message(args, kw):
    out = cli("run", PAIR, *args)
    assert out.returncode == 2
    with pytest.raises(oversub.ScenarioError) as e:
        oversub.run(PAIR, **kw)
    assert str(e.value) == out.stderr.strip()


def test_a_bad_file_raises_the_cli_message(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[host]\ncpus = 0\n")
    out = cli("run", bad)
    assert out.returncode == 2
    with pytest.raises(oversub.ScenarioError) as e:
        oversub.run(bad)
    assert str(e.value) == out.stderr.strip()
    assert isinstance(e.value, ValueError)
    with pytest.raises(oversub.ScenarioError, match="<dict>"):
        oversub.run({"host": {"cpus": 0}})


SWEEP = dict(
    base=PAIR,
    axes={"host.yield.yield_to": ["upstream", "borrow"]},
    seeds=[1, 2],
    duration="100ms",
)


@pytest.fixture(scope="module")
def local_frame():
    return oversub.sweep(**SWEEP)


def test_sweep_frame_has_a_row_per_run_and_a_column_per_axis_and_metric(local_frame):
    df = local_frame
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 4
    assert list(df.columns[:5]) == ["file", "workload", "vms", "host.yield.yield_to", "seed"]
    assert list(df["host.yield.yield_to"]) == ["upstream", "upstream", "borrow", "borrow"]
    assert list(df["seed"]) == [1, 2, 1, 2]
    metrics = list(df.columns[5:])
    assert metrics and all(pd.api.types.is_float_dtype(df[m]) for m in metrics)


def test_sweep_frame_is_the_cli_results_csv(local_frame, tmp_path):
    """`oversub sweep` on the same sweep file writes the same rows (to the
    CSV's 6 decimals)."""
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'base = "{PAIR}"\nseeds = [1, 2]\nduration = "100ms"\n'
        '[[axis]]\nkey = "host.yield.yield_to"\nvalues = ["upstream", "borrow"]\n'
    )
    out = cli("sweep", spec, "--out", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False)
    assert list(csv.columns) == list(local_frame.columns)
    assert list(csv["file"]) == list(local_frame["file"])
    for m in local_frame.columns[5:]:
        assert list(csv[m]) == pytest.approx(list(local_frame[m]), abs=1e-6), m


def test_bad_sweep_value_fails_before_any_run():
    with pytest.raises(oversub.ScenarioError, match='unknown policy "nope"'):
        oversub.sweep(base=PAIR, axes={"host.yield.yield_to": ["upstream", "nope"]}, seeds=[1])
    with pytest.raises(oversub.ScenarioError, match="seeds"):
        oversub.sweep(base=PAIR, seeds=[])
    with pytest.raises(oversub.ScenarioError, match="backend"):
        oversub.sweep(base=PAIR, backend="spark")


def test_sweep_on_ray_is_identical_to_local(local_frame):
    import ray

    try:
        df = oversub.sweep(**SWEEP, backend="ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(df, local_frame, check_exact=True)


def bench_sweep():
    """The fixed sweep `make bench` times (bench/ray_scaling.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ray_scaling", ROOT / "bench" / "ray_scaling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_benchmarked_sweep_on_ray_is_identical_to_local():
    """`make bench`'s Ray scaling sweep gives the local backend's frame on a
    local cluster started as the benchmark starts it (its most workers, more
    than this machine has cores: runs finish out of order)."""
    import ray

    bench = bench_sweep()
    local = oversub.sweep(**bench.SWEEP)
    assert len(local) == bench.RUNS
    # Not a degenerate sweep: the seeds give different runs.
    assert local["throughput"].nunique() > 1
    ray.init(address="local", num_cpus=max(bench.WORKERS), include_dashboard=False,
             logging_level="warning", log_to_driver=False)
    try:
        df = oversub.sweep(**bench.SWEEP, backend="ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(df, local, check_exact=True)


def test_summary_is_the_cli_summary_csv(tmp_path):
    """oversub.summary(df) and `oversub sweep`'s summary.csv: same rows, same
    numbers (same Rust code), Holm-adjusted p included; the baseline given
    to sweep() is honoured."""
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'base = "{PAIR}"\nseeds = [1, 2, 3]\nduration = "100ms"\n'
        'baseline = { "host.yield.yield_to" = "upstream" }\n'
        '[[axis]]\nkey = "host.yield.yield_to"\nvalues = ["upstream", "borrow", "deboost-v1"]\n'
    )
    out = cli("sweep", spec, "--out", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    df = oversub.sweep(
        base=PAIR,
        axes={"host.yield.yield_to": ["upstream", "borrow", "deboost-v1"]},
        seeds=[1, 2, 3],
        duration="100ms",
        baseline={"host.yield.yield_to": "upstream"},
        progress=False,
    )
    assert df.attrs["baseline"] == {"host.yield.yield_to": "upstream"}
    py = oversub.summary(df)
    csv = pd.read_csv(
        tmp_path / "out" / "summary.csv",
        keep_default_na=False,
        na_values=[""],
        dtype={"host.yield.yield_to": str},
    )
    pd.testing.assert_frame_equal(py, csv, check_exact=True)
    assert list(py.columns[-3:]) == ["p", "p_holm", "resolved"]
    # The distribution over seeds: the range holds the mean, a mode count.
    assert ((py["min"] <= py["mean"] + 1e-9) & (py["mean"] <= py["max"] + 1e-9)).all()
    assert (py["modes"] >= 1).all()
    # Deltas against upstream exist for the other policies only.
    base = py[py["host.yield.yield_to"] == "upstream"]
    assert base["delta"].isna().all()
    other = py[py["host.yield.yield_to"] != "upstream"]
    assert other["delta"].notna().any()
    # Holm never lowers a p-value.
    both = other.dropna(subset=["p", "p_holm"])
    assert (both["p_holm"] >= both["p"] - 1e-12).all()
    # Without a baseline: no deltas; an explicit one overrides the frame's.
    plain = oversub.summary(df, baseline={})
    assert plain["delta"].isna().all()
    with pytest.raises(oversub.ScenarioError, match="baseline: axis 'policy'"):
        oversub.summary(df, baseline={"policy": "upstream"})


def test_summary_vms_is_the_cli_summary_csv_across_vm_counts(tmp_path):
    """A sweep over scenario files of 1 and 2 VMs (a "file" axis, as
    sweeps/seeds-eval.toml varies the VM count): the frame's and the
    summary's vms are each point's VM count, equal to results.csv and
    summary.csv; the frame keeps the path (column ``file``) beside the
    axis's label (column ``scenario``), each name once, as results.csv
    does."""
    files = [ROOT / "scenarios" / "overcommit" / f"pingpong-{n}x16.toml" for n in (1, 2)]
    spec = tmp_path / "s.toml"
    spec.write_text(
        'seeds = [1, 2]\nduration = "20ms"\nbaseline = { scenario = "pingpong-1x16" }\n'
        f'[[axis]]\nkey = "file"\nvalues = ["{files[0]}", "{files[1]}"]\n'
    )
    out = cli("sweep", spec, "--out", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    df = oversub.sweep(axes={"file": files}, seeds=[1, 2], duration="20ms",
                       baseline={"scenario": "pingpong-1x16"}, progress=False)
    assert list(df.columns[:5]) == ["file", "workload", "vms", "scenario", "seed"]
    assert df.columns.is_unique
    assert list(df["vms"]) == [1, 1, 2, 2]
    assert list(df["file"]) == [str(f) for f in files for _ in (1, 2)]
    assert list(df["scenario"]) == ["pingpong-1x16"] * 2 + ["pingpong-2x16"] * 2
    with pytest.raises(oversub.ScenarioError, match="baseline: axis 'file'.*allowed one of the axes: scenario"):
        oversub.sweep(axes={"file": files}, seeds=[1], baseline={"file": "pingpong-1x16"})
    res = pd.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False)
    assert list(res.columns) == list(df.columns)
    assert list(res["file"]) == list(df["file"]) and list(res["scenario"]) == list(df["scenario"])
    assert list(res["vms"]) == list(df["vms"])
    py = oversub.summary(df)
    csv = pd.read_csv(tmp_path / "out" / "summary.csv", keep_default_na=False, na_values=[""], dtype={"scenario": str})
    pd.testing.assert_frame_equal(py, csv, check_exact=True)
    assert sorted(set(zip(py["scenario"], py["vms"]))) == [("pingpong-1x16", 1), ("pingpong-2x16", 2)]
    # The 2-VM point has deltas against the 1-VM baseline.
    assert py[py["vms"] == 2]["delta"].notna().any()


def test_sweep_baseline_axis_is_checked():
    with pytest.raises(oversub.ScenarioError, match="baseline: axis 'nope'"):
        oversub.sweep(base=PAIR, axes={"host.yield.yield_to": ["upstream"]}, baseline={"nope": "x"})


def test_progress_callback_sees_every_run():
    seen = []
    oversub.sweep(**SWEEP, progress=lambda done, total: seen.append((done, total)))
    assert sorted(seen) == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_progress_callback_errors_are_raised():
    def boom(done, total):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        oversub.sweep(**SWEEP, progress=boom)


def test_version_and_all():
    assert oversub.__version__.count(".") == 2
    assert set(oversub.__all__) >= {"run", "check", "sweep", "summary", "ScenarioError"}
    for name in oversub.__all__:
        assert hasattr(oversub, name), name


def test_seed_out_of_range_is_the_cli_line():
    out = cli("run", PAIR, "--seed", "-1")
    assert out.returncode == 2
    for seed in (-1, 2**64):
        with pytest.raises(oversub.ScenarioError) as e:
            oversub.run(PAIR, seed=seed)
        if seed == -1:
            assert str(e.value) == out.stderr.strip()


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: oversub.run(PAIR, set=["host.cpus=2"]), r"^set: \['host.cpus=2'\] is not allowed: allowed a dict"),
        (lambda: oversub.run(PAIR, seed="1"), r"^--seed: '1' is not allowed"),
        (lambda: oversub.run(PAIR, duration=5), r"^duration: 5 is not allowed"),
        (lambda: oversub.run(42), r"^scenario: 42 is not allowed"),
        (lambda: oversub.check(PAIR, set=("a", "b")), r"^set: "),
        (lambda: oversub.sweep(base={"host": {"cpus": 1}}), r"^base: \{.*\} is not allowed: allowed a file path"),
        (lambda: oversub.sweep(base=PAIR, seeds=[-1]), r"seeds"),
        (lambda: oversub.sweep(base=PAIR, seeds=5), r"^seeds: 5 is not allowed"),
        (lambda: oversub.sweep(base=PAIR, axes=["x"]), r"^axes: \['x'\] is not allowed"),
        (lambda: oversub.sweep(base=PAIR, axes={"host.cpus": 4}), r"^axes\['host.cpus'\]: 4 is not allowed"),
        (lambda: oversub.sweep(base=PAIR, progress="yes"), r"^progress: 'yes' is not allowed"),
        (lambda: oversub.summary([1, 2]), r"^df: 'list' is not allowed"),
        # Found by the attack on the new inputs (None was sent as "null", NaN
        # named no field, a bad frame value was a bare ValueError).
        (lambda: oversub.run(PAIR, set={"host.cpus": None}), r"^set\['host.cpus'\]: None is not allowed"),
        (lambda: oversub.run({"host": {"cpus": float("nan")}}), r"^<dict>: cannot be TOML"),
        (lambda: oversub.sweep(base=PAIR, axes={"host.hz": [250]}, duration="0s"), r"^<sweep>: duration: 0s is out of range"),
        (lambda: oversub.run(PAIR, set={"kvm.ple": "off", "kvm.on_spin": "2012-dy-eligible"}), r"kvm.on_spin: .* no effect"),
    ],
)
def test_every_input_error_is_a_scenario_error(call, match):
    with pytest.raises(oversub.ScenarioError, match=match):
        call()


def test_docs_python_example_prints_what_the_docs_show():
    """docs/python.md's worked analysis: the table its script prints is the
    one the page shows (the simulator is deterministic, so exactly)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / "policies.py"), "--table-only"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    doc = (ROOT / "docs" / "python.md").read_text()
    fence = "```console norun: checked by python/tests (test_docs_python_example_prints_what_the_docs_show)"
    assert fence in doc, "docs/python.md lost the example's output block"
    shown = [x.rstrip() for x in doc.split(fence, 1)[1].split("```", 1)[0].strip("\n").splitlines()]
    printed = [x.rstrip() for x in out.stdout.strip("\n").splitlines()]
    assert printed == shown, (
        "docs/python.md shows another table than `.venv/bin/python python/examples/policies.py "
        "--table-only` prints; paste its output into the block:\n" + out.stdout
    )


def test_a_frame_value_the_summary_cannot_read_is_a_scenario_error(local_frame):
    metric = local_frame.columns[-1]
    for col, bad, match in [
        (metric, "x", rf"^df row 0 column '{metric}': 'x' is not allowed"),
        ("vms", "x", r"^df row 0 column 'vms'"),
        ("seed", -1, r"^df row 0 column 'seed': -1 is not allowed: allowed an integer 0"),
    ]:
        df = local_frame.copy()
        df[col] = df[col].astype(object)
        df.loc[df.index[0], col] = bad
        with pytest.raises(oversub.ScenarioError, match=match):
            oversub.summary(df)


def test_a_bad_thread_count_is_refused_before_any_run(monkeypatch):
    """RAYON_NUM_THREADS is checked as the CLI checks it (a huge value made
    the thread pool spawn until the system refused, then panic)."""
    for v in ("100000", "four", "-1"):
        monkeypatch.setenv("RAYON_NUM_THREADS", v)
        with pytest.raises(oversub.ScenarioError,
                           match=rf'^environment variable RAYON_NUM_THREADS="{v}": allowed an integer 0 \.\.= 1024'):
            oversub.sweep(**SWEEP, progress=False)
