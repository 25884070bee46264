"""The package's shape (docs/architecture.md): layers that import only downward, no imports
dodging a cycle inside functions, and names of our own (none of the seed system's)."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "rhuber"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
#: The seed system's distributions and import names (renewable-huber 0.7.1 on PyPI).
SEED_NAMES = re.compile(r"renewable[-_.]huber", re.IGNORECASE)


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: the test extra installs import-linter")
    return subprocess.run([str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"),
                           "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root / "python"), "PATH": "/usr/bin:/bin"},
                          timeout=300, check=False)


def test_the_layers_contract_is_kept():
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(("module", "upward"), [
    ("core/huber.py", "from ..estimator import RenewableHuberRegressor"),
    ("engines/workload.py", "from ..tuner import advisor"),
    ("tuner/store.py", "from ..lab import collect"),
])
def test_an_upward_import_breaks_the_contract(tmp_path, module, upward):
    shutil.copytree(PACKAGE, tmp_path / "python" / "rhuber",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "python" / "rhuber" / module
    target.write_text(target.read_text() + f"\n{upward}  # noqa\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0, run.stdout
    assert "BROKEN" in run.stdout and "is not allowed to import" in run.stdout


def _function_imports(path: Path) -> list[str]:
    """Imports of our own modules inside a function body (relative, or of rhuber)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            own = (isinstance(inner, ast.ImportFrom)
                   and (inner.level > 0 or (inner.module or "").split(".")[0] == "rhuber")) or (
                isinstance(inner, ast.Import)
                and any(alias.name.split(".")[0] == "rhuber" for alias in inner.names))
            if own:
                found.append(f"{path.relative_to(PACKAGE)}:{inner.lineno}")
    return found


def test_no_import_of_our_own_modules_inside_a_function():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _function_imports(path)]
    assert found == []


def _requirements(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    names = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        names.extend(extra)
    metadata = tomllib.loads(pyproject.read_text()).get("tool", {}).get("scikit-build", {})
    names.extend(metadata.get("metadata", {}).get("dependencies", {}).get("result", []))
    return names


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "python-cpu/pyproject.toml",
                                       "python-cuda/pyproject.toml"])
def test_no_dependency_names_a_seed_distribution(pyproject):
    path = ROOT / pyproject
    name = tomllib.loads(path.read_text())["project"]["name"]
    assert name.startswith("rhuber") and not SEED_NAMES.search(name)
    requirements = _requirements(path)
    assert requirements, f"{pyproject} lists no requirements: the parser missed them"
    assert [r for r in requirements if SEED_NAMES.search(r)] == []


def test_the_seed_package_is_not_importable_here():
    # The seed system is run beside ours from a venv of its own (make seed-venv), never here.
    assert importlib.util.find_spec("renewable_huber") is None
    assert importlib.util.find_spec("_renewable_huber_native_cpu") is None
