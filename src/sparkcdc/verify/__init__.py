"""``sparkcdc verify``: the replica compared with the source, chunk by chunk."""
