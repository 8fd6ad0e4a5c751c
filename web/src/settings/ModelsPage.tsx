/**
 * Settings → Models: plug in a real model. Each provider plait knows (an OpenAI-compatible server
 * such as OpenAI, llama.cpp, vLLM or Ollama; Anthropic; Groq) is configured by the user's variables:
 * the key as a secret (never shown again), the base URL and the default model as plain values.
 * "Test connection" asks the server for the endpoint's model list before anything is saved. The
 * scripted provider is listed as what it is: replies from a node's script, no model.
 */
import { useEffect, useState } from "react";
import { errorText } from "../ui/format";
import { emptyForm, endpointWrites, removalNames, type EndpointForm } from "./endpoint";
import { useProviders, type ProviderInfo } from "./providers";
import { SettingsNav } from "./SettingsNav";
import { settingsApi, type TestResult } from "./settingsApi";
import "./settings.css";

export default function ModelsPage() {
  const { providers, loading, error, reload } = useProviders();
  const [editing, setEditing] = useState<string | null>(null);
  const [userVars, setUserVars] = useState<string[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  const loadVars = () =>
    settingsApi.variables().then(
      (vs) => setUserVars(vs.filter((v) => v.scope === "user").map((v) => v.name)),
      () => setUserVars([]),
    );
  useEffect(() => {
    void loadVars();
  }, []);

  const real = providers.filter((p) => p.kind !== "scripted");
  const scripted = providers.find((p) => p.kind === "scripted" || p.name === "scripted");

  const remove = async (p: ProviderInfo) => {
    setFailure(null);
    try {
      for (const name of removalNames(p, userVars)) await settingsApi.deleteVariable(name);
      setNotice(`Removed your ${p.label} settings.`);
      await loadVars();
      reload();
    } catch (e) {
      setFailure(errorText(e));
    }
  };

  return (
    <div className="page settings-page" data-testid="models-page">
      <SettingsNav current="models" />
      <div className="page-head">
        <h1>Models</h1>
        <div className="buttons">
          <button type="button" className="primary" data-testid="add-endpoint" onClick={() => setEditing(editing === "new" ? null : "new")}>
            Add endpoint
          </button>
        </div>
      </div>
      <p className="muted">
        Connect the model providers your flows call. Keys are stored as your secret variables (write-only); a local OpenAI-compatible server (llama.cpp, vLLM, Ollama)
        needs only its base URL. Model nodes then offer these providers and their models.
      </p>
      {notice && (
        <p className="settings-notice" role="status" data-testid="models-notice">
          {notice}
        </p>
      )}
      {(failure || error) && (
        <p className="error" role="alert" data-testid="models-error">
          {failure ?? error}
        </p>
      )}
      {editing === "new" && (
        <EndpointEditor
          providers={real}
          userVars={userVars}
          onCancel={() => setEditing(null)}
          onSaved={async (p) => {
            setEditing(null);
            setNotice(`Saved ${p.label}.`);
            await loadVars();
            reload();
          }}
        />
      )}
      {loading && providers.length === 0 ? (
        <p className="loading">Loading…</p>
      ) : (
        <div className="provider-list">
          {real.map((p) => (
            <section key={p.name} className={`provider-card${p.configured ? " configured" : ""}`} data-testid={`provider-card-${p.name}`}>
              <div className="provider-head">
                <h2>
                  {p.label} <code className="muted">{p.name}</code>
                </h2>
                <span className={`provider-status ${p.configured ? "ok" : "off"}`} data-testid={`provider-status-${p.name}`}>
                  {p.configured ? "configured" : "not configured"}
                </span>
              </div>
              <dl className="provider-facts">
                <dt>Base URL</dt>
                <dd>{p.base_url ? <code>{p.base_url}</code> : <span className="muted">the provider's default</span>}</dd>
                <dt>API key</dt>
                <dd>{p.key_set ? "•••••••• (set)" : <span className="muted">{p.kind === "anthropic" ? "not set" : "not set (a local server needs none)"}</span>}</dd>
                {p.configured && (
                  <>
                    <dt>Default model</dt>
                    <dd>{p.default_model ? <code>{p.default_model}</code> : <span className="muted">none</span>}</dd>
                    <dt>Models</dt>
                    <dd data-testid={`provider-models-${p.name}`}>
                      {p.models_source === "endpoint" ? `${p.models.length} listed by the server` : "plait's known models"}
                      {p.models_error && <span className="error"> ({p.models_error})</span>}
                    </dd>
                  </>
                )}
              </dl>
              <div className="buttons">
                <button type="button" className="small" data-testid={`edit-${p.name}`} onClick={() => setEditing(editing === p.name ? null : p.name)}>
                  {p.configured ? "Edit" : "Set up"}
                </button>
                {removalNames(p, userVars).length > 0 && (
                  <button type="button" className="small danger" data-testid={`remove-${p.name}`} onClick={() => void remove(p)}>
                    Remove
                  </button>
                )}
              </div>
              {editing === p.name && (
                <EndpointEditor
                  providers={real}
                  fixed={p}
                  userVars={userVars}
                  onCancel={() => setEditing(null)}
                  onSaved={async (saved) => {
                    setEditing(null);
                    setNotice(`Saved ${saved.label}.`);
                    await loadVars();
                    reload();
                  }}
                />
              )}
            </section>
          ))}
          {scripted && (
            <section className="provider-card configured" data-testid="provider-card-scripted">
              <div className="provider-head">
                <h2>
                  {scripted.label} <code className="muted">scripted</code>
                </h2>
                <span className="provider-status ok">always available</span>
              </div>
              <p className="muted">Replays the replies written in a node's script: for tests and demos. It calls no model; choose it explicitly in a node.</p>
            </section>
          )}
        </div>
      )}
    </div>
  );
}

interface EditorProps {
  providers: ProviderInfo[];
  fixed?: ProviderInfo;
  userVars: string[];
  onCancel(): void;
  onSaved(p: ProviderInfo): void | Promise<void>;
}

function EndpointEditor({ providers, fixed, userVars, onCancel, onSaved }: EditorProps) {
  const [form, setForm] = useState<EndpointForm>(() => emptyForm(fixed ?? providers.find((p) => p.name === "openai")));
  const [test, setTest] = useState<TestResult | null>(null);
  const [busy, setBusy] = useState<"test" | "save" | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const info = providers.find((p) => p.name === form.provider) ?? fixed;
  const set = (patch: Partial<EndpointForm>) => setForm((f) => ({ ...f, ...patch }));
  const id = fixed ? `endpoint-${fixed.name}` : "endpoint";
  const listed = test?.ok ? test.models : info?.models_source === "endpoint" ? info.models : [];

  const runTest = async () => {
    setBusy("test");
    setProblem(null);
    try {
      setTest(await settingsApi.testConnection(form.provider, form.baseUrl.trim(), form.apiKey.trim()));
    } catch (e) {
      setTest(null);
      setProblem(errorText(e));
    } finally {
      setBusy(null);
    }
  };

  const save = async () => {
    if (!info) return;
    setBusy("save");
    setProblem(null);
    try {
      for (const w of endpointWrites(form, info, userVars)) {
        if (w.op === "set") await settingsApi.setVariable(w.name, w.value, w.secret, w.secret ? `${info.label} API key` : undefined);
        else await settingsApi.deleteVariable(w.name);
      }
      await onSaved(info);
    } catch (e) {
      setProblem(errorText(e));
    } finally {
      setBusy(null);
    }
  };

  return (
    <form
      className="endpoint-editor"
      data-testid="endpoint-editor"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      {!fixed && (
        <div className="field">
          <label htmlFor={`${id}-provider`}>Provider</label>
          <select
            id={`${id}-provider`}
            data-testid="endpoint-provider"
            value={form.provider}
            onChange={(e) => {
              const next = providers.find((p) => p.name === e.target.value);
              setForm(emptyForm(next));
              setTest(null);
            }}
          >
            {providers.map((p) => (
              <option key={p.name} value={p.name}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
      )}
      <div className="field">
        <label htmlFor={`${id}-base`}>Base URL{info?.kind === "anthropic" ? " (optional)" : ""}</label>
        <input
          id={`${id}-base`}
          data-testid="endpoint-base-url"
          type="url"
          placeholder={info?.default_base_url ?? (info?.kind === "anthropic" ? "https://api.anthropic.com" : "https://api.openai.com/v1, or http://127.0.0.1:8080/v1")}
          value={form.baseUrl}
          onChange={(e) => set({ baseUrl: e.target.value })}
        />
        <span className="help">An OpenAI-compatible server's base URL usually ends in /v1. Empty: the provider's own.</span>
      </div>
      <div className="field">
        <label htmlFor={`${id}-key`}>API key{info?.kind !== "anthropic" ? " (optional)" : ""}</label>
        <input
          id={`${id}-key`}
          data-testid="endpoint-key"
          type="password"
          autoComplete="off"
          placeholder={info?.key_set ? "•••••••• stored: type to replace" : ""}
          value={form.apiKey}
          onChange={(e) => set({ apiKey: e.target.value })}
        />
        <span className="help">Stored as your secret variable {info?.key_variable ?? ""}: it is never shown again.</span>
      </div>
      <div className="field">
        <label htmlFor={`${id}-model`}>Default model (optional)</label>
        <input id={`${id}-model`} data-testid="endpoint-model" list={`${id}-models`} value={form.model} onChange={(e) => set({ model: e.target.value })} />
        <datalist id={`${id}-models`}>
          {listed.map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
      </div>
      <div className="buttons">
        <button type="button" data-testid="test-connection" disabled={busy !== null} onClick={() => void runTest()}>
          {busy === "test" ? "Testing…" : "Test connection"}
        </button>
        <button type="submit" className="primary" data-testid="save-endpoint" disabled={busy !== null}>
          {busy === "save" ? "Saving…" : "Save"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {problem && (
        <p className="error" role="alert" data-testid="endpoint-problem">
          {problem}
        </p>
      )}
      {test && (
        <div className={`test-result ${test.ok ? "ok" : "failed"}`} data-testid="test-result" data-ok={test.ok ? "true" : "false"} role="status">
          {test.ok ? (
            <>
              <p>
                Connected{test.base_url ? <> to <code>{test.base_url}</code></> : null}: {test.models.length} model{test.models.length === 1 ? "" : "s"}.
                {test.models.length > 0 && " Pick the default:"}
              </p>
              <ul className="test-models" data-testid="test-models">
                {test.models.map((m) => (
                  <li key={m}>
                    <button type="button" className={`link${form.model === m ? " chosen" : ""}`} onClick={() => set({ model: m })}>
                      {m}
                    </button>
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p data-testid="test-error">
              {test.error}
              {test.hint && <span className="muted"> ({test.hint})</span>}
            </p>
          )}
        </div>
      )}
    </form>
  );
}
