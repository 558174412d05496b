"""mkdocs hooks (``hooks:`` in mkdocs.yml): how the notebooks are executed at build time.

mkdocs-jupyter runs every notebook in a kernel started from this process, so the kernel sees
the environment set here:

- ``SIMSRV_NOTEBOOK_SMALL=1`` (unless already set): the reduced sizes CI uses, so the five
  notebooks execute in about a minute (2 cores); ``SIMSRV_NOTEBOOK_SMALL=0 mkdocs build``
  renders the full sizes (much longer).
- ``MPLBACKEND`` is removed, so the kernel uses the inline backend and the figures appear in
  the pages (an inherited ``MPLBACKEND=Agg`` would draw them nowhere).
- ``SIMSRV_DOCS_EXECUTE=0`` renders the notebooks without executing them (no outputs), for a
  quick ``mkdocs serve`` or the fast build check of the default test suite.
"""

from __future__ import annotations

import os


def on_config(config):
    if os.environ.get("SIMSRV_DOCS_EXECUTE") == "0":
        config.plugins["mkdocs-jupyter"].config["execute"] = False
    else:
        os.environ.setdefault("SIMSRV_NOTEBOOK_SMALL", "1")
        os.environ.pop("MPLBACKEND", None)
    return config
