from __future__ import annotations

import pytest
from _services import Services


@pytest.fixture
def services(monkeypatch):
    """The fake public services on 127.0.0.1, reachable through the SSRF guard's allowlist."""
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    with Services() as s:
        yield s
