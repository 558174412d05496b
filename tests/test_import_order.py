"""Every module of the package can be the first one a user imports.

A script or notebook may start with ``import simsrv.pipeline.simulation`` (the benchmarks do), not
with the command line.  An import cycle that only breaks in one order (the scenario schema
validating a default machine section, which imports the platform profiles, which import the schema)
is invisible to tests that import the package in the usual order, so each module is imported first
in a clean package state: one fresh interpreter, the package's modules dropped between imports.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import textwrap

import simsrv

PROBE = textwrap.dedent(
    """
    import importlib, json, sys, traceback

    failures = {}
    for name in sys.argv[1:]:
        for loaded in [m for m in sys.modules if m == "simsrv" or m.startswith("simsrv.")]:
            del sys.modules[loaded]
        try:
            importlib.import_module(name)
        except Exception:
            failures[name] = traceback.format_exc(limit=-1).strip().splitlines()[-1]
    print(json.dumps(failures))
    """
)


def package_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(simsrv.__path__, prefix="simsrv.")
        if not info.name.endswith("__main__")
    )


def test_every_module_imports_first():
    modules = package_modules()
    assert "simsrv.pipeline.simulation" in modules and len(modules) > 50
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {}
