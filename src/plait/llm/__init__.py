"""Model providers: the contract (`base`), the SDK-backed backends, the `scripted` provider, and
`chat`, the one call nodes use (provider resolution, keys by name, same-provider model fallback).

`ModelSettings`, `PRESETS` and `ScriptError` are re-exported from plait.spec.model_settings (the
flow document's vocabulary); `as_node_error` lives in plait.nodes.llm_errors."""

from plait.llm.base import (
    AuthenticationError,
    ChatRequest,
    ChatResponse,
    DeltaSink,
    Message,
    MissingKeyError,
    ModelNotFoundError,
    Provider,
    ProviderError,
    ProviderUnavailableError,
    RateLimitError,
    ToolCall,
    ToolSpec,
    Usage,
)
from plait.llm.chat import chat, chat_with, resolve
from plait.llm.registry import ProviderRegistry
from plait.llm.scripted import ScriptedProvider
from plait.spec.model_settings import PRESETS, ModelSettings, ScriptError

__all__ = [
    "PRESETS",
    "AuthenticationError",
    "ChatRequest",
    "ChatResponse",
    "DeltaSink",
    "Message",
    "MissingKeyError",
    "ModelNotFoundError",
    "ModelSettings",
    "Provider",
    "ProviderError",
    "ProviderRegistry",
    "ProviderUnavailableError",
    "RateLimitError",
    "ScriptError",
    "ScriptedProvider",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "chat",
    "chat_with",
    "resolve",
]
