"""sparkcdc: change data capture from MariaDB, MySQL and PostgreSQL into Delta tables, on Apache
Spark."""

__version__ = "0.1.0"
