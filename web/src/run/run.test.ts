import { beforeEach, describe, expect, it } from "vitest";
import { idleRun, reduceAll, runDuration, runStateFromDetail } from "../state/run";
import { finalAnswer, promptField, streamingText } from "./playground";
import { curlSnippet, exampleInputs, mcpToolName, pyLiteral, pythonSnippet, runUrl, webhookUrl } from "./snippets";
import { loadChat, loadLastInputs, loadPinned, rememberedFor, saveChat, saveLastInputs, savePinned } from "./storage";
import { fileOf } from "./files";

const str = { type: "string" };

describe("promptField", () => {
  it("finds the one string input of a prompt-style flow", () => {
    expect(promptField({ inputs: { type: "object", properties: { message: str }, required: ["message"] }, nodes: [] })).toBe("message");
    expect(promptField({ inputs: { type: "object", properties: { anything: str } }, nodes: [] })).toBe("anything");
    expect(promptField({ inputs: { type: "object", properties: { question: str, lang: { type: "string", default: "en" } }, required: ["question"] }, nodes: [] })).toBe("question");
  });
  it("is null for flows not started by a prompt", () => {
    expect(promptField({ inputs: { type: "object", properties: {} }, nodes: [] })).toBeNull();
    expect(promptField({ inputs: { type: "object", properties: { n: { type: "integer" } } }, nodes: [] })).toBeNull();
    expect(promptField({ inputs: { type: "object", properties: { a: str, b: str }, required: ["a", "b"] }, nodes: [] })).toBeNull();
    expect(promptField({ inputs: { type: "object", properties: { message: str, n: { type: "integer" } }, required: ["message", "n"] }, nodes: [] })).toBeNull();
    expect(promptField(null)).toBeNull();
  });
  it("follows a start node that says chat", () => {
    expect(promptField({ inputs: undefined, nodes: [{ id: "start", type: "start", config: { trigger: "chat" } }] })).toBe("message");
    expect(promptField({ inputs: { type: "object", properties: { a: str, prompt: str }, required: ["a", "prompt"] }, nodes: [{ id: "s", type: "start", config: { trigger: "chat" } }] })).toBe("prompt");
  });
});

describe("answers", () => {
  it("takes the single output's text, or every output", () => {
    expect(finalAnswer({ answer: "Hi **there**" })).toBe("Hi **there**");
    expect(finalAnswer({ reply: { content: "x" } })).toBe("x");
    expect(finalAnswer({ a: "1", b: 2 })).toBe("**a**: 1\n\n**b**: 2");
    expect(finalAnswer({})).toBe("");
  });
  it("streams the running node's tokens", () => {
    const run = { nodes: { a: { status: "ok", preview: "old", toolCalls: [] }, b: { status: "running", preview: "new", toolCalls: [] } } } as any;
    expect(streamingText(run)).toBe("new");
  });
});

describe("snippets", () => {
  it("start the latest published version with the flow's inputs", () => {
    const inputs = exampleInputs({ properties: { q: str, n: { type: "integer", default: 3 }, ok: { type: "boolean" } } }, { q: "it's" });
    expect(inputs).toEqual({ q: "it's", n: 3, ok: true });
    expect(runUrl("http://h:1/", "my flow")).toBe("http://h:1/api/v1/flows/my%20flow/runs?version=latest");
    const curl = curlSnippet("http://h:1", "f", inputs);
    expect(curl).toContain(`curl -sS -X POST 'http://h:1/api/v1/flows/f/runs?version=latest'`);
    expect(curl).toContain(`-H "x-api-key: $PLAIT_API_KEY"`);
    expect(curl).toContain(`-d '{"inputs":{"q":"it'"'"'s","n":3,"ok":true}}'`);
    const py = pythonSnippet("http://h:1", "f", inputs);
    expect(py).toContain('os.environ["PLAIT_API_KEY"]');
    expect(py).toContain('"ok": True');
    expect(pyLiteral({ a: null, b: [false] })).toBe('{\n    "a": None,\n    "b": [\n        False,\n    ],\n}');
  });
  it("names the webhook URL and the MCP tool", () => {
    expect(webhookUrl("http://h", "/api/v1/hooks/abc")).toBe("http://h/api/v1/hooks/abc");
    expect(mcpToolName("support.triage")).toBe("flow_support_triage");
  });
});

describe("storage", () => {
  beforeEach(() => localStorage.clear());
  it("remembers the last inputs per flow", () => {
    expect(loadLastInputs("f")).toBeUndefined();
    saveLastInputs("f", { q: "hello" });
    expect(loadLastInputs("f")).toEqual({ q: "hello" });
    expect(loadLastInputs("g")).toBeUndefined();
    expect(rememberedFor({ q: {} }, { q: "a", gone: 1 })).toEqual({ q: "a" });
  });
  it("keeps pinned inputs and chats", () => {
    savePinned("f", "n", { in: 1 });
    expect(loadPinned("f", "n")).toEqual({ in: 1 });
    savePinned("f", "n", undefined);
    expect(loadPinned("f", "n")).toBeUndefined();
    saveChat("f", [{ role: "user", text: "hi", at: 1 }]);
    expect(loadChat("f")).toHaveLength(1);
    saveChat("f", []);
    expect(loadChat("f")).toEqual([]);
  });
});

describe("one duration", () => {
  it("is the run's started -> finished time, not the last segment's", () => {
    // a run that waited 16.9 s for a person: the engine's last segment took 34 ms
    const s = reduceAll(idleRun(), [
      { seq: 1, type: "run_started", run_id: "r", ts: 100 },
      { seq: 2, type: "run_finished", run_id: "r", ts: 100.5, status: "waiting", outputs: {}, usage: {}, duration_ms: 500 },
      { seq: 3, type: "run_started", run_id: "r", ts: 116.866 },
      { seq: 4, type: "run_finished", run_id: "r", ts: 116.9, status: "completed", outputs: {}, usage: {}, duration_ms: 34 },
    ]);
    expect(s.durationMs).toBeCloseTo(16900, 3);
    expect(runDuration(undefined, undefined, 34)).toBe(34);
    expect(runDuration(1, 2)).toBe(1000);
  });
  it("has no duration while waiting", () => {
    const s = reduceAll(idleRun(), [
      { seq: 1, type: "run_started", run_id: "r", ts: 100 },
      { seq: 2, type: "run_finished", run_id: "r", ts: 101, status: "waiting", outputs: {}, usage: {}, duration_ms: 1000 },
    ]);
    expect(s.durationMs).toBeUndefined();
  });
  it("of a stored run comes from its row", () => {
    const s = runStateFromDetail({ id: "r", flow_id: "f", status: "completed", started_at: 10, finished_at: 12.5, nodes: {} } as any);
    expect(s.durationMs).toBe(2500);
  });
});

describe("files", () => {
  it("offers file-shaped outputs as downloads", () => {
    expect(fileOf({ filename: "a.txt", content: "hi" })?.name).toBe("a.txt");
    expect(fileOf({ name: "b.png", base64: "aGk=", mime_type: "image/png" })?.href()).toBe("data:image/png;base64,aGk=");
    expect(fileOf({ name: "x" })).toBeNull();
    expect(fileOf("text")).toBeNull();
  });
});

describe("artifacts", () => {
  it("are downloads from the run's artifact URL, also inside an output", async () => {
    const { filesIn } = await import("./files");
    const ref = { artifact_id: "a".repeat(64), filename: "report.pdf", mime_type: "application/pdf", size: 10, url: "/api/v1/runs/r/artifacts/x" };
    expect(fileOf(ref)?.href()).toBe("/api/v1/runs/r/artifacts/x");
    expect(filesIn({ doc: ref, n: 1 }).map((f) => f.path)).toEqual(["doc"]);
  });
});
