import { act } from "react";
import { createRoot } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import { reduceAll, startingRun } from "../state/run";
import { DecisionList } from "./DecisionList";

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
let root: ReturnType<typeof createRoot> | null = null;
afterEach(() => {
  act(() => root?.unmount());
  document.body.innerHTML = "";
});

const events = [
  { seq: 1, type: "run_started", run_id: "r" },
  {
    seq: 2,
    type: "decision",
    run_id: "r",
    step: 1,
    mode: "next",
    next: [{ node: "triage", input: { text: "refund please" } }],
    skips: ["spam"],
    reason: "a customer message",
    at: null,
    rejected: [{ reply: "Sure! triage", problems: ["the reply is not JSON"] }],
  },
  { seq: 3, type: "node_finished", run_id: "r", node_id: "triage", ok: true, output: {} },
  { seq: 4, type: "decision_rejected", run_id: "r", step: 2, rejected: [{ reply: "{}", problems: ["mode: missing"] }, { reply: "??", problems: ["the reply is not JSON"] }] },
  { seq: 5, type: "run_finished", run_id: "r", status: "failed" },
];

describe("edge-LLM decisions", () => {
  it("are collected from decision and decision_rejected events, in order", () => {
    const run = reduceAll(startingRun(), events);
    expect(run.decisions).toEqual([
      { step: 1, mode: "next", next: [{ node: "triage", input: { text: "refund please" } }], skips: ["spam"], reason: "a customer message", at: null, rejected: events[1].rejected },
      { step: 2, rejected: events[3].rejected, failed: true },
    ]);
    expect(reduceAll(run, events).decisions).toHaveLength(2); // replayed events count once
  });

  it("list what was chosen, skipped and why, and the rejected replies", () => {
    const host = document.createElement("div");
    document.body.appendChild(host);
    root = createRoot(host);
    act(() => root!.render(<DecisionList decisions={reduceAll(startingRun(), events).decisions!} />));
    const first = host.querySelector('[data-testid="decision-1"]')!.textContent!;
    expect(first).toContain("Step 1: run triage; skip spam");
    expect(first).toContain("a customer message");
    expect(first).toContain("refund please");
    expect(host.querySelector('[data-testid="decision-2"]')!.textContent).toContain("no valid decision");
    const rejected = host.querySelector<HTMLDetailsElement>('[data-testid="decision-2-rejected"]')!;
    expect(rejected.open).toBe(true);
    expect(rejected.textContent).toContain("2 rejected replies");
    expect(rejected.textContent).toContain("mode: missing");
  });
});
