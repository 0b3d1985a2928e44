"""``graphmem graph``: a picture of part of a memory graph, as PNG, SVG or self-contained HTML.

The picture is read through the service's public reads, the same on both backends
(:meth:`~graphmem.MemoryService.entity_mentions` or a search, then
:meth:`~graphmem.MemoryService.get_entries`, ``entry_terms`` and ``next_links``): each
starts from the entity's node or from the entries by id, so a picture of N entries costs
the same whatever else the user holds. It is then laid out in three columns so that it
reads at a glance: tokens on the left, entries in the middle (oldest at the top, ``NEXT`` links
between turns of a conversation), entities on the right. Each term sits level with the
entries it links to. By default only tokens shared by two or more of the entries shown
(or matched by the query) are drawn; ``all_tokens`` draws every one.
"""

from __future__ import annotations

import html
import json
import shlex
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from graphmem._decompose import author_tokens, normalise_entity_name
from graphmem._models import SearchRequest, quote_ids
from graphmem._service import MemoryService
from graphmem.cli._context import CliError, replacing_file

__all__ = ["Picture", "gather_picture", "write_picture"]

COLOURS = {"Entry": "#4C78A8", "Token": "#2E8B57", "Entity": "#E8710A", "NEXT": "#4C78A8", "focus": "#C62828"}

# Layout, in pixels.
WIDTH = 1080
TOP = 96
ENTRY_LEFT, ENTRY_RIGHT = 330, 750
TOKEN_X, ENTITY_X = 300, 790
ENTRY_GAP, TERM_GAP = 46, 21
ENTRY_HEIGHT = 34
LABEL_CHARS = 57

@dataclass(slots=True)
class PictureNode:
    key: str
    kind: str  # Entry, Token or Entity
    label: str
    title: str
    focus: bool = False
    x: float = 0.0
    y: float = 0.0


@dataclass(frozen=True, slots=True)
class PictureEdge:
    source: str
    target: str
    kind: str  # HAS_TOKEN, MENTIONS or NEXT


@dataclass(slots=True)
class Picture:
    """What to draw: laid-out nodes, edges, a title and a caption."""

    title: str
    caption: str
    nodes: list[PictureNode] = field(default_factory=list)
    edges: list[PictureEdge] = field(default_factory=list)
    height: float = 0.0

    @property
    def width(self) -> float:
        return WIDTH


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def gather_picture(
    service: MemoryService,
    app: str,
    user: str,
    *,
    entity: str | None = None,
    query: str | None = None,
    project: str | None = None,
    max_entries: int = 12,
    all_tokens: bool = False,
) -> Picture:
    """Read the neighbourhood of an entity, or of a query's hits, and lay it out.

    Raises:
        CliError: the entity is unknown, or the query recalls nothing.
    """
    if (entity is None) == (query is None):
        raise CliError("give exactly one of --entity NAME or --query TEXT")
    focus_tokens: set[str] = set()
    focus_entities: set[str] = set()
    scores: dict[str, float] = {}
    scope = f"{app}/{user}" + (f" (project {project})" if project else "")  # for the picture's title
    quoted = quote_ids(app, user) + (f" (project {quote_ids(project)})" if project else "")  # for messages
    if project is not None and not service.supports_project_scoping():
        backend = "networkx" if type(service).__name__ == "GraphMemoryService" else type(service).__name__
        raise CliError(
            f"the {backend} backend has no projects, which --project needs: "
            "use a Neo4j store for project memory (--uri bolt://..., or --backend neo4j)"
        )
    if entity is not None:
        name = normalise_entity_name(entity)
        # What a search in the same scope sees (--query): global entries, and with a project
        # its entries too, never another project's.
        mentions = await service.entity_mentions(app, user, name, project_id=project, limit=max_entries)
        if not mentions.total:
            raise CliError(
                f"no entity {name!r} in {quoted}; entities are spaCy's named entities, lowercased "
                "(list them with graphmem cypher --file cypher/debug/top_entities.cypher "
                f"--param {shlex.quote('app=' + app)} --param {shlex.quote('user=' + user)})"
            )
        stored = mentions.entries
        focus_entities.add(name)
        what = f"entity “{name}”: {len(stored)} of {mentions.total} entries mentioning it"
    else:
        assert query is not None
        response = await service.search(
            SearchRequest(query=query, app_name=app, user_id=user, project_id=project, limit=max_entries)
        )
        if not response.hits:
            raise CliError(f"nothing in {quoted} is recalled for {query!r}; try other words")
        shown = [message for hit in response.hits for message in hit.reply]  # a reply's messages too
        scores = {message.entry_id: message.score for message in shown}
        for message in shown:
            focus_tokens.update(message.matched_tokens)
            focus_entities.update(message.matched_entities)
        stored = await service.get_entries(app, user, [message.entry_id for message in shown])
        what = f"query “{_short(query, 60)}”: its {len(shown)} best hits"
    ids = [e.entry_id for e in stored]
    entries = [
        {
            "id": e.entry_id,
            "author": e.memory.author,
            "text": e.memory.text,
            "timestamp": e.memory.timestamp,  # a UTC datetime: sorted as a time
            "session_id": e.session_id,
            "position": e.position,
            "project_id": e.project_id,
        }
        for e in stored
    ]
    terms = [
        {"entry": entry_id, "rel": rel, "term": term, "label": label}
        for entry_id, found in (await service.entry_terms(app, user, ids)).items()
        for rel, term, label in [
            *(("HAS_TOKEN", token, None) for token in found.tokens),
            *(("MENTIONS", e.name, e.label) for e in found.entities),
        ]
    ]
    links = [{"source": a, "target": b} for a, b in await service.next_links(app, user, ids)]
    picture = _build(entries, terms, links, focus_tokens, focus_entities, all_tokens, scores)
    picture.title = f"graphmem · {scope} · {what}"
    return picture


def _build(
    entries: Sequence[dict[str, Any]],
    terms: Sequence[dict[str, Any]],
    links: Sequence[dict[str, Any]],
    focus_tokens: set[str],
    focus_entities: set[str],
    all_tokens: bool,
    scores: dict[str, float] | None = None,
) -> Picture:
    scores = scores or {}
    entries = sorted(entries, key=lambda e: (e["timestamp"], e["session_id"] or "", e["position"], e["id"]))
    picture = Picture(title="", caption="")
    authors = {w for e in entries for w in author_tokens(e["author"])}
    entry_y: dict[str, float] = {}
    for row, e in enumerate(entries):
        y = TOP + row * ENTRY_GAP + ENTRY_HEIGHT / 2
        entry_y[e["id"]] = y
        stamp = str(e["timestamp"])[:16].replace("T", " ")
        where = f" · {e['project_id']}" if e["project_id"] else ""
        score = f"{scores[e['id']]:.2f}  " if e["id"] in scores else ""
        picture.nodes.append(
            PictureNode(
                key=f"entry:{e['id']}",
                kind="Entry",
                label=_short(f"{score}{e['author']}: {e['text']}"),
                title=(
                    f"{e['author']} · {stamp} · {e['session_id'] or 'no session'}#{e['position']}{where}\n{e['text']}"
                ),
                x=ENTRY_LEFT,
                y=y,
            )
        )
    linked: dict[tuple[str, str], list[str]] = defaultdict(list)
    labels: dict[str, str] = {}
    for t in terms:
        kind = "Token" if t["rel"] == "HAS_TOKEN" else "Entity"
        linked[(kind, t["term"])].append(t["entry"])
        if kind == "Entity":
            labels[t["term"]] = t["label"] or ""
    tokens_total = sum(1 for kind, _ in linked if kind == "Token")
    shown: dict[str, list[tuple[str, list[str]]]] = {"Token": [], "Entity": []}
    for (kind, term), ids in linked.items():
        focus = term in (focus_tokens if kind == "Token" else focus_entities)
        if kind == "Token" and not (all_tokens or focus or (len(ids) >= 2 and term not in authors)):
            continue
        shown[kind].append((term, ids))
    for kind, column_x in (("Token", TOKEN_X), ("Entity", ENTITY_X)):  # each term level with its entries
        placed = _spread(
            [(sum(entry_y[i] for i in ids) / len(ids), term) for term, ids in shown[kind]], top=TOP + 8
        )
        by_term = dict(shown[kind])
        for y, term in placed:
            focus = term in (focus_tokens if kind == "Token" else focus_entities)
            key = f"{kind.lower()}:{term}"
            label = term if kind == "Token" else f"{term}  {labels.get(term, '')}".rstrip()
            picture.nodes.append(
                PictureNode(
                    key,
                    kind,
                    _short(label, 30),
                    f"{kind} {term!r}, linked to {len(by_term[term])} entries shown",
                    focus,
                    column_x,
                    y,
                )
            )
            rel = "HAS_TOKEN" if kind == "Token" else "MENTIONS"
            # Edges in the entries' order, top to bottom: the same file whichever order a
            # backend read them in.
            in_order = sorted(by_term[term], key=lambda i: (entry_y[i], i))
            picture.edges.extend(PictureEdge(f"entry:{i}", key, rel) for i in in_order)
    picture.edges.extend(
        PictureEdge(f"entry:{link['source']}", f"entry:{link['target']}", "NEXT")
        for link in sorted(links, key=lambda link: (entry_y[link["source"]], link["source"], link["target"]))
    )
    bottom = max((n.y for n in picture.nodes), default=TOP)
    picture.height = bottom + 40
    hidden = tokens_total - len(shown["Token"])
    token_note = (
        f"{len(shown['Token'])} of {tokens_total} tokens (shared by 2+ entries or matched; --all-tokens for all)"
        if hidden
        else f"{tokens_total} tokens"
    )
    picture.caption = f"{len(entries)} entries · {token_note} · {len(shown['Entity'])} entities"
    return picture


def _spread(wanted: list[tuple[float, str]], *, top: float) -> list[tuple[float, str]]:
    """Place terms near their wanted heights, at least TERM_GAP apart, in order."""
    wanted.sort()
    placed: list[tuple[float, str]] = []
    for y, term in wanted:
        y = max(y, top, placed[-1][0] + TERM_GAP if placed else top)
        placed.append((y, term))
    if placed:  # centre the column on what it wanted, without going above the top
        shift = sum(w for w, _ in wanted) / len(wanted) - sum(p for p, _ in placed) / len(placed)
        shift = max(shift, top - placed[0][0])
        placed = [(y + shift, term) for y, term in placed]
    return placed


# ---------------------------------------------------------------------------- drawing


def write_picture(picture: Picture, path: Path) -> None:
    """Write ``picture`` as ``.png``, ``.svg`` or ``.html`` (chosen by the suffix)."""
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg", ".html", ".htm"):
        raise CliError(f"cannot draw {path.name}: the output file must end in .png, .svg or .html")
    with replacing_file(path) as fh:  # a failed drawing leaves an earlier picture as it was
        if suffix == ".png":
            _write_png(picture, fh)
        elif suffix == ".svg":
            fh.write(_svg(picture).encode("utf-8"))
        else:
            fh.write(_html(picture).encode("utf-8"))


def _edge_path(picture: Picture, edge: PictureEdge) -> tuple[tuple[float, float], ...] | None:
    """Bezier control points (start, c1, c2, end) of an edge."""
    nodes = {n.key: n for n in picture.nodes}
    a, b = nodes.get(edge.source), nodes.get(edge.target)
    if a is None or b is None:
        return None
    if edge.kind == "NEXT":
        x = ENTRY_LEFT + 14
        y1, y2 = a.y + ENTRY_HEIGHT / 2, b.y - ENTRY_HEIGHT / 2
        if y2 - y1 <= ENTRY_GAP - ENTRY_HEIGHT + 1:  # adjacent rows: a short straight link
            return ((x, y1), (x, y1), (x, y2), (x, y2))
        bend = ENTRY_LEFT - 26
        return ((ENTRY_LEFT, a.y), (bend, a.y), (bend, b.y), (ENTRY_LEFT, b.y))
    if b.kind == "Token":
        start, end = (TOKEN_X + 6, b.y), (ENTRY_LEFT, a.y)
    else:
        start, end = (ENTRY_RIGHT, a.y), (ENTITY_X - 6, b.y)
    mid = (start[0] + end[0]) / 2
    return (start, (mid, start[1]), (mid, end[1]), end)


def _svg(picture: Picture) -> str:
    w, h = picture.width, picture.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h:.0f}" width="{w}" height="{h:.0f}" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">',
        "<style>"
        ".e{fill:none;stroke-width:1.2;opacity:.55}.e.HAS_TOKEN{stroke:#2E8B57}.e.MENTIONS{stroke:#E8710A}"
        ".e.NEXT{stroke:#4C78A8;stroke-width:2;stroke-dasharray:5 3;opacity:.9}"
        ".n{cursor:default}.dim{opacity:.12}.hl{opacity:1;stroke-width:2.4}"
        "</style>",
        f'<rect width="{w}" height="{h:.0f}" fill="white"/>',
        f'<text x="20" y="30" font-size="16" font-weight="600" fill="#222">{html.escape(picture.title)}</text>',
        f'<text x="20" y="52" fill="#555">{html.escape(picture.caption)}</text>',
    ]
    legend = [("Token", "token"), ("Entry", "entry"), ("Entity", "entity"), ("focus", "matched / asked for")]
    x = 20
    for kind, text in legend:
        out.append(f'<circle cx="{x + 5}" cy="72" r="5" fill="{COLOURS[kind]}"/>')
        out.append(f'<text x="{x + 14}" y="76" fill="#333">{text}</text>')
        x += 30 + 7 * len(text)
    out.append(
        f'<line x1="{x}" y1="72" x2="{x + 24}" y2="72" stroke="{COLOURS["NEXT"]}" '
        'stroke-width="2" stroke-dasharray="5 3"/>'
        f'<text x="{x + 30}" y="76" fill="#333">NEXT (following turn)</text>'
    )
    for edge in picture.edges:
        points = _edge_path(picture, edge)
        if points is None:
            continue
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points
        out.append(
            f'<path class="e {edge.kind}" data-a="{html.escape(edge.source)}" data-b="{html.escape(edge.target)}" '
            f'd="M{x0:.1f},{y0:.1f} C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}"/>'
        )
    for node in picture.nodes:
        key = html.escape(node.key)
        title = f"<title>{html.escape(node.title)}</title>"
        colour = COLOURS["focus"] if node.focus else COLOURS[node.kind]
        weight = ' font-weight="700"' if node.focus else ""
        if node.kind == "Entry":
            out.append(
                f'<g class="n" data-k="{key}">{title}'
                f'<rect x="{ENTRY_LEFT}" y="{node.y - ENTRY_HEIGHT / 2:.1f}" width="{ENTRY_RIGHT - ENTRY_LEFT}" '
                f'height="{ENTRY_HEIGHT}" rx="7" fill="{COLOURS["Entry"]}"/>'
                f'<text x="{ENTRY_LEFT + 26}" y="{node.y + 4:.1f}" fill="white">{html.escape(node.label)}</text></g>'
            )
        elif node.kind == "Token":
            out.append(
                f'<g class="n" data-k="{key}">{title}'
                f'<circle cx="{node.x + 2}" cy="{node.y:.1f}" r="4.5" fill="{colour}"/>'
                f'<text x="{node.x - 6}" y="{node.y + 4:.1f}" text-anchor="end" fill="{colour}"{weight}>'
                f"{html.escape(node.label)}</text></g>"
            )
        else:
            out.append(
                f'<g class="n" data-k="{key}">{title}'
                f'<circle cx="{node.x - 2}" cy="{node.y:.1f}" r="5.5" fill="{colour}"/>'
                f'<text x="{node.x + 8}" y="{node.y + 4:.1f}" fill="{colour}"{weight}>'
                f"{html.escape(node.label)}</text></g>"
            )
    out.append("</svg>")
    return "\n".join(out)


_HOVER_SCRIPT = """
// Hovering a node dims everything not linked to it.
const svg = document.querySelector('svg');
svg.querySelectorAll('g.n').forEach(g => {
  g.addEventListener('mouseenter', () => {
    const k = g.dataset.k, near = new Set([k]);
    svg.querySelectorAll('path.e').forEach(p => {
      const on = p.dataset.a === k || p.dataset.b === k;
      if (on) { near.add(p.dataset.a); near.add(p.dataset.b); }
      p.classList.toggle('dim', !on); p.classList.toggle('hl', on);
    });
    svg.querySelectorAll('g.n').forEach(o => o.classList.toggle('dim', !near.has(o.dataset.k)));
  });
  g.addEventListener('mouseleave', () => {
    svg.querySelectorAll('.dim,.hl').forEach(o => o.classList.remove('dim', 'hl'));
  });
});
"""


def _html(picture: Picture) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(picture.title)}</title>"
        "<style>body{margin:16px;font-family:system-ui,sans-serif;color:#222}"
        "p{color:#555;max-width:60em}</style></head><body>\n"
        f"{_svg(picture)}\n"
        "<p>Hover a node to see what it links to; hover an entry for its full text. "
        "Made by <code>graphmem graph</code>.</p>\n"
        f"<script>{_HOVER_SCRIPT}</script>\n"
        f"<script type=\"application/json\" id=\"graph-data\">{_json_for_html(picture)}</script>\n"
        "</body></html>\n"
    )


def _json_for_html(picture: Picture) -> str:
    data = {
        "nodes": [{"key": n.key, "kind": n.kind, "title": n.title, "focus": n.focus} for n in picture.nodes],
        "edges": [{"source": e.source, "target": e.target, "kind": e.kind} for e in picture.edges],
    }
    # "</" would end the script element early.
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


def _write_png(picture: Picture, out: IO[bytes]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch, PathPatch
    from matplotlib.path import Path as MplPath

    w, h = picture.width, picture.height
    pt = 0.72  # one layout pixel in points, at 100 layout pixels per inch
    figure = Figure(figsize=(w / 100, h / 100), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, w)
    axes.set_ylim(h, 0)
    axes.axis("off")
    axes.text(20, 30, picture.title, fontsize=16 * pt, fontweight="bold", color="#222", va="baseline")
    axes.text(20, 52, picture.caption, fontsize=12 * pt, color="#555", va="baseline")
    x = 20.0
    for kind, text in (("Token", "token"), ("Entry", "entry"), ("Entity", "entity"), ("focus", "matched / asked for")):
        axes.scatter([x + 5], [72], s=40, color=COLOURS[kind])
        axes.text(x + 14, 76, text, fontsize=12 * pt, color="#333", va="baseline")
        x += 30 + 7 * len(text)
    axes.plot([x, x + 24], [72, 72], color=COLOURS["NEXT"], linewidth=1.5, linestyle=(0, (5, 3)))
    axes.text(x + 30, 76, "NEXT (following turn)", fontsize=12 * pt, color="#333", va="baseline")
    styles = {"HAS_TOKEN": (COLOURS["Token"], 0.9, "-", 0.5), "MENTIONS": (COLOURS["Entity"], 0.9, "-", 0.5)}
    styles["NEXT"] = (COLOURS["NEXT"], 1.5, "--", 0.9)
    for edge in picture.edges:
        points = _edge_path(picture, edge)
        if points is None:
            continue
        colour, width, style, alpha = styles[edge.kind]
        codes = [MplPath.MOVETO, MplPath.CURVE4, MplPath.CURVE4, MplPath.CURVE4]
        axes.add_patch(
            PathPatch(
                MplPath(points, codes), fill=False, edgecolor=colour, linewidth=width, linestyle=style, alpha=alpha
            )
        )
    for node in picture.nodes:
        colour = COLOURS["focus"] if node.focus else COLOURS[node.kind]
        weight = "bold" if node.focus else "normal"
        if node.kind == "Entry":
            axes.add_patch(
                FancyBboxPatch(
                    (ENTRY_LEFT, node.y - ENTRY_HEIGHT / 2),
                    ENTRY_RIGHT - ENTRY_LEFT,
                    ENTRY_HEIGHT,
                    boxstyle="round,pad=0,rounding_size=7",
                    facecolor=COLOURS["Entry"],
                    edgecolor="none",
                )
            )
            axes.text(ENTRY_LEFT + 26, node.y + 4, node.label, fontsize=12 * pt, color="white", va="baseline")
        elif node.kind == "Token":
            axes.scatter([node.x + 2], [node.y], s=28, color=colour, zorder=3)
            axes.text(
                node.x - 6,
                node.y + 4,
                node.label,
                fontsize=12 * pt,
                color=colour,
                ha="right",
                va="baseline",
                fontweight=weight,
            )
        else:
            axes.scatter([node.x - 2], [node.y], s=40, color=colour, zorder=3)
            axes.text(
                node.x + 8, node.y + 4, node.label, fontsize=12 * pt, color=colour, va="baseline", fontweight=weight
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs the default font lacks (emoji, CJK) are drawn as boxes
        figure.savefig(out, format="png", dpi=150, facecolor="white")
