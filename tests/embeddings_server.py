"""A real OpenAI-compatible embeddings server on loopback with deterministic vectors.

`POST /v1/embeddings {"model", "input": str | [str]}` answers OpenAI's shape. A text's vector is
a hashed bag of its words (256 dimensions, crude stems, L2-normalised), after mapping a few synonyms onto one
word, so "reimbursement" lands where "refund" does: a query can then find a chunk by meaning that
full-text search cannot find by its words. Counts requests and records the last Authorization
header; `fail=True` answers 500.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMS = 256
SYNONYMS = {"reimbursement": "refund", "reimbursed": "refund", "money": "refund", "back": "refund"}


def vector(text: str) -> list[float]:
    v = [0.0] * DIMS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        word = SYNONYMS.get(word, word)
        for suffix in ("ed", "s"):
            if len(word) > 5 and word.endswith(suffix):
                word = word[: -len(suffix)]
        if len(word) < 3:
            continue
        v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingsServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests += 1
        self.server.authorization = self.headers.get("Authorization")
        if self.path != "/v1/embeddings" or self.server.fail:
            data = b'{"error": {"message": "no"}}'
            self.send_response(500 if self.server.fail else 404)
        else:
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = json.dumps(
                {
                    "object": "list",
                    "model": body.get("model"),
                    "data": [
                        {"object": "embedding", "index": i, "embedding": vector(t)}
                        for i, t in enumerate(texts)
                    ],
                }
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = 0
        self.authorization: str | None = None
        self.fail = False
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"


def embeddings_server() -> Iterator[EmbeddingsServer]:
    """Generator for a fixture: `yield from embeddings_server()`."""
    server = EmbeddingsServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
