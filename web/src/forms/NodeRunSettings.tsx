/**
 * What every node has besides its config (spec/models.py NodeSpec): retries, a time limit and
 * what a failure does. Edited with the same form widgets as a config, on every node.
 */
import { useMemo } from "react";
import { SchemaForm } from "./SchemaForm";
import { describeSchema } from "./schema";
import type { JsonSchema, NodeSpec } from "../types";

export const NODE_RUN_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    retry: {
      type: "object",
      title: "Retry",
      description: "Run the node again when it fails.",
      properties: {
        max_attempts: { type: "integer", minimum: 1, maximum: 100, title: "Attempts", description: "Calls in all, the first included (1: no retry)." },
        delay_s: { type: "number", minimum: 0, maximum: 3600, title: "Wait before retrying", format: "duration" },
        backoff: { type: "number", minimum: 1, maximum: 10, title: "Backoff factor", description: "The wait is multiplied by this after each failure (default 2)." },
      },
    },
    timeout_s: { type: "number", exclusiveMinimum: 0, title: "Time limit", format: "duration", description: "The node fails when one attempt takes longer." },
    on_error: {
      type: "object",
      title: "On error",
      description: "After the last attempt fails.",
      properties: {
        mode: { enum: ["fail", "default", "route"], title: "Then", description: "fail: the run fails; default: continue with the value below; route: send {error} to the node's error port." },
        default: { title: "Default output", description: "The node's output after a failure (with default)." },
      },
    },
  },
};

const KEYS = ["retry", "timeout_s", "on_error"] as const;

function clean(v: unknown): unknown {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    return entries.length ? Object.fromEntries(entries) : undefined;
  }
  return v;
}

interface Props {
  node: NodeSpec;
  onPatch: (patch: Partial<NodeSpec>) => void;
  problems?: Record<string, string[]>;
}

export function NodeRunSettings({ node, onPatch, problems }: Props) {
  const fields = useMemo(() => describeSchema(NODE_RUN_SCHEMA), []);
  const value = { retry: node.retry, timeout_s: node.timeout_s, on_error: node.on_error };
  const set = KEYS.filter((k) => value[k] !== undefined);
  const summary = [
    node.retry?.max_attempts > 1 ? `${node.retry.max_attempts} attempts` : null,
    node.timeout_s !== undefined ? `limit ${node.timeout_s} s` : null,
    node.on_error?.mode && node.on_error.mode !== "fail" ? `on error: ${node.on_error.mode}` : null,
  ].filter(Boolean);
  return (
    <details className="node-run-settings" data-testid="node-run-settings" open={set.length > 0 || undefined}>
      <summary>
        Retries and time limit{summary.length ? <span className="muted"> · {summary.join(", ")}</span> : null}
      </summary>
      <SchemaForm
        fields={fields}
        value={value}
        idPrefix="node"
        templates={false}
        problems={problems}
        onChange={(v) => {
          const patch: Partial<NodeSpec> = {};
          for (const k of KEYS) patch[k] = clean(v[k]);
          if (patch.on_error && (patch.on_error as any).mode !== "default") delete (patch.on_error as any).default;
          onPatch(patch);
        }}
      />
    </details>
  );
}
