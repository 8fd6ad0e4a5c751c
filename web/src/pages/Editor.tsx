/** The flow editor: palette, canvas, inspector; autosave, publish, versions, run and runs. */
import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from "react";
import { api, ApiError, request } from "../api";
import FlowCanvas, { type CanvasHandle } from "../canvas/FlowCanvas";
import { FlowSettings, NodeInspector } from "../editor/Inspector";
import { DecisionList } from "../ui/DecisionList";
import { Palette } from "../editor/Palette";
import { hasInputs, RunDialog } from "../editor/RunDialog";
import { ShareDialog } from "../editor/ShareDialog";
import { TriggersDialog } from "../editor/TriggersDialog";
import { RunsPanel, VersionsPanel } from "../editor/SidePanels";
import { startAndWatch, stopRun, watchRun, type Watch } from "../live";
import { reloadNodeTypes, useNodeTypes } from "../nodeTypes";
import AssistantDock from "../assistant/AssistantDock";
import type { CanvasBridge } from "../assistant/types";
import { linkProps, paths } from "../router";
import { canEdit, canManage } from "../state/access";
import { useAuth } from "../state/auth";
import {
  addNode,
  bodyFields,
  bodyPrefix,
  commit,
  connect,
  connectionProblem,
  copy,
  deleteItems,
  edgeSourcePorts,
  graphAt,
  history as makeHistory,
  insertOnEdge,
  moveNodes,
  paste,
  portsOf,
  redo,
  referenceSuggestions,
  renameNode,
  setConfig,
  undo,
  updateGraphAt,
  updateNode,
  type BodyPath,
  type Clipboard,
  type Connection,
  type History,
} from "../state/graph";
import { takeImportNotice } from "../state/imported";
import { dagreLayout, fillMissingPositions, freeOffset, freePosition, NODE_W } from "../state/layout";
import { idleRun, isActive, liveInputs, normalizeEvent, reduceRun, startingRun, tokensOf, type RunState } from "../state/run";
import type { FlowAccess, FlowDocument, NodeType, Problem, VersionOut } from "../types";
import { Dialog } from "../ui/Dialog";
import { download, errorText, fmtDuration } from "../ui/format";
import { RunDock } from "../run/RunDock"; // W3
import { RunStep } from "../run/RunStep"; // W3
import { UseButton } from "../run/UsePanel"; // W3

const AUTOSAVE_MS = 600;
const CLIP_KEY = "plait.clipboard";
const PANELS_KEY = "plait.panels";
/** The aliases a body's nodes may reference, by the field of the node holding it. */
const BODY_ALIASES: Record<string, string[]> = { loop: ["index", "result"], map: ["item", "index"] };

function loadPanels(): { palette: boolean; side: boolean } {
  try {
    const v = JSON.parse(localStorage.getItem(PANELS_KEY) ?? "{}");
    return { palette: v.palette !== false, side: v.side !== false };
  } catch {
    return { palette: true, side: true };
  }
}

/** Stable text of a JSON value (keys sorted): a draft and a version compare equal when they are. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));
}

type SaveState = "saved" | "dirty" | "saving" | "error";
type RunAction = { kind: "reset"; state: RunState } | { kind: "event"; raw: any };

function runReducer(state: RunState, a: RunAction): RunState {
  if (a.kind === "reset") return a.state;
  const e = normalizeEvent(a.raw);
  if (!e) return state;
  if (state.runId && e.runId && e.runId !== state.runId) return state;
  return reduceRun(state, e);
}

function isEditableTarget(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el) return false;
  return el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName);
}

function sameIds(a: string[], b: ReadonlySet<string>): boolean {
  return a.length === b.size && a.every((x) => b.has(x));
}

export default function Editor({ flowId, onName, onGone }: { flowId: string; onName: (id: string, name: string) => void; onGone: (id: string) => void }) {
  const types = useNodeTypes();
  const [hist, setHist] = useState<History | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [problems, setProblems] = useState<Problem[]>([]);
  const [saveState, setSaveState] = useState<SaveState>("saved");
  const [saveError, setSaveError] = useState<string | null>(null);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [selectedEdges, setSelectedEdges] = useState<string[]>([]);
  const [panel, setPanel] = useState<"inspect" | "runs" | "versions">("inspect");
  const [viewing, setViewing] = useState<VersionOut | null>(null);
  const [dialog, setDialog] = useState<null | "run" | "publish" | "share" | "triggers">(null);
  const [access, setAccess] = useState<{ access?: FlowAccess; ownerId?: string }>({});
  const auth = useAuth();
  const [notice, setNotice] = useState<string | null>(null);
  const [runProblems, setRunProblems] = useState<Problem[]>([]);
  const [run, dispatchRun] = useReducer(runReducer, undefined, idleRun);
  const [taskLinks, setTaskLinks] = useState<{ token: string; node_id: string }[]>([]);
  const [versionsKey, setVersionsKey] = useState(0);
  const [portOverrides, setPortOverrides] = useState<Record<string, string[]>>({});
  const savedRef = useRef<FlowDocument | null>(null);
  const watchRef = useRef<Watch | null>(null);
  const canvasRef = useRef<CanvasHandle>(null);
  const saving = useRef<Promise<void> | null>(null);
  const runEpoch = useRef(0); // bumped by each Run: late events of an older watch are dropped
  const [bodyPath, setBodyPath] = useState<BodyPath>([]);
  const bodyPathRef = useRef(bodyPath);
  bodyPathRef.current = bodyPath;
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const [panels, setPanels] = useState(loadPanels);
  // the latest published version and whether the saved draft differs from it (the toolbar badge)
  const [published, setPublished] = useState<{ version: number; document: FlowDocument | null } | null>(null);
  const [serverDraft, setServerDraft] = useState<FlowDocument | null>(null);
  const draftAhead = useMemo(() => Boolean(published && (!published.document || canonical(published.document) !== canonical(serverDraft))), [published, serverDraft]);

  const doc = hist?.present ?? null;
  const shownDoc = viewing?.document ?? doc;
  // the graph on the canvas: the flow, or the body of a loop/map opened by double-click
  const graph = useMemo(() => (shownDoc ? graphAt(shownDoc, bodyPath) : null), [shownDoc, bodyPath]);
  // a flow shared as viewer is read-only, like a published version being viewed
  const locked = !canEdit(access.access);
  const readOnly = Boolean(viewing) || locked;

  // ---------------------------------------------------------------- load
  useEffect(() => {
    let live = true;
    api.getFlow(flowId).then(
      (flow) => {
        if (!live) return;
        const d = fillMissingPositions({ ...flow.draft, nodes: flow.draft.nodes ?? [], edges: flow.draft.edges ?? [] });
        savedRef.current = d;
        setHist(makeHistory(d));
        setName(flow.name || flow.id);
        setAccess({ access: flow.access, ownerId: flow.owner_id });
        onName(flowId, flow.name || flow.id);
        setProblems(flow.problems ?? []);
        const imported = takeImportNotice(flowId);
        if (imported) setNotice(imported);
        setServerDraft(flow.draft);
        if (flow.latest_version)
          api.version(flowId, flow.latest_version).then(
            (v) => live && setPublished({ version: v.version, document: v.document ?? null }),
            () => live && setPublished({ version: flow.latest_version, document: null }),
          );
        // a run of this flow still going (the tab was closed mid-run): show it live again
        api.listRuns(flowId).then(
          async (runs) => {
            const latest = runs[0];
            const epoch = runEpoch.current;
            if (!live || !latest || !["queued", "running", "waiting"].includes(latest.status)) return;
            const w = await watchRun(latest.id, (raw) => runEpoch.current === epoch && dispatchRun({ kind: "event", raw }));
            if (!live || runEpoch.current !== epoch) return w.close();
            watchRef.current = w;
          },
          () => undefined,
        );
      },
      (e) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 404) {
          onGone(flowId);
          setLoadError(`There is no flow "${flowId}", or it is not shared with you.`);
        } else setLoadError(errorText(e));
      },
    );
    return () => {
      live = false;
      watchRef.current?.close();
    };
  }, [flowId, onName, onGone]);

  // ---------------------------------------------------------------- autosave (+ validation)
  const docRef = useRef(doc);
  docRef.current = doc;
  const save = useCallback(async () => {
    // the latest document, also one committed since the last render (the assistant's bridge)
    const d = docRef.current;
    if (!d || d === savedRef.current) return;
    setSaveState("saving");
    try {
      const out = await api.updateFlow(flowId, { document: d });
      savedRef.current = d;
      setProblems(out.problems ?? []);
      setServerDraft(out.draft ?? d);
      setSaveError(null);
      setSaveState((s) => (s === "saving" ? "saved" : s));
    } catch (e) {
      setSaveState("error");
      setSaveError(errorText(e));
    }
  }, [flowId]);

  // What the indicator shows: never "saved" for a document changed since, even in the render
  // before the effect below marks it dirty (a test or a person reading it then would be misled).
  const shownSaveState: SaveState = saveState === "saved" && doc !== null && doc !== savedRef.current ? "dirty" : saveState;

  useEffect(() => {
    if (!doc) return;
    if (doc === savedRef.current) {
      // back to what the server has (an undo before the autosave fired)
      setSaveState((s) => (s === "dirty" ? "saved" : s));
      return;
    }
    setSaveState("dirty");
    const t = setTimeout(() => {
      saving.current = save();
    }, AUTOSAVE_MS);
    return () => clearTimeout(t);
  }, [doc, save]);

  const flush = useCallback(async () => {
    await saving.current;
    await save();
  }, [save]);

  // Save what is pending when leaving the editor (tab switch, navigation).
  const saveRef = useRef(save);
  saveRef.current = save;
  useEffect(() => () => void saveRef.current(), []);

  // ---------------------------------------------------------------- ports of config-dependent types
  // Every type whose ports follow its config is asked (no list of known types here); for an
  // invalid config the server answers default ports, which would hide the edges it had: those stay.
  const graphNodes = graph?.nodes;
  const graphEdges = graph?.edges;
  useEffect(() => {
    if (!graphNodes) return;
    const todo = graphNodes.filter((n) => (types.byName.get(n.type) as any)?.ports_from_config);
    if (!todo.length) return setPortOverrides((p) => (Object.keys(p).length ? {} : p));
    const usedPorts = edgeSourcePorts(graphEdges ?? []);
    const t = setTimeout(async () => {
      const next: Record<string, string[]> = {};
      await Promise.all(
        todo.map(async (n) => {
          try {
            const out = await request<{ output_ports: string[]; valid?: boolean }>("POST", `/api/v1/node-types/${encodeURIComponent(n.type)}/ports`, { config: n.config ?? {} });
            // an invalid config (a provider being changed...) keeps the ports its edges use
            next[n.id] = out.valid !== false ? out.output_ports : [...new Set([...out.output_ports, ...(usedPorts.get(n.id) ?? [])])];
          } catch {
            /* keep the default ports */
          }
        }),
      );
      setPortOverrides(next);
    }, 400);
    return () => clearTimeout(t);
  }, [graphNodes, graphEdges, types.byName]);

  // ---------------------------------------------------------------- edits
  const edit = useCallback((fn: (d: FlowDocument) => FlowDocument) => {
    setHist((h) => (h ? commit(h, fn(h.present)) : h));
  }, []);
  /** An edit of the graph on the canvas (the flow, or the open body): one undo history for all. */
  const editGraph = useCallback((fn: (g: FlowDocument) => FlowDocument) => edit((d) => updateGraphAt(d, bodyPath, fn)), [edit, bodyPath]);
  const closeBody = useCallback((depth: number) => {
    setBodyPath((p) => p.slice(0, depth));
    setSelected(new Set());
    setPortOverrides({});
  }, []);
  const togglePanel = useCallback((which: "palette" | "side") => {
    setPanels((p) => {
      const next = { ...p, [which]: !p[which] };
      localStorage.setItem(PANELS_KEY, JSON.stringify(next));
      return next;
    });
  }, []);
  // the open body is gone (undo, restore, its node deleted elsewhere): back to the flow
  useEffect(() => {
    if (shownDoc && !graph) setBodyPath([]);
  }, [shownDoc, graph]);
  const openBody = useCallback(
    (nodeId: string) => {
      const node = graph?.nodes.find((n) => n.id === nodeId);
      const field = node ? bodyFields(types.byName.get(node.type))[0] : undefined;
      if (!node || !field) return;
      setBodyPath((p) => [...p, { node: nodeId, field }]);
      setSelected(new Set());
      setPortOverrides({});
    },
    [graph, types.byName],
  );

  const addType = useCallback(
    (t: NodeType, position?: { x: number; y: number }, onEdge?: string) => {
      const p = position ?? canvasRef.current?.center() ?? { x: 0, y: 0 };
      const docType = ((t as any).node_type as string | undefined) ?? t.name;
      const config = (t as any).config_defaults ?? undefined;
      const sizes = canvasRef.current?.sizes() ?? {};
      let newId = "";
      let placed: { x: number; y: number; width: number; height: number } | null = null;
      editGraph((d) => {
        // clicked in the palette: beside the one selected node (building a chain left to right),
        // else in the middle of the view
        const beside = !position && selected.size === 1 ? d.nodes.find((n) => selected.has(n.id)) : undefined;
        const next = beside?.position ? { x: beside.position.x + (sizes[beside.id]?.width ?? NODE_W) + 80, y: beside.position.y } : undefined;
        const want = position ? p : next ?? { x: p.x - 90, y: p.y - 28 };
        // dropped on an edge: it goes between the edge's ends (no room to find there)
        const at = onEdge ? want : freePosition(d.nodes, want, sizes);
        // in view afterwards: the new node, and the one it was placed beside
        placed = next && beside?.position ? { x: beside.position.x, y: Math.min(at.y, beside.position.y), width: at.x - beside.position.x + NODE_W, height: Math.abs(at.y - beside.position.y) + 80 } : { ...at, width: NODE_W, height: 80 };
        const r = addNode(d, docType, at, t, config ? structuredClone(config) : undefined);
        newId = r.id;
        if (!onEdge) return r.doc;
        const added = r.doc.nodes.find((n) => n.id === r.id)!;
        const ports = portsOf(added, t);
        if (!ports.inputs.length || !ports.outputs.length) return r.doc;
        return insertOnEdge(r.doc, onEdge, r.id, ports.inputs[0], ports.outputs[0]);
      });
      // the edit's updater may run at the next render: read what it set a frame later
      requestAnimationFrame(() => {
        if (newId) setSelected(new Set([newId]));
        const box = placed as { x: number; y: number; width: number; height: number } | null;
        if (box && !position) canvasRef.current?.reveal(box, box);
      });
    },
    [editGraph, selected],
  );
  const onDropType = useCallback(
    (typeName: string, position: { x: number; y: number }, onEdge?: string) => {
      const t = types.byName.get(typeName);
      if (t) addType(t, position, onEdge);
    },
    [types.byName, addType],
  );
  const onMove = useCallback((positions: Record<string, { x: number; y: number }>) => editGraph((d) => moveNodes(d, positions)), [editGraph]);
  const onConnect = useCallback(
    (c: Connection) => {
      if (!graph) return;
      const why = connectionProblem(graph, c);
      if (why) setNotice(`Not connected: ${why}.`);
      else editGraph((d) => connect(d, c));
    },
    [graph, editGraph],
  );
  const onDelete = useCallback(
    (nodeIds: string[], edgeKeys: string[]) => {
      editGraph((d) => deleteItems(d, nodeIds, edgeKeys));
      setSelected(new Set());
    },
    [editGraph],
  );
  const onSelect = useCallback((nodeIds: string[], edgeKeys: string[]) => {
    setSelected((s) => (sameIds(nodeIds, s) ? s : new Set(nodeIds)));
    setSelectedEdges((s) => (s.length === edgeKeys.length && s.every((x, i) => x === edgeKeys[i]) ? s : edgeKeys));
  }, []);
  const selectNode = useCallback((id: string) => {
    setSelected(new Set([id]));
    setPanel("inspect");
  }, []);

  const doCopy = useCallback(() => {
    if (!graph || !selected.size) return;
    const clip = copy(graph, selected);
    localStorage.setItem(CLIP_KEY, JSON.stringify(clip));
    setNotice(`Copied ${clip.nodes.length} node(s).`);
  }, [graph, selected]);
  const doPaste = useCallback(() => {
    let clip: Clipboard | null = null;
    try {
      clip = JSON.parse(localStorage.getItem(CLIP_KEY) ?? "null");
    } catch {
      clip = null;
    }
    if (!clip?.nodes?.length) return;
    let newIds: string[] = [];
    const sizes = canvasRef.current?.sizes() ?? {};
    editGraph((d) => {
      const r = paste(d, clip!, freeOffset(d.nodes, clip!.nodes, { x: 40, y: 40 }, sizes));
      newIds = r.ids;
      return r.doc;
    });
    setSelected(new Set(newIds));
  }, [editGraph]);
  const doUndo = useCallback(() => setHist((h) => (h ? undo(h) : h)), []);
  const doRedo = useCallback(() => setHist((h) => (h ? redo(h) : h)), []);
  const doLayout = useCallback(async () => {
    if (!graph) return;
    const positions = await dagreLayout(graph, canvasRef.current?.sizes() ?? {});
    editGraph((d) => moveNodes(d, positions));
    setTimeout(() => canvasRef.current?.fitView(), 50);
  }, [graph, editGraph]);
  const selectAll = useCallback(() => graph && setSelected(new Set(graph.nodes.map((n) => n.id))), [graph]);
  const deleteSelection = useCallback(() => onDelete([...selected], selectedEdges), [onDelete, selected, selectedEdges]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (readOnly || isEditableTarget(e.target) || document.querySelector("[role=dialog]")) return;
      const mod = e.ctrlKey || e.metaKey;
      const k = e.key.toLowerCase();
      if (mod && k === "z" && !e.shiftKey) (e.preventDefault(), doUndo());
      else if (mod && ((k === "z" && e.shiftKey) || k === "y")) (e.preventDefault(), doRedo());
      else if (mod && k === "c") doCopy();
      else if (mod && k === "v") (e.preventDefault(), doPaste());
      else if (mod && k === "a") (e.preventDefault(), selectAll());
      else if (e.key === "Escape") {
        if (selectedRef.current.size) setSelected(new Set());
        else if (bodyPathRef.current.length) closeBody(bodyPathRef.current.length - 1);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [readOnly, doUndo, doRedo, doCopy, doPaste, selectAll, closeBody]);

  // ---------------------------------------------------------------- run
  const startRun = useCallback(
    async (inputs: Record<string, any>) => {
      setRunProblems([]);
      runEpoch.current += 1;
      await flush();
      watchRef.current?.close();
      dispatchRun({ kind: "reset", state: startingRun() });
      setTaskLinks([]);
      try {
        const w = await startAndWatch(flowId, inputs, "draft", (raw) => dispatchRun({ kind: "event", raw }));
        watchRef.current = w;
        dispatchRun({ kind: "event", raw: { type: "run_id", run_id: w.runId } });
        setDialog(null);
      } catch (e) {
        dispatchRun({ kind: "reset", state: idleRun() });
        if (e instanceof ApiError && e.problems.length) {
          setRunProblems(e.problems);
          if (e.code === "invalid_input") setDialog("run");
          else setDialog(null);
          if (e.code === "invalid_flow") setProblems(e.problems);
        }
        setNotice(`Could not start the run: ${errorText(e)}`);
      }
    },
    [flowId, flush],
  );
  const onRunClick = useCallback(() => {
    if (!doc) return;
    if (hasInputs(doc.inputs)) {
      setRunProblems([]);
      setDialog("run");
    } else void startRun({});
  }, [doc, startRun]);
  const onStop = useCallback(async () => {
    if (!run.runId) return;
    try {
      await stopRun(run.runId);
    } catch (e) {
      setNotice(`Could not stop: ${errorText(e)}`);
    }
  }, [run.runId]);

  // ---------------------------------------------------------------- the assistant's port to the canvas
  // The panel changes the canvas only through this: a change is one ordinary undoable edit of the
  // draft (same validation and autosave as a manual one), and a run it starts shows as any run.
  const [assistantBusy, setAssistantBusy] = useState(false);
  const typesRef = useRef(types.list);
  typesRef.current = types.list;
  const followRun = useCallback((runId: string) => {
    runEpoch.current += 1;
    const epoch = runEpoch.current;
    watchRef.current?.close();
    dispatchRun({ kind: "reset", state: startingRun() });
    dispatchRun({ kind: "event", raw: { type: "run_id", run_id: runId } });
    setTaskLinks([]);
    void watchRun(runId, (raw) => runEpoch.current === epoch && dispatchRun({ kind: "event", raw })).then(
      (w) => (runEpoch.current === epoch ? (watchRef.current = w) : w.close()),
      (e) => setNotice(`Could not follow the assistant's run: ${errorText(e)}`),
    );
  }, []);
  const bridge = useMemo<CanvasBridge>(
    () => ({
      flowId,
      readOnly,
      document: () => docRef.current ?? { nodes: [], edges: [] },
      commit: (next, opts) => {
        setHist((h) => (h ? commit(h, next) : h));
        // seen at once by document() and flush(), before the editor renders it
        if (docRef.current) docRef.current = next;
        if (opts?.fit) {
          setBodyPath([]);
          requestAnimationFrame(() => requestAnimationFrame(() => canvasRef.current?.fitView()));
        }
      },
      flush,
      center: () => canvasRef.current?.center() ?? { x: 0, y: 0 },
      sizes: () => canvasRef.current?.sizes() ?? {},
      select: (ids) => setSelected(new Set(ids)),
      watchRun: followRun,
      setLocked: setAssistantBusy,
      nodeTypes: () => typesRef.current,
      refreshTypes: reloadNodeTypes,
      notify: setNotice,
    }),
    [flowId, readOnly, flush, followRun],
  );

  // a run that waits for people: find its task tokens
  useEffect(() => {
    if (run.status !== "waiting" || !run.runId) return;
    const runId = run.runId;
    let live = true;
    // the task row is stored just after the `waiting` event: ask again until it is there
    (async () => {
      for (let i = 0; i < 40 && live; i++) {
        try {
          const d = await api.getRun(runId);
          const links = (d.tasks ?? []).map((t) => ({ token: t.token, node_id: t.node_id }));
          if (links.length || d.status !== "waiting") {
            if (live) setTaskLinks(links);
            return;
          }
        } catch {
          /* try again */
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    return () => {
      live = false;
    };
  }, [run.status, run.runId]);

  const runActive = isActive(run);

  // ---------------------------------------------------------------- publish, versions, export
  const publish = useCallback(
    async (note: string) => {
      // the draft as saved is what gets published
      await flush();
      try {
        const v = await api.publish(flowId, note);
        setNotice(`Published version ${v.version}.`);
        setPublished({ version: v.version, document: v.document ?? serverDraft });
        setVersionsKey((k) => k + 1);
        setDialog(null);
      } catch (e) {
        if (e instanceof ApiError && e.problems.length) setProblems(e.problems);
        throw e;
      }
    },
    [flowId, flush, serverDraft],
  );
  const restore = useCallback(
    (v: VersionOut) => {
      if (!v.document) return;
      const d = fillMissingPositions({ ...v.document, id: flowId, nodes: v.document.nodes ?? [], edges: v.document.edges ?? [] });
      edit(() => d);
      setViewing(null);
      setNotice(`Restored version ${v.version} into the draft (undo to go back).`);
    },
    [edit, flowId],
  );
  const exportDraft = useCallback(async () => {
    await flush();
    try {
      download(`${flowId}.plait.json`, await api.exportFlow(flowId, "json", "draft"), "application/json");
    } catch (e) {
      setNotice(errorText(e));
    }
  }, [flowId, flush]);

  // ---------------------------------------------------------------- derived
  // the validator names a body's nodes "loop.body/step": the open graph's problems are those under
  // its prefix (with the prefix off); a body node's own problems also mark its loop/map outside
  const prefix = bodyPrefix(bodyPath);
  const shownProblems = useMemo(
    () => (prefix ? problems.filter((p) => p.node_id?.startsWith(prefix)).map((p) => ({ ...p, node_id: p.node_id!.slice(prefix.length) })) : problems),
    [problems, prefix],
  );
  const problemsByNode = useMemo(() => {
    const out: Record<string, string[]> = {};
    for (const p of shownProblems) {
      if (!p.node_id) continue;
      const nested = /^([^./]+)\.[^/]+\/(.+)$/.exec(p.node_id);
      if (nested) {
        (out[nested[1]] ??= []).push(`in the body, ${nested[2]}: ${p.message}`);
        continue;
      }
      (out[p.node_id] ??= []).push(p.field ? `${p.field}: ${p.message}` : p.message);
      // edge problems name their edge ("edge #1 (a -> b)"): mark the source node
      const m = /^edge #\d+ \(([^ ]+) -> /.exec(p.node_id);
      if (m) (out[m[1]] ??= []).push(p.message);
    }
    return out;
  }, [shownProblems]);
  const selectedNode = selected.size === 1 && graph ? graph.nodes.find((n) => selected.has(n.id)) : undefined;
  const lastOutputs = useMemo(() => {
    const o: Record<string, any> = {};
    for (const [id, n] of Object.entries(run.nodes)) if (n.output !== undefined) o[id] = n.output;
    return o;
  }, [run.nodes]);
  const suggestions = useMemo(() => {
    if (!shownDoc || !graph || !selectedNode) return [];
    // inside a body: the body's upstream nodes, the aliases of each enclosing loop/map, then the
    // flow's inputs and variables
    const inner = referenceSuggestions({ ...graph, inputs: shownDoc.inputs, variables: shownDoc.variables }, selectedNode.id, lastOutputs);
    if (!bodyPath.length) return inner;
    const aliases: string[] = [];
    let g: FlowDocument = shownDoc;
    for (const step of bodyPath) {
      const holder = g.nodes.find((n) => n.id === step.node);
      for (const a of BODY_ALIASES[holder?.type ?? ""] ?? []) if (!aliases.includes(a)) aliases.push(a);
      g = graphAt(g, [step]) ?? g;
    }
    return [...inner, ...aliases];
  }, [shownDoc, graph, bodyPath, selectedNode, lastOutputs]);
  const nodeProblems = useMemo(() => (selectedNode ? shownProblems.filter((p) => p.node_id === selectedNode.id) : []), [shownProblems, selectedNode]);

  const onConfig = useCallback((config: Record<string, any>) => selectedNode && editGraph((d) => setConfig(d, selectedNode.id, config)), [editGraph, selectedNode]);
  const onRename = useCallback(
    (to: string) => {
      if (!graph || !selectedNode) return null;
      const r = renameNode(graph, selectedNode.id, to);
      if ("error" in r) return r.error;
      editGraph(() => r.doc);
      setSelected(new Set([to]));
      return null;
    },
    [graph, selectedNode, editGraph],
  );
  const onLabel = useCallback((label: string | undefined) => selectedNode && editGraph((d) => updateNode(d, selectedNode.id, { label })), [editGraph, selectedNode]);
  const onFlowPatch = useCallback((patch: Partial<FlowDocument>) => edit((d) => ({ ...d, ...patch })), [edit]);

  if (loadError)
    return (
      <div className="page">
        <p className="error" role="alert" data-testid="editor-load-error">
          {loadError}
        </p>
        <a {...linkProps(paths.library())}>Back to the library</a>
      </div>
    );
  if (!hist || !shownDoc || !graph) return <p className="loading">Loading…</p>;

  return (
    <div className="editor" data-testid="editor">
      <div className="toolbar" role="toolbar" aria-label="Flow tools">
        <h1 className="flow-name" title={flowId}>
          {name}
        </h1>
        <span className={`save-state save-${shownSaveState}`} data-testid="save-status" data-state={shownSaveState} role="status" title={saveError ?? undefined}>
          {shownSaveState === "saved" ? "Saved" : shownSaveState === "saving" ? "Saving…" : shownSaveState === "dirty" ? "Unsaved" : "Save failed"}
        </span>
        <span className={`problem-count${problems.length ? " has" : ""}`} data-testid="problem-count" data-count={problems.length}>
          {problems.length ? `${problems.length} problem${problems.length > 1 ? "s" : ""}` : "Valid"}
        </span>
        <span
          className={`publish-badge ${!published ? "is-draft" : draftAhead ? "is-ahead" : "is-published"}`}
          data-testid="publish-badge"
          data-state={!published ? "draft" : draftAhead ? "ahead" : "published"}
          title={
            !published
              ? "Never published: runs started from outside the editor have no version to use yet."
              : draftAhead
                ? `The draft has changes that are not published: the API, triggers and schedules run v${published.version}. Publish to make them live.`
                : `The draft is what v${published.version} runs.`
          }
        >
          {!published ? "Draft" : draftAhead ? `Draft · ahead of v${published.version}` : `Published v${published.version}`}
        </span>
        <div className="tool-group">
          <button type="button" className="small" onClick={doUndo} disabled={readOnly || !hist.past.length} data-testid="undo" aria-keyshortcuts="Control+Z">
            Undo
          </button>
          <button type="button" className="small" onClick={doRedo} disabled={readOnly || !hist.future.length} data-testid="redo" aria-keyshortcuts="Control+Shift+Z">
            Redo
          </button>
          <button type="button" className="small" onClick={doCopy} disabled={readOnly || !selected.size} data-testid="copy" aria-keyshortcuts="Control+C">
            Copy
          </button>
          <button type="button" className="small" onClick={doPaste} disabled={readOnly} data-testid="paste" aria-keyshortcuts="Control+V">
            Paste
          </button>
          <button type="button" className="small" onClick={deleteSelection} disabled={readOnly || (!selected.size && !selectedEdges.length)} data-testid="delete-selection" aria-keyshortcuts="Delete">
            Delete
          </button>
          <button type="button" className="small" onClick={doLayout} disabled={readOnly} data-testid="auto-layout">
            Auto-layout
          </button>
        </div>
        <div className="tool-group">
          <button type="button" className="small" onClick={() => setDialog("publish")} disabled={readOnly} data-testid="publish">
            Publish…
          </button>
          <button type="button" className="small" onClick={exportDraft} data-testid="export-draft">
            Export
          </button>
          <button type="button" className="small" onClick={() => setDialog("triggers")} data-testid="triggers-button">
            Triggers…
          </button>
          {/* W3 */}
          <UseButton flowId={flowId} doc={doc} />
          {access.access && canManage(access.access) && (
            <button type="button" className="small" onClick={() => setDialog("share")} data-testid="share-button">
              Share…
            </button>
          )}
        </div>
        <div className="tool-group run-group">
          <span className={`run-status status-${run.status}`} data-testid="run-status" data-status={run.status} role="status" aria-live="polite">
            {run.status === "idle" ? "" : run.status}
            {run.durationMs !== undefined ? ` · ${fmtDuration(run.durationMs)}` : ""}
            {tokensOf(run.usage) ? ` · ${tokensOf(run.usage)} tokens` : ""}
          </span>
          {run.runId && (
            <a className="small-text" {...linkProps(paths.run(run.runId))} data-testid="run-open">
              inspect
            </a>
          )}
          <button type="button" className="primary" onClick={onRunClick} disabled={readOnly || runActive} data-testid="run-button">
            ▶ Run
          </button>
          <button type="button" className="danger" onClick={onStop} disabled={locked || !runActive || !run.runId} data-testid="stop-button">
            ■ Stop
          </button>
        </div>
      </div>
      {(notice || run.error || taskLinks.length > 0 || viewing || locked) && (
        <div className="banners">
          {locked && (
            <div className="banner" data-testid="read-only-banner">
              Shared with you as a viewer: you can look at this flow and its runs, not change or run it.
            </div>
          )}
          {viewing && (
            <div className="banner" data-testid="viewing-version">
              Viewing version {viewing.version} (read-only).{" "}
              {!locked && (
                <button type="button" className="small" onClick={() => restore(viewing)} data-testid="viewing-restore">
                  Restore into the draft
                </button>
              )}{" "}
              <button type="button" className="small" onClick={() => setViewing(null)} data-testid="viewing-close">
                Back to the draft
              </button>
            </div>
          )}
          {taskLinks.map((t) => (
            <div className="banner waiting" key={t.token}>
              Waiting for a person at <code>{t.node_id}</code>:{" "}
              <a href={paths.task(t.token)} target="_blank" rel="noreferrer" data-testid={`task-link-${t.node_id}`}>
                open the task form
              </a>
            </div>
          ))}
          {run.error && (
            <div className="banner error" role="alert" data-testid="run-error">
              {run.error}
            </div>
          )}
          {notice && (
            <div className="banner" role="status" data-testid="editor-notice">
              {notice}{" "}
              <button type="button" className="small" aria-label="Dismiss" onClick={() => setNotice(null)}>
                ✕
              </button>
            </div>
          )}
        </div>
      )}
      <div className={`editor-body${panels.palette ? "" : " palette-collapsed"}${panels.side ? "" : " side-collapsed"}`} data-testid="editor-body">
        {panels.palette ? (
          <div className="palette-wrap">
            <button type="button" className="panel-toggle" data-testid="toggle-palette" aria-expanded="true" aria-label="Hide the node palette" title="Hide the node palette" onClick={() => togglePanel("palette")}>
              ‹
            </button>
            <Palette types={types.list} onAdd={addType} disabled={readOnly || assistantBusy} />
          </div>
        ) : (
          <button type="button" className="panel-rail" data-testid="toggle-palette" aria-expanded="false" aria-label="Show the node palette" title="Show the node palette" onClick={() => togglePanel("palette")}>
            › <span>Nodes</span>
          </button>
        )}
        <div className="canvas-column">
          {bodyPath.length > 0 && (
            <nav className="breadcrumb" aria-label="Where you are" data-testid="breadcrumb">
              <button type="button" className="link" data-testid="breadcrumb-root" onClick={() => closeBody(0)}>
                {name}
              </button>
              {bodyPath.map((step, i) => (
                <span key={i}>
                  {" › "}
                  {i === bodyPath.length - 1 ? (
                    <strong data-testid="breadcrumb-current">
                      {step.node} ({step.field})
                    </strong>
                  ) : (
                    <button type="button" className="link" data-testid={`breadcrumb-${i + 1}`} onClick={() => closeBody(i + 1)}>
                      {step.node} ({step.field})
                    </button>
                  )}
                </span>
              ))}
              <span className="muted small-text"> · the nodes run for each item or iteration · Esc goes back</span>
            </nav>
          )}
        <FlowCanvas
          key={prefix || "root"}
          doc={graph}
          types={types.byName}
          portOverrides={portOverrides}
          run={viewing || bodyPath.length ? null : run}
          problems={viewing ? undefined : problemsByNode}
          selected={selected}
          readOnly={readOnly || assistantBusy}
          onSelect={onSelect}
          onMove={onMove}
          onConnect={onConnect}
          onDelete={onDelete}
          onDropType={onDropType}
          onNodeActivate={selectNode}
          onOpenBody={openBody}
          canvasRef={canvasRef}
        />
        {!viewing && <AssistantDock bridge={bridge} />}
        </div>
        {!panels.side && (
          <button type="button" className="panel-rail" data-testid="toggle-side" aria-expanded="false" aria-label="Show the details panel" title="Show the details panel" onClick={() => togglePanel("side")}>
            ‹ <span>Details</span>
          </button>
        )}
        {panels.side && (
        <aside className="side" aria-label="Details">
          <div className="side-tabs" role="tablist">
            <button type="button" className="panel-toggle" data-testid="toggle-side" aria-expanded="true" aria-label="Hide the details panel" title="Hide the details panel" onClick={() => togglePanel("side")}>
              ›
            </button>
            {(["inspect", "runs", "versions"] as const).map((p) => (
              <button key={p} type="button" role="tab" aria-selected={panel === p} className={panel === p ? "active" : ""} data-testid={`panel-${p}`} onClick={() => setPanel(p)}>
                {p === "inspect" ? "Inspector" : p === "runs" ? "Runs" : "Versions"}
              </button>
            ))}
          </div>
          {panel === "inspect" &&
            (selectedNode ? (
              <NodeInspector
                key={selectedNode.id}
                node={selectedNode}
                type={types.byName.get(selectedNode.type)}
                problems={nodeProblems}
                suggestions={suggestions}
                runNode={bodyPath.length ? undefined : run.nodes[selectedNode.id]}
                runInputs={!bodyPath.length && run.nodes[selectedNode.id] ? liveInputs(shownDoc.edges, run, selectedNode.id) : undefined}
                readOnly={readOnly}
                onConfig={onConfig}
                onRename={onRename}
                onLabel={onLabel}
                onDelete={() => onDelete([selectedNode.id], [])}
                /* forms: retry/timeout/on_error on every node; the run inputs builder on the start node */
                onNodePatch={(patch) => editGraph((d) => updateNode(d, selectedNode.id, patch))}
                flowInputs={shownDoc.inputs}
                onFlowInputs={(inputs) => onFlowPatch({ inputs })}
                /* W3: run this node alone, with the inputs of the last run or pinned ones */
                actions={
                  !bodyPath.length && !viewing ? (
                    <RunStep flowId={flowId} nodeId={selectedNode.id} lastRunId={run.runId} lastInputs={run.nodes[selectedNode.id] ? liveInputs(shownDoc.edges, run, selectedNode.id) : undefined} disabled={readOnly} beforeRun={flush} />
                  ) : undefined
                }
              />
            ) : (
              <>
                {run.decisions && run.decisions.length > 0 && (
                  <section className="inspector" aria-label="Decisions of the run">
                    <h3>Decisions of this run</h3>
                    <DecisionList decisions={run.decisions} />
                  </section>
                )}
                <FlowSettings doc={shownDoc} problems={problems} readOnly={readOnly} onPatch={onFlowPatch} onSelectNode={selectNode} />
              </>
            ))}
          {panel === "runs" && <RunsPanel flowId={flowId} refreshKey={`${run.runId}:${run.status}`} />}
          {panel === "versions" && <VersionsPanel flowId={flowId} refreshKey={versionsKey} viewing={viewing?.version ?? null} onView={setViewing} onRestore={locked ? undefined : restore} />}
        </aside>
        )}
      </div>
      {/* W3: the result of the last run (opens when a run ends) and the chat playground */}
      <RunDock flowId={flowId} doc={shownDoc} run={run} onRun={startRun} readOnly={readOnly} />
      {dialog === "run" && doc?.inputs && <RunDialog /* W3 */ flowId={flowId} schema={doc.inputs} onRun={startRun} onClose={() => setDialog(null)} serverProblems={runProblems} />}
      {dialog === "publish" && <PublishDialog onPublish={publish} onClose={() => setDialog(null)} />}
      {dialog === "triggers" && <TriggersDialog flowId={flowId} canEdit={!readOnly} onClose={() => setDialog(null)} />}
      {dialog === "share" && (
        <ShareDialog flowId={flowId} flowName={name} ownerId={access.ownerId} isAdmin={auth.status === "signed_in" && auth.me.role === "admin"} onClose={() => setDialog(null)} />
      )}
      {types.error && (
        <p className="error floating" role="alert">
          Could not load the node types: {types.error}
        </p>
      )}
    </div>
  );
}

function PublishDialog({ onPublish, onClose }: { onPublish: (note: string) => Promise<void>; onClose: () => void }) {
  const [note, setNote] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <Dialog title="Publish a version" onClose={onClose} testId="publish-dialog">
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          try {
            await onPublish(note);
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <label htmlFor="publish-note">Note (what changed)</label>
        <input id="publish-note" data-testid="publish-note" value={note} onChange={(e) => setNote(e.target.value)} />
        {error && (
          <p className="error" role="alert" data-testid="publish-error">
            {error}
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy} data-testid="publish-confirm">
            Publish
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
