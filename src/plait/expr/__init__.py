"""References and templates (ARCHITECTURE section 4).

Public interface (implemented in refs.py and template.py):

- ``Lookup = Callable[[str], Any]``: maps a lower-cased reference root (a node id, ``inputs``,
  ``vars``, ``sys``, ``env``, or an alias such as ``item``) to its value; raises KeyError when the
  root is unknown.
- ``Ref(root, path, text)``; ``parse_ref(text) -> Ref``; ``find_refs(value) -> list[Ref]``.
- ``get_path(value, path) -> Any``: dot-path into dicts/lists, JSON strings decoded on the way,
  None when missing.
- ``compile_template(text) -> Template`` (cached): ``.refs``, ``.is_static``, ``.render(lookup)``.
- ``render(value, lookup) -> Any``: deep rendering of dicts/lists/strings.
"""
