/**
 * The HTTP client. The browser signs in with a session cookie (httpOnly, SameSite=strict, set by
 * `POST /auth/login` or the sign-in link `plait serve` prints), which same-origin fetches carry;
 * JavaScript never sees it. An API key kept in localStorage ("use an API key instead" on the login
 * page) is sent as x-api-key when present. Any 401 tells the listeners (the shell shows the login
 * page), except on the human-task routes, which need no sign-in.
 */
import type {
  ApiKey,
  FlowDocument,
  FlowOut,
  FlowSummary,
  HumanTask,
  Me,
  NewApiKey,
  NodeType,
  Problem,
  RunDetail,
  Role,
  RunSummary,
  Scope,
  Share,
  ToolsListing,
  Trigger,
  User,
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
  const k = key.trim();
  if (k) localStorage.setItem(KEY_STORAGE, k);
  else localStorage.removeItem(KEY_STORAGE);
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

/** Called whenever the server answers 401, so the shell can show the login page. */
export function onUnauthorized(fn: Listener): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

/** Tell the listeners that a request made without `request` (a stream over fetch) got a 401. */
export function notifyUnauthorized(): void {
  unauthorizedListeners.forEach((fn) => fn());
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
    credentials: "same-origin",
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
    if (res.status === 401 && (opts.auth ?? true)) notifyUnauthorized();
    throw new ApiError(res.status, code, message, details);
  }
  if (res.status === 204) return undefined as T;
  if (opts.text) return (await res.text()) as T;
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

export interface KeyRequest {
  name: string;
  scopes: Scope[];
}

export interface NewUser {
  email: string;
  name: string;
  role: Role;
  password?: string;
}

export interface UserPatch {
  name?: string;
  role?: Role;
  disabled?: boolean;
  password?: string;
}

/** Sign-in, keys, users and sharing. */
export const authApi = {
  me: () => request<Me>("GET", "/api/v1/me"),
  /** A 401 here is a wrong password, not a lost session: no listener is told. */
  login: (email: string, password: string) => request<{ user: User }>("POST", "/api/v1/auth/login", { email, password }, { auth: false }),
  logout: () => request<void>("POST", "/api/v1/auth/logout", undefined, { auth: false }),
  listKeys: () => request<ApiKey[]>("GET", "/api/v1/api-keys"),
  createKey: (body: KeyRequest) => request<NewApiKey>("POST", "/api/v1/api-keys", body),
  revokeKey: (id: string) => request<void>("DELETE", `/api/v1/api-keys/${enc(id)}`),
  listUsers: () => request<User[]>("GET", "/api/v1/users"),
  createUser: (body: NewUser) => request<User>("POST", "/api/v1/users", body),
  updateUser: (id: string, patch: UserPatch) => request<User>("PATCH", `/api/v1/users/${enc(id)}`, patch),
  createUserKey: (userId: string, body: KeyRequest) => request<NewApiKey>("POST", `/api/v1/users/${enc(userId)}/api-keys`, body),
  shares: (flowId: string) => request<Share[]>("GET", `/api/v1/flows/${enc(flowId)}/shares`),
  share: (flowId: string, user: string, role: Share["role"]) => request<Share>("PUT", `/api/v1/flows/${enc(flowId)}/shares/${enc(user)}`, { role }),
  unshare: (flowId: string, userId: string) => request<void>("DELETE", `/api/v1/flows/${enc(flowId)}/shares/${enc(userId)}`),
};

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

/** A flow's schedules and webhooks. */
export const triggerApi = {
  list: (flowId: string) => request<Trigger[]>("GET", `/api/v1/flows/${enc(flowId)}/triggers`),
  create: (flowId: string, kind: Trigger["kind"], config: Record<string, any>) =>
    request<Trigger>("POST", `/api/v1/flows/${enc(flowId)}/triggers`, { kind, config }),
  update: (flowId: string, id: string, patch: { enabled?: boolean; config?: Record<string, any> }) =>
    request<Trigger>("PATCH", `/api/v1/flows/${enc(flowId)}/triggers/${enc(id)}`, patch),
  remove: (flowId: string, id: string) => request<void>("DELETE", `/api/v1/flows/${enc(flowId)}/triggers/${enc(id)}`),
};
