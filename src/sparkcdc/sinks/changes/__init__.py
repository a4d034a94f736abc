"""What a micro-batch does to a captured table's replica and change log, whatever the table
format: the table's schemas and typed row images (:mod:`.lake`), snapshot chunks as their ``r``
rows (:mod:`.chunks`), TRUNCATE as a ``t`` change (:mod:`.truncates`), what a schema change did
to the rows before it (:mod:`.effects`) and the latest change per key (:mod:`.latest`). Each
table format's sink (``sinks/delta``, ``sinks/iceberg``) writes what these give."""
