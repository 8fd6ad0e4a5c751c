"""Fuzz the running server against its own OpenAPI spec with schemathesis: no input, however
odd, may produce a 5xx, and every 4xx carries the JSON error envelope."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from .conftest import API_KEY  # noqa: E402
from .test_server import Server  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("PLAIT_FUZZ_EXAMPLES", "25"))


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(Path(tmp_path_factory.mktemp("fuzz"))).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def api_schema(fuzz_server: Server):  # type: ignore[no-untyped-def]
    return schemathesis.openapi.from_url(f"{fuzz_server.url}/openapi.json")


def test_no_server_errors(api_schema, fuzz_server: Server) -> None:  # type: ignore[no-untyped-def]
    # schemathesis' pytest plugin does not support pytest 9 yet: drive its strategies with hypothesis.
    failures: list[str] = []
    calls = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case) -> None:  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            if case.query and case.query.get("mode") == "stream":
                case.query["mode"] = "background"
            response = case.call(base_url=fuzz_server.url, headers={"x-api-key": API_KEY}, timeout=15)
            assert response.status_code < 500, (case.method, case.path, response.text)
            if 400 <= response.status_code < 500:
                body = response.json()
                assert set(body) == {"error"} and {"code", "message", "details"} <= set(body["error"]), body

        try:
            check()
        except AssertionError as exc:
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert calls > 50
    assert not failures, "\n".join(failures) + "\n" + fuzz_server.log()[-3000:]
