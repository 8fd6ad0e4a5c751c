/**
 * Provider and model of a model-using node (llm, agent, categorize...) as dropdowns: the
 * configured providers first and "scripted (no model)" as an explicit choice; the chosen
 * provider's models, plus "other…" for a name the server did not list. Choosing a provider that
 * does not replay scripts removes the node's `script` (spec/model_settings.py rejects it).
 */
import { useState } from "react";
import { paths } from "../../router";
import { withProvider } from "../modelConfig";
import { useProviderChoices } from "./providers";

interface Props {
  /** ids are `${idBase}provider` and `${idBase}model` */
  idBase: string;
  value: Record<string, any>;
  defaultProvider?: string;
  onChange: (v: Record<string, any>) => void;
  providerError?: string[];
  modelError?: string[];
}

const OTHER = "\u0000other";

export function ModelFields({ idBase, value, defaultProvider, onChange, providerError, modelError }: Props) {
  const { providers, loading } = useProviderChoices();
  const provider: string = value.provider ?? defaultProvider ?? "";
  const model: string = value.model ?? "";
  const info = providers.find((p) => p.name === provider);
  const models = info?.models ?? [];
  const [otherModel, setOtherModel] = useState(() => Boolean(model) && !models.includes(model));
  const freeModel = otherModel || models.length === 0 || (Boolean(model) && !models.includes(model));
  const pid = `${idBase}provider`;
  const mid = `${idBase}model`;
  return (
    <div className="model-fields">
      <div className={`field${providerError?.length ? " invalid" : ""}`}>
        <label htmlFor={pid} id={`${pid}-label`}>
          Provider
        </label>
        <select
          id={pid}
          data-testid={pid}
          value={provider}
          disabled={loading}
          aria-invalid={providerError?.length ? true : undefined}
          onChange={(e) => {
            const next = providers.find((p) => p.name === e.target.value);
            setOtherModel(false);
            const cfg = withProvider(value, e.target.value, next?.default_model ?? next?.models[0]);
            // a model of another provider would not exist on this one
            if (value.model && next && next.models.length && !next.models.includes(value.model)) cfg.model = next.default_model ?? next.models[0];
            onChange(cfg);
          }}
        >
          {!info && provider && <option value={provider}>{provider === "auto" ? "auto (a configured model, else the script)" : `${provider} (not a known provider)`}</option>}
          {providers.map((p) => (
            <option key={p.name} value={p.name}>
              {p.label && p.label !== p.name ? (p.name === "scripted" ? p.label : `${p.label} (${p.name})`) : p.name}
              {p.name !== "scripted" && !p.configured ? " — not set up" : ""}
            </option>
          ))}
        </select>
        {providerError?.map((m) => (
          <div key={m} className="field-error" role="alert" data-testid={`${pid}-error`}>
            {m}
          </div>
        ))}
        {info && info.name !== "scripted" && !info.configured && (
          <small className="help warn" data-testid={`${pid}-unconfigured`}>
            This provider is not set up yet: add its endpoint or key on the{" "}
            <a href={paths.models()} target="_blank" rel="noreferrer" data-testid={`${pid}-setup`}>
              Models settings page
            </a>
            .
          </small>
        )}
        {provider === "scripted" && <small className="help">Replays the steps below instead of calling a model (for tests and examples).</small>}
      </div>
      {provider !== "scripted" && (
        <div className={`field${modelError?.length ? " invalid" : ""}`}>
          <label htmlFor={mid} id={`${mid}-label`}>
            Model
          </label>
          {models.length > 0 && (
            <select
              id={freeModel ? undefined : mid}
              data-testid={`${mid}-select`}
              aria-label="Model"
              value={freeModel ? OTHER : model}
              onChange={(e) => {
                if (e.target.value === OTHER) {
                  setOtherModel(true);
                  return;
                }
                setOtherModel(false);
                onChange({ ...value, model: e.target.value });
              }}
            >
              {!model && <option value="">— choose a model —</option>}
              {models.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
              <option value={OTHER}>other…</option>
            </select>
          )}
          {freeModel && (
            <input
              id={mid}
              data-testid={mid}
              type="text"
              autoComplete="off"
              placeholder="model name, e.g. gpt-4o-mini"
              value={model}
              onChange={(e) => {
                const next = { ...value };
                if (e.target.value) next.model = e.target.value;
                else delete next.model;
                onChange(next);
              }}
            />
          )}
          {modelError?.map((m) => (
            <div key={m} className="field-error" role="alert" data-testid={`${mid}-error`}>
              {m}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
