import { act } from "react";
import { createRoot } from "react-dom/client";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { reduceAll, startingRun } from "../state/run";
import types from "../test/node-types.fixture.json";
import type { FlowDocument, NodeType } from "../types";
import FlowCanvas, { nodeStatus } from "./FlowCanvas";

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
const byName = new Map((types as NodeType[]).map((t) => [t.name, t]));

beforeAll(() => {
  // jsdom has no layout: React Flow only needs these to exist
  (globalThis as any).ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  };
  (globalThis as any).DOMMatrixReadOnly ??= class {
    m22 = 1;
    constructor() {}
  };
});

let root: ReturnType<typeof createRoot> | null = null;
afterEach(() => {
  act(() => root?.unmount());
  document.body.innerHTML = "";
});

const doc: FlowDocument = {
  nodes: [
    { id: "start", type: "start", position: { x: 0, y: 0 } },
    { id: "route", type: "switch", position: { x: 200, y: 0 }, config: { cases: [{ name: "billing", when: [{ ref: "inputs.q" }] }] } },
    { id: "bill", type: "message", position: { x: 400, y: 0 }, config: { text: "b" } },
    { id: "other", type: "message", position: { x: 400, y: 100 }, config: {} },
  ],
  edges: [
    { source: "start", target: "route" },
    { source: "route", source_port: "billing", target: "bill" },
    { source: "route", source_port: "else", target: "other" },
  ],
};

describe("FlowCanvas", () => {
  it("draws one handle per port, problems and run states on the nodes", () => {
    const host = document.createElement("div");
    host.style.width = "800px";
    host.style.height = "600px";
    document.body.appendChild(host);
    root = createRoot(host);
    const run = reduceAll(startingRun(), [
      { seq: 1, type: "node_started", run_id: "r", node_id: "start" },
      { seq: 2, type: "node_finished", run_id: "r", node_id: "start", ok: true, output: {} },
      { seq: 3, type: "node_started", run_id: "r", node_id: "route" },
      { seq: 4, type: "node_finished", run_id: "r", node_id: "route", ok: true, branch: ["billing"] },
      { seq: 5, type: "node_skipped", run_id: "r", node_id: "other" },
      { seq: 6, type: "node_started", run_id: "r", node_id: "bill" },
      { seq: 7, type: "node_token", run_id: "r", node_id: "bill", delta: "streaming…" },
    ]);
    act(() =>
      root!.render(
        <FlowCanvas doc={doc} types={byName} run={run} problems={{ other: ["config.text: Field required"] }} selected={new Set(["bill"])} />,
      ),
    );
    const q = (id: string) => host.querySelector<HTMLElement>(`[data-testid="${id}"]`);
    expect(q("node-start")!.dataset.status).toBe("ok");
    expect(q("node-route")!.dataset.status).toBe("ok");
    expect(q("node-bill")!.dataset.status).toBe("running");
    expect(q("node-other")!.dataset.status).toBe("skipped");
    expect(q("node-other")!.dataset.problems).toBe("1");
    expect(q("node-problems-other")!.textContent).toContain("Field required");
    expect(q("node-preview-bill")!.textContent).toBe("streaming…");
    expect(q("handle-route-out-billing")).not.toBeNull();
    expect(q("handle-route-out-else")).not.toBeNull();
    expect(q("handle-route-in-in")).not.toBeNull();
    expect(q("handle-start-in-in")).toBeNull(); // a trigger has no input
    expect(q("node-bill")!.className).toContain("selected");
  });

  it("dims the nodes a cancelled or failed run never reached, not those of a running one", () => {
    const events = [
      { seq: 1, type: "node_started", run_id: "r", node_id: "start" },
      { seq: 2, type: "node_finished", run_id: "r", node_id: "start", ok: true, output: {} },
      { seq: 3, type: "node_started", run_id: "r", node_id: "route" },
    ];
    const running = reduceAll(startingRun(), events);
    expect(nodeStatus(running, "bill")).toBe("pending");
    for (const status of ["cancelled", "failed"]) {
      const stopped = reduceAll(startingRun(), [...events, { seq: 4, type: "run_finished", run_id: "r", status }]);
      expect(nodeStatus(stopped, "start")).toBe("ok");
      expect(nodeStatus(stopped, "route")).toBe(status === "cancelled" ? "cancelled" : "error");
      expect(nodeStatus(stopped, "bill")).toBe("unreached");
    }
    const completed = reduceAll(startingRun(), [...events, { seq: 4, type: "run_finished", run_id: "r", status: "completed" }]);
    expect(nodeStatus(completed, "bill")).toBe("idle");
  });

  it("draws the ports a categorize node's edges use, provisional until the server says, stray after", () => {
    const host = document.createElement("div");
    document.body.appendChild(host);
    root = createRoot(host);
    const categorize = { name: "categorize", title: "Categorize", description: "", category: "ai", config_schema: {}, input_ports: ["in"], output_ports: "dynamic", ports_from_config: true } as NodeType;
    const types2 = new Map([...byName, ["categorize", categorize]]);
    const cat: FlowDocument = {
      nodes: [
        { id: "c", type: "categorize", position: { x: 0, y: 0 }, config: { provider: "openai", categories: [{ name: "billing" }, { name: "bug" }] } },
        { id: "a", type: "message", position: { x: 300, y: 0 } },
        { id: "b", type: "message", position: { x: 300, y: 100 } },
        { id: "e", type: "message", position: { x: 300, y: 200 } },
      ],
      edges: ["billing", "bug", "else"].map((p, i) => ({ source: "c", source_port: p, target: ["a", "b", "e"][i] })),
    };
    const q = (id: string) => host.querySelector<HTMLElement>(`[data-testid="${id}"]`);
    act(() => root!.render(<FlowCanvas doc={cat} types={types2} selected={new Set()} />));
    for (const p of ["billing", "bug", "else"]) {
      expect(q(`handle-c-out-${p}`)).not.toBeNull();
      expect(q(`handle-c-out-${p}`)!.className).not.toContain("stray-port");
    }
    expect(q("handle-c-out-out")).toBeNull(); // no made-up default port
    expect(q("node-summary-c")!.textContent).toBe("openai → billing, bug");
    act(() => root!.render(<FlowCanvas doc={cat} types={types2} portOverrides={{ c: ["billing", "else"] }} selected={new Set()} />));
    expect(q("handle-c-out-bug")!.className).toContain("stray-port");
    expect(q("handle-c-out-billing")!.className).not.toContain("stray-port");
  });
});
