"""Alembic migrations of the plait database (applied by `plait.store.migrate`)."""
