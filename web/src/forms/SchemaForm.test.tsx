import { act, useState } from "react";
import { createRoot } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import types from "../test/node-types.fixture.json";
import type { NodeType } from "../types";
import { describeSchema, type FieldDesc } from "./schema";
import { InputsBuilder } from "./InputsBuilder";
import { NodeRunSettings } from "./NodeRunSettings";
import { SchemaForm } from "./SchemaForm";

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
const byName = new Map((types as NodeType[]).map((t) => [t.name, t]));
let root: ReturnType<typeof createRoot> | null = null;

function render(el: React.ReactElement): HTMLElement {
  const host = document.createElement("div");
  document.body.appendChild(host);
  root = createRoot(host);
  act(() => root!.render(el));
  return host;
}

afterEach(() => {
  act(() => root?.unmount());
  document.body.innerHTML = "";
});

describe("SchemaForm", () => {
  it("renders labelled controls with test ids, problems on the field, and edits values", () => {
    let value: Record<string, any> = { message: "Approve {{inputs.amount}}?", actions: ["approve"] };
    const fields = describeSchema(byName.get("human")!.config_schema);
    const host = render(
      <SchemaForm fields={fields} value={value} onChange={(v) => (value = v)} problems={{ actions: ["List should have at least 1 item"] }} suggestions={["inputs.amount"]} />,
    );
    const message = host.querySelector<HTMLTextAreaElement>('[data-testid="field-message"]')!;
    expect(message.tagName).toBe("TEXTAREA");
    expect(host.querySelector(`label[for="${message.id}"]`)!.textContent).toContain("Message");
    expect(host.querySelector('[data-testid="field-actions-error"]')!.textContent).toContain("at least 1 item");
    expect(host.querySelector<HTMLInputElement>('[data-testid="field-actions.0"]')!.value).toBe("approve");
    const blocking = host.querySelector<HTMLInputElement>('[data-testid="field-blocking"]')!;
    expect(blocking.type).toBe("checkbox");
    act(() => blocking.click());
    expect(value.blocking).toBe(false);
    act(() => host.querySelector<HTMLButtonElement>('[data-testid="field-fields-add"]')!.click());
    expect(value.fields).toEqual([{ name: "" }]);
  });

  it("masks secrets", () => {
    const fields = describeSchema({ type: "object", properties: { api_key: { type: "string" } } });
    const host = render(<SchemaForm fields={fields} value={{ api_key: "sk-1" }} onChange={() => undefined} />);
    expect(host.querySelector<HTMLInputElement>('[data-testid="field-api_key"]')!.type).toBe("password");
  });

  it("offers choices on the fields that have them, items of lists included, and keeps them free text", () => {
    let value: Record<string, any> = { tools: ["web_search"] };
    const fields = describeSchema({
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "string" } },
        force_tool: { anyOf: [{ type: "string" }, { type: "null" }], default: null },
        system: { type: "string" },
      },
    });
    const refs = { refs: ["web_search", "mcp:calc", "mcp:calc/add"], labels: { "mcp:calc/add": "Add two numbers" } };
    const host = render(
      <SchemaForm fields={fields} value={value} onChange={(v) => (value = v)} choices={{ tools: refs, force_tool: { refs: ["web_search"] } }} />,
    );
    const item = host.querySelector<HTMLInputElement>('[data-testid="field-tools.0"]')!;
    const list = document.getElementById(item.getAttribute("list")!) as HTMLDataListElement;
    expect([...list.options].map((o) => o.value)).toEqual(refs.refs);
    expect(list.options[2].label).toBe("Add two numbers");
    const force = host.querySelector<HTMLInputElement>('[data-testid="field-force_tool"]')!;
    expect(force.getAttribute("list")).toBe("field-force_tool-choices");
    expect(host.querySelector('[data-testid="field-system"]')!.getAttribute("list")).toBeNull();
    act(() => {
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
      setter.call(item, "mcp:calc/add");
      item.dispatchEvent(new Event("input", { bubbles: true }));
    });
    expect(value.tools).toEqual(["mcp:calc/add"]);
  });

  it("edits a string mapping as rows; the last row removed unsets the field", () => {
    let value: Record<string, any> = { url: "https://x" };
    const fields = describeSchema(byName.get("http")!.config_schema);
    const host = render(<Stateful fields={fields} initial={value} onValue={(v) => (value = v)} />);
    expect(host.querySelector('[data-testid="field-headers"]')).toBeNull(); // no JSON text box
    act(() => host.querySelector<HTMLButtonElement>('[data-testid="field-headers-add"]')!.click());
    type_(host.querySelector<HTMLInputElement>('[data-testid="field-headers-key-0"]')!, "Accept");
    type_(host.querySelector<HTMLInputElement>('[data-testid="field-headers-value-0"]')!, "text/plain");
    expect(value.headers).toEqual({ Accept: "text/plain" });
    act(() => host.querySelector<HTMLButtonElement>('[data-testid="field-headers-remove-0"]')!.click());
    expect("headers" in value).toBe(false);
    expect(host.querySelector('label[for="field-timeout_s"]')!.textContent).toBe("Timeout");
  });

  it("shows the operator help once for all conditions", () => {
    const fields = describeSchema(byName.get("if")!.config_schema);
    const value = { when: [{ ref: "a", op: "==", value: 1 }, { ref: "b", op: "empty" }, { ref: "c", op: ">", value: 2 }] };
    const host = render(<SchemaForm fields={fields} value={value} onChange={() => undefined} />);
    expect(host.textContent!.match(/compare numbers/g)).toHaveLength(1);
    expect(host.querySelectorAll(".condition-row")).toHaveLength(3);
    expect(host.querySelector('[data-testid="field-when.1.value"]')).toBeNull(); // empty needs no value
    expect(host.querySelector('[data-testid="field-when.0.ref"]')!.getAttribute("aria-label")).toContain("Condition 1");
  });

  it("hides the script of a real provider, removes it when switching, and deletes an emptied script", async () => {
    const schema = {
      type: "object",
      properties: {
        provider: { type: "string", default: "openai" },
        model: { type: "string", default: "" },
        script: { anyOf: [{ type: "array", items: {} }, { type: "null" }], default: null, title: "Script" },
        prompt: { type: "string" },
      },
    };
    let value: Record<string, any> = { provider: "scripted", script: ["hello"] };
    const fields = describeSchema(schema);
    const host = render(<SchemaForm fields={fields} value={value} onChange={(v) => (value = v)} />);
    await act(async () => new Promise((r) => setTimeout(r, 20)));
    act(() => host.querySelector<HTMLButtonElement>('[data-testid="field-script-remove-0"]')!.click());
    expect("script" in value).toBe(false); // not "script": []
    value = { provider: "scripted", script: ["hello"] };
    act(() => root!.render(<SchemaForm fields={fields} value={value} onChange={(v) => (value = v)} />));
    const provider = host.querySelector<HTMLSelectElement>('[data-testid="field-provider"]')!;
    expect([...provider.options].map((o) => o.textContent)).toContain("scripted (no model)");
    act(() => {
      provider.value = "openai";
      provider.dispatchEvent(new Event("change", { bubbles: true }));
    });
    expect(value.provider).toBe("openai");
    expect("script" in value).toBe(false);
    act(() => root!.render(<SchemaForm fields={fields} value={value} onChange={(v) => (value = v)} />));
    expect(host.querySelector('[data-testid="field-script"]')).toBeNull();
    expect(host.querySelector('[data-testid="field-model"]')).not.toBeNull();
  });
});

describe("NodeRunSettings", () => {
  it("patches retry and the time limit of any node, and unsets them when emptied", () => {
    let patch: Record<string, any> = {};
    const node = { id: "wait", type: "delay", timeout_s: 60 };
    const host = render(<NodeRunSettings node={node} onPatch={(p) => (patch = p)} />);
    expect(host.querySelector<HTMLInputElement>('[data-testid="node-timeout_s"]')!.value).toBe("1 min");
    type_(host.querySelector<HTMLInputElement>('[data-testid="node-retry.max_attempts"]')!, "3");
    expect(patch).toEqual({ retry: { max_attempts: 3 }, timeout_s: 60, on_error: undefined });
    type_(host.querySelector<HTMLInputElement>('[data-testid="node-timeout_s"]')!, "");
    expect(patch.timeout_s).toBeUndefined();
  });
});

describe("InputsBuilder", () => {
  it("shows a schema written in any key order and writes the fields it edits", () => {
    let schema: any = { required: ["q"], properties: { q: { description: "Query", type: "string" } }, type: "object" };
    const host = render(<InputsBuilder schema={schema} onChange={(s) => (schema = s)} idPrefix="in" />);
    expect(host.querySelector<HTMLInputElement>('[data-testid="in-name-0"]')!.value).toBe("q");
    expect(host.querySelector<HTMLInputElement>('[data-testid="in-required-0"]')!.checked).toBe(true);
    type_(host.querySelector<HTMLInputElement>('[data-testid="in-description-0"]')!, "What to find");
    expect(schema).toEqual({ type: "object", properties: { q: { type: "string", description: "What to find" } }, required: ["q"] });
  });

  it("keeps loose mapping values that look like numbers as strings", () => {
    const fields = describeSchema({ type: "object", properties: { query: { type: "object", additionalProperties: true } } });
    const host = render(<SchemaForm fields={fields} value={{ query: { page: "2", n: 3 } }} onChange={() => undefined} />);
    expect(host.querySelector<HTMLInputElement>('[data-testid="field-query-value-0"]')!.value).toBe('"2"');
    expect(host.querySelector<HTMLInputElement>('[data-testid="field-query-value-1"]')!.value).toBe("3");
  });
});

function Stateful({ fields, initial, onValue }: { fields: FieldDesc[]; initial: Record<string, any>; onValue: (v: Record<string, any>) => void }) {
  const [v, setV] = useState(initial);
  return (
    <SchemaForm
      fields={fields}
      value={v}
      onChange={(n) => {
        setV(n);
        onValue(n);
      }}
    />
  );
}

function type_(el: HTMLInputElement, text: string) {
  act(() => {
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
    setter.call(el, text);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });
}
