"""The HTTP endpoint Prometheus scrapes while ``sparkcdc run`` runs: ``GET /metrics``.

prometheus_client's threading WSGI server in a daemon thread of the driver, bound when the run
starts (a port in use fails the run there, naming ``pipeline.metrics.port``) and shut down when
it ends. Each scrape collects the collector afresh and writes it with the library's
``generate_latest`` (text format 0.0.4); other paths answer 404, and a collection that fails
answers 500 and never touches the run.
"""

from __future__ import annotations

import errno
import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, make_server
from wsgiref.types import StartResponse, WSGIEnvironment

from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

from sparkcdc.config.model import MetricsConfig
from sparkcdc.config.values import fail
from sparkcdc.spark.pipeline.exposition import CONTENT_TYPE, page

log = logging.getLogger("sparkcdc.metrics")

PATH = "/metrics"
_TEXT = "text/plain; charset=utf-8"
WsgiApp = Callable[[WSGIEnvironment, StartResponse], Iterable[bytes]]


def metrics_app(collector: Collector) -> WsgiApp:
    """The WSGI application: ``collector``'s page at :data:`PATH`, 404 elsewhere, 500 (and a
    warning) when collecting fails."""

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") != PATH:
            return _answer(start_response, "404 Not Found", _TEXT,
                           f"not found; metrics are at {PATH}\n")  # fmt: skip
        try:
            body = page(collector)
        except Exception as exc:  # a broken page must not reach the run
            log.warning("the metrics page could not be rendered: %s", exc)
            return _answer(start_response, "500 Internal Server Error", _TEXT,
                           f"metrics unavailable: {exc}\n")  # fmt: skip
        return _answer(start_response, "200 OK", CONTENT_TYPE, body)

    return app


def _answer(start_response: StartResponse, status: str, kind: str, text: str) -> list[bytes]:
    data = text.encode("utf-8")
    start_response(status, [("Content-Type", kind), ("Content-Length", str(len(data)))])
    return [data]


class _Server(ThreadingWSGIServer):
    """One thread per scrape; IPv6 for a host with a colon; no reverse lookup of the host."""

    daemon_threads = True  # a slow scraper never holds the run's exit

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse lookup of the host (slow where DNS is)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)
        self.setup_environ()


class _V6Server(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
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


def serve_metrics(config: MetricsConfig, collector: Collector) -> MetricsServer | None:
    """Serve what ``collector`` collects at ``http://<host>:<port>/metrics`` (None when the
    port is 0); a ConfigError naming the key when the address cannot be bound."""
    if not config.enabled:
        return None
    kind = _V6Server if ":" in config.host else _Server
    try:
        server = make_server(config.host, config.port, metrics_app(collector), kind, _QuietHandler)
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
    assert isinstance(server, _Server)
    running = MetricsServer(server)
    host, port = running.address
    log.info("serving Prometheus metrics at http://%s:%d%s", host, port, PATH)
    return running
