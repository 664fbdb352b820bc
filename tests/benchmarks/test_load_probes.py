"""The pages of benchmarks/load/shape_memory.py and wait_policy_batch.py from made-up measurements, the
smaps reading of memory_maps.py on this process, and the goal line haystack_native reads from load.json."""

from __future__ import annotations

import os
from typing import Any

from benchmarks.load import shape_memory, wait_policy_batch
from benchmarks.load.memory_maps import CATEGORIES, anonymous_breakdown
from benchmarks.peers.native_report import under_load, under_load_line


def test_shape_memory_page_gives_the_memory_kept_per_shape() -> None:
    run = {"anonymous_mb": [400.0, 550.0, 550.5], "seconds": [8.0, 7.5], "shapes": 150}
    rounded = {"anonymous_mb": [400.0, 430.0, 430.0], "seconds": [7.9, 7.2], "shapes": 20}
    summary = {
        "cpu": "cpu",
        "cores": 2,
        "rows": 10,
        "words": [5, 154],
        "runs": {"openvino": {"longest row": run, "multiple of 8": rounded}},
        "command": "python -m benchmarks.load.shape_memory",
    }
    page = shape_memory.render(summary)
    assert "| openvino | longest row | 150 | +150 | 1.00 | +0 | 7.5 |" in page
    assert "| openvino | multiple of 8 | 20 | +30 | 1.50 | +0 | 7.2 |" in page
    assert page.rstrip().endswith("```")


def test_wait_policy_page_gives_each_repeat_ratio() -> None:
    summary: dict[str, Any] = {
        "cpu": "cpu",
        "cores": 2,
        "threads": 2,
        "passages": 1040,
        "repeats": 2,
        "runs": {"torch": {"spin": [100.0, 110.0], "passive": [95.0, 110.0]}},
        "command": "python -m benchmarks.load.wait_policy_batch",
    }
    page = wait_policy_batch.render(summary)
    assert "| torch | 100.0 / 105.0 / 110.0 | 95.0 / 102.5 / 110.0 | 0.950 / 1.000 |" in page


def test_anonymous_breakdown_reads_this_process() -> None:
    found = anonymous_breakdown(os.getpid(), largest=3)
    assert all(found[name] >= 0 for name in CATEGORIES) and found["main heap"] > 0
    assert len(found["largest"]) == 3
    assert all(resident <= size + 0.1 for resident, size, _ in found["largest"])


def _load_run(spin: float, passive: float) -> dict[str, Any]:
    def rows(ratio: float) -> dict[str, Any]:
        return {"dense": {"new": {"loaded_over_quiet_p50": ratio}, "old": {"loaded_over_quiet_p50": 9.0}}}

    return {"spin": rows(spin), "passive": rows(passive)}


def test_under_load_goal_is_met_only_when_every_run_is_within_twice_quiet() -> None:
    ratios = under_load({"runs": [_load_run(1.5, 0.9), _load_run(2.3, 1.1)]})
    assert ratios == {"spin": [1.5, 2.3], "passive": [0.9, 1.1]}
    line = under_load_line(ratios)
    assert "0.90× to 1.10×, above 2× in 0 of 2: **met**" in line
    assert "1.50× to 2.30×, above 2× in 1 of 2: **not met**" in line and "import haystack" in line
    calm = under_load_line(under_load({"runs": [_load_run(1.5, 0.9)]}))
    assert calm.count("**met**") == 2 and "import haystack" not in calm
    assert "not measured" in under_load_line(None)
