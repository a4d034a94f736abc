"""Fuzzing the log readers' decoders: real events, mutated, must meet the project's own error.

- :mod:`.binlog`: binlog event streams (real MySQL files from ``../shared/mysql-binlogs``, our
  MySQL 8 writer's, MariaDB's) decoded in process by the log reader's event loop.
- :mod:`.pgoutput`: pgoutput message streams decoded by the PostgreSQL log reader.
- :mod:`.mutate`: the mutations (bytes flipped, events cut, lengths enlarged, events spliced).
- :mod:`.run`: the coverage-guided run (atheris) that ``scripts/fuzz.sh`` starts.

The property tests in ``tests/unit/test_decoder_fuzz.py`` (and the MariaDB and PostgreSQL
captures in ``tests/integration/test_decoder_fuzz_servers.py``) run a fixed number of examples
in the default suite.
"""
