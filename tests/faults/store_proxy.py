"""The HTTP fault proxy (:mod:`.http_proxy`) in a process of its own, driven over a pipe.

Its threads must never wait on the process that makes the requests: delta-rs holds the GIL
through some calls (``DeltaTable.is_deltatable``), so a proxy in the client's own process
stalls until the client's request times out. Here the child runs the proxy and answers one
JSON line per command read from its standard input (``heal_after``: Pass again that many seconds
later, by the child itself, as a caller stuck in such a call cannot)::

    {"set": {"kind": "Errors", "status": 503, ...}, "heal_after": 4.0}   -> {"ok": true}
    {"counts": true}                                  -> {"counts": {"passed": 3, ...}}

It stops when its standard input closes (the parent gone, or :meth:`StoreProxy.close`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from tests.faults.http_proxy import Behaviour, Errors, HttpFaultProxy, Pass, Slow

_KINDS: dict[str, type[Pass] | type[Errors] | type[Slow]] = {"Pass": Pass, "Errors": Errors,
                                                              "Slow": Slow}  # fmt: skip
_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the tests package


class StoreProxy:
    """A proxy process before the S3 server at ``127.0.0.1:upstream``: :attr:`endpoint`,
    :meth:`set`, :attr:`counts` as :class:`~.http_proxy.HttpFaultProxy` has them."""

    def __init__(self, upstream: int) -> None:
        path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.store_proxy", str(upstream)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": path},
        )  # fmt: skip
        self.port = int(self._reply()["port"])
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def set(self, behaviour: Behaviour, heal_after: float | None = None) -> None:
        """Every request from now on (those under way finish as they began); ``heal_after``:
        for that many seconds, then :class:`~.http_proxy.Pass`."""
        given = {"kind": type(behaviour).__name__, **asdict(behaviour)}
        self._ask({"set": given, "heal_after": heal_after})

    @property
    def counts(self) -> Counter[str]:
        """Requests per outcome (``passed``, ``failed``, ``slowed``), and ``connections``."""
        return Counter({k: int(v) for k, v in self._ask({"counts": True})["counts"].items()})

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        return self._reply()

    def _reply(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the proxy process ended (status {self._proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def serve(upstream: int, commands: IO[str], answers: IO[str]) -> None:
    """The child: the proxy, and the commands until ``commands`` ends."""
    proxy = HttpFaultProxy(upstream)
    healing: threading.Timer | None = None

    def say(answer: dict[str, Any]) -> None:
        answers.write(json.dumps(answer) + "\n")
        answers.flush()

    try:
        say({"port": proxy.port})
        for line in commands:
            command = json.loads(line)
            if "set" in command:
                if healing is not None:
                    healing.cancel()
                given = dict(command["set"])
                proxy.set(_KINDS[given.pop("kind")](**given))
                if command.get("heal_after") is not None:
                    healing = threading.Timer(command["heal_after"], proxy.set, (Pass(),))
                    healing.start()
                say({"ok": True})
            else:
                say({"counts": dict(proxy.counts)})
    finally:
        proxy.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.stdin, sys.stdout)
