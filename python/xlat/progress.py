"""Where a long run shows its progress: a bar on a terminal, a bar in a notebook, and a line
every minute or so where there is neither (a pipe, a CI log), so a week-long run is not silent.

The engine draws the terminal bar and writes the lines itself (``progress="bar"`` /
``"lines"``); in a notebook it calls back into Python, which drives the ecosystem's usual bar
(``tqdm.auto``). ``XLAT_PROGRESS_SECONDS`` sets the interval between lines (default 60).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Union

#: What :func:`xlat.run` accepts as ``progress``.
ProgressArg = Union[None, bool, str, Callable[[int, Optional[int]], Any]]


def in_notebook() -> bool:
    """Whether this interpreter is a Jupyter kernel (its output goes to a notebook)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - any failure means: not a notebook we can draw in
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class NotebookBar:
    """A ``tqdm.auto`` bar the engine moves through its ``(done, total)`` calls."""

    def __init__(self, desc: str = "xlat") -> None:
        self._desc = desc
        self._bar: Any = None

    def __call__(self, done: int, total: int | None) -> None:
        if self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, unit="ref", unit_scale=True, desc=self._desc)
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def for_engine(progress: ProgressArg) -> ProgressArg:
    """The engine's ``progress`` argument for the user's: ``None`` or ``"auto"`` picks a bar
    in a notebook, a bar on a terminal and lines otherwise; anything else passes through
    (``True``/``"bar"``, ``False``/``"off"``, ``"lines"``, a callable)."""
    if progress is None or progress == "auto":
        if in_notebook():
            return NotebookBar()
        return "bar" if is_terminal(sys.stderr) else "lines"
    return progress


def close(progress: ProgressArg) -> None:
    """Close what :func:`for_engine` opened (a notebook bar)."""
    if isinstance(progress, NotebookBar):
        progress.close()


def runs_bar(total: int, enabled: bool | None, desc: str = "sweep") -> Any:
    """A bar counting a sweep's runs: in a notebook or on a terminal unless ``enabled`` says
    otherwise (``None``: wherever one can be seen)."""
    if enabled is None:
        enabled = in_notebook() or is_terminal(sys.stderr)
    if not enabled:
        return None
    if in_notebook():
        from tqdm.auto import tqdm

        return tqdm(total=total, unit="run", desc=desc)
    from tqdm import tqdm

    return tqdm(total=total, unit="run", desc=desc, file=sys.stderr, dynamic_ncols=True)
