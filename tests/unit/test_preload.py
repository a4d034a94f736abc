"""The worker daemon's preload: a head start that never stops the daemon."""

from __future__ import annotations

import subprocess
import sys


def test_a_module_that_fails_to_import_is_left_for_the_task_that_needs_it() -> None:
    code = (
        "import sys\n"
        "from sparkcdc.spark.runtime.worker_daemon import preload\n"
        "preload(('sparkcdc_no_such_module', 'sparkcdc.sources.mysql.chunks.dialect'))\n"
        "print('sparkcdc.sources.mysql.chunks.dialect' in sys.modules, 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True"]
