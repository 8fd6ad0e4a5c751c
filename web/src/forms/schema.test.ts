import { describe, expect, it } from "vitest";
import types from "../test/node-types.fixture.json";
import type { NodeType } from "../types";
import { describeSchema, initialValue, missingRequired, parseLoose, problemPath, setPath, type FieldDesc } from "./schema";
import { insertReference, openReference } from "./TemplateInput";

const byName = new Map((types as NodeType[]).map((t) => [t.name, t]));
const field = (fs: FieldDesc[], key: string) => fs.find((f) => f.key === key)!;

describe("form generation from JSON Schema", () => {
  it("maps the human node's config: text, arrays of $ref objects, enums, booleans, optional numbers", () => {
    const fs = describeSchema(byName.get("human")!.config_schema);
    expect(fs.map((f) => f.key)).toEqual(["message", "fields", "actions", "blocking", "timeout_s", "assignees"]);
    expect(field(fs, "message")).toMatchObject({ kind: "text", template: true, required: false, label: "Message" });
    const fields = field(fs, "fields");
    expect(fields.kind).toBe("array");
    expect(fields.item!.kind).toBe("object");
    const inner = fields.item!.fields!;
    expect(field(inner, "name")).toMatchObject({ kind: "string", required: true });
    expect(field(inner, "type")).toMatchObject({ kind: "enum", enumValues: ["string", "text", "number", "integer", "boolean", "select"] });
    expect(field(inner, "label")).toMatchObject({ kind: "string", nullable: true });
    expect(field(inner, "default").kind).toBe("json"); // untyped: JSON or a template
    expect(field(fs, "actions")).toMatchObject({ kind: "array", item: { kind: "string" } });
    expect(field(fs, "blocking")).toMatchObject({ kind: "boolean", default: true });
    expect(field(fs, "timeout_s")).toMatchObject({ kind: "number", nullable: true, minimum: 0 });
  });

  it("maps nested arrays of objects (switch cases -> conditions) with required markers", () => {
    const fs = describeSchema(byName.get("switch")!.config_schema);
    const cases = field(fs, "cases");
    expect(cases.required).toBe(true);
    const when = field(cases.item!.fields!, "when");
    expect(when.kind).toBe("array");
    const cond = when.item!.fields!;
    expect(field(cond, "ref")).toMatchObject({ kind: "string", required: true, label: "Reference" });
    expect(field(cond, "op").enumValues).toContain("contains");
    expect(field(cases.item!.fields!, "logic").enumValues).toEqual(["and", "or"]);
  });

  it("masks secret fields and maps every builtin type without throwing", () => {
    const fs = describeSchema({ type: "object", properties: { api_key: { type: "string" }, password: { type: "string", format: "password" }, name: { type: "string" } } });
    expect(fs.map((f) => f.kind)).toEqual(["secret", "secret", "string"]);
    // Counts named like secrets stay numbers (an llm node's optional max_tokens).
    const counts = describeSchema({ type: "object", properties: { max_tokens: { anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }] } } });
    expect(counts.map((f) => [f.kind, f.nullable])).toEqual([["integer", true]]);
    for (const t of types as NodeType[]) expect(() => describeSchema(t.config_schema)).not.toThrow();
  });

  it("makes run-input forms from a flow's input schema", () => {
    const fs = describeSchema({
      type: "object",
      properties: { query: { type: "string", minLength: 1 }, amount: { type: "number", exclusiveMinimum: 0 }, words: { type: "array", items: { type: "string" }, default: ["a"] }, mode: { enum: ["fast", "slow"] } },
      required: ["query", "amount"],
    });
    expect(fs.map((f) => [f.key, f.kind, f.required])).toEqual([
      ["query", "text", true], // a long-text key gets a textarea
      ["amount", "number", true],
      ["words", "array", false],
      ["mode", "enum", false],
    ]);
    expect(initialValue(field(fs, "words"))).toEqual(["a"]);
    expect(missingRequired(fs, { query: "", amount: 3 })).toEqual(["query"]);
    expect(missingRequired(fs, { query: "x", amount: 3 })).toEqual([]);
  });

  it("sets values at dotted paths without mutating", () => {
    const v = { cases: [{ when: [{ ref: "a" }] }] };
    const next = setPath(v, "cases.0.when.0.ref", "b");
    expect(next.cases[0].when[0].ref).toBe("b");
    expect(v.cases[0].when[0].ref).toBe("a");
    expect(setPath({ a: 1, b: 2 }, "a", undefined)).toEqual({ b: 2 });
  });

  it("maps validator fields to form paths", () => {
    expect(problemPath("config.text")).toBe("text");
    expect(problemPath("config.cases[0].when")).toBe("cases.0.when");
    expect(problemPath("config.cases.0.when.0.ref")).toBe("cases.0.when.0.ref");
    expect(problemPath("target")).toBeNull();
    expect(problemPath(null)).toBeNull();
  });

  it("parses JSON-kind values loosely (JSON, else the template text)", () => {
    expect(parseLoose('{"a": 1}')).toEqual({ a: 1 });
    expect(parseLoose("3")).toBe(3);
    expect(parseLoose("{{inputs.query}}")).toBe("{{inputs.query}}");
    expect(parseLoose("hello")).toBe("hello");
    expect(parseLoose("  ")).toBeUndefined();
  });

  it("finds and completes the reference being typed after {{", () => {
    expect(openReference("Hello {{rou", 11)).toBe("rou");
    expect(openReference("Hello {{route.case}} x", 22)).toBeNull();
    expect(openReference("no refs", 7)).toBeNull();
    expect(insertReference("Hi {{ro", 7, "route.case")).toEqual({ text: "Hi {{route.case}}", caret: 17 });
    expect(insertReference("Hi {{ro}} there", 7, "route").text).toBe("Hi {{route}} there");
  });
});
