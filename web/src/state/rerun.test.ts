import { describe, expect, it } from "vitest";
import { reduceAll, startingRun } from "./run";

const R = "run-1";

describe("node_rerun", () => {
  it("a node the server stopped runs again: its new attempt and the reason are kept", () => {
    const reason = "the server stopped while attempt 1 of this node ran, so it runs again; what that attempt did outside plait may have happened";
    const s = reduceAll(startingRun(), [
      { seq: 1, type: "run_started", run_id: R, flow_id: "f", inputs: {} },
      { seq: 2, type: "node_started", run_id: R, node_id: "call", attempt: 1 },
      { seq: 1000003, type: "node_rerun", run_id: R, node_id: "call", attempt: 2, reason },
      { seq: 1000004, type: "node_started", run_id: R, node_id: "call", attempt: 2 },
      { seq: 1000005, type: "node_finished", run_id: R, node_id: "call", ok: true, output: { body: 2 }, duration_ms: 3, attempt: 2 },
    ]);
    expect(s.nodes.call).toMatchObject({ status: "ok", attempt: 2, output: { body: 2 } });
    expect(s.nodes.call.reruns).toEqual([{ attempt: 2, reason }]);
  });
});
