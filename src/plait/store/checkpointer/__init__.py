"""The engine's `Checkpointer` on SQL (SQLite or PostgreSQL): `SqlCheckpointer`.

    saver.py         SqlCheckpointer: the protocol, the live-variables cache, the choice of path
    transactions.py  each checkpoint as one SQLAlchemy transaction (PostgreSQL, in-memory SQLite)
    sqlite.py        the same transactions on the SQLite writer's raw sqlite3 connection

Row mapping is in `plait.store.rows`, the run-row statements in `plait.store.run_rows`, the
writer thread in `plait.store.sqlite_writer`.
"""

from plait.store.checkpointer.saver import SqlCheckpointer

__all__ = ["SqlCheckpointer"]
