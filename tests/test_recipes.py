"""docs/architecture.md's recipes: the files a new device or verb touches, and no other place naming one.
(The recipes for a format, an architecture and an engine have theirs in test_format_table.py, test_arch_table.py
and test_engine_table.py.)"""

import importlib
import re
from pathlib import Path

import pytest

from tokspeed.cli.main import COMMANDS
from tokspeed.hardware.devices import all_hardware
from noun_scan import ROOT, files_naming

DOC = (ROOT.parent / "docs" / "architecture.md").read_text()

@pytest.mark.parametrize("hw_id", sorted(h.id for h in all_hardware()))
def test_a_device_is_named_in_at_most_two_modules(hw_id):
    files = files_naming(hw_id)
    assert len(files) <= 2, f"{hw_id} named in {files}: a device is a catalog row"


HELPERS = {"__init__", "main", "options", "flag_words"}     # cli/ modules that are no verb


def test_a_verb_is_one_cli_module_registered_once():
    modules = {p.stem for p in (ROOT / "cli").glob("*.py")} - HELPERS
    assert modules == set(COMMANDS.values()), "a cli module is a verb: register it in cli/main.py COMMANDS"
    for mod in COMMANDS.values():
        m = importlib.import_module(f"tokspeed.cli.{mod}")
        assert callable(m.add_parser) and callable(m.run)


def test_every_recipe_names_files_that_exist():
    """Each recipe's file list is real: a renamed file fails here until the recipe says the new name."""
    section = DOC[DOC.index("## Recipes"):]
    named = set(re.findall(r"`((?:tokspeed|data|scripts|tests|docs)/[\w./-]+\.(?:py|toml|csv|md))`", section))
    assert len(named) >= 15
    missing = [f for f in named if not (ROOT.parent / f).exists()]
    assert not missing, missing
    for kind in ("A GPU", "An architecture", "A weight format", "An engine", "A verb"):
        assert f"### {kind}" in section
