"""Foundations that know no model: user-facing errors, name registries, TOML files, the
strict pydantic base model, numba's compilation and cache loading, lazy package
attributes, ragged rows, and the defaults the command line's help shows.

Nothing here imports another part of simsrv.
"""
