"""Re-lay the ``simsrv`` package so that its folders show the architecture.

The data flow is scenario -> world -> workload -> strategy plan -> machine -> trace -> metrics
-> figures.  The package root keeps its public entry points (``__init__``, ``__main__``,
``version``); ``core/`` holds the foundations that know no model; ``pipeline/`` runs one
scenario (its ``load`` is the one composition root that imports every registry); the capacity
search sits beside the sweeps.  The layers are a contract (``[tool.importlinter]`` in
pyproject.toml, checked by ``tests/test_layering.py``), so an import against them fails the
tests.

Run from the repository root on a clean work tree, with the project's Python (ruff installed)::

    python tools/relayout.py            # move, rewrite, add the contract; then read its report
    python tools/relayout.py --dry-run  # only say what it would move

What it does, in order (each step does nothing where its result is already there, so a second
run changes nothing):

1. ``git mv`` every module of MOVES (a package moves with everything under it);
2. rewrites the old module paths (``simsrv.a.b``, ``from simsrv.a import b``, ``simsrv/a/b.py``)
   in the Python sources, tests, benchmarks, notebooks, docs, mkdocs.yml, README.md,
   CHANGELOG.md, pyproject.toml, scenario and sweep files; the names of NAME_MOVES too;
3. applies EDITS: the few changes of code that the moves ask for (each names its reason);
4. adds import-linter to the test dependencies, the layer contract to pyproject.toml,
   ``tests/test_layering.py`` and the README's layout section (all kept in this file);
5. sorts the imports and formats with ruff, then prints what is left to do by hand: edits
   whose text was not found (the file changed meanwhile), lines over ruff's length, modules of
   the package root that MOVES does not name, and ``lint-imports``' verdict.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

# -- old module -> new module ------------------------------------------------------------------
# A module is a file (simsrv/a/b.py) or a package (simsrv/a/b/, moved whole).  A module that is
# gone from the tree (deleted upstream) is skipped with a note.
MOVES: dict[str, str] = {
    # core/: foundations that know no model
    "simsrv.errors": "simsrv.core.errors",
    "simsrv.registry": "simsrv.core.registry",
    "simsrv.toml_file": "simsrv.core.toml_file",
    "simsrv.scenario.validation": "simsrv.core.strict_model",  # pydantic base model + validate
    "simsrv.lazy": "simsrv.core.lazy",
    "simsrv.compiled": "simsrv.core.compiled",
    "simsrv.compiled_loading": "simsrv.core.compiled_loading",
    "simsrv.ragged": "simsrv.core.ragged",
    "simsrv.defaults": "simsrv.core.defaults",  # the --help defaults, importing nothing
    # the invariants read the trace and the plans' worker arrays; the strategies check their
    # partition every frame, so the checks sit below them, with the trace they read
    "simsrv.invariants": "simsrv.machine.invariants",
    "simsrv.invariant_kernels": "simsrv.machine.invariant_kernels",
    # the frames' records (the metrics digest them, as they digest the machine's trace)
    "simsrv.frame_table": "simsrv.workload.frame_table",
    # bsp-group's grouping and balancers
    "simsrv.scheduling": "simsrv.strategies.grouping",
    # a frame's compiled steps (read, build, execute and commit the plan) and their registers:
    # the strategies' compiled planners call them, so they sit below the strategies; the loop
    # that drives them for one server is the pipeline's (a package's modules named here move
    # first, the package with the rest after them)
    "simsrv.compiled_loop.runner": "simsrv.pipeline.frame_loop",
    "simsrv.compiled_loop": "simsrv.frame_steps",
    # pipeline/: one run, from the scenario file to its result
    "simsrv.scenario.load": "simsrv.pipeline.load",  # the composition root: every registry
    "simsrv.scenario.reference": "simsrv.pipeline.reference",  # documents what load resolves
    "simsrv.seeding": "simsrv.pipeline.seeding",
    "simsrv.simulation": "simsrv.pipeline.simulation",
    "simsrv.trace_stream": "simsrv.pipeline.trace_stream",
    "simsrv.frame_stream": "simsrv.pipeline.frame_stream",
    "simsrv.keep_window": "simsrv.pipeline.keep_window",
    "simsrv.metrics.summary": "simsrv.pipeline.summary",  # summarizes a SimulationOutput
    "simsrv.cluster": "simsrv.pipeline.cluster",  # several servers: a frame loop of its own
    "simsrv.result": "simsrv.pipeline.result",
    "simsrv.world.snapshot": "simsrv.pipeline.snapshot",  # runs the world to a time, groups
    "simsrv.world.graph_export": "simsrv.pipeline.graph_export",
    # sweep/: grids of runs, and the capacity search over them
    "simsrv.capacity": "simsrv.sweep.capacity",
    "simsrv.capacity_sweep": "simsrv.sweep.capacity_sweep",
    # figures/: what a person looks at
    "simsrv.report": "simsrv.figures.report",
}

# Names that a package re-exported from a module that now lives on a higher floor.
NAME_MOVES: dict[str, str] = {
    "simsrv.scenario.load_scenario": "simsrv.pipeline.load.load_scenario",
    "simsrv.metrics.summarize": "simsrv.pipeline.summary.summarize",
    "simsrv.scenario.load.read_toml": "simsrv.core.toml_file.read_toml",  # (load imports it)
}

PIPELINE_DOC = '''"""One run, from a scenario file to its result.

:mod:`.load` turns TOML and ``--set`` overrides into a :class:`~simsrv.scenario.Scenario`
and is the one place that imports every registry (strategies, map kinds, mobility models,
zonings, interconnect profiles, engines, platforms); :mod:`.simulation` runs its frames
(world -> workload -> strategy plan -> machine) with :mod:`.frame_loop`, :mod:`.cluster`
the frames of several servers; :mod:`.trace_stream` and :mod:`.frame_stream` digest and
check the records as they come; :mod:`.summary` and :mod:`.result` make the run's metrics
and :class:`~.result.RunResult`.
"""
'''

NEW_PACKAGES: dict[str, str] = {
    "simsrv/core": (
        '"""Foundations that know no model: user-facing errors, name registries, TOML files, the\n'
        "strict pydantic base model, numba's compilation and cache loading, lazy package\n"
        "attributes, ragged rows, and the defaults the command line's help shows.\n\n"
        "Nothing here imports another part of simsrv.\n"
        '"""\n'
    ),
    "simsrv/testbed": (  # a package, so that import-linter (and a wheel) finds it
        '"""The real server measured here: the patched mvdsv built from ../shared, synthetic\n'
        "QuakeWorld clients, one run, campaigns, and the model against them (docs/testbed.md).\n"
        '"""\n'
    ),
    "simsrv/pipeline": PIPELINE_DOC,
}

# Changes of code that the moves ask for: (file, old text, new text, why).  Applied after the
# rewrites, so the texts are in the new module paths.  Done where the new text is already there.
EDITS: list[tuple[str, str, str, str]] = [
    (
        "simsrv/pipeline/load.py",
        'one line naming the field.\n"""\n',
        "one line naming the field.\n\n"
        "The composition root: resolving a scenario's names is the one place that imports every\n"
        "registry (strategies, map kinds, mobility models, engines, platforms, zonings,\n"
        'interconnect profiles), above all of them.\n"""\n',
        "say why loading sits in the pipeline",
    ),
    (
        "simsrv/scenario/__init__.py",
        '"""Scenarios: validated, typed descriptions of a run, loaded from TOML files."""\n',
        '"""Scenarios: validated, typed descriptions of a run.\n\n'
        "Loading one from TOML resolves registered names (strategies, maps, ...), so it is\n"
        ":func:`simsrv.pipeline.load.load_scenario`, above the parts it names.\n"
        '"""\n',
        "the scenario's sections sit below every part; loading resolves the parts' registries",
    ),
    (
        "simsrv/scenario/__init__.py",
        '__all__ = ["Scenario", "load_scenario"]\n\n\n'
        "def load_scenario(source=None, overrides=()):\n"
        '    """Build a validated :class:`Scenario`; see :func:`simsrv.pipeline.load.'
        'load_scenario`."""\n'
        "    from simsrv.pipeline.load import load_scenario as _load\n\n"
        "    return _load(source, overrides)\n",
        '__all__ = ["Scenario"]\n',
        "simsrv.scenario would import the composition root above it",
    ),
    (
        "simsrv/__init__.py",
        '"load_scenario": "simsrv.scenario",',
        '"load_scenario": "simsrv.pipeline.load",',
        "load_scenario lives in the composition root",
    ),
    (
        "simsrv/frame_steps/__init__.py",
        '"""The frame loop compiled: many frames per call for strategies with a compiled planner\n'
        "(:class:`~simsrv.strategies.base.FrameKernel`); the Python loop of\n"
        ':func:`simsrv.pipeline.simulation.simulate` runs the frames it does not cover."""\n',
        '"""A server frame\'s compiled steps and the registers they share.\n\n'
        ":mod:`.kernels`: read the packets, build the frame (the frame rules), execute its\n"
        "plan on the machine's compiled engine and commit it; :mod:`.state`: the registers.\n"
        "The frame loop of one server (:mod:`simsrv.pipeline.frame_loop`) drives them for every\n"
        "strategy, and a strategy's compiled planner\n"
        "(:class:`~simsrv.strategies.base.FrameKernel`) runs many frames per call with them.\n"
        '"""\n',
        "the package holds the steps; the loop that drives them is the pipeline's",
    ),
    (
        "simsrv/metrics/__init__.py",
        "from simsrv.pipeline.summary import summarize\n",
        "",
        "the run's summary moved up to the pipeline; metrics keep the digests it uses",
    ),
    (
        "simsrv/metrics/__init__.py",
        '"parallel_fraction", "summarize"]',
        '"parallel_fraction"]',
        "the run's summary moved up to the pipeline",
    ),
    (
        "simsrv/metrics/__init__.py",
        '"""Metrics derived from the recorded facts (frames, trace, packet arrivals)."""\n',
        '"""Metrics derived from the recorded facts (frames, trace, packet arrivals).\n\n'
        "A run's one-row summary, which gathers them, is :mod:`simsrv.pipeline.summary`.\n"
        '"""\n',
        "say where the summary went",
    ),
]

# -- the layers, as import-linter checks them ---------------------------------------------------
CONTRACT = """
[tool.importlinter]
root_package = "simsrv"

[[tool.importlinter.contracts]]
id = "layers"
name = "Layers: a package imports only the floors below it (the data flow bottom up)"
type = "layers"
# Top to bottom.  "a | b" on one floor: a and b import neither the other.
layers = [
    "simsrv.cli",
    "simsrv.calibration",
    "simsrv.studies | simsrv.testbed",
    "simsrv.validation | simsrv.figures",
    "simsrv.sweep",
    "simsrv.pipeline",
    "simsrv.metrics | simsrv.strategies",
    "simsrv.frame_steps",
    "simsrv.workload | simsrv.machine | simsrv.interconnect",
    "simsrv.world",
    "simsrv.scenario",
    "simsrv.platforms",
    "simsrv.core",
]

[[tool.importlinter.contracts]]
id = "pipeline"
name = "The run pipeline: result -> cluster -> one server's frame loop -> digests"
type = "layers"
containers = ["simsrv.pipeline"]
layers = [
    "load | reference | result | graph_export",
    "cluster | snapshot",
    "summary",
    "simulation",
    "trace_stream | frame_stream | frame_loop",
    "seeding | keep_window",
]

[[tool.importlinter.contracts]]
id = "stages"
name = "The world, the machine and the interconnect know nothing of each other"
type = "independence"
modules = ["simsrv.world", "simsrv.machine", "simsrv.interconnect"]

[[tool.importlinter.contracts]]
id = "reference-engine"
name = "The simpy reference engine shares plans and trace with the compiled engine, no code"
type = "forbidden"
source_modules = ["simsrv.machine.simpy_engine"]
forbidden_modules = ["simsrv.machine.engine", "simsrv.machine.executor"]
"""

LAYERING_TEST = '''"""The package's layers are a contract (``[tool.importlinter]`` in pyproject).

``lint-imports`` checks it; an import against the layering (a lower floor importing a higher
one) fails here with the import named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(
    not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')"
)


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``simsrv`` package under ``root`` (its own pyproject.toml)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True
    )


def test_the_package_keeps_its_layers():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_import_against_the_layers_fails(tmp_path):
    shutil.copytree(
        ROOT / "simsrv", tmp_path / "simsrv", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "simsrv" / "core" / "upward.py").write_text("import simsrv.cli.main\\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "simsrv.core.upward -> simsrv.cli.main" in done.stdout, done.stdout
'''

README_LAYOUT = """## Layout (the data flow)

One line per folder, the bottom floor first: a folder imports only folders listed before it
(the layer contract in `pyproject.toml`; `lint-imports`, run by `tests/test_layering.py`, fails
on an import against it).  Read down, it is the data flow: scenario -> world -> workload ->
strategy plan -> machine -> trace -> metrics -> figures, except that `machine/` comes before
the strategies, which write their plans in its plan types.

```
simsrv/core/        foundations that know no model: errors, registries, TOML, the strict
                    pydantic model, numba compilation and cache loading, lazy exports
simsrv/platforms/   platform profiles (TOML data: CPU topology and costs)
simsrv/scenario/    the validated Scenario's sections (pydantic) and their bounds
simsrv/world/       maps (registered kinds), mobility models (registered), proximity,
                    visibility (PVS proxy), areanode tree, deaths and respawns
simsrv/workload/    client packet stream, socket buffer, rate limit, per-frame workload, the
                    frame records (frame_table)
simsrv/machine/     plans (the strategy/machine contract), the compiled engine, the simpy
                    reference engine, the trace and the invariants checked on it
simsrv/interconnect/ messages between nodes: profiles (libvip, libvip-altered, tcp), shared
                    links, the ping-pong benchmark (simsrv pingpong)
simsrv/frame_steps/ a server frame's compiled steps: read the packets, build the frame
                    (frame rules), execute the plan on the machine's engine, commit the frame
simsrv/strategies/  strategy interface + registry; one file per strategy; cost functions;
                    grouping/: bsp-group's entity groups and balancers (LPT, ...)
simsrv/metrics/     digests of frames and trace (moments, OS time, groups, lock and barrier
                    waits, stage time per thread)
simsrv/pipeline/    one run: load (TOML -> Scenario, resolving every registered name: the
                    composition root) -> simulation (frame_loop: one server's frames) ->
                    trace and frame streams (digested and checked as they come) -> summary
                    -> RunResult; cluster/: several servers (zones, border mirroring,
                    handoffs); seeding, keep windows, the world snapshot of simsrv map
simsrv/sweep/       grids of runs (simsrv compare, simsrv sweep): sweep file -> validated runs
                    -> process pool or Dask -> one Parquet row per run -> mean and CI; the
                    capacity search (simsrv capacity) and capacity sweeps
simsrv/figures/     figures: functions from result tables to matplotlib figures; report.html
simsrv/validation/  the published figures (reference.toml) and simsrv validate: rows -> runs
                    -> quantities -> mean, CI, pass/fail
simsrv/studies/     scripted experiments behind the tables in docs/ (map groups, area2004)
simsrv/testbed/     the real server: build the patched mvdsv from ../shared, synthetic
                    QuakeWorld clients, one run, campaigns, the model against them
simsrv/calibration/ simsrv calibrate: one fitting procedure per platform (a joint least-
                    squares fit on seed-averaged runs against the table's calibration rows)
simsrv/cli/         the `simsrv` command (`python -m simsrv`: `__main__.py`)
simsrv/__init__.py  entry points: run, RunResult, load_scenario, Scenario, KeepWindow (+ version.py)
scenarios/ sweeps/ docs/ tests/ benchmarks/ notebooks/ tools/ (relayout.py made this layout)
```

"""

CHANGELOG_ENTRY = """### Layout

- The package's folders follow the data flow, and `pyproject.toml` declares them as layers that
  import-linter checks in the tests (`lint-imports`): the package root keeps `__init__`,
  `__main__` and `version`; `simsrv.core` holds the foundations that know no model (errors,
  registries, TOML, the strict pydantic model, numba loading); `simsrv.pipeline` runs one
  scenario (`load_scenario` is `simsrv.pipeline.load`, `run` is `simsrv.pipeline.result`, the
  cluster is `simsrv.pipeline.cluster`); the capacity search is `simsrv.sweep.capacity`;
  bsp-group's groups and balancers are `simsrv.strategies.grouping`; the frame loop of
  `simsrv.compiled_loop` is `simsrv.pipeline.frame_loop`, its compiled steps
  `simsrv.frame_steps`; the invariants `simsrv.machine.invariants`.  Every old module
  path and its new one: the table at the top of `tools/relayout.py`.  `from simsrv import run,
  load_scenario` is unchanged; `simsrv.scenario.load_scenario` and `simsrv.metrics.summarize`
  are gone (use `simsrv.load_scenario` and `simsrv.pipeline.summary.summarize`).

"""

HOWTO_SECTION = """## Put new code on its floor

The package's folders are floors (README's layout section; the contract in `pyproject.toml`):
a module imports only its own folder and the floors below it, and `lint-imports` (run by
`tests/test_layering.py`) fails on an import against them, naming it.  So a new module goes
to the lowest folder that holds everything it imports: a helper that knows no model to
`simsrv/core/`, a per-frame fact that the strategies use to `simsrv/workload/` or
`simsrv/machine/`, something that needs a whole run to `simsrv/pipeline/`.  A new registry
(a kind of thing chosen by name in a scenario) is resolved in `simsrv/pipeline/load.py`, the
one module that imports every registry.  When an import runs up a floor, move the code it
needs down rather than adding an `ignore_imports` to the contract.

"""

# -- where the old paths are rewritten -----------------------------------------------------------
TEXT_FILES = (
    "simsrv/**/*.py",
    "simsrv/**/*.toml",
    "tests/**/*.py",
    "benchmarks/**/*",
    "notebooks/**/*",
    "docs/**/*.md",
    "scenarios/**/*.toml",
    "sweeps/**/*.toml",
    "mkdocs.yml",
    "mkdocs_hooks.py",
    "README.md",
    "pyproject.toml",
)
TEXT_SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".yml", ".yaml", ".txt", ""}
ROOT_MODULES_KEPT = {"__init__", "__main__", "version"}


def git(*args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    if check and done.returncode:
        sys.exit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def module_path(module: str) -> Path | None:
    """The file or package folder of ``module`` in the work tree, or None."""
    base = Path(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base
    return None


def target_path(old: Path, new_module: str) -> Path:
    base = Path(*new_module.split("."))
    return base.with_suffix(".py") if old.suffix == ".py" else base


def move_modules(dry_run: bool) -> list[str]:
    notes = []
    for package, docstring in NEW_PACKAGES.items():
        init = Path(package) / "__init__.py"
        if not init.exists():
            print(f"new package {package}/")
            if not dry_run:
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text(docstring)
                git("add", str(init))
    for old, new in sorted(MOVES.items(), key=lambda item: -len(item[0])):
        src = module_path(old)
        done = module_path(new)
        if src is None:
            if done is None:
                notes.append(f"{old}: gone from the tree, nothing moved (drop it from MOVES?)")
            continue
        if done is not None:
            sys.exit(f"{old} and {new} both exist: merge them by hand, then run again")
        dst = target_path(src, new)
        print(f"git mv {src} {dst}")
        if dry_run:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_dir() and not any(dst.rglob("*.py")):
            shutil.rmtree(dst)  # caches left by an earlier run: git mv would move into them
        if not (dst.parent / "__init__.py").exists():
            sys.exit(f"{dst.parent} is no package: add it to NEW_PACKAGES")
        git("mv", str(src), str(dst))
        for cache in dst.rglob("__pycache__") if dst.is_dir() else []:
            shutil.rmtree(cache, ignore_errors=True)  # numba's caches name the old paths
        stale = src.parent / "__pycache__" if src.suffix == ".py" else None
        if stale is not None and stale.is_dir():
            for pyc in stale.glob(f"{src.stem}.*"):
                pyc.unlink()
        if src.is_dir() and not any(src.rglob("*.py")):
            shutil.rmtree(src, ignore_errors=True)  # what git mv left: caches
    return notes


def text_files() -> list[Path]:
    tracked = set(git("ls-files").split("\n"))
    files: set[Path] = set()
    for pattern in TEXT_FILES:
        for path in Path().glob(pattern):
            if path.is_file() and str(path) in tracked and path.suffix in TEXT_SUFFIXES:
                files.add(path)
    files.discard(Path("tools/relayout.py"))
    return sorted(files)


def is_module(name: str) -> bool:
    return name in MOVES or any(name.startswith(old + ".") for old in MOVES)


def renamed(name: str) -> str:
    """``name`` (a dotted module or attribute path) in the new layout."""
    for old, new in sorted({**NAME_MOVES, **MOVES}.items(), key=lambda item: -len(item[0])):
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return name


FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*\"?)from (?P<base>simsrv(?:\.\w+)*) import (?P<names>[\w ,]+?)"
    r"(?P<tail>[ \t]*(?:#.*?)?(?:\\n)?\"?,?)$",  # (in a notebook: '    "from ... import b\\n",')
    re.M,
)


def rewrite_from_imports(text: str) -> str:
    """``from simsrv.a import b`` where ``simsrv.a.b`` moved (a module or a NAME_MOVES name):
    imported from ``b``'s new parent, one statement per parent."""

    def fix(match: re.Match[str]) -> str:
        base = match["base"]
        groups: dict[str, list[str]] = {}
        for item in match["names"].split(","):
            item = item.strip()
            if not item:
                continue
            name = item.split(" as ")[0].strip()
            full = f"{base}.{name}"
            if full in NAME_MOVES or is_module(full):
                parent, _, new_name = renamed(full).rpartition(".")
                if new_name != name:  # the code goes on calling it by its old name
                    item = item.replace(name, new_name, 1)
                    item = item if " as " in item else f"{new_name} as {name}"
            else:
                parent = renamed(base)
            groups.setdefault(parent, []).append(item)
        if list(groups) == [base]:
            return match[0]
        lines = [
            f"{match['indent']}from {parent} import {', '.join(items)}"
            for parent, items in groups.items()
        ]
        if match["indent"].endswith('"'):  # a notebook's source line: a JSON string each
            lines[:-1] = [line + '\\n",' for line in lines[:-1]]
        lines[-1] += match["tail"]
        return "\n".join(lines)

    return FROM_IMPORT.sub(fix, text)


def dotted_pattern() -> re.Pattern[str]:
    names = sorted({*MOVES, *NAME_MOVES}, key=len, reverse=True)
    return re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in names) + r")(?!\w)")


def path_map() -> dict[str, str]:
    """``simsrv/a/b.py`` and ``simsrv/a/pkg`` (old) -> new, for prose and comments."""
    paths = {}
    for old, new in MOVES.items():
        new_base = "/".join(new.split("."))
        old_base = "/".join(old.split("."))
        dst = module_path(new)
        if dst is not None and dst.suffix == ".py":
            paths[old_base + ".py"] = new_base + ".py"
        else:
            paths[old_base] = new_base
    return paths


def rewrite_text(files: list[Path]) -> list[Path]:
    dotted = dotted_pattern()
    paths = path_map()
    path_rx = re.compile(
        r"(?<![\w/])("
        + "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
        + r")(?![\w])"
    )
    changed = []
    for path in files:
        text = path.read_text()
        new = rewrite_from_imports(text) if path.suffix in {".py", ".md", ".ipynb"} else text
        new = dotted.sub(lambda m: renamed(m[1]), new)
        new = path_rx.sub(lambda m: paths[m[1]], new)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def apply_edits() -> list[str]:
    left = []
    for file, old, new, why in EDITS:
        path = Path(file)
        text = path.read_text() if path.exists() else ""
        if new and new in text:
            continue  # done before
        if old in text:
            path.write_text(text.replace(old, new, 1))
        elif new:  # a deletion whose text is gone is done
            left.append(f"{file}: text not found, do by hand ({why}):\n    {old.strip()[:90]}")
    return left


def add_contract() -> list[str]:
    notes = []
    pyproject = Path("pyproject.toml")
    text = pyproject.read_text()
    if "import-linter" not in text:
        text, n = re.subn(
            r'(\ntest = \[\n(?:    "[^"]*",\n)*)',
            r'\1    "import-linter>=2.1",\n',
            text,
        )
        if not n:
            notes.append("pyproject.toml: add import-linter>=2.1 to the test extra by hand")
    contract = re.compile(r"\n\[tool\.importlinter\].*?(?=\n\[(?!\[?tool\.importlinter)|\Z)", re.S)
    if contract.search(text):  # this file's contract replaces the one written before
        text = contract.sub(lambda _: CONTRACT.rstrip("\n"), text).rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n" + CONTRACT
    pyproject.write_text(text)
    test = Path("tests/test_layering.py")
    if not test.exists():
        test.write_text(LAYERING_TEST)
        git("add", str(test))
    changelog = Path("CHANGELOG.md")
    text = changelog.read_text()
    if CHANGELOG_ENTRY not in text and "\n### " in text:
        at = text.index("\n### ") + 1
        changelog.write_text(text[:at] + CHANGELOG_ENTRY + text[at:])
    howto = Path("docs/howto.md")
    text = howto.read_text() if howto.exists() else ""
    if HOWTO_SECTION not in text and "\n## Add a strategy" in text:
        at = text.index("\n## Add a strategy") + 1
        howto.write_text(text[:at] + HOWTO_SECTION + text[at:])
    readme = Path("README.md")
    text = readme.read_text()
    new = re.sub(r"## Layout.*?\n(?=## )", lambda _: README_LAYOUT, text, count=1, flags=re.S)
    if new == text and README_LAYOUT not in text:
        notes.append("README.md: no '## Layout' section found, write it by hand")
    readme.write_text(new)
    return notes


def ruff(files: list[Path]) -> None:
    py = [str(p) for p in files if p.suffix == ".py" and p.exists()]  # not the notebooks' cells
    if not py:
        return
    ruff_cmd = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff_cmd, "check", "--fix", "--select", "I", "-q", *py], check=False)
    subprocess.run([*ruff_cmd, "format", "-q", *py], check=False)


LINE_LENGTH = 100
NEW_ITEM = re.compile(r"\s*([*-] |\d+\. |>>>|\.\. |[\w ]+:$|\S+\s{3,}|\"\"\"|'\'\'|$)")


def docstring_lines(text: str) -> set[int]:
    """Line numbers (from 1) inside strings that span several lines: prose that may be reflowed."""
    lines: set[int] = set()
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    for token in tokens:
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def reflow(path: Path) -> None:
    """Carry the words past column 100 of docstring lines (made longer by the new module paths)
    over to the next line of their paragraph, or to a new line where the paragraph ends."""
    text = path.read_text()
    prose = docstring_lines(text)
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        one_line_docstring = stripped.startswith('"""') and stripped.endswith('"""')
        if (
            len(line) <= LINE_LENGTH
            or ((i + 1) not in prose and not one_line_docstring)
            or " " not in stripped
        ):
            i += 1
            continue
        cut = line.rfind(" ", 0, LINE_LENGTH + 1)
        indent = len(line) - len(line.lstrip())
        if cut <= indent:
            i += 1
            continue
        head, tail = line[:cut].rstrip(), line[cut + 1 :]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (i + 1) in prose and (i + 2) in prose and not NEW_ITEM.match(nxt):
            pad = len(nxt) - len(nxt.lstrip())
            lines[i : i + 2] = [head, " " * pad + tail + " " + nxt.lstrip()]
        else:
            bullet = re.match(r"\s*[*-] ", line)
            pad = bullet.end() if bullet else indent
            lines[i : i + 1] = [head, " " * pad + tail]
        i += 1
    new = "\n".join(lines)
    if new != text:
        path.write_text(new)


def report(notes: list[str]) -> None:
    print("\n-- left to do by hand --")
    root_left = sorted(
        p.stem for p in Path("simsrv").glob("*.py") if p.stem not in ROOT_MODULES_KEPT
    )
    if root_left:
        notes.append(f"package root still holds {root_left}: give each a home in MOVES")
    long = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "E501",
            "--output-format",
            "concise",
            "simsrv",
            "tests",
            "benchmarks",
        ],
        capture_output=True,
        text=True,
    )
    notes += [line for line in long.stdout.splitlines() if "E501" in line]
    lint = Path(sys.executable).parent / "lint-imports"
    if lint.exists():
        done = subprocess.run([str(lint), "--no-cache"], capture_output=True, text=True)
        lines = done.stdout.splitlines()
        broken = [ln for ln in lines if ln.endswith("BROKEN") or ln.startswith("- simsrv")]
        notes += [f"lint-imports: {ln.strip()}" for ln in broken]
    else:
        notes.append("lint-imports not installed: pip install -e '.[test]', then run it")
    print("\n".join(notes) if notes else "nothing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would move, and stop")
    parser.add_argument("--force", action="store_true", help="run on a work tree with changes")
    args = parser.parse_args()
    if not Path("simsrv/__init__.py").is_file():
        sys.exit("run from the repository root")
    if not args.force and not args.dry_run and git("status", "--porcelain", "--untracked-files=no"):
        sys.exit("the work tree has changes: commit or stash them first (or --force)")
    notes = move_modules(args.dry_run)
    if args.dry_run:
        print("\n".join(notes))
        return
    changed = rewrite_text(text_files())
    notes += apply_edits()
    notes += add_contract()
    for path in changed:
        if path.suffix == ".py":
            reflow(path)
    ruff(changed + [Path("tests/test_layering.py")])
    print(json.dumps({"moved": len(MOVES), "files rewritten": len(changed)}))
    report(notes)


if __name__ == "__main__":
    main()
