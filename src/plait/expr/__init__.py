"""References and templates (ARCHITECTURE section 4).

- ``Lookup = Callable[[str], Any]`` maps a lower-cased reference root (a node id, ``inputs``,
  ``vars``, ``sys``, ``env``, or an alias such as ``item``) to its value; KeyError if unknown.
- ``parse_ref``/``find_refs``/``get_path`` in refs.py; ``compile_template``/``render`` in template.py.
"""

from plait.expr.refs import Lookup, Ref, TemplateError, find_refs, get_path, parse_ref
from plait.expr.template import Template, compile_template, render

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
