"""oversub: a deterministic simulator of an oversubscribed KVM host, from Python.

* :func:`run` runs one scenario and returns the report as a dict: the same
  object ``oversub run FILE --json`` prints.
* :func:`sweep` runs a scenario over the product of axes and seeds and returns
  a :class:`pandas.DataFrame`, one row per run, the columns of the CLI's
  ``results.csv``. ``backend="local"`` uses the Rust sweep on every core (the
  GIL released); ``backend="ray"`` submits one Ray task per run.
* :class:`ScenarioError` carries the CLI's one-line message for bad input.

The model itself is the ``oversub-core`` Rust crate; this package is a thin
layer over it (``docs/python.md``).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _oversub
from ._oversub import ScenarioError

if TYPE_CHECKING:
    import pandas

__all__ = ["run", "check", "sweep", "ScenarioError"]

PathLike = Union[str, "os.PathLike[str]"]
Scenario = Union[PathLike, Mapping[str, Any]]
Value = Union[str, int, float, bool, Sequence[Any], Mapping[str, Any]]

# The name a dict scenario has in error messages (a file's path otherwise).
DICT_NAME = "<dict>"


def _set_arg(key: str, value: Value) -> str:
    """One ``--set KEY=VALUE`` argument, the value spelled as on the CLI."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (int, float)):
        text = repr(value)
    else:
        text = json.dumps(value)
    return f"{key}={text}"


def _sets(overrides: Optional[Mapping[str, Value]]) -> List[str]:
    return [_set_arg(k, v) for k, v in (overrides or {}).items()]


def _source(scenario: Scenario) -> Tuple[str, Optional[str]]:
    """(name, JSON text or None): a path is read by the model, a dict is sent."""
    if isinstance(scenario, Mapping):
        return DICT_NAME, json.dumps(scenario)
    return os.fspath(scenario), None


def run(
    scenario: Scenario,
    set: Optional[Mapping[str, Value]] = None,
    *,
    seed: Optional[int] = None,
    duration: Optional[str] = None,
) -> Dict[str, Any]:
    """Run one scenario and return its report.

    Args:
        scenario: a scenario file (TOML, or rt-app JSON run host-only), or a
            dict with the TOML file's structure.
        set: overrides by dotted key, as ``--set KEY=VALUE`` on the CLI, e.g.
            ``{"host.yield.yield_to": "borrow", "vm.0.vcpus": 8}``.
        seed: overrides ``host.seed`` (``--seed``).
        duration: overrides ``host.duration``, e.g. ``"2s"`` (``--duration``).

    Returns:
        The dict ``oversub run FILE --json`` prints; only ``wall_ns`` differs
        between two runs of the same scenario and seed.

    Raises:
        ScenarioError: the scenario, an override or an argument is refused; the
            message is the CLI's one line.
    """
    name, source = _source(scenario)
    text = _oversub.run_json(name, source, _sets(set), seed, duration)
    return json.loads(text)


def check(scenario: Scenario, set: Optional[Mapping[str, Value]] = None) -> None:
    """Validate a scenario as ``oversub check`` does; raise ScenarioError if bad."""
    name, source = _source(scenario)
    _oversub.check(name, source, _sets(set))


def _axis(name: str, values: Sequence[Value]) -> Dict[str, Any]:
    """A sweep-file ``[[axis]]``: dict values are bundles (``label``, ``set``)."""
    values = list(values)
    if values and all(isinstance(v, Mapping) for v in values):
        return {"name": name, "values": values}
    return {"key": name, "values": values}


def _spec(
    base: Optional[PathLike],
    axes: Mapping[str, Sequence[Value]],
    seeds: Iterable[int],
    set: Optional[Mapping[str, Value]],
    duration: Optional[str],
    baseline: Optional[Mapping[str, Value]],
) -> str:
    spec: Dict[str, Any] = {"seeds": list(seeds)}
    if base is not None:
        spec["base"] = os.path.abspath(os.fspath(base))
    if duration is not None:
        spec["duration"] = duration
    if set:
        spec["set"] = _sets(set)
    if baseline:
        spec["baseline"] = dict(baseline)
    axis_list = []
    for k, vs in axes.items():
        if k == "file":
            vs = [os.path.abspath(os.fspath(v)) for v in vs]
        axis_list.append(_axis(k, vs))
    spec["axis"] = axis_list
    return json.dumps(spec)


def _frame(rows: Sequence[Tuple[Any, ...]], axes: Sequence[str]) -> "pandas.DataFrame":
    """Rows from the native module to a DataFrame with results.csv's columns."""
    import pandas as pd

    metric_cols: List[str] = []
    seen = set()
    records = []
    for point, file, workload, vms, labels, seed, metrics in rows:
        rec: Dict[str, Any] = {"file": file, "workload": workload, "vms": vms}
        lab = dict(labels)
        for a in axes:
            rec[a] = lab.get(a, "")
        rec["seed"] = seed
        for k, v in metrics:
            if k not in seen:
                seen.add(k)
                metric_cols.append(k)
            rec[k] = v
        records.append(rec)
    cols = ["file", "workload", "vms", *axes, "seed", *metric_cols]
    return pd.DataFrame.from_records(records, columns=cols)


def _ray_rows(spec_json: str, cwd: str, jobs: Sequence[Tuple[int, int]]) -> List[Tuple[Any, ...]]:
    import ray

    if not ray.is_initialized():
        # ray.init() joins the cluster named by RAY_ADDRESS, else starts one here.
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, logging_level="warning")

    @ray.remote
    def one(spec_json: str, cwd: str, point: int, seed: int):
        from oversub import _oversub as native

        return native.sweep_one(spec_json, cwd, point, seed)

    return ray.get([one.remote(spec_json, cwd, p, s) for p, s in jobs])


def sweep(
    base: Optional[PathLike] = None,
    axes: Optional[Mapping[str, Sequence[Value]]] = None,
    seeds: Iterable[int] = (1,),
    set: Optional[Mapping[str, Value]] = None,
    *,
    duration: Optional[str] = None,
    baseline: Optional[Mapping[str, Value]] = None,
    backend: str = "local",
) -> "pandas.DataFrame":
    """Run a scenario over the product of ``axes`` and ``seeds``.

    This is ``oversub sweep`` without files: the arguments are the sweep
    file's fields (``docs/usage.md``, "Sweeps").

    Args:
        base: the base scenario file (paths are resolved against the current
            directory; a ``"file"`` axis may replace it per point).
        axes: axis name -> values. A name is a dotted scenario key (each value
            is a ``--set`` value), ``"file"`` (scenario files), or any name
            whose values are bundles ``{"label": ..., "set": ["k=v", ...]}``.
            The first axis is the outermost.
        seeds: one run per point and seed.
        set: overrides applied to every run.
        duration: overrides ``host.duration`` of every run, e.g. ``"1s"``.
        baseline: axis name -> label of the point the CLI's summary compares
            with (kept for parity with the sweep file; the frame has no deltas).
        backend: ``"local"``: the Rust sweep on every core of this machine, the
            GIL released. ``"ray"``: one Ray task per run on the cluster named
            by ``RAY_ADDRESS``, or a local ``ray.init()`` when it is unset;
            scenario files must be readable at the same path on the workers.

    Returns:
        A DataFrame, one row per run in expansion order (points, then seeds),
        columns ``file, workload, vms, <axes...>, seed, <metrics...>`` as in
        ``results.csv``. Both backends return identical frames.

    Raises:
        ScenarioError: a bad sweep or a point the model refuses, before any
            run; the message is the CLI's one line.
        ValueError: an unknown backend.
    """
    axes = dict(axes or {})
    if backend not in ("local", "ray"):
        raise ValueError(f"backend {backend!r}: allowed 'local' or 'ray'")
    spec_json = _spec(base, axes, seeds, set, duration, baseline)
    cwd = os.getcwd()
    names = list(axes)
    if backend == "local":
        rows = _oversub.sweep_local(spec_json, cwd)
    else:
        jobs = _oversub.sweep_jobs(spec_json, cwd)
        rows = _ray_rows(spec_json, cwd, jobs)
    return _frame(rows, names)
