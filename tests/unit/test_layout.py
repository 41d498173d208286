"""The layering CONTRIBUTING.md's layout table states holds in the real import graph: every import of
every module (function-level ones too) stays inside what its package may import."""

import ast
import re
from pathlib import Path

import pytest

from casstrace.traces.schema import SCHEMA

PACKAGE = Path(__file__).resolve().parents[2]
# What each area may import of casstrace, as CONTRIBUTING.md's layout table and each package's docstring say.
# The top-level modules (errors, paths, phases, outputs, redaction, interrupts, ledger, terminal) any area may use, and
# the package's __version__.
BASE = {"__version__", "errors", "paths", "phases", "outputs", "redaction", "interrupts", "ledger", "terminal"}
ALLOWED = {
    "traces": BASE,
    "probes": BASE | {"traces"},
    "analyses": BASE | {"traces"},
    "reports": BASE | {"analyses"},
    "node": BASE | {"probes", "traces"},
    "orchestration": BASE | {"node", "probes", "traces"},
    "sandbox": BASE | {"node", "orchestration"},  # the sweep study runs its queries as `run` does
    "cli": BASE | {"probes", "traces", "analyses", "reports", "node", "orchestration", "sandbox"},
}


def imported_areas(path: Path) -> set[str]:
    areas = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "casstrace":  # from casstrace import paths
            names = [f"casstrace.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            names = []
        for name in names:
            parts = name.split(".")
            if parts[0] == "casstrace":
                areas.add(parts[1] if len(parts) > 1 else "casstrace")
    return areas


@pytest.mark.parametrize("area", sorted(ALLOWED))
def test_each_area_imports_only_what_the_layout_allows(area):
    reaching = {
        f"{path.relative_to(PACKAGE)} imports casstrace.{imported}"
        for path in sorted((PACKAGE / area).rglob("*.py"))
        for imported in imported_areas(path) - ALLOWED[area] - {area}
    }
    assert not reaching


def test_every_package_docstring_states_what_it_may_import():
    for area in ALLOWED:
        docstring = ast.get_docstring(ast.parse((PACKAGE / area / "__init__.py").read_text())) or ""
        assert "May import:" in docstring, f"{area}/__init__.py"


# The trace's raw SQL entry points (Trace.rows, its connection): for the tests, never the analyses.
RAW_SQL_ATTRIBUTES = {"rows", "db", "execute", "executemany", "executescript"}
TRACE_TABLES = re.findall(r"^CREATE TABLE (\w+)", SCHEMA, re.MULTILINE)
# SQL on a trace table, its keywords in capitals as casstrace writes them: CQL in the analyses'
# messages names Cassandra's tables, and English says "from nodes" in lower case.
SQL_ON_TRACE = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE)\s+({'|'.join(TRACE_TABLES)})\b|\bsqlite_master\b|\bPRAGMA\b")


def sql_uses(source: str, name: str = "<module>") -> list[str]:
    """Where a module imports sqlite3, reaches for the trace's raw SQL, or holds SQL on a trace table."""
    tree = ast.parse(source, name)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "sqlite3" for alias in node.names)) or (
            isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3"
        ):
            found.append(f"{name}:{node.lineno} imports sqlite3")
        # `x.rows(...)` is Trace.rows; `execution.rows`, uncalled, is a figure.
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in RAW_SQL_ATTRIBUTES
            and (node.attr != "rows" or id(node) in called)
        ):
            found.append(f"{name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_ON_TRACE.search(node.value):
            found.append(f"{name}:{node.lineno} SQL {node.value[:60]!r}")
    return found


def test_the_analyses_read_traces_through_the_typed_api_only():
    """traces.queries is the analyses' only way into a trace: no SQL, no sqlite3 in analyses/, so a
    schema change touches traces/ alone."""
    assert "file_io" in TRACE_TABLES
    assert not [
        use for path in sorted((PACKAGE / "analyses").glob("*.py")) for use in sql_uses(path.read_text(), path.name)
    ]


@pytest.mark.parametrize(
    "line",
    [
        "import sqlite3",
        "from sqlite3 import Row",
        "trace.rows('SELECT 1')",
        "trace.db.close()",
        "x = f'SELECT slot FROM latency WHERE {c}'",
        "q = 'SELECT 1 FROM file_io io JOIN files f'",
        "q = 'PRAGMA table_info(x)'",
    ],
)
def test_the_sql_check_refuses(line):
    assert sql_uses(line)


@pytest.mark.parametrize(
    "line",
    [
        "n = execution.rows",
        "m = 'SELECT a FROM ks.t WHERE k = ?'",
        "w = 'WHERE restricts only the partition key'",
        "e = 'bytes read from nodes'",
    ],
)
def test_the_sql_check_lets_cql_and_figures_by(line):
    assert not sql_uses(line)
