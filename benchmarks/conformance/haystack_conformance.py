"""Run Haystack's own DocumentStore test suite (haystack.testing, sync and async) against
EmbeddedDocumentStore (in a folder and in memory) and against Haystack's InMemoryDocumentStore,
and write docs/haystack_conformance.md (+ .json): passed/failed/skipped per Haystack test class,
then the drop-in matrix of tests/document_stores/test_drop_in.py (our components on each store, Haystack's on ours).

    python -m benchmarks.conformance.haystack_conformance [--out docs]

The tests are those of tests/document_stores/test_store_contract.py (one class per Haystack test class, also
part of the normal test run); ``DPR_CONTRACT_STORE=haystack_in_memory`` points them at the reference.
The drop-in matrix has an Elasticsearch column that runs only when ELASTICSEARCH_URL is set.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path

from haystack.testing import document_store as sync_suite
from haystack.testing import document_store_async as async_suite

from benchmarks.common import REPO_ROOT
from benchmarks.conformance import drop_in_matrix
from dpr_components.evaluation.tables import table_header, table_row

COMMAND = "python -m benchmarks.conformance.haystack_conformance"
TEST_FILE = "tests/document_stores/test_store_contract.py"
STORES = {
    "folder": ("EmbeddedDocumentStore (folder)", {}),
    "memory": ("EmbeddedDocumentStore (path=None)", {}),
    "haystack_in_memory": ("InMemoryDocumentStore", {"DPR_CONTRACT_STORE": "haystack_in_memory"}),
}
OUTCOMES = ("passed", "failed", "skipped")


def suite_classes() -> list[tuple[str, str]]:
    """(module, class) of every Haystack test class that defines tests of its own."""
    found = []
    for module in (sync_suite, async_suite):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and any(key.startswith("test_") for key in vars(cls)):
                found.append((module.__name__.rsplit(".", 1)[-1], name))
    return sorted(found)


def run_junit(test_file: str, extra_env: dict[str, str]) -> list[ET.Element]:
    """The junit test cases of one pytest run of ``test_file``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, **extra_env, "HAYSTACK_TELEMETRY_ENABLED": "False"}
        subprocess.run(
            [sys.executable, "-m", "pytest", test_file, "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
            cwd=REPO_ROOT,
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
        )
        if not report.is_file():
            raise SystemExit(f"pytest wrote no report for {test_file}")
        return list(ET.parse(report).getroot().iter("testcase"))


def run_tests(extra_env: dict[str, str]) -> list[dict[str, str]]:
    """Outcome of every test of TEST_FILE: its Haystack class, store parameter and outcome."""
    return [_outcome(case) for case in run_junit(TEST_FILE, extra_env)]


def _outcome(case: ET.Element) -> dict[str, str]:
    test_class = case.get("classname", "").rsplit(".", 1)[-1]
    name = case.get("name", "")
    store = name[name.index("[") + 1 : -1] if name.endswith("]") else ""
    problem = case.find("failure") if case.find("failure") is not None else case.find("error")
    message = ""
    if problem is not None:
        outcome = "failed"
        message = (problem.get("message") or "").splitlines()[0][:200] if problem.get("message") else ""
    elif case.find("skipped") is not None:
        outcome = "skipped"
    else:
        outcome = "passed"
    return {
        "class": test_class.removeprefix("Test"),
        "test": name.split("[")[0],
        "store": store,
        "outcome": outcome,
        "message": message,
    }


def tally(results: list[dict[str, str]]) -> dict[str, dict[str, dict[str, int]]]:
    """store -> Haystack class -> outcome -> count."""
    table: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: dict.fromkeys(OUTCOMES, 0)))
    for result in results:
        table[result["store"]][result["class"]][result["outcome"]] += 1
    return table


def _cell(counts: dict[str, int] | None) -> str:
    if not counts:
        return "not run"
    total = sum(counts.values())
    text = f"{counts['passed']}/{total} passed"
    if counts["failed"]:
        text += f", **{counts['failed']} failed**"
    if counts["skipped"]:
        text += f", {counts['skipped']} skipped"
    return text


def render(classes: list[tuple[str, str]], table: dict, failures: dict[str, list[str]]) -> str:
    lines = [
        "# Haystack DocumentStore test suite",
        "",
        f"Made by `{COMMAND}` with haystack-ai {version('haystack-ai')} and pytest-asyncio {version('pytest-asyncio')}.",
        f"It runs `{TEST_FILE}` (also part of the normal test run), where each class subclasses",
        "one test class of `haystack.testing.document_store` or `haystack.testing.document_store_async`",
        "and gets a fresh store per test, once per store below.",
        "Embeddings are compared at float32 precision (the store keeps vectors as float32).",
        "A skipped test is one the suite itself skips for the store's signature.",
        "",
        *table_header(["Haystack test class", *(label for label, _ in STORES.values())]),
    ]
    for module, name in classes:
        cells = [_cell(table.get(store, {}).get(name)) for store in STORES]
        lines.append(table_row([f"`{module}.{name}`", *cells]))
    totals = []
    for store in STORES:
        counts = dict.fromkeys(OUTCOMES, 0)
        for class_counts in table.get(store, {}).values():
            for outcome in OUTCOMES:
                counts[outcome] += class_counts[outcome]
        totals.append(_cell(counts))
    lines.append(table_row(["**all**", *totals]))
    for store, tests in failures.items():
        if tests:
            lines += ["", f"Failed with {STORES[store][0]}:", ""]
            lines += [f"- `{test.split(': ', 1)[0]}`: {test.split(': ', 1)[1]}" for test in tests]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs", help="folder for haystack_conformance.md/.json")
    args = parser.parse_args()
    results = run_tests({}) + run_tests(STORES["haystack_in_memory"][1])
    classes = suite_classes()
    table = tally(results)
    failures = {
        store: sorted(
            {
                f"{r['class']}.{r['test']}: {r['message']}"
                for r in results
                if r["store"] == store and r["outcome"] == "failed"
            }
        )
        for store in STORES
    }
    args.out.mkdir(parents=True, exist_ok=True)
    drop_in, drop_in_failures = drop_in_matrix.matrix(run_junit(drop_in_matrix.TEST_FILE, {}))
    text = render(classes, table, failures) + "\n".join(drop_in_matrix.render(drop_in, drop_in_failures)) + "\n"
    (args.out / "haystack_conformance.md").write_text(text, encoding="utf-8")
    summary = {
        "command": COMMAND,
        "haystack_ai": version("haystack-ai"),
        "stores": {store: label for store, (label, _) in STORES.items()},
        "classes": {
            f"{module}.{name}": {store: table.get(store, {}).get(name) for store in STORES} for module, name in classes
        },
        "failed": failures,
        "drop_in": drop_in_matrix.summary(drop_in, drop_in_failures),
    }
    (args.out / "haystack_conformance.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'haystack_conformance.md'}")


if __name__ == "__main__":
    main()
