"""The shape of the package: one `moot` import package, the engine free of the TUI, no import cycles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from moot.core.models.terms import ROLES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"moot": ROOT / "moot", "moot.core": ROOT / "core", "moot.tui": ROOT / "tui",
            "moot.themes": ROOT / "themes"}


def _modules() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name, from the repository's folders."""
    out: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if package == "moot" and parts and parts[0] in ("core", "tui", "themes"):
                continue
            out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports, at any depth of the file (functions included), resolved to
    modules of the package; `importlib.import_module("…")` with a literal counts too."""
    tree = ast.parse(path.read_text("utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package
                for _ in range(node.level - 1):
                    parent = parent.rpartition(".")[0]
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
            add(str(node.args[0].value))
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_module_is_found() -> None:
    assert {"moot.cli", "moot.core.orchestrator", "moot.core.events", "moot.tui.app",
            "moot.tui.screens.debate", "moot.themes"} <= MODULES.keys()


def test_core_never_imports_the_tui() -> None:
    bad = {m: sorted(t for t in deps if t.startswith("moot.tui"))
           for m, deps in GRAPH.items() if m.startswith("moot.core")}
    assert {m: d for m, d in bad.items() if d} == {}
    text = "\n".join(p.read_text("utf-8") for m, p in MODULES.items() if m.startswith("moot.core"))
    assert "moot.tui" not in text and '"tui' not in text and "'tui" not in text


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles() -> None:
    """Over every import, function-level ones included."""
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("package", ["moot.core", "moot.tui"])
def test_rooms_stand_in_floors(package: str) -> None:
    """Drawn a folder (or a top-level module) a room, no two rooms of a package import each other,
    however indirectly: so the structure drawn from the imports stands in floors with no arrow
    running back up (`search/` ↔ `context/`, `human/` ↔ `providers/` and `bench/` ↔ `protocols/`
    once did, through one module each)."""
    def room(name: str) -> str:
        return ".".join(name.split(".")[:3])

    rooms: dict[str, set[str]] = {}
    for name, deps in GRAPH.items():
        if name.startswith(package + "."):
            rooms.setdefault(room(name), set()).update(
                room(d) for d in deps if d.startswith(package + ".") and room(d) != room(name))
    assert _cycles(rooms) == []


def test_core_takes_no_argparse_namespace() -> None:
    for name, path in MODULES.items():
        if name.startswith("moot.core"):
            assert "argparse" not in path.read_text("utf-8"), name


def test_installed_package_outside_the_checkout(tmp_path: Path) -> None:
    """`import moot.core, moot.tui` works from any directory; the bare folder names do not leak."""
    ok = subprocess.run([sys.executable, "-c", "import moot.core, moot.tui, moot.themes; "
                         "import moot.core.orchestrator, moot.tui.app; print(moot.__version__)"],
                        cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    for bare in ("core", "tui", "themes"):
        r = subprocess.run([sys.executable, "-c", f"import {bare}"], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, bare


def test_the_console_script_and_python_m(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "moot"
    for argv in ([str(script), "--version"], [sys.executable, "-m", "moot", "--version"]):
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith("moot 0."), (argv, r.stderr)


def test_package_data_ships_prompts_and_themes() -> None:
    from importlib import resources

    assert resources.files("moot.core").joinpath("prompts", "judge", "synthesize.md").is_file()
    from moot.themes import theme_files

    assert {p.stem for p in theme_files()} >= {"dark", "light", "high-contrast"}


def test_the_built_package_ships_every_data_file(tmp_path: Path) -> None:
    """Build the package as a wheel build does (setuptools `build_py`, from a copy of the sources:
    an editable install maps whole folders and would hide a file missing from package-data), then
    check every data file of core/, tui/ and themes/ is in it, and that the demo provider writes
    from the built package's own phrase banks, read once and only when first needed."""
    import shutil

    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("moot", "core", "tui", "themes"):
        shutil.copytree(ROOT / folder, src / folder, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path / "built"
    build = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                            "--build-lib", str(out)], cwd=src, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    missing = [f"{folder}/{path.relative_to(src / folder)}" for folder in ("core", "tui", "themes")
               for path in (src / folder).rglob("*") if path.is_file() and path.suffix != ".py"
               if not (out / "moot" / folder / path.relative_to(src / folder)).is_file()]
    assert missing == []
    assert (out / "moot" / "core" / "providers" / "demo_phrases.json").is_file()

    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import moot, moot.core.providers.demo as demo\n"
        "from moot.core.providers.base import CallHint\n"
        "from moot.core.providers.demo_phrases import phrase_banks\n"
        "assert moot.__file__.startswith(sys.argv[1]), moot.__file__\n"
        "assert phrase_banks.cache_info().currsize == 0  # not read at import\n"
        "h = CallHint(phase='proposal', role='security', agent_id='security', problem='Design a login service')\n"
        "text = demo.DemoProvider(delay_s=0).write([{'role': 'user', 'content': 'Write a proposal.'}], h)\n"
        "demo.DemoProvider(delay_s=0).write([{'role': 'user', 'content': 'Write it again.'}], h)\n"
        "info = phrase_banks.cache_info()\n"
        "print(info.misses, info.hits > 0, sorted(phrase_banks().roles) == sorted(%r))\n"
        "print(text)\n"
    ) % (list(ROLES),)
    run = subprocess.run([sys.executable, "-c", probe, str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    counts, text = run.stdout.split("\n", 1)
    assert counts == "1 True True"
    from moot.core.providers.base import CallHint
    from moot.core.providers.demo import DemoProvider

    here = DemoProvider(delay_s=0).write([{"role": "user", "content": "Write a proposal."}],
                                         CallHint(phase="proposal", role="security", agent_id="security",
                                                  problem="Design a login service"))
    assert text == here + "\n" and "## Position" in here


@pytest.mark.parametrize("folder", ["core", "tui", "moot"])
def test_type_ignores_say_why(folder: str) -> None:
    """`type: ignore` only with an error code and a reason on the same line."""
    for path in (ROOT / folder).rglob("*.py"):
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if "type: ignore" in line:
                after = line.split("type: ignore", 1)[1]
                assert after.startswith("[") and "#" in after, f"{path}:{n}: {line.strip()}"


def test_every_package_folder_is_in_the_distribution() -> None:
    """A folder of modules missing from pyproject's package list is missing from the wheel
    (editable installs hide it: they map whole folders)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    wanted = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert wanted <= listed, sorted(wanted - listed)


def _absolute_imports_of(path: Path, prefixes: tuple[str, ...]) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith(prefixes) or node.module in {p.rstrip(".") for p in prefixes}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith(prefixes)]
    return found


def test_packages_import_themselves_relatively() -> None:
    """Inside `core/` and `tui/` every import of the package is relative (`from ..events import …`),
    so a reader, an editor without the package installed or a drawing of the imports resolves
    it by path; `moot.core.x` names a file `core/x.py` only after installation. The composition
    root `moot/` may name `moot.core` and `moot.tui` absolutely, but imports itself relatively."""
    bad = []
    for folder in ("core", "tui", "themes"):
        for path in (ROOT / folder).rglob("*.py"):
            bad += _absolute_imports_of(path, ("moot.", "moot"))
    for path in (ROOT / "moot").rglob("*.py"):
        bad += [b for b in _absolute_imports_of(path, ("moot.",))
                if not any(f"moot.{p}" in b for p in ("core", "tui", "themes"))]
        bad += [b for b in _absolute_imports_of(path, ("moot",)) if b.endswith("from moot")]
    assert bad == []




def test_leaves_do_not_reach_up() -> None:
    """Text safety sits below everything: it imports nothing else of moot but the clock and errors;
    nothing in `moot.core` imports the composition root `moot` (its version lives in `core/version.py`)."""
    for name, deps in GRAPH.items():
        if name.startswith("moot.core.safety"):
            assert {d for d in deps if not d.startswith(("moot.core.safety", "moot.core.errors",
                                                          "moot.core.clock"))} == set(), name
        if name.startswith("moot.core"):
            assert not {d for d in deps if d in ("moot", "moot.cli")}, name


def test_nothing_outside_the_providers_asks_a_providers_name() -> None:
    """What a provider can do is asked of its kind (`models/provider_kinds.py`): a comparison with
    a provider's name outside `core/providers/` and `core/human/` would miss a provider a package
    adds through the registry."""
    import re

    names = r"[\"'](?:demo|human|openai|openai-responses)[\"']"
    compare = re.compile(rf"(?:==|!=)\s*{names}|{names}\s*(?:==|!=)|{names}\s+(?:not\s+)?in\b")
    allowed = (ROOT / "core" / "providers", ROOT / "core" / "human", ROOT / "core" / "models" / "provider_kinds.py")
    found = []
    for folder in ("core", "tui", "moot"):
        for path in (ROOT / folder).rglob("*.py"):
            if any(path == a or a in path.parents for a in allowed):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if compare.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []
