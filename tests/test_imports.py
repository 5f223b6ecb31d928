"""No import cycle inside ablate/: module-level and function-level imports alike.

Why function-level too: a cycle hidden inside a function (``core`` -> ``distributed`` -> ``core``) still ties the
two modules together; it only postpones the failure to the first call.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ablate"

KNOWN: list[list[str]] = []  # none: each package's shared types live in a leaf module its members import


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, name: str, is_pkg: bool, modules: dict[str, Path]) -> set[str]:
    """ablate.* modules imported anywhere in ``tree`` (skipping ``if TYPE_CHECKING:`` blocks)."""
    out: set[str] = set()
    package = name if is_pkg else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py", modules)
        for name, path in modules.items()
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan): each is one or more cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return cycles


def test_the_finder_sees_a_cycle_hidden_in_a_function():
    src = "def f():\n    from ablate.b import x\n"
    modules = {"ablate.a": Path("a.py"), "ablate.b": Path("b.py")}
    graph = {"ablate.a": _imports(ast.parse(src), "ablate.a", False, modules), "ablate.b": {"ablate.a"}}
    assert find_cycles(graph) == [["ablate.a", "ablate.b"]]
    assert find_cycles({"ablate.a": {"ablate.b"}, "ablate.b": set()}) == []


def test_the_trainer_core_and_the_data_parallel_launcher_form_no_cycle():
    graph = import_graph()
    assert "ablate.trainer.core" not in graph["ablate.trainer.distributed"]
    assert "ablate.trainer.collectives" in graph["ablate.trainer.core"]


def test_no_import_cycle_inside_ablate():
    cycles = [c for c in find_cycles(import_graph()) if c not in KNOWN]
    assert not cycles, "import cycles (modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )
