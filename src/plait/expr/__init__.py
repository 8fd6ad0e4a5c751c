"""References and templates (ARCHITECTURE section 4).

- ``Lookup = Callable[[str], Any]`` maps a lower-cased reference root (a node id, ``inputs``,
  ``vars``, ``sys``, ``env``, or an alias such as ``item``) to its value; KeyError if unknown.
- ``parse_ref``/``get_path`` in refs.py; ``compile_template``/``render``/``find_refs`` in template.py
  (finding references needs compiled templates; refs.py imports nothing of plait but its error base).
"""

from plait.expr.refs import Lookup, Ref, TemplateError, get_path, parse_ref
from plait.expr.template import Template, compile_template, find_refs, render

__all__ = [
    "Lookup",
    "Ref",
    "Template",
    "TemplateError",
    "compile_template",
    "find_refs",
    "get_path",
    "parse_ref",
    "render",
]
