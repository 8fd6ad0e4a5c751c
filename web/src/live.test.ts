import { describe, expect, it } from "vitest";
import { SseParser } from "./live";

describe("SSE parser", () => {
  it("yields JSON events across chunk boundaries and skips comments", () => {
    const got: [any, string | null][] = [];
    const p = new SseParser((d, id) => got.push([d, id]));
    p.push(": stream opened\n\nid: 1\nevent: node_started\ndata: {\"seq\":1,\"type\":\"node_started\",\"node_id\":\"a\"}\n\n: heart");
    p.push("beat\n\nid: 2\nevent: run_finished\nda");
    p.push('ta: {"seq":2,"type":"run_finished","status":"completed"}\r\n\r\n');
    expect(got).toEqual([
      [{ seq: 1, type: "node_started", node_id: "a" }, "1"],
      [{ seq: 2, type: "run_finished", status: "completed" }, "2"],
    ]);
  });
});
