import { describe, expect, it } from "vitest";
import { idleRun, liveInputs, normalizeEvent, reduceAll, reduceRun, runStateFromDetail, startingRun, tokensOf } from "./run";

const R = "run-1";
// The events of a branching run as the SSE stream / event log has them (seq, type, run_id, node_id, data).
const events = [
  { seq: 1, type: "run_started", run_id: R, flow_id: "f", inputs: {} },
  { seq: 2, type: "node_started", run_id: R, node_id: "start", attempt: 1 },
  { seq: 3, type: "node_finished", run_id: R, node_id: "start", ok: true, output: { q: 1 }, duration_ms: 1.5, attempt: 1 },
  { seq: 4, type: "edge_fired", run_id: R, edge: "start:out->route:in", from: "start", to: "route" },
  { seq: 5, type: "node_started", run_id: R, node_id: "route", attempt: 1 },
  { seq: 6, type: "node_finished", run_id: R, node_id: "route", ok: true, output: { case: "a" }, branch: ["a"], attempt: 1 },
  { seq: 7, type: "edge_fired", run_id: R, edge: "route:a->llm:in", from: "route", to: "llm" },
  { seq: 8, type: "node_skipped", run_id: R, node_id: "other" },
  { seq: 9, type: "node_started", run_id: R, node_id: "llm", attempt: 1 },
  { seq: 10, type: "node_token", run_id: R, node_id: "llm", delta: "Hel" },
  { seq: 11, type: "node_token", run_id: R, node_id: "llm", delta: "lo" },
  { seq: 12, type: "node_tool_call", run_id: R, node_id: "llm", name: "search", args: { q: "x" } },
];

describe("run-event reducer", () => {
  it("turns events into node states: running, ok with branch, skipped, streamed tokens, tool calls", () => {
    const s = reduceAll(startingRun(), events);
    expect(s.runId).toBe(R);
    expect(s.status).toBe("running");
    expect(s.nodes.start).toMatchObject({ status: "ok", output: { q: 1 }, durationMs: 1.5 });
    expect(s.nodes.route.branch).toEqual(["a"]);
    expect(s.nodes.other.status).toBe("skipped");
    expect(s.nodes.llm).toMatchObject({ status: "running", preview: "Hello", toolCalls: [{ name: "search", args: { q: "x" } }] });
    expect(Object.keys(s.firedEdges)).toEqual(["start:out->route:in", "route:a->llm:in"]);
    expect(s.lastSeq).toBe(12);
  });

  it("applies each event once (a re-attached stream replays old seqs)", () => {
    const once = reduceAll(idleRun(), events);
    const twice = reduceAll(once, events);
    expect(twice).toBe(once);
    expect(twice.nodes.llm.preview).toBe("Hello");
  });

  it("a failed node is red with its error; run_finished ends running nodes", () => {
    let s = reduceAll(idleRun(), events);
    s = reduceAll(s, [
      { seq: 13, type: "node_finished", run_id: R, node_id: "llm", ok: false, error: "boom", attempt: 2 },
      { seq: 14, type: "error", run_id: R, node_id: "llm", message: "node 'llm' failed: boom" },
      { seq: 15, type: "run_finished", run_id: R, status: "failed", outputs: {}, usage: { total_tokens: 12 }, duration_ms: 40 },
    ]);
    expect(s.nodes.llm).toMatchObject({ status: "error", error: "boom", attempt: 2 });
    expect(s.status).toBe("failed");
    expect(s.error).toBe("node 'llm' failed: boom");
    expect(tokensOf(s.usage)).toBe(12);
  });

  it("cancelling marks the nodes still running as cancelled", () => {
    let s = reduceAll(idleRun(), events.slice(0, 10));
    s = reduceRun(s, normalizeEvent({ seq: 11, type: "run_finished", run_id: R, status: "cancelled" })!);
    expect(s.status).toBe("cancelled");
    expect(s.nodes.llm.status).toBe("cancelled");
  });

  it("a waiting run keeps its waiting node and resumes", () => {
    let s = reduceAll(idleRun(), [
      { seq: 1, type: "node_started", run_id: R, node_id: "review" },
      { seq: 2, type: "waiting", run_id: R, node_id: "review", node: "review", task: { kind: "human" } },
      { seq: 3, type: "run_finished", run_id: R, status: "waiting" },
    ]);
    expect(s.status).toBe("waiting");
    expect(s.nodes.review.status).toBe("waiting");
    s = reduceAll(s, [{ seq: 4, type: "node_finished", run_id: R, node_id: "review", ok: true, output: { action: "approve" }, branch: ["approve"] }]);
    expect(s.nodes.review.status).toBe("ok");
  });

  it("normalizes the flow channel's camelCase and nested forms", () => {
    expect(normalizeEvent({ type: "node_started", runId: "r", nodeId: "n" })).toMatchObject({ type: "node_started", runId: "r", nodeId: "n" });
    expect(normalizeEvent({ type: "node_token", data: { run_id: "r", node_id: "n", delta: "x" } })).toMatchObject({ runId: "r", nodeId: "n", delta: "x" });
    expect(normalizeEvent("nope")).toBeNull();
    expect(normalizeEvent({ foo: 1 })).toBeNull();
  });

  it("rebuilds the state of a stored run", () => {
    const s = runStateFromDetail({
      id: R, flow_id: "f", version: 1, status: "completed", outputs: { a: 1 }, error: null, usage: null,
      created_at: 0, started_at: 0, finished_at: 1, cancel_requested: false, inputs: {}, vars: {}, tasks: [], last_seq: 9,
      nodes: { a: { id: "a", status: "ok", output: 1, attempts: 2, duration_ms: 3, ports: ["x"] } },
    }, ["a:out->b:in"]);
    expect(s.nodes.a).toMatchObject({ status: "ok", attempt: 2, durationMs: 3, branch: ["x"] });
    expect(s.firedEdges).toEqual({ "a:out->b:in": true });
    expect(s.lastSeq).toBe(9);
  });

  it("counts tokens in flat and nested usage", () => {
    expect(tokensOf({ input_tokens: 3, output_tokens: 4 })).toBe(7);
    expect(tokensOf({ "gpt": { total_tokens: 5 }, "other": { input_tokens: 1, output_tokens: 1 } })).toBe(7);
    expect(tokensOf(null)).toBe(0);
  });
});

describe("liveInputs", () => {
  const edges = [
    { source: "a", target: "join" },
    { source: "b", source_port: "hit", target: "join" },
    { source: "b", source_port: "miss", target: "other" },
    { source: "c", source_port: "items", target: "join", target_port: "extra" },
  ];
  const run = reduceAll(startingRun(), [
    { seq: 1, type: "node_finished", run_id: R, node_id: "a", ok: true, output: "from a" },
    { seq: 2, type: "edge_fired", run_id: R, edge: "a:out->join:in" },
    { seq: 3, type: "node_finished", run_id: R, node_id: "b", ok: true, output: { hit: 1, more: 2 }, branch: ["hit"] },
    { seq: 4, type: "edge_fired", run_id: R, edge: "b:hit->join:in" },
    { seq: 5, type: "node_finished", run_id: R, node_id: "c", ok: true, output: [1, 2] },
    { seq: 6, type: "node_started", run_id: R, node_id: "join" },
  ]);

  it("rebuilds a running node's input from its fired edges and their sources' outputs", () => {
    // two sources on `in`: by source; `hit` is a key of b's output: that key; c's edge did not fire
    expect(liveInputs(edges, run, "join")).toEqual({ in: { a: "from a", b: 1 } });
    const more = reduceRun(run, { type: "edge_fired", seq: 7, edge: "c:items->join:extra" });
    // an array output has no `items` key: the whole output
    expect(liveInputs(edges, more, "join")).toEqual({ in: { a: "from a", b: 1 }, extra: [1, 2] });
    expect(liveInputs([edges[0]], run, "join")).toEqual({ in: "from a" });
    expect(liveInputs(edges, run, "other")).toBeUndefined(); // its edge never fired
  });
});
