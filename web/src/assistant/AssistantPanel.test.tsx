import { act } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { mount, q, settle as settleOnce, unmount } from "../test/dom";
import type { FlowDocument, NodeType } from "../types";
import AssistantDock from "./AssistantDock";
import AssistantPanel from "./AssistantPanel";
import type { AssistantConfig, AssistantEvent, CanvasBridge } from "./types";

/** The panel lets each progress step rest for a task: settle a few rounds more than the default. */
async function settle(): Promise<void> {
  for (let i = 0; i < 4; i++) await settleOnce();
}

// ------------------------------------------------------------------ the server, scripted
const stream = vi.hoisted(() => ({ scripts: [] as any[], bodies: [] as any[], resets: [] as string[], config: null as any }));

vi.mock("./client", () => ({
  streamTurn: async (body: any, onEvent: (e: AssistantEvent) => void, signal: AbortSignal) => {
    stream.bodies.push(body);
    const script = stream.scripts.shift();
    if (script) await script(onEvent, signal, body);
  },
  resetSession: async (id: string) => {
    stream.resets.push(id);
  },
  fetchConfig: async () => stream.config,
}));

const CONFIG: AssistantConfig = {
  configured: true,
  configured_providers: ["scripted"],
  providers: [{ name: "scripted", configured: true, default_model: "scripted", models: [{ name: "scripted", display_name: "scripted" }] }],
  default_provider: "scripted",
  default_model: "scripted",
};

const complete = (extra: Record<string, unknown> = {}): AssistantEvent => ({
  event: "complete",
  data: { result: "", validated: false, class_name: null, component_code: null, validation_attempts: 0, intent: "question", provider: "scripted", model: "scripted", usage: { input_tokens: 12, output_tokens: 5, total_tokens: 17 }, duration_seconds: 0.25, ...extra },
});

// ------------------------------------------------------------------ a fake canvas
function fakeBridge(initial: FlowDocument = { nodes: [], edges: [] }, types: NodeType[] = []) {
  let doc = initial;
  const calls = { commits: [] as { doc: FlowDocument; fit: boolean }[], locked: [] as boolean[], selected: [] as string[][], watched: [] as string[], notices: [] as string[], refreshed: 0, flushed: 0 };
  const bridge: CanvasBridge = {
    flowId: "f1",
    readOnly: false,
    document: () => doc,
    commit: (next, opts) => {
      doc = next;
      calls.commits.push({ doc: next, fit: !!opts?.fit });
    },
    flush: async () => {
      calls.flushed += 1;
    },
    center: () => ({ x: 400, y: 300 }),
    sizes: () => ({}),
    select: (ids) => calls.selected.push(ids),
    watchRun: (id) => calls.watched.push(id),
    setLocked: (l) => calls.locked.push(l),
    nodeTypes: () => types,
    refreshTypes: async () => {
      calls.refreshed += 1;
    },
    notify: (t) => calls.notices.push(t),
  };
  return { bridge, calls, doc: () => doc };
}

// ------------------------------------------------------------------ typing into the textarea
function typeText(value: string): void {
  const el = q<HTMLTextAreaElement>("assistant-input")!;
  act(() => {
    Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value")!.set!.call(el, value);
    el.setSelectionRange(value.length, value.length);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });
}
function key(target: Element | Window, k: string, init: KeyboardEventInit = {}): void {
  act(() => {
    target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...init }));
  });
}
async function sendText(text: string): Promise<void> {
  typeText(text);
  key(q("assistant-input")!, "Enter");
  await settle();
}
const all = (id: string) => Array.from(document.querySelectorAll<HTMLElement>(`[data-testid="${id}"]`));
async function clickEl(el: Element | null | undefined): Promise<void> {
  if (!el) throw new Error("nothing to click");
  await act(async () => (el as HTMLElement).click());
  await settle();
}

beforeEach(() => {
  stream.scripts = [];
  stream.bodies = [];
  stream.resets = [];
  stream.config = CONFIG;
  localStorage.clear();
  sessionStorage.clear();
  (globalThis as any).requestAnimationFrame ??= (fn: FrameRequestCallback) => setTimeout(() => fn(0), 0);
});
afterEach(() => {
  unmount();
  vi.useRealTimers();
});

describe("AssistantDock", () => {
  it("A opens the panel (lazily) and focuses the input, A outside the input closes it, typing 'a' in a field does not", async () => {
    const { bridge } = fakeBridge();
    mount(<AssistantDock bridge={bridge} />);
    expect(q("assistant-panel")).toBeNull();
    key(window, "a");
    for (let i = 0; i < 20 && !q("assistant-panel"); i++) await settle();
    expect(q("assistant-panel")?.dataset.state).toBe("open");
    await settle();
    // typing in the panel's input does not toggle
    key(q("assistant-input")!, "a");
    expect(q("assistant-panel")?.dataset.state).toBe("open");
    key(document.body, "a");
    expect(q("assistant-panel")?.dataset.state).toBe("closed");
    await clickEl(q("assistant-toggle"));
    expect(q("assistant-panel")?.dataset.state).toBe("open");
  });

  it("focuses the input once the config arrives, unless the user has pressed outside the panel meanwhile", async () => {
    const { bridge } = fakeBridge();
    for (const clickAway of [false, true]) {
      let release: (c: AssistantConfig) => void = () => {};
      stream.config = new Promise<AssistantConfig>((r) => (release = r));
      mount(<AssistantDock bridge={bridge} />);
      key(window, "a");
      for (let i = 0; i < 20 && !q("assistant-panel"); i++) await settle();
      expect(q("assistant-panel")?.dataset.state).toBe("open");
      if (clickAway) act(() => void document.body.dispatchEvent(new Event("pointerdown", { bubbles: true })));
      await act(async () => release(CONFIG));
      for (let i = 0; i < 5; i++) await settle();
      const input = q("assistant-input")!;
      expect(input).not.toBeNull();
      expect(document.activeElement === input).toBe(!clickAway);
      unmount();
    }
  });

  it("takes another key when one is stored for it", async () => {
    localStorage.setItem("plait-assistant-shortcut", "K");
    const { bridge } = fakeBridge();
    mount(<AssistantDock bridge={bridge} />);
    key(document.body, "a");
    await settle();
    expect(q("assistant-panel")).toBeNull();
    key(document.body, "k");
    for (let i = 0; i < 20 && !q("assistant-panel"); i++) await settle();
    expect(q("assistant-panel")?.dataset.state).toBe("open");
  });

  it("Escape closes the panel from the canvas and from the input", async () => {
    const { bridge } = fakeBridge();
    mount(<AssistantDock bridge={bridge} />);
    await clickEl(q("assistant-toggle"));
    for (let i = 0; i < 20 && !q("assistant-input"); i++) await settle();
    key(q("assistant-input")!, "Escape");
    expect(q("assistant-panel")?.dataset.state).toBe("closed");
    await clickEl(q("assistant-toggle"));
    key(document.body, "Escape");
    expect(q("assistant-panel")?.dataset.state).toBe("closed");
  });
});

describe("AssistantPanel", () => {
  it("resets a fresh session on mount, picks the model, streams a reply with the usage badge, and locks the canvas meanwhile", async () => {
    const { bridge, calls } = fakeBridge();
    let release!: () => void;
    stream.scripts.push(async (emit: (e: AssistantEvent) => void) => {
      emit({ event: "progress", step: "generating", attempt: 1, max_attempts: 3 });
      emit({ event: "token", chunk: "Use **two** steps:\n\n```python\nprint('hi')\n```" });
      await new Promise<void>((r) => (release = r));
      emit(complete());
    });
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    expect(stream.resets).toHaveLength(1);
    expect(stream.resets[0]).toMatch(/^agentic_/);
    expect(q<HTMLSelectElement>("assistant-model-select")!.value).toBe("scripted/scripted");
    expect(q("assistant-provider-icon")!.dataset.provider).toBe("scripted");
    await sendText("how do I connect two steps?");
    expect(stream.bodies[0]).toMatchObject({ flow_id: "f1", input_value: "how do I connect two steps?", session_id: stream.resets[0], provider: "scripted", model_name: "scripted" });
    expect(q<HTMLTextAreaElement>("assistant-input")!.placeholder).toBe("Working on it...");
    expect(q("assistant-thinking")!.textContent).toContain("Generating...");
    expect(q("assistant-progress")).toBeNull(); // Q&A: no validation indicators
    expect(q("assistant-stop")).not.toBeNull();
    expect(calls.locked).toEqual([true]);
    await act(async () => release());
    await settle();
    const reply = all("assistant-message").find((m) => m.dataset.role === "assistant")!;
    expect(reply.dataset.status).toBe("complete");
    expect(reply.querySelector("strong")?.textContent).toBe("two");
    expect(reply.querySelector("code.hljs")).not.toBeNull();
    expect(q("assistant-usage")!.textContent).toBe("12 in · 5 out · 17 tokens · 250 ms");
    expect(calls.locked).toEqual([true, false]);
    expect(q<HTMLTextAreaElement>("assistant-input")!.placeholder).not.toBe("Working on it...");
    expect(q("assistant-component-card")).toBeNull();
  });

  it("shows the empty state without models; Configure providers opens the Models settings in a dialog", async () => {
    stream.config = { configured: false, configured_providers: [], providers: [], default_provider: null, default_model: null };
    globalThis.fetch = vi.fn(async () => new Response("[]", { status: 200, headers: { "content-type": "application/json" } })) as any;
    const { bridge } = fakeBridge();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    expect(q("assistant-no-models")).not.toBeNull();
    expect(q<HTMLTextAreaElement>("assistant-input")!.disabled).toBe(true);
    await clickEl(q("assistant-no-models-configure-providers"));
    expect(q("assistant-models-dialog")).not.toBeNull();
  });

  it("component generation: Attempt X of Y on retries, then the card's Add to canvas places a component node at the centre", async () => {
    const types = [{ name: "component:Reverse", title: "Reverse", description: "", category: "components", config_schema: { properties: {} }, input_ports: ["in"], output_ports: ["out"], node_type: "component", config_defaults: { component: "Reverse" } } as any];
    const { bridge, calls, doc } = fakeBridge({ nodes: [], edges: [] }, types);
    let release!: () => void;
    stream.scripts.push(async (emit: (e: AssistantEvent) => void) => {
      emit({ event: "progress", step: "generating_component", attempt: 1, max_attempts: 3 });
      emit({ event: "progress", step: "retrying", attempt: 2, max_attempts: 3 });
      await new Promise<void>((r) => (release = r));
      emit(complete({ intent: "generate_component", validated: true, class_name: "Reverse", component_code: "class Reverse(Component):\n    pass\n", validation_attempts: 2, result: "Here it is." }));
    });
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("a component that reverses text");
    expect(q("assistant-progress")!.textContent).toContain("Attempt 2 of 3");
    await act(async () => release());
    await settle();
    expect(q("assistant-progress")).toBeNull();
    await clickEl(q("assistant-component-view-code"));
    expect(q("assistant-component-code")!.textContent).toContain("class Reverse");
    await clickEl(q("assistant-component-add"));
    expect(calls.refreshed).toBeGreaterThan(0);
    const node = doc().nodes[0];
    expect(node).toMatchObject({ type: "component", config: { component: "Reverse" }, position: { x: 310, y: 272 } });
    expect(calls.selected.at(-1)).toEqual([node.id]);
  });

  it("a failed generation shows the failure card: details collapsed, View code, Try again sends the request again", async () => {
    const { bridge } = fakeBridge();
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete({ intent: "generate_component", validated: false, class_name: "X", component_code: "class X: pass", validation_attempts: 3, error: "SyntaxError: boom", result: "failed" })));
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete({ result: "ok now" })));
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("make X");
    expect(q("assistant-component-failed")).not.toBeNull();
    expect(q("assistant-component-add")).toBeNull();
    expect(q<HTMLDetailsElement>("assistant-error-details")!.open).toBe(false);
    expect(q("assistant-error-details")!.textContent).toContain("SyntaxError: boom");
    expect(q("assistant-component-view-code")).not.toBeNull();
    await clickEl(q("assistant-try-again"));
    expect(stream.bodies.map((b) => b.input_value)).toEqual(["make X", "make X"]);
  });

  it("live flow updates change the canvas with build-task rows; a set_flow waits as a proposal whose Add merges it, then reverts to pending after 3 s", async () => {
    const { bridge, doc } = fakeBridge({ nodes: [{ id: "old", type: "start", position: { x: 0, y: 0 } }], edges: [] });
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "flow_update", action: "add_component", node: { id: "llm", type: "llm", config: {} } });
      emit({ event: "flow_update", action: "connect", edge: { source: "old", target: "llm" } });
      emit({ event: "flow_update", action: "set_flow", flow: { nodes: [{ id: "old", type: "start", position: { x: 0, y: 0 } }, { id: "out", type: "output", position: { x: 200, y: 0 } }], edges: [{ source: "old", target: "out" }] } });
      emit({ event: "flow_update", action: "configure", component_id: "out", params: { value: "x" } }); // buffered in the tail
      emit({ event: "run_started", run_id: "r1", flow_id: "f1" });
      emit(complete({ intent: "build_flow" }));
    });
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("build it");
    expect(doc().nodes.map((n) => n.id)).toEqual(["old", "llm"]);
    expect(doc().edges).toHaveLength(1);
    expect(all("assistant-task").map((t) => t.dataset.action)).toEqual(["add_component", "connect"]);
    expect(q("assistant-flow-proposal")!.dataset.status).toBe("pending");
    expect(q("assistant-flow-preview")!.querySelectorAll("rect")).toHaveLength(2);
    vi.useFakeTimers();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await act(async () => q("assistant-flow-add-button")!.click());
    expect(warn).toHaveBeenCalled();
    expect(doc().nodes).toHaveLength(4); // merged beside, with fresh ids for the clashing "old"
    const merged = doc().nodes.find((n) => n.type === "output")!;
    expect(merged.config).toMatchObject({ value: "x" }); // the tail replayed after the flow
    expect(q("assistant-flow-applied")).not.toBeNull();
    expect(q("assistant-flow-add-button")).toBeNull();
    await act(async () => vi.advanceTimersByTime(3100));
    expect(q("assistant-flow-proposal")!.dataset.status).toBe("pending");
    vi.useRealTimers();
    warn.mockRestore();
    await clickEl(q("assistant-flow-dismiss-button"));
    expect(q("assistant-flow-dismissed")).not.toBeNull();
    expect(q("assistant-flow-preview")).not.toBeNull();
  });

  it("skip-all: the command is not sent, the badge shows, a set_flow applies directly and a plan is approved silently in the same message", async () => {
    const { bridge, doc } = fakeBridge();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("/skip-all");
    expect(stream.bodies).toHaveLength(0);
    expect(localStorage.getItem("plait-assistant-skip-all")).toBe("true");
    expect(q("assistant-skip-all-badge")).not.toBeNull();
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "progress", step: "generating_flow", attempt: 1, max_attempts: 3 });
      emit({ event: "token", chunk: "Here is my plan" });
      emit({ event: "flow_update", action: "propose_plan", markdown: "1. start\n2. out" });
      emit(complete({ intent: "build_flow" }));
    });
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "flow_update", action: "set_flow", flow: { nodes: [{ id: "start", type: "start" }], edges: [] } });
      emit({ event: "token", chunk: "Built." });
      emit(complete({ intent: "build_flow" }));
    });
    await sendText("build me a flow");
    await settle();
    expect(stream.bodies.map((b) => b.input_value)).toEqual(["build me a flow", "User approved the plan. Proceed with the build."]);
    expect(q("assistant-plan")).toBeNull();
    expect(q("assistant-flow-proposal")).toBeNull();
    expect(doc().nodes.map((n) => n.id)).toEqual(["start"]);
    const visible = all("assistant-message");
    expect(visible.filter((m) => m.dataset.role === "user").map((m) => m.textContent)).toEqual(["/skip-all", "build me a flow"]);
    expect(visible.filter((m) => m.dataset.role === "assistant")).toHaveLength(2); // the confirmation + one reply
  });

  it("plan: Dismiss refines (no request), the next message carries the plan; Continue sends the approval", async () => {
    const { bridge } = fakeBridge();
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "flow_update", action: "propose_plan", markdown: "PLAN-M" });
      emit(complete({ intent: "build_flow" }));
    });
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("big build");
    expect(q("assistant-plan")!.dataset.status).toBe("pending");
    await clickEl(q("assistant-plan-dismiss"));
    expect(q("assistant-plan")!.dataset.status).toBe("refining");
    expect(q("assistant-plan-reset")).not.toBeNull();
    expect(stream.bodies).toHaveLength(1);
    expect(q<HTMLTextAreaElement>("assistant-input")!.placeholder).toBe("Tell me what to change…");
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete()));
    await sendText("use Claude instead");
    expect(stream.bodies[1].input_value).toContain("[Previous plan you proposed");
    expect(stream.bodies[1].input_value).toContain("PLAN-M");
    expect(stream.bodies[1].input_value).toMatch(/User refinement:\nuse Claude instead$/);
    expect(all("assistant-message-text").some((t) => t.textContent === "use Claude instead")).toBe(true);
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete()));
    await clickEl(q("assistant-plan-continue"));
    expect(stream.bodies[2].input_value).toBe("User approved the plan. Proceed with the build.");
    expect(q("assistant-plan")!.dataset.status).toBe("approved");
  });

  it("field edits: Accept applies to the canvas; with continuation_expected the continuation is sent silently after a save", async () => {
    const { bridge, calls, doc } = fakeBridge({ nodes: [{ id: "llm", type: "llm", config: { system: "old" } }], edges: [] });
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "flow_update", action: "edit_field", id: "e1", component_id: "llm", component_type: "llm", field: "system", old_value: "old", new_value: "You are a bakery assistant", patch: [] });
      emit(complete({ intent: "build_flow", continuation_expected: true }));
    });
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete({ result: "ran it" })));
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("set the system prompt");
    expect(q("assistant-edit")!.dataset.status).toBe("pending");
    await clickEl(q("assistant-edit-accept"));
    await settle();
    expect(doc().nodes[0].config!.system).toBe("You are a bakery assistant");
    expect(calls.flushed).toBe(1);
    expect(stream.bodies.map((b) => b.input_value)).toEqual(["set the system prompt", "The user applied the proposed field edits. Continue with the remaining steps."]);
    expect(all("assistant-message").filter((m) => m.dataset.role === "user")).toHaveLength(1);
    expect(all("assistant-message").filter((m) => m.dataset.role === "assistant")).toHaveLength(1);
  });

  it("Stop cancels the reply and a new message can be sent; New session rotates the id and resets with the new one", async () => {
    const { bridge } = fakeBridge();
    stream.scripts.push(
      (emit: (e: AssistantEvent) => void, signal: AbortSignal) =>
        new Promise<void>((resolve) => {
          emit({ event: "token", chunk: "partial" });
          signal.addEventListener("abort", () => resolve());
        }),
    );
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("long one");
    await clickEl(q("assistant-stop"));
    const reply = all("assistant-message").find((m) => m.dataset.role === "assistant")!;
    expect(reply.dataset.status).toBe("cancelled");
    expect(q("assistant-thinking")).toBeNull();
    expect(q("assistant-send")).not.toBeNull();
    const first = stream.resets[0];
    await clickEl(q("assistant-new-session"));
    expect(all("assistant-message")).toHaveLength(0);
    // the reset with the new id, then the old session is forgotten
    expect(stream.resets).toHaveLength(3);
    expect(stream.resets[1]).not.toBe(first);
    expect(stream.resets[2]).toBe(first);
    expect(q("assistant-panel")!.dataset.session).toBe(stream.resets[1]);
    // the old session is in the history; loading it does not reset
    const select = q<HTMLSelectElement>("assistant-history-select")!;
    expect(Array.from(select.options).map((o) => o.value)).toContain(first);
    await act(async () => {
      select.value = first;
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
    await settle();
    expect(stream.resets).toHaveLength(3); // loading does not reset
    expect(all("assistant-message").map((m) => m.dataset.status)).toEqual(["complete", "cancelled"]);
  });

  it("files: Open shows the content from memory (sanitised), Download builds a text file and revokes its URL", async () => {
    const { bridge } = fakeBridge();
    stream.scripts.push((emit: (e: AssistantEvent) => void) => {
      emit({ event: "file_written", action: "write_file", path: "notes/readme.md", size: 30, content: "# Title\n<img src=x onerror=alert(1)>" });
      emit(complete({ intent: "manage_files" }));
    });
    const created: Blob[] = [];
    const revoked: string[] = [];
    URL.createObjectURL = ((b: Blob) => (created.push(b), "blob:1")) as any;
    URL.revokeObjectURL = ((u: string) => revoked.push(u)) as any;
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    const fetchSpy = vi.fn();
    globalThis.fetch = fetchSpy as any;
    await sendText("write a readme");
    expect(q("assistant-file")!.textContent).toContain("readme.md");
    await clickEl(q("assistant-file-open"));
    const dialog = q("assistant-file-dialog")!;
    expect(dialog.querySelector("h1")?.textContent).toBe("Title");
    expect(dialog.innerHTML).not.toContain("onerror");
    expect(fetchSpy).not.toHaveBeenCalled();
    await clickEl(q("assistant-file-download"));
    await settle();
    expect(created[0].type).toBe("text/plain;charset=utf-8");
    expect(revoked).toEqual(["blob:1"]);
  });

  it("@ lists the canvas steps, previews the highlighted one on the canvas, Enter inserts its quoted id", async () => {
    const { bridge, calls } = fakeBridge({ nodes: [{ id: "llm-1", type: "llm", label: "Writer" }, { id: "start", type: "start" }], edges: [] });
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    typeText("look at @wri");
    await settle();
    const items = all("assistant-mention-item");
    expect(items.map((i) => i.dataset.id)).toEqual(["llm-1"]);
    expect(items[0].getAttribute("aria-selected")).toBe("true");
    await act(async () => new Promise((r) => setTimeout(r, 200))); // the preview waits for the highlight to rest
    expect(calls.selected.at(-1)).toEqual(["llm-1"]);
    key(q("assistant-input")!, "Enter");
    await settle();
    expect(q<HTMLTextAreaElement>("assistant-input")!.value).toBe("look at 'llm-1'");
    expect(stream.bodies).toHaveLength(0);
    expect(q("assistant-mentions")).toBeNull();
  });

  it("input history: Up recalls the last message; the slash hints show under a '/'", async () => {
    localStorage.setItem("plait-assistant-input-history", JSON.stringify(["latest", "older"]));
    const { bridge } = fakeBridge();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    key(q("assistant-input")!, "ArrowUp");
    await settle();
    expect(q<HTMLTextAreaElement>("assistant-input")!.value).toBe("latest");
    typeText("/sk");
    await settle();
    expect(q("assistant-slash-hints")!.textContent).toContain("/skip-all");
  });

  it("Undo the assistant's changes restores the restore point and commits the returned draft", async () => {
    const { bridge, doc } = fakeBridge({ nodes: [{ id: "new", type: "llm" }], edges: [] });
    stream.scripts.push((emit: (e: AssistantEvent) => void) => emit(complete({ intent: "build_flow", restore_version_id: 7 })));
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    await sendText("change it");
    const calls: string[] = [];
    globalThis.fetch = vi.fn(async (path: string, init: RequestInit) => {
      calls.push(`${init.method} ${path}`);
      return new Response(JSON.stringify({ id: "f1", name: "f", draft: { nodes: [{ id: "before", type: "start" }], edges: [] }, problems: [] }), { status: 200, headers: { "content-type": "application/json" } });
    }) as any;
    await clickEl(q("assistant-undo"));
    expect(calls).toEqual(["POST /api/v1/flows/f1/restore-points/7/restore"]);
    expect(doc().nodes.map((n) => n.id)).toEqual(["before"]);
  });

  it("a remount (reload) forgets the session the tab was on, then resets its fresh one", async () => {
    const { bridge } = fakeBridge();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    const first = stream.resets[0];
    unmount();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    expect(stream.resets[1]).not.toBe(first);
    expect(stream.resets[2]).toBe(first);
    expect(q("assistant-panel")!.dataset.session).toBe(stream.resets[1]);
  });

  it("keeps the size it was resized to", async () => {
    const { bridge } = fakeBridge();
    mount(<AssistantPanel bridge={bridge} open onClose={() => {}} />);
    await settle();
    const handle = q("assistant-resize")!;
    act(() => {
      handle.dispatchEvent(new MouseEvent("pointerdown", { bubbles: true, clientX: 100, clientY: 100 }) as any);
    });
    act(() => {
      window.dispatchEvent(new MouseEvent("pointermove", { clientX: 60, clientY: 150 }) as any);
      window.dispatchEvent(new MouseEvent("pointerup", {}) as any);
    });
    expect(JSON.parse(localStorage.getItem("plait-assistant-size")!)).toEqual({ width: 640, height: 700 });
    expect(q("assistant-panel")!.style.width).toBe("640px");
  });
});
