"""oversub.sweep(..., resume=DIR): an interrupted sweep (Ctrl-C, a progress
callback that raises) keeps its finished runs in DIR/.oversub-runs.jsonl;
the same call again runs only the others and returns the frame an
uninterrupted sweep returns; a DIR that is not this sweep's store raises
ScenarioError with one line and loses nothing."""

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
STORE = ".oversub-runs.jsonl"

SWEEP = dict(
    base=PAIR,
    axes={"host.yield.yield_to": ["upstream", "borrow"]},
    seeds=[1, 2],
    duration="100ms",
)
RUNS = 4


class Stop(Exception):
    pass


def stop_after(k):
    """A progress callback that raises once k runs are done."""

    def cb(done, total):
        if done == k:
            raise Stop(f"stop after {k}")

    return cb


@pytest.fixture(scope="module")
def whole():
    return oversub.sweep(**SWEEP, progress=False)


def kept(d):
    """The runs file's lines: the header, then one per kept run."""
    return (Path(d) / STORE).read_text().splitlines()


def test_a_resumed_sweep_is_the_uninterrupted_sweep(whole, tmp_path):
    d = tmp_path / "runs"
    with pytest.raises(Stop):
        oversub.sweep(**SWEEP, resume=d, progress=stop_after(1))
    # The run that raised is kept; a run another worker finished meanwhile
    # may be too; the others were stopped.
    first = len(kept(d)) - 1
    assert 1 <= first < RUNS, kept(d)
    # Stopped again after one more run: the kept ones are not run again.
    with pytest.raises(Stop):
        oversub.sweep(**SWEEP, resume=d, progress=stop_after(1))
    second = len(kept(d)) - 1
    assert first < second <= RUNS
    seen = []
    df = oversub.sweep(**SWEEP, resume=d, progress=lambda done, total: seen.append((done, total)))
    # Only the runs not kept were made, and the frame is the whole sweep's
    # to the bit.
    todo = RUNS - second
    assert sorted(seen) == [(i, todo) for i in range(1, todo + 1)]
    pd.testing.assert_frame_equal(df, whole, check_exact=True)
    assert not (d / STORE).exists(), "removed once whole"
    # Again on the same directory: a fresh sweep, all runs.
    seen.clear()
    again = oversub.sweep(**SWEEP, resume=d, progress=lambda done, total: seen.append(total))
    assert seen == [RUNS] * RUNS
    pd.testing.assert_frame_equal(again, whole, check_exact=True)


CTRL_C = r"""
import os, signal, sys, threading
import oversub

sweep = dict(base=sys.argv[1], axes={"host.yield.yield_to": ["upstream", "borrow"]},
             seeds=[1, 2], duration="100ms")
# Ctrl-C after the first run, deterministically: the run's callback sends
# SIGINT to this process and waits until the handler has run on the main
# thread (while the sweep is under way there).
ran = threading.Event()
def on_int(sig, frame):
    ran.set()
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_int)
def progress(done, total):
    if done == 1:
        ran.clear()
        os.kill(os.getpid(), signal.SIGINT)
        ran.wait()
for resume in (sys.argv[2], None):
    try:
        oversub.sweep(**sweep, resume=resume, progress=progress)
        print("not interrupted")
    except KeyboardInterrupt as e:
        print(f"KeyboardInterrupt: {e}")
# The stop was cleared: the next sweep runs whole.
print(len(oversub.sweep(**sweep, progress=False)), "rows")
"""


def test_ctrl_c_stops_a_sweep_and_keeps_its_finished_runs(whole, tmp_path):
    d = tmp_path / "runs"
    # One worker thread: the run that finished is the only one kept.
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", CTRL_C, str(PAIR), str(d)], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == [
        f"KeyboardInterrupt: <sweep>: interrupted: 1 of 4 runs kept in {d / STORE}; "
        f'oversub.sweep(..., resume="{d}") runs the other 3',
        "KeyboardInterrupt: <sweep>: interrupted; no run kept (oversub.sweep(..., resume=DIR) keeps finished runs)",
        "4 rows",
    ], out.stdout
    assert len(kept(d)) == 1 + 1
    seen = []
    df = oversub.sweep(**SWEEP, resume=d, progress=lambda done, total: seen.append(total))
    assert seen == [3, 3, 3]
    pd.testing.assert_frame_equal(df, whole, check_exact=True)


def interrupted_store(d, sweep=SWEEP):
    with pytest.raises(Stop):
        oversub.sweep(**sweep, resume=d, progress=stop_after(1))
    return (Path(d) / STORE).read_bytes()


def test_runs_of_another_sweep_are_refused_and_kept(tmp_path):
    d = tmp_path / "runs"
    text = interrupted_store(d)
    other = dict(SWEEP, seeds=[1, 3])
    with pytest.raises(oversub.ScenarioError) as e:
        oversub.sweep(**other, resume=d)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{d / STORE}: fingerprint "), msg
    assert "is not this sweep's" in msg and "allowed resume=DIR with the binary, sweep file and scenarios" in msg, msg
    assert (d / STORE).read_bytes() == text, "nothing lost"
    # The CLI's runs of the same sweep are another binary's: refused too.
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'base = "{PAIR}"\nseeds = [1, 2]\nduration = "100ms"\n'
        '[[axis]]\nkey = "host.yield.yield_to"\nvalues = ["upstream", "borrow"]\n'
    )
    cli_out = tmp_path / "cli"
    r = subprocess.run([str(CLI), "sweep", spec, "--out", cli_out, "--stop-after-runs", "1"], capture_output=True)
    assert r.returncode == 130, r.stderr
    with pytest.raises(oversub.ScenarioError, match=r"fingerprint .* is not this sweep's"):
        oversub.sweep(**SWEEP, resume=cli_out)


def with_store(make_store):
    """A resume directory whose runs file is made by make_store(path)."""

    def make(d):
        d.mkdir()
        make_store(d / STORE)
        return d

    return make


def as_file(d):
    d.write_text("x")
    return d


def as_fifo(d):
    os.mkfifo(d)
    return d


@pytest.mark.parametrize(
    "make,match",
    [
        (as_file, r"^resume {d}: exists and is not a directory: allowed a new or empty directory"),
        (as_fifo, r"^resume {d}: exists and is not a directory"),
        (with_store(os.mkfifo),
         r"^{d}/\.oversub-runs\.jsonl: not a regular file \(a device, FIFO or socket\): allowed the runs file"),
        (with_store(Path.mkdir), r"^{d}/\.oversub-runs\.jsonl: a directory: allowed the runs file"),
        (with_store(lambda p: p.write_text("not a store\n")),
         r"^{d}/\.oversub-runs\.jsonl: line 1: not oversub's header \(.*\): allowed the file oversub writes"),
        (with_store(lambda p: p.write_bytes(b"\xff\xfe\n")), r"^{d}/\.oversub-runs\.jsonl: cannot read: "),
        (with_store(lambda p: p.write_text("")), r"^{d}/\.oversub-runs\.jsonl: empty: allowed the header line"),
    ],
    ids=["file", "fifo", "store-fifo", "store-dir", "not-a-store", "not-utf8", "empty"],
)
def test_a_bad_resume_dir_is_a_scenario_error_and_left_as_it_was(tmp_path, make, match):
    d = make(tmp_path / "runs")

    def state():
        if d.is_dir():
            return sorted((p.name, p.is_file() and p.read_bytes()) for p in d.iterdir())
        return d.is_fifo() or d.read_bytes()

    before = state()
    with pytest.raises(oversub.ScenarioError, match=match.format(d=str(d).replace(".", r"\."))) as e:
        oversub.sweep(**SWEEP, resume=d, progress=False)
    assert "\n" not in str(e.value)
    assert state() == before


def test_resume_is_the_local_backends():
    with pytest.raises(oversub.ScenarioError, match=r"^resume: '/tmp/x' is not allowed: allowed None with backend='ray'"):
        oversub.sweep(**SWEEP, backend="ray", resume="/tmp/x")
    with pytest.raises(oversub.ScenarioError, match=r"^resume: 5 is not allowed: allowed a file path"):
        oversub.sweep(**SWEEP, resume=5)


def test_a_directory_another_process_writes_is_refused(tmp_path):
    """One writer per directory, as `oversub sweep --out DIR`: a lock held
    by a running process refuses the sweep (and leaves the lock); a lock
    whose process is gone is taken over, and freed when the sweep returns."""
    d = tmp_path / "runs"
    d.mkdir()
    lock = d / ".oversub-lock"
    lock.write_text(f"{os.getpid()}\n")
    with pytest.raises(oversub.ScenarioError, match=r"one command per directory"):
        oversub.sweep(**SWEEP, resume=d, progress=False)
    assert lock.read_text() == f"{os.getpid()}\n"
    assert not (d / STORE).exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    lock.write_text(f"{gone}\n")
    df = oversub.sweep(**SWEEP, resume=d, progress=False)
    assert len(df) == RUNS
    assert not lock.exists()
