"""The compact flow spec `build_flow` takes: a whole flow in a few lines a model writes reliably.

    name: Support triage
    description: Routes a message to billing or bugs

    inputs:
      query: string

    nodes:
      start: start
      route: switch
      billing: message
      bugs: message

    edges:
      start -> route
      route.billing -> billing
      route.bug -> bugs

    config:
      route.cases: [{"name": "billing", "when": [{"ref": "inputs.query", "op": "contains", "value": "charge"}]},
                    {"name": "bug", "when": [{"ref": "inputs.query", "op": "contains", "value": "crash"}]}]
      billing.text: |
        Billing team: we will look at "{{inputs.query}}".
      bugs.text: Engineering will look at it.

The shape of Langflow's spec (spec section 6.1) on plait's own types and ports (decision 9):

- before the first section only `name:` and `description:`; `#` starts a comment line;
- `inputs:` (optional) `field: type` lines, the run inputs (string, number, integer, boolean,
  object, array or any; a trailing `?` makes the field optional);
- `nodes:` `ID: type` lines, a plait node type or a user component's class name (which becomes a
  `component` node);
- `edges:` `A.port -> B.port` lines; a port left out is the node's default (`out`, or its only
  output port; `in`);
- `config:` `ID.field: value` lines (`ID.field.key:` sets inside an object field); the value is
  JSON where it parses (numbers, true/false/null, lists, objects, "quoted text"), else the text as
  written; `|` starts a multi-line text (the indented lines after it), and an empty value takes
  the indented lines after it as JSON or YAML.

`parse_flow_spec` returns a plait flow document, or raises `FlowSpecError` with every problem at
once: syntax problems name the line and what to write instead; then the orphan rule (decision 2:
with two or more nodes, every node needs an edge) and plait's own validator, whose problems name
the node and field.
"""

from __future__ import annotations

import difflib
import json
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from plait.assistant.catalog import ComponentCatalog
from plait.assistant.working_flow import validate_flow
from plait.errors import PlaitError
from plait.spec.models import DEFAULT_PORT_IN, DEFAULT_PORT_OUT, RESERVED_IDS, SCHEMA_ID

SECTIONS = ("inputs", "nodes", "edges", "config")
INPUT_TYPES = ("string", "number", "integer", "boolean", "object", "array", "any")
_SECTION = re.compile(r"^(inputs|nodes|edges|config)\s*:\s*$")
_HEADER = re.compile(r"^(name|description)\s*:\s*(.*)$")
_NODE = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*([A-Za-z_][\w:-]*)\s*$")
_INPUT = re.compile(r"^([A-Za-z_]\w*)\s*:\s*([a-z]+)(\?)?\s*$")
_ENDPOINT = re.compile(r"^([A-Za-z_][\w-]*)(?:\.([^\s.]+))?$")
_CONFIG = re.compile(r"^([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\s*:(?:\s+(.*)|\s*)$")
_WORDS = {"true": True, "false": False, "null": None, "none": None}


class FlowSpecError(PlaitError, ValueError):
    """A compact spec that does not give a valid flow; `problems` lists every problem (dicts with
    `message` and, where known, `line`, `node`, `field` and `hint`)."""

    code = "invalid_flow_spec"

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        self.problems = problems
        lines = "\n".join(f"- {format_problem(p)}" for p in problems)
        super().__init__(f"the flow spec has {len(problems)} problem{'s' * (len(problems) != 1)}:\n{lines}")


def format_problem(problem: Mapping[str, Any]) -> str:
    where = []
    if problem.get("line"):
        where.append(f"line {problem['line']}")
    if problem.get("node"):
        where.append(f"node {problem['node']!r}")
    if problem.get("field"):
        where.append(f"field {problem['field']!r}")
    text = f"{', '.join(where)}: {problem['message']}" if where else str(problem["message"])
    return f"{text} (fix: {problem['hint']})" if problem.get("hint") else text


@dataclass(slots=True)
class _Edge:
    line: int
    source: str
    source_port: str | None
    target: str
    target_port: str | None


def coerce_value(text: str) -> Any:
    """A one-line config value: JSON where it parses, true/false/null in any case, else the text
    (single quotes around it removed)."""
    text = text.strip()
    lowered = text.lower()
    if lowered in _WORDS:
        return _WORDS[lowered]
    try:
        return json.loads(text)
    except ValueError:
        pass
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    return text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block(lines: list[str], start: int, key_indent: int) -> tuple[list[str], int]:
    """The lines from `start` indented deeper than the key (blank lines inside kept, trailing
    ones dropped); returns them and the index of the first line after the block."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > key_indent):
        end += 1
    block = lines[start:end]
    while block and not block[-1].strip():
        block.pop()
    return block, end


def _set_path(config: dict[str, Any], path: list[str], value: Any) -> str | None:
    """Set config[path] (creating objects on the way); the problem, or None."""
    target = config
    for part in path[:-1]:
        current = target.get(part)
        if current is None:
            current = target[part] = {}
        if not isinstance(current, dict):
            return f"{'.'.join(path[:-1])} is already set to a non-object value"
        target = current
    target[path[-1]] = value
    return None


class _Parser:
    def __init__(self, text: str, catalog: ComponentCatalog) -> None:
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.catalog = catalog
        self.problems: list[dict[str, Any]] = []
        self.name = ""
        self.description = ""
        self.inputs: dict[str, tuple[str, bool]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}  # lower id -> node
        self.edges: list[_Edge] = []
        self.bad_ids: set[str] = set()  # nodes already reported (unknown type): not reported again
        self.node_lines: dict[str, int] = {}

    def problem(self, line: int | None, message: str, hint: str | None = None, **extra: Any) -> None:
        entry: dict[str, Any] = {"message": message}
        if line is not None:
            entry["line"] = line
        entry.update({k: v for k, v in extra.items() if v is not None})
        if hint:
            entry["hint"] = hint
        self.problems.append(entry)

    # ------------------------------------------------------------------------------- lines
    def parse(self) -> None:
        section: str | None = None
        i = 0
        while i < len(self.lines):
            raw = self.lines[i]
            line_no = i + 1
            stripped = raw.strip()
            i += 1
            if not stripped or stripped.startswith("#"):
                continue
            found = _SECTION.match(stripped)
            if found is not None:
                section = found.group(1)
                continue
            if section is None:
                header = _HEADER.match(stripped)
                if header is None:
                    self.problem(
                        line_no,
                        f"unrecognised line {stripped!r} before the first section",
                        "start with `name:` / `description:`, then the sections `nodes:`, `edges:` "
                        "and `config:` (and `inputs:` if the flow takes run inputs)",
                    )
                    continue
                key, value = header.group(1), header.group(2).strip()
                if key == "name":
                    self.name = value
                else:
                    self.description = value
                continue
            if section == "nodes":
                self.node_line(line_no, stripped)
            elif section == "edges":
                self.edge_line(line_no, stripped)
            elif section == "inputs":
                self.input_line(line_no, stripped)
            else:
                i = self.config_line(i - 1, raw)

    def node_line(self, line_no: int, text: str) -> None:
        found = _NODE.match(text)
        if found is None:
            self.problem(
                line_no,
                f"{text!r} is not a node line",
                "write `ID: type`, e.g. `summarize: llm` (ID: letters, digits, _ and -)",
            )
            return
        node_id, type_name = found.group(1), found.group(2)
        key = node_id.lower()
        if key in self.nodes:
            self.problem(
                line_no, f"node id {node_id!r} is used twice (ids are case-insensitive)", "rename one of them"
            )
            return
        if key in RESERVED_IDS:
            self.problem(
                line_no,
                f"{node_id!r} is a reserved reference root and cannot be a node id",
                f"pick another id (reserved: {', '.join(sorted(RESERVED_IDS))})",
            )
            return
        info = self.catalog.get(type_name)
        if info is None:
            close = difflib.get_close_matches(type_name, self._type_names(), n=3)
            hint = (
                f"did you mean {', '.join(close)}?"
                if close
                else "use a plait node type or one of your components (search_components lists them)"
            )
            self.problem(line_no, f"unknown type {type_name!r} for node {node_id!r}", hint, node=node_id)
            self.bad_ids.add(key)
            return
        node: dict[str, Any] = {"id": node_id, "type": info.node_type, "config": dict(info.config_defaults)}
        node["_line"] = line_no
        self.nodes[key] = node

    def _type_names(self) -> list[str]:
        return [info.name for info in self.catalog.search(None)]

    def edge_line(self, line_no: int, text: str) -> None:
        parts = [p.strip() for p in text.split("->")]
        if len(parts) != 2 or not all(parts):
            self.problem(
                line_no,
                f"{text!r} is not an edge",
                "write `A.port -> B.port`, or `A -> B` for the default ports",
            )
            return
        ends = [_ENDPOINT.match(p) for p in parts]
        if ends[0] is None or ends[1] is None:
            self.problem(
                line_no,
                f"{text!r} is not an edge",
                "each side is `ID` or `ID.port`, e.g. `route.billing -> billing`",
            )
            return
        self.edges.append(
            _Edge(line_no, ends[0].group(1), ends[0].group(2), ends[1].group(1), ends[1].group(2))
        )

    def input_line(self, line_no: int, text: str) -> None:
        found = _INPUT.match(text)
        if found is None or found.group(2) not in INPUT_TYPES:
            self.problem(
                line_no,
                f"{text!r} is not a run input",
                f"write `name: type` with type one of {', '.join(INPUT_TYPES)} (a trailing ? makes it optional)",
            )
            return
        self.inputs[found.group(1)] = (found.group(2), found.group(3) is None)

    def config_line(self, index: int, raw: str) -> int:
        """Parse the config line at `index` (and its block); returns the index of the next line."""
        line_no = index + 1
        text = raw.strip()
        found = _CONFIG.match(text)
        if found is None:
            self.problem(
                line_no,
                f"{text!r} is not a config line",
                "write `ID.field: value`; `ID.field: |` then indented lines for multi-line text",
            )
            return index + 1
        node_id, path, value = found.group(1), found.group(2).split("."), (found.group(3) or "").strip()
        key_indent = _indent(raw)
        next_index = index + 1
        if value in ("|", "|-", "|+", ">"):
            block, next_index = _block(self.lines, index + 1, key_indent)
            if not block:
                self.problem(line_no, f"{node_id}.{path[0]}: `|` needs indented lines after it", node=node_id)
                return next_index
            parsed: Any = textwrap.dedent("\n".join(block))
            if value == ">":
                parsed = " ".join(parsed.split())
        elif value == "":
            block, next_index = _block(self.lines, index + 1, key_indent)
            if not block:
                parsed = ""
            else:
                body = textwrap.dedent("\n".join(block))
                try:
                    parsed = json.loads(body)
                except ValueError:
                    try:
                        parsed = yaml.safe_load(body)
                    except yaml.YAMLError as exc:
                        self.problem(
                            line_no,
                            f"the value of {node_id}.{'.'.join(path)} is neither JSON nor YAML: "
                            f"{str(exc).splitlines()[0]}",
                            "write it as JSON on one line, or use `|` for text",
                            node=node_id,
                        )
                        return next_index
        else:
            parsed = coerce_value(value)
        node = self.nodes.get(node_id.lower())
        if node is None and node_id.lower() in self.bad_ids:
            return next_index
        if node is None:
            self.problem(
                line_no,
                f"config references unknown node {node_id!r}. Available: {self._ids()}",
                "declare the node under `nodes:` or fix the id",
                node=node_id,
            )
            return next_index
        config = node["config"]
        if path[0] == "config":
            path = path[1:] or path
        seen = node.setdefault("_seen", set())
        if ".".join(path) in seen:
            self.problem(
                line_no, f"{node_id}.{'.'.join(path)} is set twice", "keep one line per field", node=node_id
            )
            return next_index
        seen.add(".".join(path))
        if (
            value not in ("", "|", "|-", "|+", ">")
            and self._wants_text(node, path)
            and not isinstance(parsed, str)
        ):
            parsed = value  # `b.text: 42` on a text field is the text "42"
        error = _set_path(config, path, parsed)
        if error:
            self.problem(line_no, error, "set the whole object on one line as JSON", node=node_id)
        return next_index

    def _ids(self) -> list[str]:
        return [n["id"] for n in self.nodes.values()]

    def _wants_text(self, node: Mapping[str, Any], path: list[str]) -> bool:
        """True when the field takes text only (a number or true/false there is meant as text)."""
        if len(path) != 1:
            return False
        info = self.catalog.get(str(node["type"]))
        prop = (info.config_schema.get("properties") or {}).get(path[0]) if info is not None else None
        if not isinstance(prop, Mapping):
            return False
        any_of = prop.get("anyOf")
        options: list[Any] = any_of if isinstance(any_of, list) else [prop]
        types = {o.get("type") for o in options if isinstance(o, Mapping)}
        return "string" in types and not types & {"number", "integer", "boolean", "array", "object", None}

    # ------------------------------------------------------------------------------- edges
    def resolve_edges(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for edge in self.edges:
            ends = []
            for role, node_id in (("source", edge.source), ("target", edge.target)):
                node = self.nodes.get(node_id.lower())
                if node is None and node_id.lower() not in self.bad_ids:
                    self.problem(
                        edge.line,
                        f"edge references unknown {role} {node_id!r}. Available: {self._ids()}",
                        "declare the node under `nodes:` or fix the id",
                    )
                ends.append(node)
            source, target = ends
            if source is None or target is None:
                continue
            source_port = edge.source_port or self.default_out(edge.line, source)
            target_port = edge.target_port or self.default_in(edge.line, target)
            if source_port is None or target_port is None:
                continue
            out.append(
                {
                    "source": source["id"],
                    "source_port": source_port,
                    "target": target["id"],
                    "target_port": target_port,
                }
            )
        return out

    def _out_ports(self, node: Mapping[str, Any]) -> list[str] | None:
        cls = self.catalog.registry.get(node["type"])
        if cls is None:
            return None
        try:
            return list(cls.output_ports(cls.Config.model_validate(node["config"])))
        except ValueError:  # an invalid config: the validator reports it
            return None

    def default_out(self, line: int, node: Mapping[str, Any]) -> str | None:
        ports = self._out_ports(node)
        if ports is None or DEFAULT_PORT_OUT in ports:
            return DEFAULT_PORT_OUT
        if len(ports) == 1:
            return ports[0]
        self.problem(
            line,
            f"node {node['id']!r} ({node['type']}) has several output ports: {', '.join(ports)}",
            f"name the port, e.g. `{node['id']}.{ports[0] if ports else 'out'} -> ...`",
            node=node["id"],
        )
        return None

    def default_in(self, line: int, node: Mapping[str, Any]) -> str | None:
        cls = self.catalog.registry.get(node["type"])
        ports = list(cls.input_ports) if cls is not None else [DEFAULT_PORT_IN]
        if not ports:
            self.problem(
                line,
                f"node {node['id']!r} ({node['type']}) takes no input, so no edge can end at it",
                "edges start at a start node; turn the edge around or remove it",
                node=node["id"],
            )
            return None
        if DEFAULT_PORT_IN in ports or "*" in ports:
            return DEFAULT_PORT_IN
        return ports[0]

    # ------------------------------------------------------------------------------- result
    def document(self) -> dict[str, Any]:
        if not self.nodes:
            self.problem(None, "no nodes found in the spec", "add a `nodes:` section with `ID: type` lines")
        edges = self.resolve_edges()
        nodes = []
        for node in self.nodes.values():
            self.node_lines[str(node["id"]).lower()] = node.pop("_line", 0)
            node.pop("_seen", None)
            if not node["config"]:
                del node["config"]
            nodes.append(node)
        doc: dict[str, Any] = {"schema": SCHEMA_ID, "id": _slug(self.name), "name": self.name}
        if self.description:
            doc["description"] = self.description
        if self.inputs:
            doc["inputs"] = {
                "type": "object",
                "properties": {
                    name: ({} if kind == "any" else {"type": kind}) for name, (kind, _) in self.inputs.items()
                },
                "required": [name for name, (_, required) in self.inputs.items() if required],
            }
        doc["nodes"] = nodes
        doc["edges"] = edges
        return doc


_EDGE_WHERE = re.compile(r"^edge #(\d+) ")


def _with_line(problem: dict[str, Any], parser: _Parser) -> dict[str, Any]:
    """A validator problem with the spec line of its node or edge."""
    where = str(problem.get("node") or "")
    edge = _EDGE_WHERE.match(where)
    if edge is not None and int(edge.group(1)) < len(parser.edges):
        return {"line": parser.edges[int(edge.group(1))].line, **problem}
    line = parser.node_lines.get(where.split(".", 1)[0].lower())
    return {"line": line, **problem} if line else problem


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:64] or "flow"


def orphans(doc: Mapping[str, Any]) -> list[str]:
    """The ids of nodes without any edge, when the flow has two or more nodes (decision 2)."""
    nodes = [n for n in doc.get("nodes") or () if isinstance(n, Mapping)]
    if len(nodes) < 2:
        return []
    linked: set[str] = set()
    for edge in doc.get("edges") or ():
        if isinstance(edge, Mapping):
            linked.add(str(edge.get("source", "")).lower())
            linked.add(str(edge.get("target", "")).lower())
    for node in nodes:
        requires = node.get("requires") or ()
        if requires:
            linked.add(str(node.get("id", "")).lower())
            linked.update(str(r).lower() for r in requires)
    return [str(n.get("id")) for n in nodes if str(n.get("id", "")).lower() not in linked]


def parse_flow_spec(text: str, *, known_types: ComponentCatalog) -> dict[str, Any]:
    """The plait flow document the compact spec describes (see the module docstring); raises
    `FlowSpecError` with every problem: line problems first, else the orphans and every problem
    plait's validator finds."""
    if not isinstance(text, str) or not text.strip():
        raise FlowSpecError(
            [{"message": "the spec is empty", "hint": "write `nodes:`, `edges:` and `config:` sections"}]
        )
    parser = _Parser(text, known_types)
    parser.parse()
    doc = parser.document()
    if parser.problems:
        raise FlowSpecError(sorted(parser.problems, key=lambda p: p.get("line", 0)))
    problems: list[dict[str, Any]] = []
    lonely = orphans(doc)
    if lonely:
        problems.append(
            {
                "code": "orphan_nodes",
                "message": f"Flow build rejected: orphan components with no edges: {lonely}",
                "hint": "connect each of them with an edge (or remove it); only a one-node flow may have none",
            }
        )
    for problem in validate_flow(doc, known_types):
        problems.append(_with_line(problem, parser))
    if problems:
        raise FlowSpecError(problems)
    return doc


__all__ = ["FlowSpecError", "coerce_value", "format_problem", "orphans", "parse_flow_spec"]
