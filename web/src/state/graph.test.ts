import { describe, expect, it } from "vitest";
import types from "../test/node-types.fixture.json";
import type { FlowDocument, NodeType } from "../types";
import {
  addNode,
  bodyFields,
  bodyPrefix,
  drawnOutputs,
  edgeSourcePorts,
  graphAt,
  insertOnEdge,
  updateGraphAt,
  commit,
  connect,
  connectionProblem,
  copy,
  defaultConfig,
  deleteItems,
  edgeKey,
  emptyDocument,
  history,
  moveNodes,
  paste,
  portsOf,
  redo,
  referenceSuggestions,
  renameNode,
  undo,
  uniqueId,
  upstreamOf,
} from "./graph";

const byName = new Map((types as NodeType[]).map((t) => [t.name, t]));

function build(): FlowDocument {
  let d = emptyDocument("f", "F");
  for (const [t, x] of [["start", 0], ["switch", 200], ["message", 400], ["output", 600]] as const) {
    d = addNode(d, t, { x, y: 0 }, byName.get(t)).doc;
  }
  d = connect(d, { source: "start", target: "switch" });
  d = connect(d, { source: "switch", sourcePort: "case_1", target: "message" });
  d = connect(d, { source: "message", target: "output" });
  return d;
}

describe("canvas state", () => {
  it("adds nodes with fresh valid ids and schema defaults", () => {
    let d = emptyDocument("f", "F");
    d = addNode(d, "message", { x: 10.4, y: 20.6 }, byName.get("message")).doc;
    const r = addNode(d, "message", { x: 0, y: 0 }, byName.get("message"));
    expect(r.id).toBe("message_2");
    expect(r.doc.nodes[0].position).toEqual({ x: 10, y: 21 });
    expect(uniqueId("inputs", new Set())).toBe("inputs_node");
    expect(uniqueId("a.b c", new Set())).toBe("a_b_c");
    const human = defaultConfig(byName.get("human"));
    expect(human.blocking).toBe(true);
  });

  it("connects ports, omitting the default port names, and refuses bad edges", () => {
    const d = build();
    expect(d.edges).toEqual([
      { source: "start", target: "switch" },
      { source: "switch", target: "message", source_port: "case_1" },
      { source: "message", target: "output" },
    ]);
    expect(connect(d, { source: "start", target: "switch" })).toBe(d); // duplicate
    expect(connectionProblem(d, { source: "output", target: "start" })).toMatch(/cycle/);
    expect(connectionProblem(d, { source: "message", target: "message" })).toMatch(/itself/);
    expect(connectionProblem(d, { source: "nope", target: "message" })).toMatch(/unknown/);
    expect(edgeKey(d.edges[1])).toBe("switch:case_1->message:in");
  });

  it("derives branch ports from config: switch cases + else, human actions", () => {
    const sw = { id: "s", type: "switch", config: { cases: [{ name: "billing", when: [] }, { when: [] }] } };
    expect(portsOf(sw, byName.get("switch")).outputs).toEqual(["billing", "case_2", "else"]);
    const h = { id: "h", type: "human", config: { actions: ["approve", "reject"] } };
    expect(portsOf(h, byName.get("human")).outputs).toEqual(["approve", "reject"]);
    expect(portsOf({ id: "i", type: "if" }, byName.get("if")).outputs).toEqual(["true", "false"]);
    expect(portsOf({ id: "s0", type: "start" }, byName.get("start")).inputs).toEqual([]);
  });

  it("deletes nodes with their edges, and edges by key", () => {
    const d = build();
    const a = deleteItems(d, ["message"]);
    expect(a.nodes.map((n) => n.id)).toEqual(["start", "switch", "output"]);
    expect(a.edges).toEqual([{ source: "start", target: "switch" }]);
    const b = deleteItems(d, [], ["start:out->switch:in"]);
    expect(b.edges).toHaveLength(2);
    expect(deleteItems(d, [], [])).toBe(d);
  });

  it("undoes and redoes, and a new edit drops the redo stack", () => {
    let h = history(build());
    const first = h.present;
    h = commit(h, moveNodes(h.present, { start: { x: 5, y: 5 } }));
    h = commit(h, deleteItems(h.present, ["output"]));
    expect(h.present.nodes).toHaveLength(3);
    h = undo(h);
    expect(h.present.nodes).toHaveLength(4);
    h = undo(h);
    expect(h.present).toBe(first);
    expect(undo(h)).toBe(h);
    h = redo(h);
    expect(h.present.nodes[0].position).toEqual({ x: 5, y: 5 });
    h = commit(h, deleteItems(h.present, ["start"]));
    expect(h.future).toHaveLength(0);
    expect(commit(h, h.present)).toBe(h);
  });

  it("copies the selection with its inner edges and pastes it with new ids", () => {
    const d = build();
    const clip = copy(d, ["switch", "message"]);
    expect(clip.edges).toEqual([{ source: "switch", target: "message", source_port: "case_1" }]);
    const r = paste(d, clip);
    expect(r.ids).toEqual(["switch_2", "message_2"]);
    expect(r.doc.edges.at(-1)).toEqual({ source: "switch_2", target: "message_2", source_port: "case_1" });
    expect(r.doc.nodes.at(-1)!.position).toEqual({ x: 440, y: 40 });
    // pasting twice gives fresh ids again
    expect(paste(r.doc, clip).ids).toEqual(["switch_3", "message_3"]);
  });

  it("renames a node and its edges follow; refuses bad or taken ids", () => {
    const d = build();
    const r = renameNode(d, "message", "reply");
    expect("doc" in r && r.doc.edges.map((e) => e.target)).toEqual(["switch", "reply", "output"]);
    expect(renameNode(d, "message", "output")).toEqual({ error: "'output' is taken" });
    expect(renameNode(d, "message", "a.b")).toHaveProperty("error");
    expect(renameNode(d, "message", "vars")).toHaveProperty("error");
  });

  it("suggests upstream nodes, their last outputs, inputs and variables", () => {
    const d = { ...build(), inputs: { type: "object", properties: { query: { type: "string" } } }, variables: { count: 0 } };
    expect(upstreamOf(d, "output")).toEqual(["message", "switch", "start"]);
    const s = referenceSuggestions(d, "output", { message: { content: "hi" } });
    expect(s).toEqual(["message", "message.content", "switch", "start", "inputs.query", "vars.count"]);
    expect(referenceSuggestions(d, "start")).toEqual(["inputs.query", "vars.count"]);
  });
});

describe("bodies (loop, map)", () => {
  const loopType = {
    name: "loop",
    title: "Loop",
    description: "",
    category: "flow",
    input_ports: ["in"],
    output_ports: ["out"],
    config_schema: {
      $defs: { GraphSpec: { properties: { nodes: {}, edges: {} } } },
      properties: { body: { $ref: "#/$defs/GraphSpec" }, max_iterations: { type: "integer" } },
    },
  } as NodeType;
  const doc: FlowDocument = {
    nodes: [
      { id: "start", type: "start" },
      {
        id: "loop",
        type: "loop",
        config: { max_iterations: 3, body: { nodes: [{ id: "inner", type: "map", config: { body: { nodes: [{ id: "deep", type: "x" }], edges: [] } } }], edges: [] } },
      },
    ],
    edges: [{ source: "start", target: "loop" }],
  };
  const path = [{ node: "loop", field: "body" }];

  it("finds the fields that hold a graph", () => {
    expect(bodyFields(loopType)).toEqual(["body"]);
    expect(bodyFields(undefined)).toEqual([]);
  });
  it("reads the graph at a path, and null for a path that is gone", () => {
    expect(graphAt(doc, [])).toBe(doc);
    expect(graphAt(doc, path)!.nodes.map((n) => n.id)).toEqual(["inner"]);
    expect(graphAt(doc, [...path, { node: "inner", field: "body" }])!.nodes.map((n) => n.id)).toEqual(["deep"]);
    expect(graphAt(doc, [{ node: "nope", field: "body" }])).toBeNull();
  });
  it("writes an edit into the body inside the node's config, keeping the rest", () => {
    const next = updateGraphAt(doc, path, (g) => addNode(g, "message", { x: 5, y: 5 }).doc);
    const loop = next.nodes.find((n) => n.id === "loop")!;
    expect(loop.config!.max_iterations).toBe(3);
    expect(loop.config!.body.nodes.map((n: any) => n.id)).toEqual(["inner", "message"]);
    expect(doc.nodes[1].config!.body.nodes).toHaveLength(1); // not mutated
    const deep = updateGraphAt(next, [...path, { node: "inner", field: "body" }], (g) => deleteItems(g, ["deep"]));
    expect(graphAt(deep, [...path, { node: "inner", field: "body" }])!.nodes).toEqual([]);
  });
  it("returns the same document when the edit changes nothing", () => {
    expect(updateGraphAt(doc, path, (g) => g)).toBe(doc);
    expect(bodyPrefix([...path, { node: "inner", field: "body" }])).toBe("loop.body/inner.body/");
  });
});

describe("edges and ports", () => {
  it("keeps every port an edge leaves from, marking the undeclared ones", () => {
    const used = edgeSourcePorts([
      { source: "c", source_port: "billing", target: "a" },
      { source: "c", source_port: "else", target: "b" },
      { source: "c", source_port: "billing", target: "d" },
    ]);
    expect(used.get("c")).toEqual(["billing", "else"]);
    expect(drawnOutputs(["out"], used.get("c"))).toEqual({ outputs: ["out", "billing", "else"], stray: ["billing", "else"] });
    expect(drawnOutputs(["billing", "else"], used.get("c")).stray).toEqual([]);
  });
  it("inserts a node on an edge, keeping the outer ports", () => {
    const doc: FlowDocument = {
      nodes: [
        { id: "a", type: "if" },
        { id: "b", type: "x" },
        { id: "m", type: "x" },
      ],
      edges: [{ source: "a", source_port: "true", target: "b" }],
    };
    const next = insertOnEdge(doc, edgeKey(doc.edges[0]), "m");
    expect(next.edges).toEqual([
      { source: "a", source_port: "true", target: "m" },
      { source: "m", target: "b" },
    ]);
    expect(insertOnEdge(doc, "nope", "m")).toBe(doc);
  });
});
