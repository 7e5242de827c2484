"""A recording HTTP proxy for tests: what kubectl sends, byte for byte, on its way to the APIServer.

kubectl is pointed at the proxy (``--server``); every request is forwarded to
the APIServer unchanged and recorded (method, path, Content-Type, body)
before the answer streams back, so watches and long polls work through it.
Each answer closes its connection, which Go's client takes in its stride.
kubectl talks plain HTTP to the proxy; an ``https`` upstream is reached over
TLS as the admin (the session's admin client certificate), as ``kubectl
proxy`` would.

One thread per connection (``ThreadingHTTPServer``); :attr:`RecordingProxy.requests`
is appended under a lock and read by the test once kubectl has exited.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection",
               "content-length", "host"}


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    content_type: str
    body: bytes

    @property
    def protobuf(self) -> bool:
        return self.content_type.startswith("application/vnd.kubernetes.protobuf")


class RecordingProxy:
    """``with RecordingProxy(upstream) as proxy:`` serves on ``proxy.url`` until the block ends."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80))
        self.tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            from tests import harness

            self.tls = harness.admin_tls()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.requests.append(Recorded(self.command, self.path,
                                                   self.headers.get("Content-Type") or "", body))
                conn = (http.client.HTTPSConnection(*proxy.upstream, timeout=120, context=proxy.tls)
                        if proxy.tls is not None else http.client.HTTPConnection(*proxy.upstream, timeout=120))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    while chunk := resp.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="recording-proxy", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def take(self) -> list[Recorded]:
        """The requests recorded since the last call."""
        with self._lock:
            out, self.requests = self.requests, []
        return out

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
