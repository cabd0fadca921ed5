"""No input reaches a parser except through its gate (docs/security.md, "Gates").

The package is scanned for every call that turns bytes into values -- ``json.load(s)``, ``tomllib.load(s)``,
``csv.reader`` / ``csv.DictReader``, ``struct.unpack*`` / ``struct.Struct`` -- and each must sit in a module
named below: a gate (where outside data is parsed, bounded and typed) or a reader of the project's own data
files (tables shipped in the package, the calibration CSVs). A module added tomorrow that parses on its own
fails here until it goes through a gate or says why it need not."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "tokspeed"

GATES = {   # module -> the input kind it gates
    "guard/typed.py": "every JSON text from outside (files, servers, hubs, web clients)",
    "userfile.py": "TOML files the user names (hardware, profiles, price lists)",
    "guard/limits.py": "CSV text from outside (prompt files)",
    "files/gguf_reader.py": "GGUF headers (every count and length checked against the bytes left and the budgets)",
    "files/safetensors_reader.py": "the 8-byte header length of a safetensors file",
    "files/hf_hub.py": "the 8-byte header length of a safetensors file on a hub (then guard.typed)",
}
PROJECT_DATA = {   # module -> the packaged data it reads (not input)
    "engines/driver.py": "engines/*.toml tables",
    "engines/tables.py": "engines/*.toml tables",
    "engines/compat.py": "engines/compat.toml",
    "engines/eras.py": "engines/eras.toml",
    "models/catalog.py": "models/*.toml catalog",
    "hardware/catalog.py": "hardware/data/*.toml",
    "hardware/datafile.py": "hardware/data/*.toml",
    "serving/fitted.py": "serving/serving_fitted.toml",
    "hardware/arch.py": "hardware/archs.toml",
    "quant/format_table.py": "quant/formats.toml",
    "scale/collectives.py": "scale/fabrics.toml",
    "serving/engine_versions.py": "serving/engine_versions.toml",
    "serving/gemm_device.py": "serving/fp4_peaks.toml",
    "serving/kernel_efficiency.py": "serving/kernel_efficiency.toml",
    "serving/moe_routing.py": "serving/moe_routing.toml",
    "web/api.py": "web/presets.toml",
    "serving/schedulers.py": "serving/schedulers.toml",
    "serving/rows.py": "the serving calibration CSVs of the repository",
    "calibration/rows.py": "the calibration CSVs of the repository",
}
PARSERS = {("json", "load"), ("json", "loads"), ("tomllib", "load"), ("tomllib", "loads"), ("csv", "reader"),
           ("csv", "DictReader"), ("struct", "unpack"), ("struct", "unpack_from"), ("struct", "iter_unpack"),
           ("struct", "Struct")}


def parser_calls():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and (node.value.id, node.attr) in PARSERS:
                yield rel, f"{node.value.id}.{node.attr}", node.lineno


def test_every_parser_call_is_in_a_gate_or_reads_project_data():
    stray = [f"{rel}:{line} {name}" for rel, name, line in parser_calls() if rel not in GATES and rel not in PROJECT_DATA]
    assert not stray, ("parse outside data through its gate (guard.typed.parse/loads, userfile.parse_toml, "
                       f"guard.limits.csv_dict_rows) or name the module in this test with its reason: {stray}")


def test_the_lists_name_real_parsers():
    """A module that stopped parsing is taken off the lists (they stay a map, not a graveyard)."""
    seen = {rel for rel, _, _ in parser_calls()}
    assert set(GATES) | set(PROJECT_DATA) <= seen, sorted((set(GATES) | set(PROJECT_DATA)) - seen)


def test_no_module_parses_json_from_outside_but_the_gate():
    """json.loads appears once in the package: in guard/typed.py."""
    assert [rel for rel, name, _ in parser_calls() if name in ("json.loads", "json.load")] == ["guard/typed.py"]
