/** Seconds typed as people say them ("30 s", "2 min", "1 h"), stored as a number of seconds. */
import { useState } from "react";
import { formatDuration, parseDuration } from "../duration";

interface Props {
  id: string;
  value: unknown;
  onChange: (v: number | string | undefined) => void;
  invalid?: boolean;
  describedBy?: string;
  placeholder?: string;
}

function shown(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "number" ? formatDuration(value) : String(value);
}

export function DurationInput({ id, value, onChange, invalid, describedBy, placeholder }: Props) {
  const [text, setText] = useState(() => shown(value));
  const [last, setLast] = useState(value);
  const [bad, setBad] = useState(false);
  if (last !== value) {
    // changed from outside (undo, another field): show the new value
    setLast(value);
    if (parseDuration(text) !== value) setText(shown(value));
  }
  return (
    <div className="duration-input">
      <input
        id={id}
        data-testid={id}
        type="text"
        inputMode="text"
        autoComplete="off"
        value={text}
        placeholder={placeholder ?? "e.g. 30 s, 2 min"}
        aria-invalid={invalid || bad || undefined}
        aria-describedby={describedBy}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          if (!t.trim()) {
            setBad(false);
            setLast(undefined);
            return onChange(undefined);
          }
          if (/\{\{.*\}\}/.test(t)) {
            setBad(false);
            setLast(t);
            return onChange(t); // a template: the server resolves it
          }
          const s = parseDuration(t);
          setBad(s === null);
          if (s !== null) {
            setLast(s);
            onChange(s);
          }
        }}
        onBlur={() => {
          const s = parseDuration(text);
          if (s !== null) setText(formatDuration(s));
        }}
      />
      {bad && (
        <small className="field-error" data-testid={`${id}-duration-error`}>
          Write a duration such as 30 s, 2 min or 1 h.
        </small>
      )}
    </div>
  );
}
