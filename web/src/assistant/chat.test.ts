import { describe, expect, it } from "vitest";
import type { FlowDocument } from "../types";
import { applyFlowUpdate, applyProposal } from "./applyUpdate";
import {
  chatReducer,
  editContinuationDue,
  initialChatState,
  localReply,
  pendingProposal,
  routeEvent,
  routeUpdate,
  thinkingLabel,
  turnInput,
  userSent,
  visibleMessages,
  type ChatAction,
  type ChatState,
} from "./chat";
import { EDIT_CONTINUATION_INPUT, PLAN_APPROVAL_INPUT, refinementInput } from "./refine";
import type { AssistantEvent, CompleteData, FlowUpdate } from "./types";

const FLOW: FlowDocument = {
  name: "Triage",
  nodes: [
    { id: "start", type: "start", position: { x: 0, y: 0 } },
    { id: "out", type: "output", position: { x: 300, y: 0 } },
  ],
  edges: [{ source: "start", target: "out" }],
};

function complete(patch: Partial<CompleteData> = {}): AssistantEvent {
  return {
    event: "complete",
    data: {
      result: "done",
      validated: false,
      class_name: null,
      component_code: null,
      validation_attempts: 0,
      intent: "build_flow",
      provider: "scripted",
      model: "m",
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
      duration_seconds: 1.5,
      ...patch,
    },
  };
}

const fu = (u: FlowUpdate): AssistantEvent => ({ ...u, event: "flow_update" }) as AssistantEvent;

/** A small driver: send a message, feed events, read the state. */
class Chat {
  state: ChatState = initialChatState();
  skipAll = false;
  applied: FlowUpdate[] = [];

  do(action: ChatAction): this {
    this.state = chatReducer(this.state, action);
    return this;
  }

  send(text: string, opts: { silent?: boolean; reuseMessageId?: string | null } = {}): string {
    this.do(userSent(text, opts));
    return this.state.activeMessageId!;
  }

  emit(id: string, ...events: AssistantEvent[]): this {
    for (const event of events) {
      this.do({ type: "event", messageId: id, event, skipAll: this.skipAll });
      if (this.state.lastRoute?.route === "apply") this.applied.push(this.state.lastRoute.update);
    }
    return this;
  }

  msg(id: string) {
    return this.state.messages.find((m) => m.id === id)!;
  }
}

describe("chat: turns and messages", () => {
  it("a send adds the user's message and a streaming assistant slot; processing until complete", () => {
    const c = new Chat();
    const id = c.send("hello");
    expect(c.state.messages.map((m) => [m.role, m.status])).toEqual([
      ["user", "complete"],
      ["assistant", "streaming"],
    ]);
    expect(c.state.processing).toBe(true);
    c.emit(id, { event: "token", chunk: "Hi " }, { event: "token", chunk: "there" }, complete());
    expect(c.msg(id).text).toBe("Hi there");
    expect(c.msg(id).status).toBe("complete");
    expect(c.state.processing).toBe(false);
    expect(c.state.activeMessageId).toBeNull();
  });

  it("F19 / A-S28: the usage and duration are stored on the completed message", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, complete());
    expect(c.msg(id).complete!.usage.total_tokens).toBe(15);
    expect(c.msg(id).complete!.duration_seconds).toBe(1.5);
  });

  it("a reply with no streamed tokens shows the result", () => {
    const c = new Chat();
    const id = c.send("make a component");
    c.emit(id, complete({ result: "Here is your component", validated: true }));
    expect(c.msg(id).text).toBe("Here is your component");
  });

  it("F14: progress is tracked with its steps in order; complete drops the progress", () => {
    const c = new Chat();
    const id = c.send("make a component");
    const steps = ["generating_component", "generating", "extracting_code", "validating", "validated"] as const;
    for (const step of steps) c.emit(id, { event: "progress", step, attempt: 1, max_attempts: 3 });
    c.emit(id, { event: "progress", step: "validated", attempt: 1, max_attempts: 3 });
    expect(c.msg(id).steps).toEqual([...steps]);
    expect(c.msg(id).progress!.step).toBe("validated");
    c.emit(id, complete({ validated: true }));
    expect(c.msg(id).progress).toBeNull();
  });

  it("F20: thinking labels follow the steps", () => {
    const c = new Chat();
    const id = c.send("q");
    expect(thinkingLabel(c.msg(id))).toBe("Generating...");
    c.emit(id, { event: "progress", step: "generating_flow", attempt: 1, max_attempts: 3 });
    expect(thinkingLabel(c.msg(id))).toBe("Generating flow...");
    c.emit(id, { event: "progress", step: "orchestrating", attempt: 1, max_attempts: 3 });
    expect(thinkingLabel(c.msg(id))).toBe("Orchestrating...");
    c.emit(id, { event: "progress", step: "generating_document", attempt: 1, max_attempts: 3 });
    expect(thinkingLabel(c.msg(id))).toBe("Generating document...");
  });

  it("an error event ends the turn with the message", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, { event: "error", message: "The model is unreachable." });
    expect(c.msg(id)).toMatchObject({ status: "error", error: "The model is unreachable." });
    expect(c.state.processing).toBe(false);
  });

  it("an HTTP failure before the stream marks the message failed", () => {
    const c = new Chat();
    const id = c.send("q");
    c.do({ type: "request_failed", messageId: id, error: "no model provider is configured" });
    expect(c.msg(id)).toMatchObject({ status: "error", error: "no model provider is configured" });
    expect(c.state.processing).toBe(false);
  });

  it("A-S15 / F18: Stop cancels the message, drops its progress, and a new message can be sent; late events are ignored", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, { event: "progress", step: "generating", attempt: 1, max_attempts: 3 }, { event: "token", chunk: "par" });
    c.do({ type: "stopped" });
    expect(c.msg(id).status).toBe("cancelled");
    expect(c.msg(id).progress).toBeNull();
    expect(c.state.processing).toBe(false);
    c.emit(id, { event: "token", chunk: "tial" }, complete());
    expect(c.msg(id).text).toBe("par");
    expect(c.msg(id).status).toBe("cancelled");
    const next = c.send("again");
    expect(c.msg(next).status).toBe("streaming");
  });

  it("a server-side cancelled event ends the turn as cancelled", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, { event: "cancelled", message: "stopped" });
    expect(c.msg(id).status).toBe("cancelled");
    expect(c.state.processing).toBe(false);
  });

  it("F38 / M-S25: file_written adds file cards in arrival order", () => {
    const c = new Chat();
    const id = c.send("write a readme");
    c.emit(
      id,
      { event: "file_written", action: "write_file", path: "README.md", size: 5, content: "# Hi\n" },
      { event: "file_written", action: "edit_file", path: "notes.md", size: 9 },
      complete({ intent: "manage_files" }),
    );
    expect(c.msg(id).files).toEqual([
      { action: "write_file", path: "README.md", size: 5, content: "# Hi\n" },
      { action: "edit_file", path: "notes.md", size: 9 },
    ]);
  });

  it("decision 5: run_started records the run once", () => {
    const c = new Chat();
    const id = c.send("run it");
    c.emit(id, { event: "run_started", run_id: "r1", flow_id: "f" }, { event: "run_started", run_id: "r1", flow_id: "f" });
    expect(c.msg(id).runIds).toEqual(["r1"]);
  });

  it("events for an unknown message change nothing", () => {
    const c = new Chat();
    c.send("q");
    const before = c.state;
    c.emit("nope", { event: "token", chunk: "x" });
    expect(c.state.messages).toBe(before.messages);
  });

  it("M-S32: a local reply (/skip-all's confirmation) adds both messages without a turn", () => {
    const c = new Chat();
    c.do(localReply("/skip-all", "Skip-all mode enabled."));
    expect(c.state.messages.map((m) => [m.role, m.text, m.status])).toEqual([
      ["user", "/skip-all", "complete"],
      ["assistant", "Skip-all mode enabled.", "complete"],
    ]);
    expect(c.state.processing).toBe(false);
  });
});

describe("chat: live canvas updates and build tasks", () => {
  it("M-S38: add, add, connect, configure apply live and give 4 rows in order", () => {
    const c = new Chat();
    const id = c.send("build it step by step");
    const updates: FlowUpdate[] = [
      { action: "add_component", node: { id: "ChatInput-a", type: "ChatInput" } },
      { action: "add_component", node: { id: "Agent-b", type: "Agent" } },
      { action: "connect", edge: { source: "ChatInput-a", target: "Agent-b" } },
      { action: "configure", component_id: "Agent-b", params: { x: 1 } },
    ];
    c.emit(id, ...updates.map(fu));
    expect(c.applied.map((u) => u.action)).toEqual(["add_component", "add_component", "connect", "configure"]);
    expect(c.msg(id).tasks!.map((t) => t.label)).toEqual(["Added ChatInput-a", "Added Agent-b", "Wired ChatInput-a → Agent-b", "Configured Agent-b"]);
  });

  it("M-S39: add_component sent twice gives one row", () => {
    const c = new Chat();
    const id = c.send("q");
    const add = fu({ action: "add_component", node: { id: "ChatInput-abc", type: "ChatInput" } });
    c.emit(id, add, add);
    expect(c.msg(id).tasks!.length).toBe(1);
  });

  it("M-S40: set_flow and edit_field never become rows", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(
      id,
      fu({ action: "set_flow", flow: FLOW }),
      fu({ action: "edit_field", id: "e1", component_id: "out", component_type: "output", field: "name", old_value: "a", new_value: "b", patch: [] }),
    );
    expect(c.msg(id).tasks ?? []).toEqual([]);
  });

  it("M-S41: a new message with no events has no task list; the earlier message keeps its own", () => {
    const c = new Chat();
    const first = c.send("q1");
    c.emit(first, fu({ action: "add_component", node: { id: "a", type: "text" } }), complete());
    const second = c.send("q2");
    c.emit(second, complete());
    expect(c.msg(first).tasks!.length).toBe(1);
    expect(c.msg(second).tasks).toBeUndefined();
  });

  it("select_output and set_connection_mode are applied (no rows)", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, fu({ action: "select_output", component_id: "a", output_name: "o" }));
    expect(c.state.lastRoute?.route).toBe("apply");
    expect(c.msg(id).tasks).toBeUndefined();
  });
});

describe("chat: flow proposals (set_flow gate)", () => {
  function proposed(): { c: Chat; id: string } {
    const c = new Chat();
    const id = c.send("build a triage flow");
    c.emit(id, fu({ action: "set_flow", flow: FLOW }), { event: "flow_preview", flow: FLOW, name: "Support triage", node_count: 2, edge_count: 1, graph: "start -> out" });
    return { c, id };
  }

  it("F22: a set_flow becomes a pending proposal; nothing is applied", () => {
    const { c, id } = proposed();
    expect(c.applied).toEqual([]);
    expect(c.msg(id).proposal).toMatchObject({ status: "pending", name: "Support triage", nodeCount: 2, edgeCount: 1, tail: [] });
    expect(c.msg(id).proposal!.flow).toEqual(FLOW);
    expect(pendingProposal(c.state)?.messageId).toBe(id);
  });

  it("M-S13: a set_flow followed by add_component while pending: the add goes into the tail, in order, and is not applied", () => {
    const { c, id } = proposed();
    const add: FlowUpdate = { action: "add_component", node: { id: "x", type: "text" } };
    const conf: FlowUpdate = { action: "configure", component_id: "x", params: { text: "a" } };
    c.emit(id, fu(add), fu(conf));
    expect(c.state.lastRoute?.route).toBe("buffer");
    expect(c.applied).toEqual([]);
    expect(c.msg(id).proposal!.tail.map((u) => u.action)).toEqual(["add_component", "configure"]);
    expect(c.msg(id).tasks).toBeUndefined();
    // Continue (Replace): set_flow replays first, then the add, with a warning
    const r = applyProposal({ id: "f", nodes: [], edges: [] }, c.msg(id).proposal!, "replace");
    expect(r.doc.nodes.map((n) => n.id)).toEqual(["start", "out", "x"]);
    expect(r.doc.nodes[2].config).toEqual({ text: "a" });
    expect(r.warning).not.toBeNull();
  });

  it("F23: edit_field is never buffered, even while a proposal is pending", () => {
    const { c, id } = proposed();
    c.emit(id, fu({ action: "edit_field", id: "e1", component_id: "out", component_type: "output", field: "name", old_value: "a", new_value: "b", patch: [] }));
    expect(c.state.lastRoute?.route).toBe("edit");
    expect(c.msg(id).proposal!.tail).toEqual([]);
    expect(c.msg(id).edits!.length).toBe(1);
  });

  it("M-S2: Continue/Add -> applied; M-S17: back to pending after 3 s", () => {
    const { c, id } = proposed();
    c.emit(id, complete());
    c.do({ type: "proposal_applied", messageId: id });
    expect(c.msg(id).proposal!.status).toBe("applied");
    expect(pendingProposal(c.state)).toBeNull();
    c.do({ type: "proposal_reverted", messageId: id });
    expect(c.msg(id).proposal!.status).toBe("pending");
  });

  it("M-S17: no revert when a new message was sent in between", () => {
    const { c, id } = proposed();
    c.emit(id, complete());
    c.do({ type: "proposal_applied", messageId: id });
    c.send("thanks");
    c.do({ type: "proposal_reverted", messageId: id });
    expect(c.msg(id).proposal!.status).toBe("applied");
  });

  it("M-S17: no revert after a dismiss", () => {
    const { c, id } = proposed();
    c.do({ type: "proposal_dismissed", messageId: id });
    c.do({ type: "proposal_reverted", messageId: id });
    expect(c.msg(id).proposal!.status).toBe("dismissed");
  });

  it("M-S3: Dismiss -> dismissed; the preview stays; nothing applied", () => {
    const { c, id } = proposed();
    c.do({ type: "proposal_dismissed", messageId: id });
    expect(c.msg(id).proposal!.status).toBe("dismissed");
    expect(c.msg(id).proposal!.flow).toEqual(FLOW);
    expect(c.applied).toEqual([]);
  });

  it("M-T45: applied or dismissed proposals cannot be applied or dismissed again until pending", () => {
    const { c, id } = proposed();
    c.do({ type: "proposal_dismissed", messageId: id });
    const s = c.state;
    c.do({ type: "proposal_applied", messageId: id });
    expect(c.state).toBe(s);
  });

  it("M-S12: sending a new message while a proposal is pending dismisses it (no replay)", () => {
    const { c, id } = proposed();
    c.emit(id, fu({ action: "add_component", node: { id: "x", type: "text" } }), complete());
    const next = c.send("actually, something else");
    expect(c.msg(id).proposal!.status).toBe("dismissed");
    // later updates are live again, not buffered into the dismissed proposal
    c.emit(next, fu({ action: "add_component", node: { id: "y", type: "text" } }));
    expect(c.state.lastRoute?.route).toBe("apply");
    expect(c.msg(id).proposal!.tail.length).toBe(1);
  });

  it("F24: set_flow with auto_apply is applied directly, with no card (and its preview makes none)", () => {
    const c = new Chat();
    const id = c.send("build and run it");
    c.emit(id, fu({ action: "set_flow", flow: FLOW, auto_apply: true }), { event: "flow_preview", flow: FLOW, name: "T", node_count: 2, edge_count: 1, graph: "" });
    expect(c.applied.map((u) => u.action)).toEqual(["set_flow"]);
    expect(c.msg(id).proposal).toBeUndefined();
    // the canvas is the flow, under the canvas's own id
    const canvas = applyFlowUpdate({ id: "f", nodes: [], edges: [] }, c.applied[0]);
    expect(canvas.nodes.map((n) => n.id)).toEqual(["start", "out"]);
    expect(canvas.id).toBe("f");
  });

  it("M-S35: skip-all on and a set_flow arrives: applied directly, no proposal", () => {
    const c = new Chat();
    c.skipAll = true;
    const id = c.send("build it");
    c.emit(id, fu({ action: "set_flow", flow: FLOW }), fu({ action: "add_component", node: { id: "x", type: "text" } }));
    expect(c.applied.map((u) => u.action)).toEqual(["set_flow", "add_component"]);
    expect(c.msg(id).proposal).toBeUndefined();
  });

  it("B33: a flow_preview without a set_flow (text fallback) still waits as a proposal", () => {
    const c = new Chat();
    const id = c.send("build");
    c.emit(id, { event: "flow_preview", flow: FLOW, name: "From text", node_count: 2, edge_count: 1, graph: "" });
    expect(c.msg(id).proposal).toMatchObject({ status: "pending", name: "From text", nodeCount: 2 });
  });

  it("a second set_flow replaces the pending proposal of the message", () => {
    const { c, id } = proposed();
    const other: FlowDocument = { name: "Other", nodes: [{ id: "a", type: "start" }], edges: [] };
    c.emit(id, fu({ action: "set_flow", flow: other }));
    expect(c.msg(id).proposal).toMatchObject({ name: "Other", nodeCount: 1, status: "pending", tail: [] });
  });
});

describe("routeUpdate (F22-F24)", () => {
  const add: FlowUpdate = { action: "add_component", node: { id: "a", type: "t" } };
  it("dispatches on action", () => {
    const off = { skipAll: false, pendingProposal: false };
    expect(routeUpdate(add, off)).toBe("apply");
    expect(routeUpdate(add, { ...off, pendingProposal: true })).toBe("buffer");
    expect(routeUpdate({ action: "set_flow", flow: FLOW }, off)).toBe("propose");
    expect(routeUpdate({ action: "set_flow", flow: FLOW, auto_apply: true }, off)).toBe("apply");
    expect(routeUpdate({ action: "set_flow", flow: FLOW }, { skipAll: true, pendingProposal: false })).toBe("apply");
    expect(routeUpdate({ action: "propose_plan", markdown: "m" }, { skipAll: true, pendingProposal: true })).toBe("plan");
    expect(routeUpdate({ action: "edit_field", id: "1", component_id: "a", component_type: "t", field: "f", old_value: 0, new_value: 1, patch: [] }, { ...off, pendingProposal: true })).toBe("edit");
  });

  it("routeEvent reads the pending proposal from the state", () => {
    const c = new Chat();
    const id = c.send("q");
    expect(routeEvent(c.state, fu(add), false)).toBe("apply");
    c.emit(id, fu({ action: "set_flow", flow: FLOW }));
    expect(routeEvent(c.state, fu(add), false)).toBe("buffer");
    expect(routeEvent(c.state, { event: "token", chunk: "x" }, false)).toBeNull();
  });
});

describe("chat: the edit carousel (F29, F30)", () => {
  const edit = (id: string, field = "system"): AssistantEvent =>
    fu({ action: "edit_field", id, component_id: "llm", component_type: "llm", field, old_value: "", new_value: "You are a bakery assistant", patch: [] });

  it("M-T6: each edit_field is one pending entry; Accept -> applied, Dismiss -> dismissed", () => {
    const c = new Chat();
    const id = c.send("set the system prompt");
    c.emit(id, edit("e1"), edit("e2", "temperature"), complete());
    expect(c.msg(id).edits!.map((e) => e.status)).toEqual(["pending", "pending"]);
    c.do({ type: "edit_accepted", messageId: id, editId: "e1" });
    c.do({ type: "edit_dismissed", messageId: id, editId: "e2" });
    expect(c.msg(id).edits!.map((e) => e.status)).toEqual(["applied", "dismissed"]);
    expect(c.state.followUp).toBeNull(); // continuation_expected not set
  });

  it("F30: accepted edits with continuation_expected queue the silent continuation in the same message, once", () => {
    const c = new Chat();
    const id = c.send("set the prompt and run it");
    c.emit(id, edit("e1"), edit("e2", "temperature"), complete({ continuation_expected: true }));
    c.do({ type: "edit_accepted", messageId: id, editId: "e1" });
    expect(c.state.followUp).toBeNull(); // e2 still pending
    c.do({ type: "edit_dismissed", messageId: id, editId: "e2" });
    expect(c.state.followUp).toEqual({ input: EDIT_CONTINUATION_INPUT, text: EDIT_CONTINUATION_INPUT, silent: true, reuseMessageId: id, flush: true });
    // the panel sends it: no user bubble, the same assistant message continues
    const count = c.state.messages.length;
    const again = c.send(c.state.followUp!.input, { silent: true, reuseMessageId: id });
    expect(again).toBe(id);
    expect(c.state.messages.length).toBe(count);
    expect(c.state.followUp).toBeNull();
    expect(c.msg(id).status).toBe("streaming");
    c.emit(id, { event: "token", chunk: " Ran: olleh" }, complete({ continuation_expected: true }));
    expect(c.msg(id).text).toBe("done Ran: olleh");
    // both turns' usage counted once each on the one message
    expect(c.msg(id).complete!.usage.total_tokens).toBe(30);
    expect(c.msg(id).complete!.duration_seconds).toBe(3);
    // the edits already continued do not trigger another continuation
    expect(c.state.followUp).toBeNull();
    expect(editContinuationDue(c.state, id)).toBe(false);
  });

  it("F30: all edits dismissed: nothing is sent", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, edit("e1"), complete({ continuation_expected: true }));
    c.do({ type: "edit_dismissed", messageId: id, editId: "e1" });
    expect(c.state.followUp).toBeNull();
  });

  it("F30: edits decided while the turn still streams continue once it completes", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, edit("e1"));
    c.do({ type: "edit_accepted", messageId: id, editId: "e1" });
    expect(c.state.followUp).toBeNull();
    c.emit(id, complete({ continuation_expected: true }));
    expect(c.state.followUp?.input).toBe(EDIT_CONTINUATION_INPUT);
  });

  it("deciding an edit twice changes nothing", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, edit("e1"), complete());
    c.do({ type: "edit_accepted", messageId: id, editId: "e1" });
    const s = c.state;
    c.do({ type: "edit_dismissed", messageId: id, editId: "e1" });
    expect(c.state).toBe(s);
  });
});

describe("chat: plans and refining (F31-F33)", () => {
  const PLAN = "1. search\n2. build";
  function planned(): { c: Chat; id: string } {
    const c = new Chat();
    const id = c.send("build me something big");
    c.emit(id, { event: "token", chunk: "Here is my plan." }, fu({ action: "propose_plan", markdown: PLAN }), complete());
    return { c, id };
  }

  it("M-S26: propose_plan -> a pending plan card; Continue -> approved and the approval turn is queued", () => {
    const { c, id } = planned();
    expect(c.msg(id).plan).toEqual({ markdown: PLAN, status: "pending" });
    expect(c.applied).toEqual([]);
    c.do({ type: "plan_continue", messageId: id });
    expect(c.msg(id).plan!.status).toBe("approved");
    expect(c.state.followUp).toEqual({ input: PLAN_APPROVAL_INPUT, text: PLAN_APPROVAL_INPUT, silent: false, reuseMessageId: null, flush: false });
  });

  it("M-S27: Dismiss -> refining (not dismissed), the stash is set, no request is queued", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    expect(c.msg(id).plan!.status).toBe("refining");
    expect(c.state.refiningPlan).toEqual({ markdown: PLAN, messageId: id });
    expect(c.state.followUp).toBeNull();
    expect(c.state.processing).toBe(false);
  });

  it("M-S28: the next message sends the refinement block while the chat shows only the user's words; used once", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    expect(turnInput(c.state, "use Claude instead of GPT")).toBe(refinementInput(PLAN, "use Claude instead of GPT"));
    const next = c.send("use Claude instead of GPT");
    const users = c.state.messages.filter((m) => m.role === "user");
    expect(users[users.length - 1].text).toBe("use Claude instead of GPT");
    expect(c.state.refiningPlan).toBeNull();
    c.emit(next, complete());
    expect(turnInput(c.state, "and then?")).toBe("and then?");
  });

  it("M-S29: a new propose_plan clears the stash and makes a fresh pending card", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    const next = c.send("refine");
    c.do({ type: "plan_dismiss", messageId: id }); // no-op: not pending any more
    expect(c.state.refiningPlan).toBeNull();
    c.emit(next, fu({ action: "propose_plan", markdown: "M2" }));
    expect(c.msg(next).plan).toEqual({ markdown: "M2", status: "pending" });
    expect(c.state.refiningPlan).toBeNull();
  });

  it("M-S29: a new plan arriving while refining (stash not used yet) clears it", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    // a silent turn (not the user's words) keeps the stash until a plan replaces it
    const other = c.send("internal", { silent: true });
    expect(c.state.refiningPlan).not.toBeNull();
    c.emit(other, fu({ action: "propose_plan", markdown: "M2" }));
    expect(c.state.refiningPlan).toBeNull();
  });

  it("M-S30: Reset -> dismissed (terminal); the stash is gone", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    c.do({ type: "plan_reset", messageId: id });
    expect(c.msg(id).plan!.status).toBe("dismissed");
    expect(c.state.refiningPlan).toBeNull();
    const s = c.state;
    c.do({ type: "plan_continue", messageId: id });
    c.do({ type: "plan_dismiss", messageId: id });
    expect(c.state).toBe(s);
  });

  it("F31: Continue stays available while refining", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    c.do({ type: "plan_continue", messageId: id });
    expect(c.msg(id).plan!.status).toBe("approved");
    expect(c.state.refiningPlan).toBeNull();
    expect(c.state.followUp?.input).toBe(PLAN_APPROVAL_INPUT);
  });

  it("F33: at most one plan card per message (a later plan replaces it)", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, fu({ action: "propose_plan", markdown: "A" }), fu({ action: "propose_plan", markdown: "B" }));
    expect(c.msg(id).plan).toEqual({ markdown: "B", status: "pending" });
  });

  it("M-S31: New session or loadSession -> no refining state and an empty stash", () => {
    const { c, id } = planned();
    c.do({ type: "plan_dismiss", messageId: id });
    const stored = c.state.messages;
    c.do({ type: "new_session" });
    expect(c.state).toEqual(initialChatState());
    c.do({ type: "load_session", messages: stored });
    expect(c.state.refiningPlan).toBeNull();
    expect(c.state.messages.length).toBe(stored.length);
    expect(turnInput(c.state, "x")).toBe("x");
  });
});

describe("chat: skip-all (F36)", () => {
  it("M-S34: the plan is approved at once, the slot is cleared and hidden, the approval is queued silent in the same message; one user and one assistant message", () => {
    const c = new Chat();
    c.skipAll = true;
    const id = c.send("build me a flow with an agent and a web crawler");
    c.emit(id, { event: "progress", step: "generating_flow", attempt: 1, max_attempts: 3 }, { event: "token", chunk: "I'll plan first." }, fu({ action: "propose_plan", markdown: "the plan" }));
    expect(c.msg(id).text).toBe("");
    expect(c.msg(id).hidden).toBe(true);
    expect(c.msg(id).plan).toEqual({ markdown: "the plan", status: "approved" });
    c.emit(id, complete({ result: "I'll plan first." }));
    // the first turn does not reset the processing state
    expect(c.state.processing).toBe(true);
    expect(c.msg(id).text).toBe("");
    expect(c.state.followUp).toEqual({ input: PLAN_APPROVAL_INPUT, text: PLAN_APPROVAL_INPUT, silent: true, reuseMessageId: id, flush: false });
    // the panel sends it: silent, reusing the slot
    c.send(c.state.followUp!.input, { silent: true, reuseMessageId: id });
    expect(c.msg(id)).toMatchObject({ status: "streaming", hidden: false });
    c.emit(id, fu({ action: "set_flow", flow: FLOW }), { event: "token", chunk: "Built it." }, complete());
    expect(c.applied.map((u) => u.action)).toEqual(["set_flow"]);
    expect(c.state.processing).toBe(false);
    expect(c.state.followUp).toBeNull();
    const visible = visibleMessages(c.state);
    expect(visible.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(visible[1].text).toBe("Built it.");
  });

  it("M-S34: an error in the first turn does not queue the approval", () => {
    const c = new Chat();
    c.skipAll = true;
    const id = c.send("build");
    c.emit(id, fu({ action: "propose_plan", markdown: "p" }), { event: "error", message: "boom" });
    expect(c.state.followUp).toBeNull();
    expect(c.state.processing).toBe(false);
    expect(c.state.autoApproveMessageId).toBeNull();
  });

  it("stop during skip-all clears the queued approval", () => {
    const c = new Chat();
    c.skipAll = true;
    const id = c.send("build");
    c.emit(id, fu({ action: "propose_plan", markdown: "p" }), complete());
    expect(c.state.followUp).not.toBeNull();
    c.do({ type: "stopped" });
    expect(c.state.followUp).toBeNull();
    expect(c.state.processing).toBe(false);
  });
});

describe("chat: sessions", () => {
  it("load_session stores still-streaming messages as cancelled", () => {
    const c = new Chat();
    c.do({ type: "load_session", messages: [{ id: "a", role: "assistant", text: "x", status: "streaming", createdAt: 1 }] });
    expect(c.state.messages[0].status).toBe("cancelled");
    expect(c.state.processing).toBe(false);
  });

  it("followup_cleared drops a queued turn", () => {
    const c = new Chat();
    const id = c.send("q");
    c.emit(id, fu({ action: "propose_plan", markdown: "p" }), complete());
    c.do({ type: "plan_continue", messageId: id });
    c.do({ type: "followup_cleared" });
    expect(c.state.followUp).toBeNull();
  });
});
