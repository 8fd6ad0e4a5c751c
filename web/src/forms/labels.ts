/**
 * Labels people read: pydantic titles a field `timeout_s` "Timeout S" and `memory_mb` "Memory Mb"
 * when the model gives no title, so such automatic titles are rebuilt from the key (units in
 * brackets, acronyms upper-case), and list items are named by what they are ("Condition 1",
 * "Header 2") or by their content instead of "Item 1". Pure, unit-tested.
 */

const ACRONYMS: Record<string, string> = {
  url: "URL",
  uri: "URI",
  id: "ID",
  ids: "IDs",
  api: "API",
  http: "HTTP",
  json: "JSON",
  llm: "LLM",
  mcp: "MCP",
  html: "HTML",
  sql: "SQL",
  jsonpath: "JSONPath",
};

/** Key suffix -> the unit shown in brackets; `duration` marks seconds-like fields. */
const UNITS: Record<string, { unit: string; duration?: boolean }> = {
  s: { unit: "s", duration: true },
  sec: { unit: "s", duration: true },
  seconds: { unit: "s", duration: true },
  ms: { unit: "ms" },
  mb: { unit: "MB" },
  kb: { unit: "KB" },
  gb: { unit: "GB" },
  bytes: { unit: "bytes" },
  pct: { unit: "%" },
};

function cap(w: string): string {
  return w ? w.charAt(0).toUpperCase() + w.slice(1) : w;
}

/** The title pydantic makes from a key when the model sets none (`timeout_s` -> "Timeout S"). */
export function autoTitle(key: string): string {
  return key
    .split("_")
    .filter(Boolean)
    .map(cap)
    .join(" ");
}

/** The key without a unit suffix, and the unit (`memory_mb` -> memory, MB). A key that is only a
 * unit (`seconds`) keeps its word. */
export function splitUnit(key: string): { base: string; unit?: string; duration: boolean } {
  const parts = key.split("_").filter(Boolean);
  if (parts.length > 1) {
    const u = UNITS[parts[parts.length - 1].toLowerCase()];
    if (u) return { base: parts.slice(0, -1).join("_"), unit: u.unit, duration: Boolean(u.duration) };
  }
  return { base: key, duration: false };
}

function words(key: string): string {
  return key
    .split("_")
    .filter(Boolean)
    .map((w, i) => ACRONYMS[w.toLowerCase()] ?? (i === 0 ? cap(w) : w.toLowerCase()))
    .join(" ");
}

/** A field's label: the schema's own title when a person wrote one, else one built from the key.
 * `durationWidget`: the input shows its unit itself ("30 s"), so the label carries none. */
export function humanLabel(key: string, title?: string, durationWidget = false): string {
  const own = typeof title === "string" && title.trim() && title !== autoTitle(key) ? title.trim() : null;
  if (own) {
    if (!durationWidget) return own;
    const bare = own.replace(/\s*\((s|sec|seconds)\)\s*$/i, "");
    return /^seconds?$/i.test(bare) ? "Duration" : bare;
  }
  const { base, unit } = splitUnit(key);
  if (durationWidget && /^(seconds?|secs?)$/i.test(base)) return "Duration";
  const label = words(base);
  return unit && !durationWidget ? `${label} (${unit})` : label;
}

/** Whether a number field holds seconds (`timeout_s`, "Timeout (s)", `format: duration`). */
export function isDurationField(key: string, schema: { title?: string; format?: string; "x-widget"?: string }): boolean {
  if (schema.format === "duration" || schema["x-widget"] === "duration") return true;
  if (schema["x-widget"]) return false;
  if (splitUnit(key).duration || /^(seconds|secs?)$/i.test(key)) return true;
  return typeof schema.title === "string" && /\((s|sec|seconds)\)\s*$/i.test(schema.title);
}

/** "Headers" -> "Header", "Categories" -> "Category", "Cases" -> "Case", "When" -> "Condition". */
export function singular(label: string): string {
  const l = label.trim().split(/\s+as\s+/i)[0]; // "Flows as tools" -> "Flows"
  if (/^(when|until|conditions?)$/i.test(l)) return "Condition";
  if (/^script$/i.test(l)) return "Step";
  if (/ies$/i.test(l)) return l.slice(0, -3) + "y";
  if (/(ses|xes|ches|shes)$/i.test(l) && !/cases$/i.test(l)) return l.slice(0, -2);
  if (/[^s]s$/i.test(l)) return l.slice(0, -1);
  return l;
}

/** The heading of one item of a list: its own name when it has one (a category "billing", a
 * case's port), else "<Singular> <n>". */
export function itemLabel(listLabel: string, index: number, item: unknown): string {
  if (item && typeof item === "object" && !Array.isArray(item)) {
    const o = item as Record<string, unknown>;
    for (const k of ["name", "label", "title", "variable", "flow"]) {
      const v = o[k];
      if (typeof v === "string" && v.trim()) return `${singular(listLabel)} ${index + 1}: ${v.trim()}`;
    }
  }
  return `${singular(listLabel)} ${index + 1}`;
}
