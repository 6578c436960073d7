"""A worker process of the local sweep backend: ``python -m xlat.worker``.

It reads one run per line on stdin (the JSON of :meth:`xlat.sweep.RunSpec.to_dict`), simulates
it with :func:`xlat.sweep.execute` and writes the result as one JSON line, until stdin closes.
Each result carries the run's peak host memory (``peak_host_bytes``: the worker's peak resident
memory during the run, its interpreter included), where the system reports it.

The pool starts these as fresh interpreters that import only xlat. Unlike the workers of
``multiprocessing``'s "spawn" start method, they never import the caller's ``__main__``, so a
sweep runs from a plain script without an ``if __name__ == "__main__":`` guard, from a notebook
and from the REPL alike.
"""

from __future__ import annotations

import json
import os
import signal
import sys


def _reset_peak_memory() -> bool:
    """Start this process's peak resident memory (``VmHWM``) again from its current size, so
    that the next run's peak is its own (Linux: ``/proc/self/clear_refs``); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main() -> int:
    # The protocol owns the original stdout; anything else printed (by the engine or a library)
    # goes to stderr instead of corrupting it.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Ctrl-C reaches the whole process group; the sweep decides what happens to its workers
    # (it closes their stdin or kills them), so a worker does not die mid-reply on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .sweep import execute, proc_bytes

    for line in sys.stdin:
        if not line.strip():
            continue
        measured = _reset_peak_memory()
        result = execute(json.loads(line))
        if measured:
            # The peak resident memory since the reset: the run's own.
            result["peak_host_bytes"] = proc_bytes("/proc/self/status", "VmHWM")
        protocol.write(json.dumps(result) + "\n")
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
