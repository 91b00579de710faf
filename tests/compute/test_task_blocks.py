"""Small slices share a Spark task (``compute/analyze/stages``): every slice runs exactly
once, each task's block holds about equal bytes, and big slices keep a task each."""

from __future__ import annotations

import types

import numpy as np

from lakestats.compute.analyze.stages import TASKS_PER_SLOT, _in_task_blocks, task_count


def _job(max_slice_bytes: int, hook: object = None) -> object:
    return types.SimpleNamespace(
        options=types.SimpleNamespace(max_slice_bytes=max_slice_bytes), hook=hook
    )


def test_tiny_slices_share_tasks_and_big_ones_do_not() -> None:
    assert task_count(10_000, 10_000 * 2_000, _job(128 << 20), 2) == 2 * TASKS_PER_SLOT
    assert task_count(10_000, 10_000 * 2_000, _job(128 << 20), 64) == 64 * TASKS_PER_SLOT
    assert task_count(84, 84 * (3 << 20), _job(128 << 20), 2) == 2 * TASKS_PER_SLOT
    assert task_count(3, 3 * 2_000, _job(128 << 20), 64) == 3
    assert task_count(500, 500 * (128 << 20), _job(128 << 20), 2) == 500
    hook = types.SimpleNamespace(tasks=3)
    assert task_count(500, 500, _job(128 << 20, hook), 2) == 3
    assert task_count(500, 500, _job(128 << 20, types.SimpleNamespace()), 2) == 500


def test_blocks_run_every_slice_once_with_balanced_bytes() -> None:
    rng = np.random.default_rng(0)
    sizes = sorted(rng.integers(1, 10_000, 1_003).tolist(), reverse=True)
    tasks = 17
    order = _in_task_blocks(sizes, tasks)
    assert sorted(order) == list(range(len(sizes)))
    n = len(sizes)
    bounds = [i * n // tasks for i in range(tasks + 1)]  # spark.range's contiguous blocks
    loads = [sum(sizes[order[p]] for p in range(bounds[b], bounds[b + 1])) for b in range(tasks)]
    # the biggest-first order cut into contiguous blocks would give the first block far more
    naive = [sum(sizes[bounds[b]:bounds[b + 1]]) for b in range(tasks)]
    assert max(loads) - min(loads) <= max(sizes)
    assert max(naive) - min(naive) > 10 * max(sizes)
    assert _in_task_blocks(sizes[:5], 5) == list(range(5))
