/**
 * How a node card looks: its colour group and icon (from the type's category, with the few types
 * whose category says little, like `code` under "logic"), and a one-line summary of its config so
 * a flow reads without opening every inspector. Pure: tested without a browser.
 */
import type { NodeSpec, NodeType } from "../types";

export type NodeGroup = "io" | "model" | "tool" | "code" | "flow" | "human" | "data";

const BY_TYPE: Record<string, NodeGroup> = {
  start: "io",
  output: "io",
  message: "io",
  llm: "model",
  agent: "model",
  categorize: "model",
  http: "tool",
  tool: "tool",
  code: "code",
  component: "code",
  human: "human",
};
const BY_CATEGORY: Record<string, NodeGroup> = {
  triggers: "io",
  outputs: "io",
  ai: "model",
  agents: "model",
  integrations: "tool",
  tools: "tool",
  logic: "flow",
  flow: "flow",
  human: "human",
  data: "data",
  knowledge: "data",
};
// Symbols every system font has (no emoji: many Linux desktops draw those as empty boxes).
const ICONS: Record<string, string> = {
  start: "▶",
  output: "⏏",
  message: "✉",
  llm: "✦",
  agent: "✪",
  categorize: "≡",
  http: "⇄",
  tool: "⚒",
  code: "⌨",
  component: "❖",
  human: "☺",
  if: "◇",
  switch: "⋔",
  merge: "⊕",
  loop: "↻",
  map: "⇉",
  subflow: "❐",
  delay: "◷",
};
const GROUP_ICONS: Record<NodeGroup, string> = { io: "⇢", model: "✦", tool: "⚒", code: "⌨", flow: "⋔", human: "☺", data: "▤" };

export function nodeGroup(typeName: string, type?: Pick<NodeType, "category">): NodeGroup {
  const base = typeName.startsWith("component:") ? "component" : typeName;
  return BY_TYPE[base] ?? BY_CATEGORY[type?.category ?? ""] ?? "data";
}

export function nodeIcon(typeName: string, group: NodeGroup): string {
  return ICONS[typeName.startsWith("component:") ? "component" : typeName] ?? GROUP_ICONS[group];
}

const MAX = 60;

function clip(s: string, max = MAX): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function str(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return "";
  }
}

function condition(when: unknown): string {
  const list = Array.isArray(when) ? when : when ? [when] : [];
  if (!list.length) return "";
  const c = list[0] ?? {};
  const op = c.op ?? "==";
  const unary = op === "empty" || op === "not_empty";
  const first = `${str(c.ref)} ${op}${unary ? "" : ` ${str(c.value ?? "")}`}`.trim();
  return list.length > 1 ? `${first} (+${list.length - 1})` : first;
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** One line that says what the node does with its config ("" when nothing useful is set). */
export function nodeSummary(node: Pick<NodeSpec, "type" | "config">): string {
  const c: Record<string, any> = node.config ?? {};
  const model = () => [c.provider || "auto", c.model].filter(Boolean).join(" · ");
  switch (node.type) {
    case "llm":
    case "agent":
      return clip(model());
    case "categorize": {
      const names = Array.isArray(c.categories) ? c.categories.map((x: any) => x?.name).filter(Boolean) : [];
      return clip(`${model()}${names.length ? ` → ${names.join(", ")}` : ""}`);
    }
    case "http":
      return clip(`${String(c.method || "GET").toUpperCase()} ${str(c.url)}`);
    case "if":
      return clip(condition(c.when) ? `if ${condition(c.when)}` : "");
    case "switch": {
      const cases = Array.isArray(c.cases) ? c.cases : [];
      return clip(cases.length ? `${count(cases.length, "case")}: ${condition(cases[0]?.when)}` : "");
    }
    case "code": {
      const line = str(c.code)
        .split("\n")
        .map((l) => l.trim())
        .find((l) => l && !l.startsWith("#") && !l.startsWith("//"));
      return clip(line ?? "");
    }
    case "loop": {
      const until = condition(c.until);
      return clip([c.max_iterations ? `≤ ${c.max_iterations} times` : "", until ? `until ${until}` : ""].filter(Boolean).join(" · "));
    }
    case "map":
      return clip(c.items ? `each of ${str(c.items)}` : "");
    case "human":
      return clip(str(c.message));
    case "start":
      return clip(c.trigger && c.trigger !== "manual" ? str(c.trigger) : "");
    case "output":
      return clip([c.name, str(c.value)].filter(Boolean).join(" = "));
    case "message":
      return clip(str(c.text));
    case "tool":
      return clip(str(c.tool));
    case "subflow":
      return clip(c.flow ? `flow ${str(c.flow)}` : "");
    case "delay":
      return c.seconds !== undefined ? `${str(c.seconds)} s` : "";
    case "assign":
      return Array.isArray(c.assignments) ? count(c.assignments.length, "assignment") : "";
    case "transform":
      return clip(c.mapping && typeof c.mapping === "object" ? Object.keys(c.mapping).join(", ") : "");
    case "merge":
      return Array.isArray(c.groups) && c.groups.length ? count(c.groups.length, "group") : "";
  }
  if (c.operation) return clip(str(c.operation) + (c.source ? ` ${str(c.source)}` : ""));
  for (const v of Object.values(c)) if (typeof v === "string" && v.trim()) return clip(v);
  return "";
}
