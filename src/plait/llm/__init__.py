"""Model providers: the contract (`base`), the SDK-backed backends, the `scripted` provider, and
`chat`, the one call nodes use (provider resolution, keys by name, same-provider model fallback)."""

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
from plait.llm.chat import ModelSettings, as_node_error, chat, chat_with, resolve
from plait.llm.registry import PRESETS, ProviderRegistry
from plait.llm.scripted import ScriptedProvider, ScriptError

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
    "as_node_error",
    "chat",
    "chat_with",
    "resolve",
]
