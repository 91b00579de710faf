"""The Puffin file format (apache/iceberg ``format/puffin-spec.md``), as lakestats writes it:
``PFA1 Blob1 … BlobN Footer``, the footer ``PFA1 <JSON FileMetadata> <its size, 4 bytes LE>
<flags: 0> PFA1``; blobs and footer uncompressed, which the spec allows and every reader
handles. Apart from ``puffin.py`` because the bytes do not depend on Iceberg's metadata."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

MAGIC = b"PFA1"


@dataclass(frozen=True)
class Blob:
    type: str
    fields: list[int]
    snapshot_id: int
    sequence_number: int
    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PuffinBytes:
    data: bytes
    footer_size: int  # the whole footer: magic, payload, size, flags, magic
    blobs: list[dict[str, object]]  # the footer's blob metadata, offsets included


def write_puffin(blobs: list[Blob], created_by: str) -> PuffinBytes:
    """The bytes of a Puffin file holding ``blobs`` in order."""
    body = bytearray(MAGIC)
    metadata: list[dict[str, object]] = []
    for blob in blobs:
        metadata.append(
            {
                "type": blob.type,
                "fields": list(blob.fields),
                "snapshot-id": blob.snapshot_id,
                "sequence-number": blob.sequence_number,
                "offset": len(body),
                "length": len(blob.payload),
                **({"properties": dict(blob.properties)} if blob.properties else {}),
            }
        )
        body += blob.payload
    payload = json.dumps(
        {"blobs": metadata, "properties": {"created-by": created_by}}, separators=(",", ":")
    ).encode()
    footer = MAGIC + payload + len(payload).to_bytes(4, "little", signed=True) + bytes(4) + MAGIC
    return PuffinBytes(bytes(body + footer), len(footer), metadata)
