"""The shape of the code stays livable: small modules, small classes, no import cycles.

Limits (issue 29, "Done means"): no module under `lsp_bridge/` or `tray/` over 600 lines, no class over
350 lines, no import cycle between modules. Each test names every offender, so a failure is a to-do list.

Which imports count for the cycle check: all of them -- module-level, inside functions (a lazy import is
still a dependency, only a hidden one) and under `if TYPE_CHECKING:` (a cycle through a type is a cycle of
concepts; break it with a Protocol or by moving the shared type down). grimp, which import-linter is built
on, reads the imports; a package's `__init__` counts as its own module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lsp_bridge", "tray")
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 350


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _graph(packages: tuple[str, ...]) -> grimp.ImportGraph:
    # cache_dir=None: no .grimp_cache left in the work tree
    return grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)


def _import_cycles(packages: tuple[str, ...] = PACKAGES) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted, in a stable order."""
    graph = _graph(packages)
    modules = sorted(graph.modules)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module) & graph.modules) for module in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative, so a long chain of imports cannot hit the recursion limit
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return sorted(cycles)


def _cycle_edges(graph: grimp.ImportGraph, cycle: list[str]) -> list[str]:
    members = set(cycle)
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            where = sorted({d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)})
            lines.append(f"    {importer} -> {imported} (line {', '.join(map(str, where))})")
    return lines


def test_no_module_over_600_lines() -> None:
    over = [(_name(path), n) for path in _sources() if (n := _line_count(path)) > MAX_MODULE_LINES]
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split by concern):\n" + "\n".join(
        f"  {name}: {n}" for name, n in sorted(over, key=lambda item: -item[1])
    )


def test_no_class_over_350_lines() -> None:
    over = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    over.append(f"  {_name(path)}:{node.lineno} class {node.name}: {length}")
    assert not over, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(over)


def test_no_import_cycle_between_modules() -> None:
    cycles = _import_cycles()
    if cycles:
        graph = _graph(PACKAGES)
        report = []
        for cycle in cycles:
            report.append("  " + " <-> ".join(cycle))
            report.extend(_cycle_edges(graph, cycle))
        pytest.fail("import cycles between modules:\n" + "\n".join(report))


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: two modules importing each other (one only for a type) are reported."""
    package = tmp_path / "cyclepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclepkg import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclepkg.a import x\n")
    (package / "c.py").write_text("import cyclepkg.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _import_cycles(("cyclepkg",)) == [["cyclepkg.a", "cyclepkg.b"]]
