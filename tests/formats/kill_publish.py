"""Run as a script by test_publish_faults.py: publish a pending statistics version of an Iceberg
table through the analyze's publish step (``compute/analyze/publish.py``), and kill this
process with SIGKILL at one point of it: a real ``kill -9``, after which nothing of the process
runs (no handler, no ``finally``, no cleanup).

    python kill_publish.py POINT WAREHOUSE TABLE PENDING_JSON

POINT, in the order the publish step reaches them: ``puffin-temporary`` (the Puffin file's
temporary copy written, not yet renamed), ``puffin-written`` (the Puffin file in place, not
committed), ``puffin-committed`` (listed in the table metadata; no version yet),
``version-created`` (the version manifest created; nothing after it), ``version-published``
(the publish of the version returned: its marker and ``latest.json`` too),
``spark-temporary`` (the Spark component's file's temporary copy written, not renamed),
``spark-written`` (that file in place: the step done).
"""

from __future__ import annotations

import os
import signal
import sys

POINTS = (
    "puffin-temporary",
    "puffin-written",
    "puffin-committed",
    "version-created",
    "version-published",
    "spark-temporary",
    "spark-written",
)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(point: str, warehouse: str, name: str, pending: str) -> None:
    assert point in POINTS, point
    import lakestats.api as ls
    from lakestats.compute.analyze import publish as step
    from lakestats.interop import puffin
    from lakestats.store import manifest
    from lakestats.store.handle import StatisticsStore

    rename = os.replace

    def replace(source: str, target: str) -> None:
        text = str(target)
        kind = "puffin" if text.endswith(puffin.OWN_SUFFIX) else (
            "spark" if f"{os.sep}spark{os.sep}" in text else None)
        if kind is not None and point == f"{kind}-temporary":
            _die()
        rename(source, target)
        if kind is not None and point == f"{kind}-written":
            _die()

    register = puffin._register

    def registered(*args: object) -> None:
        register(*args)  # type: ignore[arg-type]
        if point == "puffin-committed":
            _die()

    create = StatisticsStore.create_exclusive

    def created(self: StatisticsStore, uri: str, data: bytes) -> bool:
        done = create(self, uri, data)
        if done and point == "version-created" and "/versions/" in uri:
            _die()
        return done

    publish_version = manifest.publish

    def published(*args: object, **kwargs: object) -> int:
        number = publish_version(*args, **kwargs)  # type: ignore[arg-type]
        if point == "version-published":
            _die()
        return number

    os.replace = replace  # type: ignore[assignment]
    puffin._register = registered  # type: ignore[assignment]
    StatisticsStore.create_exclusive = created  # type: ignore[method-assign]
    manifest.publish = published  # type: ignore[assignment]

    table = ls.open_table(name, warehouse=warehouse)
    with open(pending) as handle:
        version = manifest.Version.from_json(handle.read())
    step.publish(table.format, table.store, version, puffin_file=True, engine_files=True)
    sys.exit(3)  # every point is reached before the step ends


if __name__ == "__main__":
    main(*sys.argv[1:5])
