/** Helpers for component tests in jsdom: a fake server, a React root, typing and settling. */
import { act, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { vi } from "vitest";

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

export type Answer = [number, unknown] | ((init: RequestInit) => [number, unknown]);

/** Route `fetch` to "METHOD /path" answers (query ignored); returns the calls made. */
export function fakeServer(routes: Record<string, Answer>): { method: string; path: string; body: any }[] {
  const calls: { method: string; path: string; body: any }[] = [];
  globalThis.fetch = vi.fn(async (path: string, init: RequestInit = {}) => {
    const method = init.method ?? "GET";
    const key = `${method} ${path.split("?")[0]}`;
    calls.push({ method, path, body: init.body ? JSON.parse(String(init.body)) : undefined });
    let r = routes[key];
    if (typeof r === "function") r = r(init);
    const [status, body] = r ?? [404, { error: { code: "not_found", message: `no ${key}` } }];
    return new Response(body === undefined || status === 204 ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  }) as any;
  return calls;
}

let root: ReturnType<typeof createRoot> | null = null;

export function mount(node: ReactNode): void {
  const div = document.createElement("div");
  document.body.appendChild(div);
  root = createRoot(div);
  act(() => root!.render(node));
}

export function unmount(): void {
  act(() => root?.unmount());
  root = null;
  document.body.innerHTML = "";
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await act(async () => new Promise((r) => setTimeout(r, 0)));
}

export const q = <T extends Element = HTMLElement>(testId: string): T | null => document.querySelector<T>(`[data-testid="${testId}"]`);

export function type(testId: string, value: string): void {
  const el = q<HTMLInputElement | HTMLSelectElement>(testId)!;
  const proto = el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
  act(() => {
    Object.getOwnPropertyDescriptor(proto, "value")!.set!.call(el, value);
    el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? "change" : "input", { bubbles: true }));
  });
}

export async function click(testId: string): Promise<void> {
  const el = q(testId);
  if (!el) throw new Error(`no [data-testid=${testId}]`);
  await act(async () => el.click());
  await settle();
}
