"""Provider failures as node failures: the one mapping every model-using node uses.

`llm/` raises `ProviderError`s that describe the backend; a run shows `NodeError`s that tell a
person what to fix and whether a retry can help. The translation belongs to the node layer, which
knows both, so `llm/` stays below `nodes/` and never imports it.
"""

from __future__ import annotations

from plait.llm.base import AuthenticationError, MissingKeyError, ModelNotFoundError, ProviderError
from plait.llm.sdk_common import BlockedEndpointError
from plait.nodes.base import NodeError


def as_node_error(exc: ProviderError, *, node: str | None = None) -> NodeError:
    """A `NodeError` for a provider failure: the backend's message, a fix, and whether to retry."""
    prefix = f"{exc.provider}: " if exc.provider and not exc.message.startswith(exc.provider) else ""
    if isinstance(exc, MissingKeyError):
        return NodeError(exc.message, hint=f"set the variable {exc.variable}", retryable=False)
    if isinstance(exc, AuthenticationError):
        return NodeError(prefix + exc.message, hint="check the provider's API key variable", retryable=False)
    if isinstance(exc, BlockedEndpointError):  # the SSRF guard's refusal: calling again cannot help
        return NodeError(prefix + exc.message, retryable=False)
    if isinstance(exc, ModelNotFoundError):
        tried = exc.models_tried or ([exc.model] if exc.model else [])
        return NodeError(
            prefix + exc.message,
            hint=f"use a model the provider serves (tried: {', '.join(tried) or '-'}), "
            "or add fallback_models",
            retryable=False,
        )
    return NodeError(prefix + exc.message)
