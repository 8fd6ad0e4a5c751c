/** The server calls of the settings pages: the user's variables (`/api/v1/variables`: keys are
 * stored as secret variables, base URLs and default models as plain ones) and "Test connection"
 * (`POST /api/v1/llm/test`). */
import { request } from "../api";

export interface Variable {
  name: string;
  /** "********" for a secret: secrets are write-only. */
  value: unknown;
  is_secret: boolean;
  description: string;
  scope: "user" | "global";
  updated_at: number;
}

export interface TestResult {
  ok: boolean;
  provider: string;
  base_url: string | null;
  models: string[];
  reason: string | null;
  error: string | null;
  hint: string | null;
}

const enc = encodeURIComponent;

export const settingsApi = {
  variables: () => request<Variable[]>("GET", "/api/v1/variables"),
  setVariable: (name: string, value: unknown, isSecret: boolean, description?: string) =>
    request<Variable>("PUT", `/api/v1/variables/${enc(name)}`, { value, is_secret: isSecret, description: description || null }),
  deleteVariable: (name: string) => request<void>("DELETE", `/api/v1/variables/${enc(name)}`, undefined, { text: true }),
  testConnection: (provider: string, baseUrl?: string, apiKey?: string) =>
    request<TestResult>("POST", "/api/v1/llm/test", { provider, base_url: baseUrl || null, api_key: apiKey || null }),
};
