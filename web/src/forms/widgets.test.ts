import { describe, expect, it } from "vitest";
import { jsonProblem } from "./widgets/CodeEditor";
import { fieldsToSchema, parseDefault, schemaToFields } from "./inputsSchema";
import { duplicateKeys, objectToRows, rowsToObject } from "./keyValue";
import { usesScript, withProvider } from "./modelConfig";
import { orderProviders } from "./widgets/providers";
import { describeSchema } from "./schema";

describe("key-value rows", () => {
  it("round-trips an object, leaves out nameless rows, and an empty list unsets the field", () => {
    const headers = { Authorization: "Bearer {{env.TOKEN}}", Accept: "application/json" };
    expect(rowsToObject(objectToRows(headers), "string")).toEqual(headers);
    expect(rowsToObject([{ key: "a", value: "1" }, { key: "", value: "x" }, { key: "a", value: "2" }], "string")).toEqual({ a: "1" });
    expect(rowsToObject([], "string")).toBeUndefined();
    expect(rowsToObject([{ key: " ", value: "x" }], "string")).toBeUndefined();
    expect(duplicateKeys([{ key: "a", value: "" }, { key: "a", value: "" }])).toEqual(new Set(["a"]));
  });

  it("types loose values (query, arguments) and keeps templates text", () => {
    const q = { page: 2, tags: ["a", "b"], q: "{{inputs.q}}", on: true };
    expect(rowsToObject(objectToRows(q), "loose")).toEqual(q);
    expect(rowsToObject([{ key: "x", value: "5" }], "string")).toEqual({ x: "5" });
    const strings = { page: "2", flag: "true", q: "text" };
    expect(rowsToObject(objectToRows(strings, "loose"), "loose")).toEqual(strings);
  });

  it("is the widget of free-form mappings; schemas stay JSON", () => {
    const fs = describeSchema({
      type: "object",
      properties: {
        headers: { type: "object", additionalProperties: { type: "string" } },
        query: { type: "object", additionalProperties: true },
        outputs: { type: "object", additionalProperties: { enum: ["string", "number"], type: "string" } },
        output_schema: { anyOf: [{ type: "object", additionalProperties: true }, { type: "null" }] },
        body: { default: null },
      },
    });
    expect(fs.map((f) => [f.key, f.kind, f.mapValues ?? f.language])).toEqual([
      ["headers", "map", "string"],
      ["query", "map", "loose"],
      ["outputs", "map", "string"],
      ["output_schema", "json", "json"],
      ["body", "json", "json"],
    ]);
    expect(fs[2].mapEnum).toEqual(["string", "number"]);
  });
});

describe("run-inputs builder", () => {
  it("writes the JSON Schema of the fields and reads it back", () => {
    const schema = fieldsToSchema({
      fields: [
        { name: "query", type: "string", required: true, description: "What to look up" },
        { name: "limit", type: "integer", required: false, default: 5 },
        { name: "mode", type: "choice", required: false, options: ["fast", "slow"] },
        { name: "tags", type: "list", required: false },
        { name: "", type: "string", required: true },
      ],
    });
    expect(schema).toEqual({
      type: "object",
      properties: {
        query: { type: "string", description: "What to look up" },
        limit: { type: "integer", default: 5 },
        mode: { type: "string", enum: ["fast", "slow"] },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["query"],
    });
    expect(fieldsToSchema(schemaToFields(schema))).toEqual(schema);
    expect(fieldsToSchema({ fields: [] })).toBeUndefined();
  });

  it("keeps what it does not manage through a round trip", () => {
    const schema = {
      type: "object",
      properties: { q: { type: "string", minLength: 1, title: "Query" }, n: { anyOf: [{ type: "integer" }, { type: "null" }] }, long: { type: "string", maxLength: 5000 } },
      required: ["q"],
      additionalProperties: false,
    };
    const model = schemaToFields(schema);
    expect(model.fields.map((f) => f.type)).toEqual(["string", "other", "text"]);
    expect(fieldsToSchema(model)).toEqual(schema);
  });

  it("types defaults", () => {
    expect(parseDefault("number", "2.5")).toBe(2.5);
    expect(parseDefault("boolean", "true")).toBe(true);
    expect(parseDefault("list", "a, b")).toEqual(["a", "b"]);
    expect(parseDefault("string", "")).toBeUndefined();
  });
});

describe("model settings", () => {
  it("drops the script when the provider does not replay it, and fills the default model", () => {
    const cfg = { provider: "scripted", script: ["hi"], prompt: "x" };
    expect(withProvider(cfg, "openai", "gpt-4o-mini")).toEqual({ provider: "openai", model: "gpt-4o-mini", prompt: "x" });
    expect(withProvider(cfg, "auto")).toEqual(cfg.script ? { ...cfg, provider: "auto" } : cfg);
    expect(withProvider({ provider: "openai", model: "m" }, "scripted")).toEqual({ provider: "scripted", model: "m" });
    expect(usesScript("scripted")).toBe(true);
    expect(usesScript("openai")).toBe(false);
  });

  it("orders providers: configured first, scripted named and present", () => {
    const out = orderProviders([
      { name: "groq", label: "Groq", configured: false, models: [] },
      { name: "openai", label: "OpenAI", configured: true, models: ["m"] },
    ]);
    expect(out.map((p) => p.name)).toEqual(["openai", "scripted", "groq"]);
    expect(out[1].label).toBe("scripted (no model)");
  });
});

describe("JSON in the code editor", () => {
  it("says what is wrong, and lets a body be a text template", () => {
    expect(jsonProblem('{"a": 1}', false)).toBeNull();
    expect(jsonProblem('{"a": ', false)).toMatch(/Not valid JSON/);
    expect(jsonProblem("hello {{inputs.x}}", true)).toBeNull();
    expect(jsonProblem('{"a": {{inputs.x}}}', true)).toBeNull();
    expect(jsonProblem("", false)).toBeNull();
  });
});
