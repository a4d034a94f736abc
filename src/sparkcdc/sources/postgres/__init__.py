"""The PostgreSQL source: logical replication with pgoutput, snapshots and a throwaway server."""
