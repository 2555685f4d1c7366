"""``akg kb``: list, search and build the Ascend knowledge base.

    akg kb list [--tag TAG] [--json]
    akg kb search "ub overflow, requires 3145728 bits" [-k 3] [--json] [--no-dense]
    akg kb build [--force]

Every sub-command accepts ``--extra-dir DIR`` (repeatable), ``--model PATH`` and ``--cache-dir DIR``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

__all__ = ["register"]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--extra-dir", action="append", default=[], metavar="DIR", help="a directory of extra entries (repeatable)"
    )
    parser.add_argument(
        "--model", default=None, help="local sentence-transformers model directory (default: bundled MiniLM)"
    )
    parser.add_argument(
        "--cache-dir", default=None, help="index cache directory (default: $AKG_CACHE_DIR/kb or ~/.cache/...)"
    )


def _kb(args: argparse.Namespace) -> Any:
    from ascend_kernel_gym.kb_index import KnowledgeBase

    return KnowledgeBase(extra_dirs=args.extra_dir, model=args.model, cache_dir=args.cache_dir)


def _cmd_list(args: argparse.Namespace) -> int:
    kb = _kb(args)
    entries = [e for e in kb.entries if args.tag is None or args.tag in e.tags]
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    wide = console.width >= 120
    table = Table(title=f"Ascend knowledge base: {len(entries)} of {len(kb)} entries")
    table.add_column("id", style="cyan", no_wrap=True, min_width=max((len(e.id) for e in entries), default=2))
    table.add_column("title", no_wrap=True, overflow="ellipsis")
    if wide:
        table.add_column("tags", style="dim", no_wrap=True, overflow="ellipsis")
        table.add_column("triggers", justify="right")
        table.add_column("source", style="dim", no_wrap=True, overflow="ellipsis")
    for e in entries:
        cells = [escape(e.id), escape(e.title)]
        if wide:
            cells += [escape(", ".join(e.tags)), str(len(e.triggers)), escape(e.source)]
        table.add_row(*cells)
    console.print(table)
    if not wide:
        console.print("[dim]tags, triggers and sources: a wider terminal or --json[/dim]")
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    import sys

    if args.k < 1:
        raise ValueError(f"-k must be >= 1, got {args.k}")
    kb = _kb(args)
    if not args.no_dense and not kb.index.is_cached:
        # The first dense search of an entry set builds its index; say so instead of going quiet.
        print(
            f"akg kb: building the knowledge-base index ({len(kb)} entries; once per entry set and model) ...",
            file=sys.stderr,
        )
        kb.build(progress=True)
    start = time.perf_counter()
    hits = kb.search(args.query, k=args.k, dense=not args.no_dense)
    elapsed = time.perf_counter() - start
    if args.json:
        print(
            json.dumps({"query": args.query, "hits": [h.to_dict() | {"title": h.entry.title} for h in hits]}, indent=2)
        )
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"top {args.k} for the query ({elapsed * 1000:.0f} ms)")
    table.add_column("#", justify="right")
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("title, and why it was retrieved")
    for rank, hit in enumerate(hits, 1):
        score = "-" if hit.score is None else f"{hit.score:.3f}"
        why = hit.why if len(hit.why) <= 60 else hit.why[:59] + "…"
        table.add_row(str(rank), escape(hit.id), score, f"{escape(hit.entry.title)}\n[magenta]{escape(why)}[/magenta]")
    console.print(table)
    if args.show_body:
        for hit in hits:
            console.rule(escape(hit.id))
            console.print(hit.entry.body, markup=False, highlight=False)
    else:
        console.print("[dim]the advice itself: --show-body; the full 'why': --json[/dim]")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ascend_kernel_gym.kb_index.index import INDEX_FILE

    console = Console()
    kb = _kb(args)
    start = time.perf_counter()
    index = kb.index
    load_s = 0.0
    if args.force or not (index.path / INDEX_FILE).is_file():
        with console.status("loading the embedding model..."):
            _ = index.encoder
        load_s = time.perf_counter() - start
    stats = kb.build(progress=True, force=args.force)
    elapsed = time.perf_counter() - start
    table = Table(title="knowledge-base index")
    table.add_column("field")
    table.add_column("value")
    rows = [
        ("entries", str(stats.entries)),
        ("embedding dim", str(stats.dim)),
        ("model", stats.model_id),
        ("from cache", "yes" if stats.from_cache else "no (built now)"),
        ("model load", f"{load_s + stats.load_model_s:.2f} s"),
        ("embedding", f"{stats.embed_s:.2f} s"),
        ("total", f"{elapsed:.2f} s"),
        ("cache path", stats.path),
    ]
    for name, value in rows:
        table.add_row(name, escape(value))
    console.print(table)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``akg kb {list,search,build}``."""
    kb_parser = subparsers.add_parser("kb", help="the Ascend knowledge base (list, search, build)")
    kb_sub = kb_parser.add_subparsers(dest="kb_command", metavar="KB_COMMAND")
    kb_parser.set_defaults(func=lambda args: (kb_parser.print_help(), 2)[1])

    p_list = kb_sub.add_parser("list", help="list the entries")
    p_list.add_argument("--tag", default=None, help="only entries with this tag")
    p_list.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_common(p_list)
    p_list.set_defaults(func=_cmd_list)

    p_search = kb_sub.add_parser("search", help="retrieve entries for a query or an error message")
    p_search.add_argument("query", help="error text, task description or question")
    p_search.add_argument("-k", type=int, default=3, help="number of results (default 3)")
    p_search.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p_search.add_argument("--no-dense", action="store_true", help="trigger regexes only (no embedding model)")
    p_search.add_argument("--show-body", action="store_true", help="print each entry's advice")
    _add_common(p_search)
    p_search.set_defaults(func=_cmd_search)

    p_build = kb_sub.add_parser("build", help="build (or load) the dense index and report timing")
    p_build.add_argument("--force", action="store_true", help="rebuild even if a cached index exists")
    _add_common(p_build)
    p_build.set_defaults(func=_cmd_build)
