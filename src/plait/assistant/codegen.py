"""Component generation: ask the model for a custom component, validate it, retry with the error.

    outcome = await generate_component("a component that reverses a string", call, emit)
    outcome.validated, outcome.class_name, outcome.code, outcome.attempts, outcome.error

One attempt is: call the model (no token streaming), pull the Python code out of its reply
(`extract_code`), then validate it exactly as a component saved through the API is validated
(`plait.sandbox.components.validate_component`: size and name limits, the AST security scan, then
loading and introspecting the class in the sandbox, which also catches bad imports). An invalid
component is sent back to the model with its error and its code (`retry_message`), up to
`max_attempts` attempts in total (spec B38-B43, decision 1). Each step is a `progress` event so
the panel can show "Attempt 2 of 3".

A reply with no code at all on the first attempt is an answer in words (the request was a
question after all): the pipeline stops and the orchestrator completes with that text.

The prompt teaches plait's SDK (`plait.sdk`: `Component`, `Input`, `Output`, `run` returning a
dict), not Langflow's; every text here is plait's own wording (decision 13).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from plait.assistant.events import Progress
from plait.assistant.memory import Turn
from plait.assistant.ports import Emit, ModelCall
from plait.llm.base import Message
from plait.sandbox.components import ComponentValidation, validate_component
from plait.sandbox.scan import RESERVED_METHOD, RESERVED_OUTPUT
from plait.sdk import TYPES

log = logging.getLogger("plait.assistant")

DEFAULT_MAX_ATTEMPTS = 3
MAX_ERROR_CHARS = 500  # an error shown to people and sent back to the model stays one short line
LOG_SNIPPET_CHARS = 200

Validate = Callable[[str], Awaitable[ComponentValidation]]

COMPONENT_SYSTEM_PROMPT = f"""\
You write custom components for plait, a workflow engine. A component is one Python class that \
plait loads in a sandbox and calls from a flow's `component` node, or offers to an agent as a tool.

Write it against plait's component SDK, exactly like this example:

```python
from plait.sdk import Component, Input, Output


class CountWords(Component):
    display_name = "Count words"
    description = "count_words: counts the words of a text, ignoring words shorter than min_length."
    inputs = [
        Input("text", "string", "The text whose words are counted"),
        Input("min_length", "integer", "Words shorter than this are not counted", required=False, default=1),
    ]
    outputs = [Output("word_count", "integer", "How many words the text holds")]

    def run(self, text, min_length=1):
        words = [w for w in text.split() if len(w) >= min_length]
        return {{"word_count": len(words)}}
```

The rules:
- Import with `from plait.sdk import Component, Input, Output` and define exactly one class that \
inherits from `Component`. Its name is the component's name: CamelCase, starting with an upper-case \
letter, letters, digits and `_` only, at most 64 characters.
- Class attributes: `display_name` (a short title), `description` (one sentence; agents read it as \
the tool description), `inputs` and `outputs`. Declare at least one input or output.
- `Input(name, type, description, required=True, default=None)`: one per argument of `run`. Give \
optional inputs `required=False` and a JSON `default` (a number, string, boolean, list, dict or None).
- `Output(name, type, description)`: `run` returns a dict with exactly one key per declared output.
- Types are one of: {", ".join(TYPES)}. Values must be JSON: return lists, not tuples or sets; \
dicts with string keys.
- Define `def run(self, <one parameter per input>) -> dict`. It may be `async def run`. No \
constructor arguments: plait creates the class with no arguments.
- Use only the Python standard library, plus `httpx` for HTTP requests (the node then needs \
`network: true`), `bs4` (BeautifulSoup) for HTML and `yaml` (PyYAML). Do not import other \
packages: they may not be installed where the component runs, and the import then fails.
- Never read the environment (`os.environ`, `os.getenv`) or files (`open()`, `pathlib`): take \
settings, keys and content as inputs. Never use `eval`, `exec`, `compile`, `__import__`, \
`globals()`, `subprocess`, `pickle`, `importlib` or dunder attributes such as `__globals__`, \
`__subclasses__` or `__builtins__`. plait's security scan refuses code that does.
- Name outputs after the value they hold (`summary`, `price`, `items`, `result`). The output name \
`{RESERVED_OUTPUT}` and the method name `{RESERVED_METHOD}` are reserved by plait and refused.
- Raise a `ValueError` with a clear message for bad input instead of returning an error string.

Agent tool compatibility (an agent may call the component as a tool):
- Start `description` with a verb_noun name of what it does, then what it returns, as in \
"count_words: counts the words of a text".
- Give every input one clear description saying what the value is and its unit or format.

Answer with exactly one ```python code block holding the complete component, and at most a \
sentence or two of explanation outside it. When the user asks to change a component you wrote \
earlier in this conversation, answer with the complete changed component, not a diff.
"""

# A fenced block: ```python, ```py, ```python3 or a bare ``` (not ```json, ```bash, ...).
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
_CLASS_LINE = re.compile(r"^class[ \t]+([A-Za-z_]\w*)[ \t]*(\(([^)]*)\))?[ \t]*:", re.MULTILINE)
# Any class statement, even a broken one: a block whose class line does not parse is still the
# model's component, and its SyntaxError is what the retry must be told about.
_ANY_CLASS = re.compile(r"^class[ \t]+[A-Za-z_]", re.MULTILINE)


def extract_code(text: str | None) -> str | None:
    """The Python code of a model reply: the largest ```python (or ```py, or bare ```) block that
    defines a class; else the whole reply when it parses as Python and defines a class inheriting
    from `Component`; else None. A last block the reply left unclosed counts."""
    if not text or not text.strip():
        return None
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    with_class = [b for b in blocks if _ANY_CLASS.search(b)]
    if with_class:
        return max(with_class, key=len).strip("\n") + "\n"
    if blocks or "class" not in text:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_base_name(b) == "Component" for b in node.bases):
            return text.strip("\n") + "\n"
    return None


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def guess_class_name(code: str) -> str | None:
    """The name of the component class `code` seems to define (a top-level class whose bases
    mention Component, else the first top-level class), without parsing it."""
    first = None
    for m in _CLASS_LINE.finditer(code):
        if m.group(3) and "Component" in m.group(3):
            return m.group(1)
        first = first or m.group(1)
    return first


def component_messages(request: str, *, history: Sequence[Turn] = ()) -> list[Message]:
    """The conversation for a generation: the SDK prompt, the session's earlier turns (so a
    follow-up such as "add error handling" changes the previous component), then the request."""
    messages = [Message("system", COMPONENT_SYSTEM_PROMPT)]
    for turn in history:
        messages.append(Message("user", turn.user))
        messages.append(Message("assistant", turn.assistant))
    messages.append(Message("user", request))
    return messages


def retry_message(error: str, code: str, problems: Sequence[str] = ()) -> str:
    """What the model is told after an invalid component: the error, the code, a request for a
    corrected complete component."""
    found = "\n".join(f"- {p}" for p in problems) if len(problems) > 1 else f"- {error}"
    return (
        "plait could not accept the component you wrote. Validation reported:\n"
        f"{found}\n\n"
        "This is the code that failed:\n"
        f"```python\n{code.rstrip()}\n```\n\n"
        "Fix every problem listed and answer with the complete corrected component (one class that "
        "inherits from Component) in exactly one ```python block. Keep the class name and the "
        "behaviour unless the error requires a change."
    )


def clean_error(error: str | None) -> str:
    """One short line a person can read (validation errors already are; sandbox ones may not be)."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    line = lines[0] if lines else "the component is not valid"
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


NO_CODE_ERROR = "the reply held no Python code block with a component class"


@dataclass(slots=True)
class ComponentOutcome:
    """What a generation ended with. `code` is None only when the model answered in words (then
    `text` is that answer); an invalid last attempt keeps its code and `error`."""

    validated: bool
    class_name: str | None
    code: str | None
    attempts: int
    error: str | None
    text: str
    validation: ComponentValidation | None


async def generate_component(
    request: str,
    call: ModelCall,
    emit: Emit,
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    history: Sequence[Turn] = (),
    validate: Validate = validate_component,
) -> ComponentOutcome:
    """Generate a component for `request`, validating it and retrying with the error, at most
    `max_attempts` model calls in all. Provider errors propagate."""
    max_attempts = max(1, max_attempts)
    messages = component_messages(request, history=history)
    code: str | None = None
    class_name: str | None = None
    error: str | None = None
    problems: list[str] = []
    text = ""
    validation: ComponentValidation | None = None
    attempt = 0
    for attempt in range(1, max_attempts + 1):
        log.info("assistant.generation.attempt attempt=%d max_retries=%d", attempt, max_attempts)
        await emit(Progress("generating", attempt, max_attempts, message="Generating component..."))
        reply = await call(messages, phase="main")
        text = reply.content or ""
        await emit(Progress("extracting_code", attempt, max_attempts, message="Extracting code..."))
        found = extract_code(text)
        if found is None and code is None:
            # An answer in words, not a component: the orchestrator replies with the text.
            return ComponentOutcome(False, None, None, attempt, None, text, None)
        if found is None:
            # A retry answered without code: a failed attempt; the last code stays the one to fix.
            assert code is not None
            error, problems, validation = NO_CODE_ERROR, [], None
        else:
            code = found
            await emit(Progress("validating", attempt, max_attempts, message="Validating component..."))
            validation = await validate(code)
            class_name = validation.class_name or guess_class_name(code)
            if validation.valid:
                log.info("assistant.validation.success class_name=%s attempts=%d", class_name, attempt)
                await emit(
                    Progress(
                        "validated",
                        attempt,
                        max_attempts,
                        message="Component validated",
                        class_name=class_name,
                        component_code=code,
                    )
                )
                return ComponentOutcome(True, class_name, code, attempt, None, text, validation)
            error, problems = clean_error(validation.error), list(validation.problems)
        log.warning(
            "assistant.validation.failed error=%s attempt=%d class_name=%s", error, attempt, class_name
        )
        await emit(
            Progress(
                "validation_failed",
                attempt,
                max_attempts,
                message="Validation failed",
                error=error,
                class_name=class_name,
                component_code=code,
            )
        )
        if attempt < max_attempts:
            await emit(
                Progress(
                    "retrying",
                    attempt + 1,
                    max_attempts,
                    message=f"Retrying (attempt {attempt + 1} of {max_attempts})...",
                    error=error,
                )
            )
            messages.append(Message("assistant", text))
            messages.append(Message("user", retry_message(error, code, problems)))
    log.error(
        "assistant.validation.exhausted error=%s attempts=%d code_snippet=%r",
        error,
        attempt,
        (code or "")[:LOG_SNIPPET_CHARS],
    )
    return ComponentOutcome(False, class_name, code, attempt, error, text, validation)


__all__ = [
    "COMPONENT_SYSTEM_PROMPT",
    "DEFAULT_MAX_ATTEMPTS",
    "ComponentOutcome",
    "clean_error",
    "component_messages",
    "extract_code",
    "generate_component",
    "guess_class_name",
    "retry_message",
]
