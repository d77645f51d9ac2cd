"""The per-debate search index: derived from the log, rebuilt when deleted, caught up after a kill."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from moot.core.search.index import INDEX_FILE, SearchIndex, match_expression
from tests.conftest import run_debate


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-turn demo conversation, shared by the tests that only read it (copied before any write)."""
    import asyncio

    tmp = tmp_path_factory.mktemp("debate")
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        _, folder = asyncio.run(run_debate(tmp, "Design a rate limiter for a public API",
                                           {"debate": {"protocol": "conversation", "turns": 40}}, rounds=None))
    finally:
        os.chdir(cwd)
    return folder.path


def _copy(debate: Path, tmp_path: Path) -> Path:
    dest = tmp_path / debate.name
    shutil.copytree(debate, dest)
    (dest / INDEX_FILE).unlink(missing_ok=True)
    return dest


def _contents(folder: Path) -> dict[str, str]:
    from moot.core.storage.folder import DebateFolder

    state = DebateFolder(folder).load()
    return {c.id: c.content for c in state.all_contributions()}


def test_catch_up_indexes_every_message_and_a_second_catch_up_adds_nothing(debate: Path, tmp_path: Path) -> None:
    folder = _copy(debate, tmp_path)
    index = SearchIndex.for_folder(folder)
    contents = _contents(folder)
    added = index.catch_up(folder / "events.jsonl")
    assert added >= len(contents) == 40
    assert index.catch_up(folder / "events.jsonl") == 0
    some_id, text = next(iter(contents.items()))
    assert index.text(some_id) == text


def test_a_message_is_found_by_its_own_words(debate: Path, tmp_path: Path) -> None:
    folder = _copy(debate, tmp_path)
    index = SearchIndex.for_folder(folder)
    index.catch_up(folder / "events.jsonl")
    contents = _contents(folder)
    cid, text = list(contents.items())[7]
    words = [w for w in text.split() if len(w) > 6][:6]
    hits = index.search(" ".join(words), limit=5)
    assert cid in [h.doc_id for h in hits]
    assert all("[" in h.excerpt for h in hits)
    # excluded ids and earlier steps
    assert cid not in [h.doc_id for h in index.search(" ".join(words), limit=5, exclude=[cid])]
    assert all(h.step < 5 for h in index.search(" ".join(words), limit=20, before_step=5))


def test_deleted_index_is_rebuilt_and_a_torn_index_file_is_started_again(debate: Path, tmp_path: Path) -> None:
    folder = _copy(debate, tmp_path)
    first = SearchIndex.for_folder(folder)
    n = first.catch_up(folder / "events.jsonl")
    first.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{folder / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    again = SearchIndex.for_folder(folder)
    assert again.catch_up(folder / "events.jsonl") == n
    again.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{folder / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    (folder / INDEX_FILE).write_bytes(b"not a database at all, a torn page " * 100)
    third = SearchIndex.for_folder(folder)
    assert third.catch_up(folder / "events.jsonl") == n


def test_an_index_behind_the_log_catches_up_from_where_it_stopped(debate: Path, tmp_path: Path) -> None:
    """A kill between the log's append and the index's commit leaves the index behind: the
    next open indexes only what it lacks (found by a binary search over the log)."""
    from moot.core.storage.log import read_events

    folder = _copy(debate, tmp_path)
    events = list(read_events(folder / "events.jsonl"))
    index = SearchIndex.for_folder(folder)
    half = len(events) // 2
    first = index.add_events(events[:half])
    rest = index.catch_up(folder / "events.jsonl")
    total = SearchIndex(tmp_path / "fresh.sqlite").catch_up(folder / "events.jsonl")
    assert first + rest == total == index.count()
    assert index.last_seq == events[-1].seq


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(a b", "a AND OR NOT", "*", "col:umn", "x" * 10_000,
                                   "; DROP TABLE docs; --", "\x1b[2J\x00", "", "   ", "🙂 ünïcödé ωmega"])
def test_hostile_queries_are_results_or_nothing_never_an_error(debate: Path, tmp_path: Path, query: str) -> None:
    folder = _copy(debate, tmp_path)
    index = SearchIndex.for_folder(folder)
    index.catch_up(folder / "events.jsonl")
    hits = index.search(query, limit=5)
    assert isinstance(hits, list)


def test_match_expression_quotes_terms_and_caps_them() -> None:
    assert match_expression("") is None
    assert match_expression("the and of") == '"the" OR "and" OR "of"'
    assert match_expression('Token "bucket" AND refill') == '"token" OR "bucket" OR "refill"'
    long = match_expression(" ".join(f"word{i}" for i in range(1000)))
    assert long is not None and long.count(" OR ") == 47


def test_an_index_of_an_older_schema_is_rebuilt_and_one_without_passages_gains_them(debate: Path,
                                                                                     tmp_path: Path) -> None:
    """One index serves recall and the reference passages. An index written before texts kept
    their sequence numbers (schema 1) is started again from the log; one written before the
    reference passages had a table (no `passages`) keeps its texts and gains it."""
    import sqlite3

    folder = _copy(debate, tmp_path)
    old = sqlite3.connect(folder / INDEX_FILE)
    old.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE VIRTUAL TABLE docs USING fts5(body, doc_id UNINDEXED, kind UNINDEXED, agent_id UNINDEXED,"
        " step UNINDEXED, tokenize='porter unicode61');"
        "INSERT INTO meta VALUES ('version', '1'), ('last_seq', '999999');")
    old.close()
    rebuilt = SearchIndex.for_folder(folder)
    assert rebuilt.last_seq == 0 and rebuilt.catch_up(folder / "events.jsonl") >= 40
    n = rebuilt.count()
    rebuilt._db.execute("DROP TABLE passages")  # as an index written before the passages table
    rebuilt.close()
    kept = SearchIndex.for_folder(folder)
    assert kept.count() == n and kept.catch_up(folder / "events.jsonl") == 0
    added = kept.index_references("set-1", [("notes/plan.md", "The ingest queue drains every night.\n")])
    assert added == 1 and [p.path for p in kept.passages("ingest queue")] == ["notes/plan.md"]


def test_a_document_is_found_by_its_id_without_reading_the_table_and_trimmed_with_it(debate: Path,
                                                                                     tmp_path: Path) -> None:
    """Recall looks up each archived item it brings back by id (`seq_of`, `text`): through
    `doc_rows`, an index by primary key, not a scan of the FTS table (an UNINDEXED column is read
    row by row). An index of schema 2, which had no such table, is started again from the log."""
    import sqlite3

    folder = _copy(debate, tmp_path)
    old = sqlite3.connect(folder / INDEX_FILE)
    old.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE VIRTUAL TABLE docs USING fts5(body, doc_id UNINDEXED, kind UNINDEXED, agent_id UNINDEXED,"
        " step UNINDEXED, seq UNINDEXED, tokenize='porter unicode61');"
        "INSERT INTO meta VALUES ('version', '2'), ('last_seq', '999999');")
    old.close()
    index = SearchIndex.for_folder(folder)
    assert index.last_seq == 0
    index.catch_up(folder / "events.jsonl")
    rows = index._db.execute("SELECT doc_id, seq, body FROM docs ORDER BY rowid").fetchall()
    first: dict[str, tuple[int, str]] = {}
    for doc_id, seq, body in rows:
        first.setdefault(doc_id, (int(seq), body))
    assert len(first) >= 40
    for doc_id, (seq, body) in first.items():
        assert index.seq_of(doc_id) == seq and index.text(doc_id) == body
    assert index.seq_of("no-such-id") is None and index.text("no-such-id") is None
    plan = index._db.execute("EXPLAIN QUERY PLAN SELECT row FROM doc_rows WHERE doc_id = ?", ("x",)).fetchall()
    assert any("PRIMARY KEY" in str(step[-1]) for step in plan)

    cut = sorted({seq for seq, _ in first.values()})[len(first) // 2]
    index.trim_after(cut)
    for doc_id, (seq, _body) in first.items():
        assert index.seq_of(doc_id) == (seq if seq <= cut else None)
    index.catch_up(folder / "events.jsonl")  # the log still holds them: they come back, findable again
    for doc_id, (seq, body) in first.items():
        assert index.seq_of(doc_id) == seq and index.text(doc_id) == body


def test_held_texts_are_found_here_at_once_and_by_other_processes_after_a_flush(debate: Path, tmp_path: Path) -> None:
    """The running debate writes its index in batches: its own views recall a text as soon as it is
    added; another process (`moot search`) sees it once the batch is committed, and a batch that
    never is (a kill) is caught up from the log."""
    from moot.core.storage.log import read_events

    folder = _copy(debate, tmp_path)
    events = list(read_events(folder / "events.jsonl"))
    texts = [e for e in events if e.type == "contribution_added"]
    last = texts[-1]
    writer = SearchIndex.for_folder(folder)
    writer.add_events(events[: events.index(last)])
    writer.add_events([last], hold=True)
    assert writer.holding and writer.text(last.contribution.id) == last.contribution.content
    reader = SearchIndex(folder / INDEX_FILE, readonly=True)
    assert reader.text(last.contribution.id) is None and reader.text(texts[0].contribution.id) is not None
    writer.flush()
    assert not writer.holding and reader.text(last.contribution.id) == last.contribution.content
    reader.close()

    writer.add_events(events[events.index(last) + 1:], hold=True)
    os.unlink(folder / INDEX_FILE)  # held, never committed: as if the process had been killed
    for suffix in ("-wal", "-shm"):
        Path(f"{folder / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    again = SearchIndex.for_folder(folder)
    again.sync(folder / "events.jsonl")
    assert again.text(last.contribution.id) == last.contribution.content
    assert again.last_seq == events[-1].seq


def test_a_new_index_uses_small_pages_and_a_long_wal(tmp_path: Path) -> None:
    """Each commit writes the pages it changed whole: small pages, and checkpoints far apart."""
    from moot.core.search.index import PAGE_SIZE, WAL_PAGES

    (tmp_path / "d").mkdir()
    index = SearchIndex.for_folder(tmp_path / "d")
    assert index._db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE < 4096
    assert index._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_PAGES > 1000
