"""A parse worker process: ``python -m orig_local.retrieval.parse_worker``.

Reads framed requests ``(RawResponse, ReaderConfig, query)`` on stdin and writes framed results
(``Page`` or ``FetchFailure``) on stdout; a frame is a 4-byte big-endian length and a pickle.
Started with ``--images`` it decodes images instead: requests ``("image", data, url,
FetchConfig, page_url, content_type)``, results ``FetchedImage`` or ``FetchFailure`` (and it
does not import trafilatura).
Only the parent that started it talks to it (pickle is trusted here for that reason). Started
and killed by :class:`orig_local.retrieval.parse_pool.ParseWorkers`.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct(">I")


def write_frame(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next object, or raise ``EOFError`` when the other side is gone."""
    head = _read_exactly(stream, HEADER.size)
    return pickle.loads(_read_exactly(stream, HEADER.unpack(head)[0]))


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("stream closed")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def main() -> None:
    try:
        _serve()
    except (BrokenPipeError, EOFError, KeyboardInterrupt):
        # the pool closed (or killed its pipes) while this worker started or answered: a quiet
        # exit, not a traceback on the user's terminal. stdout goes to devnull so the
        # interpreter's final flush of the dead pipe does not print one either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        sys.exit(0)


def _serve() -> None:
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a library prints may corrupt the reply stream
    if "--images" in sys.argv[1:]:
        return _serve_images(requests, replies)
    from orig_local.retrieval.base import FetchFailure
    from orig_local.retrieval.extract import _extractor
    from orig_local.retrieval.parsepage import parse_response

    _extractor()  # import trafilatura now, before the first page's deadline runs
    _cap_heap(sys.argv[1:])
    write_frame(replies, "ready")
    while True:
        try:
            raw, config, query = read_frame(requests)
        except EOFError:
            return
        try:
            result = parse_response(raw, config, query)
        except MemoryError:
            result = FetchFailure(url=raw.url, kind="too_large", detail="out of memory while parsing")
        write_frame(replies, result)


def _cap_heap(argv: list[str]) -> None:
    """``--memory-mb=N``: the heap may grow by N MB past what the imports took (RLIMIT_DATA),
    so a parse bomb raises MemoryError (the page's ``too_large``) instead of taking the machine's
    memory until its deadline. Where the limit cannot be set (not Linux), nothing is capped."""
    mb = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--memory-mb=")), None)
    if not mb:
        return
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as fh:
            data_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmData:"))
        limit = (data_kb // 1024 + mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
    except (OSError, ValueError, StopIteration, ImportError):
        return  # no /proc or no rlimits: the deadline still bounds the parse


def _serve_images(requests: IO[bytes], replies: IO[bytes]) -> None:
    import PIL.Image  # noqa: F401 - before the first image's deadline runs

    from orig_local.retrieval.base import FetchFailure
    from orig_local.retrieval.imagedecode import decode_image

    write_frame(replies, "ready")
    while True:
        try:
            _, data, url, config, page_url, content_type = read_frame(requests)
        except EOFError:
            return
        try:
            result = decode_image(data, url, config, page_url, content_type)
        except MemoryError:
            result = FetchFailure(url=url, kind="bomb", detail="out of memory while decoding")
        write_frame(replies, result)


if __name__ == "__main__":
    main()
