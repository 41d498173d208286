"""The compiled parts of casstrace: probes/sysdig/scap_scan.c and scap_fold.c, the .scap import's inner
loops, and traces/bulk_insert.c, how its per-call rows go into the trace (see there).

Optional: where no C compiler or Python headers are found, the install goes on without it and the
Python loops read the same captures, slower (scripts/install says which one is in use).
Everything else about the distribution is in setup.cfg."""

from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """The repository root is the package casstrace: this file is not one of its modules."""

    def find_package_modules(self, package, package_dir):
        return [
            module
            for module in super().find_package_modules(package, package_dir)
            if Path(module[2]).resolve() != Path(__file__).resolve()
        ]


setup(
    ext_modules=[
        Extension(f"casstrace.probes.sysdig._{name}", [f"probes/sysdig/{name}.c"], optional=True)
        for name in ("scap_scan", "scap_fold")
    ]
    + [Extension("casstrace.traces._bulk_insert", ["traces/bulk_insert.c"], libraries=["sqlite3"], optional=True)],
    cmdclass={"build_py": BuildPy},
)
