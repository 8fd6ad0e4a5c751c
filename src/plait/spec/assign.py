"""The operators of the `assign` node: document vocabulary, in one place.

The node implements them (`plait.nodes.builtin.variables`); the RAGFlow importer maps RAGFlow's
VariableAssigner operations onto them (`plait.spec.formats.ragflow_components`).
"""

from __future__ import annotations

from typing import Literal, get_args

AssignOperator = Literal[
    "overwrite",
    "clear",
    "set",
    "+=",
    "-=",
    "*=",
    "/=",
    "append",
    "extend",
    "remove_first",
    "remove_last",
]
ASSIGN_OPERATORS: frozenset[str] = frozenset(get_args(AssignOperator))
