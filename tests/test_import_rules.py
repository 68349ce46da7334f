"""The layering check `make lint` runs: it fails on an import that goes up the layers, on a
module in no layer, on an import cycle (lazy imports included, TYPE_CHECKING imports not), on
an import of another package's private module, and on an HTTP library other than httpx."""

from __future__ import annotations

from pathlib import Path

from tests.import_rules import LAYERS, check, main

ROOT = Path(__file__).resolve().parent.parent


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_hidden_in_a_function_is_still_a_cycle(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "a.py": "from pkg.b import thing\n",
            "b.py": "def thing():\n    from pkg import c\n",
            "c.py": "import pkg.a\n",
        },
    )
    [violation] = check(root, ())
    assert violation.startswith("import cycle among 3 modules (pkg.a, pkg.b, pkg.c)")


def test_type_checking_imports_and_relative_imports_are_read_right(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "a.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.b import x\n",
            "b.py": "from . import a\n",
            "sub/__init__.py": "",
            "sub/_private.py": "",
            "sub/user.py": "from ._private import y\n",
        },
    )
    assert check(root, ()) == []


def test_a_private_module_is_its_own_packages_business(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/_private.py": "",
            "other.py": "from pkg.sub import _private\n",
        },
    )
    assert check(root, ()) == ["private import: pkg.other imports pkg.sub._private"]
    assert main([str(root)]) == 1  # and in no layer of agentscore's


LOW_HIGH = (("low", ("base", "sub")), ("high", ("", "top")))


def test_an_import_up_the_layers_fails_lint(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "base.py": "def helper():\n    from pkg import top\n",
            "top.py": "",
            "sub/__init__.py": "",
        },
    )
    assert check(root, LOW_HIGH) == ["upward import: pkg.base (low) imports pkg.top (high)"]


def test_a_module_outside_every_layer_fails_lint(tmp_path: Path) -> None:
    root = package(tmp_path, {"base.py": "", "stray.py": ""})
    assert check(root, LOW_HIGH) == ["no layer: pkg.stray is in none of LAYERS"]


def test_http_by_hand_or_through_a_second_library_fails_lint(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "base.py": "import socket\nfrom urllib.request import urlopen\n",
            "top.py": "def post():\n    import requests\n    import httpx\n",
        },
    )
    assert check(root, LOW_HIGH) == [
        "forbidden import: pkg.base imports socket (use agentscore._wire)",
        "forbidden import: pkg.base imports urllib.request.urlopen (use agentscore._wire)",
        "forbidden import: pkg.top imports requests (use agentscore._wire)",
    ]


def test_the_layers_name_every_agentscore_package() -> None:
    named = {prefix.split(".")[0] for _, prefixes in LAYERS for prefix in prefixes}
    on_disk = {
        path.stem if path.suffix else path.name
        for path in (ROOT / "agentscore").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert on_disk <= named


def test_agentscore_keeps_the_rules() -> None:
    assert check(ROOT / "agentscore") == []


def test_the_root_of_the_package_stays_a_ground_floor() -> None:
    # The face, the ground types and the thinnest placements; a new module finds a wing.
    modules = sorted(path.name for path in (ROOT / "agentscore").glob("*.py"))
    assert len(modules) <= 16, modules
