/** The Knowledge page: the user's knowledge bases (what `retrieval` nodes search). Create a base,
 * upload documents to it (.txt, .md, .html, .pdf, .docx), see their chunk counts, delete them, and
 * try a search with the same settings a retrieval node has. */
import { useCallback, useEffect, useState } from "react";
import { errorText, fmtTime } from "../ui/format";
import { knowledgeApi, type KnowledgeBase, type KnowledgeDocument, type SearchHit } from "./knowledgeApi";
import "./knowledge.css";

const ACCEPT = ".txt,.md,.markdown,.html,.htm,.pdf,.docx";

export default function KnowledgePage() {
  const [bases, setBases] = useState<KnowledgeBase[] | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const list = await knowledgeApi.list();
      setBases(list);
      setError(null);
      setSelected((s) => (s && list.some((b) => b.id === s) ? s : (list[0]?.id ?? null)));
    } catch (e) {
      setError(errorText(e));
      setBases([]);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const current = bases?.find((b) => b.id === selected) ?? null;
  return (
    <div className="page knowledge-page" data-testid="knowledge-page">
      <div className="page-head">
        <h1>Knowledge</h1>
      </div>
      <p className="muted">
        Knowledge bases hold documents cut into chunks. A Retrieval node (or an agent's retrieval tool) searches them by name or id and hands the best chunks to the
        next step.
      </p>
      {error && (
        <p className="error" role="alert" data-testid="knowledge-error">
          {error}
        </p>
      )}
      <div className="kb-layout">
        <section className="kb-list" aria-label="Knowledge bases">
          {bases === null ? (
            <p className="loading">Loading…</p>
          ) : bases.length === 0 ? (
            <p className="muted" data-testid="kb-empty">
              No knowledge bases yet.
            </p>
          ) : (
            <ul data-testid="kb-list">
              {bases.map((b) => (
                <li key={b.id}>
                  <button
                    type="button"
                    className={`kb-item${b.id === selected ? " active" : ""}`}
                    aria-pressed={b.id === selected}
                    data-testid={`kb-${b.name}`}
                    onClick={() => setSelected(b.id)}
                  >
                    <span className="kb-name">{b.name}</span>
                    <span className="muted kb-counts">
                      {b.documents} docs · {b.chunks} chunks · {b.search === "hybrid" ? "hybrid" : "full-text"}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          )}
          <CreateBase
            onCreated={(kb) => {
              setSelected(kb.id);
              void load();
            }}
          />
        </section>
        {current && <BaseDetail key={current.id} kb={current} onChanged={load} />}
      </div>
    </div>
  );
}

function CreateBase({ onCreated }: { onCreated: (kb: KnowledgeBase) => void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [url, setUrl] = useState("");
  const [model, setModel] = useState("");
  const [keyVar, setKeyVar] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const kb = await knowledgeApi.create({
        name: name.trim(),
        description,
        embedding_url: url.trim() || null,
        embedding_model: model.trim() || null,
        embedding_key_variable: keyVar.trim() || null,
      });
      setName("");
      setDescription("");
      setError(null);
      onCreated(kb);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="kb-create" onSubmit={(e) => void submit(e)} data-testid="kb-create">
      <h2>New knowledge base</h2>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={255} data-testid="kb-name" />
      </label>
      <label>
        Description
        <input value={description} onChange={(e) => setDescription(e.target.value)} data-testid="kb-description" />
      </label>
      <details>
        <summary>Embeddings (optional)</summary>
        <p className="muted">Without them, search matches words (full-text). With an OpenAI-compatible endpoint and model, search also matches meaning.</p>
        <label>
          Endpoint URL
          <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="http://127.0.0.1:8080/v1" data-testid="kb-embedding-url" />
        </label>
        <label>
          Model
          <input value={model} onChange={(e) => setModel(e.target.value)} data-testid="kb-embedding-model" />
        </label>
        <label>
          API key variable (its name)
          <input value={keyVar} onChange={(e) => setKeyVar(e.target.value)} placeholder="OPENAI_API_KEY" data-testid="kb-embedding-key" />
        </label>
      </details>
      {error && (
        <p className="error" role="alert" data-testid="kb-create-error">
          {error}
        </p>
      )}
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !name.trim()} data-testid="kb-create-submit">
          Create
        </button>
      </div>
    </form>
  );
}

function BaseDetail({ kb, onChanged }: { kb: KnowledgeBase; onChanged: () => Promise<void> }) {
  const [docs, setDocs] = useState<KnowledgeDocument[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [uploading, setUploading] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);

  const loadDocs = useCallback(async () => {
    try {
      setDocs(await knowledgeApi.documents(kb.id));
    } catch (e) {
      setError(errorText(e));
      setDocs([]);
    }
  }, [kb.id]);
  useEffect(() => {
    void loadDocs();
  }, [loadDocs]);

  const uploadFiles = async (files: FileList | null) => {
    if (!files || files.length === 0) return;
    const failed: string[] = [];
    for (const file of Array.from(files)) {
      setUploading(file.name);
      try {
        await knowledgeApi.upload(kb.id, file);
      } catch (e) {
        failed.push(errorText(e));
      }
    }
    setUploading(null);
    setError(failed.length ? failed.join("\n") : null);
    await loadDocs();
    await onChanged();
  };

  const removeDoc = async (doc: KnowledgeDocument) => {
    try {
      await knowledgeApi.removeDocument(kb.id, doc.id);
      await loadDocs();
      await onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const removeBase = async () => {
    try {
      await knowledgeApi.remove(kb.id);
      await onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };

  return (
    <section className="kb-detail" aria-label={`Knowledge base ${kb.name}`} data-testid="kb-detail">
      <div className="page-head">
        <h2>{kb.name}</h2>
        <div className="buttons">
          {confirmDelete ? (
            <>
              <button type="button" className="danger" data-testid="kb-delete-confirm" onClick={() => void removeBase()}>
                Delete {kb.name} and its documents
              </button>
              <button type="button" onClick={() => setConfirmDelete(false)}>
                Keep it
              </button>
            </>
          ) : (
            <button type="button" className="danger" data-testid="kb-delete" onClick={() => setConfirmDelete(true)}>
              Delete
            </button>
          )}
        </div>
      </div>
      <p className="muted">
        {kb.description && <>{kb.description} · </>}
        id <code data-testid="kb-id">{kb.id}</code> · {kb.search === "hybrid" ? `hybrid search (${kb.embedding_model})` : "full-text search"} · chunks of about{" "}
        {kb.chunk_chars} characters
      </p>
      <label className="kb-upload">
        <span className="button-like">Upload documents</span>
        <input type="file" multiple accept={ACCEPT} data-testid="kb-upload" disabled={uploading !== null} onChange={(e) => void uploadFiles(e.target.files).then(() => (e.target.value = ""))} />
        <span className="muted">.txt, .md, .html, .pdf or .docx, up to 10 MiB each</span>
      </label>
      {uploading && (
        <p className="muted" aria-live="polite" data-testid="kb-uploading">
          Reading {uploading}…
        </p>
      )}
      {error && (
        <p className="error kb-errors" role="alert" data-testid="kb-detail-error">
          {error}
        </p>
      )}
      {docs === null ? (
        <p className="loading">Loading…</p>
      ) : docs.length === 0 ? (
        <p className="muted" data-testid="kb-docs-empty">
          No documents yet.
        </p>
      ) : (
        <table className="flow-table" data-testid="kb-docs">
          <thead>
            <tr>
              <th scope="col">Document</th>
              <th scope="col">Type</th>
              <th scope="col">Chunks</th>
              <th scope="col">Uploaded</th>
              <th scope="col" aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {docs.map((d) => (
              <tr key={d.id} data-testid={`kb-doc-${d.name}`}>
                <td>{d.name}</td>
                <td>{d.kind}</td>
                <td data-testid="kb-doc-chunks">{d.chunk_count}</td>
                <td>{fmtTime(d.created_at)}</td>
                <td>
                  <button type="button" className="small danger" aria-label={`Delete ${d.name}`} onClick={() => void removeDoc(d)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <TrySearch kb={kb} />
    </section>
  );
}

function TrySearch({ kb }: { kb: KnowledgeBase }) {
  const [query, setQuery] = useState("");
  const [topN, setTopN] = useState(5);
  const [threshold, setThreshold] = useState(0.2);
  const [weight, setWeight] = useState(0.5);
  const [hits, setHits] = useState<SearchHit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const search = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const found = await knowledgeApi.search(kb.id, { query, top_n: topN, similarity_threshold: threshold, keywords_similarity_weight: weight });
      setHits(found.chunks);
      setError(null);
    } catch (err) {
      setError(errorText(err));
      setHits(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="kb-search" onSubmit={(e) => void search(e)} data-testid="kb-search">
      <h3>Try a search</h3>
      <div className="kb-search-row">
        <input aria-label="Search query" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="A question…" data-testid="kb-query" />
        <button type="submit" className="primary" disabled={busy || !query.trim()} data-testid="kb-search-submit">
          Search
        </button>
      </div>
      <div className="kb-search-settings">
        <label>
          Top N
          <input type="number" min={1} max={100} value={topN} onChange={(e) => setTopN(Number(e.target.value) || 1)} />
        </label>
        <label>
          Similarity threshold
          <input type="number" min={0} max={1} step={0.05} value={threshold} onChange={(e) => setThreshold(Number(e.target.value))} />
        </label>
        <label>
          Keyword weight
          <input type="number" min={0} max={1} step={0.05} value={weight} onChange={(e) => setWeight(Number(e.target.value))} />
        </label>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {hits !== null &&
        (hits.length === 0 ? (
          <p className="muted" data-testid="kb-no-hits">
            Nothing over the threshold.
          </p>
        ) : (
          <ol className="kb-hits" data-testid="kb-hits">
            {hits.map((h) => (
              <li key={h.chunk_id} data-testid="kb-hit">
                <div className="kb-hit-head">
                  <strong>{h.document_name}</strong>
                  <span className="muted">score {h.similarity.toFixed(2)}</span>
                </div>
                <p className="kb-hit-text">{h.content}</p>
              </li>
            ))}
          </ol>
        ))}
    </form>
  );
}
