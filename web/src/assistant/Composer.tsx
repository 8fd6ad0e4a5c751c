/**
 * The panel's input: the textarea with shell-style history (F40), `@` mentions of canvas nodes and
 * their fields (F41/F42), the slash-command hints, Send and Stop (F18). Enter sends, Shift+Enter
 * breaks the line, Escape closes the mentions list first and the panel otherwise (F2).
 */
import { forwardRef, useCallback, useEffect, useImperativeHandle, useMemo, useRef, useState } from "react";
import { handleHistoryKey, loadInputHistory, NO_RECALL, type Recall } from "./inputHistory";
import { MentionList, useMentions } from "./messages/Mentions";
import { SlashHints } from "./messages/SlashHints";
import type { CanvasBridge } from "./types";

export interface ComposerHandle {
  focus(): void;
  setText(text: string): void;
}

interface Props {
  bridge: CanvasBridge;
  busy: boolean;
  disabled: boolean;
  placeholder: string;
  onSend: (text: string) => void;
  onStop: () => void;
  onEscape: () => void;
}

export const Composer = forwardRef<ComposerHandle, Props>(function Composer({ bridge, busy, disabled, placeholder, onSend, onStop, onEscape }, ref) {
  const [text, setText] = useState("");
  const [caret, setCaret] = useState(0);
  const area = useRef<HTMLTextAreaElement>(null);
  const recall = useRef<Recall>(NO_RECALL);
  const history = useRef<string[] | null>(null);
  const mentions = useMentions(bridge, text, caret);

  const put = useCallback((next: string, at: number) => {
    setText(next);
    setCaret(at);
    requestAnimationFrame(() => {
      const el = area.current;
      if (!el) return;
      el.focus();
      el.setSelectionRange(at, at);
    });
  }, []);

  useImperativeHandle(ref, () => ({ focus: () => area.current?.focus(), setText: (t: string) => put(t, t.length) }), [put]);

  // auto-grow up to the CSS max-height
  useEffect(() => {
    const el = area.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${el.scrollHeight}px`;
  }, [text]);

  const send = () => {
    if (busy || disabled || !text.trim()) return;
    onSend(text);
    history.current = null; // re-read: the panel recorded the send
    recall.current = NO_RECALL;
    mentions.close();
    put("", 0);
  };

  const onKeyDown = (e: React.KeyboardEvent<HTMLTextAreaElement>) => {
    if (mentions.open && mentions.onKey(e, put)) return;
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      onEscape();
      return;
    }
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
      return;
    }
    if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      const el = e.currentTarget;
      history.current ??= loadInputHistory();
      const r = handleHistoryKey(e.key, el.value, el.selectionStart, el.selectionEnd, history.current, recall.current);
      if (!r) return;
      e.preventDefault();
      recall.current = r.recall;
      put(r.text, r.caret);
    }
  };

  const hint = useMemo(() => (busy ? "Stop ends the reply; what it changed on the canvas stays (undo brings it back)." : "Enter sends · Shift+Enter for a new line · @ names a step on the canvas · ↑ recalls"), [busy]);

  return (
    <div className="assistant-foot">
      {mentions.open ? <MentionList state={mentions} onPick={(i) => mentions.pick(i, put)} /> : <SlashHints text={text} onPick={(c) => put(c, c.length)} />}
      <div className="assistant-input-row">
        <textarea
          ref={area}
          className="assistant-input"
          data-testid="assistant-input"
          aria-label="Message to the assistant"
          rows={1}
          value={text}
          placeholder={placeholder}
          disabled={disabled}
          onChange={(e) => {
            setText(e.target.value);
            setCaret(e.target.selectionStart);
            recall.current = NO_RECALL;
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart)}
          onKeyDown={onKeyDown}
          onBlur={() => mentions.close()}
        />
        {busy ? (
          <button type="button" className="assistant-stop" data-testid="assistant-stop" onClick={onStop} title="Stop the reply">
            ■ Stop
          </button>
        ) : (
          <button type="button" className="primary assistant-send" data-testid="assistant-send" disabled={disabled || !text.trim()} onClick={send}>
            Send
          </button>
        )}
      </div>
      <div className="assistant-hint">{hint}</div>
    </div>
  );
});
