"""Importing RAGFlow agent documents (plait.spec.formats.ragflow): the real RAGFlow documents in
ragflow_fixtures/ (copied from ../shared/fixtures/ragflow, Apache-2.0, see its README) and small
documents written from the DSL's rules (seed 003, sections 4-5) for the shapes they lack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plait.engine.api import resume, run
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.flow import load_flow
from plait.llm.scripted import ScriptedProvider
from plait.nodes.registry import NodeRegistry, default_registry
from plait.spec.formats import RagflowImportError, import_ragflow, is_ragflow
from plait.tools.builtin import default_tools

FIXTURES = Path(__file__).parent / "ragflow_fixtures"
TOOLS = default_tools().names()


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def with_retrieval() -> NodeRegistry:
    """The built-in registry (it has issue 16's `retrieval` node now)."""
    return default_registry()


# ------------------------------------------------------------------------------- the fixtures

# Which fixture imports, and which is refused naming exactly which components.
OUTCOMES: dict[str, tuple[str, list[str]]] = {
    "agent_msg": ("ok", []),
    "dfx_picture_parser": ("ok", []),
    "questions_category": ("ok", []),
    "subaget": ("ok", []),
    "switch": ("ok", []),
    "all": ("ok", []),
    "browser": ("ragflow_unsupported", ["Browser:BusyHatsSink"]),
    "resume": (
        "ragflow_ingestion",
        [
            "File",
            "Parser:HipSignsRhyme",
            "Tokenizer:KindHandsWin",
            "TitleChunker:FlatMiceFix",
            "Extractor:ThreeDrinksAct",
            "Extractor:ItchyFoxesStrive",
            "Extractor:BusyClocksRush",
            "Extractor:CuteSignsCut",
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_every_fixture_imports_valid_or_is_refused_by_name(name: str) -> None:
    outcome, components = OUTCOMES[name]
    data = load(name)
    assert is_ragflow(data)
    if outcome == "ok":
        result = import_ragflow(data, catalog=default_registry(), tools=TOOLS)
        assert result.problems == []
        assert result.document["schema"] == "plait/flow@1"
        return
    with pytest.raises(RagflowImportError) as err:
        import_ragflow(data, catalog=default_registry(), tools=TOOLS)
    assert err.value.code == outcome
    assert [c["id"] for c in err.value.components] == components
    if outcome == "ragflow_ingestion":
        assert "an ingestion pipeline, not an agent" in err.value.message
    else:
        assert all(c["reason"] for c in err.value.components)  # says what to do


def test_all_json_imports_when_a_retrieval_node_exists() -> None:
    result = import_ragflow(load("all"), catalog=with_retrieval(), tools=TOOLS)
    assert result.problems == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert nodes["Retrieval:KBSearch"]["type"] == "retrieval"
    assert nodes["Retrieval:KBSearch"]["config"]["top_n"] == 5
    loop = nodes["Loop:InputUntil1"]
    body = {n["id"]: n for n in loop["config"]["body"]["nodes"]}
    # LoopItem is gone; ExitLoop sets the flag the loop's `until` tests; the body's input, read
    # after the loop, is copied to a variable.
    assert "LoopItem:InputUntil1Start" not in body
    assert body["ExitLoop:LoopExit"]["type"] == "assign"
    assert {"source": "Switch:LoopCheck", "source_port": "case_1", "target": "ExitLoop:LoopExit"} in loop[
        "config"
    ]["body"]["edges"]
    assert not any("does not exist" in w and "ExitLoop" in w for w in result.warnings)
    assert {"ref": "{{vars.Loop_InputUntil1_exit}}", "op": "==", "value": True} in loop["config"]["until"]
    assert body["UserFillUp:LoopInput_value"]["requires"] == ["UserFillUp:LoopInput"]
    assert nodes["Message:LoopDone"]["config"]["text"].endswith("{{vars.UserFillUp_LoopInput.value}}")
    iteration = nodes["Iteration:IterateList"]
    assert iteration["type"] == "map"
    assert iteration["config"]["items"] == "{{StringTransform:SplitCSV}}"
    fmt = {n["id"]: n for n in iteration["config"]["body"]["nodes"]}["StringTransform:FmtItem"]
    assert fmt["config"]["template"] == "{{index}}: {{item}}"
    # Switch: 12 cases in order, the default branch on `else`; a missing target is dropped.
    route = [e for e in result.document["edges"] if e["source"] == "Switch:Route"]
    assert len(nodes["Switch:Route"]["config"]["cases"]) == 12
    assert {"source": "Switch:Route", "source_port": "else", "target": "Message:Help"} in route
    assert any("CodeExec:FunnyBroomsShare" in w for w in result.warnings)
    # env.* are conversation variables: flow variables in plait.
    assert result.document["variables"]["counter"] == 0
    assert nodes["VariableAssigner:IncCounter"]["config"]["assignments"] == [
        {"variable": "counter", "op": "+=", "value": 1}
    ]


def test_graph_only_and_components_shapes_import_the_same() -> None:
    data = load("agent_msg")
    graph_only = {k: v for k, v in data.items() if k != "components"}
    a = import_ragflow(data, catalog=default_registry()).document
    b = import_ragflow(graph_only, catalog=default_registry()).document

    def key(doc: dict[str, Any]) -> Any:
        return sorted(n["id"] for n in doc["nodes"]), sorted(
            json.dumps(e, sort_keys=True) for e in doc["edges"]
        )

    assert key(a) == key(b)


def test_positions_and_names_are_kept_for_the_canvas() -> None:
    doc = import_ragflow(load("switch"), catalog=default_registry()).document
    switch = next(n for n in doc["nodes"] if n["type"] == "switch")
    assert switch["label"] == "条件_0"
    assert set(switch["position"]) == {"x", "y"}


async def test_switch_fixture_takes_each_branch() -> None:
    doc = import_ragflow(load("switch"), catalog=default_registry()).document
    seen = {}
    for query in ("上海", "北京", "深圳", "其他"):
        result = await run(doc, {"query": query})
        assert result.status == "completed"
        seen.update(result.outputs)
    assert seen == {
        "Message:HappyLandsFly": "上海shanghai",
        "Message:RedHousesStart": "北京beijing",
        "Message:ShakyRingsInvite": "深圳shenzhen",
        "Message:WeakPlumsMove": "其他不知道\n\n",
    }


async def test_agent_fixture_runs_with_the_scripted_provider() -> None:
    doc = import_ragflow(load("agent_msg"), catalog=default_registry()).document
    provider = ScriptedProvider([{"content": "Hello from the agent"}])
    result = await run(doc, {"query": "hi"}, providers={"scripted": provider})
    assert result.status == "completed", result.error
    assert result.outputs == {"Message:MajorNumbersPlay": "Hello from the agent"}


async def test_all_json_loop_waits_for_each_input_and_exits_on_1() -> None:
    registry = with_retrieval()
    doc = load_flow(import_ragflow(load("all"), catalog=registry).document, registry=registry)
    cp = InMemoryCheckpointer()
    result = await run(doc, {"query": "go"}, checkpointer=cp)
    assert result.status == "waiting"
    result = await resume(doc, result.run_id, {"demo": "loop"}, checkpointer=cp)
    assert result.status == "waiting"  # the loop's first input
    result = await resume(doc, result.run_id, {"value": "again"}, checkpointer=cp)
    assert result.status == "waiting"
    result = await resume(doc, result.run_id, {"value": "1"}, checkpointer=cp)
    assert result.status == "completed", result.error
    assert result.outputs["Message:LoopDone"].endswith("1")


async def test_all_json_iteration_maps_each_item() -> None:
    registry = with_retrieval()
    doc = load_flow(import_ragflow(load("all"), catalog=registry).document, registry=registry)
    cp = InMemoryCheckpointer()
    result = await run(doc, {"query": "go"}, checkpointer=cp)
    result = await resume(doc, result.run_id, {"demo": "iteration"}, checkpointer=cp)
    result = await resume(doc, result.run_id, {"csv": "a,b"}, checkpointer=cp)
    assert result.status == "completed", result.error
    assert '"0: a"' in result.outputs["Message:IterDone"] and '"1: b"' in result.outputs["Message:IterDone"]


# ------------------------------------------------------------------------------- DSL shapes


def component(name: str, params: dict[str, Any], down: list[str] = (), **extra: Any) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "obj": {"component_name": name, "params": params},
        "downstream": list(down),
        "upstream": [],
        **extra,
    }


def test_v1_components_and_references() -> None:
    data = {
        "components": {
            "begin": component("Begin", {"prologue": "hi"}, ["RewriteQuestion:A"]),
            "RewriteQuestion:A": component(
                "RewriteQuestion", {"llm_id": "gpt-4o@OpenAI"}, ["KeywordExtract:B"]
            ),
            "KeywordExtract:B": component(
                "KeywordExtract", {"llm_id": "gpt-4o@OpenAI", "top_n": 4}, ["DuckDuckGo:C"]
            ),
            "DuckDuckGo:C": component(
                "DuckDuckGo", {"query": "KeywordExtract:B@content", "top_n": 3}, ["Relevant:D"]
            ),
            "Relevant:D": component(
                "Relevant",
                {"llm_id": "gpt-4o@OpenAI", "yes": "Generate:E", "no": "Answer:F"},
                ["Generate:E", "Answer:F"],
            ),
            "Generate:E": component(
                "Generate",
                {
                    "llm_id": "claude-x@Anthropic",
                    "prompt": "Use {DuckDuckGo:C@formalized_content}",
                    "max_retries": 2,
                    "delay_after_error": 3,
                    "exception_method": "comment",
                    "exception_default_value": "sorry",
                },
                ["Answer:F"],
            ),
            "Answer:F": component(
                "Answer", {"content": ["{Generate:E@content} / {RewriteQuestion:A@content}"]}
            ),
        }
    }
    result = import_ragflow(data, catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert (
        nodes["RewriteQuestion:A"]["type"] == "llm"
        and nodes["RewriteQuestion:A"]["config"]["provider"] == "openai"
    )
    assert nodes["DuckDuckGo:C"]["config"] == {
        "tool": "web_search",
        "args": {"query": "{{KeywordExtract:B}}", "max_results": 3},
    }
    assert [c["name"] for c in nodes["Relevant:D"]["config"]["categories"]] == ["yes", "no"]
    gen = nodes["Generate:E"]
    assert gen["config"]["provider"] == "anthropic" and gen["config"]["system"] == "Use {{DuckDuckGo:C}}"
    assert gen["retry"] == {"max_attempts": 3, "delay_s": 3.0, "backoff": 1.0}
    assert nodes["Answer:F"]["type"] == "message"
    assert nodes["Answer:F"]["config"]["text"] == "{{Generate:E}} / {{RewriteQuestion:A}}"
    # exception_method "comment": the default value (on_error default), not a warning any more
    assert gen["on_error"] == {"mode": "default", "default": "sorry"}
    assert nodes["DuckDuckGo:C"]["timeout_s"] == 12.0  # RAGFlow's per-class timeout of search tools
    assert result.document["metadata"]["ragflow"]["components"]["Generate:E"] == "Generate"


def test_agent_tools_mcp_and_categorize_routes() -> None:
    data = {
        "components": {
            "begin": component(
                "Begin",
                {"inputs": {"q": {"name": "Question", "type": "line", "optional": False}}},
                ["Categorize:C"],
            ),
            "Categorize:C": component(
                "Categorize",
                {
                    "llm_id": "m@OpenAI",
                    "query": "begin@q",
                    "category_description": {
                        "问候": {"description": "greetings", "examples": "hi\nhello", "to": ["Agent:A"]},
                        "other": {"description": "", "to": ["Message:M"]},
                    },
                },
                ["Agent:A", "Message:M"],
            ),
            "Agent:A": component(
                "Agent",
                {
                    "llm_id": "m@OpenAI",
                    "prompts": [{"role": "user", "content": "{begin@q}"}],
                    "tools": [{"component_name": "TavilySearch"}, {"component_name": "Wikipedia"}],
                    "mcp": [
                        {"mcp_id": "maps", "tools": {"weather": {"enabled": True}, "off": {"enabled": False}}}
                    ],
                    "max_rounds": 3,
                },
                ["Message:M"],
            ),
            "Message:M": component("Message", {"content": ["{Agent:A@content}{Categorize:C@category_name}"]}),
        }
    }
    result = import_ragflow(data, catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    doc = result.document
    nodes = {n["id"]: n for n in doc["nodes"]}
    assert doc["inputs"] == {
        "type": "object",
        "properties": {"q": {"title": "Question", "type": "string"}},
        "required": ["q"],
    }
    cat = nodes["Categorize:C"]["config"]
    assert cat["input"] == "{{begin.q}}"
    assert cat["categories"][0] == {
        "name": "category",
        "description": "问候: greetings",
        "examples": ["hi", "hello"],
    }
    edges = [(e.get("source_port"), e["target"]) for e in doc["edges"] if e["source"] == "Categorize:C"]
    assert edges == [("category", "Agent:A"), ("other", "Message:M"), ("else", "Message:M")]
    agent = nodes["Agent:A"]["config"]
    assert agent["tools"] == ["web_search", "wikipedia", "mcp:maps/weather"]
    assert agent["max_steps"] == 4 and agent["prompt"] == "{{begin.q}}"
    assert nodes["Message:M"]["config"]["text"] == "{{Agent:A.content}}{{Categorize:C.category}}"


def test_every_unsupported_component_is_named_in_one_error() -> None:
    data = {
        "components": {
            "begin": component("Begin", {}, ["Agent:A"]),
            "Agent:A": component(
                "Agent",
                {
                    "llm_id": "m@OpenAI",
                    "tools": [{"component_name": "Google"}, {"component_name": "QWeather"}],
                },
                ["Frobnicate:X"],
            ),
            "Frobnicate:X": component("Frobnicate", {}, ["Browser:S"]),
            "Browser:S": component("Browser", {}, ["CodeExec:J"]),
            "CodeExec:J": component("CodeExec", {"lang": "javascript", "script": "1"}),
        }
    }
    with pytest.raises(RagflowImportError) as err:
        import_ragflow(data, catalog=default_registry(), tools=TOOLS)
    named = [(c["id"], c["component"]) for c in err.value.components]
    assert named == [
        ("Agent:A", "Agent"),
        ("Agent:A", "Agent"),
        ("Frobnicate:X", "Frobnicate"),
        ("Browser:S", "Browser"),
        ("CodeExec:J", "CodeExec"),
    ]
    text = err.value.message
    assert (
        "'Google'" in text
        and "'QWeather'" in text
        and "Python only" in text
        and "no browser-driving node" in text
    )


def test_not_ragflow_and_not_json_are_clear_errors() -> None:
    with pytest.raises(RagflowImportError) as err:
        import_ragflow({"schema": "plait/flow@1", "nodes": []})
    assert err.value.code == "ragflow_format"
    with pytest.raises(RagflowImportError) as err:
        import_ragflow("{not json")
    assert err.value.code == "ragflow_syntax"
    assert not is_ragflow({"components": {"a": 1}})
    assert not is_ragflow("text")


def test_text_input_is_parsed() -> None:
    text = (FIXTURES / "switch.json").read_text(encoding="utf-8")
    assert import_ragflow(text, catalog=default_registry()).problems == []


def test_exception_goto_becomes_the_error_port() -> None:
    data = {
        "components": {
            "begin": component("Begin", {}, ["Agent:A"]),
            "Agent:A": component(
                "Agent",
                {"llm_id": "m@OpenAI", "exception_method": "goto", "exception_goto": ["Message:Oops"]},
                ["Message:Ok", "Message:Oops"],
            ),
            "Message:Ok": component("Message", {"content": ["{Agent:A@content}"]}),
            "Message:Oops": component("Message", {"content": ["sorry: {Agent:A@_ERROR}"]}, ["Message:After"]),
            "Message:After": component("Message", {"content": ["after"]}),
        }
    }
    result = import_ragflow(data, catalog=default_registry())
    assert result.problems == [] and result.warnings == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert list(nodes) == ["begin", "Agent:A", "Message:Ok", "Message:Oops", "Message:After"]
    assert nodes["Agent:A"]["on_error"] == {"mode": "route"}
    assert nodes["Message:Oops"]["config"]["text"] == "sorry: {{Agent:A.error}}"
    edges = result.document["edges"]
    assert {"source": "Agent:A", "target": "Message:Ok"} in edges
    assert {"source": "Agent:A", "source_port": "error", "target": "Message:Oops"} in edges


def interactive_template() -> dict[str, Any]:
    """RAGFlow's `agent/templates/user_interaction.json`, shortened: a template wraps its DSL."""
    agent = {
        "llm_id": "qwen-turbo@Tongyi-Qianwen",
        "max_retries": 3,
        "delay_after_error": 1,
        "max_rounds": 1,
        "tools": [],
        "mcp": [],
    }
    return {
        "id": 27,
        "title": {"en": "Interactive Agent", "zh": "可交互的 Agent"},
        "description": {"en": "Users can intervene during the run."},
        "canvas_type": "Agent",
        "dsl": {
            "components": {
                "Agent:LargeFliesMelt": component(
                    "Agent",
                    {**agent, "prompts": [{"content": "User query:{sys.query}", "role": "user"}]},
                    ["UserFillUp:GoldBroomsRelate"],
                ),
                "Agent:TangyWordsType": component(
                    "Agent",
                    {
                        **agent,
                        "prompts": [
                            {
                                "role": "user",
                                "content": "Plan: {Agent:LargeFliesMelt@content}\nFeedback:{UserFillUp:GoldBroomsRelate@instructions}",
                            }
                        ],
                        "tools": [
                            {
                                "component_name": "Retrieval",
                                "name": "Retrieval",
                                "params": {"kb_ids": [], "top_n": 8},
                                "id": "Retrieval:TangyWordsType",
                            }
                        ],
                    },
                    ["Message:FreshWallsStudy"],
                ),
                "Message:FreshWallsStudy": component(
                    "Message", {"content": ["{Agent:TangyWordsType@content}"]}
                ),
                "UserFillUp:GoldBroomsRelate": component(
                    "UserFillUp",
                    {
                        "enable_tips": True,
                        "inputs": {
                            "instructions": {
                                "name": "instructions",
                                "optional": False,
                                "options": [],
                                "type": "paragraph",
                            }
                        },
                        "tips": "Here is my search plan:\n{Agent:LargeFliesMelt@content}\nAre you okay with it?",
                    },
                    ["Agent:TangyWordsType"],
                ),
                "begin": component("Begin", {}, ["Agent:LargeFliesMelt"]),
            },
            "globals": {"sys.conversation_turns": 0, "sys.files": [], "sys.query": "", "sys.user_id": ""},
            "graph": {"nodes": [], "edges": []},
        },
    }


def test_templates_unwrap_and_agent_tools_wait_for_their_plait_tool() -> None:
    assert "retrieval" in TOOLS  # issue 16's agent tool: RAGFlow's Retrieval tool maps to it
    result = import_ragflow(interactive_template(), catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    doc = result.document
    assert doc["name"] == "Interactive Agent"
    nodes = {n["id"]: n for n in doc["nodes"]}
    assert nodes["Agent:TangyWordsType"]["config"]["tools"] == ["retrieval"]
    assert nodes["UserFillUp:GoldBroomsRelate"]["config"]["message"].endswith(
        "{{Agent:LargeFliesMelt.content}}\nAre you okay with it?"
    )
    assert "{{UserFillUp:GoldBroomsRelate.instructions}}" in nodes["Agent:TangyWordsType"]["config"]["prompt"]


def test_ingestion_templates_are_refused_by_their_canvas_type() -> None:
    template = {
        "title": "General",
        "canvas_type": "Ingestion Pipeline",
        "canvas_category": "dataflow_canvas",
        "dsl": {"components": {"Chunk:A": component("SomethingNew", {})}},
    }
    with pytest.raises(RagflowImportError) as err:
        import_ragflow(template)
    assert err.value.code == "ragflow_ingestion"


def test_sub_agents_named_in_tools_or_only_on_the_canvas() -> None:
    """RAGFlow keeps a sub-agent in its parent's `tools` (by id, or with its params) and draws it
    with an `agentBottom` edge; the sub-agent may have no entry in `components`."""
    data = {
        "components": {
            "begin": component("Begin", {"mode": "task"}, ["Agent:Boss"]),
            "Agent:Boss": component(
                "Agent",
                {
                    "llm_id": "m@OpenAI",
                    "prompts": [{"role": "user", "content": "{sys.query}"}],
                    "tools": [
                        {"id": "Agent:ThemeAnalyst"},
                        {
                            "component_name": "Agent",
                            "id": "Agent:Inline",
                            "name": "Inline",
                            "params": {
                                "llm_id": "m@OpenAI",
                                "description": "inline helper",
                                "tools": [{"component_name": "Wikipedia"}],
                            },
                        },
                    ],
                },
                ["Message:M"],
            ),
            "Message:M": component("Message", {"content": ["{Agent:Boss@content}"]}),
        },
        "graph": {
            "nodes": [
                {
                    "id": "Agent:ThemeAnalyst",
                    "data": {
                        "label": "Agent",
                        "name": "Theme analyst",
                        "form": {"llm_id": "m@OpenAI", "sys_prompt": "主题", "description": "finds themes"},
                    },
                },
            ],
            "edges": [
                {
                    "source": "Agent:Boss",
                    "target": "Agent:ThemeAnalyst",
                    "sourceHandle": "agentBottom",
                    "targetHandle": "agentTop",
                }
            ],
        },
    }
    result = import_ragflow(data, catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert set(nodes) == {"begin", "Agent:Boss", "Message:M"}
    subs = nodes["Agent:Boss"]["config"]["sub_agents"]
    assert [(s["name"], s["description"]) for s in subs] == [
        ("Theme_analyst", "finds themes"),
        ("Inline", "inline helper"),
    ]
    assert subs[0]["agent"]["system"] == "主题" and subs[1]["agent"]["tools"] == ["wikipedia"]
    assert "tools" not in nodes["Agent:Boss"]["config"]


def test_v1_conversation_loop_becomes_one_turn() -> None:
    """RAGFlow's `agent/test/dsl_examples/retrieval_relevant_rewrite_and_generate.json` (v1): the
    Answer closes a conversation loop and a rewrite loops back to the retrieval."""
    data = {
        "components": {
            "begin": component("Begin", {"prologue": "Hi there!"}, ["answer:0"]),
            "answer:0": component("Answer", {}, ["retrieval:0"], upstream=["begin", "generate:0"]),
            "retrieval:0": component(
                "Retrieval", {"similarity_threshold": 0.2, "top_n": 6, "kb_ids": ["kb1"]}, ["relevant:0"]
            ),
            "relevant:0": component(
                "Relevant",
                {"llm_id": "deepseek-chat", "yes": "generate:0", "no": "rewrite:0"},
                ["generate:0", "rewrite:0"],
            ),
            "generate:0": component(
                "Generate",
                {"llm_id": "deepseek-chat", "prompt": "Knowledge base:\n{input}\nAnswer."},
                ["answer:0"],
            ),
            "rewrite:0": component("RewriteQuestion", {"llm_id": "deepseek-chat"}, ["retrieval:0"]),
        }
    }
    result = import_ragflow(data, catalog=with_retrieval(), tools=TOOLS)
    assert result.problems == []
    doc = result.document
    edges = {(e["source"], e.get("source_port", "out"), e["target"]) for e in doc["edges"]}
    assert ("begin", "out", "retrieval:0") in edges  # the Answer's entry goes straight on
    assert ("generate:0", "out", "answer:0") in edges  # ... and it shows the reply
    assert not any(src == "answer:0" for src, _, _ in edges)
    assert not any(src == "rewrite:0" for src, _, _ in edges)  # the rewrite loop is cut
    nodes = {n["id"]: n for n in doc["nodes"]}
    assert nodes["answer:0"]["config"]["text"] == "{{generate:0}}"
    # `{input}` is what reaches Generate past the Relevant router: the retrieval's output.
    assert nodes["generate:0"]["config"]["system"] == "Knowledge base:\n{{retrieval:0}}\nAnswer."
    assert any("closes a cycle" in w for w in result.warnings)
    assert any("v1's Answer" in w for w in result.warnings)


def test_v1_switch_and_iteration_examples() -> None:
    """RAGFlow's v1 `baidu_generate_and_switch.json` and `iteration.json`, shortened."""
    switch = {
        "components": {
            "begin": component("Begin", {}, ["tavily:0"]),
            "tavily:0": component("TavilySearch", {"api_key": "x"}, ["generate:0"]),
            "generate:0": component(
                "LLM",
                {"llm_id": "deepseek-chat", "sys_prompt": "Content:\n{tavily:0@formalized_content}"},
                ["switch:0"],
            ),
            "switch:0": component(
                "Switch",
                {
                    "conditions": [
                        {
                            "logical_operator": "or",
                            "items": [
                                {"cpn_id": "generate:0@content", "operator": "contains", "value": "yes"}
                            ],
                            "to": ["message:0"],
                        },
                        {
                            "logical_operator": "",
                            "items": [
                                {"cpn_id": "generate:0@content", "operator": "not contains", "value": "know"}
                            ],
                            "to": ["message:1"],
                        },
                    ],
                    "end_cpn_ids": ["message:2"],
                },
            ),
            "message:0": component("Message", {"content": ["YES"]}),
            "message:1": component("Message", {"content": ["NO"]}),
            "message:2": component("Message", {"content": ["ELSE"]}),
        }
    }
    result = import_ragflow(switch, catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert nodes["tavily:0"]["config"] == {"tool": "web_search", "input_param": "query"}
    assert any("API key in the document is not imported" in w for w in result.warnings)
    assert nodes["generate:0"]["config"]["system"] == "Content:\n{{tavily:0}}"
    cases = nodes["switch:0"]["config"]["cases"]
    assert cases[0]["when"] == [{"ref": "{{generate:0}}", "op": "contains", "value": "yes"}]
    assert cases[1] == {
        "when": [{"ref": "{{generate:0}}", "op": "not_contains", "value": "know"}],
        "logic": "and",
    }

    iteration = {
        "components": {
            "begin": component("Begin", {}, ["generate:0"]),
            "generate:0": component(
                "Agent", {"llm_id": "deepseek-chat", "sys_prompt": "Split '{sys.query}'"}, ["iteration:0"]
            ),
            "iteration:0": component("Iteration", {"items_ref": "generate:0@content"}, ["message:0"]),
            "iterationitem:0": component("IterationItem", {}, ["tavily:0"], parent_id="iteration:0"),
            "tavily:0": component(
                "TavilySearch", {"query": "iterationitem:0@result"}, ["generate:1"], parent_id="iteration:0"
            ),
            "generate:1": component(
                "Agent",
                {
                    "llm_id": "deepseek-chat",
                    "sys_prompt": "{tavily:0@formalized_content} about {iterationitem:0@result}",
                },
                ["iterationitem:0"],
                parent_id="iteration:0",
            ),
            "message:0": component("Message", {"content": ["{iteration:0@generate:1}"]}),
        }
    }
    result = import_ragflow(iteration, catalog=default_registry(), tools=TOOLS)
    assert result.problems == []
    nodes = {n["id"]: n for n in result.document["nodes"]}
    body = {n["id"]: n for n in nodes["iteration:0"]["config"]["body"]["nodes"]}
    assert body["tavily:0"]["config"]["args"] == {"query": "{{item}}"}
    assert body["generate:1"]["config"]["system"] == "{{tavily:0}} about {{item}}"
    assert body["iteration:0_generate_1"]["config"] == {
        "name": "generate:1",
        "value": "{{generate:1.content}}",
    }
    assert nodes["message:0"]["config"]["text"] == "{{iteration:0}}"


def test_malformed_fields_are_a_clear_error_naming_the_component() -> None:
    data = load("switch")
    switch = next(n for n in data["graph"]["nodes"] if n["id"] == "Switch:EmptySquidsJudge")
    switch["data"]["form"]["conditions"][0]["items"] = [
        {"cpn_id": "sys.query", "operator": "=", "value": "x"}
    ]
    switch["data"]["form"]["end_cpn_ids"] = 5  # not a list: read as none
    assert import_ragflow(data, catalog=default_registry()).problems == []
    data["graph"]["nodes"][0]["data"]["form"]["inputs"] = {"q": {"type": "options", "options": 3}}
    result = import_ragflow(data, catalog=default_registry())
    assert result.problems == []


ALL_BRANCHES = {
    "condition": ([{"x": "yes"}], "Message:CondYes", "命中 IF: x==yes"),
    "data_ops": ([], "Message:DataListDone", '"tag": "demo"'),
    "text": ([{"text": "a b c"}], "Message:TextDone", "merge: a|b|c"),
    "var_assigner": ([], "Message:VarDone", "env.counter=1"),
    "var_aggregator": ([], "Message:AggDone", "picked=1"),
    "categorize": ([{"text": "hello"}], "Message:CateOther", "分类结果=Other"),
    "code": ([{"x": 21}], "Message:CodeDone", "CodeExec.result=42"),
    "message": ([], "Message:Only", "Message 节点演示"),
    "wait_input": ([{"anything": "hi"}], "Message:WaitDone", "hi"),
    "retrieval": ([{"kb": "kb1", "query": "what"}], "Message:KBDone", "formalized_content:\n(未检索到内容)"),
}


@pytest.mark.parametrize("demo", sorted(ALL_BRANCHES))
async def test_all_json_branch_runs_through_its_pauses(demo: str) -> None:
    answers, message, text = ALL_BRANCHES[demo]
    registry = with_retrieval()
    doc = load_flow(import_ragflow(load("all"), catalog=registry).document, registry=registry)
    cp = InMemoryCheckpointer()

    def providers() -> dict[str, Any]:
        return {"scripted": ScriptedProvider([{"content": "Other"}])}

    result = await run(doc, {"query": "go"}, checkpointer=cp, providers=providers())
    for answer in [{"demo": demo}, *answers]:
        assert result.status == "waiting", result.error
        result = await resume(doc, result.run_id, answer, checkpointer=cp, providers=providers())
    assert result.status == "completed", result.error
    assert text in result.outputs[message]


async def test_categorize_and_sub_agent_fixtures_run_with_the_scripted_provider() -> None:
    doc = import_ragflow(load("questions_category"), catalog=default_registry()).document
    result = await run(
        doc, {"query": "how are you?"}, providers={"scripted": ScriptedProvider([{"content": "casual"}])}
    )
    assert result.outputs == {"Message:AngryTeamsKnock": "how are you?11111\n\n"}
    doc = import_ragflow(load("subaget"), catalog=default_registry()).document
    # The sub-agent's MCP server (named by its RAGFlow id) is not configured here: the call
    # fails and the error goes back to the lead agent, which answers.
    steps = [
        {"tool_calls": [{"name": "agent", "arguments": {"task": "weather in Paris"}}]},
        {"content": "It is sunny."},
    ]
    result = await run(doc, {"query": "weather?"}, providers={"scripted": ScriptedProvider(steps)})
    assert result.status == "completed", result.error
    assert result.outputs == {"Message:FieryDragonsTry": "It is sunny."}
