"""The assistant: people describe in plain words what they want, and it answers questions about
plait, writes custom components (validated in the sandbox) and builds, edits and runs flows.

A layer of its own, above the engine, nodes, tools, LLM and sandbox and below `service/`:

- `events`: the typed stream of a turn (progress, token, flow_update, ..., complete) and its SSE
  encoding;
- `intent`: the classifier (one model call that also translates) and its deterministic shortcuts;
- `prompts`: the prompts and the framing blocks (canvas reference, models, history);
- `memory`: the conversation buffer (10 turns x 100 sessions, keyed by user and session);
- `codegen`: component generation (extract, validate in the sandbox, retry with the error);
- `models`: which provider and models a turn uses, fallback, usage, friendly errors;
- `guard`: the input guard (takeover attempts refused before any model call);
- `turn`: the orchestrator (`Assistant.stream`);
- `flow_agent`: the flow builder, one tool-calling loop over the request's working flow;
- `toolkit` and its parts: `catalog` (node types plus the user's components), `working_flow`
  (the flow being changed, and its events), `flow_spec` (the compact spec `build_flow` takes),
  `files` (the per-session file area), `tool_cache`, `code_gate` (unsafe code refused before a
  run), `flow_io`, `redaction`;
- `generator`: the `generate_component` tool's engine (the `codegen` pipeline inside a turn);
- `ports`, `tool_ports`: what the service provides (model calls, component registration, flow
  runs, telemetry).

See docs/assistant.md.
"""
