/**
 * Form generation from JSON Schema (pydantic's `model_json_schema()` output and flow input
 * schemas): a schema becomes a tree of field descriptors that SchemaForm renders. Pure, so the
 * mapping is unit-tested without a DOM.
 */
import type { JsonSchema } from "../types";

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
  | "json";

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

function humanize(key: string): string {
  const s = key.replace(/_/g, " ");
  return s.charAt(0).toUpperCase() + s.slice(1);
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
    label: typeof s.title === "string" && s.title ? s.title : humanize(key),
    description: s.description,
    required,
    nullable,
    template: false,
    default: s.default,
    examples: s.examples,
  };
  if (Array.isArray(s.enum)) return { ...base, kind: "enum", enumValues: s.enum };
  if (s.const !== undefined) return { ...base, kind: "enum", enumValues: [s.const] };
  const type = s.type;
  if (type === "boolean") return { ...base, kind: "boolean" };
  if (type === "integer" || type === "number") {
    return { ...base, kind: type, minimum: s.minimum ?? s.exclusiveMinimum, maximum: s.maximum ?? s.exclusiveMaximum };
  }
  if (type === "string") {
    if (s.format === "password" || s.writeOnly || SECRET_KEY.test(key)) return { ...base, kind: "secret", template: true };
    const long = LONG_TEXT_KEY.test(key) || /template/i.test(s.description ?? "") || (s.maxLength ?? 0) > 200;
    return { ...base, kind: long ? "text" : "string", template: true };
  }
  if (type === "array" && depth < MAX_DEPTH) {
    const item = describeField("item", `${path}.*`, s.items ?? {}, root, true, depth + 1);
    return { ...base, kind: "array", item };
  }
  if (type === "object" && s.properties && depth < MAX_DEPTH) {
    return { ...base, kind: "object", fields: describeObject(s, root, path, depth + 1) };
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
