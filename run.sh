#!/usr/bin/env bash
# Set up the project environment (once) and run the demo or the tests.
#   ./run.sh demo          index examples/corpus.jsonl and answer example questions (pipelines/qa.yml)
#   ./run.sh test [ARGS]   run the test suite (ARGS go to pytest)
set -euo pipefail
cd "$(dirname "$0")"

VENV="${DPR_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HAYSTACK_TELEMETRY_ENABLED=False

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "Creating the environment in $VENV" >&2
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    echo "Installing dependencies into $VENV (log: $VENV/install.log)" >&2
    # torch first, pinned, from PyTorch's CPU wheel index: from PyPI (or unpinned) it is a multi-GB CUDA build.
    # Then the trained models, distributions of their own built from dpr_components/models, then the code.
    if ! { "$VENV/bin/python" -m pip install --upgrade pip \
           && "$VENV/bin/python" -m pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
           && "$VENV/bin/python" packaging/build_distributions.py stage --out "$VENV/model-sources" \
           && "$VENV/bin/python" -m pip install "$VENV"/model-sources/* \
           && "$VENV/bin/python" -m pip install -e ".[dev]"; } > "$VENV/install.log" 2>&1; then
      tail -n 40 "$VENV/install.log" >&2
      echo "installation failed; full log in $VENV/install.log" >&2
      exit 1
    fi
    touch "$stamp"
  fi
}

case "${1:-}" in
  demo)
    setup
    # The demo's own store, rebuilt each run (seconds): a store indexed by another passage encoder
    # (e.g. before an upgrade of the default model) would be refused, rightly, by the index pipeline.
    rm -rf indexes/example
    "$VENV/bin/haystack" run pipelines/index.yml --input path=examples/corpus.jsonl
    "$VENV/bin/haystack" run pipelines/qa.yml --batch examples/demo_queries.txt --top-k 1
    ;;
  test)
    setup
    shift
    "$VENV/bin/python" -m pytest "$@"
    ;;
  *)
    echo "usage: ./run.sh demo | ./run.sh test [pytest args]" >&2
    exit 2
    ;;
esac
