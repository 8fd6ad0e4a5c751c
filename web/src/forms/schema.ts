/**
 * Form generation from JSON Schema (pydantic's `model_json_schema()` output and flow input
 * schemas): a schema becomes a tree of field descriptors that SchemaForm renders. Pure, so the
 * mapping is unit-tested without a DOM.
 */
import type { JsonSchema } from "../types";
import { humanLabel, isDurationField } from "./labels";

export type FieldKind =
  | "string"
  | "text"
  | "secret"
  | "number"
  | "integer"
  | "boolean"
  | "enum"
  | "array"
  | "object"
  | "map"
  | "json";

/** A richer control than the kind's default: seconds as "30 s", a code editor, a condition
 * builder. Chosen from the schema (`format`, `x-widget`) and the field's key. */
export type FieldWidget = "duration" | "code" | "conditions";
export type CodeLanguage = "python" | "json" | "javascript";

export interface FieldDesc {
  key: string;
  path: string; // dotted path from the form root: "cases.0.when"
  kind: FieldKind;
  label: string;
  description?: string;
  required: boolean;
  nullable: boolean;
  template: boolean; // strings accept `{{ref}}` templates (autocomplete)
  enumValues?: any[];
  default?: any;
  minimum?: number;
  maximum?: number;
  item?: FieldDesc; // arrays: the item's descriptor (path ends in "*")
  fields?: FieldDesc[]; // objects with properties
  examples?: any[];
  widget?: FieldWidget;
  language?: CodeLanguage;
  /** map: what values are (strings as typed, or loose JSON) and, for enum values, the choices */
  mapValues?: "string" | "loose";
  mapEnum?: any[];
}

const SECRET_KEY = /(api_?key|token|password|passwd|secret|authorization|credential)/i;
const LONG_TEXT_KEY = /^(text|message|prompt|system|system_prompt|template|body|code|source|content|instructions|query)$/i;
const MAX_DEPTH = 8;

/** Follow `$ref`s (into the root's `$defs`/`definitions`) and merge a lone `allOf`. */
export function resolve(schema: JsonSchema | undefined, root: JsonSchema): JsonSchema {
  let s = schema ?? {};
  for (let i = 0; i < 20 && s && typeof s.$ref === "string"; i++) {
    const ref: string = s.$ref;
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const target = m ? root?.[m[1]]?.[decodeURIComponent(m[2])] : undefined;
    const { $ref: _ignored, ...rest } = s;
    s = { ...(target ?? {}), ...rest };
  }
  if (Array.isArray(s.allOf) && s.allOf.length === 1) {
    const { allOf, ...rest } = s;
    s = { ...resolve(allOf[0], root), ...rest };
  }
  return s;
}

/** `anyOf: [X, {type: null}]` (pydantic's Optional) -> X, nullable. */
function unwrapNullable(s: JsonSchema, root: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const variants = s.anyOf ?? s.oneOf;
  if (Array.isArray(variants)) {
    const nonNull = variants.filter((v: any) => resolve(v, root).type !== "null");
    const nullable = nonNull.length < variants.length;
    if (nonNull.length === 1) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      return { schema: { ...resolve(nonNull[0], root), ...rest }, nullable };
    }
    return { schema: s, nullable };
  }
  if (Array.isArray(s.type)) {
    const types = s.type.filter((t: string) => t !== "null");
    return { schema: { ...s, type: types.length === 1 ? types[0] : types }, nullable: types.length < s.type.length };
  }
  return { schema: s, nullable: false };
}

const LANGUAGES: Record<string, CodeLanguage> = { python: "python", py: "python", json: "json", javascript: "javascript", js: "javascript" };

function codeLanguage(key: string, s: JsonSchema): CodeLanguage | undefined {
  const fmt = typeof s.format === "string" ? LANGUAGES[s.format.toLowerCase()] : undefined;
  if (fmt) return fmt;
  if (s["x-widget"] === "code") return LANGUAGES[String(s["x-language"] ?? "python")] ?? "python";
  return key === "code" ? "python" : undefined;
}

/** `anyOf: [number, string]`: the number variant (a number or a template of one), else null. */
function numberOrString(s: JsonSchema, root: JsonSchema): JsonSchema | null {
  const variants = s.anyOf ?? s.oneOf;
  if (!Array.isArray(variants)) return null;
  const types = variants.map((v: any) => resolve(v, root)).filter((v: any) => v.type !== "null");
  if (types.length !== 2) return null;
  const num = types.find((v: any) => v.type === "number" || v.type === "integer");
  return num && types.some((v: any) => v.type === "string") ? num : null;
}

/** An item schema that is one condition (switch/if/loop `when`, data filters): ref|key, op, value. */
function isConditionItem(item: FieldDesc): boolean {
  const keys = (item.fields ?? []).map((f) => f.key);
  return item.kind === "object" && keys.includes("op") && (keys.includes("ref") || keys.includes("key")) && keys.includes("value");
}

export function describeField(
  key: string,
  path: string,
  raw: JsonSchema | undefined,
  root: JsonSchema,
  required: boolean,
  depth = 0,
): FieldDesc {
  const { schema: s, nullable } = unwrapNullable(resolve(raw, root), root);
  const base = {
    key,
    path,
    label: humanLabel(key, s.title),
    description: s.description,
    required,
    nullable,
    template: false,
    default: s.default,
    examples: s.examples,
  };
  if (Array.isArray(s.enum)) return { ...base, kind: "enum", enumValues: s.enum };
  const numberOrTemplate = numberOrString(s, root);
  if (numberOrTemplate && isDurationField(key, { ...s, ...numberOrTemplate })) {
    // seconds given as a number or a template (`delay.seconds`): a duration input that keeps templates
    return { ...base, label: humanLabel(key, s.title, true), kind: "number", template: true, widget: "duration", minimum: numberOrTemplate.minimum, maximum: numberOrTemplate.maximum };
  }
  if (s.const !== undefined) return { ...base, kind: "enum", enumValues: [s.const] };
  const type = s.type;
  if (type === "boolean") return { ...base, kind: "boolean" };
  if (type === "integer" || type === "number") {
    const range = { minimum: s.minimum ?? s.exclusiveMinimum, maximum: s.maximum ?? s.exclusiveMaximum };
    if (isDurationField(key, s)) return { ...base, label: humanLabel(key, s.title, true), kind: type, widget: "duration", ...range };
    return { ...base, kind: type, ...range };
  }
  if (type === "string") {
    if (s.format === "password" || s.writeOnly || SECRET_KEY.test(key)) return { ...base, kind: "secret", template: true };
    const language = codeLanguage(key, s);
    if (language) return { ...base, kind: "text", template: false, widget: "code", language };
    const long = s["x-widget"] === "textarea" || s.format === "textarea" || LONG_TEXT_KEY.test(key) || /template/i.test(s.description ?? "") || (s.maxLength ?? 0) > 200;
    return { ...base, kind: long ? "text" : "string", template: true };
  }
  if (type === "array" && depth < MAX_DEPTH) {
    const item = describeField("item", `${path}.*`, s.items ?? {}, root, true, depth + 1);
    return isConditionItem(item) ? { ...base, kind: "array", item, widget: "conditions" } : { ...base, kind: "array", item };
  }
  if (type === "object" && s.properties && depth < MAX_DEPTH) {
    return { ...base, kind: "object", fields: describeObject(s, root, path, depth + 1) };
  }
  if (type === "object" && !s.properties) {
    // A schema-valued field (output_schema...) is JSON; a free-form mapping is rows of name/value.
    if (/schema/i.test(key) || s["x-widget"] === "json") return { ...base, kind: "json", template: false, widget: "code", language: "json" };
    const ap = s.additionalProperties;
    const values = ap && typeof ap === "object" ? unwrapNullable(resolve(ap, root), root).schema : {};
    if (Array.isArray(values.enum)) return { ...base, kind: "map", mapValues: "string", mapEnum: values.enum, template: false };
    if (values.type === "string") return { ...base, kind: "map", mapValues: "string", template: true };
    if (ap === undefined || ap === true || Object.keys(values).length === 0) return { ...base, kind: "map", mapValues: "loose", template: true };
  }
  if (type === undefined && (key === "body" || s["x-widget"] === "json")) {
    // a request body: JSON (checked as it is typed) or a text template
    return { ...base, kind: "json", template: true, widget: "code", language: "json" };
  }
  // untyped (`Any`), unions and free-form maps: a JSON/template editor
  return { ...base, kind: "json", template: true };
}

function describeObject(s: JsonSchema, root: JsonSchema, prefix: string, depth: number): FieldDesc[] {
  const req = new Set<string>(s.required ?? []);
  return Object.entries<any>(s.properties ?? {}).map(([k, p]) =>
    describeField(k, prefix ? `${prefix}.${k}` : k, p, root, req.has(k), depth),
  );
}

/** The fields of an object schema (a node config or a flow's inputs). */
export function describeSchema(schema: JsonSchema | undefined): FieldDesc[] {
  if (!schema) return [];
  const s = resolve(schema, schema);
  return describeObject(s, schema, "", 0);
}

/** The value a new field (or array item) starts with. */
export function initialValue(f: FieldDesc): any {
  if (f.default !== undefined && f.default !== null) return structuredClone(f.default);
  switch (f.kind) {
    case "boolean":
      return false;
    case "array":
      return [];
    case "map":
      return undefined;
    case "object": {
      const out: Record<string, any> = {};
      for (const c of f.fields ?? []) if (c.required) out[c.key] = initialValue(c);
      return out;
    }
    case "enum":
      return f.enumValues?.[0];
    case "number":
    case "integer":
      return f.required ? (f.minimum ?? 0) : undefined;
    default:
      return f.required ? "" : undefined;
  }
}

/** Missing required values (the client-side check before the server's). Paths as in FieldDesc. */
export function missingRequired(fields: FieldDesc[], value: Record<string, any> | undefined): string[] {
  const out: string[] = [];
  for (const f of fields) {
    const v = value?.[f.key];
    if (f.required && (v === undefined || v === null || v === "")) out.push(f.path);
    if (f.kind === "object" && v && typeof v === "object") out.push(...missingRequired(f.fields ?? [], v));
  }
  return out;
}

/** Parse a JSON-kind field's text: JSON when it parses, else the raw text (a template string). */
export function parseLoose(text: string): any {
  const t = text.trim();
  if (t === "") return undefined;
  if (/^[[{"]|^-?\d|^(true|false|null)$/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}

export function formatLoose(v: any): string {
  if (v === undefined) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v, null, 2);
}

/** Problem fields (`config.cases[0].when`, `config.cases.0.when`) as form paths (`cases.0.when`). */
export function problemPath(field: string | null | undefined): string | null {
  if (!field) return null;
  const dotted = field.replace(/\[(\d+)\]/g, ".$1");
  if (dotted === "config") return "";
  if (dotted.startsWith("config.")) return dotted.slice(7);
  if (dotted.startsWith("inputs.")) return dotted.slice(7);
  return null;
}

/** Set `value` at a dotted path inside a copy of `obj` (undefined deletes the key). */
export function setPath(obj: any, path: string, value: any): any {
  const parts = path.split(".");
  const rec = (cur: any, i: number): any => {
    const k = parts[i];
    const isIndex = /^\d+$/.test(k);
    const base = cur ?? (isIndex ? [] : {});
    const copyOf: any = Array.isArray(base) ? [...base] : { ...base };
    if (i === parts.length - 1) {
      if (value === undefined && !Array.isArray(copyOf)) delete copyOf[k];
      else copyOf[isIndex ? Number(k) : k] = value;
      return copyOf;
    }
    copyOf[isIndex ? Number(k) : k] = rec(base[k], i + 1);
    return copyOf;
  };
  return rec(obj, 0);
}
