"""Type hints of the native module (crates/oversub-python)."""

from typing import Any, Callable, List, Optional, Tuple

Row = Tuple[int, str, str, int, List[Tuple[str, str]], int, List[Tuple[str, float]]]

__version__: str
FILE_AXIS: str

class ScenarioError(ValueError):
    """A scenario, override or sweep the model refuses (the CLI's one line)."""

def run_json(
    path: str,
    source: Optional[str] = None,
    sets: List[str] = ...,
    seed: Optional[str] = None,
    duration: Optional[str] = None,
) -> str: ...
def check(path: str, source: Optional[str] = None, sets: List[str] = ...) -> None: ...
def sweep_jobs(spec_json: str, dir: str) -> List[Tuple[int, int]]: ...
def sweep_local(
    spec_json: str,
    dir: str,
    progress: Optional[Callable[[int, int], Any]] = None,
    resume: Optional[str] = None,
) -> List[Row]: ...
def summary_csv(
    axes: List[str],
    rows: List[Tuple[str, int, List[Tuple[str, str]], int, List[Tuple[str, float]]]],
    baseline: List[Tuple[str, str]],
) -> str: ...
def sweep_one(spec_json: str, dir: str, point: int, seed: int) -> Row: ...
