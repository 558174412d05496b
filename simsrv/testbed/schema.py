"""The testbed's files, validated: campaign rows, stored conditions and capacity searches.

Every condition the testbed reads, from a campaign file (``simsrv testbed --campaign FILE``)
or from a stored campaign (a run's ``summary.json`` and ``manifest.json``, the gathered
``runs.parquet``, ``capacity.json``), goes through :class:`ConditionFields`: the fields of
:class:`~simsrv.testbed.run.TestbedConfig`, typed and bounded as a scenario's are
(:class:`~simsrv.core.strict_model.StrictModel`: a boolean, a numeric string or a float
where a whole number is wanted is refused), then held to the config's own rules
(:meth:`~simsrv.testbed.run.TestbedConfig.static_check`: maps by name, the phase pattern, a
quota's bounds, QuakeTM's fields).  A stored condition (:class:`StoredCondition`) must name
every field a campaign has always stored: none is taken from a default.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from simsrv.core.errors import InputError, shown
from simsrv.core.strict_model import StrictModel, first_error_line
from simsrv.scenario.schema import MAX_PERIOD_US, MAX_QUOTA_US, MIN_QUOTA_US
from simsrv.testbed.clients import PhasePattern
from simsrv.testbed.quaketm import MAX_THREADS as QUAKETM_MAX_THREADS
from simsrv.testbed.run import (
    CLIENT_IMPLS,
    MAX_CLIENTS,
    MAX_CPUS,
    MAX_DURATION_S,
    MAX_PORT,
    MAX_RATE_HZ,
    MAX_SEED,
    MAX_WARMUP_S,
    MIN_PORT,
    MIN_RATE_HZ,
    OMP_WAIT_POLICIES,
    SERVERS,
    TestbedConfig,
)

ROLES = ("calibration", "prediction")
"""A condition's part in the validation: the fit's target, or a prediction."""
MAX_CAMPAIGN_RUNS = 10_000
"""The most ``[[run]]`` tables a campaign file holds."""
MAX_QUESTION_CHARS = 200

_DEFAULT = TestbedConfig()

ServerName = Literal[SERVERS]  # type: ignore[valid-type]
ClientsImpl = Literal[CLIENT_IMPLS]  # type: ignore[valid-type]
OmpWait = Literal[OMP_WAIT_POLICIES]  # type: ignore[valid-type]

CORE_FIELDS = (
    "clients", "map", "rate_hz", "phases", "duration_s", "warmup_s", "seed", "quota_us",
    "period_us", "port", "server_cpu", "client_cpu",
)  # fmt: skip
"""The fields every stored condition names (campaigns have stored them from the first);
``clients_impl``, when absent, is the compiled load generator's (``c``: a run of the Python
clients has ``-python`` in its label, which its row's label is checked against)."""
QUAKETM_FIELDS = ("server", "threads", "frame_s", "omp_wait", "bind")
"""The fields QuakeTM brought: a campaign stored before it has none of them (mvdsv's
values), a later one all."""


class ConditionFields(StrictModel):
    """One condition of the real server (:class:`~simsrv.testbed.run.TestbedConfig`'s fields
    and bounds).  ``server_cpu = "all"`` (or none) lets the server use every CPU."""

    clients: int = Field(_DEFAULT.clients, ge=1, le=MAX_CLIENTS)
    map: str = Field(_DEFAULT.map, min_length=1, max_length=64)
    rate_hz: float = Field(_DEFAULT.rate_hz, ge=MIN_RATE_HZ, le=MAX_RATE_HZ)
    phases: str = Field(_DEFAULT.phases, min_length=1, max_length=64)
    duration_s: float = Field(_DEFAULT.duration_s, gt=0, le=MAX_DURATION_S)
    warmup_s: float = Field(_DEFAULT.warmup_s, ge=0, le=MAX_WARMUP_S)
    seed: int = Field(_DEFAULT.seed, ge=0, le=MAX_SEED)
    quota_us: int | None = Field(None, ge=MIN_QUOTA_US, le=MAX_QUOTA_US)
    period_us: int = Field(_DEFAULT.period_us, ge=MIN_QUOTA_US, le=MAX_PERIOD_US)
    port: int = Field(_DEFAULT.port, ge=MIN_PORT, le=MAX_PORT)
    server_cpu: int | Literal["all"] | None = Field(_DEFAULT.server_cpu)
    client_cpu: int = Field(_DEFAULT.client_cpu, ge=0, lt=MAX_CPUS)
    clients_impl: ClientsImpl = _DEFAULT.clients_impl
    server: ServerName = _DEFAULT.server
    threads: int = Field(_DEFAULT.threads, ge=1, le=QUAKETM_MAX_THREADS)
    frame_s: float = Field(_DEFAULT.frame_s, ge=0.005, le=1.0)
    omp_wait: OmpWait = _DEFAULT.omp_wait
    bind: bool = _DEFAULT.bind

    @field_validator("phases")
    @classmethod
    def _phase_pattern(cls, value: str) -> str:
        """The pattern as its label writes it (``hosts:4``, not ``hosts:04``)."""
        try:
            return PhasePattern.parse(value).label()
        except InputError as error:
            raise ValueError(str(error).removeprefix("testbed --phases ")) from None

    @field_validator("server_cpu")
    @classmethod
    def _cpu_number(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 0 <= value < MAX_CPUS:
            raise ValueError(f'must be a CPU number in [0, {MAX_CPUS - 1}] or "all"')
        return value

    @model_validator(mode="after")
    def _config_rules(self) -> ConditionFields:
        try:
            self.config().static_check()
        except InputError as error:  # "testbed --rate-hz must be ...": "rate_hz: must be ..."
            flag = re.match(r"testbed --([a-z-]+):? (.*)", str(error))
            if flag is None:
                raise ValueError(str(error)) from None
            raise ValueError(f"{flag.group(1).replace('-', '_')}: {flag.group(2)}") from None
        return self

    def config(self) -> TestbedConfig:
        """The :class:`TestbedConfig` these fields describe."""
        values = {name: getattr(self, name) for name in ConditionFields.model_fields}
        if values["server_cpu"] == "all":
            values["server_cpu"] = None
        return TestbedConfig(**values)


class CampaignRow(ConditionFields):
    """A ``[[run]]`` table of a campaign file: a condition, its role and its question."""

    role: Literal[ROLES] = "prediction"  # type: ignore[valid-type]
    question: str = Field("", max_length=MAX_QUESTION_CHARS)


class CampaignFile(StrictModel):
    """A campaign file: one ``[[run]]`` table per condition (each a :class:`CampaignRow`)."""

    run: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_CAMPAIGN_RUNS)


class StoredCondition(ConditionFields):
    """A condition read back from a store: every field of :data:`CORE_FIELDS` named (none
    taken from a default), :data:`QUAKETM_FIELDS` all or none."""

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in CORE_FIELDS:
                if name not in data:
                    raise ValueError(f"{name}: required field is missing")
            present = [name for name in QUAKETM_FIELDS if name in data]
            if present and len(present) != len(QUAKETM_FIELDS):
                absent = next(name for name in QUAKETM_FIELDS if name not in data)
                raise ValueError(
                    f"{absent}: required field is missing (a condition with "
                    f"{present[0]} names all of {', '.join(QUAKETM_FIELDS)})"
                )
        return data


def condition_of_fields(data: Any, where: str, model: type[ConditionFields]) -> TestbedConfig:
    """The :class:`TestbedConfig` of ``data`` validated as ``model``, or one
    :class:`InputError` line starting with ``where``."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: must be a table of fields, got {shown(data)}")
    try:
        return model.model_validate(data).config()
    except ValidationError as error:
        raise InputError(f"{where}.{first_error_line(error, model, '').lstrip('.')}") from None


class CapacityEntry(StrictModel):
    """One capacity search a campaign stored (``capacity.json``)."""

    name: str = Field(min_length=1, max_length=200)
    seed: int = Field(1, ge=0, le=MAX_SEED)
    capacity_clients: int = Field(ge=0, le=MAX_CLIENTS)
    min_reply_ratio: float = Field(gt=0, le=1)
    base: StoredCondition
    clients_grid: list[int] = Field(default_factory=list, max_length=MAX_CLIENTS)
    clients_tried: list[int] = Field(default_factory=list, max_length=MAX_CLIENTS)

    @field_validator("clients_grid", "clients_tried")
    @classmethod
    def _counts(cls, value: list[int]) -> list[int]:
        if any(not 1 <= n <= MAX_CLIENTS for n in value):
            raise ValueError(f"client counts must be in [1, {MAX_CLIENTS}]")
        if any(b <= a for a, b in zip(value, value[1:], strict=False)):
            raise ValueError("client counts must increase")
        return value

    @model_validator(mode="after")
    def _a_grid(self) -> CapacityEntry:
        if not (self.clients_grid or self.clients_tried):
            raise ValueError("clients_grid: required field is missing (the clients searched)")
        return self


class CapacityFile(StrictModel):
    """A campaign's ``capacity.json``: its searches (an earlier campaign stored one search
    as the file itself: read as ``searches = [it]``, named ``capacity``)."""

    searches: list[CapacityEntry] = Field(min_length=1, max_length=1000)

    @model_validator(mode="before")
    @classmethod
    def _one_search(cls, data: Any) -> Any:
        if isinstance(data, dict) and "searches" not in data and "capacity_clients" in data:
            return {"searches": [{"name": "capacity", **data}]}
        return data
