"""Readers share the lock, a writer holds it alone, and a waiting writer goes before later readers."""

from __future__ import annotations

import threading
import time

from dpr_components.utils.read_write_lock import ReadWriteLock


def test_readers_share_and_a_writer_waits_for_them() -> None:
    lock, events = ReadWriteLock(), []
    both_in = threading.Barrier(2, timeout=5)

    def reader(name: str) -> None:
        with lock.reading():
            both_in.wait()  # two readers inside at once, or this times out
            time.sleep(0.05)
            events.append(f"{name} out")

    def writer() -> None:
        with lock.writing():
            events.append("writer in")

    readers = [threading.Thread(target=reader, args=(name,)) for name in ("a", "b")]
    for thread in readers:
        thread.start()
    time.sleep(0.01)
    write = threading.Thread(target=writer)
    write.start()
    for thread in [*readers, write]:
        thread.join(timeout=5)
    assert events[-1] == "writer in" and sorted(events[:2]) == ["a out", "b out"]


def test_a_waiting_writer_goes_before_readers_that_come_later() -> None:
    lock, events = ReadWriteLock(), []
    first_in, writer_waiting = threading.Event(), threading.Event()

    def first_reader() -> None:
        with lock.reading():
            first_in.set()
            writer_waiting.wait(timeout=5)
            time.sleep(0.05)

    def writer() -> None:
        first_in.wait(timeout=5)
        writer_waiting.set()
        with lock.writing():
            events.append("writer")

    def late_reader() -> None:
        writer_waiting.wait(timeout=5)
        time.sleep(0.02)  # arrives while the writer waits
        with lock.reading():
            events.append("late reader")

    threads = [threading.Thread(target=target) for target in (first_reader, writer, late_reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert events == ["writer", "late reader"]
