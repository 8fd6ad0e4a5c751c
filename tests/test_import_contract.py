"""The import contract in pyproject.toml (`lint-imports`, run by `make lint`) fails when its rules
are broken on purpose: checked on a copy of src/plait with one bad import added."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_copy(tmp_path: Path, module: str, line: str, contract: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "plait", src / "plait", ignore=shutil.ignore_patterns("web_dist", "__pycache__")
    )
    path = src / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + f"\n\n{line}\n", encoding="utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml"), "--contract", contract],
        cwd=tmp_path,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("plait.nodes.base", "import plait.engine.runner", "layers"),  # a lower layer imports a higher one
        ("plait.llm.chat", "import plait.tools.base", "layers"),  # independent siblings
        ("plait.store.db", "from plait.engine import Event", "store-uses-engine-contracts-only"),
        (
            "plait.expr.refs",
            "def _inside_a_function():\n    import fastapi",
            "lower-layers-no-web-sql-queue",
        ),
    ],
)
def test_a_broken_rule_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    done = lint_copy(tmp_path, module, line, contract)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout
