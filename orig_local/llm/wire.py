"""A picture file as the base64 a request carries, without holding the file's bytes as well.

The judge holds one such encoding per item in flight (~4.4 MB for a 1328x1328 PNG). Encoding
the whole file at once holds its bytes beside their base64 and leaves both to the C allocator,
which keeps freed blocks of this size inside its heaps: the process's memory then grows with the
items in flight well past what they hold. Here the file is read in pieces into an anonymous
memory map sized for the result, returned to the system as soon as the last request using it
is gone."""

from __future__ import annotations

import binascii
import hashlib
import mmap
from pathlib import Path

# bytes read per piece: a multiple of 3, so no piece but the last needs base64 padding
PIECE = 3 * 2**18


def file_base64(path: Path) -> tuple[mmap.mmap | bytes, str, int]:
    """(base64 of the file, sha256 of its bytes, its size). The base64 is an anonymous memory
    map (a bytes-like object); a file that changes size while read is encoded again in memory."""
    size = path.stat().st_size
    if size == 0:
        return b"", hashlib.sha256(b"").hexdigest(), 0
    out = mmap.mmap(-1, 4 * ((size + 2) // 3))
    digest, pos, read, grown = hashlib.sha256(), 0, 0, False
    with path.open("rb") as fh:
        while piece := fh.read(PIECE):
            digest.update(piece)
            encoded = binascii.b2a_base64(piece, newline=False)
            if pos + len(encoded) > len(out):
                grown = True  # changed since stat(): the fallback below reads it whole
                break
            out[pos:pos + len(encoded)] = encoded
            pos, read = pos + len(encoded), read + len(piece)
    if grown or read != size or pos != len(out):
        out.close()
        data = path.read_bytes()
        return binascii.b2a_base64(data, newline=False), hashlib.sha256(data).hexdigest(), len(data)
    return out, digest.hexdigest(), size
