"""One ``errors.py`` per top package, and every error of a package under that package's one
root (issue 23)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import clawlog
from tests.structure.source_tree import ROOT, package_of

#: Each top package's root error, in the package's ``errors`` module.
ROOTS = {
    "clawlog.events": "EventStoreError",
    "clawlog.actors": "ActorError",
    "clawlog.tools": "ToolError",
    "clawlog.projections": "ProjectionError",
    "clawlog.cli": "CliError",
}


def all_modules() -> Iterator[ModuleType]:
    """Every module of the installed package, imported (``__main__`` would run the CLI)."""
    for info in pkgutil.walk_packages(clawlog.__path__, "clawlog."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            yield importlib.import_module(info.name)


def errors_defined_in(module: ModuleType) -> Iterator[type[BaseException]]:
    """The exception classes ``module`` defines, nested ones included."""
    pending = list(vars(module).values())
    while pending:
        value = pending.pop()
        if inspect.isclass(value) and value.__module__ == module.__name__:
            pending.extend(v for v in vars(value).values() if inspect.isclass(v) and v is not value)
            if issubclass(value, BaseException):
                yield value


def test_one_errors_module_per_top_package() -> None:
    found = sorted(
        str(path.relative_to(ROOT))
        for folder in ("actors", "events", "projections", "tools", "clawlog/cli")
        for path in (ROOT / folder).rglob("errors.py")
    )
    assert found == [
        "actors/errors.py",
        "clawlog/cli/errors.py",
        "events/errors.py",
        "projections/errors.py",
        "tools/errors.py",
    ]


def test_every_error_derives_from_its_package_root() -> None:
    roots = {
        package: getattr(importlib.import_module(f"{package}.errors"), name)
        for package, name in ROOTS.items()
    }
    strays = sorted(
        f"{error.__module__}.{error.__qualname__} (bases: "
        f"{', '.join(b.__name__ for b in error.__bases__)}) is no {roots[package].__name__}"
        for module in all_modules()
        if (package := package_of(module.__name__)) in roots
        for error in errors_defined_in(module)
        if not issubclass(error, roots[package])
    )
    assert not strays, "errors outside their package's root:\n" + "\n".join(strays)


def test_each_root_is_a_plain_exception_in_its_errors_module() -> None:
    for package, name in ROOTS.items():
        root = getattr(importlib.import_module(f"{package}.errors"), name)
        assert root.__module__ == f"{package}.errors"
        assert root.__bases__ == (Exception,), f"{name} derives from {root.__bases__}"


def test_nested_and_module_level_errors_are_found() -> None:
    module = ModuleType("clawlog.tools.fake")
    exec(
        "class Stray(ValueError): ...\n"
        "class Holder:\n"
        "    class Inner(RuntimeError): ...\n"
        "class NotAnError: ...\n"
        "Imported = KeyError\n",
        vars(module),
    )
    assert sorted(e.__qualname__ for e in errors_defined_in(module)) == ["Holder.Inner", "Stray"]
