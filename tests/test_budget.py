"""The one memory budget: divided top-down, never adding up past the total, clear minimums."""

from __future__ import annotations

import pytest

from kafkatool import budget
from kafkatool.errors import UsageError

MiB = 1024 * 1024


@pytest.mark.parametrize("total,workers", [(256 * MiB, 1), (256 * MiB, 2), (1024 * MiB, 4), (96 * MiB, 1)])
def test_parts_never_exceed_the_total(total, workers):
    b = budget.plan(total, workers=workers)
    w = b.worker
    assert b.reserved + workers * w.total <= total
    used = w.chunk_bytes + w.output_bytes + w.cache_bytes + w.decompress_limit * (1 + budget.RECORD_EXPANSION)
    assert used <= w.total


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
