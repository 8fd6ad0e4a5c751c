import { describe, expect, it } from "vitest";
import types from "../test/node-types.fixture.json";
import type { FlowDocument, NodeType } from "../types";
import { applyMention, fieldMentionItems, mentionAt, mentionItems, moveHighlight, nodeMentionItems } from "./mentions";

const nodeTypes = types as NodeType[];

const doc: FlowDocument = {
  nodes: [
    { id: "start", type: "start" },
    { id: "greet", type: "message", label: "Greeting", config: { text: "hi {{inputs.name}}" } },
    { id: "LanguageModelComponent-XSmrK", type: "code", config: { code: "def main(): ...", _type: "x", api_key: "k" } },
  ],
  edges: [],
};

describe("mentionAt", () => {
  it("A-S44: '@' at the start or after a space opens node mode with the query up to the caret", () => {
    expect(mentionAt("@", 1)).toEqual({ mode: "node", query: "", start: 0, end: 1 });
    expect(mentionAt("use @gre", 8)).toEqual({ mode: "node", query: "gre", start: 4, end: 8 });
    expect(mentionAt("use @gre and more", 8)).toEqual({ mode: "node", query: "gre", start: 4, end: 8 });
  });

  it("an email-like '@' inside a word or a space after the query is not a mention", () => {
    expect(mentionAt("mail me@example", 15)).toBeNull();
    expect(mentionAt("@greet now", 10)).toBeNull();
    expect(mentionAt("plain text", 5)).toBeNull();
  });

  it("A-S45: a '.' right after a confirmed token opens field mode", () => {
    const text = "set 'greet'.";
    expect(mentionAt(text, text.length)).toEqual({ mode: "field", nodeId: "greet", query: "", start: 4, end: text.length });
    const typed = "set 'greet'.te";
    expect(mentionAt(typed, typed.length)).toMatchObject({ mode: "field", nodeId: "greet", query: "te" });
  });

  it("a finished field token or a space after the dot is not field mode", () => {
    expect(mentionAt("'greet.text' ", 13)).toBeNull();
    expect(mentionAt("'greet'. x", 10)).toBeNull();
  });
});

describe("mention items", () => {
  it("A-S44: canvas nodes filter by display name or id, prefix matches first", () => {
    expect(nodeMentionItems(doc, nodeTypes, "").map((i) => i.id)).toEqual(["start", "greet", "LanguageModelComponent-XSmrK"]);
    const g = nodeMentionItems(doc, nodeTypes, "gree");
    expect(g.map((i) => i.id)).toEqual(["greet"]);
    expect(g[0].label).toBe("Greeting");
    expect(nodeMentionItems(doc, nodeTypes, "xsmr").map((i) => i.id)).toEqual(["LanguageModelComponent-XSmrK"]);
    expect(nodeMentionItems(doc, nodeTypes, "zzz")).toEqual([]);
  });

  it("A-S44: confirming inserts '<componentId>' with no trailing space", () => {
    const text = "explain @lang please";
    const q = mentionAt(text, 13)!;
    const [item] = mentionItems(q, doc, nodeTypes);
    const out = applyMention(text, q, item);
    expect(out.text).toBe("explain 'LanguageModelComponent-XSmrK' please");
    expect(out.caret).toBe("explain 'LanguageModelComponent-XSmrK'".length);
  });

  it("A-S45: field mode lists user-facing fields only (no _keys, no code) and inserts '<id>.<field>' plus a space", () => {
    const items = fieldMentionItems(doc, nodeTypes, "LanguageModelComponent-XSmrK", "");
    const ids = items.map((i) => i.id);
    expect(ids).not.toContain("code");
    expect(ids).not.toContain("_type");
    expect(ids).toContain("api_key"); // set on the node, though not in the schema
    expect(ids).toContain("timeout_s");
    const text = "what is 'LanguageModelComponent-XSmrK'.api";
    const q = mentionAt(text, text.length)!;
    const [first] = mentionItems(q, doc, nodeTypes);
    expect(first.id).toBe("api_key");
    expect(applyMention(text, q, first).text).toBe("what is 'LanguageModelComponent-XSmrK.api_key' ");
  });

  it("F42: hidden and unlabelled fields are left out", () => {
    const t: NodeType[] = [
      {
        name: "custom",
        title: "Custom",
        description: "",
        category: "x",
        input_ports: ["in"],
        output_ports: ["out"],
        config_schema: { properties: { shown: { title: "Shown" }, hidden: { title: "H", show: false }, nolabel: { title: "" }, xh: { "x-hidden": true } } },
      },
    ];
    const d: FlowDocument = { nodes: [{ id: "c", type: "custom" }], edges: [] };
    expect(fieldMentionItems(d, t, "c", "").map((i) => i.id)).toEqual(["shown"]);
  });

  it("field mode for a node not on the canvas lists nothing", () => {
    expect(fieldMentionItems(doc, nodeTypes, "ghost", "")).toEqual([]);
  });

  it("arrows and Tab move the highlight (wrapping); other keys do not", () => {
    expect(moveHighlight("ArrowDown", false, 0, 3)).toBe(1);
    expect(moveHighlight("ArrowDown", false, 2, 3)).toBe(0);
    expect(moveHighlight("ArrowUp", false, 0, 3)).toBe(2);
    expect(moveHighlight("Tab", false, 1, 3)).toBe(2);
    expect(moveHighlight("Tab", true, 1, 3)).toBe(0);
    expect(moveHighlight("Enter", false, 1, 3)).toBeNull();
    expect(moveHighlight("ArrowDown", false, 0, 0)).toBeNull();
  });
});
