"""simsrv's own fuzzer: hostile inputs as hypothesis strategies, and the verdict on each.

A *case* is one thing a user (or a script, or another tool) may throw at simsrv:

``scenario``  a scenario file generated from the schema (:mod:`tests.scenario_fuzz`)
``text``      a shipped scenario's TOML text, mutated (lines dropped, doubled or cut, values
              replaced by hostile ones, bytes flipped, keys with line breaks...)
``bsp``       a small, fully known BSP map (:mod:`tests.bsp_builder`) with bytes flipped,
              integers overwritten, cut short, or gzip-wrapped
``sweep``     a sweep file (seeds, ``[set]``, ``[grid]``, ``[zip]``, ``[capacity]``) with valid
              and hostile values, run by ``simsrv sweep`` or ``simsrv capacity --sweep``
``argv``      a subcommand with one of its flags given a hostile value
``api``       a call of the Python API (``run``, ``load_scenario``, ``Scenario``,
              ``KeepWindow``) with wrong arguments or a scenario changed after loading

:func:`verdict` runs a case in this process and classifies what happened.  The promise is:
exit 0 (or the API returns), or exit 2 with one line (``InputError`` of one line) within
:data:`REFUSAL_LIMIT_S`, or, for a valid long run, a Ctrl-C (simulated after the case's budget)
that stops it with one line.  Anything else is a failure: a traceback (an exception other than
``InputError`` escaping), another exit status, a multi-line or slow refusal, or a run that
ignores Ctrl-C (caught by the campaign's watchdog, ``benchmarks/fuzz_campaign.py``).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import random
import signal
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from simsrv.core.errors import InputError
from tests.scenario_fuzz import BASE, FIELDS, scenario_files, to_toml, toml_value, values

ROOT = Path(__file__).resolve().parents[1]

REFUSAL_LIMIT_S = 5.0
"""A refusal (exit 2) must come within this many seconds."""

RUN_BUDGET_S = 30.0
"""A case still running after this is interrupted (a simulated Ctrl-C)."""

SHORT_RUN = {"duration_s": 0.1, "warmup_s": 0.05}

FAST_SCENARIOS = [
    "cube-160.toml",
    "cordeiro2007/fork-wait.toml",
    "cordeiro2007/clone-nowait-cube.toml",
    "cordeiro2007/sequential-bwcontrol.toml",
    "abdelkhalek2004/threads8-region.toml",
    "abdelkhalek2004/thread-per-client.toml",
    "area2004/threads4-optimized.toml",
    "cluster/nodes4-cpus2-640.toml",
]
"""Shipped scenarios the ``text`` family mutates (their runs cut to :data:`SHORT_RUN`)."""

HOSTILE_VALUES = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "9223372036854775808",
    "-9223372036854775809",
    '""',
    '"' + "x" * 5000 + '"',
    "[]",
    "[" * 200 + "]" * 200,
    "{}",
    "true",
    '"\\u202e\\u0000"',
    '[1, 2.5, "x"]',
    "1979-05-27T07:32:00Z",
]
"""TOML values that are wrong for almost every field."""


@dataclass
class Case:
    """One hostile input: ``argv`` for the command line (``{dir}`` is the case's temporary
    directory, where ``files`` are written first), or ``call`` for the Python API."""

    family: str
    argv: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    call: Callable[[], Any] | None = None
    label: str = ""

    def describe(self) -> str:
        """The case as JSON, enough to replay it (:func:`replay`): its command or call and
        its files (base64, whole up to 64 KiB; a larger file's first 300 bytes as text)."""
        files = {
            name: {"base64": base64.b64encode(data).decode()}
            if len(data) <= 65536
            else {"head": data[:300].decode("utf-8", "replace"), "bytes": len(data)}
            for name, data in self.files.items()
        }
        return json.dumps(
            {"family": self.family, "argv": self.argv, "call": self.label, "files": files}
        )


@dataclass(frozen=True)
class Verdict:
    """What a case did: ``outcome`` is ``run``, ``refused`` or ``interrupted`` (kept
    promises) or ``traceback``, ``exit``, ``multi-line``, ``slow-refusal`` (failures)."""

    outcome: str
    seconds: float
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome not in ("run", "refused", "interrupted")


class _Interrupt(KeyboardInterrupt):
    """The simulated Ctrl-C of a case over its budget."""


def verdict(case: Case, budget_s: float = RUN_BUDGET_S) -> Verdict:
    """Run ``case`` here and classify it (see the module docstring)."""

    def ctrl_c(signum, frame):
        raise _Interrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    start = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
            # in the case's directory: a flag value such as `--out -1` writes a file there
            for name, data in case.files.items():
                (Path(tmp) / name).write_bytes(data)
            signal.setitimer(signal.ITIMER_REAL, budget_s)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    if case.call is not None:
                        case.call()
                        code = 0
                    else:
                        from simsrv.cli.main import main

                        code = main([arg.replace("{dir}", tmp) for arg in case.argv])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _Interrupt:
        return Verdict("interrupted", time.perf_counter() - start)
    except InputError as error:
        code, err = 2, io.StringIO(f"simsrv: error: {error}\n")
    except SystemExit as exit_:  # argparse refuses a flag by exiting
        code = exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # the failure the fuzzer looks for
        return Verdict(
            "traceback", time.perf_counter() - start, f"{type(error).__name__}: {error}"[:500]
        )
    finally:
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    text = err.getvalue()
    if code == 0:
        return Verdict("run", seconds)
    if code == 130 and text.startswith("simsrv: interrupted") and text.count("\n") == 1:
        return Verdict("interrupted", seconds)
    if code != 2:
        return Verdict("exit", seconds, f"exit {code}: {text[:500]}")
    if not text.startswith("simsrv") or ": error: " not in text or text.count("\n") != 1:
        return Verdict("multi-line", seconds, text[:500])
    if seconds > REFUSAL_LIMIT_S:
        return Verdict("slow-refusal", seconds, text[:300])
    return Verdict("refused", seconds)


def replay(described: str, budget_s: float = RUN_BUDGET_S) -> Verdict:
    """The verdict on a command-line case again, from its :meth:`Case.describe` (e.g. a failed
    case of a campaign's ``campaign.json``)."""
    data = json.loads(described)
    files = {name: base64.b64decode(f["base64"]) for name, f in data["files"].items()}
    return verdict(Case(data["family"], data["argv"], files), budget_s)


# --- the families -------------------------------------------------------------------------


@st.composite
def scenario_cases(draw: st.DrawFn) -> Case:
    text, _ = draw(scenario_files())
    return Case("scenario", ["run", "{dir}/s.toml", "--json"], {"s.toml": text.encode()})


def _short(text: str) -> str:
    """A shipped scenario's text with its run cut to :data:`SHORT_RUN`."""
    lines = []
    for line in text.splitlines():
        key = line.split("=")[0].strip()
        if key in SHORT_RUN:
            line = f"{key} = {SHORT_RUN[key]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _mutate(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    which = rng.randrange(9)
    at = rng.randrange(len(lines)) if lines else 0
    if which == 0 and lines:  # drop a line
        del lines[at]
    elif which == 1 and lines:  # double a line (a duplicate key or table)
        lines.insert(at, lines[at])
    elif which == 2 and lines:  # a value made hostile
        key, sep, _ = lines[at].partition("=")
        if sep:
            lines[at] = f"{key}= {rng.choice(HOSTILE_VALUES)}"
    elif which == 3:  # an unknown or broken key
        key = rng.choice(["nope", "se\\ned", '"a.b"', "a" * 300, "[x]", "players.count"])
        lines.insert(at, f"{key} = {rng.choice(HOSTILE_VALUES)}")
    elif which == 4 and lines:  # a line cut short
        lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
    elif which == 5:  # a table header out of nowhere
        lines.insert(at, rng.choice(["[run]", "[map]", "[map.kind]", "[[players]]", "[cluster]"]))
    elif which == 6 and len(lines) > 1:  # two lines swapped
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    elif which == 7 and lines:  # a control character or a line break inside a line
        cut = rng.randrange(len(lines[at]) + 1)
        lines[at] = (
            lines[at][:cut] + rng.choice(["\x00", "\r", "\x1b", "\u2028", "\n"]) + lines[at][cut:]
        )
    else:  # a valid but extreme value for a field of the schema
        chosen = rng.choice(FIELDS)
        table, _, name = chosen.key.rpartition(".")
        lines += [f"[{table}]", f"{name} = {rng.choice(HOSTILE_VALUES)}"]
    return lines


@st.composite
def text_cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(FAST_SCENARIOS))
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines = _short((ROOT / "scenarios" / name).read_text()).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        lines = _mutate(lines, rng)
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # raw bytes: not UTF-8 any more
        data = bytearray(data)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        data = bytes(data)
    path = (ROOT / "scenarios" / name).parent
    # file paths inside the scenario are relative to the working directory
    argv = ["run", "{dir}/s.toml", "--json"]
    return Case("text", argv, {"s.toml": data}, label=str(path.relative_to(ROOT)))


def _box_map() -> bytes:
    from tests.bsp_builder import box_map_bsp

    return box_map_bsp()


@st.composite
def bsp_cases(draw: st.DrawFn) -> Case:
    data = bytearray(_box_map())
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 4))):
        which = rng.randrange(4)
        word = 4 * rng.randrange(max(1, len(data) // 4))  # a 4-byte-aligned offset
        if which == 0:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif which == 1 and word + 4 <= len(data):  # an int32 (count, offset, index) made wild
            value = rng.choice([-1, -(2**31), 2**31 - 1, 10**9, 65535, len(data)])
            struct.pack_into("<i", data, word, value)
        elif which == 2:  # cut short
            del data[rng.randrange(len(data)) :]
            data = data or bytearray(b"\x00")
        elif len(data) >= 4 * 31:  # a header entry (version, lump offset or length)
            value = rng.choice([0, -1, 2**31 - 1, 29, 30])
            struct.pack_into("<i", data, 4 * rng.randrange(31), value)
    raw = bytes(data)
    name = "m.bsp"
    if draw(st.booleans()):
        name = "m.bsp.gz"
        raw = gzip.compress(raw)
        if draw(st.booleans()):  # a broken gzip stream
            raw = raw[: rng.randrange(len(raw))]
    argv = ["run", "--set", "map.kind=bsp", "--set", f"map.file={{dir}}/{name}"]
    argv += [
        arg
        for item in ("players.count=8", "run.duration_s=0.1", "run.warmup_s=0.05")
        for arg in ("--set", item)
    ]
    return Case("bsp", argv, {name: raw})


def _small_base() -> bytes:
    raw = json.loads(json.dumps(BASE))
    raw["run"] = dict(SHORT_RUN)
    return to_toml(raw).encode()


@st.composite
def sweep_cases(draw: st.DrawFn) -> Case:
    lines = ['base = "base.toml"']
    seeds = draw(
        st.one_of(
            st.integers(1, 2),
            st.sampled_from(["0", "-1", "9223372036854775808", "1.5", '"two"', "[]"]),
        )
    )
    lines.append(f"seeds = {seeds}")
    tables: dict[str, list[str]] = {}
    for table in draw(st.lists(st.sampled_from(["set", "grid", "zip"]), max_size=2, unique=True)):
        entries = []
        for chosen in draw(
            st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique_by=lambda f: f.key)
        ):
            valid, invalid = values(chosen)
            pick = st.one_of(valid, invalid) if draw(st.booleans()) else valid
            if table == "set":
                value = toml_value(draw(pick))
            else:
                value = toml_value(draw(st.lists(pick, min_size=0, max_size=2)))
            entries.append(f'"{chosen.key}" = {value}')
        tables[table] = entries
    capacity = draw(st.booleans())
    if capacity:
        start = draw(st.sampled_from(["8", "32", "0", "-4", "1e9", '"x"']))
        most = draw(st.sampled_from(["16", "64", "8", "0", "nan"]))
        tables["capacity"] = [f"start = {start}", f"max = {most}"]
    for table, entries in tables.items():
        lines += [f"[{table}]", *entries]
    files = {"w.toml": ("\n".join(lines) + "\n").encode(), "base.toml": _small_base()}
    if capacity:
        argv = ["capacity", "--sweep", "{dir}/w.toml", "--out", "{dir}/out"]
    else:
        argv = ["sweep", "{dir}/w.toml", "--out", "{dir}/out", "--workers", "1"]
    return Case("sweep", argv, files)


FLAG_VALUES = [
    "-1",
    "0",
    "nan",
    "inf",
    "1e309",
    "",
    "x",
    "{dir}/missing.toml",
    "{dir}",
    "\n",
    "9" * 40,
]

COMMAND_FLAGS = {
    "run": ["--set", "--trace"],
    "map": ["--set", "--out", "--export", "--graph", "--time", "--frames", "--step"],
    "capacity": [
        "--start",
        "--step",
        "--max",
        "--min-reply-ratio",
        "--max-response-ms",
        "--quantile",
        "--search",
        "--sweep",
        "--workers",
    ],
    "compare": ["--strategies", "--cpus", "--clients", "--seeds", "--duration-s", "--workers"],
    "sweep": ["--workers", "--backend", "--out", "--scheduler"],
    "pingpong": ["--out"],
    "validate": ["--seeds", "--only", "--workers"],
}


@st.composite
def argv_cases(draw: st.DrawFn) -> Case:
    command = draw(st.sampled_from(sorted(COMMAND_FLAGS)))
    flag = draw(st.sampled_from(COMMAND_FLAGS[command]))
    value = draw(st.sampled_from(FLAG_VALUES))
    argv = [command]
    if command in ("run", "map", "capacity", "compare"):
        argv.append("{dir}/base.toml")
    if command == "sweep":
        argv.append("{dir}/missing-sweep.toml")
    argv += [flag, value]
    if command in ("run", "capacity", "compare"):
        argv += ["--set", "run.duration_s=0.1", "--set", "run.warmup_s=0.05"]
    return Case("argv", argv, {"base.toml": _small_base()})


def _api_calls() -> list[tuple[str, Callable[..., Any]]]:
    from simsrv import KeepWindow, Scenario, load_scenario, run

    def changed(section: str, name: str, value: Any) -> Any:
        scenario = load_scenario(None, [f"run.{k}={v}" for k, v in SHORT_RUN.items()])
        update = getattr(scenario, section).model_copy(update={name: value})
        return run(scenario.model_copy(update={section: update}))

    return [
        ("run", run),
        ("load_scenario", load_scenario),
        ("Scenario", lambda value: Scenario(run=value)),
        ("Scenario.model_validate", Scenario.model_validate),
        ("KeepWindow", lambda value: KeepWindow(frames=value)),
        ("KeepWindow.start", lambda value: KeepWindow(start_s=value)),
        ("changed", changed),
    ]


API_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["run", "map", "players", "x"]), st.integers(), max_size=3),
)


@st.composite
def api_cases(draw: st.DrawFn) -> Case:
    calls = _api_calls()
    name, function = draw(st.sampled_from(calls))
    if name == "changed":
        chosen = draw(
            st.sampled_from(
                [f for f in FIELDS if not f.context and "." in f.key and f.key.count(".") == 1]
            )
        )
        section, attribute = chosen.key.split(".")
        valid, invalid = values(chosen)
        value = draw(st.one_of(valid, invalid, API_VALUES))
        return Case(
            "api", call=lambda: function(section, attribute, value), label=f"{chosen.key}={value!r}"
        )
    value = draw(API_VALUES)
    return Case("api", call=lambda: function(value), label=f"{name}({value!r})")


FAMILIES: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "scenario": scenario_cases,
    "text": text_cases,
    "bsp": bsp_cases,
    "sweep": sweep_cases,
    "argv": argv_cases,
    "api": api_cases,
}

WEIGHTS = {"scenario": 30, "text": 25, "bsp": 15, "sweep": 5, "argv": 10, "api": 15}
"""Share of each family in a campaign, percent."""


def cases(families: list[str] | None = None) -> st.SearchStrategy[Case]:
    """Cases of ``families`` (default all), in the proportions of :data:`WEIGHTS`."""
    names = families or list(FAMILIES)
    weighted = [name for name in names for _ in range(WEIGHTS[name])]
    return st.sampled_from(weighted).flatmap(lambda name: FAMILIES[name]())
