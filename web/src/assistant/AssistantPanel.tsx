/**
 * The assistant panel (issue 15): a floating, resizable window centred over the canvas. It owns the
 * conversation's side effects (the stream, the session, the model choice, the canvas edits through
 * the bridge); what a message looks like is in messages/, and how events change the chat is the
 * pure reducer in chat.ts. Loaded lazily by AssistantDock on the first open.
 */
import { createPortal, flushSync } from "react-dom";
import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { request } from "../api";
import { addNode } from "../state/graph";
import type { FlowDocument, FlowOut } from "../types";
import { Dialog } from "../ui/Dialog";
import { errorText } from "../ui/format";
import { applyFlowUpdate, applyProposal as proposalDoc } from "./applyUpdate";
import { chatReducer, initialChatState, localReply, turnInput, userSent, type ChatAction, type ChatState } from "./chat";
import { fetchConfig, resetSession, streamTurn } from "./client";
import { Composer, type ComposerHandle } from "./Composer";
import { recordInput } from "./inputHistory";
import { mergeFlow, replaceFlow } from "./merge";
import { MessageView, type MessageActions } from "./messages/MessageView";
import { choiceValue, modelOptions, parseChoiceValue, resolveModelChoice, writeModelChoice } from "./modelChoice";
import { loadSessions, newSessionId, saveSession } from "./sessions";
import { isSkipAllCommand, readSkipAll, skipAllConfirmation, writeSkipAll } from "./skipAll";
import { readJson, STORAGE_KEYS, writeJson } from "./storage";
import type { AssistantConfig, AssistantEvent, CanvasBridge, ChatMessage, FlowProposal, FlowUpdate, ModelChoice, StoredSession } from "./types";
import { APPROVED_DISPLAY_DURATION_MS } from "./chat";

const ModelsPage = lazy(() => import("../settings/ModelsPage"));

const SUGGESTIONS = [
  "Ask for a component, a flow, or how something works…",
  "Try: build a flow that summarises a web page",
  "Try: create a component that counts words",
  "Try: what does the selected step do?",
  "Try: add a step that translates the answer to French",
];
const DEFAULT_SIZE = { width: 560, height: 600 };
const MIN_SIZE = { width: 320, height: 260 };

interface Size {
  width: number;
  height: number;
}

function readSize(): Size {
  const s = readJson<Partial<Size>>(STORAGE_KEYS.size, {});
  const w = Number(s.width);
  const h = Number(s.height);
  return {
    width: Number.isFinite(w) && w >= MIN_SIZE.width ? w : DEFAULT_SIZE.width,
    height: Number.isFinite(h) && h >= MIN_SIZE.height ? h : DEFAULT_SIZE.height,
  };
}


const PROVIDER_MARK: Record<string, string> = { openai: "AI", anthropic: "An", ollama: "Ol", scripted: "S", google: "G", gemini: "G", mistral: "M", groq: "Gq" };
function providerMark(name: string | undefined): string {
  if (!name) return "?";
  return PROVIDER_MARK[name] ?? name.slice(0, 2).replace(/^./, (c) => c.toUpperCase());
}

/** The session this tab is on, kept across a reload (sessionStorage: per tab) so the next mount can forget it. */
const ACTIVE_SESSION_KEY = "plait-assistant-active-session";
function readActiveSession(): string | null {
  try {
    return sessionStorage.getItem(ACTIVE_SESSION_KEY);
  } catch {
    return null;
  }
}
function writeActiveSession(id: string): void {
  try {
    sessionStorage.setItem(ACTIVE_SESSION_KEY, id);
  } catch {
    /* blocked storage: nothing is forgotten on the next reload */
  }
}

function isEmptyCanvas(doc: FlowDocument): boolean {
  return !(doc.nodes ?? []).length;
}


export default function AssistantPanel({ bridge, open, onClose }: { bridge: CanvasBridge; open: boolean; onClose: () => void }) {
  const [chat, setChat] = useState<ChatState>(() => initialChatState());
  const chatRef = useRef(chat);
  const messages: ChatMessage[] = chat.messages;
  const busy = chat.processing;

  const [config, setConfig] = useState<AssistantConfig | null>(null);
  const [configError, setConfigError] = useState<string | null>(null);
  const [choice, setChoice] = useState<ModelChoice | null>(null);
  const [skipAll, setSkipAll] = useState(readSkipAll);
  const skipAllRef = useRef(skipAll);
  skipAllRef.current = skipAll;
  const [sessionId, setSessionId] = useState(newSessionId);
  const sessionRef = useRef(sessionId);
  sessionRef.current = sessionId;
  const [sessions, setSessions] = useState<StoredSession[]>(loadSessions);
  const [modelsOpen, setModelsOpen] = useState(false);
  const [size, setSize] = useState<Size>(readSize);
  const abortRef = useRef<AbortController | null>(null);
  const composer = useRef<ComposerHandle>(null);
  const body = useRef<HTMLDivElement>(null);
  const [suggestion] = useState(() => SUGGESTIONS[Math.floor(Math.random() * SUGGESTIONS.length)]);
  const revertTimers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  /** Messages whose plan skip-all approved: no plan card for them (F36). */
  const [autoPlans, setAutoPlans] = useState<ReadonlySet<string>>(() => new Set());

  // the ref is the truth (async stream callbacks read it); the state renders it
  const act = useCallback((a: ChatAction): ChatState => {
    chatRef.current = chatReducer(chatRef.current, a);
    const next = chatRef.current;
    // a progress step is drawn even when the next events arrive in the same chunk (F14, F20)
    if (a.type === "event" && a.event.event === "progress") flushSync(() => setChat(next));
    else setChat(next);
    return next;
  }, []);

  // ------------------------------------------------------------------ config and model (F6, F7)
  const loadConfig = useCallback(async () => {
    try {
      const c = await fetchConfig();
      setConfig(c);
      setConfigError(null);
      setChoice(resolveModelChoice(c));
    } catch (e) {
      setConfigError(errorText(e));
    }
  }, []);
  useEffect(() => void loadConfig(), [loadConfig]);
  const options = useMemo(() => (config ? modelOptions(config) : []), [config]);
  const noModels = !!config && (!config.configured || !options.length);

  // ------------------------------------------------------------------ session (F9-F12)
  useEffect(() => {
    // a fresh id on mount (F11); then the session this tab used before a reload is forgotten (M-S70)
    const before = readActiveSession();
    const id = sessionRef.current;
    writeActiveSession(id);
    void (async () => {
      await resetSession(id);
      if (before && before !== id) await resetSession(before);
    })();
  }, []);
  useEffect(() => {
    // stored as it changes (a message still streaming is stored as cancelled, F10)
    const t = setTimeout(() => setSessions(saveSession(sessionId, messages)), 200);
    return () => clearTimeout(t);
  }, [messages, sessionId]);

  const stop = useCallback(() => abortRef.current?.abort(), []);

  const newSession = useCallback(() => {
    abortRef.current?.abort();
    if (messages.length) setSessions(saveSession(sessionRef.current, chatRef.current.messages));
    const old = sessionRef.current;
    const id = newSessionId();
    sessionRef.current = id;
    setSessionId(id);
    act({ type: "new_session" });
    writeActiveSession(id);
    // the reset with the new id (F9), then the old session's memory and components go (M-S71)
    void (async () => {
      await resetSession(id);
      if (old !== id) await resetSession(old);
    })();
    composer.current?.focus();
  }, [act, messages.length]);

  const loadStored = useCallback(
    (id: string) => {
      const s = loadSessions().find((x) => x.id === id);
      if (!s) return;
      abortRef.current?.abort();
      if (chatRef.current.messages.length) saveSession(sessionRef.current, chatRef.current.messages);
      sessionRef.current = s.id;
      setSessionId(s.id);
      writeActiveSession(s.id);
      act({ type: "load_session", messages: s.messages });
      setSessions(loadSessions());
    },
    [act],
  );

  // ------------------------------------------------------------------ the canvas
  // The editor's document() shows a commit only after its next render; several changes in one
  // tick (events of one chunk) must build on each other, so the panel remembers its own last
  // commit until the editor has drawn something newer.
  const bridgeRef = useRef(bridge);
  bridgeRef.current = bridge;
  const mine = useRef<{ doc: FlowDocument; before: FlowDocument } | null>(null);
  const canvasDoc = useCallback((): FlowDocument => {
    const now = bridgeRef.current.document();
    if (mine.current && mine.current.before === now) return mine.current.doc;
    mine.current = null;
    return now;
  }, []);
  const commit = useCallback(
    (doc: FlowDocument, fit = false) => {
      const before = mine.current ? mine.current.before : bridgeRef.current.document();
      mine.current = { doc, before };
      bridgeRef.current.commit(doc, fit ? { fit: true } : undefined);
    },
    [],
  );
  /** Save the draft once the editor has drawn the panel's last commit (the continuation reads the saved draft, F30). */
  const flushCanvas = useCallback(async () => {
    for (let i = 0; i < 60 && mine.current && mine.current.before === bridgeRef.current.document(); i++) await new Promise((r) => setTimeout(r, 16));
    await bridgeRef.current.flush().catch(() => undefined);
  }, []);

  const applyLive = useCallback(
    (u: FlowUpdate) => {
      if (bridge.readOnly) return;
      if (u.action === "set_flow") {
        const now = canvasDoc();
        if (isEmptyCanvas(now)) commit(replaceFlow(now, u.flow), true);
        else commit(mergeFlow(now, u.flow, bridge.sizes()).doc, true);
        return;
      }
      const now = canvasDoc();
      const next = applyFlowUpdate(now, u, bridge.sizes());
      if (next !== now) commit(next);
    },
    [bridge, commit],
  );

  const applyProposal = useCallback(
    (p: FlowProposal, mode: "add" | "replace") => {
      const r = proposalDoc(canvasDoc(), p, mode, bridge.sizes());
      if (r.warning) console.warn(`assistant: ${r.warning}`);
      commit(r.doc, true);
    },
    [bridge, commit],
  );

  // ------------------------------------------------------------------ a turn
  /** Stream one turn started by `action` (a `user_sent`); then send the follow-up it queued, if any. */
  const runTurn = useCallback(
    async (action: Extract<ChatAction, { type: "user_sent" }>, input: string): Promise<void> => {
      if (!choice) return;
      const controller = new AbortController();
      abortRef.current = controller;
      const slot = act(action).activeMessageId;
      if (!slot) return;
      bridge.setLocked(true);
      const handle = (e: AssistantEvent) => {
        const next = act({ type: "event", messageId: slot, event: e, skipAll: skipAllRef.current });
        if (next.autoApproveMessageId === slot && e.event === "flow_update" && e.action === "propose_plan") setAutoPlans((s) => new Set(s).add(slot));
        if (next.lastRoute?.route === "apply") applyLive(next.lastRoute.update);
        if (e.event === "run_started") bridge.watchRun(e.run_id);
        if (e.event === "complete" && e.data.validated && e.data.class_name) void bridge.refreshTypes().catch(() => undefined);
      };
      // Events of one network chunk arrive together; each progress step stays on screen for at
      // least a task (labels and "Attempt X of Y" are seen, F14/F20) before the next event lands.
      const queue: AssistantEvent[] = [];
      let busyPump = false;
      let pumping: Promise<void> = Promise.resolve();
      const pump = async () => {
        while (queue.length) {
          const e = queue.shift()!;
          handle(e);
          // (always: the rest of the chunk is still being parsed when a progress event arrives)
          if (e.event === "progress") await new Promise((r) => setTimeout(r, 0));
        }
        busyPump = false;
      };
      const onEvent = (e: AssistantEvent) => {
        queue.push(e);
        if (busyPump) return;
        busyPump = true;
        pumping = pump();
      };
      try {
        await streamTurn({ flow_id: bridge.flowId, input_value: input, session_id: sessionRef.current, provider: choice.provider, model_name: choice.model }, onEvent, controller.signal);
        await pumping;
        if (controller.signal.aborted) act({ type: "stopped" }); // Stop (F18), New session
      } catch (e) {
        await pumping;
        if (controller.signal.aborted) act({ type: "stopped" });
        else act({ type: "request_failed", messageId: slot, error: errorText(e) });
      } finally {
        if (abortRef.current === controller) abortRef.current = null;
      }
      if (!chatRef.current.processing) bridge.setLocked(false);
      await drainFollowUp();
    },
    // drainFollowUp (declared below) reads only refs
    [act, applyLive, bridge, choice],
  );
  const runTurnRef = useRef(runTurn);
  runTurnRef.current = runTurn;

  /** A turn the reducer queued (plan Continue, skip-all's silent approval, the edit continuation). */
  async function drainFollowUp(): Promise<void> {
    const f = chatRef.current.followUp;
    if (!f || abortRef.current) return;
    act({ type: "followup_cleared" });
    if (f.flush) await flushCanvas();
    await runTurnRef.current(userSent(f.text, { silent: f.silent, reuseMessageId: f.reuseMessageId }), f.input);
  }
  const drainRef = useRef(drainFollowUp);
  drainRef.current = drainFollowUp;

  const send = useCallback(
    (raw: string) => {
      const text = raw.trim();
      if (!text || chatRef.current.processing) return;
      recordInput(text);
      if (isSkipAllCommand(text)) {
        const on = !skipAllRef.current;
        writeSkipAll(on);
        setSkipAll(on);
        skipAllRef.current = on;
        act(localReply(text, skipAllConfirmation(on)));
        return;
      }
      const input = turnInput(chatRef.current, text);
      void runTurn(userSent(text), input);
    },
    [act, runTurn],
  );

  // ------------------------------------------------------------------ card actions
  const actions: MessageActions = useMemo(
    () => ({
      readOnly: bridge.readOnly,
      busy,
      addComponent: async (className: string) => {
        await bridge.refreshTypes();
        const t = bridge.nodeTypes().find((x) => x.name === `component:${className}`);
        if (!t) throw new Error(`${className} is not in the palette: ask the assistant to generate it again.`);
        const c = bridge.center();
        const docType = ((t as any).node_type as string | undefined) ?? t.name;
        const defaults = (t as any).config_defaults as Record<string, unknown> | undefined;
        const r = addNode(canvasDoc(), docType, { x: c.x - 90, y: c.y - 28 }, t, defaults ? structuredClone(defaults) : undefined);
        commit(r.doc);
        bridge.select([r.id]);
        bridge.notify(`Added ${className} to the canvas.`);
      },
      retry: (m: ChatMessage) => {
        if (chatRef.current.processing) return;
        const i = chatRef.current.messages.findIndex((x) => x.id === m.id);
        const asked = chatRef.current.messages.slice(0, i).reverse().find((x) => x.role === "user" && !x.hidden);
        if (asked) void runTurn(userSent(asked.text), asked.text);
      },
      proposal: (m: ChatMessage, what: "add" | "replace" | "dismiss") => {
        const p = m.proposal;
        if (!p || p.status !== "pending") return;
        if (what === "dismiss") {
          act({ type: "proposal_dismissed", messageId: m.id });
          return;
        }
        applyProposal(p, what);
        act({ type: "proposal_applied", messageId: m.id });
        // back to pending after 3 s so it can be applied again; the reducer ignores it when a message was sent since
        clearTimeout(revertTimers.current.get(m.id));
        revertTimers.current.set(
          m.id,
          setTimeout(() => act({ type: "proposal_reverted", messageId: m.id }), APPROVED_DISPLAY_DURATION_MS),
        );
      },
      edit: (m: ChatMessage, index: number, accept: boolean) => {
        const e = m.edits?.[index];
        if (!e || e.status !== "pending") return;
        if (accept) commit(applyFlowUpdate(canvasDoc(), e.update, bridge.sizes()));
        act({ type: accept ? "edit_accepted" : "edit_dismissed", messageId: m.id, editId: e.update.id });
        // every edit decided, one applied, and the server expects more: the continuation (F30)
        if (!chatRef.current.processing) void drainRef.current();
      },
      plan: (m: ChatMessage, what: "continue" | "dismiss" | "reset") => {
        if (!m.plan) return;
        if (what === "continue") {
          if (chatRef.current.processing) return;
          act({ type: "plan_continue", messageId: m.id });
          void drainRef.current();
        } else if (what === "dismiss") {
          act({ type: "plan_dismiss", messageId: m.id });
          composer.current?.focus();
        } else {
          act({ type: "plan_reset", messageId: m.id });
        }
      },
      undo: async (m: ChatMessage) => {
        const n = m.complete?.restore_version_id;
        if (n == null) return;
        try {
          const out = await request<FlowOut>("POST", `/api/v1/flows/${encodeURIComponent(bridge.flowId)}/restore-points/${n}/restore`);
          commit({ ...out.draft, nodes: out.draft.nodes ?? [], edges: out.draft.edges ?? [] }, true);
          bridge.notify("Put back the flow as it was before the assistant's changes.");
        } catch (e) {
          bridge.notify(`Could not undo the assistant's changes: ${errorText(e)}`);
        }
      },
    }),
    [act, applyProposal, bridge, busy, commit, runTurn],
  );

  // ------------------------------------------------------------------ look and feel
  const root = useRef<HTMLElement>(null);
  const inputReady = !!config && !noModels && !!choice;
  // set when the user presses somewhere outside the panel after opening it: the late focus
  // (once the config arrives) must not pull them back into the input
  const leftPanel = useRef(false);
  useEffect(() => {
    if (!open) return;
    leftPanel.current = false;
    const away = (e: PointerEvent) => {
      if (!root.current?.contains(e.target as Node)) leftPanel.current = true;
    };
    document.addEventListener("pointerdown", away, true);
    return () => document.removeEventListener("pointerdown", away, true);
  }, [open]);
  useEffect(() => {
    // focus the input on open, and again once it is enabled (the first open waits for the config)
    if (open) requestAnimationFrame(() => !leftPanel.current && composer.current?.focus());
    // closed: focus leaves the hidden panel, so the A shortcut works again at once
    else if (root.current?.contains(document.activeElement)) (document.activeElement as HTMLElement).blur();
  }, [open, inputReady]);
  useEffect(() => {
    const el = body.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);
  useEffect(() => {
    const timers = revertTimers.current;
    return () => {
      abortRef.current?.abort();
      timers.forEach((t) => clearTimeout(t));
    };
  }, []);

  const startResize = (edge: string) => (e: React.PointerEvent) => {
    e.preventDefault();
    const from = { x: e.clientX, y: e.clientY, ...size };
    const parent = (e.currentTarget.parentElement?.parentElement as HTMLElement | null)?.getBoundingClientRect();
    const maxW = (parent?.width || window.innerWidth) - 16;
    const maxH = (parent?.height || window.innerHeight) - 16;
    let last = size;
    const move = (ev: PointerEvent) => {
      const dx = ev.clientX - from.x;
      const dy = ev.clientY - from.y;
      // centred: an edge moved by d changes the size by 2d
      let w = from.width;
      let h = from.height;
      if (edge.includes("e")) w = from.width + 2 * dx;
      if (edge.includes("w")) w = from.width - 2 * dx;
      if (edge.includes("s")) h = from.height + 2 * dy;
      if (edge.includes("n")) h = from.height - 2 * dy;
      last = { width: Math.round(Math.min(Math.max(w, MIN_SIZE.width), Math.max(maxW, MIN_SIZE.width))), height: Math.round(Math.min(Math.max(h, MIN_SIZE.height), Math.max(maxH, MIN_SIZE.height))) };
      setSize(last);
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      writeJson(STORAGE_KEYS.size, last);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  };

  const placeholder = busy ? "Working on it..." : chat.refiningPlan ? "Tell me what to change…" : suggestion;
  const visible = messages.filter((m) => !m.hidden);

  return (
    <section
      ref={root}
      className="assistant-panel"
      data-testid="assistant-panel"
      data-state={open ? "open" : "closed"}
      data-session={sessionId}
      aria-label="Assistant"
      aria-hidden={!open}
      style={{ width: size.width, height: size.height }}
      onKeyDown={(e) => {
        if (e.key === "Escape" && !e.defaultPrevented && !(e.target as HTMLElement).closest?.("[role=dialog]")) {
          e.stopPropagation();
          onClose();
        }
      }}
    >
      {(["n", "s", "e", "w", "se"] as const).map((edge) => (
        <div key={edge} className={`assistant-edge ${edge}`} aria-hidden="true" onPointerDown={startResize(edge)} />
      ))}
      <div className="assistant-edge sw" data-testid="assistant-resize" role="separator" aria-label="Resize the assistant" title="Drag to resize" onPointerDown={startResize("sw")} />

      <header className="assistant-head">
        <span className="assistant-title">
          <span className="spark" aria-hidden="true">
            ✦
          </span>
          Assistant
        </span>
        {skipAll && (
          <span className="assistant-skip-all" data-testid="assistant-skip-all-badge" title="Skip-all is on: plans and flows apply without asking. Send /skip-all to turn it off.">
            <span aria-hidden="true">⚡</span>Skip-all
          </span>
        )}
        {options.length > 0 && (
          <span className="assistant-model">
            <span className="assistant-provider-icon" data-testid="assistant-provider-icon" data-provider={choice?.provider ?? ""} title={choice?.provider ?? ""} aria-hidden="true">
              {providerMark(choice?.provider)}
            </span>
            <select
              data-testid="assistant-model-select"
              aria-label="Model"
              value={choice ? choiceValue(choice) : ""}
              onChange={(e) => {
                const c = parseChoiceValue(e.target.value);
                if (!c) return;
                setChoice(c);
                writeModelChoice(c);
              }}
            >
              {options.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.provider} · {o.label}
                </option>
              ))}
            </select>
          </span>
        )}
        <select
          className="assistant-history"
          data-testid="assistant-history-select"
          aria-label="Earlier sessions"
          value=""
          onChange={(e) => e.target.value && loadStored(e.target.value)}
          disabled={!sessions.some((s) => s.id !== sessionId)}
        >
          <option value="">History…</option>
          {sessions
            .filter((s) => s.id !== sessionId)
            .map((s) => (
              <option key={s.id} value={s.id}>
                {s.title}
              </option>
            ))}
        </select>
        <button type="button" data-testid="assistant-new-session" onClick={newSession} title="Start over: clears this chat and what the assistant registered in it">
          New session
        </button>
        <button type="button" className="assistant-close" data-testid="assistant-close" aria-label="Close the assistant" title="Close (Esc)" onClick={onClose}>
          ✕
        </button>
      </header>

      <div className="assistant-body" ref={body} data-testid="assistant-messages" aria-live="polite">
        {configError && (
          <p className="assistant-error-text" role="alert">
            Could not read the assistant's settings: {configError}
          </p>
        )}
        {noModels ? (
          <div className="assistant-empty" data-testid="assistant-no-models">
            <h3>No models configured</h3>
            <p>The assistant needs a language model. Add a provider (an API key or an OpenAI-compatible endpoint), then come back here.</p>
            <button type="button" className="primary" data-testid="assistant-no-models-configure-providers" onClick={() => setModelsOpen(true)}>
              Configure providers
            </button>
          </div>
        ) : visible.length === 0 ? (
          <div className="assistant-empty">
            <h3>What should we build?</h3>
            <ul>
              <li>Ask for a component: “a component that reverses text”.</li>
              <li>Ask for a flow: “summarise a web page with an LLM”.</li>
              <li>Ask about the canvas: type @ to name a step.</li>
            </ul>
          </div>
        ) : (
          visible.map((m) => <MessageView key={m.id} m={autoPlans.has(m.id) && m.plan ? { ...m, plan: undefined } : m} actions={actions} />)
        )}
      </div>

      <Composer
        ref={composer}
        bridge={bridge}
        busy={busy}
        disabled={!inputReady}
        placeholder={placeholder}
        onSend={send}
        onStop={stop}
        onEscape={onClose}
      />

      {modelsOpen &&
        // in <body>: the panel's transform would otherwise hold the dialog's fixed backdrop inside it
        createPortal(
        <Dialog
          title="Model providers"
          testId="assistant-models-dialog"
          wide
          onClose={() => {
            setModelsOpen(false);
            void loadConfig();
          }}
        >
          <div className="assistant-models-dialog-body">
            <Suspense fallback={<p className="loading">Loading…</p>}>
              <ModelsPage />
            </Suspense>
          </div>
        </Dialog>,
          document.body,
        )}
    </section>
  );
}
