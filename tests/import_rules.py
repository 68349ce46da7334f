"""`make lint`'s layering check: every module sits in a layer and imports only from its own
layer and the layers below; no import cycle between a package's modules; no import of another
package's private module; and no HTTP by hand (one HTTP library, httpx, under every request).

An import inside a function counts (a lazy import that hides a cycle is still one); an import
under `if TYPE_CHECKING:` does not (it never runs). A private module is one whose name starts
with `_`; only modules of its own package (and the packages below it) may import it.

    python -m tests.import_rules [PACKAGE_DIR ...]     # default: agentscore
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LAYERS", "Violation", "check", "import_graph", "main"]

Violation = str

# Lowest first. A module belongs to the layer of the longest prefix naming it (relative to the
# package); it may import its own layer and those below, never one above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "ground",
        (
            "messages",
            "run",
            "result",
            "errors",
            "usage",
            "adapters",
            "context",
            "tools",
            "_options",
            "_redact",
            "_memo",
            "protocol",
        ),
    ),
    ("plumbing", ("_runtime", "_wire")),
    ("telemetry", ("telemetry",)),
    ("judges", ("judges",)),
    ("scorers", ("scorers",)),
    ("pipeline", ("pipeline",)),
    (
        "placements",
        (
            "",
            "evals",
            "_observe",
            "agent",
            "spans",
            "serve",
            "sinks",
            "ci",
            "cli",
            "compat",
            "demo",
            "testing",
        ),
    ),
)
# Outbound HTTP goes through httpx (the openai SDK's) with one policy in agentscore._wire.http;
# these would be a second stack, or HTTP written by hand.
FORBIDDEN_IMPORTS = ("http.client", "urllib.request", "requests", "urllib3", "socket", "select")


def main(argv: list[str] | None = None) -> int:
    roots = [Path(arg) for arg in (argv if argv is not None else sys.argv[1:])] or [
        Path(__file__).resolve().parent.parent / "agentscore"
    ]
    violations = [line for root in roots for line in check(root)]
    for line in violations:
        print(line, file=sys.stderr)
    if violations:
        print(f"import rules: {len(violations)} violation(s)", file=sys.stderr)
        return 1
    return 0


def check(
    package_dir: Path,
    layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS,
    forbidden: tuple[str, ...] = FORBIDDEN_IMPORTS,
) -> list[Violation]:
    graph = import_graph(package_dir)
    violations = [
        f"import cycle among {len(members)} modules ({', '.join(members)}), "
        f"for one: {' -> '.join([*cycle, cycle[0]])}"
        for members, cycle in _cycles(graph)
    ]
    for importer, imported in sorted((a, b) for a, targets in graph.items() for b in targets):
        if not _may_import(importer, imported):
            violations.append(f"private import: {importer} imports {imported}")
    package = package_dir.resolve().name
    for module in sorted(graph):
        if layers and _layer(module, package, layers) is None:
            violations.append(f"no layer: {module} is in none of LAYERS")
    for importer, imported in sorted((a, b) for a, targets in graph.items() for b in targets):
        low, high = _layer(importer, package, layers), _layer(imported, package, layers)
        if low is not None and high is not None and high > low:
            violations.append(
                f"upward import: {importer} ({layers[low][0]}) imports {imported} "
                f"({layers[high][0]})"
            )
    for module, name in sorted(_external_imports(package_dir)):
        if any(name == banned or name.startswith(banned + ".") for banned in forbidden):
            violations.append(f"forbidden import: {module} imports {name} (use agentscore._wire)")
    return violations


def _layer(
    module: str, package: str, layers: tuple[tuple[str, tuple[str, ...]], ...]
) -> int | None:
    relative = module[len(package) + 1 :] if module != package else ""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            matches = relative == prefix or (prefix != "" and relative.startswith(prefix + "."))
            if matches and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return best[0] if best else None


def _external_imports(package_dir: Path) -> Iterator[tuple[str, str]]:
    package_dir = package_dir.resolve()
    for path in package_dir.rglob("*.py"):
        name = _module_name(package_dir, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in _imports(tree, name, path.name == "__init__.py"):
            yield name, target


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (anywhere but under TYPE_CHECKING)."""
    package_dir = package_dir.resolve()
    modules = {_module_name(package_dir, path): path for path in package_dir.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets = set()
        for target in _imports(tree, name, is_package):
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != name:
                targets.add(resolved)
        graph[name] = targets
    return graph


def _module_name(package_dir: Path, path: Path) -> str:
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Dotted names imported, `from a import b` giving `a.b` (a module or a name in `a`)."""
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            for alias in node.names:
                yield f"{base}.{alias.name}" if alias.name != "*" else base


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            yield from (n for branch in child.orelse for n in [branch, *_runtime_nodes(branch)])
            continue
        yield child
        yield from _runtime_nodes(child)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `name` that is one of the package's modules."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _may_import(importer: str, imported: str) -> bool:
    *package, last = imported.split(".")
    if not (last.startswith("_") and not last.startswith("__")):
        return True
    owner = ".".join(package)
    return importer == owner or importer.startswith(owner + ".")


def _cycles(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """Each strongly connected component of more than one module, with one cycle through it
    (Tarjan's algorithm, iterative: the graph may be deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    components.append(sorted(component))
    return [(component, _a_cycle(graph, set(component))) for component in sorted(components)]


def _a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A closed path through the component's first module, to name in the message."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for child in sorted(graph[node] & component):
            if child == start:
                return paths[node]
            if child not in paths:
                paths[child] = [*paths[node], child]
                frontier.append(child)
    return sorted(component)


if __name__ == "__main__":
    sys.exit(main())
