"""A real HTTP server on 127.0.0.1 for tests and benchmarks of the web code.

    routes = {"/a": respond(b"<html>...</html>", "text/html"), "/slow": stall(30)}
    with LoopbackServer(routes) as server:
        url = server.url("/a")

Each route is a function of the request handler; helpers build the common ones (a page, a
redirect, a stall, a large streamed body). The server runs in a daemon thread, binds a free
port on loopback only, and stopping it also releases handlers that are stalling.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = Callable[[BaseHTTPRequestHandler], None]


def respond(body: bytes, content_type: str = "text/html; charset=utf-8", status: int = 200,
            headers: dict[str, str] | None = None) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.end_headers()
        h.wfile.write(body)
    return route


def redirect(location: str, status: int = 302) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return route


def stall(seconds: float, after_headers: bool = True) -> Route:
    """Send headers (and a first byte of body) then go silent for ``seconds``."""
    def route(h: BaseHTTPRequestHandler) -> None:
        if after_headers:
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", "100000")
            h.end_headers()
            h.wfile.write(b"<")
            h.wfile.flush()
        h.server.stopping.wait(seconds)  # type: ignore[attr-defined]
    return route


def stream(total_bytes: int, content_type: str = "text/html", declare_length: bool = False,
           chunk: bytes = b"<p>" + b"x" * 65_530 + b"</p>") -> Route:
    """Stream ``total_bytes`` without ever building them in memory."""
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        if declare_length:
            h.send_header("Content-Length", str(total_bytes))
        h.end_headers()
        sent = 0
        try:
            while sent < total_bytes and not h.server.stopping.is_set():  # type: ignore[attr-defined]
                piece = chunk[: total_bytes - sent]
                h.wfile.write(piece)
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up at its byte cap, as it should
    return route


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        self.server.hits[path] = self.server.hits.get(path, 0) + 1  # type: ignore[attr-defined]
        route = self.server.routes.get(path) or self.server.routes.get(self.path)  # type: ignore[attr-defined]
        if route is None:
            respond(b"<html><body>not found</body></html>", status=404)(self)
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args) -> None:  # noqa: A002 - keep test output quiet
        pass


class LoopbackServer:
    def __init__(self, routes: dict[str, Route] | None = None):
        self.routes: dict[str, Route] = dict(routes or {})
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> LoopbackServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.routes = self.routes  # type: ignore[attr-defined]
        server.hits = {}  # type: ignore[attr-defined]
        server.stopping = threading.Event()  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stopping.set()  # type: ignore[attr-defined]
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    @property
    def hits(self) -> dict[str, int]:
        return self._server.hits  # type: ignore[union-attr]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


# --------------------------------------------------------------------------- sample content

def article_html(title: str, paragraphs: list[str], charset: str | None = "utf-8") -> str:
    """A plausible article page with navigation and footer boilerplate around the content."""
    meta = f'<meta charset="{charset}">' if charset else ""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!doctype html><html><head>{meta}<title>{title}</title></head><body>"
            "<nav><a href='/'>Home</a> | <a href='/news'>News</a> | <a href='/about'>About</a></nav>"
            f"<article><h1>{title}</h1>{body}</article>"
            "<footer>Copyright 2026 Example Press. All rights reserved. Privacy | Terms</footer>"
            "</body></html>")


def image_bytes(width: int = 320, height: int = 240, color=(200, 40, 40), fmt: str = "PNG",
                mode: str = "RGB", pattern: int = 0, exif_orientation: int | None = None) -> bytes:
    """A small synthetic image; ``pattern`` varies the content (distinct perceptual hashes)."""
    import io

    from PIL import Image, ImageDraw

    im = Image.new(mode, (width, height), color if mode != "RGBA" else (*color[:3], 128))
    d = ImageDraw.Draw(im)
    for i in range(pattern % 7 + 1):
        x = (i * 37 + pattern * 53) % max(1, width - 40)
        y = (i * 59 + pattern * 31) % max(1, height - 40)
        d.rectangle([x, y, x + 40 + pattern % 5 * 10, y + 30], fill=(20 * i % 255, 255 - 30 * i % 255, (pattern * 70) % 255)[: len(mode)] if mode != "L" else 0)
    buf = io.BytesIO()
    kwargs = {}
    if exif_orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = exif_orientation
        kwargs["exif"] = exif
    im.save(buf, fmt, **kwargs)
    return buf.getvalue()


def bomb_png(width: int = 20_000, height: int = 20_000) -> bytes:
    """A valid 1-bit PNG that declares width*height pixels and compresses to ~100 KB: decoding
    it as RGB would take width*height*3 bytes of memory."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    comp = zlib.compressobj(9)
    parts = [comp.compress(row * 1000) for _ in range(height // 1000)]
    parts.append(comp.compress(row * (height % 1000)))
    parts.append(comp.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")
