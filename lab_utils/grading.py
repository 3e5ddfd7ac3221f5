"""Helpers the notebooks' test cells use."""

from __future__ import annotations

import inspect


def _from_lab_utils(obj) -> bool:
    module = inspect.getmodule(obj)
    return module is not None and module.__name__.split(".")[0] == "lab_utils"


def assert_own_implementation(func) -> None:
    """Fail unless `func` was written in the notebook rather than taken from lab_utils.

    Catches an import (`from lab_utils.memory import search as my_search`) and a thin
    wrapper that calls the reference of the same name (`lab_utils.rules.redact(...)`).
    Using other lab_utils helpers (tokenize, paths, ...) inside your own code is fine.
    """
    name = func.__name__
    if func.__module__ != "__main__":
        raise AssertionError(
            f"{name} comes from {func.__module__}, not from this notebook: write it in the "
            "answer cell rather than importing the reference version.")
    used = set(func.__code__.co_names)
    references = [r for r in map(func.__globals__.get, used) if r is not None and _from_lab_utils(r)]
    aliased = any(getattr(r, "__name__", None) == name for r in references)  # ref = lab_utils.x.name
    dotted = name in used and bool(references)  # lab_utils.x.name(...)
    if aliased or dotted:
        raise AssertionError(f"{name} calls the lab_utils reference {name}; implement it yourself.")
