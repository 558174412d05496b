"""The Dask backend of ``simsrv sweep``: runs on a ``dask.distributed`` cluster.

Needs the optional extra (``pip install -e '.[dask]'``) and a running scheduler
(``dask scheduler`` and ``dask worker tcp://HOST:8786`` on each machine; workers need simsrv
installed and, for map files, the same paths).  Each run is one task, submitted with its
validated scenario, so workers read no scenario files.  A worker that dies mid-run loses
nothing: the scheduler runs its tasks again elsewhere (up to ``distributed.scheduler.
allowed-failures`` times, default 3); a task that keeps killing workers becomes a failed row.
Rows come back to this process, which stores each as it arrives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from simsrv.core.errors import InputError

T = TypeVar("T")
R = TypeVar("R")


def run_dask(
    items: Sequence[T],
    function: Callable[[T], R],
    scheduler: str | None,
    on_done: Callable[[int, R], None],
    on_failure: Callable[[int, BaseException], R],
) -> None:
    """Call ``function(item)`` for every item on the cluster at ``scheduler``; ``on_done(index,
    result)`` here as each finishes (a task that failed: ``on_done(index, on_failure(...))``).
    A ``KeyboardInterrupt`` cancels the tasks not finished and propagates."""
    if not scheduler:
        raise InputError("--scheduler: required with --backend dask, e.g. tcp://127.0.0.1:8786")
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise InputError(
            "--backend: dask needs the optional extra: pip install -e '.[dask]'"
        ) from None
    try:
        client = Client(scheduler, timeout=10)
    except OSError as error:
        raise InputError(f"--scheduler: cannot reach {scheduler}: {error}") from None
    with client:
        futures = [client.submit(function, item, pure=False) for item in items]
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                i = index[future.key]
                try:
                    result = future.result()
                except Exception as error:
                    result = on_failure(i, error)
                on_done(i, result)
        except KeyboardInterrupt:
            client.cancel(futures)
            raise
