"""How ``sparkcdc run`` answers its stop signals (:class:`~sparkcdc.spark.pipeline.run.
StopRequest`): the first SIGTERM or SIGINT asks for a stop after the batch in flight, a second
Ctrl-C for a stop now, a third leaves at once with 130; SIGTERM never hurries the stop."""

from __future__ import annotations

import signal
import subprocess
import sys

from sparkcdc.spark.pipeline.run import EXIT_INTERRUPTED, StopRequest


def test_the_first_signal_asks_for_a_stop_after_the_batch_and_a_second_ctrl_c_for_now() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stop = StopRequest()
    try:
        assert not stop.requested
        signal.raise_signal(signal.SIGTERM)
        assert stop.requested and not stop.now
        signal.raise_signal(signal.SIGTERM)  # a supervisor asking again: still the batch first
        assert not stop.now
        signal.raise_signal(signal.SIGINT)
        assert stop.requested and stop.now
    finally:
        stop.restore()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_third_ctrl_c_leaves_at_once() -> None:
    script = (
        "import signal\n"
        "from sparkcdc.spark.pipeline.run import StopRequest\n"
        "stop = StopRequest()\n"
        "for _ in range(3):\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "print('still here')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert done.stdout == "" and done.stderr.strip().splitlines()[-1] == "sparkcdc: stopped at once"
