"""The shape of the code: packages as homes (few modules at the top), no import cycles (deferred and
type-only imports included), no private names imported from another module, documented ``run``
methods, no library function over 60 lines, and no import up the layers of docs/architecture.md."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.paths import REPO

PACKAGES = ("dpr_components", "haystack_integrations", "training", "benchmarks")
LIBRARY = PACKAGES[:2]  # the engines and the components' published modules
MAX_TOP_LEVEL_MODULES = 5


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(path: Path) -> Iterator[tuple[str, str]]:
    """``(module, imported name)`` for every ``from X import Y`` and ``import X`` in the file, at any depth."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ""


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for module, imported in _imports(path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in modules else module
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root, targets in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(targets)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The layers of docs/architecture.md, top down; every other module of dpr_components is an engine, between the
# components and the helpers. A module imports from its own layer and those below it.
LAYERS = (
    ("dpr_components.cli", "dpr_components.serving", "dpr_components.langchain", "training", "benchmarks"),
    ("dpr_components.index_runs",),
    ("dpr_components.pipeline_files", "dpr_components.pipeline_requests", "dpr_components.packaged"),
    ("haystack_integrations",),
    (),  # the engines
    ("dpr_components.utils",),
)
EMBEDDED_STORE = "haystack_integrations.document_stores.dpr.document_store"
# The engines' uses of a component, each for a reason; the embedded store is defined with the components under
# its published path, and engines may open it.
ENGINES_USING_A_COMPONENT = {
    (
        "dpr_components.retrievers.question_retrievers",
        "haystack_integrations.components.embedders.dpr.question_embedder",
    ): "the type of the embedder whose settings it writes (type checking only)",
    (
        "dpr_components.evaluation.pool",
        "haystack_integrations.components.embedders.dpr.passage_embedder",
    ): "indexes the evaluation pool for the recipes and benchmarks (deferred)",
}


def _layer(module: str) -> int:
    for depth, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return depth
    return LAYERS.index(())


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if _layer(target) < _layer(module)
        and target != EMBEDDED_STORE
        and (module, target) not in ENGINES_USING_A_COMPONENT
    ]
    assert upward == []


def test_layer_check_sees_an_engine_importing_the_command_line() -> None:
    assert _layer("dpr_components.cli.main") < _layer("dpr_components.encoders.text_encoder")
    assert _layer("dpr_components.index_runs.shard_run") < _layer("dpr_components.pipeline_files.loading")
    assert _layer("haystack_integrations.components.readers.dpr.span_reader") < _layer("dpr_components.readers.predict")


def test_no_private_names_imported_across_modules() -> None:
    modules = _modules()
    private = [
        f"{name} imports {imported} from {module}"
        for name, path in modules.items()
        for module, imported in _imports(path)
        if module.split(".")[0] in PACKAGES and imported.startswith("_") and not imported.startswith("__")
    ]
    assert private == []


def test_few_modules_at_the_top_of_the_package() -> None:
    top = sorted(p.name for p in (REPO / "dpr_components").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def _run_docstring_gaps(path: Path) -> Iterator[str]:
    """``run``/``run_async`` of ``@component`` classes without a docstring; ``run`` docstrings without
    ``:returns:`` or the ``:param name:`` of one of its parameters."""
    for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(cls, ast.ClassDef) or not any(
            isinstance(d, ast.Name) and d.id == "component" for d in cls.decorator_list
        ):
            continue
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.name not in (
                "run",
                "run_async",
            ):
                continue
            where = f"{path.relative_to(REPO)}: {cls.name}.{method.name}"
            doc = ast.get_docstring(method)
            if not doc:
                yield f"{where}: no docstring"
            elif method.name == "run":
                arguments = [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]
                yield from (f"{where}: no :param {a.arg}:" for a in arguments[1:] if f":param {a.arg}:" not in doc)
                if ":returns:" not in doc:
                    yield f"{where}: no :returns:"


def test_component_run_methods_are_documented() -> None:
    gaps = [
        gap
        for package in LIBRARY
        for path in sorted((REPO / package).rglob("*.py"))
        for gap in _run_docstring_gaps(path)
    ]
    assert gaps == []


MAX_FUNCTION_LINES = 60


def _long_functions(path: Path) -> Iterator[str]:
    """Functions of ``path`` longer than ``MAX_FUNCTION_LINES``, signature and docstring included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                yield f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines} lines)"


def test_no_library_function_over_sixty_lines() -> None:
    long = [f for package in LIBRARY for path in sorted((REPO / package).rglob("*.py")) for f in _long_functions(path)]
    assert long == []


def test_no_recipe_or_benchmark_function_over_sixty_lines() -> None:
    long = [
        f
        for package in PACKAGES[len(LIBRARY) :]
        for path in sorted((REPO / package).rglob("*.py"))
        for f in _long_functions(path)
    ]
    assert long == []
