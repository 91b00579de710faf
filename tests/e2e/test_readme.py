"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.spark
def test_readme_python_examples_run(spark) -> None:
    from lakestats.stats.registry import unregister_statistic

    blocks = _blocks()
    assert len(blocks) >= 2
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), {})
    finally:
        unregister_statistic("negative_count")
