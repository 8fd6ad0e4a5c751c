/**
 * The assistant's entry point on the canvas: one button in the canvas area, the `A` shortcut and
 * Escape. Kept tiny because the editor imports it eagerly; the panel itself (markdown, cards,
 * the chat logic) is a lazy chunk loaded on the first open, so the editor's first load does not
 * grow. Once opened, the panel stays mounted while hidden, so a running turn and the chat survive
 * closing it.
 */
import { lazy, Suspense, useCallback, useEffect, useState } from "react";
import { readString } from "./storage";
import type { CanvasBridge } from "./types";
import "./assistant.css";

const AssistantPanel = lazy(() => import("./AssistantPanel"));

/** Where a settings page may keep another key for the panel ("AI Assistant", default `a`). */
export const SHORTCUT_STORAGE_KEY = "plait-assistant-shortcut";
export const DEFAULT_SHORTCUT = "a";

/** The panel's key: one character, case-insensitive. */
export function assistantShortcut(): string {
  const k = (readString(SHORTCUT_STORAGE_KEY) ?? "").trim().toLowerCase();
  return k.length === 1 ? k : DEFAULT_SHORTCUT;
}

/** Typing in a field never toggles the panel. */
export function isTextTarget(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || typeof el.tagName !== "string") return false;
  return el.isContentEditable || el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT";
}

export default function AssistantDock({ bridge }: { bridge: CanvasBridge }) {
  const [open, setOpen] = useState(false);
  // mounted once opened; hidden (not unmounted) when closed
  const [loaded, setLoaded] = useState(false);
  const show = useCallback(() => {
    setLoaded(true);
    setOpen(true);
  }, []);
  const close = useCallback(() => setOpen(false), []);
  const toggle = useCallback(() => (open ? close() : show()), [open, close, show]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "Escape") {
        // the panel's own input handles Escape itself (it may first close the mentions list)
        if (open && !document.querySelector("[role=dialog]")) close();
        return;
      }
      if (e.key.toLowerCase() !== assistantShortcut()) return;
      if (e.shiftKey || isTextTarget(e.target) || document.querySelector("[role=dialog]")) return;
      e.preventDefault();
      toggle();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open, close, toggle]);

  return (
    <>
      <button
        type="button"
        className={`assistant-toggle${open ? " active" : ""}`}
        data-testid="assistant-toggle"
        aria-pressed={open}
        aria-label={open ? "Close the assistant" : "Open the assistant"}
        title={`${open ? "Close the assistant" : "Ask the assistant"} (${assistantShortcut().toUpperCase()})`}
        onClick={toggle}
      >
        <span aria-hidden="true">✦</span> Assistant
      </button>
      {loaded && (
        <Suspense fallback={<div className="assistant-loading" data-testid="assistant-loading">Loading the assistant…</div>}>
          <AssistantPanel bridge={bridge} open={open} onClose={close} />
        </Suspense>
      )}
    </>
  );
}
