"""The command line starts without its heavy dependencies (``--version``, every ``--help``).

The checks run in a fresh interpreter: the other tests of this process have imported pandas,
matplotlib and scipy long before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("pandas", "matplotlib", "scipy", "networkx", "pyarrow")

PROBE = textwrap.dedent(
    """
    import contextlib, io, json, sys

    from simsrv.cli.main import build_parser, main

    parser = build_parser()
    commands = sorted(parser._subparsers._group_actions[0].choices)
    outputs = {}
    for argv in [["--version"], ["--help"], *([name, "--help"] for name in commands)]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                main(argv)
            except SystemExit as exit_:
                code = exit_.code
        outputs[" ".join(argv)] = [code, out.getvalue()]
    heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:]))
    print(json.dumps({"commands": commands, "outputs": outputs, "heavy": heavy}))
    """
)


@pytest.fixture(scope="module")
def probe() -> dict:
    """What a fresh interpreter imported while printing ``--version`` and every ``--help``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *HEAVY], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_version_and_every_help_import_no_heavy_dependency(probe):
    assert probe["heavy"] == []


def test_the_probe_ran_every_command_and_each_printed_its_help(probe):
    from simsrv.cli.main import SUBCOMMANDS

    assert len(probe["commands"]) == len(SUBCOMMANDS) >= 7
    for name in probe["commands"]:
        code, text = probe["outputs"][f"{name} --help"]
        assert code == 0 and text.startswith(f"usage: simsrv {name}"), name
    code, text = probe["outputs"]["--version"]
    assert code == 0 and text.startswith("simsrv ")


def test_a_command_still_runs_its_heavy_code_when_asked():
    """The lazy imports happen: a run in a fresh interpreter loads numpy and prints metrics."""
    code = (
        "import sys; from simsrv.cli.main import main; "
        "rc = main(['run', '--json', '--set', 'run.duration_s=0.2', '--set', 'run.warmup_s=0.1']);"
        "print('numpy' in sys.modules, rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "True 0"
    assert json.loads(done.stdout.splitlines()[0])["frames_per_s"] > 0


def test_the_defaults_named_in_help_match_the_code_that_uses_them():
    from simsrv.calibration import CALIBRATORS
    from simsrv.core import defaults
    from simsrv.strategies import STRATEGIES

    assert list(defaults.CALIBRATED_PLATFORMS) == CALIBRATORS.names()
    assert set(defaults.DEFAULT_STRATEGIES) <= set(STRATEGIES.names())


def test_the_package_exports_are_imported_on_first_use():
    import simsrv
    from simsrv.pipeline.result import run

    assert simsrv.run is run
    assert {"RunResult", "Scenario", "load_scenario", "run"} <= set(dir(simsrv))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = simsrv.nothing
