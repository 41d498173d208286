"""`casstrace --help` lists the commands from cli/group.py's COMMANDS without importing their modules;
each summary there is the command's own first sentence, shortened by click's rule."""

import importlib
import subprocess
import sys

import click
import pytest

from casstrace.cli.group import COMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_command_s_own(name):
    module, summary = COMMANDS[name]
    command = importlib.import_module(f"casstrace.cli.{module}").command
    assert command.hidden == (summary is None)
    if summary is not None:
        assert click.Command(name, help=summary).get_short_help_str(500) == command.get_short_help_str(500)


def test_help_lists_every_shown_command_without_importing_them():
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom casstrace.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in sys.modules if m.startswith('casstrace.cli.') and "
            "m.split('.')[-1] not in ('main', 'group')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shown = [name for name, (_, summary) in COMMANDS.items() if summary is not None]
    commands = listed[listed.index("Commands:") :]
    assert all(f"  {name} " in commands for name in shown) and "agent" not in commands
    assert listed.rstrip().splitlines()[-1] == "[]"  # no command's module imported
