"""The README's reading order is a map of the package that cannot go stale: every module under
minigrad/ has its line there, and every line names a module that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Reading order"


def modules_in_tree(package: Path) -> set[str]:
    """Every module of the package as the map spells it: a package by its folder (``pkg/``
    stands for its ``__init__.py``), a module by its file; caches and hidden folders left out."""
    found = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).parts
        if any(p == "__pycache__" or p.startswith(".") for p in parts):
            continue
        if path.name == "__init__.py":
            found.add("/".join(parts[:-1]) + "/")
        else:
            found.add("/".join(parts))
    return found


def modules_in_map(readme: str) -> list[str]:
    """The first word of each line of the reading-order section that starts with minigrad/."""
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    section = readme[start:] if end < 0 else readme[start:end]
    return re.findall(r"^\s*(minigrad/\S*)", section, flags=re.MULTILINE)


def test_the_map_lists_every_module_once_and_nothing_else() -> None:
    listed = modules_in_map((ROOT / "README.md").read_text())
    tree = modules_in_tree(ROOT / "minigrad")
    missing = sorted(tree - set(listed))
    extra = sorted(set(listed) - tree)
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not (missing or extra or twice), (
        f"README.md's '{SECTION}' is out of step with minigrad/: give each module one line.\n"
        f"  missing from the map: {missing}\n  in the map but not in the tree: {extra}\n"
        f"  listed twice: {twice}")


def test_the_check_sees_a_stale_map(tmp_path: Path) -> None:
    pkg = tmp_path / "minigrad"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/__pycache__/c.py"):
        (pkg / name).write_text("")
    readme = (f"{SECTION}\n\n```\nminigrad/  x\nminigrad/a.py  y\nminigrad/gone.py  z\n```\n"
              "## Next\nminigrad/later.py  not in the section\n")
    assert modules_in_tree(pkg) == {"minigrad/", "minigrad/a.py", "minigrad/sub/",
                                    "minigrad/sub/b.py"}
    assert modules_in_map(readme) == ["minigrad/", "minigrad/a.py", "minigrad/gone.py"]
