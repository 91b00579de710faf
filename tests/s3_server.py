"""moto's S3 server with S3's atomic conditional writes, run as a script by the fixtures.

moto checks ``If-None-Match: *`` and then stores the object, two steps a concurrent request
can fall between: under load two publishers both "created" one statistics version. S3
itself does both at once, which ``StatisticsStore.create_exclusive`` relies on. A lock around
moto's ``put_object`` makes the emulator's conditional write atomic like S3's; nothing
else changes.

    python tests/s3_server.py -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import threading

from moto.s3.responses import S3Response
from moto.server import main

_put_object = S3Response.put_object
_lock = threading.Lock()


def _atomic_put_object(self: S3Response):
    with _lock:
        return _put_object(self)


S3Response.put_object = _atomic_put_object

if __name__ == "__main__":
    main()
