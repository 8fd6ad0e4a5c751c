/** The HTTP client: every call carries the API key (x-api-key) kept in localStorage. */
import type {
  FlowDocument,
  FlowOut,
  FlowSummary,
  HumanTask,
  NodeType,
  Problem,
  RunDetail,
  RunSummary,
  ToolsListing,
  VersionOut,
} from "./types";

const KEY_STORAGE = "plait.apiKey";

export function getApiKey(): string {
  try {
    return localStorage.getItem(KEY_STORAGE) ?? "";
  } catch {
    return "";
  }
}

export function setApiKey(key: string): void {
  localStorage.setItem(KEY_STORAGE, key.trim());
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: any = null,
  ) {
    super(message);
  }

  /** Problems listed by a 422 (`details.problems`). */
  get problems(): Problem[] {
    const p = this.details?.problems;
    return Array.isArray(p) ? p : [];
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Called whenever the server answers 401, so the shell can ask for a key. */
export function onUnauthorized(fn: Listener): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export function authHeaders(auth = true): Record<string, string> {
  const key = auth ? getApiKey() : "";
  return key ? { "x-api-key": key } : {};
}

export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  opts: { auth?: boolean; text?: boolean } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders(opts.auth ?? true) };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    let code = "http_error";
    let message = `${method} ${path}: HTTP ${res.status}`;
    let details: any = null;
    try {
      const err = (await res.json())?.error;
      if (err) {
        code = err.code ?? code;
        message = err.message ?? message;
        details = err.details ?? null;
      }
    } catch {
      /* not JSON */
    }
    if (res.status === 401 && (opts.auth ?? true)) unauthorizedListeners.forEach((fn) => fn());
    throw new ApiError(res.status, code, message, details);
  }
  if (res.status === 204) return undefined as T;
  if (opts.text) return (await res.text()) as T;
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

export const api = {
  nodeTypes: async (): Promise<NodeType[]> => {
    const out = await request<any>("GET", "/api/v1/node-types");
    return Array.isArray(out) ? out : (out?.node_types ?? out?.items ?? []);
  },
  tools: () => request<ToolsListing>("GET", "/api/v1/tools"),
  listFlows: () => request<FlowSummary[]>("GET", "/api/v1/flows?limit=500"),
  getFlow: (id: string) => request<FlowOut>("GET", `/api/v1/flows/${enc(id)}`),
  createFlow: (document: FlowDocument, id?: string, name?: string) =>
    request<FlowOut>("POST", "/api/v1/flows", { document, id, name }),
  updateFlow: (id: string, patch: { document?: FlowDocument; name?: string; description?: string }) =>
    request<FlowOut>("PUT", `/api/v1/flows/${enc(id)}`, patch),
  deleteFlow: (id: string) => request<void>("DELETE", `/api/v1/flows/${enc(id)}`),
  importFlow: (content: string, overwrite = false) =>
    request<FlowOut>("POST", "/api/v1/flows/import", { content, overwrite }),
  exportFlow: (id: string, format: "json" | "yaml" = "json", version = "draft") =>
    request<string>("GET", `/api/v1/flows/${enc(id)}/export?version=${version}&format=${format}`, undefined, {
      text: true,
    }),
  validate: (document: FlowDocument) =>
    request<{ valid?: boolean; problems: Problem[] }>("POST", "/api/v1/flows/validate", { document }),
  publish: (id: string, note: string) =>
    request<VersionOut>("POST", `/api/v1/flows/${enc(id)}/versions`, { note }),
  versions: (id: string) => request<VersionOut[]>("GET", `/api/v1/flows/${enc(id)}/versions`),
  version: (id: string, n: number) => request<VersionOut>("GET", `/api/v1/flows/${enc(id)}/versions/${n}`),
  startRun: (id: string, inputs: Record<string, any>, version = "draft") =>
    request<{ id: string }>("POST", `/api/v1/flows/${enc(id)}/runs?mode=background&version=${version}`, {
      inputs,
    }),
  listRuns: (flowId: string) => request<RunSummary[]>("GET", `/api/v1/runs?flow_id=${enc(flowId)}&limit=100`),
  getRun: (id: string) => request<RunDetail>("GET", `/api/v1/runs/${enc(id)}`),
  cancelRun: (id: string) => request<RunSummary>("POST", `/api/v1/runs/${enc(id)}/cancel`),
  retryRun: (id: string, fromNode: string) =>
    request<{ id: string }>("POST", `/api/v1/runs/${enc(id)}/retry`, { from_node: fromNode }),
  getTask: (token: string) => request<HumanTask>("GET", `/api/v1/human-tasks/${enc(token)}`, undefined, { auth: false }),
  submitTask: (token: string, action: string | undefined, values: Record<string, any>) =>
    request<HumanTask>("POST", `/api/v1/human-tasks/${enc(token)}/submit`, { action, values }, { auth: false }),
};
