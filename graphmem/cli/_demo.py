"""``graphmem demo``: the demo fixtures in memory, and what recall makes of its questions (one in Spanish)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from graphmem._fixtures import demo_fixtures_path, load_fixtures
from graphmem._models import SearchRequest
from graphmem._open import open_memory
from graphmem.cli._context import shared_decomposer
from graphmem.cli._render import ENTITY_STYLE, TOKEN_STYLE, can_write, decorated, hits_table

__all__ = ["DemoQuestion", "demo_questions", "run_demo"]


@dataclass(frozen=True, slots=True)
class DemoQuestion:
    app_name: str
    user_id: str
    query: str
    expect: str  # a piece of the entry the question is about; a test keeps it in the top 3
    shows: str


def demo_questions() -> list[DemoQuestion]:
    path = Path(__file__).resolve().parent.parent / "_data" / "demo_questions.json"
    return [DemoQuestion(**q) for q in json.loads(path.read_text(encoding="utf-8"))]


async def run_demo(console: Console, *, limit: int = 3) -> None:
    """Load the demo fixtures (global sessions) into memory and answer the demo questions."""
    console.print(
        Panel(
            "graphmem stores each conversation turn as an [bold #4C78A8]entry[/] node linked to its "
            f"[{TOKEN_STYLE}]token[/] nodes (lemmas) and [{ENTITY_STYLE}]entity[/] nodes (names of people, "
            "places, organisations), and links consecutive turns with NEXT. Recall scores entries by the "
            "tokens and entities they share with the question (rarer ones weigh more) plus a share of their "
            "neighbours' score, so each hit says [italic]why[/] it was recalled. No LLM, no network.",
            title="graphmem demo",
            title_align="left",
        )
    )
    service = await open_memory("memory:", nlp=shared_decomposer())  # nothing is written to disk
    # The default spinner is drawn in Braille, which an ASCII terminal cannot show.
    spinner = "dots" if can_write(console, "⠋") else "line"
    loading = decorated(console, "Loading the demo fixtures (the first run also loads spaCy)…")
    with console.status(loading, spinner=spinner):
        report = await load_fixtures(service, [demo_fixtures_path()], skip_projects=True)
    console.print(
        f"[bold]Loaded {report.sessions} conversations ({report.entries} entries) of {report.users} users "
        f"in {report.seconds:.1f} s[/] into an in-memory networkx graph.\n"
        f"[dim]networkx has no projects, so the {report.skipped_project_sessions} sessions of work projects were "
        "left out; Neo4j stores them: graphmem --backend neo4j load --demo[/]\n"
    )
    for number, question in enumerate(demo_questions(), start=1):
        response = await service.search(
            SearchRequest(query=question.query, app_name=question.app_name, user_id=question.user_id, limit=limit)
        )
        heading = Text.assemble(
            (f"{number}. ", "bold"),
            (f"{question.app_name}/{question.user_id} asks ", "dim"),
            (decorated(console, "“") + question.query + decorated(console, "”"), "bold"),
        )
        console.print(
            Group(
                heading,
                Text(question.shows, style="italic"),
                hits_table(response.hits, width=console.width, show_ids=False, show_time=False, expand=True),
            )
        )
        console.print()
    console.print(
        decorated(
            console,
            "[bold]Reading the tables:[/] score is in [0, 1], best first; "
            f"[{ENTITY_STYLE}]orange[/] names are matched entities, [{TOKEN_STYLE}]green[/] words matched tokens, "
            "and “context” is the share of the score that came from the neighbouring turns of the same conversation "
            "(“of #2”: from the turn in row 2).\n",
        )
    )
    console.print("[bold]Try it yourself[/] (into your own store; add --backend neo4j for Neo4j):")
    for command in (
        "graphmem load --demo --skip-projects",
        'graphmem search --app companion --user alice "Where does Maria live?"',
        "graphmem graph --app companion --user alice --entity Maria -o maria.html",
        "graphmem cypher --file cypher/debug/top_tokens.cypher --param app=companion --param user=alice",
    ):
        console.print(f"  {escape(command)}", soft_wrap=True)
