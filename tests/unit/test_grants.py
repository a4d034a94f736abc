"""Reading SHOW GRANTS: which CDC privileges an account lacks."""

from __future__ import annotations

from sparkcdc.sources.mysql.server.grants import missing_privileges

TO = " TO `cdc`@`%`"


def test_all_privileges_cover_everything() -> None:
    assert missing_privileges(["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost`"]) == []


def test_mariadb_and_mysql_names() -> None:
    maria = [f"GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.*{TO}"]
    mysql = [f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.*{TO}"]
    replica = [f"GRANT SELECT, REPLICATION REPLICA, SUPER ON *.*{TO}"]
    assert missing_privileges(maria) == missing_privileges(mysql) == []
    assert missing_privileges(replica) == []


def test_select_per_database_and_columns() -> None:
    grants = [
        f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.*{TO}",
        f"GRANT SELECT, INSERT ON `shop`.*{TO}",
        f"GRANT SELECT (`a`, `b`), UPDATE ON `crm`.`users`{TO}",
        f"GRANT ALL ON `we``ird`.*{TO}",
        "GRANT `analyst` TO `cdc`@`%`",
    ]
    assert missing_privileges(grants, ["shop", "crm", "we`ird"]) == []
    assert missing_privileges(grants, ["shop", "billing"]) == ["SELECT"]
    assert missing_privileges(grants) == []


def test_nothing_granted() -> None:
    assert missing_privileges([f"GRANT USAGE ON *.*{TO} IDENTIFIED BY PASSWORD '*AB'"]) == [
        "REPLICATION SLAVE",
        "REPLICATION CLIENT",
        "SELECT",
    ]
