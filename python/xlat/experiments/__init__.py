"""Reproductions of the seed papers' figures and tables (``xlat reproduce``).

Each reproduction runs a sweep at a chosen scale, draws the figure in the paper's style and
compares our numbers with the paper's published ones (kept in :file:`published.toml` with their
sources)::

    from xlat import experiments
    [r.id for r in experiments.reproductions()]
    outcome = experiments.reproduce("utopia-fig5", scale="quick")
    print(outcome.comparison)          # quantity | ours | paper | ratio | source
    print(outcome.direction)           # direction: <the paper's claim> — holds / does not hold
"""

# Importing the per-paper modules registers their reproductions; the registry itself imports
# none of them, so the papers build on it and not the other way round.
from . import (  # noqa: F401
    gandhi,
    mehpt,
    mosaic,
    sparta,
    sparta_accel,
    utopia,
    utopia_components,
    utopia_eval,
    utopia_fig6,
    utopia_fig17,
    utopia_tar_cache,
    utopia_thp,
)
from .registry import (
    SCALES,
    Analysis,
    Outcome,
    Reproduction,
    Stopped,
    System,
    ascending,
    check_configs,
    get,
    published,
    register,
    reproduce,
    reproductions,
    resolved_configs,
    run_status,
    write_combined_report,
)

__all__ = [
    "SCALES",
    "Analysis",
    "Outcome",
    "Reproduction",
    "Stopped",
    "System",
    "ascending",
    "check_configs",
    "get",
    "published",
    "register",
    "reproduce",
    "reproductions",
    "resolved_configs",
    "run_status",
    "write_combined_report",
]
