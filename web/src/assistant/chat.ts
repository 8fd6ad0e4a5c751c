/**
 * The chat the panel shows, as a pure reducer over `ChatMessage[]`: the stream's events land on
 * their assistant message, and the user's decisions (apply, dismiss, accept, continue...) change
 * card states. Side effects stay out: the panel sends, commits to the canvas and sets timers.
 *
 * The canvas half of an event is decided by `routeUpdate` (F22-F24): field edits go to the
 * carousel, a `set_flow` becomes a pending proposal (unless skip-all or `auto_apply`), and while a
 * proposal is pending every later change is buffered in its `tail` (M-S13) to be replayed after it
 * (`applyProposal` in applyUpdate.ts). Everything else applies live. The reducer records each
 * decision in `lastRoute`, so a panel that keeps the state in a ref can do:
 *
 *     state = chatReducer(state, { type: "event", messageId, event, skipAll });
 *     if (state.lastRoute?.route === "apply") bridge.commit(applyFlowUpdate(bridge.document(), state.lastRoute.update));
 *
 * Follow-up turns the panel must send (skip-all's silent plan approval, the edit continuation, a
 * plan's Continue) are put in `followUp`; `user_sent` clears it.
 */
import { addTask } from "./buildTasks";
import { EDIT_CONTINUATION_INPUT, PLAN_APPROVAL_INPUT, refinementInput } from "./refine";
import type { AssistantEvent, ChatMessage, CompleteData, FlowProposal, FlowUpdate } from "./types";

export type UpdateRoute = "apply" | "buffer" | "propose" | "edit" | "plan";

export interface FollowUp {
  /** The `input_value` to send. */
  input: string;
  /** The user bubble's text (not shown when silent). */
  text: string;
  /** No user bubble (F30, F36). */
  silent: boolean;
  /** Stream into this assistant message instead of a new one. */
  reuseMessageId: string | null;
  /** Save the canvas before sending (the continuation reads the saved draft, F30). */
  flush: boolean;
}

export interface ChatState {
  messages: ChatMessage[];
  /** A turn is streaming (or skip-all's approval is about to follow, F36): "Working on it...". */
  processing: boolean;
  /** The assistant message the current turn streams into. */
  activeMessageId: string | null;
  /** A dismissed plan being refined: the next message carries it (F32). */
  refiningPlan: { markdown: string; messageId: string } | null;
  /** A turn the panel should send now. */
  followUp: FollowUp | null;
  /** Skip-all: the message whose plan was approved automatically; its `complete` queues the approval. */
  autoApproveMessageId: string | null;
  /** Messages whose `set_flow` went straight to the canvas: their `flow_preview` makes no card. */
  directFlowMessageIds: string[];
  /** Per message, how many of its edits a continuation already covered. */
  continuedEdits: Record<string, number>;
  /** The canvas decision of the last `flow_update` event. */
  lastRoute: { messageId: string; route: UpdateRoute; update: FlowUpdate } | null;
}

/** The user (or the panel, silently) started a turn; `userSent` makes one with fresh ids. */
export interface UserSentAction {
  type: "user_sent";
  text: string;
  silent?: boolean;
  reuseMessageId?: string | null;
  userId: string;
  assistantId: string;
  now: number;
}

export type ChatAction =
  | UserSentAction
  | { type: "event"; messageId: string; event: AssistantEvent; skipAll: boolean }
  | { type: "request_failed"; messageId: string; error: string }
  | { type: "stopped" }
  | { type: "local_reply"; userText: string; replyText: string; userId: string; assistantId: string; now: number }
  | { type: "proposal_applied"; messageId: string }
  | { type: "proposal_reverted"; messageId: string }
  | { type: "proposal_dismissed"; messageId: string }
  | { type: "edit_accepted"; messageId: string; editId: string }
  | { type: "edit_dismissed"; messageId: string; editId: string }
  | { type: "plan_continue"; messageId: string }
  | { type: "plan_dismiss"; messageId: string }
  | { type: "plan_reset"; messageId: string }
  | { type: "followup_cleared" }
  | { type: "load_session"; messages: ChatMessage[] }
  | { type: "new_session" };

/** How long an applied proposal shows "Added to canvas" before it can be applied again (F27). */
export const APPROVED_DISPLAY_DURATION_MS = 3000;

export function initialChatState(messages: ChatMessage[] = []): ChatState {
  return {
    messages,
    processing: false,
    activeMessageId: null,
    refiningPlan: null,
    followUp: null,
    autoApproveMessageId: null,
    directFlowMessageIds: [],
    continuedEdits: {},
    lastRoute: null,
  };
}

let counter = 0;

/** A message id unique in this page. */
export function newMessageId(prefix = "m"): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${counter.toString(36)}`;
}

/** The `user_sent` action, with fresh ids. */
export function userSent(text: string, opts: { silent?: boolean; reuseMessageId?: string | null; now?: number } = {}): UserSentAction {
  return {
    type: "user_sent",
    text,
    silent: opts.silent ?? false,
    reuseMessageId: opts.reuseMessageId ?? null,
    userId: newMessageId("u"),
    assistantId: newMessageId("a"),
    now: opts.now ?? Date.now(),
  };
}

/** The `local_reply` action (an answer made in the browser, e.g. /skip-all's confirmation). */
export function localReply(userText: string, replyText: string, now: number = Date.now()): ChatAction {
  return { type: "local_reply", userText, replyText, userId: newMessageId("u"), assistantId: newMessageId("a"), now };
}

/** The `input_value` for what the user typed: the refinement block while a plan is being refined (F32). */
export function turnInput(state: ChatState, text: string): string {
  return state.refiningPlan ? refinementInput(state.refiningPlan.markdown, text) : text;
}

/** Where a canvas update goes (F22-F24). */
export function routeUpdate(update: FlowUpdate, ctx: { skipAll: boolean; pendingProposal: boolean }): UpdateRoute {
  switch (update.action) {
    case "edit_field":
      return "edit";
    case "propose_plan":
      return "plan";
    case "set_flow":
      return ctx.skipAll || update.auto_apply ? "apply" : "propose";
    default:
      return ctx.pendingProposal ? "buffer" : "apply";
  }
}

/** The pending proposal, if any (the newest). */
export function pendingProposal(state: ChatState): { messageId: string; proposal: FlowProposal } | null {
  for (let i = state.messages.length - 1; i >= 0; i--) {
    const p = state.messages[i].proposal;
    if (p?.status === "pending") return { messageId: state.messages[i].id, proposal: p };
  }
  return null;
}

/** The route a `flow_update` event would take in `state` (null for other events). */
export function routeEvent(state: ChatState, event: AssistantEvent, skipAll: boolean): UpdateRoute | null {
  if (event.event !== "flow_update") return null;
  return routeUpdate(event, { skipAll, pendingProposal: !!pendingProposal(state) });
}

/** The thinking label for a streaming message (F20, F38). */
export function thinkingLabel(message: ChatMessage): string {
  const steps = message.steps ?? [];
  for (let i = steps.length - 1; i >= 0; i--) {
    if (steps[i] === "generating_document") return "Generating document...";
    if (steps[i] === "orchestrating") return "Orchestrating...";
    if (steps[i] === "generating_flow") return "Generating flow...";
  }
  return "Generating...";
}

/** The messages to render (hidden slots and silent turns left out). */
export function visibleMessages(state: ChatState): ChatMessage[] {
  return state.messages.filter((m) => !m.hidden);
}

// ---------------------------------------------------------------- internals

function updateMessage(state: ChatState, id: string, fn: (m: ChatMessage) => ChatMessage): ChatState {
  let changed = false;
  const messages = state.messages.map((m) => {
    if (m.id !== id) return m;
    const next = fn(m);
    if (next !== m) changed = true;
    return next;
  });
  return changed ? { ...state, messages } : state;
}

function endTurn(state: ChatState, messageId: string): ChatState {
  if (state.activeMessageId !== null && state.activeMessageId !== messageId) return state;
  return { ...state, processing: false, activeMessageId: null };
}

function proposalFrom(flow: FlowProposal["flow"], name?: string): FlowProposal {
  return {
    flow,
    name: name || (typeof flow.name === "string" && flow.name) || "Proposed flow",
    nodeCount: Array.isArray(flow.nodes) ? flow.nodes.length : 0,
    edgeCount: Array.isArray(flow.edges) ? flow.edges.length : 0,
    status: "pending",
    tail: [],
  };
}

function sumComplete(prev: CompleteData | undefined, next: CompleteData): CompleteData {
  if (!prev?.usage || !next.usage) return next;
  return {
    ...next,
    usage: {
      input_tokens: prev.usage.input_tokens + next.usage.input_tokens,
      output_tokens: prev.usage.output_tokens + next.usage.output_tokens,
      total_tokens: prev.usage.total_tokens + next.usage.total_tokens,
    },
    duration_seconds: (prev.duration_seconds ?? 0) + (next.duration_seconds ?? 0),
  };
}

/** F30: every edit of the message decided, one applied since the last continuation, and the server expects it. */
export function editContinuationDue(state: ChatState, messageId: string): boolean {
  const m = state.messages.find((x) => x.id === messageId);
  if (!m || m.status !== "complete" || !m.complete?.continuation_expected || !m.edits?.length) return false;
  if (m.edits.some((e) => e.status === "pending")) return false;
  const fresh = m.edits.slice(state.continuedEdits[messageId] ?? 0);
  return fresh.some((e) => e.status === "applied");
}

function queueContinuation(state: ChatState, messageId: string): ChatState {
  if (!editContinuationDue(state, messageId)) return state;
  const m = state.messages.find((x) => x.id === messageId)!;
  return {
    ...state,
    continuedEdits: { ...state.continuedEdits, [messageId]: m.edits!.length },
    followUp: { input: EDIT_CONTINUATION_INPUT, text: EDIT_CONTINUATION_INPUT, silent: true, reuseMessageId: messageId, flush: true },
  };
}

function onFlowUpdate(state: ChatState, m: ChatMessage, update: FlowUpdate, skipAll: boolean): ChatState {
  const pending = pendingProposal(state);
  const route = routeUpdate(update, { skipAll, pendingProposal: !!pending });
  let next: ChatState = { ...state, lastRoute: { messageId: m.id, route, update } };
  switch (route) {
    case "edit": {
      if (update.action !== "edit_field") return next;
      return updateMessage(next, m.id, (x) => {
        const edits = (x.edits ?? []).filter((e) => e.update.id !== update.id || e.status !== "pending");
        return { ...x, edits: [...edits, { update, status: "pending" }] };
      });
    }
    case "plan": {
      if (update.action !== "propose_plan") return next;
      if (skipAll) {
        // F36: no card, the plan approved at once; the slot is cleared and hidden until the build streams into it.
        next = { ...next, autoApproveMessageId: m.id };
        return updateMessage(next, m.id, (x) => ({ ...x, text: "", hidden: true, plan: { markdown: update.markdown, status: "approved" } }));
      }
      next = { ...next, refiningPlan: null }; // M-S29: a new plan clears the refinement stash
      return updateMessage(next, m.id, (x) => ({ ...x, plan: { markdown: update.markdown, status: "pending" } }));
    }
    case "propose": {
      if (update.action !== "set_flow" || !update.flow) return next;
      return updateMessage(next, m.id, (x) => ({ ...x, proposal: proposalFrom(update.flow) }));
    }
    case "buffer": {
      return updateMessage(next, pending!.messageId, (x) => ({ ...x, proposal: { ...x.proposal!, tail: [...x.proposal!.tail, update] } }));
    }
    case "apply": {
      if (update.action === "set_flow") {
        return next.directFlowMessageIds.includes(m.id) ? next : { ...next, directFlowMessageIds: [...next.directFlowMessageIds, m.id] };
      }
      return updateMessage(next, m.id, (x) => {
        const before = x.tasks ?? [];
        const tasks = addTask(before, update);
        return tasks === before ? x : { ...x, tasks };
      });
    }
  }
}

function onEvent(state: ChatState, messageId: string, event: AssistantEvent, skipAll: boolean): ChatState {
  const m = state.messages.find((x) => x.id === messageId);
  if (!m || m.role !== "assistant" || m.status !== "streaming") return state; // late events after a stop
  switch (event.event) {
    case "progress":
      return updateMessage(state, messageId, (x) => {
        const steps = x.steps ?? [];
        return { ...x, progress: event, steps: steps[steps.length - 1] === event.step ? steps : [...steps, event.step] };
      });
    case "token":
      return typeof event.chunk === "string" && event.chunk ? updateMessage(state, messageId, (x) => ({ ...x, text: x.text + event.chunk })) : state;
    case "flow_update":
      return onFlowUpdate(state, m, event, skipAll);
    case "flow_preview": {
      if (m.proposal) {
        return updateMessage(state, messageId, (x) => ({
          ...x,
          proposal: { ...x.proposal!, name: event.name || x.proposal!.name, nodeCount: event.node_count ?? x.proposal!.nodeCount, edgeCount: event.edge_count ?? x.proposal!.edgeCount },
        }));
      }
      if (state.directFlowMessageIds.includes(messageId) || !event.flow || !Array.isArray(event.flow.nodes)) return state;
      // The agent wrote the flow as text (B33): it still waits for the user's decision.
      return updateMessage(state, messageId, (x) => ({ ...x, proposal: proposalFrom(event.flow, event.name) }));
    }
    case "file_written":
      return updateMessage(state, messageId, (x) => ({
        ...x,
        files: [...(x.files ?? []), { action: event.action, path: event.path, size: event.size, ...(event.content !== undefined ? { content: event.content } : {}) }],
      }));
    case "run_started":
      return updateMessage(state, messageId, (x) => (x.runIds?.includes(event.run_id) ? x : { ...x, runIds: [...(x.runIds ?? []), event.run_id] }));
    case "complete": {
      const auto = state.autoApproveMessageId === messageId;
      let next = updateMessage(state, messageId, (x) => {
        const out: ChatMessage = { ...x, status: "complete", progress: null, complete: sumComplete(x.complete, event.data) };
        if (!auto && !x.text.trim() && typeof event.data?.result === "string") out.text = event.data.result;
        return out;
      });
      if (auto) {
        // F36: the same slot continues with the silent approval; processing never blinks.
        return {
          ...next,
          autoApproveMessageId: null,
          followUp: { input: PLAN_APPROVAL_INPUT, text: PLAN_APPROVAL_INPUT, silent: true, reuseMessageId: messageId, flush: false },
        };
      }
      next = endTurn(next, messageId);
      return queueContinuation(next, messageId);
    }
    case "error": {
      const next = updateMessage(state, messageId, (x) => ({ ...x, status: "error", progress: null, error: event.message }));
      return { ...endTurn(next, messageId), autoApproveMessageId: null };
    }
    case "cancelled": {
      const next = updateMessage(state, messageId, (x) => ({ ...x, status: "cancelled", progress: null }));
      return { ...endTurn(next, messageId), autoApproveMessageId: null };
    }
    default:
      return state;
  }
}

function setProposal(state: ChatState, messageId: string, from: FlowProposal["status"], to: FlowProposal["status"]): ChatState {
  return updateMessage(state, messageId, (x) => (x.proposal?.status === from ? { ...x, proposal: { ...x.proposal, status: to } } : x));
}

function setEdit(state: ChatState, messageId: string, editId: string, to: "applied" | "dismissed"): ChatState {
  const next = updateMessage(state, messageId, (x) => {
    if (!x.edits?.some((e) => e.update.id === editId && e.status === "pending")) return x;
    return { ...x, edits: x.edits.map((e) => (e.update.id === editId && e.status === "pending" ? { ...e, status: to } : e)) };
  });
  return next === state ? state : queueContinuation(next, messageId);
}

function setPlan(state: ChatState, messageId: string, from: string[], to: "approved" | "refining" | "dismissed"): ChatState {
  return updateMessage(state, messageId, (x) => (x.plan && from.includes(x.plan.status) ? { ...x, plan: { ...x.plan, status: to } } : x));
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "user_sent": {
      const silent = !!action.silent;
      let messages = state.messages;
      if (!silent) {
        // F27: a new user message auto-dismisses a pending proposal (no replay).
        messages = messages.map((m) => (m.proposal?.status === "pending" ? { ...m, proposal: { ...m.proposal, status: "dismissed" } } : m));
        messages = [...messages, { id: action.userId, role: "user", text: action.text, status: "complete", createdAt: action.now }];
      }
      const reuse = action.reuseMessageId ? messages.find((m) => m.id === action.reuseMessageId && m.role === "assistant") : undefined;
      let activeMessageId: string;
      if (reuse) {
        activeMessageId = reuse.id;
        messages = messages.map((m) => {
          if (m.id !== reuse.id) return m;
          const out: ChatMessage = { ...m, status: "streaming", hidden: false, progress: null };
          delete out.error;
          return out;
        });
      } else {
        activeMessageId = action.assistantId;
        messages = [...messages, { id: action.assistantId, role: "assistant", text: "", status: "streaming", createdAt: action.now }];
      }
      return {
        ...state,
        messages,
        processing: true,
        activeMessageId,
        refiningPlan: silent ? state.refiningPlan : null, // used once (F32)
        followUp: null,
        lastRoute: null,
      };
    }
    case "event":
      return onEvent({ ...state, lastRoute: null }, action.messageId, action.event, action.skipAll);
    case "request_failed": {
      const next = updateMessage(state, action.messageId, (x) => ({ ...x, status: "error", progress: null, error: action.error }));
      return { ...endTurn(next, action.messageId), autoApproveMessageId: null, followUp: null };
    }
    case "stopped": {
      // F18: the message is cancelled, its progress goes, a new message can be sent.
      const id = state.activeMessageId;
      const next = id
        ? updateMessage(state, id, (x) => (x.status === "streaming" ? { ...x, status: "cancelled", progress: null } : x))
        : state;
      return { ...next, processing: false, activeMessageId: null, followUp: null, autoApproveMessageId: null };
    }
    case "local_reply":
      return {
        ...state,
        messages: [
          ...state.messages,
          { id: action.userId, role: "user", text: action.userText, status: "complete", createdAt: action.now },
          { id: action.assistantId, role: "assistant", text: action.replyText, status: "complete", createdAt: action.now },
        ],
      };
    case "proposal_applied":
      return setProposal(state, action.messageId, "pending", "applied");
    case "proposal_reverted": {
      // F27 / M-S17: back to pending after 3 s, unless dismissed or a new message was sent since.
      const at = state.messages.findIndex((m) => m.id === action.messageId);
      if (at < 0 || state.messages.slice(at + 1).some((m) => m.role === "user" && !m.hidden)) return state;
      return setProposal(state, action.messageId, "applied", "pending");
    }
    case "proposal_dismissed":
      return setProposal(state, action.messageId, "pending", "dismissed");
    case "edit_accepted":
      return setEdit(state, action.messageId, action.editId, "applied");
    case "edit_dismissed":
      return setEdit(state, action.messageId, action.editId, "dismissed");
    case "plan_continue": {
      const next = setPlan(state, action.messageId, ["pending", "refining"], "approved");
      if (next === state) return state;
      return {
        ...next,
        refiningPlan: null,
        followUp: { input: PLAN_APPROVAL_INPUT, text: PLAN_APPROVAL_INPUT, silent: false, reuseMessageId: null, flush: false },
      };
    }
    case "plan_dismiss": {
      // M-S27: local only, no request; the next message carries the plan.
      const next = setPlan(state, action.messageId, ["pending"], "refining");
      if (next === state) return state;
      const plan = next.messages.find((m) => m.id === action.messageId)!.plan!;
      return { ...next, refiningPlan: { markdown: plan.markdown, messageId: action.messageId } };
    }
    case "plan_reset": {
      const next = setPlan(state, action.messageId, ["refining"], "dismissed");
      if (next === state) return state;
      return { ...next, refiningPlan: next.refiningPlan?.messageId === action.messageId ? null : next.refiningPlan };
    }
    case "followup_cleared":
      return state.followUp ? { ...state, followUp: null } : state;
    case "load_session":
      // F12: no refining state, no stash; the stored messages as they were.
      return initialChatState(action.messages.map((m) => (m.status === "streaming" ? { ...m, status: "cancelled", progress: null } : m)));
    case "new_session":
      return initialChatState();
    default:
      return state;
  }
}
