"""A class lives in one file: no mixin reaches into its host (issue 23). A mixin shows itself
by annotating ``self`` with the class it is mixed into, by its name, or by reading private
attributes that only the class it is mixed into sets (a base class that reads ``self._queue``
which neither it nor its own bases ever assign).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tests.structure.source_tree import modules


def self_annotations(tree: ast.Module) -> list[tuple[int, str, str]]:
    """``(line, function, annotation)`` of every method of ``tree`` whose ``self`` is
    annotated with something other than its own class (or ``Self``)."""
    found: list[tuple[int, str, str]] = []
    owners: list[ast.Module | ast.ClassDef] = [tree]
    owners += [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for owner in owners:
        own = {"Self", "typing.Self"} | ({owner.name} if isinstance(owner, ast.ClassDef) else set())
        for node in owner.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            first = (node.args.posonlyargs + node.args.args)[:1]
            if first and first[0].arg == "self" and first[0].annotation is not None:
                annotation = ast.unparse(first[0].annotation).strip("'\"")
                if annotation not in own:
                    found.append((node.lineno, node.name, annotation))
    return found


def mixin_bases(tree: ast.Module) -> list[tuple[int, str, str]]:
    """``(line, class, base)`` of every class of ``tree`` with a base named ``*Mixin``."""
    return [
        (node.lineno, node.name, ast.unparse(base))
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for base in node.bases
        if ast.unparse(base).rsplit(".", 1)[-1].endswith("Mixin")
    ]


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Subscript):  # EventSourcedActor[SessionState]
        base = base.value
    return ast.unparse(base).rsplit(".", 1)[-1]


def _self_attributes(cls: ast.ClassDef, contexts: tuple[type[ast.expr_context], ...]) -> set[str]:
    return {
        node.attr
        for node in ast.walk(cls)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, contexts)
    }


def _defined(cls: ast.ClassDef) -> set[str]:
    """What ``cls`` itself provides: attributes it assigns, methods, class-level names."""
    names = _self_attributes(cls, (ast.Store, ast.Del))
    names.update(
        n.name for n in ast.walk(cls) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    )
    for statement in cls.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        elif isinstance(statement, ast.Assign):
            targets = statement.targets
        names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def reaches_into_host(
    trees: Iterable[tuple[str, ast.Module]],
) -> list[tuple[str, int, str, list[str]]]:
    """``(file, line, class, attributes)`` of every class used as a base whose methods read
    private attributes that neither it nor its bases (as far as ``trees`` shows) provide."""
    classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for where, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append((where, node))

    def provided(cls: ast.ClassDef, seen: frozenset[str]) -> set[str]:
        names = _defined(cls)
        for base in map(_base_name, cls.bases):
            for _, parent in classes.get(base, []) if base not in seen else []:
                names |= provided(parent, seen | {base})
        return names

    bases = {_base_name(b) for found in classes.values() for _, cls in found for b in cls.bases}
    reaching = []
    for name in sorted(bases):
        for where, cls in classes.get(name, []):
            read = _self_attributes(cls, (ast.Load,))
            private = {a for a in read if a.startswith("_") and not a.startswith("__")}
            missing = private - provided(cls, frozenset({name}))
            if missing:
                reaching.append((where, cls.lineno, name, sorted(missing)))
    return reaching


def test_no_mixin_reaches_into_its_host() -> None:
    found = [
        f"{module.relative}:{line}: {what}"
        for module in modules().values()
        for line, what in [
            *(
                (line, f"{name}(self: {host})")
                for line, name, host in self_annotations(module.tree())
            ),
            *((line, f"class {name}({base})") for line, name, base in mixin_bases(module.tree())),
        ]
    ]
    assert not found, "mixins (self annotated with the host, or a *Mixin base):\n" + "\n".join(
        sorted(found)
    )


def test_no_base_class_reads_private_state_it_never_sets() -> None:
    found = [
        f"{where}:{line}: {name} reads {', '.join(missing)}"
        for where, line, name, missing in reaches_into_host(
            (module.relative, module.tree()) for module in modules().values()
        )
    ]
    assert not found, "base classes reading their subclass's private state:\n" + "\n".join(found)


def test_the_finders_see_a_mixin() -> None:
    tree = ast.parse(
        "class Host(LoggingMixin, base.CacheMixin):\n"
        "    def own(self: Host) -> None: ...\n"
        "    def fine(self: Self) -> None: ...\n"
        "    def plain(self) -> None: ...\n"
        "class Api:\n"
        "    def send(self: 'Host', text: str) -> None: ...\n"
        "    async def ask(self: System) -> None: ...\n"
        "def helper(self: Host) -> None: ...\n"
    )
    assert self_annotations(tree) == [
        (8, "helper", "Host"),
        (6, "send", "Host"),
        (7, "ask", "System"),
    ]
    assert mixin_bases(tree) == [(1, "Host", "LoggingMixin"), (1, "Host", "base.CacheMixin")]


def test_a_base_that_reads_its_hosts_private_state_is_found() -> None:
    tree = ast.parse(
        "class Lifecycle:\n"
        "    def settle(self):\n"
        "        self._queue.pop()\n"
        "        self._done = True\n"
        "        return self._done, self._limit, self._own()\n"
        "    def _own(self): ...\n"
        "class Base(Generic[T]):\n"
        "    _limit = 3\n"
        "    def __init__(self):\n"
        "        self._inbox = []\n"
        "class Actor(Base[int]):\n"
        "    def run(self):\n"
        "        return self._inbox, self._limit\n"
        "class Session(Actor, Lifecycle):\n"
        "    def __init__(self):\n"
        "        self._queue = []\n"
    )
    assert reaches_into_host([("session.py", tree)]) == [
        ("session.py", 1, "Lifecycle", ["_limit", "_queue"])
    ]
