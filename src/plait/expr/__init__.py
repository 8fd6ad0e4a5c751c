"""References and templates (ARCHITECTURE section 4).

- ``Lookup = Callable[[str], Any]`` maps a lower-cased reference root (a node id, ``inputs``,
  ``vars``, ``sys``, ``env``, or an alias such as ``item``) to its value; KeyError if unknown.
- ``parse_ref``/``get_path`` in refs.py; ``compile_template``/``render``/``arender``/``find_refs`` in
  template.py (finding references needs compiled templates; refs.py imports nothing of plait but
  its error base).
- Every render is bounded in time and size (budget.py, sandbox.py); templates that may use their
  whole time budget render on a render thread when awaited with ``arender`` (worker.py).
"""

from plait.expr.budget import TemplateLimitError, TemplateLimits, limits, set_limits
from plait.expr.refs import Lookup, Ref, TemplateError, get_path, parse_ref
from plait.expr.template import Template, arender, compile_template, find_refs, needs_thread, render
from plait.expr.worker import run_in_render_thread

__all__ = [
    "Lookup",
    "Ref",
    "Template",
    "TemplateError",
    "TemplateLimitError",
    "TemplateLimits",
    "arender",
    "compile_template",
    "find_refs",
    "get_path",
    "limits",
    "needs_thread",
    "parse_ref",
    "render",
    "run_in_render_thread",
    "set_limits",
]
