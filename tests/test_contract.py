"""The package contract as tests: who may import whom, what a package root exports, and that a new package made
by the scaffold keeps the contract. Each check is a function over a source tree or a module, so a test can run it
on a deliberately broken package and see it fail."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import itertools
import os
import pkgutil
import re
import sys
import tomllib
import types
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from iclr25.shared.paper import discover_papers

ROOT = Path(__file__).resolve().parents[1]
SLUGS = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
# The harness around a paper's method: these modules may use Lightning, wandb, the CLI and the run layer even when
# the public API reaches them. Method code is every other module the public API (the package __init__'s imports)
# reaches, directly or through the package's own imports: importing a public name never loads the harness.
HARNESS = {
    "__init__", "__main__", "cli", "config", "reproduce", "experiments", "claims", "figures", "lit", "training", "train"
}  # fmt: skip
# The shape of a package (issue "the house"): the plan (`reproduce`) stays short and is never the biggest room.
REPRODUCE_MAX_LINES = 250
# The harness rooms of a package; every other module is its method (the paper's method, data and training). The method
# is the biggest room: no harness room is as large as the largest method module.
HARNESS_ROOMS = ("__init__.py", "__main__.py", "cli.py", "config.py", "reproduce.py", "experiments.py", "claims.py",
                 "smoke.py")  # fmt: skip
SHAPE_FILES = ("__init__.py", "paper.toml", "config.py", "experiments.py", "claims.py", "reproduce.py", "cli.py")
NOT_IN_METHOD_CODE = (
    "lightning",
    "pytorch_lightning",
    "wandb",
    "argparse",
    "iclr25.shared.cli",
    "iclr25.shared.run",
    "iclr25.shared.logging",
    "iclr25.shared.trainer",
)


def _imports(path: Path, package: str) -> list[str]:
    """Absolute names of the modules a source file imports (relative imports resolved against `package`)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names += [f"{base}.{alias.name}" for alias in node.names] if base.startswith("iclr25") else [base]
    return names


def _owner(name: str) -> str | None:
    """`eci_conformal` for `iclr25.eci_conformal.methods`, None outside the iclr25 namespace."""
    parts = name.split(".")
    return parts[1] if parts[0] == "iclr25" and len(parts) > 1 else None


def _method_modules(package: Path, imports: dict[Path, list[str]]) -> list[Path]:
    """The package's modules its public API reaches (from `__init__`, through its own imports), harness excluded."""
    prefix = f"iclr25.{package.name}."
    by_name = {".".join(p.relative_to(package).with_suffix("").parts): p for p in imports}
    reached: set[Path] = set()
    todo = [package / "__init__.py"] if package.joinpath("__init__.py").is_file() else []
    while todo:
        for name in imports[todo.pop()]:
            parts = name.removeprefix(prefix).split(".") if name.startswith(prefix) else []
            # "iclr25.<pkg>.mod.attr" or "iclr25.<pkg>.mod": the longest prefix that is one of the package's modules
            module = next(
                (by_name[".".join(parts[:k])] for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in by_name), None
            )
            if module is not None and module not in reached and module.stem not in HARNESS:
                reached.add(module)
                todo.append(module)
    return sorted(reached)


def import_violations(root: Path) -> list[str]:
    """Packages importing each other, shared importing a paper, method modules importing the harness."""
    found = []
    for source in sorted((root / "shared" / "src" / "iclr25" / "shared").rglob("*.py")):
        found += [
            f"shared/{source.name} imports {name}"
            for name in _imports(source, "iclr25.shared")
            if _owner(name) not in (None, "shared")
        ]
    for package in sorted((root / "packages").glob("*/src/iclr25/*")):
        own = package.name
        imports = {source: _imports(source, f"iclr25.{own}") for source in sorted(package.rglob("*.py"))}
        for source, names in imports.items():
            where = f"{own}/{source.relative_to(package)}"
            found += [f"{where} imports {n}" for n in names if _owner(n) not in (None, own, "shared")]
        banned = (
            *NOT_IN_METHOD_CODE,
            *(f"iclr25.{own}.{harness}" for harness in ("cli", "reproduce", "experiments", "claims")),
        )
        for source in _method_modules(package, imports):
            found += [
                f"{own}/{source.relative_to(package)} (method code) imports {n}"
                for n in imports[source]
                if any(n == b or n.startswith(b + ".") for b in banned)
            ]
    return found


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def shape_violations(package: Path) -> list[str]:
    """A package's source folder (`src/iclr25/<module>`) against the house shape: the files of the contract are
    there; `claims.py` defines `declared(config)`; only `claims.py` builds claims; `reproduce.py` is at most
    REPRODUCE_MAX_LINES lines and not the package's largest module; no harness room is as large as the largest method
    module."""
    own = package.name
    found = [f"{own} has no {name}" for name in SHAPE_FILES if not (package / name).is_file()]
    claims = package / "claims.py"
    if claims.is_file():
        tree = ast.parse(claims.read_text(encoding="utf-8"))
        if not any(isinstance(node, ast.FunctionDef) and node.name == "declared" for node in tree.body):
            found.append(f"{own}/claims.py defines no declared(config)")
    for source in sorted(package.rglob("*.py")):
        if source.name == "claims.py":
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Claim":
                found.append(f"{own}/{source.relative_to(package)} builds a Claim (claims are declared in claims.py)")
                break
    reproduce = package / "reproduce.py"
    if reproduce.is_file():
        sizes = {source: _lines(source) for source in package.rglob("*.py")}
        if sizes[reproduce] > REPRODUCE_MAX_LINES:
            found.append(
                f"{own}/reproduce.py has {sizes[reproduce]} lines (at most {REPRODUCE_MAX_LINES}: the plan only)"
            )
        largest = max(sizes, key=lambda source: (sizes[source], source.name != "reproduce.py"))
        if largest == reproduce:
            found.append(f"{own}/reproduce.py is the package's largest module ({sizes[reproduce]} lines)")
        method = {source: n for source, n in sizes.items() if source.name not in HARNESS_ROOMS}
        biggest = max(method, key=lambda source: (method[source], source.name), default=None)
        found += [
            f"{own}/{source.relative_to(package)} ({n} lines) is not smaller than the method's largest module, "
            f"{biggest.relative_to(package)} ({method[biggest]} lines)"
            for source, n in sorted(sizes.items())
            if biggest is not None and source.name in HARNESS_ROOMS and n >= method[biggest]
        ]
    return found


def claims_violations(module_name: str) -> list[str]:
    """`declared(config)` of a package's claims module, called with every preset: a non-empty list of `Declared`
    with unique names; a claim compared with a number of the paper says where the paper gives it (`source`)."""
    from iclr25.shared.claims import Declared

    claims = importlib.import_module(f"{module_name}.claims")
    presets = importlib.import_module(f"{module_name}.config").PRESETS
    found = []
    for scale, config in presets.items():
        declared = claims.declared(config)
        if not declared or not all(isinstance(d, Declared) for d in declared):
            found.append(f"{module_name}.claims.declared({scale}) is not a non-empty list of Declared")
            continue
        found += [
            f"{module_name}: claim {d.name!r} compares with the paper's number {d.paper!r} but names no source"
            for d in declared
            if isinstance(d.paper, int | float) and not isinstance(d.paper, bool) and not d.source.strip()
        ]
        names = [d.name for d in declared]
        found += [
            f"{module_name}: claim {n!r} declared twice for {scale}" for n in sorted(set(names)) if names.count(n) > 1
        ]
    return found


def export_violations(module_name: str) -> list[str]:
    """Names in a package's `__all__` that are missing, lack a docstring, or are modules once every submodule is
    imported (a submodule named like a public name shadows it: `from pkg import name` then gives the module)."""
    module = importlib.import_module(module_name)
    for info in pkgutil.iter_modules(getattr(module, "__path__", []), prefix=f"{module_name}."):
        if info.name.rsplit(".", 1)[1] not in ("cli", "__main__"):
            importlib.import_module(info.name)
    found = []
    for name in getattr(module, "__all__", []):
        try:
            obj = getattr(module, name)
        except (AttributeError, ImportError):
            found.append(f"{module_name}.{name} is in __all__ but does not import")
            continue
        if isinstance(obj, types.ModuleType):
            found.append(f"{module_name}.{name} is a module, not the object __all__ promises")
        elif (inspect.isfunction(obj) or inspect.isclass(obj)) and not inspect.getdoc(obj):
            found.append(f"{module_name}.{name} has no docstring")
    return found


def config_violations(module_name: str) -> list[str]:
    """Config dataclasses that do not check every field: each dataclass a `config` module defines must be
    `Validated`, every field must declare a constraint, and every field must refuse a value its constraints refuse
    (set on each preset of that class, or on the defaults), with an error that names the field."""
    from iclr25.shared.validate import Validated, field_constraints

    module = importlib.import_module(module_name)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__module__ == module_name
    ]
    found = []
    for cls in classes:
        where = f"{module_name}.{cls.__name__}"
        if not issubclass(cls, Validated):
            found.append(f"{where} is not a Validated dataclass")
            continue
        presets = [v for v in getattr(module, "PRESETS", {}).values() if type(v) is cls] or [cls()]
        for name, rules in field_constraints(cls).items():
            if not rules:
                found.append(f"{where}.{name} declares no constraint")
            for rule, preset in itertools.product(rules, presets):
                bad = rule.refused(getattr(preset, name))
                try:
                    dataclasses.replace(preset, **{name: bad})
                except ValueError as e:
                    if name not in str(e):
                        found.append(f"{where}.{name}={bad!r} is refused, but the error does not name it: {e}")
                else:
                    found.append(f"{where}.{name}={bad!r} is accepted, though {rule.describe()} refuses it")
    return found


def _distribution(requirement: str) -> str:
    """The normalised distribution name of a requirement: 'scikit-learn' for 'scikit_learn[x]>=1.4'."""
    name = re.match(r"[A-Za-z0-9_.\-]+", requirement)
    return re.sub(r"[-_.]+", "-", name.group(0) if name else requirement).lower()


def _extras(requirement: str) -> set[str]:
    """The extras a requirement asks for: {'torch'} for 'iclr25-shared[torch]'."""
    asked = re.search(r"\[([^\]]*)\]", requirement)
    return {e.strip() for e in asked.group(1).split(",") if e.strip()} if asked else set()


def _runtime_imports(source: Path) -> dict[str, bool]:
    """Top-level third-party modules a file imports -> whether the file guards one of those imports (inside a `try`
    whose handlers catch ImportError, so a missing module gets the package's own message, or behind
    `pytest.importorskip`): such a module is optional."""
    found: dict[str, bool] = {}

    def visit(node: ast.AST, optional: bool) -> None:
        if isinstance(node, ast.Try):
            caught = {getattr(h.type, "id", None) for h in node.handlers} | {
                getattr(e, "id", None) for h in node.handlers if isinstance(h.type, ast.Tuple) for e in h.type.elts
            }
            guarded = optional or bool(caught & {"ImportError", "ModuleNotFoundError"})
            for child in node.body:
                visit(child, guarded)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, optional)
            return
        names = []
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):  # a test that skips without the module
            found[str(node.args[0].value).split(".")[0]] = True
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("iclr25", "__future__"):
                found[top] = found.get(top, False) or optional
        for child in ast.iter_child_nodes(node):
            visit(child, optional)

    visit(ast.parse(source.read_text(), filename=str(source)), False)
    return found


def _imported(folder: Path) -> dict[str, bool]:
    """Top-level third-party modules the files below `folder` import -> whether one of them guards the import."""
    found: dict[str, bool] = {}
    for source in sorted(folder.rglob("*.py")):
        for top, optional in _runtime_imports(source).items():
            found[top] = found.get(top, False) or optional
    return found


def dependency_violations(package: Path, shared: Path, modules: dict[str, list[str]] | None = None) -> list[str]:
    """A package asks for what it imports, and only that. Every third-party module its source imports must come
    from its own dependencies or extras, a shared extra it asks for, or shared's own dependencies (numpy, pyyaml,
    matplotlib, tqdm), unless the import is optional (`try: ... except ImportError`); every dependency and shared
    extra it asks for must be imported; its tests may import besides only what its dev group holds (so
    `uv run --package <its dist> pytest packages/<slug>` runs). `modules` maps a module to its distributions
    (default: the installed ones)."""
    modules = packages_distributions() if modules is None else modules
    pyproject = tomllib.loads((package / "pyproject.toml").read_text())
    project, shared_project = pyproject["project"], tomllib.loads((shared / "pyproject.toml").read_text())["project"]
    shared_extras = {
        name: {_distribution(r) for r in reqs} for name, reqs in shared_project["optional-dependencies"].items()
    }
    asked = {e for r in project.get("dependencies", []) if _distribution(r) == "iclr25-shared" for e in _extras(r)}
    own = {_distribution(r) for r in project.get("dependencies", []) if _distribution(r) != "iclr25-shared"}
    extras = {_distribution(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    provided = own | extras | {_distribution(r) for r in shared_project["dependencies"]}
    provided |= set().union(*(shared_extras.get(e, set()) for e in asked))
    dev = {_distribution(r) for r in pyproject.get("dependency-groups", {}).get("dev", []) if isinstance(r, str)}

    def dists(module: str) -> set[str]:
        return {_distribution(d) for d in modules.get(module, [])}

    imported = _imported(package / "src")
    used = set().union(*map(dists, imported))
    found = [
        f"{package.name} imports {top}, which none of its dependencies provides"
        for top, optional in sorted(imported.items())
        if not optional and not dists(top) & provided
    ]
    found += [f"{package.name} depends on {d} but never imports it" for d in sorted(own - used)]
    found += [
        f"{package.name} asks for iclr25-shared[{e}] but never imports {e}"
        for e in sorted(asked)
        if not shared_extras.get(e, set()) & used
    ]
    found += [
        f"{package.name}'s tests import {top}, which neither its dependencies nor its dev group provide"
        for top, optional in sorted(_imported(package / "tests").items())
        if not optional and not dists(top) & (provided | dev)
    ]
    return found


def test_imports_keep_the_layers_apart() -> None:
    assert import_violations(ROOT) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_public_name_imports_from_the_package_root(slug: str) -> None:
    assert export_violations("iclr25." + slug.replace("-", "_")) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_package_has_the_house_shape(slug: str) -> None:
    package = ROOT / "packages" / slug / "src" / "iclr25" / slug.replace("-", "_")
    assert shape_violations(package) == []
    assert claims_violations("iclr25." + slug.replace("-", "_")) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_config_field_is_checked(slug: str) -> None:
    assert config_violations(f"iclr25.{slug.replace('-', '_')}.config") == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_package_asks_for_what_it_imports(slug: str) -> None:
    assert dependency_violations(ROOT / "packages" / slug, ROOT / "shared") == []


def test_shared_exports_are_what_they_say() -> None:
    assert export_violations("iclr25.shared") == []


def test_every_package_is_discovered_as_a_paper() -> None:
    assert sorted(discover_papers()) == SLUGS


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checks_fail_on_a_deliberately_broken_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "shared/src/iclr25/shared/util.py", "from iclr25.alpha import thing\n")
    alpha = tmp_path / "packages/alpha/src/iclr25/alpha"
    _write(alpha / "__init__.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .method import fit\n")
    _write(alpha / "method.py", "import lightning\nfrom iclr25.beta import x\nfrom iclr25.alpha.model import net\n")
    _write(alpha / "cli.py", "from iclr25.shared.cli import guarded\n")
    _write(alpha / "model.py", "from .cli import main\nfrom ..beta import y\n")  # reached through method.py
    _write(alpha / "bench.py", "import argparse\nfrom .reproduce import run\n")  # a driver no public name reaches
    found = import_violations(tmp_path)
    assert "shared/util.py imports iclr25.alpha.thing" in found
    assert "alpha/method.py imports iclr25.beta.x" in found
    assert "alpha/method.py (method code) imports lightning" in found
    assert "alpha/model.py (method code) imports iclr25.alpha.cli.main" in found
    assert "alpha/model.py imports iclr25.beta.y" in found
    assert not [f for f in found if f.startswith(("alpha/cli.py", "alpha/bench.py"))]  # the harness may use the CLI
    _write(alpha / "reproduce.py", "from iclr25.shared.results import Claim\n" + "x = Claim('a')\n" * 300)
    _write(alpha / "claims.py", "def claims(m, cfg):\n    return []\n")
    assert shape_violations(alpha) == [
        "alpha has no paper.toml",
        "alpha has no config.py",
        "alpha has no experiments.py",
        "alpha/claims.py defines no declared(config)",
        "alpha/reproduce.py builds a Claim (claims are declared in claims.py)",
        "alpha/reproduce.py has 301 lines (at most 250: the plan only)",
        "alpha/reproduce.py is the package's largest module (301 lines)",
        "alpha/__init__.py (3 lines) is not smaller than the method's largest module, method.py (3 lines)",
        "alpha/reproduce.py (301 lines) is not smaller than the method's largest module, method.py (3 lines)",
    ]
    claims_pkg = tmp_path / "claims_pkg"
    _write(claims_pkg / "__init__.py", "")
    _write(claims_pkg / "config.py", "PRESETS = {'quick': 1, 'ci': 0}\n")
    _write(
        claims_pkg / "claims.py",
        "from iclr25.shared.claims import AtLeast, Declared\n"
        "def declared(config):\n"
        "    if not config:\n"
        "        return []\n"
        "    one = Declared('acc', 's', metric='acc', check=AtLeast(0.9), paper=0.93)\n"  # no source
        "    return [one, Declared('acc', 's', metric='x', check=AtLeast(0), paper='n/a')]\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert claims_violations("claims_pkg") == [
        "claims_pkg: claim 'acc' compares with the paper's number 0.93 but names no source",
        "claims_pkg: claim 'acc' declared twice for quick",
        "claims_pkg.claims.declared(ci) is not a non-empty list of Declared",
    ]
    _write(alpha / "experiments.py", "from iclr25.alpha.claims import declared\n")  # method code may not reach it
    _write(
        alpha / "method.py",
        "import lightning\nfrom iclr25.beta import x\nfrom iclr25.alpha.experiments import measure\n",
    )
    assert "alpha/method.py (method code) imports iclr25.alpha.experiments.measure" in import_violations(tmp_path)

    package = tmp_path / "broken_pkg"
    _write(
        package / "__init__.py",
        "import importlib\n"
        '__all__ = ["sort", "missing", "undocumented"]\n'
        "def __getattr__(name):  # hands out submodules: 'sort' is shadowed by its module\n"
        '    return importlib.import_module(f"broken_pkg.{name}")\n'
        "def undocumented():\n    pass\n",
    )
    _write(package / "sort.py", '"""A submodule named like the export."""\n\ndef sort(x):\n    """Sort."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    found = export_violations("broken_pkg")
    assert "broken_pkg.missing is in __all__ but does not import" in found
    assert "broken_pkg.undocumented has no docstring" in found
    assert "broken_pkg.sort is a module, not the object __all__ promises" in found
    _write(
        package / "config.py",
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from iclr25.shared.validate import PositiveFloat, PositiveInt, Validated\n"
        "@dataclass(frozen=True)\n"
        "class Config(Validated):\n"
        "    steps: PositiveInt = 10\n"
        "    lr: PositiveFloat = 0.1\n"
        "    seed: int = 0\n"
        "    def __post_init__(self):  # forgets super().__post_init__(): nothing is checked\n"
        "        pass\n"
        "@dataclass(frozen=True)\n"
        "class Plain:\n"
        "    steps: int = 10\n",
    )
    found = config_violations("broken_pkg.config")
    assert "broken_pkg.config.Plain is not a Validated dataclass" in found
    assert "broken_pkg.config.Config.seed declares no constraint" in found
    assert "broken_pkg.config.Config.steps=0 is accepted, though integer >= 1 refuses it" in found
    assert "broken_pkg.config.Config.lr=0.0 is accepted, though > 0 refuses it" in found
    for name in [m for m in sys.modules if m.startswith("broken_pkg")]:
        monkeypatch.delitem(sys.modules, name)

    alpha_root = tmp_path / "packages" / "alpha"
    _write(
        alpha_root / "pyproject.toml",
        '[project]\nname = "iclr25-alpha"\ndependencies = ["iclr25-shared[torch,wandb]", "pandas>=2"]\n'
        '[dependency-groups]\ndev = ["pytest>=8.3"]\n',
    )
    _write(alpha / "io.py", "try:\n    import h5py\nexcept ImportError:\n    h5py = None\nimport scipy.stats\n")
    _write(alpha_root / "tests/test_io.py", "import pytest\nimport sklearn\nzarr = pytest.importorskip('zarr')\n")
    modules = {"scipy": ["scipy"], "h5py": ["h5py"], "lightning": ["lightning"], "torch": ["torch"]}
    modules |= {"pytest": ["pytest"], "sklearn": ["scikit-learn"], "zarr": ["zarr"]}
    found = dependency_violations(alpha_root, ROOT / "shared", modules)
    assert found == [
        "alpha imports lightning, which none of its dependencies provides",  # [torch] does not bring Lightning
        "alpha imports scipy, which none of its dependencies provides",
        "alpha depends on pandas but never imports it",
        "alpha asks for iclr25-shared[torch] but never imports torch",
        "alpha asks for iclr25-shared[wandb] but never imports wandb",
        "alpha's tests import sklearn, which neither its dependencies nor its dev group provide",
    ]  # h5py and zarr are optional: the code guards its import, the test skips without it


def test_the_scaffold_makes_a_package_that_keeps_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from iclr25.shared import cli

    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["new", "demo-paper", "--title", "A Demo Paper"]) == 0
    assert cli.main(["new", "demo-paper", "--title", "Again"]) == 2  # never over an existing package
    assert cli.main(["new", "Bad_Slug", "--title", "x"]) == 2
    root = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    dev = [r for r in root["dependency-groups"]["dev"] if r.startswith("iclr25-") and "shared" not in r]
    assert "iclr25-demo-paper" in dev and dev == sorted(dev)
    assert root["tool"]["uv"]["sources"]["iclr25-demo-paper"] == {"workspace": True}
    package = tmp_path / "packages" / "demo-paper"
    assert import_violations(tmp_path) == []
    assert dependency_violations(package, ROOT / "shared") == []
    bin_dir = Path(sys.executable).parent
    for check in (["check"], ["format", "--check"]):
        lint = subprocess.run([str(bin_dir / "ruff"), *check, "--quiet", str(package)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    monkeypatch.syspath_prepend(str(package / "src"))
    assert export_violations("iclr25.demo_paper") == []
    assert config_violations("iclr25.demo_paper.config") == []
    assert shape_violations(package / "src" / "iclr25" / "demo_paper") == []
    assert claims_violations("iclr25.demo_paper") == []
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(package / "tests"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--import-mode=importlib",
            "-W",
            "ignore::pytest.PytestUnknownMarkWarning",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(package / "src")},
        cwd=tmp_path,
        timeout=300,
    )
    assert tests.returncode == 0 and " passed" in tests.stdout, tests.stdout[-2000:] + tests.stderr[-2000:]
    for name in [m for m in sys.modules if m.startswith("iclr25.demo_paper")]:
        monkeypatch.delitem(sys.modules, name)
