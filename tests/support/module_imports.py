"""What a package's modules import, read from their source (ast), for the tests of the layers' borders.

Every import counts, also one inside a function or under TYPE_CHECKING: a border that holds only at
import time is not a border.
"""

from __future__ import annotations

import ast
from pathlib import Path


def modules_of(package: Path) -> list[Path]:
    """Every module of the package folder `package`, its subpackages' included."""
    return sorted(package.rglob("*.py"))


def imported_names(module: Path, package_root: Path) -> set[str]:
    """The dotted names `module` imports: `import a.b` gives a.b; `from a import b` gives a and a.b (b may
    be a module); relative imports are resolved against the module's place under `package_root` (the
    folder holding the top-level package)."""
    tree = ast.parse(module.read_text(), filename=str(module))
    package = module.relative_to(package_root).parent.parts  # an __init__.py's package is its folder
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            names.add(origin)
            names.update(f"{origin}.{alias.name}" for alias in node.names)
    return names


def within(name: str, prefix: str) -> bool:
    """`name` is the module `prefix` or one inside it."""
    return name == prefix or name.startswith(prefix + ".")
