"""The layering the README's "Layout" section states holds in the real import graph: every import of
every module (function-level ones too) stays inside what its package may import."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
# What each area may import of casstrace, as README "Layout" and each package's docstring say.
# The top-level modules (errors, paths, phases, outputs, redaction, interrupts, ledger) any area may use, and
# the package's __version__.
BASE = {"__version__", "errors", "paths", "phases", "outputs", "redaction", "interrupts", "ledger"}
ALLOWED = {
    "traces": BASE,
    "probes": BASE | {"traces"},
    "analyses": BASE | {"traces"},
    "reports": BASE | {"analyses"},
    "node": BASE | {"probes", "traces"},
    "sandbox": BASE | {"node"},
    "cli": BASE | {"probes", "traces", "analyses", "reports", "node", "sandbox"},
}


def imported_areas(path: Path) -> set[str]:
    areas = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "casstrace":   # from casstrace import paths
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
    reaching = {f"{path.relative_to(PACKAGE)} imports casstrace.{imported}"
                for path in sorted((PACKAGE / area).glob("*.py"))
                for imported in imported_areas(path) - ALLOWED[area] - {area}}
    assert not reaching


def test_every_package_docstring_states_what_it_may_import():
    for area in ALLOWED:
        docstring = ast.get_docstring(ast.parse((PACKAGE / area / "__init__.py").read_text())) or ""
        assert "May import:" in docstring, f"{area}/__init__.py"
