/**
 * A chat for flows started by a prompt: each message starts a run of the draft with the message
 * as the prompt input, through the editor's own run (so the canvas shows it live), and the answer
 * streams in from the run's token events, then settles on its output. The history is kept in the
 * browser per flow ("New chat" clears it); each answer links to its run.
 */
import { useEffect, useRef, useState } from "react";
import { linkProps, paths } from "../router";
import { isActive, type RunState } from "../state/run";
import { fmtDuration } from "../ui/format";
import { LazyMarkdown } from "./LazyOutput";
import { finalAnswer, streamingText } from "./playground";
import { loadChat, saveChat, type ChatMessage } from "./storage";

export interface PlaygroundProps {
  flowId: string;
  field: string;
  run: RunState;
  onRun: (inputs: Record<string, any>) => Promise<void> | void;
  disabled?: boolean;
}

function answerOf(run: RunState): string {
  if (run.status === "completed") return finalAnswer(run.outputs) || streamingText(run);
  if (run.status === "failed" || run.status === "cancelled") return streamingText(run);
  return streamingText(run);
}

export function Playground({ flowId, field, run, onRun, disabled }: PlaygroundProps) {
  const [messages, setMessages] = useState<ChatMessage[]>(() => loadChat(flowId));
  const [text, setText] = useState("");
  // the message sent last waits for its run: the editor's run once it has an id other than before
  const waiting = useRef<{ previousRunId: string | null } | null>(null);
  const listRef = useRef<HTMLDivElement>(null);

  useEffect(() => setMessages(loadChat(flowId)), [flowId]);

  // the answer of the run a message started follows the run
  useEffect(() => {
    const w = waiting.current;
    if (!w || !run.runId || run.runId === w.previousRunId) return;
    const runId = run.runId;
    const done = !isActive(run) && run.status !== "idle";
    const answer: ChatMessage = {
      role: "assistant",
      text: answerOf(run),
      runId,
      status: run.status,
      at: Date.now() / 1000,
    };
    if (done && run.error) answer.text = answer.text ? `${answer.text}\n\n${run.error}` : run.error;
    setMessages((ms) => {
      const i = ms.findIndex((m) => m.role === "assistant" && m.runId === runId);
      const next = i >= 0 ? ms.map((m, j) => (j === i ? answer : m)) : [...ms, answer];
      if (done) saveChat(flowId, next);
      return next;
    });
    if (done) waiting.current = null;
  }, [run, flowId]);

  useEffect(() => {
    const el = listRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const send = async () => {
    const message = text.trim();
    if (!message || disabled || isActive(run)) return;
    const user: ChatMessage = { role: "user", text: message, at: Date.now() / 1000 };
    const next = [...messages, user];
    setMessages(next);
    saveChat(flowId, next);
    setText("");
    waiting.current = { previousRunId: run.runId };
    await onRun({ [field]: message }); // a run that cannot start: the editor says why
  };

  const newChat = () => {
    setMessages([]);
    saveChat(flowId, []);
  };

  const busy = isActive(run);
  return (
    <div className="playground" data-testid="playground">
      <div className="playground-messages" ref={listRef} data-testid="playground-messages" aria-live="polite">
        {!messages.length && <p className="muted">Send a message: it becomes the flow's “{field}” input, and the answer shows here.</p>}
        {messages.map((m, i) => (
          <div key={i} className={`chat-msg chat-${m.role}`} data-testid={m.role === "user" ? "playground-user" : "playground-answer"} data-status={m.status}>
            {m.role === "assistant" ? (
              <>
                {m.text ? <LazyMarkdown text={m.text} /> : <span className="muted">{m.status === "completed" ? "(no answer)" : "…"}</span>}
                {m.runId && (
                  <div className="chat-meta">
                    <span className={`status-${m.status}`}>{m.status}</span>
                    {m.runId === run.runId && run.durationMs !== undefined ? <span> · {fmtDuration(run.durationMs)}</span> : null} ·{" "}
                    <a {...linkProps(paths.run(m.runId))} data-testid="playground-run-link">
                      run
                    </a>
                  </div>
                )}
              </>
            ) : (
              <div className="chat-text">{m.text}</div>
            )}
          </div>
        ))}
      </div>
      <form
        className="playground-input"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <textarea
          aria-label="Message"
          data-testid="playground-input"
          value={text}
          rows={2}
          placeholder={disabled ? "You can look at this flow, not run it." : "Type a message (Enter sends, Shift+Enter: new line)"}
          disabled={disabled}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <div className="playground-buttons">
          <button type="submit" className="primary" disabled={disabled || busy || !text.trim()} data-testid="playground-send">
            Send
          </button>
          <button type="button" className="small" onClick={newChat} disabled={!messages.length} data-testid="playground-new">
            New chat
          </button>
        </div>
      </form>
    </div>
  );
}
