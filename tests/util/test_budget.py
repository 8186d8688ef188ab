"""The one memory budget: divided top-down, never adding up past the total, clear minimums."""

from __future__ import annotations

import pytest

from kafkatool.errors import UsageError
from kafkatool.util import budget

MiB = 1024 * 1024


@pytest.mark.parametrize("total,workers", [(256 * MiB, 1), (256 * MiB, 2), (1024 * MiB, 4), (96 * MiB, 1)])
def test_parts_never_exceed_the_total(total, workers):
    b = budget.plan(total, workers=workers)
    w = b.worker
    assert b.reserved + workers * w.total <= total
    assert w.parts() <= w.total  # every part: working set, chunk, output, window, cache, decompression


def test_parts_sums_every_field_of_the_worker_budget():
    """parts() is what the other tests trust: it must count every size the worker may hold (a field added
    to WorkerBudget and left out of parts() fails here)."""
    import dataclasses

    base = budget.WorkerBudget(total=0, chunk_bytes=0, decompress_limit=0, output_bytes=0, cache_bytes=0,
                               window_bytes=0, working_bytes=0)
    assert base.parts() == 0
    for f in dataclasses.fields(budget.WorkerBudget):
        if f.name == "total":
            continue
        one = dataclasses.replace(base, **{f.name: 1})
        weight = 1 + budget.RECORD_EXPANSION if f.name == "decompress_limit" else 1
        assert one.parts() == weight, f.name


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("chunk", [budget.DEFAULT_CHUNK, 1 * MiB, 16 * MiB])
@pytest.mark.parametrize("working", [0, 5 * MiB, 40 * MiB])
def test_plan_never_hands_out_more_than_the_total(workers, chunk, working):
    need = budget.minimum_total(workers, chunk, working_bytes=working)
    for total in (need, need + 1, need + 7 * MiB, 2 * need, 256 * MiB, 1024 * MiB, 8192 * MiB):
        if total < need:
            continue
        b = budget.plan(total, workers=workers, chunk_bytes=chunk, working_bytes=working)
        assert b.reserved + workers * b.worker.total <= total
        assert b.worker.parts() <= b.worker.total, (total, b.worker)


def test_more_workers_means_less_each():
    one = budget.plan(512 * MiB, workers=1).worker
    four = budget.plan(512 * MiB, workers=4).worker
    assert four.total < one.total and four.decompress_limit < one.decompress_limit


def test_too_small_says_the_minimum():
    need = budget.minimum_total(2)
    with pytest.raises(UsageError, match="the minimum is"):
        budget.plan(need - 1, workers=2)
    budget.plan(need, workers=2)


def test_env_and_option(monkeypatch):
    monkeypatch.setenv(budget.ENV, "300MiB")
    assert budget.resolve(None).total == 300 * MiB
    assert budget.resolve("1GiB").total == 1024 * MiB
    monkeypatch.setenv(budget.ENV, "lots")
    with pytest.raises(UsageError, match="KAFKATOOL_MEMORY"):
        budget.resolve(None)


def test_default_is_small_machine_sized(monkeypatch):
    monkeypatch.delenv(budget.ENV, raising=False)
    b = budget.resolve(None)
    assert b.total == budget.DEFAULT_TOTAL <= 256 * MiB
    assert b.worker.decompress_limit >= budget.MIN_DECOMPRESS_LIMIT
