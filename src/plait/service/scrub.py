"""Export scrubbing: a flow document leaves the server without the secrets typed into it.

People paste keys into flows: an `Authorization` header, `?apikey=` in a URL, `user:pw@host`, a
`private_key` field, `OPENAI_API_KEY = "sk-..."` in a code node. An exported document is meant to
be shared, so before it leaves, every string in it is scrubbed three ways:

- **by field name**: a string under a key named like a credential (`api_key`, `private_key`,
  `password`, `token`, `authorization`...);
- **by value**: the stored secret variables the flow's runs could read, and URL user-info and
  credential-like query parameters (`plait.net.redact.SecretMask`);
- **by pattern**: key formats that announce themselves (`sk-...`, `ghp_...`, `AKIA...`, `xoxb-...`,
  `AIza...`, JWTs, PEM private-key blocks) and long high-entropy literals assigned to a
  credential-like name in code (`token = "..."`).

References are kept: `{{env.X}}` templates and `${NAME}` MCP placeholders name a secret, they are
none, and they are how a flow should use one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from plait.net.redact import MASK, NO_SECRETS, SecretMask

REDACTED = MASK
SECRET_KEY_RE = re.compile(
    r"(api[_-]?key|private[_-]?key|access[_-]?key|signing[_-]?key|secret|password|passwd|token"
    r"|authorization|credential|cookie)",
    re.I,
)
# References to secrets, not secrets: `{{env.X}}` templates and MCP server `${NAME}` placeholders.
SECRET_REF_RE = re.compile(r"\{\{|\$\{[A-Za-z_][A-Za-z0-9_]*\}")

# Key formats that announce themselves (prefix + enough random characters).
KNOWN_KEY_RE = re.compile(
    r"-----BEGIN[A-Z ]*PRIVATE KEY-----.*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)"
    r"|\b(?:"
    r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"  # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # JWTs
    r")",
    re.S,
)
# `name = "literal"` / `"name": "literal"` / `name: literal` in code or config text.
ASSIGNED_RE = re.compile(
    r"""(?ix)
    (\b[\w.-]*(?:key|token|secret|password|passwd|pwd|credential|auth)[\w.-]*["']?\s*[:=]\s*)
    (["'])([^"'\s]{8,})\2
    """
)
MIN_ENTROPY_BITS = 3.0  # per character; English words stay below, random keys well above


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str) -> bool:
    classes = sum(
        (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value))
    )
    return len(value) >= 16 and classes >= 2 and entropy(value) >= MIN_ENTROPY_BITS


def _mask_assigned(m: re.Match[str]) -> str:
    value = m[3]
    if SECRET_REF_RE.search(value) or not _looks_random(value):
        return m[0]
    return f"{m[1]}{m[2]}{MASK}{m[2]}"


def scrub_text(text: str, mask: SecretMask = NO_SECRETS) -> str:
    """`text` without secrets: values of `mask`, URL credentials, known key formats, random
    literals assigned to credential-like names."""
    out = mask.text(text)
    out = KNOWN_KEY_RE.sub(MASK, out)
    out = ASSIGNED_RE.sub(_mask_assigned, out)
    return text if out == text else out


def scrub_secrets(value: Any, mask: SecretMask = NO_SECRETS) -> Any:
    """`value` (a flow document) with every secret replaced by a marker (see the module
    docstring); `mask` holds the stored secret values to look for. References are kept."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if (
                isinstance(k, str)
                and SECRET_KEY_RE.search(k)
                and isinstance(v, str)
                and v
                and not SECRET_REF_RE.search(v)
            ):
                out[k] = REDACTED
            else:
                out[k] = scrub_secrets(v, mask)
        return out
    if isinstance(value, list):
        return [scrub_secrets(v, mask) for v in value]
    if isinstance(value, str):
        return scrub_text(value, mask)
    return value


__all__ = [
    "REDACTED",
    "SECRET_KEY_RE",
    "SECRET_REF_RE",
    "entropy",
    "scrub_secrets",
    "scrub_text",
]
