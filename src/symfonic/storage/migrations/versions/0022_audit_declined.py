"""A declined answer is an audit record whose decision is ``declined``.

A person can refuse an MCP server's question outright (``status: declined``),
which is not the same as letting it go (``cancelled``): the server hears
``decline`` rather than ``cancel``. The triggers of migrations 0015 and 0020
knew only ``cancelled`` and recorded a declined answer as ``answered``, as if
the person had filled in the form. Here the trigger that audits a change of a
pause's state records ``declined`` as it records ``cancelled``: the answer's
status is the decision, for any kind of pause.

Only the ``decision`` of a declined answer changes; every other field, and how
a record is hashed, stays as it was, so a chain written before the upgrade and
continued after verifies as one. Records written before keep what they said.

The statements are those of the migrations that made the triggers, with the
one clause that reads the status widened, so nothing else about them can drift.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def _version(name: str) -> ModuleType:
    """An earlier migration's module, whose statements this one widens or puts back."""
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"symfonic_migration_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _widened(statement: str, row: str) -> str:
    """``statement`` with a declined answer's decision read as a cancelled one's is."""
    cancelled = f"WHEN {row}.answer_status = 'cancelled' THEN 'cancelled'"
    if statement.count(cancelled) != 1:
        raise RuntimeError(f"the audit trigger does not read a cancelled answer as {cancelled!r}")
    declined = f" WHEN {row}.answer_status = 'declined' THEN 'declined'"
    return statement.replace(cancelled, cancelled + declined)


def _postgres_changed() -> str:
    """Migration 0020's function behind the state-change statement trigger."""
    statement: str = _version("0020_audit_readdressing.py")._postgres()[-1]
    assert statement.startswith("CREATE OR REPLACE FUNCTION symfonic_audit_changed()")
    return statement


def _sqlite_changed() -> str:
    """Migration 0015's row trigger on a change of a pause's state."""
    statement: str = _version("0015_audit_trail.py").SQLITE[2]
    assert statement.startswith("CREATE TRIGGER symfonic_audit_changed ")
    return statement


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_widened(_postgres_changed(), "n"))
        return
    op.execute("DROP TRIGGER symfonic_audit_changed")
    op.execute(_widened(_sqlite_changed(), "NEW"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_postgres_changed())
        return
    op.execute("DROP TRIGGER symfonic_audit_changed")
    op.execute(_sqlite_changed())
