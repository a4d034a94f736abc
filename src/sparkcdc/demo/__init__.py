"""The demo: a throwaway MariaDB, a small shop with varied column types, a workload streamed
into Delta by ``sparkcdc run``, and a source-vs-replica comparison (``python -m sparkcdc.demo``)."""
