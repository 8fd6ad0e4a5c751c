"""The node types plait ships, listed in one place.

Importing a node module has no side effect: `plait.nodes.registry` builds the default registry
from `BUILTIN_NODE_TYPES`. A new built-in node type is added here, and nowhere else. (The palette
entries of custom components come from whoever owns a component source: `component_palette`.)
"""

from __future__ import annotations

from typing import Any

from plait.nodes.base import Node
from plait.nodes.builtin.agent import AgentNode
from plait.nodes.builtin.branching import IfNode, SwitchNode
from plait.nodes.builtin.code import CodeNode
from plait.nodes.builtin.component import ComponentNode
from plait.nodes.builtin.data import DataOpsNode, ListOpsNode, TextNode, TransformNode
from plait.nodes.builtin.document import DocumentNode
from plait.nodes.builtin.flow_control import LoopNode, MapNode, SubflowNode
from plait.nodes.builtin.http import HttpNode
from plait.nodes.builtin.human import HumanNode
from plait.nodes.builtin.io import MessageNode, OutputNode, StartNode
from plait.nodes.builtin.llm import CategorizeNode, LlmNode
from plait.nodes.builtin.retrieval import RetrievalNode
from plait.nodes.builtin.spreadsheet import SpreadsheetNode
from plait.nodes.builtin.sql import SqlNode
from plait.nodes.builtin.timing import DelayNode
from plait.nodes.builtin.tool import ToolNode
from plait.nodes.builtin.variables import AssignNode, MergeNode

BUILTIN_NODE_TYPES: tuple[type[Node[Any]], ...] = (
    # inputs and outputs
    StartNode,
    OutputNode,
    MessageNode,
    # models and tools
    LlmNode,
    CategorizeNode,
    AgentNode,
    ToolNode,
    HttpNode,
    RetrievalNode,
    # code
    CodeNode,
    ComponentNode,
    # branching and flow control
    IfNode,
    SwitchNode,
    LoopNode,
    MapNode,
    SubflowNode,
    HumanNode,
    DelayNode,
    # data and variables
    DataOpsNode,
    ListOpsNode,
    TextNode,
    TransformNode,
    AssignNode,
    MergeNode,
    # databases and files
    SqlNode,
    DocumentNode,
    SpreadsheetNode,
)

__all__ = ["BUILTIN_NODE_TYPES"]
