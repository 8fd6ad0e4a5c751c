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
- `turn`: the orchestrator (`Assistant.stream`);
- `ports`: what the service provides (component registration, telemetry).

See docs/assistant.md.
"""
