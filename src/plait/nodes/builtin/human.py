"""The human node: pause the run until a person fills a form and picks an action."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plait.nodes.base import Node, NodeContext, NodeError, NodeResult


class HumanField(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(..., pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    label: str | None = None
    type: Literal["string", "text", "number", "integer", "boolean", "select"] = "string"
    required: bool = True
    options: list[str] = Field(default_factory=list, description="Choices for a 'select' field.")
    default: Any = Field(None, description="Prefill value (may be a template).")


class HumanConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field("", description="What the person is asked (template).")
    fields: list[HumanField] = Field(default_factory=list)
    actions: list[str] = Field(
        default_factory=lambda: ["submit"], min_length=1, description="Buttons; each is an output port."
    )
    blocking: bool = Field(True, description="Pause the whole run (true) or only this branch (false).")
    timeout_s: float | None = Field(
        None, gt=0, title="Timeout (s)", description="After this the task expires and the node fails."
    )
    assignees: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> HumanConfig:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("field names must be unique")
        if len(set(self.actions)) != len(self.actions):
            raise ValueError("actions must be unique")
        return self


class HumanNode(Node[HumanConfig]):
    type_name = "human"
    title = "Human input"
    description = "Asks a person to fill a form and choose an action; each action is an output port."
    category = "human"
    Config = HumanConfig

    @classmethod
    def output_ports(cls, config: HumanConfig) -> list[str]:
        return list(config.actions)

    @classmethod
    def task_hint_problems(cls, hints: Any) -> list[str]:
        """The decider may word the task (`message`) and ask for more (`fields`, as in the config)."""
        if not isinstance(hints, dict):
            return ["human must be an object like {'message': '...', 'fields': [...]}"]
        problems = []
        if not isinstance(hints.get("message", ""), str):
            problems.append("human.message must be a string")
        fields = hints.get("fields")
        if fields is not None and not isinstance(fields, list):
            problems.append(
                "human.fields must be a list of form fields like {'name': 'note', 'type': 'text'}"
            )
        names: list[str] = []
        for i, raw in enumerate(fields if isinstance(fields, list) else []):
            try:
                names.append(HumanField.model_validate(raw).name)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                problems.append(f"human.fields[{i}]{'.' + where if where else ''}: {err['msg']}")
        if len(set(names)) != len(names):
            problems.append("human.fields: field names must be unique")
        return problems

    def apply_task_hints(
        self, payload: dict[str, Any], hints: Mapping[str, Any] | None, decided: Any
    ) -> None:
        """`human.message` replaces the message; `human.fields` replace same-named fields and add the
        others; keys of the decided input that are field names prefill the form."""
        if hints and isinstance(hints.get("message"), str) and hints["message"]:
            payload["message"] = hints["message"]
        if hints and isinstance(hints.get("fields"), list):
            extra: dict[str, HumanField] = {}
            for raw in hints["fields"]:
                field = HumanField.model_validate(raw)
                extra[field.name] = field
            fields = [
                extra.pop(f["name"]).model_dump(exclude={"default"}) if f["name"] in extra else f
                for f in payload["fields"]
            ]
            fields += [f.model_dump(exclude={"default"}) for f in extra.values()]
            payload["fields"] = fields
            defaults = {f.name: f.default for f in extra.values() if f.default is not None}
            if defaults:
                payload["prefill"] = {**payload.get("prefill", {}), **defaults}
        if isinstance(decided, dict):
            names = {f["name"] for f in payload["fields"]}
            prefill = {k: v for k, v in decided.items() if k in names}
            if prefill:
                payload["prefill"] = {**payload.get("prefill", {}), **prefill}

    def accept_resume(self, data: Any, interrupt: Mapping[str, Any]) -> Any:
        """Checked against the form the person was shown (the decider may have added fields)."""
        cfg = self.config
        return check_answer(data, interrupt.get("payload") or {}, fields=cfg.fields, actions=cfg.actions)

    async def run(self, ctx: NodeContext) -> NodeResult:
        cfg = self.config
        payload = {
            "message": await ctx.arender(cfg.message),
            "fields": [f.model_dump(exclude={"default"}) for f in cfg.fields],
            "prefill": {f.name: await ctx.arender(f.default) for f in cfg.fields if f.default is not None},
            "actions": cfg.actions,
            "assignees": cfg.assignees,
        }
        # What `accept_resume` checked against the form that was shown.
        data = ctx.interrupt(payload, kind="human", blocking=cfg.blocking, timeout_s=cfg.timeout_s)
        return NodeResult({**data["values"], "action": data["action"]}, ports=(data["action"],))

    def validate_resume(self, data: Any) -> dict[str, Any]:
        cfg = self.config
        return check_answer(data, {}, fields=cfg.fields, actions=cfg.actions)


def check_answer(
    data: Any, form: Mapping[str, Any], *, fields: list[HumanField], actions: list[str]
) -> dict[str, Any]:
    """A person's answer checked and coerced: {"action": a, "values": {...}} or a flat dict of field
    values (+ optional action). `form` is the task as shown: its `fields` and `actions`, when it
    has them, win over the `fields` and `actions` given."""
    if isinstance(form.get("fields"), list):
        fields = [HumanField.model_validate(f) for f in form["fields"]]
    actions = form.get("actions") or actions
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise NodeError("human input must be an object of field values", retryable=False)
    if "values" in data and isinstance(data["values"], dict):
        action, values = data.get("action"), dict(data["values"])
    else:
        values = {k: v for k, v in data.items() if k != "action"}
        action = data.get("action")
    action = action or actions[0]
    if action not in actions:
        raise NodeError(
            f"unknown action {action!r}", hint=f"use one of: {', '.join(actions)}", retryable=False
        )
    problems = []
    clean: dict[str, Any] = {}
    known = {f.name for f in fields}
    for extra in sorted(set(values) - known):
        problems.append(f"{extra}: not a field of this form")
    for f in fields:
        value = values.get(f.name)
        if value is None or value == "":
            if f.required:
                problems.append(f"{f.name}: required")
            continue
        try:
            clean[f.name] = _coerce(f, value)
        except ValueError as exc:
            problems.append(f"{f.name}: {exc}")
    if problems:
        raise NodeError("invalid human input: " + "; ".join(problems), retryable=False)
    return {"action": action, "values": clean}


def _coerce(field: HumanField, value: Any) -> Any:
    if field.type in ("string", "text"):
        return str(value)
    if field.type == "select":
        if str(value) not in field.options:
            raise ValueError(f"must be one of {field.options}")
        return str(value)
    if field.type == "boolean":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "y", "1", "on"):
            return True
        if text in ("false", "no", "n", "0", "off"):
            return False
        raise ValueError("must be true or false")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError("must be a number") from exc
    if field.type == "integer":
        if not number.is_integer():
            raise ValueError("must be a whole number")
        return int(number)
    return int(number) if isinstance(value, int) else number
