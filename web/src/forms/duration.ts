/**
 * Durations as people write them ("30 s", "2 min", "1 h 30 min", "500 ms") <-> seconds, the unit
 * every `*_s` field of a flow document uses. Pure, unit-tested.
 */

const UNIT_SECONDS: [RegExp, number][] = [
  [/^(ms|msec|millis|milliseconds?)$/, 0.001],
  [/^(s|sec|secs|seconds?)$/, 1],
  [/^(m|min|mins|minutes?)$/, 60],
  [/^(h|hr|hrs|hours?)$/, 3600],
  [/^(d|days?)$/, 86400],
];

/** Seconds from "30", "30 s", "2 min", "1h 30m", "1.5 h", "500 ms"; null when not a duration. */
export function parseDuration(text: string): number | null {
  const t = text.trim().toLowerCase();
  if (!t) return null;
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  const re = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*,?\s*/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(t))) {
    const factor = UNIT_SECONDS.find(([u]) => u.test(m![2]))?.[1];
    if (factor === undefined) return null;
    total += Number(m[1]) * factor;
    consumed = re.lastIndex;
  }
  if (consumed !== t.length) return null;
  return Math.round(total * 1000) / 1000;
}

/** A duration in seconds as text: 30 -> "30 s", 120 -> "2 min", 90 -> "1 min 30 s", 0.5 -> "500 ms". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return String(seconds);
  if (seconds > 0 && seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 3600 && seconds % 60 === 0) return `${Math.floor(seconds / 3600)} h ${(seconds % 3600) / 60} min`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  if (seconds > 60 && Number.isInteger(seconds)) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${seconds} s`;
}
