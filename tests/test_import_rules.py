"""The layering check `make lint` runs: it fails on an import cycle (lazy imports included,
TYPE_CHECKING imports not) and on an import of another package's private module."""

from __future__ import annotations

from pathlib import Path

from tests.import_rules import check, main

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
    [violation] = check(root)
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
    assert check(root) == []


def test_a_private_module_is_its_own_packages_business(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/_private.py": "",
            "other.py": "from pkg.sub import _private\n",
        },
    )
    assert check(root) == ["private import: pkg.other imports pkg.sub._private"]
    assert main([str(root)]) == 1


def test_agentscore_keeps_the_rules() -> None:
    assert check(ROOT / "agentscore") == []
