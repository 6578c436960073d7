"""The documentation is executable: every ``bash`` and ``python`` example in README.md and
docs/ runs (in a temporary directory, in the order the page gives them, shrunk to seconds),
and every ``toml`` example parses and, where it is a system config, resolves.

Shrinking: ``--refs N`` becomes ``--refs 20k`` (and runs that give none get it),
``--quick`` and every ``--scale`` become ``--scale tiny``, and Python examples run 20,000
references where they ask for millions. A command the page marks ``# fails: ...`` must fail
with an error message. Python blocks that are not Python (call synopses) are
skipped, and so are the lines of :data:`SKIP`, each with its reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport is a dependency there
    import tomli as tomllib

import xlat

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: Command lines (by their start) that the docs test does not run, and why.
SKIP = {
    "bash scripts/": "the set-up and test scripts are what CI itself runs",
    "source .venv/bin/activate": "the test already runs inside the environment",
    "xlat reproduce all": "every reproduction runs at tiny scale in tests/test_reproduce.py",
    "xlat sweep ... --backend dask": "an elided command line (its options are those above)",
    "pip install": "installing packages is the set-up's job",
    "cargo ": "the Rust build and tests are run by scripts/test.sh",
    ".venv/bin/python scripts/readme_figure.py": "it rewrites docs/img from the main job's "
    "output; tests/test_readme_figure.py checks what it wrote",
}
#: Python blocks that need what the test machine lacks.
SKIP_PYTHON = {"dask_jobqueue": "needs a Slurm cluster"}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[int, str, str]]:
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)
    ]


def commands(block: str) -> list[tuple[str, bool]]:
    """The block's command lines (continuation lines joined, comments dropped), each with
    whether the page says it fails (a trailing ``# fails: ...`` comment)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out: list[tuple[str, bool]] = []
    pending = ""
    fails = False
    for line in joined.splitlines():
        line = line.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        # A comment after the command (not inside quotes: the docs quote no '#').
        if "  #" in line:
            line, comment = line.split("  #", 1)
            line = line.rstrip()
            fails = fails or comment.strip().startswith("fails")
        pending = f"{pending} {line}" if pending else line
        if pending.count("'") % 2 == 0:  # a quoted string may span lines
            out.append((pending, fails))
            pending, fails = "", False
    return out


def shrink(cmd: str) -> str:
    cmd = re.sub(r"--refs \S+", "--refs 20k", cmd)
    cmd = re.sub(r"--quick\b|--scale \w+", "--scale tiny", cmd)
    words = cmd.split()
    if words[:1] == ["xlat"] and len(words) > 1:
        runs = words[1] in ("run", "compare", "sweep") or words[1:3] == ["trace", "record"]
        if runs and "--refs" not in words and "--trace" not in words:
            cmd += " --refs 20k"
        if words[1] == "reproduce" and "--list" not in words and "--scale" not in cmd:
            cmd += " --scale tiny"
    return cmd


def run_bash(cmd: str, cwd: Path, where: str, fails: bool) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        cmd, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if fails:
        assert done.returncode != 0 and "error:" in done.stderr, f"{where}: `{cmd}` did not fail"
    else:
        assert done.returncode == 0, f"{where}: `{cmd}` failed:\n{done.stderr[-2000:]}"


def run_python(code: str, namespace: dict, where: str) -> None:
    code = re.sub(r"\b[1-9]_000_000\b", "20_000", code)
    try:
        compiled = compile(code, where, "exec")
    except SyntaxError:
        return  # a synopsis, not a program
    exec(compiled, namespace)  # noqa: S102 - the docs' own examples


def check_toml(text: str, cwd: Path, where: str) -> None:
    parsed = tomllib.loads(text)
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    name = re.fullmatch(r"#\s*(\S+\.toml)", first)
    path = cwd / (name.group(1) if name else "docs-example.toml")
    body = (
        text if "extends" in parsed or "scheme" in parsed else f'extends = "baseline-radix"\n{text}'
    )
    path.write_text(body, encoding="utf-8")
    try:
        xlat.resolve_config(str(path))
    except xlat.XlatError as exc:
        raise AssertionError(f"{where}: the TOML example does not resolve: {exc}") from exc


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_the_page_runs(page: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for line, lang, text in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        if lang in ("bash", "sh"):
            for cmd, fails in commands(text):
                if any(cmd.startswith(prefix) for prefix in SKIP):
                    continue
                run_bash(shrink(cmd), tmp_path, where, fails)
        elif lang == "python":
            if any(module in text for module in SKIP_PYTHON):
                continue
            # Each snippet on its own, as a reader pastes it: it imports what it uses.
            run_python(text, {"__name__": "__docs__"}, where)
        elif lang == "toml":
            check_toml(text, tmp_path, where)


def test_the_shrinking_rules() -> None:
    assert shrink("xlat run -w gups --refs 2M") == "xlat run -w gups --refs 20k"
    assert shrink("xlat run --config my.toml --workload gups").endswith("--refs 20k")
    assert shrink("xlat reproduce utopia-fig5 --quick") == "xlat reproduce utopia-fig5 --scale tiny"
    assert shrink("xlat reproduce gandhi-fig11") == "xlat reproduce gandhi-fig11 --scale tiny"
    assert shrink("xlat reproduce x --scale paper") == "xlat reproduce x --scale tiny"
