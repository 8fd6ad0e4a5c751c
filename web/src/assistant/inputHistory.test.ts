import { afterEach, describe, expect, it, vi } from "vitest";
import {
  caretOnFirstLine,
  caretOnLastLine,
  handleHistoryKey,
  historyDown,
  historyUp,
  INPUT_HISTORY_LIMIT,
  loadInputHistory,
  NO_RECALL,
  pushInputHistory,
  recordInput,
  type Recall,
} from "./inputHistory";
import { STORAGE_KEYS } from "./storage";

afterEach(() => {
  vi.restoreAllMocks();
  localStorage.clear();
});

/** Press keys in an input: returns the texts shown after each press (the value when nothing changed). */
function press(history: string[], keys: string[], start = ""): string[] {
  let value = start;
  let recall: Recall = NO_RECALL;
  const shown: string[] = [];
  for (const k of keys) {
    const r = handleHistoryKey(k, value, value.length, value.length, history, recall);
    if (r) {
      value = r.text;
      recall = r.recall;
    }
    shown.push(value);
  }
  return shown;
}

describe("input history", () => {
  it("M-S53: history ['latest','older','oldest']; Up in an empty input gives 'latest' with the caret at the end", () => {
    const r = handleHistoryKey("ArrowUp", "", 0, 0, ["latest", "older", "oldest"], NO_RECALL);
    expect(r?.text).toBe("latest");
    expect(r?.caret).toBe("latest".length);
  });

  it("M-S54: up three times gives a, b, c; a fourth up stays on c", () => {
    expect(press(["a", "b", "c"], ["ArrowUp", "ArrowUp", "ArrowUp", "ArrowUp"])).toEqual(["a", "b", "c", "c"]);
  });

  it("M-S55: 'my draft', Up -> 'newest', Down -> 'my draft', Down again -> no change", () => {
    const shown = press(["newest", "older"], ["ArrowUp", "ArrowDown", "ArrowDown"], "my draft");
    expect(shown).toEqual(["newest", "my draft", "my draft"]);
    // the last Down is not handled at all (the key moves the caret as usual)
    const afterDraft = historyDown(["newest"], NO_RECALL);
    expect(afterDraft).toBeNull();
  });

  it("F40: Down walks forward through newer entries before the draft", () => {
    expect(press(["a", "b", "c"], ["ArrowUp", "ArrowUp", "ArrowUp", "ArrowDown", "ArrowDown", "ArrowDown"], "d")).toEqual([
      "a",
      "b",
      "c",
      "b",
      "a",
      "d",
    ]);
  });

  it("F40: the draft is saved at the first Up only", () => {
    const first = historyUp(["a", "b"], NO_RECALL, "draft")!;
    expect(first.recall).toEqual({ index: 0, draft: "draft" });
    const second = historyUp(["a", "b"], first.recall, "a edited")!;
    expect(second.recall.draft).toBe("draft");
  });

  it("M-S56: 'line one\\nline two' with the caret on line two: Up moves the caret and does not recall", () => {
    const value = "line one\nline two";
    expect(handleHistoryKey("ArrowUp", value, value.length, value.length, ["x"], NO_RECALL)).toBeNull();
    // on the first line it recalls
    expect(handleHistoryKey("ArrowUp", value, 3, 3, ["x"], NO_RECALL)?.text).toBe("x");
  });

  it("F40: Down recalls only from the last line", () => {
    const recall: Recall = { index: 1, draft: "" };
    const value = "first\nsecond";
    expect(handleHistoryKey("ArrowDown", value, 2, 2, ["a", "b"], recall)).toBeNull();
    expect(handleHistoryKey("ArrowDown", value, value.length, value.length, ["a", "b"], recall)?.text).toBe("a");
  });

  it("F40: a selection or another key is not a recall", () => {
    expect(handleHistoryKey("ArrowUp", "abc", 0, 2, ["x"], NO_RECALL)).toBeNull();
    expect(handleHistoryKey("ArrowLeft", "", 0, 0, ["x"], NO_RECALL)).toBeNull();
  });

  it("an empty history recalls nothing", () => {
    expect(handleHistoryKey("ArrowUp", "typed", 5, 5, [], NO_RECALL)).toBeNull();
  });

  it("caret line helpers", () => {
    expect(caretOnFirstLine("a\nb", 1)).toBe(true);
    expect(caretOnFirstLine("a\nb", 2)).toBe(false);
    expect(caretOnLastLine("a\nb", 1)).toBe(false);
    expect(caretOnLastLine("a\nb", 2)).toBe(true);
  });

  it("M-S57: sending 'hello' twice stores it once; 'world' then 'hello' gives ['hello','world','hello']", () => {
    let h: string[] = [];
    h = pushInputHistory(h, "hello");
    h = pushInputHistory(h, "hello");
    expect(h).toEqual(["hello"]);
    h = pushInputHistory(h, "world");
    h = pushInputHistory(h, "hello");
    expect(h).toEqual(["hello", "world", "hello"]);
  });

  it("F40: sends are trimmed, empty ones ignored, and only the last 10 are kept", () => {
    let h: string[] = [];
    h = pushInputHistory(h, "   ");
    expect(h).toEqual([]);
    h = pushInputHistory(h, "  padded \n");
    expect(h).toEqual(["padded"]);
    for (let i = 0; i < 15; i++) h = pushInputHistory(h, `m${i}`);
    expect(h.length).toBe(INPUT_HISTORY_LIMIT);
    expect(h[0]).toBe("m14");
    expect(h[9]).toBe("m5");
  });

  it("M-T38: the history survives a reload (stored newest first under plait-assistant-input-history)", () => {
    recordInput("one");
    recordInput("two");
    expect(JSON.parse(localStorage.getItem(STORAGE_KEYS.inputHistory)!)).toEqual(["two", "one"]);
    expect(loadInputHistory()).toEqual(["two", "one"]);
  });

  it("a corrupt stored history reads as empty or keeps only strings", () => {
    localStorage.setItem(STORAGE_KEYS.inputHistory, "{oops");
    expect(loadInputHistory()).toEqual([]);
    localStorage.setItem(STORAGE_KEYS.inputHistory, JSON.stringify({ a: 1 }));
    expect(loadInputHistory()).toEqual([]);
    localStorage.setItem(STORAGE_KEYS.inputHistory, JSON.stringify(["ok", 3, null, "fine"]));
    expect(loadInputHistory()).toEqual(["ok", "fine"]);
  });

  it("M-S75 / M-T39: with storage blocked a send still records in memory, nothing is recalled after reload, nothing throws", () => {
    vi.spyOn(Storage.prototype, "getItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    vi.spyOn(Storage.prototype, "setItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    expect(loadInputHistory()).toEqual([]);
    let h: string[] = [];
    expect(() => {
      h = recordInput("hello", h);
    }).not.toThrow();
    expect(h).toEqual(["hello"]);
    expect(loadInputHistory()).toEqual([]);
    expect(handleHistoryKey("ArrowUp", "", 0, 0, loadInputHistory(), NO_RECALL)).toBeNull();
  });
});
