"""`plait.__all__` and the package namespace agree (as httpx checks its own): every public name
the package exposes is listed, and everything listed exists."""

from __future__ import annotations

import types

import plait


def public_names(module: types.ModuleType) -> set[str]:
    """Names a user can reach as `plait.X`, without submodules and private names."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def test_all_lists_every_public_name() -> None:
    assert public_names(plait) == set(plait.__all__)


def test_all_names_exist_and_are_unique() -> None:
    assert len(plait.__all__) == len(set(plait.__all__))
    for name in plait.__all__:
        assert getattr(plait, name) is not None, name


def test_all_is_sorted() -> None:
    assert plait.__all__ == sorted(plait.__all__)
