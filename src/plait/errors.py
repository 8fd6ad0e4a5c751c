"""plait's one error base: every error a person may read carries a `code`, a `message` and a `hint`.

The tree (each layer's errors derive from `PlaitError`; `str(error)` is the message, and
`error.with_hint()` the message then "(fix: hint)" when there is a hint):

    PlaitError
    ├── spec.problems.FlowValidationError       a flow document has problems (all of them)
    ├── spec.model_settings.ScriptError         a `scripted` provider step is malformed
    ├── spec.formats.ragflow errors             RagflowImportError, RagflowExportError
    ├── expr.refs.TemplateError                 a reference or template cannot be parsed or rendered
    ├── net.guard.BlockedURLError               the SSRF guard refused a URL
    ├── net.guard.InvalidAllowlistError         a PLAIT_HTTP_ALLOW entry cannot be parsed
    ├── net.http.ResponseTooLargeError          a response body is over the caller's limit
    ├── net.http.BodyNotJSONError               a body asked for as JSON is not JSON
    ├── llm.base.ProviderError                  a model call failed
    │   ├── ModelNotFoundError                  the provider does not serve the model (falls back)
    │   ├── AuthenticationError                 the API key was refused
    │   ├── RateLimitError                      the provider asked to slow down
    │   ├── ProviderUnavailableError            network error, timeout, 5xx
    │   └── MissingKeyError                     no API key is set
    ├── tools.base.ToolError                    a tool call failed (str() includes the hint)
    ├── nodes.base.NodeError                    a node failed cleanly (what the run shows)
    ├── engine errors                           RunInputError, RunNotFoundError, ResumeError, DecisionError
    ├── store errors                            SecretKeyError, DecryptionError, LeaseLost (fencing)
    ├── service.errors.ServiceError             NotFound, Conflict, Gone, Invalid, Unauthorized
    ├── assistant errors                        AssistantSetupError, ModelsExhaustedError, FlowEditError, ...
    ├── workers errors                          QueueUnavailable (Redis is away), BadMessage
    └── service.channel.ChannelError            a WebSocket channel message refused

Foreign errors (httpx, SQLAlchemy, an SDK's) are translated where they enter plait, with
`raise PlaitError(...) from exc` so logs keep the cause. The HTTP layer maps `PlaitError` once.
Subclasses that need to stay catchable as a built-in (`ValueError`, `LookupError`) list it as a
second base.
"""

from __future__ import annotations


class PlaitError(Exception):
    """A failure a person can act on. `code` is stable (machines switch on it), `message` says
    what went wrong, `hint` how to fix it (or None)."""

    code: str = "error"

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def with_hint(self) -> str:
        """The message, then "(fix: hint)" when there is a hint: the one way plait shows both."""
        return f"{self.message} (fix: {self.hint})" if self.hint else self.message

    def to_dict(self) -> dict[str, str]:
        """The wire form: `{code, message, hint?}`."""
        out = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out


__all__ = ["PlaitError"]
