"""Rewriting references between RAGFlow's syntax and plait's.

plait reads `{cpn_id@param}` as written, but an imported flow should read like any other plait flow
and mean the same thing: a RAGFlow `param` is not always where plait keeps the value (an LLM's
`@content` is the whole output of a plait `llm` node, a Categorize's `@category_name` is
`.category`), `env.*` are conversation variables (plait's `vars`), and a loop body's nodes are not
visible outside the body in plait. So every reference is parsed (`plait.expr.refs.scan`) and handed
to a `rewrite` callback that returns the new reference; these helpers only do the text surgery,
in both directions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plait.expr.refs import Ref, TemplateError, parse_ref, scan

# (root, path) -> the reference's new text, without braces; None keeps the reference as written.
Rewrite = Callable[[Ref], str | None]


def dotted(root: str, path: tuple[str | int, ...]) -> str:
    return ".".join([root, *(str(p) for p in path)])


def rewrite_template(text: Any, rewrite: Rewrite, *, braces: tuple[str, str] = ("{{", "}}")) -> Any:
    """Every reference in `text` (a string; lists and dicts are walked) replaced by
    `braces[0] + rewrite(ref) + braces[1]`; text that is not a reference is left alone."""
    if isinstance(text, list):
        return [rewrite_template(v, rewrite, braces=braces) for v in text]
    if isinstance(text, dict):
        return {k: rewrite_template(v, rewrite, braces=braces) for k, v in text.items()}
    if not isinstance(text, str) or "{" not in text:
        return text
    out: list[str] = []
    last = 0
    for start, end, ref, _plain in scan(text):
        new = rewrite(ref)
        if new is None:
            continue
        out.append(text[last:start])
        out.append(f"{braces[0]}{new}{braces[1]}")
        last = end
    out.append(text[last:])
    return "".join(out)


def parse_bare(text: Any) -> Ref | None:
    """A field that holds one reference without braces (`cpn@param`, `sys.query`, `env.x`), or
    None when it is not one (a constant)."""
    if not isinstance(text, str) or not text.strip():
        return None
    stripped = text.strip()
    if "@" not in stripped and not stripped.lower().startswith(("sys.", "env.", "{")):
        return None
    try:
        return parse_ref(stripped)
    except TemplateError:
        return None
