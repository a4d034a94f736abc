"""An S3-compatible server on loopback for the lake on object storage: ``moto``'s server.

:class:`MotoS3` starts ``python -m moto.server`` on a free port of 127.0.0.1, waits for it and
makes buckets; :meth:`MotoS3.options` are the ``sink.storage_options`` that reach it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

ACCESS_KEY = "sparkcdc-test-key"
SECRET_KEY = "sparkcdc-test-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoS3:
    """A moto S3 server running as a subprocess (stop it with :meth:`stop`)."""

    def __init__(self, checks_keys: bool = False) -> None:
        """``checks_keys``: every request's access key is checked from the first one on (moto
        knows none, so every key is refused); else any key is taken."""
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, **({"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if checks_keys else {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 60
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the moto S3 server did not start on port {self.port}")
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                return True
        except (urllib.error.URLError, OSError):
            return False

    def options(self, **more: str) -> dict[str, str]:
        """delta-rs's storage options for this server (``more`` added)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            **more,
        }

    def bucket(self) -> str:
        """A new empty bucket's name."""
        name = f"lake-{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200, answer.status
        return name

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def storage_options(options: dict[str, str]) -> str:
    """``options`` as the pipeline file's ``sink.storage_options`` (``extra_sink``)."""
    return ", storage_options: {" + ", ".join(f"{k}: '{v}'" for k, v in options.items()) + "}"
