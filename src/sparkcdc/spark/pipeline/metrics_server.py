"""The HTTP endpoint Prometheus scrapes while ``sparkcdc run`` runs: ``GET /metrics``.

A :class:`http.server.ThreadingHTTPServer` in a daemon thread of the driver, bound when the run
starts (a port in use fails the run there, naming ``pipeline.metrics.port``) and shut down when
it ends. Each scrape renders the page afresh; a page that fails to render answers 500 and never
touches the run.
"""

from __future__ import annotations

import errno
import logging
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sparkcdc.config.model import MetricsConfig
from sparkcdc.config.values import fail
from sparkcdc.spark.pipeline.exposition import CONTENT_TYPE

log = logging.getLogger("sparkcdc.metrics")

PATH = "/metrics"


class _Server(ThreadingHTTPServer):
    """One thread per scrape, each answering with ``page()``."""

    daemon_threads = True  # a slow scraper never holds the run's exit

    def __init__(self, address: tuple[str, int], page: Callable[[], str]) -> None:
        self.page = page
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse lookup of the host (slow where DNS is)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path.split("?", 1)[0] != PATH:
            self._answer(404, "text/plain; charset=utf-8", f"not found; metrics are at {PATH}\n")
            return
        try:
            body = self.server.page()
        except Exception as exc:  # a broken page must not reach the run
            log.warning("the metrics page could not be rendered: %s", exc)
            self._answer(500, "text/plain; charset=utf-8", f"metrics unavailable: {exc}\n")
            return
        self._answer(200, CONTENT_TYPE, body)

    def _answer(self, code: int, content_type: str, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - its signature
        log.debug("metrics: " + format, *args)


class MetricsServer:
    """``GET /metrics`` served from a daemon thread until :meth:`stop`."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="sparkcdc-metrics", daemon=True
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(config: MetricsConfig, page: Callable[[], str]) -> MetricsServer | None:
    """Serve ``page()`` at ``http://<host>:<port>/metrics`` (None when the port is 0); a
    ConfigError naming the key when the address cannot be bound."""
    if not config.enabled:
        return None
    try:
        server = _Server((config.host, config.port), page)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(
                "pipeline.metrics.port",
                f"{config.port} is already in use on {config.host}; stop what listens there "
                "or choose another port",
            )
        fail(
            "pipeline.metrics.host",
            f"cannot listen on {config.host}:{config.port} ({exc.strerror or exc}); use an "
            "address of this machine",
        )
    running = MetricsServer(server)
    host, port = running.address
    log.info("serving Prometheus metrics at http://%s:%d%s", host, port, PATH)
    return running
