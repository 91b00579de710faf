"""Puffin files (Apache Iceberg's statistics file format), written.

Layout (apache/iceberg ``format/puffin-spec.md``): ``Magic Blob1 … BlobN Footer``, the
footer ``Magic FooterPayload FooterPayloadSize Flags Magic``: magic ``PFA1``, the payload
the UTF-8 JSON ``FileMetadata`` ``{"blobs": [{type, fields, snapshot-id, sequence-number,
offset, length, properties}], "properties": {"created-by": …}}``, its size a 4-byte
little-endian integer, flags 4 bytes (all zero: the payload is not compressed). Blobs are
stored uncompressed (no ``compression-codec``), which the spec allows and every reader
handles. The table metadata's ``file-footer-size-in-bytes`` is the whole footer's size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

MAGIC = b"PFA1"
THETA_BLOB = "apache-datasketches-theta-v1"


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
