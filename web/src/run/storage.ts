/**
 * What the browser keeps per flow so iterating is fast: the run dialog's last inputs, the inputs
 * pinned on a node for "Run this step", and the playground's chat history. All in localStorage
 * (one key per flow, or per flow and node); a full or disabled storage just forgets.
 */

const PREFIX = "plait.";

function read<T>(key: string): T | undefined {
  try {
    const raw = localStorage.getItem(PREFIX + key);
    return raw === null ? undefined : (JSON.parse(raw) as T);
  } catch {
    return undefined;
  }
}

function write(key: string, value: unknown): void {
  try {
    if (value === undefined) localStorage.removeItem(PREFIX + key);
    else localStorage.setItem(PREFIX + key, JSON.stringify(value));
  } catch {
    /* storage full or disabled: nothing is remembered */
  }
}

/** The inputs of the flow's last run started from the run dialog. */
export function loadLastInputs(flowId: string): Record<string, any> | undefined {
  const v = read<Record<string, any>>(`lastInputs.${flowId}`);
  return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
}

export function saveLastInputs(flowId: string, inputs: Record<string, any>): void {
  write(`lastInputs.${flowId}`, inputs);
}

/** The port inputs pinned on a node for "Run this step" (undefined: use the last run's). */
export function loadPinned(flowId: string, nodeId: string): Record<string, any> | undefined {
  const v = read<Record<string, any>>(`pinned.${flowId}.${nodeId}`);
  return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
}

export function savePinned(flowId: string, nodeId: string, inputs: Record<string, any> | undefined): void {
  write(`pinned.${flowId}.${nodeId}`, inputs);
}

/** One playground message: the user's text, or the flow's answer (linked to its run). */
export interface ChatMessage {
  role: "user" | "assistant";
  text: string;
  runId?: string;
  status?: string;
  at: number;
}

export function loadChat(flowId: string): ChatMessage[] {
  const v = read<ChatMessage[]>(`chat.${flowId}`);
  return Array.isArray(v) ? v.filter((m) => m && (m.role === "user" || m.role === "assistant") && typeof m.text === "string") : [];
}

export function saveChat(flowId: string, messages: ChatMessage[]): void {
  write(`chat.${flowId}`, messages.length ? messages.slice(-200) : undefined);
}

/** Inputs of a schema's fields from remembered ones: only the keys the schema still has. */
export function rememberedFor(properties: Record<string, any> | undefined, remembered: Record<string, any> | undefined): Record<string, any> {
  const out: Record<string, any> = {};
  if (!properties || !remembered) return out;
  for (const k of Object.keys(properties)) if (k in remembered) out[k] = remembered[k];
  return out;
}
