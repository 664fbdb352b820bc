"""The back-end accuracy report: differences from the reference and the 0.2-point bound."""

from __future__ import annotations

import pytest

from benchmarks.encoding.backend_accuracy import comparison


def _result(backend: str, precision: str, top1: float) -> dict:
    scores = {"n_questions": 655, "top_k": {"1": top1, "5": 90.0, "20": 95.0}}
    return {"passage_backend": backend, "precision": precision, "index_seconds": 1.0, "datasets": {"nq": scores}}


def test_differences_and_bound() -> None:
    rows = comparison(
        [_result("openvino", "fp32", 80.0), _result("openvino", "auto", 80.15), _result("torch", "auto", 79.5)]
    )
    assert [r["difference"]["1"] for r in rows] == pytest.approx([0.0, 0.15, -0.5])
    assert [r["within_bound"] for r in rows] == [True, True, False]
    assert rows[2]["system"] == "passages on torch, precision auto"
