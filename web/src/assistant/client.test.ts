import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, onUnauthorized } from "../api";
import { errorFromResponse, fetchConfig, resetSession, STREAM_CLOSED_MESSAGE, streamTurn, toAssistantEvent } from "./client";
import type { AssistantEvent } from "./types";

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  localStorage.clear();
});

function sseBody(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(enc.encode(c));
      controller.close();
    },
  });
}

function frame(ev: Record<string, unknown>): string {
  return `event: ${ev.event}\ndata: ${JSON.stringify(ev)}\n\n`;
}

const body = { flow_id: "f1", input_value: "hi", session_id: "agentic_1", provider: "openai", model_name: "gpt-4o" };

describe("streamTurn", () => {
  it("posts the turn with credentials and the auth headers, and delivers events in order", async () => {
    localStorage.setItem("plait.apiKey", "k-123");
    const fetchMock = vi.fn(async () =>
      new Response(
        sseBody([
          frame({ event: "progress", step: "generating", attempt: 1, max_attempts: 3 }),
          // split across chunks
          frame({ event: "token", chunk: "Hel" }).slice(0, 10),
          frame({ event: "token", chunk: "Hel" }).slice(10),
          ": keep-alive comment\n\n",
          frame({ event: "complete", data: { result: "Hel" } }),
        ]),
        { status: 200, headers: { "content-type": "text/event-stream" } },
      ),
    );
    vi.stubGlobal("fetch", fetchMock);
    const events: AssistantEvent[] = [];
    await streamTurn(body, (e) => events.push(e), new AbortController().signal);
    expect(events.map((e) => e.event)).toEqual(["progress", "token", "complete"]);
    expect((events[1] as any).chunk).toBe("Hel");
    expect("type" in events[0]).toBe(false);
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/v1/assistant/stream");
    expect(init.method).toBe("POST");
    expect(init.credentials).toBe("same-origin");
    expect((init.headers as Record<string, string>)["x-api-key"]).toBe("k-123");
    expect(JSON.parse(init.body as string)).toEqual(body);
  });

  it("the event name comes from the event: line when the payload lacks it", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(sseBody(['event: cancelled\ndata: {"message":"stopped"}\n\n']))));
    const events: AssistantEvent[] = [];
    await streamTurn(body, (e) => events.push(e), new AbortController().signal);
    expect(events).toEqual([{ event: "cancelled", message: "stopped" }]);
  });

  it("a stream that closes before its end gives an error event", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(sseBody([frame({ event: "token", chunk: "a" })]))));
    const events: AssistantEvent[] = [];
    await streamTurn(body, (e) => events.push(e), new AbortController().signal);
    expect(events[events.length - 1]).toEqual({ event: "error", message: STREAM_CLOSED_MESSAGE });
  });

  it("a last frame without the blank line is still delivered", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(sseBody([`data: ${JSON.stringify({ event: "error", message: "boom" })}`]))));
    const events: AssistantEvent[] = [];
    await streamTurn(body, (e) => events.push(e), new AbortController().signal);
    expect(events).toEqual([{ event: "error", message: "boom" }]);
  });

  it("an HTTP error throws the server's message with its hint", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () =>
        Response.json(
          { error: { code: "bad_request", message: "no model provider is configured", details: { hint: "set OPENAI_API_KEY in Variables" } } },
          { status: 400 },
        ),
      ),
    );
    const err = await streamTurn(body, () => undefined, new AbortController().signal).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.message).toBe("no model provider is configured — set OPENAI_API_KEY in Variables");
  });

  it("a 401 (the session ended) tells the shell to ask for a sign-in, as every other request does", async () => {
    const told = vi.fn();
    const off = onUnauthorized(told);
    try {
      vi.stubGlobal("fetch", vi.fn(async () => Response.json({ error: { code: "unauthorized", message: "sign in" } }, { status: 401 })));
      const err = await streamTurn(body, () => undefined, new AbortController().signal).catch((e) => e);
      expect(err.status).toBe(401);
      expect(told).toHaveBeenCalledTimes(1);
      vi.stubGlobal("fetch", vi.fn(async () => Response.json({ error: { message: "busy" } }, { status: 409 })));
      await streamTurn(body, () => undefined, new AbortController().signal).catch(() => null);
      expect(told).toHaveBeenCalledTimes(1);
    } finally {
      off();
    }
  });

  it("A-S15: aborting (Stop) resolves quietly", async () => {
    const ctl = new AbortController();
    vi.stubGlobal(
      "fetch",
      vi.fn(
        (_url: string, init: RequestInit) =>
          new Promise<Response>((_resolve, reject) => {
            init.signal!.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
          }),
      ),
    );
    const p = streamTurn(body, () => undefined, ctl.signal);
    ctl.abort();
    await expect(p).resolves.toBeUndefined();
  });

  it("a network failure (not an abort) is thrown", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => Promise.reject(new TypeError("Failed to fetch"))));
    await expect(streamTurn(body, () => undefined, new AbortController().signal)).rejects.toThrow("Failed to fetch");
  });
});

describe("errorFromResponse", () => {
  it("reads FastAPI's detail and plain messages too", async () => {
    expect((await errorFromResponse(Response.json({ detail: "busy" }, { status: 409 }), "x")).message).toBe("busy");
    expect((await errorFromResponse(new Response("oops", { status: 500 }), "POST /x")).message).toBe("POST /x: HTTP 500");
  });
});

describe("toAssistantEvent", () => {
  it("ignores payloads without a name", () => {
    expect(toAssistantEvent({ chunk: "a" }, null)).toBeNull();
    expect(toAssistantEvent("str", "token")).toBeNull();
  });
});

describe("resetSession", () => {
  it("M-S70: posts the reset with the session id and credentials", async () => {
    const fetchMock = vi.fn(async () => Response.json({ status: "ok", components_cleared: 0, session_id: "agentic_n" }));
    vi.stubGlobal("fetch", fetchMock);
    await resetSession("agentic_n");
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/v1/assistant/sessions/reset?session_id=agentic_n");
    expect(init.method).toBe("POST");
    expect(init.credentials).toBe("same-origin");
  });

  it("F11: errors are swallowed", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => Promise.reject(new TypeError("offline"))));
    await expect(resetSession("agentic_n")).resolves.toBeUndefined();
    vi.stubGlobal("fetch", vi.fn(async () => new Response("no", { status: 500 })));
    await expect(resetSession("agentic_n")).resolves.toBeUndefined();
  });
});

describe("fetchConfig", () => {
  it("GETs the config", async () => {
    const cfg = { configured: false, configured_providers: [], providers: [], default_provider: null, default_model: null };
    const fetchMock = vi.fn(async () => Response.json(cfg));
    vi.stubGlobal("fetch", fetchMock);
    expect(await fetchConfig()).toEqual(cfg);
    expect((fetchMock.mock.calls[0] as unknown as [string])[0]).toBe("/api/v1/assistant/config");
  });
});

describe("toAssistantEvent: the parser's copy of the event line", () => {
  it("drops the copied type and keeps a payload's own different type", () => {
    expect(toAssistantEvent({ event: "token", chunk: "a", type: "token" }, "token")).toEqual({ event: "token", chunk: "a" });
    expect(toAssistantEvent({ event: "token", chunk: "a", type: "other" }, "token")).toEqual({ event: "token", chunk: "a", type: "other" });
  });
});
