"""Alembic migrations for symfonic's tables, applied by ``migrate`` on store open."""
