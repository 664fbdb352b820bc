"""``delete_all_documents`` on a large table: the vector-count triggers vs none.

SQLite empties a table in one step (its truncate optimisation) only when no trigger fires on
its rows; the triggers that keep the vector count (``document_table.py``) turn it into a
row-by-row delete. ``DocumentTable.delete_all`` drops and recreates them inside its transaction.
This measures, on the same rows: the store's ``delete_all``; the same with the triggers left
in place (what it did before); and a table without triggers (the floor).

Run from the repository root (one thread):

    OMP_NUM_THREADS=1 python -m benchmarks.scale.scale_delete_all --rows 100000"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bm25.worker_common import write_json_atomic
from dpr_components.document_stores.document_table import (
    COUNTER_TRIGGERS,
    DocumentRow,
    DocumentTable,
)
from dpr_components.evaluation.tables import table_header
from dpr_components.utils.atomic_files import atomic_write_text

OUT = Path("docs/benchmarks/scale")
DIM = 768


def _table(folder: Path, name: str, rows: int) -> DocumentTable:
    table = DocumentTable(folder / f"{name}.sqlite")
    vector = np.random.default_rng(0).normal(size=DIM).astype(np.float32).tobytes()
    table.write([DocumentRow(f"id{i}", "some passage text " * 20, "{}", vector) for i in range(rows)], "fail")
    return table


def _delete_keeping_triggers(table: DocumentTable) -> int:
    """``delete_all`` as it was before: the rows deleted one by one, the triggers counting them."""
    with table._transaction():
        return int(table._db.execute("DELETE FROM documents").rowcount)


def measure(rows: int, rounds: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"store delete_all": [], "triggers kept": [], "no triggers": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for kind, seconds in timings.items():
                table = _table(Path(tmp), f"{kind.replace(' ', '_')}{round_}", rows)
                if kind == "no triggers":
                    for name in COUNTER_TRIGGERS:
                        table._db.execute(f"DROP TRIGGER {name}")
                action = _delete_keeping_triggers if kind == "triggers kept" else DocumentTable.delete_all
                start = time.perf_counter()
                deleted = action(table)
                seconds.append(time.perf_counter() - start)
                assert deleted == rows
                if kind == "store delete_all":
                    assert table.vector_count()[0] == 0
                table.close()
    return timings


def render(command: str, rows: int, timings: dict[str, list[float]]) -> str:
    floor = float(np.median(timings["no triggers"]))
    lines = [
        "# delete_all_documents with the vector-count triggers",
        "",
        f"Command: `{command}`. {rows:,} rows with a {DIM}-d float32 vector and ~360 characters of text, in a",
        "file-backed SQLite table (WAL); median seconds of the rounds, each on freshly written rows.",
        "",
        *table_header(["delete", "median s", "vs no triggers"], "lrr"),
    ]
    for kind, seconds in timings.items():
        median = float(np.median(seconds))
        lines.append(f"| {kind} | {median:.2f} | {median / floor:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    command = f"python -m benchmarks.scale.scale_delete_all --rows {args.rows} --rounds {args.rounds}"
    timings = measure(args.rows, args.rounds)
    write_json_atomic(OUT / "scale_delete_all.json", {"command": command, "rows": args.rows, "seconds": timings})
    atomic_write_text(OUT / "scale_delete_all.md", render(command, args.rows, timings))
    print(render(command, args.rows, timings))


if __name__ == "__main__":
    main()
