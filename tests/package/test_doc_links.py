"""The documentation's links hold: every relative link of the README and of docs/ names a file that exists,
every docs/ file the code or a page names by its repository path exists, and docs/benchmarks/ keeps one
folder per sub-package of benchmarks/, each benchmark writing into its own, listed page by page in
docs/benchmarks/README.md."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.helpers.paths import DOCS, REPO

REPORTS = DOCS / "benchmarks"
BENCHMARKS = REPO / "benchmarks"
TOP_PAGES = ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")
PAGES = sorted([*(REPO / name for name in TOP_PAGES), *DOCS.rglob("*.md"), *REPO.glob("training/*.md")])
# Where a page's links are not links: fenced blocks and code spans.
FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?(?P<inline>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
    r"|^ {0,3}\[[^\]]+\]:\s*<?(?P<reference>[^\s>]+)",
    re.M,
)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# A docs/ file named by its path from the repository root, as code, comments and pages name reports.
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[a-z0-9_./-]*[a-z0-9_]\.(?:md|json|png)\b")
NAMING_SUFFIXES = (".py", ".pyi", ".md", ".yml", ".template")
# Folders of a clone that hold no source: environments, caches, data, runs, builds.
NOT_SCANNED = {"node_modules", "runs", "indexes", "data", "dist", "build", "served", "__pycache__"}


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line, target) of each link of a markdown text that is neither an address nor an anchor of the page."""
    prose = CODE_SPAN.sub(_blank, FENCED.sub(_blank, text))
    links = []
    for match in LINK.finditer(prose):
        target = match.group("inline") or match.group("reference")
        if not SCHEME.match(target) and not target.startswith("#"):
            links.append((prose.count("\n", 0, match.start()) + 1, target))
    return links


def broken_links(page: Path) -> list[str]:
    """``line: target`` for each relative link of ``page`` whose file or folder does not exist."""
    broken = []
    for line, target in relative_links(page.read_text(encoding="utf-8")):
        path = unquote(target.split("#")[0].split("?")[0])
        if not (page.parent / path).exists():
            broken.append(f"{line}: {target}")
    return broken


def _files_naming_paths() -> list[Path]:
    """The source and documentation files of the repository (symbolic links to folders are not followed)."""
    found = []
    for folder, subfolders, names in os.walk(REPO):
        subfolders[:] = [name for name in subfolders if name not in NOT_SCANNED and not name.startswith(".")]
        found += [Path(folder) / name for name in names if name.endswith(NAMING_SUFFIXES)]
    return sorted(path for path in found if path.resolve() != Path(__file__).resolve())


def _title(page: Path) -> str:
    return page.read_text(encoding="utf-8").splitlines()[0].removeprefix("# ").strip()


def _benchmark_packages() -> list[str]:
    return sorted(p.name for p in BENCHMARKS.iterdir() if (p / "__init__.py").is_file())


def _report_folders_named(module: Path) -> list[tuple[int, str | None]]:
    """(line, folder) of each docs/benchmarks path a benchmark module builds: a string that starts with
    ``docs/benchmarks/`` or a ``... / "docs" / "benchmarks" / folder`` expression (folder None when it stops)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    named: list[tuple[int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("docs/benchmarks"):
            parts = node.value.split("/")
            named.append((node.lineno, parts[2] if len(parts) > 2 else None))
        elif _is_docs_benchmarks(node):
            parent = parents.get(node)
            folder = (
                parent.right.value
                if isinstance(parent, ast.BinOp) and parent.left is node and isinstance(parent.right, ast.Constant)
                else None
            )
            named.append((node.lineno, folder if isinstance(folder, str) else None))
    return sorted(named, key=lambda item: item[0])


def _is_docs_benchmarks(node: ast.AST) -> bool:
    """Whether ``node`` is ``<anything> / "docs" / "benchmarks"``."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value == "benchmarks"
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.right, ast.Constant)
        and node.left.right.value == "docs"
    )


def test_the_link_check_finds_what_is_missing_and_skips_code_and_addresses(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-part) [folder](folder/) [gone](moved/there.md#part) ![figure](figure.png)\n"
        "`[code](nowhere.md)` and [web](https://example.org/x.md), [anchor](#top), [mail](mailto:a@b.c)\n"
        "```markdown\n[fenced](nowhere.md)\n```\n"
        '[titled](there.md "title") [spaced](<my%20page.md>)\n'
        "[reference]: missing/reference.md\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "1: moved/there.md#part",
        "1: figure.png",
        "6: my%20page.md",
        "7: missing/reference.md",
    ]
    (tmp_path / "my page.md").write_text("# Mine\n", encoding="utf-8")
    assert broken_links(page) == ["1: moved/there.md#part", "1: figure.png", "7: missing/reference.md"]


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(REPO)) for page in PAGES])
def test_every_relative_link_of_the_docs_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_every_docs_file_named_by_its_path_exists() -> None:
    missing = []
    for path in _files_naming_paths():
        text = path.read_text(encoding="utf-8")
        for match in DOCS_PATH.finditer(text):
            if not (REPO / match.group(0)).exists():
                line = text.count("\n", 0, match.start()) + 1
                missing.append(f"{path.relative_to(REPO)}:{line}: {match.group(0)}")
    assert missing == []


def test_every_report_sits_in_the_folder_of_the_benchmarks_package_that_writes_it() -> None:
    packages = set(_benchmark_packages())
    assert {"encoding", "load", "reader"} <= packages, "benchmarks/ not found: the pattern is broken"
    top = {"README.md", "index.md"}
    stray = [
        str(path.relative_to(REPORTS))
        for path in REPORTS.rglob("*")
        if path.is_file() and path.relative_to(REPORTS).parts[0] not in packages and path.name not in top
    ]
    assert stray == []
    assert [path.name for path in REPORTS.iterdir() if path.is_file() and path.name not in top] == []


@pytest.mark.parametrize("package", _benchmark_packages())
def test_each_benchmark_writes_into_its_own_report_folder(package: str) -> None:
    wrong = [
        f"{module.relative_to(REPO)}:{line}: {folder}"
        for module in sorted((BENCHMARKS / package).glob("*.py"))
        for line, folder in _report_folders_named(module)
        if folder != package
    ]
    assert wrong == []


def test_a_report_path_outside_its_folder_is_found(tmp_path: Path) -> None:
    module = tmp_path / "bench.py"
    module.write_text(
        'OUT = ROOT / "docs" / "benchmarks"\nIN = ROOT / "docs" / "benchmarks" / "load" / "x.json"\n'
        'DEFAULT = "docs/benchmarks/reader/reader"\nTEXT = "see docs/benchmarks/scale/scale.md"\n',
        encoding="utf-8",
    )
    assert _report_folders_named(module) == [(1, None), (2, "load"), (3, "reader")]


def test_the_benchmarks_readme_lists_every_page_with_its_title() -> None:
    readme = (REPORTS / "README.md").read_text(encoding="utf-8").splitlines()
    unlisted = []
    for page in sorted(REPORTS.glob("*/**/*.md")):
        link = f"]({page.relative_to(REPORTS).as_posix()})"
        if not any(link in line and _title(page) in line for line in readme):
            unlisted.append(f"{page.relative_to(REPORTS)}: {_title(page)}")
    assert unlisted == []
