"""The DPR-layout benchmark's arithmetic: rates, the ratio to the DPR folder on torch, the report."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from benchmarks.encoding.dpr_layout import REFERENCE, render, summarise

ON_TORCH = "DPR layout, backend torch"
DEFAULT = "DPR layout, default (backend auto)"


def _measured() -> dict:
    reference = np.eye(4, dtype=np.float32)
    tilted = reference.copy()
    tilted[0, 1] = 1.0  # first vector at 45 degrees: cosine 0.7071
    return {
        "seconds": {DEFAULT: 2.0, ON_TORCH: 5.0, REFERENCE: 10.0},
        "vectors": {DEFAULT: tilted, ON_TORCH: reference, REFERENCE: reference},
    }


def test_rows_count_every_repeat_and_compare_with_the_dpr_folder_on_torch() -> None:
    encoders = {
        DEFAULT: SimpleNamespace(backend="torch", uses_bf16=False),
        ON_TORCH: SimpleNamespace(backend="torch", uses_bf16=True),
        REFERENCE: SimpleNamespace(backend="torch", uses_bf16=False),
    }
    rows = {row["system"]: row for row in summarise(encoders, _measured(), repeats=2)}  # type: ignore[arg-type]
    assert rows[DEFAULT]["passages_per_s"] == 4.0  # 4 passages x 2 repeats in 2 s
    assert rows[DEFAULT]["ratio_vs_dpr_on_torch"] == 2.5
    assert rows[REFERENCE]["ratio_vs_dpr_on_torch"] == 0.5
    assert rows[ON_TORCH]["computes_in"] == "bf16" and rows[DEFAULT]["computes_in"] == "fp32"
    assert abs(rows[DEFAULT]["cosine_to_torch_fp32"]["min"] - 2**-0.5) < 1e-6
    summary = {
        "machine": {"cpu": "Test CPU", "cores": 2, "threads": 2, "native_bf16": True, "load_average_start": 0.5},
        "load_average_end": 1.0,
        "config": {"passages": 4, "seed": 0, "batch_size": 2, "repeats": 2, "chunk": 2},
        "rows": list(rows.values()),
        "command": "python -m benchmarks.encoding.dpr_layout",
    }
    report = render(summary)
    assert f"| {DEFAULT} | torch | fp32 | 4.0 | 2.50x | 0.70711 |" in report
    assert "python -m benchmarks.encoding.dpr_layout\n```" in report
