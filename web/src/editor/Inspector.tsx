/** The right-hand inspector: the selected node's id, label and config form (from its JSON
 * Schema), its problems and last run; or the flow's own settings when nothing is selected. */
import { useEffect, useMemo, useState } from "react";
import { SchemaForm, type FieldChoices } from "../forms/SchemaForm";
import { InputsBuilder } from "../forms/InputsBuilder";
import { NodeRunSettings } from "../forms/NodeRunSettings";
import { describeSchema, problemPath } from "../forms/schema";
import type { NodeRunState } from "../state/run";
import type { FlowDocument, JsonSchema, NodeSpec, NodeType, Problem } from "../types";
import { TOOL_FIELDS, toolChoices, useToolListing } from "../tools";
import { fmtDuration, fmtJson, uiHint } from "../ui/format";

export function problemsByPath(problems: Problem[]): { byPath: Record<string, string[]>; general: Problem[] } {
  const byPath: Record<string, string[]> = {};
  const general: Problem[] = [];
  for (const p of problems) {
    const path = problemPath(p.field);
    if (path) (byPath[path] ??= []).push(p.message + (uiHint(p) ? ` (${uiHint(p)})` : ""));
    else general.push(p);
  }
  return { byPath, general };
}

interface NodeInspectorProps {
  node: NodeSpec;
  type: NodeType | undefined;
  problems: Problem[];
  suggestions: string[];
  runNode?: NodeRunState;
  /** what the node received in the shown run (`liveInputs`) */
  runInputs?: Record<string, any>;
  readOnly?: boolean;
  onConfig: (config: Record<string, any>) => void;
  onRename: (id: string) => string | null;
  onLabel: (label: string | undefined) => void;
  onDelete: () => void;
  /** buttons shown under the node's header (e.g. "Run this step") */
  actions?: React.ReactNode;
  /** change the node's own fields (retry, timeout_s, on_error); without it they are not shown */
  onNodePatch?: (patch: Partial<NodeSpec>) => void;
  /** the flow's input schema, edited with the start node (the fields builder) */
  flowInputs?: JsonSchema;
  onFlowInputs?: (schema: JsonSchema | undefined) => void;
}

export function NodeInspector({ node, type, problems, suggestions, runNode, runInputs, readOnly, onConfig, onRename, onLabel, onDelete, actions, onNodePatch, flowInputs, onFlowInputs }: NodeInspectorProps) {
  const fields = useMemo(() => describeSchema(type?.config_schema), [type]);
  const { byPath, general } = useMemo(() => problemsByPath(problems), [problems]);
  const toolFields = TOOL_FIELDS[node.type];
  const listing = useToolListing(Boolean(toolFields) && !readOnly);
  const tools = useMemo(() => {
    if (!listing || !toolFields) return null;
    const all = toolChoices(listing); // `tools` may name a whole server (mcp:<server>)
    const single = toolChoices(listing, false);
    const choices: Record<string, FieldChoices> = {};
    for (const key of toolFields) choices[key] = key === "tools" ? all : single;
    return { choices, problems: all.problems };
  }, [listing, toolFields]);
  const [idText, setIdText] = useState(node.id);
  const [idError, setIdError] = useState<string | null>(null);
  useEffect(() => {
    setIdText(node.id);
    setIdError(null);
  }, [node.id]);
  const commitId = () => {
    if (idText === node.id) return;
    const err = onRename(idText.trim());
    setIdError(err);
    if (err) setIdText(node.id);
  };
  return (
    <div className="inspector" data-testid="inspector" aria-label={`Inspector of ${node.id}`}>
      <div className="inspector-head">
        <h2>{type?.title ?? node.type}</h2>
        {!readOnly && (
          <button type="button" className="small danger" data-testid="delete-node" onClick={onDelete}>
            Delete node
          </button>
        )}
      </div>
      {actions && <div className="inspector-actions">{actions}</div>}
      {type?.description && <p className="muted small-text">{type.description}</p>}
      {!type && (
        <p className="error" role="alert">
          Unknown node type <code>{node.type}</code>.
        </p>
      )}
      <fieldset disabled={readOnly} className="plain">
        <div className="field">
          <label htmlFor="node-id-input">Id (used in references: {`{{${node.id}}}`})</label>
          <input
            id="node-id-input"
            data-testid="node-id-input"
            value={idText}
            aria-invalid={idError ? true : undefined}
            onChange={(e) => setIdText(e.target.value)}
            onBlur={commitId}
            onKeyDown={(e) => e.key === "Enter" && commitId()}
          />
          {idError && (
            <div className="field-error" role="alert">
              {idError}
            </div>
          )}
        </div>
        <div className="field">
          <label htmlFor="node-label-input">Label</label>
          <input id="node-label-input" data-testid="node-label-input" value={node.label ?? ""} onChange={(e) => onLabel(e.target.value || undefined)} />
        </div>
        {general.length > 0 && (
          <ul className="problems" data-testid="node-problems">
            {general.map((p, i) => (
              <li key={i} role="alert">
                {p.field ? <code>{p.field}</code> : null} {p.message}
                {uiHint(p) ? <span className="muted"> — {uiHint(p)}</span> : null}
              </li>
            ))}
          </ul>
        )}
        <h3>Settings</h3>
        <SchemaForm fields={fields} value={node.config ?? {}} onChange={onConfig} problems={byPath} suggestions={suggestions} choices={tools?.choices} />
        {tools && tools.problems.length > 0 && (
          <ul className="muted small-text" data-testid="tool-problems" aria-label="Tools that could not be listed">
            {tools.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        {node.type === "start" && onFlowInputs && (
          <section data-testid="start-inputs">
            <h3>Run inputs</h3>
            <p className="muted small-text">What a run of this flow asks for; read them as {"{{inputs.NAME}}"}.</p>
            <InputsBuilder schema={flowInputs} onChange={onFlowInputs} readOnly={readOnly} idPrefix="start-inputs" />
          </section>
        )}
        {onNodePatch && <NodeRunSettings node={node} onPatch={onNodePatch} />}
      </fieldset>
      {runNode && <RunNodeDetails runNode={runNode} inputs={runInputs} />}
    </div>
  );
}

export function RunNodeDetails({ runNode, inputs }: { runNode: NodeRunState; inputs?: any }) {
  return (
    <section className="run-node" data-testid="node-run-details">
      <h3>Last run</h3>
      <dl>
        <dt>Status</dt>
        <dd data-testid="node-run-status">{runNode.status}</dd>
        {runNode.attempt !== undefined && (
          <>
            <dt>Attempts</dt>
            <dd>{runNode.attempt}</dd>
          </>
        )}
        <dt>Duration</dt>
        <dd>{fmtDuration(runNode.durationMs)}</dd>
        {runNode.branch && (
          <>
            <dt>Branch</dt>
            <dd>{runNode.branch.join(", ")}</dd>
          </>
        )}
      </dl>
      {inputs !== undefined && (
        <>
          <h4>Inputs</h4>
          <pre data-testid="node-run-inputs">{fmtJson(inputs)}</pre>
        </>
      )}
      {runNode.error && (
        <>
          <h4>Error</h4>
          <pre className="error" data-testid="node-run-error">
            {runNode.error}
          </pre>
        </>
      )}
      {runNode.preview && (
        <>
          <h4>Streamed</h4>
          <pre data-testid="node-run-preview">{runNode.preview}</pre>
        </>
      )}
      {runNode.toolCalls.length > 0 && (
        <>
          <h4>Tool calls</h4>
          <ul data-testid="node-run-tools">
            {runNode.toolCalls.map((t, i) => (
              <li key={i}>
                <code>{t.name}</code> <span className="muted">{fmtJson(t.args)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
      <h4>Output</h4>
      <pre data-testid="node-run-output">{fmtJson(runNode.output)}</pre>
    </section>
  );
}

interface FlowSettingsProps {
  doc: FlowDocument;
  problems: Problem[];
  readOnly?: boolean;
  onPatch: (patch: Partial<FlowDocument>) => void;
  onSelectNode: (id: string) => void;
}

export function FlowSettings({ doc, problems, readOnly, onPatch, onSelectNode }: FlowSettingsProps) {
  return (
    <div className="inspector" data-testid="flow-settings">
      <h2>Flow</h2>
      <fieldset disabled={readOnly} className="plain">
        <div className="field">
          <label htmlFor="flow-description">Description</label>
          <textarea id="flow-description" rows={2} data-testid="flow-description" value={doc.description ?? ""} onChange={(e) => onPatch({ description: e.target.value })} />
        </div>
        <div className="field">
          <h3 id="flow-inputs-label">Run inputs</h3>
          <InputsBuilder schema={doc.inputs} onChange={(inputs) => onPatch({ inputs })} readOnly={readOnly} idPrefix="flow-inputs" />
        </div>
      </fieldset>
      <h3>Problems</h3>
      {problems.length === 0 ? (
        <p className="muted" data-testid="problems-none">
          None: the flow is valid.
        </p>
      ) : (
        <ul className="problems" data-testid="problems-list">
          {problems.map((p, i) => (
            <li key={i}>
              {p.node_id && doc.nodes.some((n) => n.id === p.node_id) ? (
                <button type="button" className="link" onClick={() => onSelectNode(p.node_id!)}>
                  {p.node_id}
                </button>
              ) : (
                p.node_id && <code>{p.node_id}</code>
              )}{" "}
              {p.field && <code>{p.field}</code>} {p.message}
              {uiHint(p) && <span className="muted"> — {uiHint(p)}</span>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
