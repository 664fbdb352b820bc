#!/usr/bin/env bash
# Create .venv-pyserini (repo root) with Pyserini 0.22.1 and a Java 17 JDK, for the Lucene
# baseline of benchmarks/bm25/bm25_benchmark.py. Kept out of the project venv: Pyserini pulls in
# spacy, onnxruntime, pyjnius and more. Idempotent; run from the repository root.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${PYSERINI_VENV:-$REPO_ROOT/.venv-pyserini}"
PYTHON="${PYTHON:-python3}"

if ! command -v javac >/dev/null 2>&1 || ! javac -version 2>&1 | grep -q ' 17\.'; then
    echo "installing openjdk-17-jdk-headless" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update
    $SUDO apt-get install -y openjdk-17-jdk-headless
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/pip" install --upgrade pip
# CPU torch first: an unpinned torch (a pyserini dependency) would pull a multi-GB CUDA build.
"$VENV/bin/pip" install torch==2.13.0
"$VENV/bin/pip" install pyserini==0.22.1 faiss-cpu

JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
echo "JAVA_HOME=$JAVA_HOME"
JAVA_HOME="$JAVA_HOME" "$VENV/bin/python" -c "from pyserini.search.lucene import LuceneSearcher; print('pyserini ok')"
