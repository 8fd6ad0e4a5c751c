/**
 * The discreet numbers of a finished reply (F19): tokens in, out, total and how long it took,
 * and, when the assistant ran the flow, the run's own metrics line (F21). Stored on the message,
 * so they show again when a session is loaded.
 */
import type { RunMetrics, Usage } from "../types";

const n = (x: number | undefined) => (Number.isFinite(x) ? Number(x) : 0).toLocaleString("en-US");

export function usageText(usage: Usage | undefined, durationSeconds: number | undefined): string {
  const u = usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  const ms = Math.round((durationSeconds ?? 0) * 1000);
  return `${n(u.input_tokens)} in · ${n(u.output_tokens)} out · ${n(u.total_tokens)} tokens · ${n(ms)} ms`;
}

export function runMetricsText(m: RunMetrics): string {
  const secs = m.duration_seconds < 10 ? m.duration_seconds.toFixed(2) : m.duration_seconds.toFixed(1);
  return `ran in ${secs} s · ${n(m.total_tokens)} tokens`;
}

export function UsageBadge({ usage, durationSeconds }: { usage: Usage | undefined; durationSeconds: number | undefined }) {
  return (
    <span className="assistant-usage" data-testid="assistant-usage" title="Tokens this reply used (every model call of the turn) and how long it took">
      {usageText(usage, durationSeconds)}
    </span>
  );
}

export function RunMetricsLine({ metrics }: { metrics: RunMetrics }) {
  return (
    <div className="assistant-run-metrics" data-testid="assistant-run-metrics">
      ▶ {runMetricsText(metrics)}
    </div>
  );
}
