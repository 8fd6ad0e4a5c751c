import { afterEach, describe, expect, it, vi } from "vitest";
import { isSkipAllCommand, readSkipAll, skipAllConfirmation, writeSkipAll } from "./skipAll";
import { STORAGE_KEYS } from "./storage";

afterEach(() => {
  vi.restoreAllMocks();
  localStorage.clear();
});

describe("skip-all", () => {
  it("M-S32: the exact text (trimmed) is the command", () => {
    expect(isSkipAllCommand("/skip-all")).toBe(true);
    expect(isSkipAllCommand("  /skip-all \n")).toBe(true);
  });

  it("M-S33: '/skip-all please' and look-alikes are normal prompts", () => {
    expect(isSkipAllCommand("/skip-all please")).toBe(false);
    expect(isSkipAllCommand("/SKIP-ALL")).toBe(false);
    expect(isSkipAllCommand("/skipall")).toBe(false);
    expect(isSkipAllCommand("")).toBe(false);
  });

  it("M-S32: the toggle is stored under plait-assistant-skip-all and survives a reload", () => {
    expect(readSkipAll()).toBe(false);
    writeSkipAll(true);
    expect(localStorage.getItem(STORAGE_KEYS.skipAll)).toBe("true");
    expect(readSkipAll()).toBe(true);
    writeSkipAll(false);
    expect(readSkipAll()).toBe(false);
  });

  it("F34: anything other than the literal 'true' counts as off", () => {
    for (const v of ["1", "TRUE", "yes", "true ", '"true"', "on"]) {
      localStorage.setItem(STORAGE_KEYS.skipAll, v);
      expect(readSkipAll()).toBe(false);
    }
  });

  it("M-T39: with storage blocked the toggle does not persist, reads as off, and nothing throws", () => {
    vi.spyOn(Storage.prototype, "getItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    vi.spyOn(Storage.prototype, "setItem").mockImplementation(() => {
      throw new Error("blocked");
    });
    expect(() => writeSkipAll(true)).not.toThrow();
    expect(readSkipAll()).toBe(false);
  });

  it("M-T22: the confirmation says enabled, then disabled", () => {
    expect(skipAllConfirmation(true)).toMatch(/^Skip-all mode enabled/);
    expect(skipAllConfirmation(false)).toMatch(/^Skip-all mode disabled/);
  });
});
