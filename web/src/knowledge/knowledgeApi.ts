/** The knowledge base API (`/api/v1/knowledge`): bases, documents (uploaded as the request body),
 * chunks and a trial search. */
import { ApiError, authHeaders, request } from "../api";

export interface KnowledgeBase {
  id: string;
  name: string;
  description: string;
  embedding_url: string | null;
  embedding_model: string | null;
  embedding_key_variable: string | null;
  chunk_chars: number;
  overlap_chars: number;
  documents: number;
  chunks: number;
  search: "full_text" | "hybrid";
  created_at: number;
  updated_at: number;
}

export interface NewKnowledgeBase {
  name: string;
  description?: string;
  embedding_url?: string | null;
  embedding_model?: string | null;
  embedding_key_variable?: string | null;
}

export interface KnowledgeDocument {
  id: string;
  kb_id: string;
  name: string;
  kind: string;
  size: number;
  chunk_count: number;
  created_at: number;
}

export interface SearchHit {
  chunk_id: number;
  content: string;
  document_name: string;
  similarity: number;
  term_similarity: number;
  vector_similarity: number | null;
}

export interface SearchOptions {
  query: string;
  top_n: number;
  similarity_threshold: number;
  keywords_similarity_weight: number;
}

const enc = encodeURIComponent;
const base = "/api/v1/knowledge";

async function upload(kbId: string, file: File): Promise<KnowledgeDocument> {
  const res = await fetch(`${base}/${enc(kbId)}/documents?filename=${enc(file.name)}`, {
    method: "POST",
    headers: { ...authHeaders(), "content-type": "application/octet-stream" },
    credentials: "same-origin",
    body: file,
  });
  if (!res.ok) {
    let message = `${file.name}: HTTP ${res.status}`;
    let code = "http_error";
    try {
      const err = (await res.json())?.error;
      if (err?.message) message = `${file.name}: ${err.message}`;
      if (err?.code) code = err.code;
    } catch {
      /* not JSON */
    }
    // a lost session: asking who we are through `request` tells the shell (it shows the sign-in page)
    if (res.status === 401) void request("GET", "/api/v1/me").catch(() => undefined);
    throw new ApiError(res.status, code, message);
  }
  return (await res.json()) as KnowledgeDocument;
}

export const knowledgeApi = {
  list: () => request<KnowledgeBase[]>("GET", base),
  create: (body: NewKnowledgeBase) => request<KnowledgeBase>("POST", base, body),
  get: (id: string) => request<KnowledgeBase>("GET", `${base}/${enc(id)}`),
  remove: (id: string) => request<void>("DELETE", `${base}/${enc(id)}`),
  documents: (id: string) => request<KnowledgeDocument[]>("GET", `${base}/${enc(id)}/documents`),
  removeDocument: (id: string, docId: string) => request<void>("DELETE", `${base}/${enc(id)}/documents/${enc(docId)}`),
  upload,
  search: (id: string, body: SearchOptions) => request<{ content: string; chunks: SearchHit[] }>("POST", `${base}/${enc(id)}/search`, body),
};
