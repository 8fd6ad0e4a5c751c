"""The flow-builder toolkit: the tools the agent calls, on the working flow of one request.

    toolkit = Toolkit(WorkingFlow(request.flow, catalog), catalog, files=sandbox,
                      generator=generator, runner=runner)
    tools = toolkit.specs()                               # [ToolSpec] for the model
    result = await toolkit.call("add_component", {"component_type": "llm"})
    events = toolkit.drain()                              # FlowUpdate / FileWritten, in order

The tools, their arguments and their errors follow spec 1.7 on plait's flow document:

- catalog: `search_components`, `describe_component` (cached per request, `tool_cache`);
- reading the flow: `get_field_value` (secrets masked), `describe_flow_io`;
- live edits: `add_component`, `remove_component`, `connect_components` (port-checked),
  `configure_component`, each answered with the validator's problems for the whole flow, so the
  agent sees every problem at once with its node and field;
- proposals the user reviews: `propose_field_edit` (a JSON Patch), `build_flow` (a whole flow
  from the compact spec, only on an empty canvas, decision 6), `propose_plan`;
- `generate_component` and `run_flow`, through the `ComponentGenerator` and `FlowRunner` the
  agent loop's owner passes in (`run_flow` refuses unsafe inline code first, `code_gate`);
- files: `read_file`, `write_file`, `edit_file`, `glob_search`, `grep_search` (`files`).

`call` never raises for bad arguments or a refused change: the result is then
`{"error": "...", ...}` saying what to do instead. Provider and infrastructure errors of the
generator and the runner propagate: they end the turn, not the tool call.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator

from plait.assistant import flow_io
from plait.assistant.catalog import MAX_SEARCH_RESULTS, ComponentCatalog
from plait.assistant.code_gate import TemplateSource, unsafe_code
from plait.assistant.events import FileWritten, FlowUpdate
from plait.assistant.files import FileSandbox
from plait.assistant.flow_spec import FlowSpecError, parse_flow_spec
from plait.assistant.redaction import mask, mask_field
from plait.assistant.tool_cache import ToolCache
from plait.assistant.tool_ports import ComponentGenerator, FlowRunner
from plait.assistant.working_flow import WorkingFlow
from plait.errors import PlaitError
from plait.llm.base import ToolSpec
from plait.sandbox.components import builtin_templates

log = logging.getLogger("plait.assistant")

Result = dict[str, Any]
Handler = Callable[[dict[str, Any]], Awaitable[Result]]

NO_FLOW = "There is no flow on the canvas to run. Build or add components first."
SPEC_RETRY = (
    "Correct the spec and call build_flow again NOW — do NOT re-run search_components or describe_component."
)
PLAN_STOP = (
    "Plan shown to the user. STOP — do not call any other tool; wait for the user to approve the plan."
)
HIDDEN_FIELDS = frozenset({"code"})  # get_field_value without a field: shown only when asked for
RUN_OK_STATUSES = frozenset({"succeeded", "success", "completed", "ok"})

_STR = {"type": "string"}
_OBJ = {"type": "object"}

TOOL_DEFINITIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_components": (
        "Search the node types and the user's own components that can go in a flow. Returns names, "
        "titles and descriptions; call describe_component for the fields and ports of one. "
        "Without a query, lists everything.",
        {"type": "object", "properties": {"query": {**_STR, "description": "Words to look for."}}},
    ),
    "describe_component": (
        "The config fields (with types and defaults) and the input/output ports of one node type or "
        "user component, by the name search_components gives.",
        {
            "type": "object",
            "properties": {"component_type": {**_STR, "description": "e.g. llm, switch, SumNumbers"}},
            "required": ["component_type"],
        },
    ),
    "get_field_value": (
        "The current value of a config field of a node in the working flow (all its fields when "
        "field_name is omitted). Secret values come back as ***REDACTED***; never ask for them.",
        {
            "type": "object",
            "properties": {"component_id": _STR, "field_name": _STR},
            "required": ["component_id"],
        },
    ),
    "propose_field_edit": (
        "Propose a change of one config field for the user to review (nothing changes until they "
        "accept). Use it for edits of an existing flow the user should see first, e.g. prompts.",
        {
            "type": "object",
            "properties": {
                "component_id": _STR,
                "field_name": _STR,
                "new_value": {"description": "The new value (any JSON)."},
            },
            "required": ["component_id", "field_name", "new_value"],
        },
    ),
    "add_component": (
        "Add a node to the working flow (it appears on the canvas at once). component_type is a "
        "node type or a user component's class name (search_components first). Optional config "
        "(fields from describe_component) and component_id. Returns the node and the flow's problems.",
        {
            "type": "object",
            "properties": {
                "component_type": _STR,
                "config": {**_OBJ, "description": "Initial config fields."},
                "component_id": {**_STR, "description": "The node id (default: derived from the type)."},
            },
            "required": ["component_type"],
        },
    ),
    "remove_component": (
        "Remove a node and its edges from the working flow.",
        {"type": "object", "properties": {"component_id": _STR}, "required": ["component_id"]},
    ),
    "connect_components": (
        "Connect an output port of one node to an input port of another (an edge carries the "
        "value). Ports are checked against both node types; omit a port for the default "
        "(out / in). Branching nodes (if, switch, categorize, human) have one output port per "
        "branch.",
        {
            "type": "object",
            "properties": {
                "source_id": _STR,
                "source_output": {**_STR, "description": "Output port of the source (default out)."},
                "target_id": _STR,
                "target_input": {**_STR, "description": "Input port of the target (default in)."},
            },
            "required": ["source_id", "target_id"],
        },
    ),
    "configure_component": (
        "Set config fields of a node in the working flow (applied at once). params is a JSON "
        'object of field -> value, e.g. {"prompt": "Summarise {{start.text}}"}; null resets a '
        "field. Fields are checked against the node type.",
        {
            "type": "object",
            "properties": {
                "component_id": _STR,
                "params": {"description": "A JSON object (or its JSON text)."},
            },
            "required": ["component_id", "params"],
        },
    ),
    "build_flow": (
        "Build a whole flow from a compact spec, on an EMPTY canvas only (use the other tools to "
        "change an existing flow). The user reviews it before it replaces the canvas. Spec:\n"
        "name: Flow name\n\ninputs:\n  query: string\n\nnodes:\n  start: start\n  answer: llm\n  "
        "done: output\n\nedges:\n  start -> answer\n  answer -> done\n\nconfig:\n  answer.prompt: |\n"
        "    Answer: {{inputs.query}}\n  done.value: '{{answer.text}}'\n\n"
        "Node lines are `ID: type`; edges `A.port -> B.port` (ports optional: out / in); config "
        "values are JSON where they parse, `|` starts multi-line text. With 2+ nodes every node "
        "needs an edge.",
        {"type": "object", "properties": {"spec": _STR}, "required": ["spec"]},
    ),
    "propose_plan": (
        "Show the user a plan (markdown) for a large or ambiguous change, then STOP and wait for "
        "their approval before building.",
        {"type": "object", "properties": {"plan": _STR}, "required": ["plan"]},
    ),
    "generate_component": (
        "Write a custom Python component for something no node type does, validate it in the "
        "sandbox and register it for the user. Returns its class name, usable in add_component "
        "and build_flow.",
        {
            "type": "object",
            "properties": {
                "description": {**_STR, "description": "What the component does, its inputs and outputs."}
            },
            "required": ["description"],
        },
    ),
    "describe_flow_io": (
        "The working flow's inputs (entry nodes and run-input fields), outputs and tools, read "
        "from the wiring. Call it before run_flow on a flow you did not build; if there is more "
        "than one run input, ask the user which one to fill.",
        {"type": "object", "properties": {}},
    ),
    "run_flow": (
        "Run the working flow for real (the user sees the run on the canvas and in the run "
        "history) and return its result with duration and token counts. inputs: the run's input "
        "fields as an object, or one text for a flow with a single input.",
        {
            "type": "object",
            "properties": {
                "inputs": {"description": "An object of run inputs, or a text for the only input."},
                "reason": _STR,
            },
        },
    ),
    "read_file": (
        "Read a file of the user's file area, with line numbers.",
        {
            "type": "object",
            "properties": {"path": _STR, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    ),
    "write_file": (
        "Create or replace a file (relative path) in the user's file area, e.g. FLOW_DOCS.md.",
        {"type": "object", "properties": {"path": _STR, "content": _STR}, "required": ["path", "content"]},
    ),
    "edit_file": (
        "Replace old_string (which must occur once) by new_string in a file of the user's file area.",
        {
            "type": "object",
            "properties": {
                "path": _STR,
                "old_string": _STR,
                "new_string": _STR,
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old_string", "new_string"],
        },
    ),
    "glob_search": (
        "List the files of the user's file area matching a glob pattern (** recurses).",
        {"type": "object", "properties": {"pattern": _STR}},
    ),
    "grep_search": (
        "Find lines matching a regular expression in the user's files (under path, optional).",
        {"type": "object", "properties": {"pattern": _STR, "path": _STR}, "required": ["pattern"]},
    ),
}
FLOW_TOOLS = tuple(
    name
    for name in TOOL_DEFINITIONS
    if name not in {"read_file", "write_file", "edit_file", "glob_search", "grep_search"}
)
FILE_TOOLS = ("read_file", "write_file", "edit_file", "glob_search", "grep_search")
_VALIDATORS = {name: Draft202012Validator(schema) for name, (_, schema) in TOOL_DEFINITIONS.items()}


def _arguments_error(name: str, arguments: Mapping[str, Any]) -> str | None:
    errors = sorted(_VALIDATORS[name].iter_errors(dict(arguments)), key=lambda e: list(e.path))
    if not errors:
        return None
    err = errors[0]
    where = ".".join(str(p) for p in err.path)
    schema = TOOL_DEFINITIONS[name][1]
    expected = ", ".join(
        f"{k}{'' if k in schema.get('required', ()) else '?'}" for k in schema.get("properties", {})
    )
    return (
        f"invalid arguments for {name}{f' ({where})' if where else ''}: {err.message}. Arguments: {expected}"
    )


def _format_metrics(outcome: Mapping[str, Any]) -> str:
    seconds = float(outcome.get("duration_seconds") or 0.0)
    total = int(outcome.get("total_tokens") or 0)
    text = f"Ran in {seconds:.2f}s"
    if total:
        text += (
            f" · used {total} tokens ({int(outcome.get('input_tokens') or 0)} in / "
            f"{int(outcome.get('output_tokens') or 0)} out)"
        )
    return f"({text})"


class Toolkit:
    """The tools of one request, over its working flow (see the module docstring)."""

    def __init__(
        self,
        working_flow: WorkingFlow,
        catalog: ComponentCatalog | None = None,
        files: FileSandbox | None = None,
        generator: ComponentGenerator | None = None,
        runner: FlowRunner | None = None,
        *,
        cache: ToolCache | None = None,
        templates: TemplateSource = builtin_templates,
    ) -> None:
        self.flow = working_flow
        self.catalog = catalog or working_flow.catalog
        self.files = files
        self.generator = generator
        self.runner = runner
        self.cache = cache or ToolCache()
        self.templates = templates
        self.last_run: dict[str, Any] | None = None  # the last run's outcome (complete.run_metrics)
        self.plan_proposed = False
        self.edits_proposed = 0
        self._handlers: dict[str, Handler] = {
            "search_components": self._search_components,
            "describe_component": self._describe_component,
            "get_field_value": self._get_field_value,
            "propose_field_edit": self._propose_field_edit,
            "add_component": self._add_component,
            "remove_component": self._remove_component,
            "connect_components": self._connect_components,
            "configure_component": self._configure_component,
            "build_flow": self._build_flow,
            "propose_plan": self._propose_plan,
            "generate_component": self._generate_component,
            "describe_flow_io": self._describe_flow_io,
            "run_flow": self._run_flow,
        }
        for tool in FILE_TOOLS:
            self._handlers[tool] = functools.partial(self._file_tool, tool)

    # ------------------------------------------------------------------------------- surface
    def names(self) -> list[str]:
        """The tools this toolkit offers: file tools only with a file sandbox."""
        return [n for n in TOOL_DEFINITIONS if n not in FILE_TOOLS or self.files is not None]

    def specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(n, TOOL_DEFINITIONS[n][0], copy.deepcopy(TOOL_DEFINITIONS[n][1])) for n in self.names()
        ]

    def drain(self) -> list[FlowUpdate | FileWritten]:
        """The events of the tools called since the last drain: flow updates, then files."""
        events: list[FlowUpdate | FileWritten] = list(self.flow.drain())
        if self.files is not None:
            events.extend(self.files.drain())
        return events

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> Result:
        """Run one tool; the result is a JSON object (`{"error": ...}` when refused)."""
        if name not in self.names():
            return {"error": f"unknown tool {name!r}. Tools: {', '.join(self.names())}"}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return {"error": f"the arguments of {name} are not valid JSON: {exc}"}
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return {"error": f"the arguments of {name} must be a JSON object"}
        args = dict(arguments)
        problem = _arguments_error(name, args)
        if problem:
            return {"error": problem}
        started = time.perf_counter()
        try:
            result = await self._handlers[name](args)
        except FlowSpecError as exc:
            result = {"error": f"{exc} {SPEC_RETRY}", "problems": exc.problems}
        except PlaitError as exc:
            result = {"error": exc.with_hint()}
        log.debug(
            "assistant.tool name=%s ms=%.2f error=%s",
            name,
            (time.perf_counter() - started) * 1000,
            "error" in result,
        )
        return result

    # ------------------------------------------------------------------------------- catalog
    async def _search_components(self, args: dict[str, Any]) -> Result:
        query = args.get("query")

        async def produce() -> Result:
            found = self.catalog.search(query)
            out: Result = {
                "components": [info.summary() for info in found[:MAX_SEARCH_RESULTS]],
                "count": len(found),
            }
            if len(found) > MAX_SEARCH_RESULTS:
                out["truncated"] = True
                out["hint"] = "narrow the query to see the others"
            if not found:
                out["hint"] = "nothing matches; try other words, or search without a query to list everything"
            return out

        return copy.deepcopy(await self.cache.get_or_call("search_components", {"query": query}, produce))

    async def _describe_component(self, args: dict[str, Any]) -> Result:
        name = args["component_type"]

        async def produce() -> Result:
            info = self.catalog.get(name)
            if info is None:
                close = [i.name for i in self.catalog.search(name)[:5]]
                raise _NotFound(
                    f"component_type {name!r} not found in registry"
                    + (f". Closest: {', '.join(close)}" if close else ""),
                    hint="call search_components to find the type name",
                )
            return info.describe()

        return copy.deepcopy(
            await self.cache.get_or_call("describe_component", {"component_type": name}, produce)
        )

    # ------------------------------------------------------------------------------- reading
    async def _get_field_value(self, args: dict[str, Any]) -> Result:
        node = self.flow.node(args["component_id"])
        if node is None:
            return {
                "error": f"Component {args['component_id']!r} not found. Available: {self.flow.node_ids()}",
            }
        info = self.flow.info(node)
        props = (info.config_schema.get("properties") or {}) if info is not None else {}
        config = node.get("config") if isinstance(node.get("config"), Mapping) else {}
        assert isinstance(config, Mapping)
        field = args.get("field_name")
        if field:
            if field not in config and field not in props:
                available = sorted({*config, *props})
                return {"error": f"Field {field!r} not found. Available: {available}"}
            if field in config:
                value = mask_field(field, config[field], props.get(field))
                return {"component_id": node["id"], "field": field, "value": value, "set": True}
            default = props[field].get("default") if isinstance(props.get(field), Mapping) else None
            return {
                "component_id": node["id"],
                "field": field,
                "value": mask_field(field, default, props.get(field)),
                "set": False,
            }
        fields = {k: mask_field(k, v, props.get(k)) for k, v in config.items() if k not in HIDDEN_FIELDS}
        out: Result = {"component_id": node["id"], "type": node.get("type"), "fields": fields}
        hidden = sorted(k for k in config if k in HIDDEN_FIELDS)
        if hidden:
            out["not_shown"] = hidden
            out["hint"] = "ask for these by field_name"
        unset = sorted(k for k in props if k not in config)
        if unset:
            out["unset_fields"] = unset
        return out

    async def _describe_flow_io(self, args: dict[str, Any]) -> Result:
        return flow_io.describe_flow_io(self.flow.doc)

    # ------------------------------------------------------------------------------- edits
    def _with_problems(self, result: Result) -> Result:
        problems = self.flow.validate()
        result["problems"] = problems
        result["valid"] = not problems
        return result

    async def _add_component(self, args: dict[str, Any]) -> Result:
        node = self.flow.add_node(args["component_type"], args.get("config"), args.get("component_id"))
        shown = {**node, "config": mask(node.get("config") or {})}
        return self._with_problems({"node": shown, "component_id": node["id"]})

    async def _remove_component(self, args: dict[str, Any]) -> Result:
        node = self.flow.remove_node(args["component_id"])
        return self._with_problems({"removed": node["id"]})

    async def _connect_components(self, args: dict[str, Any]) -> Result:
        edge = self.flow.connect(
            args["source_id"],
            args.get("source_output") or None,
            args["target_id"],
            args.get("target_input") or None,
        )
        return self._with_problems({"edge": edge})

    async def _configure_component(self, args: dict[str, Any]) -> Result:
        params = args["params"]
        if isinstance(params, str):
            try:
                params = json.loads(params)
            except ValueError as exc:
                return {
                    "error": f"Invalid JSON in params: {exc}",
                    "hint": 'pass an object, e.g. {"prompt": "..."}',
                }
        if not isinstance(params, Mapping):
            return {"error": f"params must be a JSON object, got {type(params).__name__}"}
        config = self.flow.configure(args["component_id"], params)
        node = self.flow.require_node(args["component_id"])
        return self._with_problems({"component_id": node["id"], "config": mask(config)})

    # ------------------------------------------------------------------------------- proposals
    async def _propose_field_edit(self, args: dict[str, Any]) -> Result:
        edit = self.flow.propose_edit(args["component_id"], args["field_name"], args["new_value"])
        self.edits_proposed += 1
        return {
            "status": "proposed",
            "edit_id": edit["id"],
            "description": mask(edit["description"]),
            "message": "The edit is shown to the user, who accepts or rejects it; the flow does not change until then.",
        }

    async def _propose_plan(self, args: dict[str, Any]) -> Result:
        self.flow.propose_plan(args["plan"])
        self.plan_proposed = True
        return {"status": "awaiting_user_approval", "message": PLAN_STOP}

    async def _build_flow(self, args: dict[str, Any]) -> Result:
        if not self.flow.is_empty():
            count = len(self.flow.nodes)
            return {
                "error": f"The canvas already has {count} component{'s' * (count != 1)}: build_flow only "
                "builds on an empty canvas. Change this flow with add_component, connect_components, "
                "configure_component and remove_component instead.",
            }
        try:
            doc = parse_flow_spec(args["spec"], known_types=self.catalog)
        except FlowSpecError as exc:
            if any(p.get("code") == "orphan_nodes" for p in exc.problems):
                log.info("flow_builder.spec.orphan problems=%d", len(exc.problems))
            raise
        current = self.flow.doc
        for key in ("schema", "id"):  # the draft stays the same flow
            if key in current:
                doc[key] = current[key]
        for key in ("settings", "variables", "metadata"):
            if key in current and key not in doc:
                doc[key] = copy.deepcopy(current[key])
        if not doc.get("name") and current.get("name"):
            doc["name"] = current["name"]
        self.flow.set_flow(doc, layout=True)
        name = doc.get("name") or "flow"
        nodes, edges = len(doc["nodes"]), len(doc["edges"])
        return {
            "status": "proposed",
            "message": f"Flow {name!r} built successfully ({nodes} nodes, {edges} edges). The user "
            "reviews it before it replaces the canvas; running it now applies it.",
            "nodes": nodes,
            "edges": edges,
            "problems": [],
            "valid": True,
        }

    # ------------------------------------------------------------------------------- generation
    async def _generate_component(self, args: dict[str, Any]) -> Result:
        if self.generator is None:
            return {"error": "component generation is not available here; use the existing node types"}
        outcome = await self.generator.generate(args["description"])
        if not outcome.get("validated") or not outcome.get("class_name"):
            return {
                "error": "the component could not be created: "
                + str(outcome.get("error") or "it did not validate"),
                "validated": False,
                "attempts": outcome.get("attempts", 0),
                "hint": "build the flow without it, or describe the component differently",
            }
        info = self.catalog.add_user_component(
            {
                "class_name": outcome["class_name"],
                "source": outcome.get("source"),
                "spec": outcome.get("spec") or {},
            }
        )
        self.cache.clear()  # search_components must list the new component
        return {
            "validated": True,
            "class_name": info.name,
            "attempts": outcome.get("attempts", 1),
            "message": f"Component {info.name!r} created, validated and registered. Use it as component_type "
            f"{info.name!r} in add_component or as a node type in build_flow.",
            "component": info.describe(),
        }

    # ------------------------------------------------------------------------------- running
    def _run_inputs(self, given: Any) -> dict[str, Any] | str:
        """The run's inputs from the argument: an object as it is, a text for the only input."""
        if given is None:
            return {}
        if isinstance(given, Mapping):
            return dict(given)
        if isinstance(given, str):
            try:
                parsed = json.loads(given)
            except ValueError:
                parsed = None
            if isinstance(parsed, Mapping):
                return dict(parsed)
            fields = flow_io.run_inputs(self.flow.doc)
            names = [f["name"] for f in fields if f.get("required")] or [f["name"] for f in fields]
            if len(names) == 1:
                return {names[0]: given}
            if not names:
                return {"text": given}
            return f"the flow takes several run inputs ({', '.join(names)}): pass inputs as an object"
        return f"inputs must be an object of run inputs (or a text), got {type(given).__name__}"

    async def _run_flow(self, args: dict[str, Any]) -> Result:
        if self.flow.is_empty():
            return {"error": NO_FLOW}
        if self.runner is None:
            return {"error": "running flows is not available here"}
        inputs = self._run_inputs(args.get("inputs"))
        if isinstance(inputs, str):
            return {"error": inputs, "run_inputs": flow_io.run_inputs(self.flow.doc)}
        problems = self.flow.validate()
        if problems:
            return {
                "error": "The flow has problems, so it cannot run yet; fix them first.",
                "problems": problems,
            }
        blocked = unsafe_code(self.flow.doc, self.catalog, self.templates)
        if blocked is not None:
            return {"error": blocked.message(), "node": blocked.node_id}
        started = time.perf_counter()
        outcome: dict[str, Any] = dict(await self.runner.run(copy.deepcopy(self.flow.doc), inputs))
        outcome.setdefault("duration_seconds", round(time.perf_counter() - started, 4))
        for key in ("input_tokens", "output_tokens"):
            outcome[key] = int(outcome.get(key) or 0)
        outcome["total_tokens"] = int(
            outcome.get("total_tokens") or outcome["input_tokens"] + outcome["output_tokens"]
        )
        metrics = {
            k: outcome[k] for k in ("duration_seconds", "input_tokens", "output_tokens", "total_tokens")
        }
        self.last_run = {**metrics, "status": outcome.get("status"), "run_id": outcome.get("run_id")}
        status = str(outcome.get("status") or "")
        if status not in RUN_OK_STATUSES:
            return {
                "error": f"The run {status or 'failed'}: {outcome.get('error') or 'no error message'} "
                f"{_format_metrics(outcome)}",
                "status": status or "failed",
                "run_id": outcome.get("run_id"),
                **metrics,
            }
        self.flow.ran = True
        return {
            "status": status,
            "result": mask(outcome.get("result")),
            "run_id": outcome.get("run_id"),
            **metrics,
            "summary": _format_metrics(outcome),
        }

    # ------------------------------------------------------------------------------- files
    async def _file_tool(self, name: str, args: dict[str, Any]) -> Result:
        files = self.files
        assert files is not None  # names() offers the file tools only with a sandbox
        if name == "read_file":
            return files.read_file(args["path"], args.get("offset") or 1, args.get("limit") or 2000)
        if name == "write_file":
            return files.write_file(args["path"], args["content"])
        if name == "edit_file":
            return files.edit_file(
                args["path"], args["old_string"], args["new_string"], bool(args.get("replace_all"))
            )
        if name == "glob_search":
            return files.glob_search(args.get("pattern") or "**/*")
        return files.grep_search(args["pattern"], args.get("path"))


class _NotFound(PlaitError):
    """describe_component of an unknown type: raised inside the cached producer so it is not cached."""

    code = "not_found"


__all__ = ["FILE_TOOLS", "FLOW_TOOLS", "NO_FLOW", "TOOL_DEFINITIONS", "Toolkit"]
