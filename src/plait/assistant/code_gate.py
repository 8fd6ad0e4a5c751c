"""The run-time code gate: the assistant never runs a flow with unsafe inline code (spec B59-B60).

Before `run_flow` hands the working flow to the runner, every piece of Python it would run is
scanned with the sandbox's AST scan (`plait.sandbox.scan.scan`): the `code` of `code` nodes and
the source of the user components that `component` nodes name, in loop and map bodies too. The
gate is deterministic, whatever model wrote the code, and the flow is never run when it refuses.

Built-in component templates are exempt: a source identical to a template after whitespace
normalisation (`same_code`) is trusted code that may use what the scan refuses in user code (an
optional proxy setting read from the environment). One changed character brings the scan back.
When the templates cannot be read, the map is empty and every node is scanned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from plait.assistant.catalog import ComponentCatalog
from plait.sandbox.components import builtin_templates
from plait.sandbox.scan import same_code, scan

log = logging.getLogger("plait.assistant")

TemplateSource = Callable[[], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class UnsafeCode:
    node_id: str
    findings: tuple[str, ...]

    def message(self) -> str:
        return f"Refused to run: unsafe code in node {self.node_id}: {'; '.join(self.findings)}"


def _nodes(graph: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    for node in graph.get("nodes") or ():
        if not isinstance(node, Mapping):
            continue
        node_id = prefix + str(node.get("id", "?"))
        yield node_id, node
        config = node.get("config")
        if isinstance(config, Mapping):
            for field, value in config.items():
                if isinstance(value, Mapping) and isinstance(value.get("nodes"), list):
                    yield from _nodes(value, f"{node_id}.{field}/")


def safe_templates(source: TemplateSource) -> Mapping[str, str]:
    """The built-in templates, or {} (scan everything) when they cannot be read."""
    try:
        return dict(source())
    except Exception:  # noqa: BLE001 - a broken registry must never exempt anything
        log.warning("assistant.run_flow.templates_unavailable: every node is scanned")
        return {}


def is_builtin(code: str, templates: Mapping[str, str], class_name: str | None = None) -> bool:
    candidates = (
        [templates[class_name]] if class_name and class_name in templates else list(templates.values())
    )
    return any(same_code(code, template) for template in candidates)


def unsafe_code(
    flow: Mapping[str, Any],
    catalog: ComponentCatalog,
    templates: TemplateSource = builtin_templates,
) -> UnsafeCode | None:
    """The first node whose code the scan refuses, or None when the flow may run."""
    known = safe_templates(templates)
    for node_id, node in _nodes(flow):
        config = node.get("config") if isinstance(node.get("config"), Mapping) else {}
        assert isinstance(config, Mapping)
        code: str | None = None
        class_name: str | None = None
        if node.get("type") == "code" and isinstance(config.get("code"), str):
            code = config["code"]
        elif node.get("type") == "component" and isinstance(config.get("component"), str):
            class_name = config["component"]
            info = catalog.user_component(class_name)
            code = info.source if info is not None else None
        if not code or is_builtin(code, known, class_name):
            continue
        findings = scan(code)
        if findings:
            log.warning(
                "assistant.run_flow.blocked_unsafe_code node_id=%s findings=%d", node_id, len(findings)
            )
            return UnsafeCode(node_id, tuple(str(f) for f in findings[:5]))
    return None


__all__ = ["UnsafeCode", "is_builtin", "safe_templates", "unsafe_code"]
