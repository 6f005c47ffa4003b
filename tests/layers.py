"""The package's layers, in the order work flows (spec, then compile, then run, then verify, then
what consumes results), and the reader of every import in the package (statically, lazy imports
inside functions included). Used by tests/test_layers.py."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# lower layers never import higher ones; a module may import its own layer
LAYERS: list[tuple[str, list[str]]] = [
    ("foundation", ["errors", "registry", "files", "trial_controls", "moved"]),
    ("spec", ["spec", "schemas", "templates", "generators"]),
    ("compile", ["compile"]),
    ("records", ["records"]),
    ("sandbox and agents", ["sandbox", "engines", "policy", "agent"]),
    ("verify", ["checks", "verify"]),
    ("run", ["run"]),
    ("report", ["report"]),
    ("produce and consume", ["synth", "interop", "train", "bench", "integrations"]),
    ("entry points", ["cli", "builtin_plugins", "api", "__init__"]),
]
# modules inside a lower package that count as entry points (none: every command lives in cli/)
ENTRY_MODULES: set[str] = set()
RANK = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module (or package) imported
    names: tuple[str, ...]
    line: int
    lazy: bool  # inside a function: runs only when called


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path) -> list[Import]:
    out = []
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy_nodes = {
            id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == root.name:
                    out.append(
                        Import(mod, target, tuple(a.name for a in node.names), node.lineno, id(node) in lazy_nodes)
                    )
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == root.name:
                        out.append(Import(mod, a.name, (), node.lineno, id(node) in lazy_nodes))
    return out


def modules(root: Path) -> set[str]:
    return {module_name(p, root) for p in root.rglob("*.py")}


def resolved(imp: Import, known: set[str]) -> list[str]:
    """What an import really loads: `from pkg import mod` is the module `pkg.mod`, not the package."""
    subs = [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in known]
    names = [n for n in imp.names if f"{imp.target}.{n}" not in known]
    return subs + ([imp.target] if names or not imp.names else [])


def _ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def rank(module: str) -> int | None:
    parts = module.split(".")
    if module in ENTRY_MODULES:
        return RANK["cli"]
    if len(parts) == 1:
        return RANK["__init__"]
    return RANK.get(parts[1])


def back_edges(found: list[Import], known: set[str]) -> list[str]:
    """Imports from a lower layer into a higher one. The root package's own constants
    (`__version__`, `API_VERSION`) are foundation."""
    out = []
    for imp in found:
        src = rank(imp.module)
        for target in resolved(imp, known):
            dst = RANK["errors"] if target == imp.target.split(".")[0] else rank(target)
            if src is not None and dst is not None and dst > src:
                out.append(f"{imp.module}:{imp.line} imports {target} ({LAYERS[src][0]} -> {LAYERS[dst][0]})")
                break
    return out


def unranked(found: list[Import], root: Path) -> list[str]:
    tops = {
        module_name(p, root).split(".")[1]
        for p in root.rglob("*.py")
        if p != root / "__init__.py" and (p.parent == root or p.parent.parent == root)
    }
    return sorted(t for t in tops if t not in RANK)


def private_names(found: list[Import]) -> list[str]:
    """`from a import _b` where a is another module (private names stay in their module)."""
    return [
        f"{i.module}:{i.line} takes {i.target}.{n}"
        for i in found
        for n in i.names
        if n.startswith("_") and not n.startswith("__") and i.target != i.module
    ]


def cycles(found: list[Import], known: set[str]) -> list[list[str]]:
    """Import cycles between modules, lazy imports included (a lazy import that closes a cycle only
    hides it). A module taking names from its own package's `__init__` is not counted: that is
    how a package exposes what its modules register."""
    graph: dict[str, set[str]] = {}
    for i in found:
        targets = resolved(i, known)
        graph.setdefault(i.module, set()).update(
            t for t in targets if t in known and t != i.module and not _ancestor(t, i.module)
        )
    out, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                out.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return out
