"""Loading simsrv's compiled functions from numba's on-disk cache at a lower one-off cost.

A fresh process pays numba, for its first cached function, to *refresh its target context*
(~0.13 s CPU: importing ~60 of numba's modules and registering every typing and lowering
template); for every cached function, to *parse the LLVM bitcode of its linkable module* and
list that module's symbols (~3 ms each; 9-17 functions per run); and, to rebuild the
*environments* of the numba functions that implement numpy, to import their modules
(``numba.np.arrayobj``, ``numba.np.arraymath``, which imports ``scipy.linalg``: ~0.16 s
CPU when nothing imported scipy before).  None of it is needed to run machine code that is
already compiled:

* the templates serve the compiler; a compilation (a cache miss, or any new function)
  refreshes the context itself first (``numba.core.compiler.compile_extra``);
* the linkable module serves a *later* compilation that calls the function (numba links its
  code into the caller's); the machine code itself comes from the cached object file;
* nopython code reads only the constants of an environment, never its module's globals
  (object mode does; numba's own implementations have none).

:class:`FastLoadingCache` is numba's per-function cache with all three avoided: a load
initialises only numba's runtime (its allocation and reference-counting functions, which the
cached code calls), rebuilds the environments of numba's not yet imported modules with their
constants and a stand-in for their globals (:func:`_environment`), and builds a
:class:`LazyLinkingLibrary`, whose linkable module is parsed the first time a compilation
asks for it (or a symbol other than the function's own entry point is looked up).  The
machine code is numba's own, loaded the same way, so the results are identical.  A payload of
another layout than the one this was written against (numba 0.68) is loaded by numba's own
path.  The first load also freezes the objects alive then (:func:`_freeze_once`).

:func:`install` swaps a dispatcher's cache for this one; ``simsrv.core.compiled`` does it for every
simsrv function.  Measured (CPU time, ``cube-160``, 2 CPUs, medians of 5 fresh processes):
the first ``simulate`` of a process paid ~0.19-0.24 s more than a warm one before, ~0.04-0.06 s
after (``bsp-group`` 27.8x -> 56x real time; ``sequential`` 40x -> 90x).
"""

from __future__ import annotations

import gc
import io
import pickle
import sys
from typing import Any

from numba.core import caching, codegen, compiler, environment, event
from numba.core.runtime import rtsys

from simsrv.core.compile_lock import LOCKS
from simsrv.core.source_stamp import SOURCE_STAMP
from simsrv.core.symbol_ids import CACHE_KEY_SALT
from simsrv.core.uninitialised import POISON

_OBJECT = "object"
"""numba's kind of a library cached as an object file plus the bitcode to link it."""


class LazyLinkingLibrary(codegen.JITCodeLibrary):
    """A JIT library rebuilt from a cached object file whose linkable module (LLVM bitcode)
    is parsed only when needed: to link it into a new compilation, or to look up a symbol
    other than the entry point it was loaded for."""

    _pending_bitcode: bytes | None = None
    _entry_point_name: str | None = None

    def _parse_linkable_module(self) -> None:
        if self._pending_bitcode is None:
            return
        import llvmlite.binding as ll

        self._shared_module = ll.parse_bitcode(self._pending_bitcode)
        self._pending_bitcode = None
        self._codegen._engine._load_defined_symbols(self._shared_module)

    def _get_module_for_linking(self) -> Any:
        self._parse_linkable_module()
        return super()._get_module_for_linking()

    def get_pointer_to_function(self, name: str) -> int:
        if name == self._entry_point_name:
            # Defined by the cached object file, which the engine loaded on finalising.
            self._ensure_finalized()
            return self._codegen._engine.get_function_address(name)
        self._parse_linkable_module()
        return super().get_pointer_to_function(name)

    def serialize_using_object_code(self) -> tuple[str, str, Any]:
        self._parse_linkable_module()
        return super().serialize_using_object_code()


def _library(target_context: Any, libdata: Any, entry_point_name: str) -> Any:
    """The cached library ``libdata`` (numba's ``(name, kind, data)``), its linkable module
    left unparsed when it is an object file."""
    name, kind, data = libdata
    codegen_ = target_context.codegen()
    if (
        kind != _OBJECT
        or not isinstance(codegen_, codegen.JITCPUCodegen)
        or not (isinstance(data, tuple) and len(data) == 2)
    ):
        return codegen_.unserialize_library(libdata)
    object_code, linkable_bitcode = data
    library = LazyLinkingLibrary(codegen_, name)
    library._pending_bitcode = linkable_bitcode
    library._entry_point_name = entry_point_name
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._finalize_final_module()
    return library


def _rebuild(target_context: Any, payload: tuple[Any, ...]) -> compiler.CompileResult:
    """numba's ``CompileResult._rebuild`` with the library from :func:`_library`."""
    (libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init,
     referenced_envs) = payload  # fmt: skip
    for function in reload_init or ():
        function()
    library = _library(target_context, libdata, fndesc.llvm_cpython_wrapper_name)
    cfunc = target_context.get_executable(library, fndesc, env)
    result = compiler.CompileResult(
        target_context=target_context,
        typing_context=target_context.typing_context,
        library=library,
        environment=env,
        entry_point=cfunc,
        fndesc=fndesc,
        type_annotation=typeann,
        signature=signature,
        objectmode=objectmode,
        lifted=lifted,
        typing_error=None,
        call_helper=None,
        metadata=None,
        reload_init=reload_init,
        referenced_envs=referenced_envs,
    )
    for referenced in referenced_envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return result


class FastLoadingCache(caching.FunctionCache):
    """numba's cache of a function's compiled overloads, loading them without refreshing the
    target context and with their linkable modules parsed lazily (see the module's doc)."""

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        result = self._load_cached(sig, target_context)
        if result is not None or not self._enabled:
            return result
        # a miss: wait while another process compiles it (then load its code), or compile it
        # here holding the lock until it is saved (:mod:`simsrv.core.compile_lock`)
        lock = self._lock_path()
        if LOCKS.acquire(lock):
            result = self._load_cached(sig, target_context)
            if result is not None:
                LOCKS.release(lock)
        return result

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            super().save_overload(sig, data)
        finally:
            LOCKS.release(self._lock_path())

    def _index_key(self, sig: Any, codegen_: Any) -> Any:
        """numba's key of the overload, with :data:`~simsrv.core.symbol_ids.CACHE_KEY_SALT`
        (code cached before numba's function ids were unique across processes is not loaded:
        it may call another function's code, :mod:`simsrv.core.symbol_ids`) and the stamp of
        the compiled source (code cached before a change to a function it calls, in another
        file, is not loaded either: :mod:`simsrv.core.source_stamp`) and the poison byte (code
        compiled in poison mode fills what it allocates: :mod:`simsrv.core.uninitialised`)."""
        return (*super()._index_key(sig, codegen_), CACHE_KEY_SALT, SOURCE_STAMP, POISON)

    def _lock_path(self) -> str:
        return self._cache_file._index_path + ".lock"

    def _load_cached(self, sig: Any, target_context: Any) -> Any:
        if not self._enabled:
            return None
        with self._guard_against_spurious_io_errors():
            key = self._index_key(sig, target_context.codegen())
            payload = _load(self._cache_file, key)
        if payload is None:
            return None  # a miss: the dispatcher compiles (which refreshes the context)
        if not _known_payload(payload):  # a numba this was not written against
            return super().load_overload(sig, target_context)  # (numba's own loading)
        rtsys.initialize(target_context)  # numba's allocator, which the cached code calls
        result = _rebuild(target_context, payload)
        _freeze_once()
        return result


class _ReleaseOnFailure(event.Listener):
    """Releases a function's compile lock when its compile fails (the lock is otherwise
    released once the code is saved, which a failed compile never reaches)."""

    def on_start(self, ev: event.Event) -> None:
        pass

    def on_end(self, ev: event.Event) -> None:
        # numba 0.68's ``Event.is_failed`` answers the opposite: read the exception itself
        if getattr(ev, "_exc_details", None) is not None:
            cache = getattr(ev.data["dispatcher"], "_cache", None)
            if isinstance(cache, FastLoadingCache):
                LOCKS.release(cache._lock_path())


event.register("numba:compile", _ReleaseOnFailure())


def _load(cache_file: Any, key: Any) -> Any:
    """numba's ``IndexDataCacheFile.load(key)`` (the payload cached for ``key``, or None)
    unpickled by :class:`_Unpickler`."""
    if not (hasattr(cache_file, "_load_index") and hasattr(cache_file, "_data_path")):
        return cache_file.load(key)
    name = cache_file._load_index().get(key)
    if name is None:
        return None
    try:
        with open(cache_file._data_path(name), "rb") as file:
            data = file.read()
    except OSError:  # removed while the index still names it (as numba)
        return None
    return _Unpickler(io.BytesIO(data)).load()


class _Unpickler(pickle.Unpickler):
    """``pickle``'s unpickler with numba's environments rebuilt by :func:`_environment`."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "numba.core.environment" and name == "_rebuild_env":
            return _environment
        return super().find_class(module, name)


def _environment(module: str, consts: list, env_name: str) -> environment.Environment:
    """numba's ``_rebuild_env``, without importing one of numba's own modules.

    Every compiled function has an environment: its module's globals (read by object-mode
    code only) and its constants (read by nopython code to box values).  The functions numba
    links in to implement numpy (``numba.np.arrayobj``, ``numba.np.arraymath``, ...) carry
    theirs; rebuilding them imports those modules (~0.16 s in all, ``numba.np.arraymath``
    importing ``scipy.linalg`` to look for BLAS), which only a compilation needs.  Their
    compiled code, nopython, reads only the constants, which are restored; the globals are a
    stand-in holding the module's name (what numba needs to cache the environment again).
    """
    if module in sys.modules or not module.startswith("numba."):
        return environment._rebuild_env(module, consts, env_name)
    env = environment.lookup_environment(env_name)
    if env is None:
        env = environment.Environment({"__name__": module})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
    return env


_frozen = False


def _freeze_once() -> None:
    """Move the objects alive at the process's first load out of the garbage collector's reach
    (:func:`gc.freeze`), once.  They are the modules imported since ``simsrv.core.compiled`` froze
    numba's (pandas, pyarrow, pydantic, simsrv: ~40,000 objects, alive as long as the process)
    and the types and environments of the loaded code.  Otherwise the first full collection,
    which a fresh process reaches during its first run, traverses them all (~15-25 ms)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


def _known_payload(payload: Any) -> bool:
    """Whether ``payload`` has the layout of numba's ``CompileResult._reduce`` that
    :func:`_rebuild` reads: 9 fields, the first a ``(name, kind, data)`` library."""
    return (
        isinstance(payload, tuple)
        and len(payload) == 9
        and isinstance(payload[0], tuple)
        and len(payload[0]) == 3
        and hasattr(payload[1], "llvm_cpython_wrapper_name")
    )


TESTED_NUMBA = ("0.68.",)
"""numba releases whose internals this module was written and tested against
(``tests/test_compiled_loading.py``); with any other, :func:`install` leaves numba's own
loading in place (correct, ~0.15 s slower to start a process)."""


def _tested_numba() -> bool:
    import numba

    return numba.__version__.startswith(TESTED_NUMBA)


def install(dispatcher: Any) -> Any:
    """``dispatcher`` (a numba ``Dispatcher`` with ``cache=True``) loading its cached code
    through :class:`FastLoadingCache`; unchanged if its cache is not numba's function cache,
    or numba is not a release in :data:`TESTED_NUMBA`."""
    cache = getattr(dispatcher, "_cache", None)
    if type(cache) is caching.FunctionCache and _TESTED:
        cache.__class__ = FastLoadingCache
    return dispatcher


_TESTED = _tested_numba()
