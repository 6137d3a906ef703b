"""clawlog as a user gets it: the wheel and the sdist built from this checkout, the wheel
installed into a fresh venv, and an application with its own ``tools``, ``events``,
``actors`` and ``projections`` packages embedding it, logging through it, running its
command line and type-checking against it.

Built and installed once per module (a few seconds from the pip cache); the build runs
on a copy of the sources, so the checkout gets no ``build/``, ``dist/`` or egg-info.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
_NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".benchmarks",
    ".hypothesis",
    ".mcp-peers",
    "node_modules",
    "*.so",  # the editable install's build of events/_chain_seal.c: the build makes its own
    "*.db",
    "*.db-*",
    "*.db.lock",
    "*.workspace",
)
#: The application's own top-level packages, named like clawlog's subpackages.
APP_PACKAGES = ("actors", "events", "projections", "tools")


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def script(self, name: str) -> Path:
        return self.path / "bin" / name


def run(
    args: list[str | Path], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a command with an environment that cannot see this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    work = tmp_path_factory.mktemp("build")
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_NOT_SOURCES)
    ok(run([sys.executable, "-m", "build", "--outdir", work / "dist", source], cwd=work))
    (wheel,) = (work / "dist").glob("clawlog-*.whl")
    (sdist,) = (work / "dist").glob("clawlog-*.tar.gz")
    return Dist(wheel=wheel, sdist=sdist)


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv holding the wheel and its dependencies (from the package index as pip
    is configured here, through its cache). No pip inside: this pip installs into it."""
    env = Venv(tmp_path_factory.mktemp("venv") / "venv")
    ok(run([sys.executable, "-m", "venv", "--without-pip", env.path], cwd=env.path.parent))
    # --no-compile: byte-compiling every dependency takes a third of the install
    pip = [sys.executable, "-m", "pip", "--python", env.python, "install", "-q", "--no-compile"]
    ok(run([*pip, dist.wheel], cwd=env.path.parent, timeout=600))
    return env


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An application directory whose own packages use clawlog's subpackage names."""
    directory = tmp_path_factory.mktemp("app")
    for name in APP_PACKAGES:
        (directory / name).mkdir()
        (directory / name / "__init__.py").write_text(f'Event = "app\'s own {name}"\n')
    return directory


# -- the distributions --------------------------------------------------------------------
def test_the_wheel_installs_one_top_level_package_clawlog(dist: Dist) -> None:
    names = zipfile.ZipFile(dist.wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"clawlog", _dist_info(dist.wheel)}
    for required in (
        "clawlog/__init__.py",
        "clawlog/py.typed",
        "clawlog/cli/__init__.py",
        "clawlog/actors/__init__.py",
        "clawlog/actors/system.py",
        "clawlog/events/__init__.py",
        "clawlog/projections/__init__.py",
        "clawlog/tools/__init__.py",
    ):
        assert required in names
    entry_points = zipfile.ZipFile(dist.wheel).read(f"{_dist_info(dist.wheel)}/entry_points.txt")
    assert "clawlog = clawlog.cli:main" in entry_points.decode()


def test_the_sdist_holds_the_subpackages_as_files_not_symlinks(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as archive:
        members = {m.name.split("/", 1)[-1]: m for m in archive.getmembers()}
    assert "pyproject.toml" in members
    assert "clawlog/py.typed" in members
    for name in APP_PACKAGES:
        assert members[f"clawlog/{name}/__init__.py"].isfile()
        assert not members[f"clawlog/{name}"].issym()


def _dist_info(wheel: Path) -> str:
    name, version = wheel.name.split("-")[:2]
    return f"{name}-{version}.dist-info"


# -- an application embedding it ----------------------------------------------------------
APP = """
import asyncio, json, logging, sys

import actors, events, projections, tools  # the application's own packages

import clawlog
from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, call, reply


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def explode(ctx, args):
    raise RuntimeError("the application's tool failed")


async def main() -> dict:
    records = Records()
    logging.getLogger().addHandler(records)
    model = ScriptedModel([call("explode"), reply("recovered")])
    async with System.open("app.db") as system:
        await system.register_agent(
            AgentConfig(key="main"), model, tools=[FunctionTool("explode", explode)]
        )
        answer = await system.send("main", "user-1", "hello")
    from clawlog.events import Event
    from clawlog.events.backends.sqlite_writer import compiled_seal
    return {
        "compiled_seal": getattr(compiled_seal, "__module__", None),
        "answer": answer,
        "clawlog": clawlog.__file__,
        "own": [actors.Event, events.Event, projections.Event, tools.Event],
        "clawlog_event": Event.__module__,
        "records": [
            {"name": r.name, "level": r.levelname, "message": r.getMessage()}
            for r in records.records
        ],
    }


print(json.dumps(asyncio.run(main())))
"""


@pytest.fixture(scope="module")
def app_run(venv: Venv, app: Path) -> dict[str, object]:
    """The application's run, with its directory as cwd and first on ``sys.path``."""
    (app / "app.py").write_text(APP)
    output = ok(run([venv.python, "app.py"], cwd=app, timeout=120))
    result: dict[str, object] = json.loads(output.splitlines()[-1])
    return result


def test_an_application_with_its_own_packages_runs_a_turn_on_the_installed_clawlog(
    venv: Venv, app_run: dict[str, object]
) -> None:
    assert app_run["answer"] == "recovered"
    assert str(app_run["clawlog"]).startswith(str(venv.path))
    assert app_run["own"] == [f"app's own {name}" for name in APP_PACKAGES]
    assert str(app_run["clawlog_event"]).startswith("clawlog.events")
    # The wheel (built from the sdist) carries the compiled writer loop (setup.py).
    assert app_run["compiled_seal"] == "clawlog.events._chain_seal"


def test_the_applications_logging_handler_receives_clawlogs_warning(
    app_run: dict[str, object],
) -> None:
    records = app_run["records"]
    assert isinstance(records, list)
    crashed = [r for r in records if "tool crashed" in r["message"]]
    assert crashed, records
    assert crashed[0]["name"].startswith("clawlog")
    assert crashed[0]["level"] == "WARNING"
    assert "explode" in crashed[0]["message"]


def test_the_console_script_runs_the_demo_and_reads_it_back(venv: Venv, app: Path) -> None:
    ok(run([venv.script("clawlog"), "demo", "--db", "demo.db"], cwd=app, timeout=120))
    history = ok(
        run([venv.script("clawlog"), "history", "lead", "demo-user", "--db", "demo.db"], cwd=app)
    )
    assert history.strip()
    tail = ok(run([venv.script("clawlog"), "tail", "-n", "5", "--db", "demo.db"], cwd=app))
    assert len(tail.strip().splitlines()) >= 5


# -- the mypy pair ------------------------------------------------------------------------
GOOD_PROGRAM = """
import asyncio
from typing import Any

from clawlog import (
    AgentConfig,
    FunctionTool,
    ScriptedModel,
    System,
    ToolContext,
    ToolResult,
    call,
    reply,
)


async def shout(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return ToolResult.text(str(args["text"]).upper())


SHOUT = FunctionTool(
    "shout",
    shout,
    description="Shout the text.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)


async def main() -> str:
    async with System.open("prog.db") as system:
        config = AgentConfig(key="main", instructions="Be brief.")
        model = ScriptedModel([call("shout", text="hi"), reply("HI!")])
        await system.register_agent(config, model, tools=[SHOUT])
        answer: str = await system.send("main", "user-1", "hello", channel="web")
    opened = await System.open("memory:")
    await opened.close()
    return answer


print(asyncio.run(main()))
"""

BAD_LINE = '        await system.send("main", 42, "hi")'
BAD_PROGRAM = f"""
import asyncio

from clawlog import AgentConfig, ScriptedModel, System, reply


async def main() -> None:
    async with System.open("prog.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("hi!")]))
{BAD_LINE}


asyncio.run(main())
"""


def mypy(venv: Venv, program: Path) -> subprocess.CompletedProcess[str]:
    """Strict mypy of this environment, seeing clawlog through the venv's site-packages."""
    return run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            program.parent / ".mypy_cache",  # shared by the pair: the second run is quick
            "--python-executable",
            venv.python,
            program.name,
        ],
        cwd=program.parent,
        timeout=600,
    )


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("programs")
    (directory / "good.py").write_text(GOOD_PROGRAM)
    (directory / "bad.py").write_text(BAD_PROGRAM)
    return directory


def test_a_user_program_on_the_documented_api_passes_strict_mypy(
    venv: Venv, programs: Path
) -> None:
    result = mypy(venv, programs / "good.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_typed_call_fails_strict_mypy_on_its_line(venv: Venv, programs: Path) -> None:
    result = mypy(venv, programs / "bad.py")
    assert result.returncode == 1, result.stdout + result.stderr
    line = BAD_PROGRAM.splitlines().index(BAD_LINE) + 1
    errors = [row for row in result.stdout.splitlines() if ": error:" in row]
    assert errors == [row for row in errors if row.startswith(f"bad.py:{line}:")], result.stdout
    assert any('"send"' in row and '"int"' in row for row in errors), result.stdout
