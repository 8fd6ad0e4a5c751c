"""scripts/check_import_cycles.py (run by `make lint`) fails on a cycle, also one closed by an import
inside a function, and passes when the only way back is a TYPE_CHECKING import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_import_cycles.py"


def make_package(root: Path, files: dict[str, str]) -> None:
    pkg = root / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A throwaway package."""\n')
    for name, text in files.items():
        (pkg / name).write_text(text)


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "cyclepkg", "--path", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_cycle_passes(tmp_path: Path) -> None:
    make_package(tmp_path, {"low.py": "X = 1\n", "high.py": "from cyclepkg.low import X\n"})
    done = check(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no import cycles" in done.stdout


def test_a_cycle_through_a_function_import_fails(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {
            "a.py": "from cyclepkg.b import helper\n\nVALUE = 1\n",
            "b.py": "def helper():\n    from cyclepkg.a import VALUE  # dodges the cycle at run time\n\n    return VALUE\n",
        },
    )
    done = check(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "import cycle (2 modules): cyclepkg.a, cyclepkg.b" in done.stdout
    assert "cyclepkg.b -> cyclepkg.a" in done.stdout  # the loop is shown, with the line


def test_a_longer_cycle_is_reported_once(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {
            "a.py": "import cyclepkg.b\n",
            "b.py": "import cyclepkg.c\n",
            "c.py": "import cyclepkg.a\n",
            "d.py": "import cyclepkg.a\n",  # imports into the cycle, is not part of it
        },
    )
    done = check(tmp_path)
    assert done.returncode == 1
    assert "import cycle (3 modules): cyclepkg.a, cyclepkg.b, cyclepkg.c" in done.stdout
    assert "cyclepkg.d" not in done.stdout.split("for example")[0]


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        {
            "a.py": "from cyclepkg.b import helper\n",
            "b.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from cyclepkg.a import helper as h\n\n"
                "def helper():\n    return 1\n"
            ),
        },
    )
    done = check(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
