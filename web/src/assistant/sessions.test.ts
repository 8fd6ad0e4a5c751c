import { afterEach, describe, expect, it, vi } from "vitest";
import {
  compactSession,
  deleteSession,
  FILE_CONTENT_LIMIT,
  findSession,
  loadSessions,
  MAX_SESSIONS,
  newSessionId,
  saveSession,
  sessionTitle,
  storedMessage,
  upsertSession,
} from "./sessions";
import { STORAGE_KEYS } from "./storage";
import type { ChatMessage } from "./types";

afterEach(() => {
  vi.restoreAllMocks();
  localStorage.clear();
});

function user(text: string, id = `u-${text}`): ChatMessage {
  return { id, role: "user", text, status: "complete", createdAt: 1 };
}

function assistant(patch: Partial<ChatMessage> = {}): ChatMessage {
  return { id: "a1", role: "assistant", text: "hi", status: "complete", createdAt: 2, ...patch };
}

describe("sessions", () => {
  it("F9: a session id is agentic_<uuid> and fresh each time", () => {
    const a = newSessionId();
    expect(a).toMatch(/^agentic_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newSessionId()).not.toBe(a);
  });

  it("F10: progress is stripped and a streaming message is stored as cancelled", () => {
    const m = storedMessage(
      assistant({ status: "streaming", progress: { event: "progress", step: "validating", attempt: 1, max_attempts: 3 } }),
    );
    expect(m.status).toBe("cancelled");
    expect("progress" in m).toBe(false);
  });

  it("F10 / A-S28: usage stays on the stored message so the badge shows after a reload", () => {
    const complete = { usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 }, duration_seconds: 0.5 } as any;
    saveSession("agentic_x", [user("q"), assistant({ complete })], 10);
    expect(findSession("agentic_x")?.messages[1].complete?.usage.total_tokens).toBe(3);
  });

  it("F10: at most 10 sessions, newest first; the oldest is dropped", () => {
    for (let i = 0; i < 12; i++) saveSession(`agentic_${i}`, [user(`q${i}`)], 100 + i);
    const list = loadSessions();
    expect(list.length).toBe(MAX_SESSIONS);
    expect(list[0].id).toBe("agentic_11");
    expect(list.map((s) => s.id)).not.toContain("agentic_0");
    expect(list.map((s) => s.id)).not.toContain("agentic_1");
  });

  it("saving the same session again replaces it and moves it first", () => {
    saveSession("agentic_a", [user("first")], 1);
    saveSession("agentic_b", [user("second")], 2);
    saveSession("agentic_a", [user("first"), assistant()], 3);
    const list = loadSessions();
    expect(list.map((s) => s.id)).toEqual(["agentic_a", "agentic_b"]);
    expect(list[0].messages.length).toBe(2);
  });

  it("an empty chat is not stored", () => {
    expect(saveSession("agentic_e", [], 1)).toEqual([]);
    expect(localStorage.getItem(STORAGE_KEYS.sessions)).toBeNull();
  });

  it("the title is the first visible user message, shortened", () => {
    expect(sessionTitle([user("  build   a flow  ")])).toBe("build a flow");
    expect(sessionTitle([{ ...user("hidden"), hidden: true }])).toBe("New session");
    expect(sessionTitle([user("x".repeat(100))]).length).toBe(60);
  });

  it("small data only: big file contents are not stored", () => {
    const big = "x".repeat(FILE_CONTENT_LIMIT + 1);
    const m = storedMessage(
      assistant({
        files: [
          { action: "write_file", path: "big.md", size: big.length, content: big },
          { action: "write_file", path: "small.md", size: 2, content: "ok" },
        ],
      }),
    );
    expect(m.files![0].content).toBeUndefined();
    expect(m.files![1].content).toBe("ok");
  });

  it("small data only: a session over its budget loses its oldest messages first", () => {
    const messages = Array.from({ length: 50 }, (_, i) => user(`${i}:${"y".repeat(1000)}`, `m${i}`));
    const s = compactSession({ id: "s", title: "t", updatedAt: 1, messages }, 10_000);
    expect(JSON.stringify(s).length).toBeLessThanOrEqual(10_000);
    expect(s.messages[s.messages.length - 1].id).toBe("m49");
    expect(s.messages[0].id).not.toBe("m0");
  });

  it("small data only: one huge message is cut down rather than dropped", () => {
    const s = compactSession({ id: "s", title: "t", updatedAt: 1, messages: [assistant({ text: "z".repeat(50_000) })] }, 10_000);
    expect(s.messages.length).toBe(1);
    expect(JSON.stringify(s).length).toBeLessThanOrEqual(10_000);
  });

  it("a full storage drops the oldest sessions until the list fits", () => {
    for (let i = 0; i < 3; i++) saveSession(`agentic_${i}`, [user(`q${i}`)], i);
    const real = Storage.prototype.setItem;
    vi.spyOn(Storage.prototype, "setItem").mockImplementation(function (this: Storage, k: string, v: string) {
      if (JSON.parse(v).length > 2) throw new DOMException("full", "QuotaExceededError");
      real.call(this, k, v);
    });
    const list = saveSession("agentic_new", [user("new")], 10);
    expect(list.map((s) => s.id)).toEqual(["agentic_new", "agentic_2"]);
    expect(loadSessions().map((s) => s.id)).toEqual(["agentic_new", "agentic_2"]);
  });

  it("upsert is pure and capped", () => {
    const base = Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, title: "", updatedAt: i, messages: [] }));
    const next = upsertSession(base, { id: "n", title: "", updatedAt: 99, messages: [] });
    expect(next.length).toBe(10);
    expect(next[0].id).toBe("n");
    expect(base.length).toBe(10);
  });

  it("malformed stored entries are skipped; delete removes one", () => {
    localStorage.setItem(STORAGE_KEYS.sessions, JSON.stringify([{ nope: 1 }, { id: "ok", messages: [user("q")], updatedAt: 1 }, 5]));
    expect(loadSessions().map((s) => s.id)).toEqual(["ok"]);
    expect(loadSessions()[0].title).toBe("q");
    expect(deleteSession("ok")).toEqual([]);
    expect(loadSessions()).toEqual([]);
  });

  it("M-T39: blocked storage: nothing stored, nothing thrown", () => {
    vi.spyOn(Storage.prototype, "getItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    vi.spyOn(Storage.prototype, "setItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    expect(() => saveSession("agentic_z", [user("q")], 1)).not.toThrow();
    expect(loadSessions()).toEqual([]);
  });
});
