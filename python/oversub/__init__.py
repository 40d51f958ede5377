"""oversub: a deterministic simulator of an oversubscribed KVM host, from Python.

* :func:`run` runs one scenario and returns the report as a dict: the same
  object ``oversub run FILE --json`` prints.
* :func:`sweep` runs a scenario over the product of axes and seeds and returns
  a :class:`pandas.DataFrame`, one row per run, the columns of the CLI's
  ``results.csv``. ``backend="local"`` uses the Rust sweep on every core (the
  GIL released; Ctrl-C stops it; ``resume=DIR`` keeps finished runs so that
  an interrupted sweep finishes where it stopped); ``backend="ray"`` submits
  one Ray task per run.
* :func:`summary` summarises such a frame over seeds: the CLI's
  ``summary.csv`` (means, 95% CIs, paired deltas against a baseline, p and
  Holm-adjusted p), computed by the same Rust code.
* :class:`ScenarioError` carries the CLI's one-line message for bad input
  (every refused argument raises it, never a bare TypeError or OverflowError).

The model itself is the ``oversub-core`` Rust crate; this package is a thin
layer over it (``docs/python.md``).
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _oversub
from ._oversub import ScenarioError

if TYPE_CHECKING:
    import pandas

__version__: str = _oversub.__version__

__all__ = ["run", "check", "sweep", "summary", "ScenarioError", "__version__"]

# A progress callback: called as progress(done, total) after each run.
Progress = Callable[[int, int], Any]

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


def _refuse(field: str, value: Any, allowed: str) -> ScenarioError:
    """The CLI's form of a refusal: field, value, what is allowed."""
    return ScenarioError(f"{field}: {value!r} is not allowed: allowed {allowed}")


def _sets(overrides: Optional[Mapping[str, Value]]) -> List[str]:
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        raise _refuse("set", overrides, 'a dict of dotted key -> value, e.g. {"vm.0.vcpus": 8}')
    for k, v in overrides.items():
        if not isinstance(k, str):
            raise _refuse("set", k, "str keys (dotted scenario keys)")
        # TOML has no null: None was sent as the string "null".
        if v is None:
            raise _refuse(f"set[{k!r}]", v, "str, int, float, bool, list or dict values (TOML has no None)")
    return [_set_arg(k, v) for k, v in overrides.items()]


def _path(field: str, value: Any) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise _refuse(field, value, "a file path (str or os.PathLike)")


def _source(scenario: Scenario) -> Tuple[str, Optional[str]]:
    """(name, JSON text or None): a path is read by the model, a dict is sent."""
    if isinstance(scenario, Mapping):
        try:
            # allow_nan=False: NaN and infinities are not JSON (the model's
            # parser named no field for them).
            return DICT_NAME, json.dumps(scenario, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"{DICT_NAME}: cannot be TOML ({e}): allowed str, int, float, bool, list and dict values") from None
    return _path("scenario", scenario), None


def _seed_text(seed: Any) -> Optional[str]:
    """A seed as the CLI's --seed text (the model checks it, with the CLI's line)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"--seed: {seed!r} is not allowed: allowed an integer 0 ..= 9223372036854775807 (as [host].seed)")
    return str(seed)


def _duration(duration: Any) -> Optional[str]:
    if duration is None or isinstance(duration, str):
        return duration
    raise _refuse("duration", duration, 'a duration string such as "250ms" or "2s"')


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
        ScenarioError: the scenario, an override or an argument is refused, or
            the run cannot finish (its event budget, a loop at one instant);
            the message is the CLI's one line.
    """
    name, source = _source(scenario)
    text = _oversub.run_json(name, source, _sets(set), _seed_text(seed), _duration(duration))
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
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise _refuse("seeds", seeds, "a list of integers 0 ..= 9223372036854775807")
    seeds = list(seeds)
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int):
            raise _refuse("seeds", s, "integers 0 ..= 9223372036854775807")
    spec: Dict[str, Any] = {"seeds": seeds}
    if base is not None:
        spec["base"] = os.path.abspath(_path("base", base))
    if _duration(duration) is not None:
        spec["duration"] = duration
    if set:
        spec["set"] = _sets(set)
    if baseline:
        if not isinstance(baseline, Mapping):
            raise _refuse("baseline", baseline, 'a dict of axis name -> label, e.g. {"policy": "upstream"}')
        spec["baseline"] = dict(baseline)
    axis_list = []
    for k, vs in axes.items():
        if isinstance(vs, (str, bytes)) or not isinstance(vs, Iterable):
            raise _refuse(f"axes[{k!r}]", vs, "a list of values")
        if k == "file":
            vs = [os.path.abspath(_path("axes['file']", v)) for v in vs]
        axis_list.append(_axis(k, vs))
    spec["axis"] = axis_list
    try:
        return json.dumps(spec)
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"<sweep>: cannot be TOML ({e}): allowed str, int, float, bool, list and dict values") from None


def _frame(rows: Sequence[Tuple[Any, ...]], axes: Sequence[str]) -> "pandas.DataFrame":
    """Rows from the native module to a DataFrame with results.csv's columns."""
    import pandas as pd

    metric_cols: List[str] = []
    seen = set()
    for _, _, _, _, _, _, metrics in rows:
        for k, _ in metrics:
            if k not in seen:
                seen.add(k)
                metric_cols.append(k)
    # The "file" axis (scenario files per point) is named FILE_AXIS here, as
    # in results.csv: its label beside the first column's path.
    nan = float("nan")
    records = []
    for point, file, workload, vms, labels, seed, metrics in rows:
        lab = dict(labels)
        m = dict(metrics)
        records.append([file, workload, vms, *(lab.get(a, "") for a in axes), seed, *(m.get(k, nan) for k in metric_cols)])
    cols = ["file", "workload", "vms", *axes, "seed", *metric_cols]
    return pd.DataFrame.from_records(records, columns=cols)


def _ray_rows(
    spec_json: str, cwd: str, jobs: Sequence[Tuple[int, int]], progress: Optional[Progress]
) -> List[Tuple[Any, ...]]:
    import ray

    if not ray.is_initialized():
        # ray.init() joins the cluster named by RAY_ADDRESS, else starts one here.
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, logging_level="warning")

    @ray.remote
    def one(spec_json: str, cwd: str, point: int, seed: int):
        from oversub import _oversub as native

        return native.sweep_one(spec_json, cwd, point, seed)

    refs = [one.remote(spec_json, cwd, p, s) for p, s in jobs]
    if progress is not None:
        pending, done = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done += len(ready)
            progress(done, len(refs))
    return ray.get(refs)


def _progress(progress: Union[bool, Progress, None]) -> Tuple[Optional[Progress], Callable[[], None]]:
    """(callback or None, close): a callable as given; True, or None on a
    terminal, a tqdm bar when tqdm is installed."""
    if callable(progress):
        return progress, lambda: None
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None, lambda: None
    if progress is not None and progress is not True:
        raise _refuse("progress", progress, "None, True, False or a callable progress(done, total)")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar = tqdm(total=0, unit="run", desc="oversub sweep")

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close


def sweep(
    base: Optional[PathLike] = None,
    axes: Optional[Mapping[str, Sequence[Value]]] = None,
    seeds: Iterable[int] = (1,),
    set: Optional[Mapping[str, Value]] = None,
    *,
    duration: Optional[str] = None,
    baseline: Optional[Mapping[str, Value]] = None,
    backend: str = "local",
    progress: Union[bool, Progress, None] = None,
    resume: Optional[PathLike] = None,
) -> "pandas.DataFrame":
    """Run a scenario over the product of ``axes`` and ``seeds``.

    This is ``oversub sweep`` without files: the arguments are the sweep
    file's fields (``docs/usage.md``, "Sweeps").

    Args:
        base: the base scenario file (paths are resolved against the current
            directory; a ``"file"`` axis may replace it per point).
        axes: axis name -> values. A name is a dotted scenario key (each value
            is a ``--set`` value), ``"file"`` (scenario files; its column
            and its name in ``baseline`` are ``"scenario"``, the files'
            stems, beside the ``file`` column's paths), or any name whose
            values are bundles ``{"label": ..., "set": ["k=v", ...]}``. The
            first axis is the outermost.
        seeds: one run per point and seed.
        set: overrides applied to every run.
        duration: overrides ``host.duration`` of every run, e.g. ``"1s"``.
        baseline: axis name -> label of the point that :func:`summary`
            compares with, as in a sweep file; checked here (an unknown axis
            raises) and kept in ``frame.attrs["baseline"]``.
        backend: ``"local"``: the Rust sweep on every core of this machine, the
            GIL released. ``"ray"``: one Ray task per run on the cluster named
            by ``RAY_ADDRESS``, or a local ``ray.init()`` when it is unset;
            scenario files must be readable at the same path on the workers.
        progress: a callable ``progress(done, total)`` called after each run
            this call makes (an exception it raises stops the sweep and is
            raised); ``True`` for a tqdm bar (when tqdm is installed);
            ``None`` (the default) for a tqdm bar only on a terminal;
            ``False`` for none.
        resume: a directory (created if missing) that keeps each run as it
            finishes, in ``DIR/.oversub-runs.jsonl`` (the store ``oversub
            sweep --out DIR`` keeps). A sweep stopped by Ctrl-C
            (KeyboardInterrupt), a progress exception or a failed run keeps
            its finished runs there; the same call again runs only the
            others and returns the frame an uninterrupted sweep returns. The
            file is removed once the sweep is whole. ``backend="local"``
            only.

    Returns:
        A DataFrame, one row per run in expansion order (points, then seeds),
        columns ``file, workload, vms, <axes...>, seed, <metrics...>`` as in
        ``results.csv``, each name once. Both backends return identical
        frames.

    Raises:
        ScenarioError: a bad sweep or a point the model refuses, before any
            run; the message is the CLI's one line.
            An unknown backend or a baseline axis that is not among ``axes``
            raises it too, and so does a ``resume`` directory that is not
            one (a file, a FIFO) or whose runs file is not this sweep's (the
            runs of another sweep, scenario or build of the package, a file
            oversub did not write, one it cannot read).
        KeyboardInterrupt: Ctrl-C; with ``resume``, its message says how many
            runs are kept.
    """
    if axes is not None and not isinstance(axes, Mapping):
        raise _refuse("axes", axes, 'a dict of axis name -> values, e.g. {"host.yield.yield_to": ["upstream", "borrow"]}')
    axes = dict(axes or {})
    if backend not in ("local", "ray"):
        raise _refuse("backend", backend, "'local' or 'ray'")
    resume_dir = None if resume is None else _path("resume", resume)
    if resume_dir is not None and backend != "local":
        raise _refuse("resume", resume_dir, "None with backend='ray' (resume=DIR is the local backend's)")
    spec_json = _spec(base, axes, seeds, set, duration, baseline)
    names = [_oversub.FILE_AXIS if k == "file" else k for k in axes]
    base_pairs = _baseline(baseline, names)
    cwd = os.getcwd()
    cb, close = _progress(progress)
    try:
        if backend == "local":
            rows = _oversub.sweep_local(spec_json, cwd, cb, resume_dir)
        else:
            jobs = _oversub.sweep_jobs(spec_json, cwd)
            rows = _ray_rows(spec_json, cwd, jobs, cb)
    finally:
        close()
    df = _frame(rows, names)
    if base_pairs:
        df.attrs["baseline"] = dict(base_pairs)
    return df


def _label(v: Any) -> str:
    """An axis value's label as the sweep spells it (``--set`` text)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v if isinstance(v, str) else repr(v)


def _baseline(baseline: Optional[Mapping[str, Value]], axes: Sequence[str]) -> List[Tuple[str, str]]:
    if not baseline:
        return []
    if not isinstance(baseline, Mapping):
        raise _refuse("baseline", baseline, 'a dict of axis name -> label, e.g. {"policy": "upstream"}')
    out = []
    for k, v in baseline.items():
        if k not in axes:
            raise ScenarioError(
                f"baseline: axis {k!r} is not allowed: allowed one of the axes: {', '.join(axes) or '(none)'}"
            )
        out.append((k, _label(v)))
    return out


def summary(
    df: "pandas.DataFrame",
    baseline: Optional[Mapping[str, Value]] = None,
) -> "pandas.DataFrame":
    """Summarise a sweep's frame over seeds: the CLI's ``summary.csv``.

    One row per point and metric: ``workload, vms, <axes...>, metric, n,
    mean, ci95, min, max, modes, delta, delta_ci95, delta_pct,
    delta_pct_ci95, delta_pct_min, delta_pct_max, delta_pct_modes, p,
    p_holm, resolved``: the distribution over seeds (the mean and the
    half-width of its 95% CI (Student t), the range, and the number of modes
    by the gap rule of docs/usage.md, "Sweeps": a new mode where sorted
    neighbours lie more than 10% of the median apart), the paired
    (same-seed) delta against the baseline point, absolute and in percent,
    with their CIs and the per-seed percent deltas' range and modes (gap 10
    points), the paired t test's two-sided p and that p adjusted by Holm's
    method over the metric's column (every point); ``resolved`` is empty
    here (the CLI's ``--adaptive`` fills it). It is
    computed by the same Rust code as ``oversub sweep``'s summary.csv, so the
    two are equal for the same rows (tested).

    Args:
        df: a frame from :func:`sweep` (or rows of one: the columns
            ``workload, vms, <axes...>, seed, <metrics...>``; ``file`` is
            ignored). Points are its distinct axis-label combinations in
            first-seen order.
        baseline: axis name -> label of the point to compare with; default
            the ``baseline`` given to :func:`sweep` (``df.attrs``), else no
            deltas.

    Raises:
        ScenarioError: a frame without the columns, a seed twice at a point,
            or a baseline axis that is not a column.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise _refuse("df", type(df).__name__, "a pandas.DataFrame from oversub.sweep")
    cols = list(df.columns)
    for need in ("workload", "vms", "seed"):
        if need not in cols:
            raise ScenarioError(f"df: column {need!r} is missing: allowed a frame from oversub.sweep")
    start = 3 if cols[:1] == ["file"] else 2
    axes = cols[start : cols.index("seed")]
    metrics = cols[cols.index("seed") + 1 :]
    if baseline is None:
        baseline = df.attrs.get("baseline")
    pairs = _baseline(baseline, axes)
    rows = []
    for i, rec in enumerate(df.itertuples(index=False, name=None)):
        r = dict(zip(cols, rec))

        def num(col: str, conv: Callable[[Any], Any]) -> Any:
            # A value the column cannot hold is the frame's error, with the
            # CLI's form (it was a bare ValueError or OverflowError).
            try:
                return conv(r[col])
            except (TypeError, ValueError, OverflowError):
                raise _refuse(f"df row {i} column {col!r}", r[col], "a number as oversub.sweep writes it") from None

        seed = num("seed", int)
        if isinstance(seed, int) and not 0 <= seed <= 9223372036854775807:
            raise _refuse(f"df row {i} column 'seed'", seed, "an integer 0 ..= 9223372036854775807")
        vms = num("vms", int)
        if vms < 0:
            raise _refuse(f"df row {i} column 'vms'", vms, "a count >= 0")
        rows.append(
            (
                str(r["workload"]),
                vms,
                [(a, _label(r[a])) for a in axes],
                seed,
                [(m, num(m, float)) for m in metrics],
            )
        )
    text = _oversub.summary_csv(axes, rows, pairs)
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""], dtype={a: str for a in axes})
