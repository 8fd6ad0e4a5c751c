"""The error hierarchy of the lower layers (spec, expr, net, llm, sandbox, sdk, tools): every error
class they define is a `PlaitError` with its own stable `code`, and a foreign error translated at
the boundary keeps its cause (`raise ... from exc`), so logs show what really went wrong."""

from __future__ import annotations

import importlib
import json
import pkgutil
import types

import pytest
from pydantic import ValidationError

from plait.errors import PlaitError
from plait.expr import TemplateError, compile_template
from plait.llm.base import ProviderError
from plait.net.guard import Allowlist, BlockedURLError, InvalidAllowlistError, check_url
from plait.spec.loader import parse_document, read_document_data
from plait.spec.problems import FlowValidationError
from plait.tools.base import ToolError

LAYERS = ("spec", "expr", "net", "llm", "sandbox", "sdk", "tools")
# Run by path in the sandbox, not imported as part of plait.
NOT_IMPORTED = {"plait.sandbox.child"}


def _modules() -> list[types.ModuleType]:
    modules = []
    for layer in LAYERS:
        package = importlib.import_module(f"plait.{layer}")
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"plait.{layer}."):
            if info.name not in NOT_IMPORTED:
                modules.append(importlib.import_module(info.name))
    return modules


def _error_classes() -> list[type[BaseException]]:
    """Every public exception class defined in the lower layers."""
    found = {
        value
        for module in _modules()
        for name, value in vars(module).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
    }
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


ERRORS = _error_classes()


def test_the_layers_define_errors() -> None:
    names = {cls.__name__ for cls in ERRORS}
    assert {"FlowValidationError", "TemplateError", "BlockedURLError", "ProviderError", "ToolError"} <= names


@pytest.mark.parametrize("cls", ERRORS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_error_is_a_plait_error_with_its_own_code(cls: type[BaseException]) -> None:
    assert issubclass(cls, PlaitError)
    assert "code" in vars(cls), f"{cls.__name__} has no code of its own"
    assert cls.code and cls.code != PlaitError.code


def test_codes_are_unique() -> None:
    codes = [cls.code for cls in ERRORS if issubclass(cls, PlaitError)]
    assert len(codes) == len(set(codes))


def test_errors_stay_catchable_as_value_errors() -> None:
    for cls in (FlowValidationError, TemplateError, BlockedURLError, InvalidAllowlistError):
        assert issubclass(cls, ValueError)


def test_tool_error_shows_its_hint_and_other_errors_do_not() -> None:
    tool = ToolError("no answer", hint="retry later")
    assert str(tool) == "no answer (fix: retry later)" == tool.with_hint()
    assert tool.to_dict() == {"code": "tool_error", "message": "no answer", "hint": "retry later"}
    provider = ProviderError("boom", provider="openai", model="m")
    assert str(provider) == "boom"
    assert (provider.message, provider.hint, provider.provider) == ("boom", None, "openai")


# --------------------------------------------------------------------------- causes kept


def test_a_syntax_error_keeps_the_parser_error() -> None:
    with pytest.raises(FlowValidationError) as info:
        read_document_data('{"schema": "plait/flow@1",')
    assert isinstance(info.value.__cause__, json.JSONDecodeError)
    assert str(info.value).startswith("flow is invalid (1 problem)")


def test_a_shape_error_keeps_the_pydantic_error() -> None:
    with pytest.raises(FlowValidationError) as info:
        parse_document({"schema": "plait/flow@1", "nodes": "not a list"})
    assert isinstance(info.value.__cause__, ValidationError)


def test_a_template_error_keeps_the_expression_error() -> None:
    template = compile_template("{{ 1 / 0 }}")
    with pytest.raises(TemplateError) as info:
        template.render(lambda root: {})
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert str(info.value) == "template error: ZeroDivisionError: division by zero"


def test_an_invalid_url_keeps_the_parse_error() -> None:
    with pytest.raises(BlockedURLError) as info:
        check_url("http://[::1", allow=[])
    assert info.value.reason == "invalid"
    assert info.value.__cause__ is not None


def test_a_bad_allowlist_entry_keeps_the_parse_error() -> None:
    with pytest.raises(InvalidAllowlistError) as info:
        Allowlist(["exa mple.com:99999"])
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.code == "invalid_allowlist"
