import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FlowChannel } from "./live";

class FakeSocket {
  static OPEN = 1;
  static last: FakeSocket | null = null;
  readyState = 0;
  sent: any[] = [];
  onopen: (() => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.last = this;
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.();
    }, 0);
  }
  send(text: string) {
    this.sent.push(JSON.parse(text));
  }
  close() {
    this.readyState = 3;
    this.onclose?.();
  }
  receive(msg: any) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
}

const real = globalThis.WebSocket;
beforeEach(() => {
  (globalThis as any).WebSocket = FakeSocket;
  localStorage.setItem("plait.apiKey", "k 1");
});
afterEach(() => {
  (globalThis as any).WebSocket = real;
});

describe("flow channel client", () => {
  it("runs a flow, routes its events, and hands watched runs over when the socket drops", async () => {
    const ch = new FlowChannel();
    expect(await ch.connect()).toBe(true);
    const ws = FakeSocket.last!;
    expect(ws.url).toContain("/ws?api_key=k%201");
    const got: any[] = [];
    const started = ch.run("f", { q: 1 }, "draft", (e) => got.push(e));
    expect(ws.sent[0]).toMatchObject({ type: "run", flow_id: "f", inputs: { q: 1 }, version: "draft" });
    // the reply, then the run's events in the next frames
    ws.receive({ type: "run_accepted", run_id: "r1", flow_id: "f", id: ws.sent[0].id });
    ws.receive({ seq: 1, type: "run_started", run_id: "r1" });
    ws.receive({ seq: 2, type: "node_started", run_id: "r1", node_id: "a" });
    ws.receive({ seq: 1, type: "run_started", run_id: "other" }); // not ours
    expect(await started).toBe("r1");
    expect(got.map((e) => e.seq)).toEqual([1, 2]);

    const dropped: any[] = [];
    ch.onDrop = (runId, after) => dropped.push([runId, after]);
    ws.close();
    expect(dropped).toEqual([["r1", 2]]);
  });

  it("turns protocol errors into rejections with the server's code and problems", async () => {
    const ch = new FlowChannel();
    await ch.connect();
    const ws = FakeSocket.last!;
    const p = ch.run("f", {}, "draft", () => undefined);
    ws.receive({ type: "error", code: "invalid_input", message: "invalid run inputs", id: ws.sent[0].id, details: { problems: [{ message: "'q' is a required property", field: "inputs.q" }] } });
    await expect(p).rejects.toMatchObject({ code: "invalid_input", status: 422 });
    await p.catch((e) => expect(e.problems[0].field).toBe("inputs.q"));
  });

  it("stops following a run after its terminal run_finished, not after a pause", async () => {
    const ch = new FlowChannel();
    await ch.connect();
    const ws = FakeSocket.last!;
    const got: any[] = [];
    const sub = ch.subscribe("r2", 0, (e) => got.push(e.type));
    ws.receive({ type: "subscribed", run_id: "r2", id: ws.sent[0].id });
    await sub;
    ws.receive({ seq: 1, type: "run_finished", run_id: "r2", status: "waiting" });
    ws.receive({ seq: 2, type: "run_finished", run_id: "r2", status: "completed" });
    ws.receive({ seq: 3, type: "node_started", run_id: "r2", node_id: "late" });
    expect(got).toEqual(["run_finished", "run_finished"]);
  });
});
