/**
 * Prompt-style flows: which input field takes the user's message (so the editor offers a chat
 * playground), and what of a run is "the answer" (its text while it streams, then its output).
 */
import type { FlowDocument, JsonSchema } from "../types";
import type { RunState } from "../state/run";

/** Input names that say "a prompt", most telling first. */
export const PROMPT_NAMES = ["message", "prompt", "question", "query", "input", "text", "msg", "q", "user_input", "chat_input"];

function isStringField(s: any): boolean {
  if (!s || typeof s !== "object") return false;
  const t = s.type;
  return t === "string" || (Array.isArray(t) && t.includes("string")) || (t === undefined && !s.properties && !s.items && !s.enum);
}

/**
 * The input field a chat message goes to, or null when the flow is not started by a prompt. A
 * flow is prompt-style when its start node says `trigger: "chat"`, or when its inputs have one
 * string field that is the only required one (named like message, prompt, question, input…, or
 * the flow's only field).
 */
export function promptField(doc: Pick<FlowDocument, "inputs" | "nodes"> | null | undefined): string | null {
  if (!doc) return null;
  const schema: JsonSchema | undefined = doc.inputs;
  const props: Record<string, any> = (schema?.properties as Record<string, any>) ?? {};
  const names = Object.keys(props);
  const required: string[] = Array.isArray(schema?.required) ? (schema!.required as string[]) : [];
  const strings = names.filter((n) => isStringField(props[n]));
  const chatStart = (doc.nodes ?? []).some((n) => n.type === "start" && (n.config as any)?.trigger === "chat");
  if (chatStart) {
    if (!names.length) return "message";
    return strings.find((n) => PROMPT_NAMES.includes(n.toLowerCase())) ?? strings[0] ?? null;
  }
  if (!strings.length) return null;
  const otherRequired = required.filter((r) => !strings.includes(r));
  if (otherRequired.length) return null;
  if (names.length === 1) return strings[0];
  const named = strings.filter((n) => PROMPT_NAMES.includes(n.toLowerCase()));
  const requiredStrings = strings.filter((n) => required.includes(n));
  if (requiredStrings.length > 1) return null;
  if (requiredStrings.length === 1) return named.includes(requiredStrings[0]) || strings.length === 1 ? requiredStrings[0] : null;
  return named[0] ?? null;
}

/** A value as the text of an answer: strings as they are, `{content|text|answer|message}` of
 * an object, else JSON. */
export function asAnswerText(v: any): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "object" && !Array.isArray(v)) {
    for (const k of ["content", "text", "answer", "message", "output", "result", "reply"]) if (typeof v[k] === "string") return v[k];
  }
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** The run's answer: its single output (or every output, one per line as `name: text`). */
export function finalAnswer(outputs: Record<string, any> | undefined | null): string {
  if (!outputs) return "";
  const keys = Object.keys(outputs);
  if (!keys.length) return "";
  if (keys.length === 1) return asAnswerText(outputs[keys[0]]);
  return keys.map((k) => `**${k}**: ${asAnswerText(outputs[k])}`).join("\n\n");
}

/** The text streaming now: the token preview of the node that received tokens last (running
 * nodes first). Empty when no node streams. */
export function streamingText(run: Pick<RunState, "nodes">): string {
  let best = "";
  for (const n of Object.values(run.nodes)) {
    if (!n.preview) continue;
    if (n.status === "running") return n.preview;
    best = n.preview;
  }
  return best;
}
