import { afterEach, describe, expect, it, vi } from "vitest";
import { readJson, readString, removeKey, STORAGE_KEYS, writeJson, writeString } from "./storage";

afterEach(() => {
  vi.restoreAllMocks();
  localStorage.clear();
});

function blockStorage() {
  vi.spyOn(Storage.prototype, "getItem").mockImplementation(() => {
    throw new DOMException("blocked", "SecurityError");
  });
  vi.spyOn(Storage.prototype, "setItem").mockImplementation(() => {
    throw new DOMException("blocked", "QuotaExceededError");
  });
  vi.spyOn(Storage.prototype, "removeItem").mockImplementation(() => {
    throw new DOMException("blocked", "SecurityError");
  });
}

describe("storage", () => {
  it("round-trips strings and JSON under the contract's keys", () => {
    expect(STORAGE_KEYS.skipAll).toBe("plait-assistant-skip-all");
    expect(writeString("k", "v")).toBe(true);
    expect(readString("k")).toBe("v");
    expect(writeJson("j", { a: [1, 2] })).toBe(true);
    expect(readJson("j", null)).toEqual({ a: [1, 2] });
    removeKey("j");
    expect(readJson("j", "fallback")).toBe("fallback");
  });

  it("corrupt JSON reads as the fallback", () => {
    localStorage.setItem("bad", "{not json");
    expect(readJson("bad", [])).toEqual([]);
  });

  it("M-T39: blocked storage (private mode) never throws and reads as nothing", () => {
    blockStorage();
    expect(readString("k")).toBeNull();
    expect(writeString("k", "v")).toBe(false);
    expect(writeJson("k", { a: 1 })).toBe(false);
    expect(readJson("k", 7)).toBe(7);
    expect(() => removeKey("k")).not.toThrow();
  });

  it("an unserialisable value is refused, not thrown", () => {
    const cyclic: any = {};
    cyclic.self = cyclic;
    expect(writeJson("c", cyclic)).toBe(false);
  });
});
