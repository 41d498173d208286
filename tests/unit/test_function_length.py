"""Functions a reader can hold (issue 45): none in the package longer than LIMIT lines, from its `def` to
its last line (a click command's parameters and docstring included), but the few ALLOWED names with why."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2]
LIMIT = 80
# path:qualified name -> why it is longer. An entry that is no longer over LIMIT fails the test: drop it.
ALLOWED = {
    # The sysdig import's per-event loops (issue 47's import speed): locals instead of attributes and the
    # common cases inline, since every call and lookup counts per event; _scan and _fold_python are also
    # the Python twins of the compiled loops (scap_scan.c, scap_fold.c), kept step for step alike.
    "probes/sysdig/scap_reader.py:ScapReader._scan": "per-event loop, twin of scap_scan.c",
    "probes/sysdig/scap_reader.py:ScapReader._state": "per state event, called from the compiled scan",
    "probes/sysdig/sysdig_import.py:ScapImporter._fold_python": "per-call loop, twin of scap_fold.c",
}


def package_modules() -> list[Path]:
    """The package's modules: the top-level ones and every subpackage's (tests and benchmarks are not in it)."""
    packages = sorted(init.parent for init in PACKAGE.glob("*/__init__.py"))
    return sorted(PACKAGE.glob("*.py")) + [path for package in packages for path in sorted(package.rglob("*.py"))]


def function_lengths(source: str) -> dict[str, int]:
    """Each function's qualified name (Class.method, outer.inner) -> its lines, `def` to last line."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                assert child.end_lineno is not None
                lengths[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


def test_the_lengths_counted():
    source = '''
def short():
    return 1


class Reader:
    def method(self):
        def inner():
            pass

        return inner

    @property
    def decorated(self):
        """The decorator's line is not counted."""
        if True:
            return 2
'''
    assert function_lengths(source) == {"short": 2, "Reader.method": 5, "Reader.method.inner": 2, "Reader.decorated": 4}


def test_no_function_is_longer_than_the_limit():
    lengths = {
        f"{path.relative_to(PACKAGE)}:{name}": lines
        for path in package_modules()
        for name, lines in function_lengths(path.read_text()).items()
    }
    assert "analyses/analysis.py:analyse" in lengths  # the package was found
    too_long = {name: lines for name, lines in lengths.items() if lines > LIMIT and name not in ALLOWED}
    assert not too_long, f"longer than {LIMIT} lines: split along its phases: {too_long}"
    stale = {name: lengths.get(name) for name in ALLOWED if lengths.get(name, 0) <= LIMIT}
    assert not stale, f"allowed but not (or no longer) over {LIMIT} lines: drop from ALLOWED: {stale}"
