/**
 * The run-inputs builder: a flow's input JSON Schema edited as a list of fields (name, type,
 * required, default, description) instead of hand-written JSON. Whatever the builder does not
 * manage (minLength, formats, extra root keywords...) is kept aside and written back, so a
 * schema survives a round trip through the builder unchanged. Pure, unit-tested.
 */
import type { JsonSchema } from "../types";

export type InputType = "string" | "text" | "number" | "integer" | "boolean" | "choice" | "list" | "object" | "other";

export const INPUT_TYPES: { value: InputType; label: string }[] = [
  { value: "string", label: "Text" },
  { value: "text", label: "Long text" },
  { value: "number", label: "Number" },
  { value: "integer", label: "Whole number" },
  { value: "boolean", label: "Yes / no" },
  { value: "choice", label: "Choice" },
  { value: "list", label: "List of texts" },
  { value: "object", label: "JSON object" },
];

export interface InputField {
  name: string;
  type: InputType;
  required: boolean;
  default?: unknown;
  description?: string;
  /** choice: the allowed values */
  options?: string[];
  /** keywords of the property the builder does not manage, kept as they were */
  extra?: JsonSchema;
}

export interface InputsModel {
  fields: InputField[];
  /** root keywords besides type/properties/required, kept as they were */
  rootExtra?: JsonSchema;
}

const LONG = 200;

function typeOf(p: JsonSchema): { type: InputType; managed: string[] } {
  if (Array.isArray(p.enum) && p.enum.every((v: unknown) => typeof v === "string") && (p.type === undefined || p.type === "string"))
    return { type: "choice", managed: ["enum", "type"] };
  switch (p.type) {
    case "string":
      return (p.maxLength ?? 0) > LONG || p.format === "textarea" || p["x-widget"] === "textarea"
        ? { type: "text", managed: ["type", "x-widget"] }
        : { type: "string", managed: ["type"] };
    case "number":
    case "integer":
    case "boolean":
      return { type: p.type, managed: ["type"] };
    case "array": {
      const items = p.items ?? {};
      const simple = items && typeof items === "object" && Object.keys(items).length === 1 && items.type === "string";
      return simple ? { type: "list", managed: ["type", "items"] } : { type: "other", managed: [] };
    }
    case "object":
      return { type: "object", managed: ["type"] };
    default:
      return { type: "other", managed: [] };
  }
}

export function schemaToFields(schema: JsonSchema | null | undefined): InputsModel {
  if (!schema || typeof schema !== "object") return { fields: [] };
  const { type: _t, properties, required, ...rootExtra } = schema;
  const req = new Set<string>(Array.isArray(required) ? required : []);
  const fields: InputField[] = Object.entries<JsonSchema>(properties ?? {}).map(([name, p]) => {
    const prop = p && typeof p === "object" ? p : {};
    const { type, managed } = typeOf(prop);
    const extra: JsonSchema = {};
    for (const [k, v] of Object.entries(prop)) {
      if (k === "description" || k === "default" || managed.includes(k)) continue;
      extra[k] = v;
    }
    const f: InputField = { name, type, required: req.has(name) };
    if (prop.description !== undefined) f.description = prop.description;
    if (prop.default !== undefined) f.default = prop.default;
    if (type === "choice") f.options = [...prop.enum];
    if (Object.keys(extra).length) f.extra = extra;
    return f;
  });
  return Object.keys(rootExtra).length ? { fields, rootExtra } : { fields };
}

function propertyOf(f: InputField): JsonSchema {
  const p: JsonSchema = {};
  switch (f.type) {
    case "text":
      p.type = "string";
      if (!((f.extra?.maxLength ?? 0) > LONG || f.extra?.format === "textarea")) p["x-widget"] = "textarea";
      break;
    case "choice":
      p.type = "string";
      p.enum = [...(f.options ?? [])];
      break;
    case "list":
      p.type = "array";
      p.items = { type: "string" };
      break;
    case "other":
      break;
    default:
      p.type = f.type;
  }
  if (f.description) p.description = f.description;
  if (f.default !== undefined && f.default !== "") p.default = f.default;
  return { ...p, ...(f.extra ?? {}) };
}

/** The JSON Schema of the fields; undefined when there are none (the flow takes no inputs).
 * Fields without a name are left out (they are still being typed). */
export function fieldsToSchema(model: InputsModel): JsonSchema | undefined {
  const named = model.fields.filter((f) => f.name.trim());
  if (!named.length && !model.rootExtra) return undefined;
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const f of named) {
    const name = f.name.trim();
    if (name in properties) continue;
    properties[name] = propertyOf(f);
    if (f.required) required.push(name);
  }
  const out: JsonSchema = { type: "object", properties };
  if (required.length) out.required = required;
  return { ...out, ...(model.rootExtra ?? {}) };
}

/** A default typed in the builder, as a value of the field's type ("3" -> 3 for numbers). */
export function parseDefault(type: InputType, text: string): unknown {
  const t = text.trim();
  if (t === "") return undefined;
  if (type === "number" || type === "integer") {
    const n = Number(t);
    return Number.isFinite(n) ? n : text;
  }
  if (type === "boolean") return t === "true" ? true : t === "false" ? false : text;
  if (type === "list") return t.split(",").map((s) => s.trim()).filter(Boolean);
  if (type === "object") {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}

export function formatDefault(type: InputType, v: unknown): string {
  if (v === undefined || v === null) return "";
  if (type === "list" && Array.isArray(v)) return v.join(", ");
  return typeof v === "string" ? v : JSON.stringify(v);
}

export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
