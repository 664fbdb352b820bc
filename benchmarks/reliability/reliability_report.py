"""Run the reliability suite and write docs/reliability.md (+ .json): every bad input or fault,
grouped by category, with what the user sees.

    python -m benchmarks.reliability.reliability_report [--out docs]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import REPO_ROOT
from dpr_components.evaluation.tables import table_header
from dpr_components.utils.atomic_files import atomic_write_text

COMMAND = "python -m benchmarks.reliability.reliability_report"


_PYTEST_TMP = re.compile(r"\S*pytest-of-[^/\s]+/pytest-\d+/[^/\s]+")


def _portable(text: str) -> str:
    """Test folders and this checkout's location are not part of the result."""
    return _PYTEST_TMP.sub("<tmp>", text.replace(str(REPO_ROOT), "."))


def run_suite(pytest_args: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        env = {**os.environ, "RELIABILITY_RESULTS": str(results)}
        subprocess.run(
            [sys.executable, "-m", "pytest", "tests/reliability", "-q", "-p", "no:cacheprovider", *pytest_args],
            cwd=REPO_ROOT,
            env=env,
            check=False,
        )
        if not results.is_file():
            raise SystemExit("the reliability suite recorded no case")
        return [json.loads(_portable(line)) for line in results.read_text(encoding="utf-8").splitlines()]


def _details(case: dict) -> str:
    details = case.get("details") or {}
    return "; ".join(f"{k}: {v}" for k, v in details.items())


def render(cases: list[dict]) -> str:
    by_category: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        by_category[case["category"]].append(case)
    passed = [c for c in cases if c["outcome"] == "passed"]
    failed = [c for c in cases if c["outcome"] == "failed"]
    skipped = [c for c in cases if c["outcome"] == "skipped"]
    expect_counts = Counter(c["expect"] for c in passed)
    lines = [
        "# Reliability: bad input, hostile input and faults",
        "",
        f"Made by `{COMMAND}`: it runs `tests/reliability` (also part of the normal test run) and",
        "lists every case. A case passes only when the user sees what its column says:",
        "- **clear error**: exit code 2 and a single `error: ...` line naming the file, line, field or parameter; no traceback;",
        "- **correct result**: the command succeeds and its result is right (checked against the expected one);",
        "- **nothing lost**: after the fault every document saved before it is still there and searches return the same results.",
        "",
        f"**{len(cases)} cases: {len(passed)} as expected, {len(failed)} not, {len(skipped)} skipped** "
        f"({expect_counts['clear error']} clear errors, {expect_counts['correct result']} correct results, "
        f"{expect_counts['nothing lost']} faults with nothing lost).",
        "",
        *table_header(
            ["category", "cases", "clear error", "correct result", "nothing lost", "not as expected", "skipped"],
            "lrrrrrr",
        ),
    ]
    for category in sorted(by_category):
        group = by_category[category]
        ok = Counter(c["expect"] for c in group if c["outcome"] == "passed")
        bad = sum(c["outcome"] == "failed" for c in group)
        skip = sum(c["outcome"] == "skipped" for c in group)
        lines.append(
            f"| {category} | {len(group)} | {ok['clear error']} | {ok['correct result']} | {ok['nothing lost']} | {bad} | {skip} |"
        )
    for category in sorted(by_category):
        lines += ["", f"## {category}", "", *table_header(["case", "expected", "outcome", "details"], "llll")]
        for case in by_category[category]:
            label = case["case"] + (f" (`{case['params']}`)" if case.get("params") else "")
            outcome = {"passed": "as expected"}.get(case["outcome"], case["outcome"])
            lines.append(
                f"| {label.replace('|', '/')} | {case['expect']} | {outcome} | {_details(case).replace('|', '/')} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO_ROOT / "docs"), help="folder for reliability.md and reliability.json")
    args, pytest_args = parser.parse_known_args()
    cases = run_suite(pytest_args)
    out = Path(args.out)
    atomic_write_text(out / "reliability.json", json.dumps(cases, indent=1) + "\n")
    atomic_write_text(out / "reliability.md", render(cases))
    failed = sum(c["outcome"] == "failed" for c in cases)
    print(f"{len(cases)} cases, {failed} not as expected -> {out / 'reliability.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
