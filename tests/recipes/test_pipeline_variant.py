"""A pipeline variant: the original file with --set overrides written in, loadable as a pipeline."""

from __future__ import annotations

from pathlib import Path

from dpr_components.pipeline_files.loading import load_pipeline_spec
from tests.helpers.paths import REPO
from training.common.pipeline_variant import main


def test_the_variant_holds_the_overrides_and_keeps_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "search.yml"
    search = str(REPO / "pipelines" / "search.yml")
    assert (
        main(
            [search, "--set", "hybrid.model=runs/x/question_encoder", "--set", "hybrid.weight=12.5", "--out", str(out)]
        )
        == 0
    )
    original, variant = load_pipeline_spec(search), load_pipeline_spec(out)
    parameters = variant["components"]["hybrid"]["init_parameters"]
    assert parameters["model"] == "runs/x/question_encoder" and parameters["weight"] == 12.5
    parameters.update(model=None, weight=None)
    original["components"]["hybrid"]["init_parameters"].update(model=None, weight=None)
    assert variant == original
    assert out.read_text().startswith("# ")
