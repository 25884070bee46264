"""The package's shape (docs/architecture.md): layers that import only downward, no imports
dodging a cycle inside functions, and names of our own (none of the seed system's)."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers import NATIVE_CPU, require_module

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


#: What ``import rhuber`` must not load (docs/architecture.md, "Imports"): the tuner's store,
#: models and advisor, the lab, Dask, the CLI, the table libraries, the native engines (loaded
#: by their first use). Modules scikit-learn itself imports are not ours to keep out.
NOT_IMPORTED = (
    "rhuber.tuner.advisor", "rhuber.tuner.models", "rhuber.tuner.model_files",
    "rhuber.tuner.online", "rhuber.tuner.local", "rhuber.tuner.store", "rhuber.tuner.hardware",
    "rhuber.tuner.probes", "rhuber.tuner.features", "rhuber.tuner.rule_search",
    "rhuber.tuner.labels", "rhuber.lab",
    "rhuber.cli", "rhuber.dask", "rhuber.io", "rhuber._native.cuda", "rhuber.engines.cuda",
    "librhuber_cpu",
    "librh_cuda",
    "sqlite3", "pandas", "polars", "pyarrow", "dask", "distributed", "torch", "cupy",
    "safetensors", "threadpoolctl", "matplotlib", "tqdm",
)

#: The imports of our own modules made inside a function (file: module): each loads, on the
#: first call that needs it, a module that ``import rhuber`` must not load; none dodges a cycle.
LAZY_IMPORTS = {
    "__init__.py": ("rhuber.lab.precision",),
    "tuner/__init__.py": ("rhuber.tuner.online",),
    "tuner/session.py": ("rhuber.tuner.advisor",),
    "tuner/hardware.py": ("rhuber.tuner.probes",),
    "tuner/rules.py": ("rhuber.tuner.hardware",),
    "estimator.py": ("rhuber.tuner.online",),
    "_native/__init__.py": ("rhuber._native.cuda",),
    "engines/__init__.py": ("rhuber.engines.cuda",),
}


def _absolute(path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The modules an import statement in ``path`` names, as absolute names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = ["rhuber", *path.relative_to(PACKAGE).parent.parts]
    base = package[:len(package) - node.level + 1] if node.level else []
    stem = ".".join([*base, *([node.module] if node.module else [])])
    return [f"{stem}.{alias.name}" if _is_module(f"{stem}.{alias.name}") else stem
            for alias in node.names]


def _is_module(name: str) -> bool:
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return name.startswith("rhuber.") and (path.is_dir() or path.with_suffix(".py").exists())


def _function_imports(path: Path) -> list[tuple[str, str]]:
    """Imports of our own modules inside a function body (relative, or of rhuber): (where,
    the module imported)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom):
                found.extend((f"{path.relative_to(PACKAGE)}:{inner.lineno}", module)
                             for module in _absolute(path, inner)
                             if module.split(".")[0] == "rhuber")
    return found


def _top_level_imports(module: str) -> set[str]:
    """The modules of ours that ``module``'s file imports outside functions."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(), str(path))
    return {name for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
            for name in _absolute(path, node) if name.split(".")[0] == "rhuber"}


def test_imports_of_our_own_modules_inside_a_function_only_defer_heavy_ones():
    found = [(where, module) for path in sorted(PACKAGE.rglob("*.py"))
             for where, module in _function_imports(path)]
    unexpected = [f"{where} imports {module}" for where, module in found
                  if module not in LAZY_IMPORTS.get(where.split(":")[0], ())]
    assert unexpected == []
    assert {(where.split(":")[0], module) for where, module in found} == {
        (where, module) for where, modules in LAZY_IMPORTS.items() for module in modules}
    for where, modules in LAZY_IMPORTS.items():
        for module in modules:
            assert module.startswith(NOT_IMPORTED), f"{where}: {module} may be imported at the top"
            importer = "rhuber." + where.removesuffix(".py").removesuffix("/__init__").replace(
                "/", ".")
            assert importer not in _top_level_imports(module), f"{where} dodges a cycle"


def _imported_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after ``code`` that ``import sklearn.base`` alone
    did not load, and the native libraries it loaded (named "librhuber_cpu", "librh_cuda":
    rhuber._native opens them on first use)."""
    script = ("import json, sys\nimport sklearn.base\nbefore = set(sys.modules)\n"
              f"{code}\nnew = set(sys.modules) - before\n"
              "for name, lib in (('cpu', 'librhuber_cpu'), ('cuda', 'librh_cuda')):\n"
              "    binding = sys.modules.get('rhuber._native.' + name)\n"
              "    if binding is not None and binding.LIB is not None:\n"
              "        new.add(lib)\n"
              "print(json.dumps(sorted(new)))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_import_rhuber_loads_no_heavy_module():
    new = _imported_after("import rhuber")
    assert "rhuber.estimator" in new
    assert [m for m in new if m.startswith(NOT_IMPORTED)] == []


def test_import_rhuber_starts_with_scikit_learn():
    """``import rhuber`` imports sklearn.base before any module of ours (and NumPy): reached from
    inside our modules instead, the same modules cost a process ~25 ms more CPU (experiments.jsonl,
    "import-rhuber-sklearn-first")."""
    script = ("import sys\norder = []\nclass Spy:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        order.append(name)\nsys.meta_path.insert(0, Spy())\nimport rhuber\n"
              "ours = [m for m in order if m.startswith('rhuber.')]\n"
              "print(order.index('sklearn.base') < order.index(ours[0]), "
              "order.index('sklearn') < order.index('numpy'))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"]


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_a_first_fit_with_a_backend_set_loads_no_tuner_or_lab(backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    new = _imported_after(
        "import numpy as np\nfrom rhuber import RenewableHuberRegressor\n"
        "X = np.random.default_rng(0).normal(size=(256, 4))\n"
        f"RenewableHuberRegressor(backend={backend!r}).partial_fit(X, X @ np.ones(4))")
    engine = "librhuber_cpu" if backend == "native_cpu" else "(none)"
    assert [m for m in new if m.startswith(NOT_IMPORTED) and not m.startswith(engine)] == []


#: What a stream on the rule's plan needs of the tuner beyond ``import rhuber`` (which imports the
#: rule's module: every stream of the default backend reads it): where some machine has local
#: models, this machine's kept identity (to find a calibrated machine's own rule).
RULE_PATH = {"fresh cache": (), "calibrated machine": ("rhuber.tuner.hardware",)}


@pytest.fixture(params=["fresh cache", "calibrated machine"])
def cache(request, tmp_path, monkeypatch):
    """An empty cache directory, or one with this machine's identity kept and local models (only
    their presence counts) with a rule of their own: the rule is then read from them."""
    monkeypatch.setenv("RHUBER_CACHE_DIR", str(tmp_path))
    if request.param == "calibrated machine":
        from rhuber.tuner import hardware, paths, rules

        local = paths.models_dir(hardware.identified().hardware_id)
        local.mkdir(parents=True)
        for name in paths.MODEL_FILES.values():
            (local / name).write_bytes(b"")
        rules.save(rules.Rule(None, 1 << 40, "full", 1024), local)
    return request.param


def test_a_first_auto_fit_loads_the_rule_but_no_model_store_probe_or_cuda(cache):
    require_module(*NATIVE_CPU)
    new = _imported_after(
        "import numpy as np\nfrom rhuber import RenewableHuberRegressor\n"
        "X = np.random.default_rng(0).normal(size=(4096, 16))\n"
        "est = RenewableHuberRegressor().partial_fit(X, X @ np.ones(16))\n"
        "print(est.plan_.plan)")
    if cache == "calibrated machine":  # the machine's own rule was looked up
        assert "rhuber.tuner.hardware" in new
    heavy = [m for m in new if m.startswith(NOT_IMPORTED)
             and not m.startswith((*RULE_PATH[cache], "librhuber_cpu"))]
    assert heavy == []


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
