"""JsonlStore on open: duplicates are reported and never resolved by deleting an ok row, a whole
last row without its newline is kept, and only ids and statuses stay in memory."""

import logging
import tracemalloc

from orig_local.evaluation.jsonl_store import JsonlStore, read_rows


def test_ok_row_followed_by_failed_copy_is_kept_and_reported(tmp_path, caplog):
    path = tmp_path / "x.jsonl"
    data = b'{"id": "a", "status": "ok"}\n{"id": "b", "status": "ok"}\n{"id": "a", "status": "failed", "error": "e"}\n'
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING):
        store = JsonlStore(path)
    assert path.read_bytes() == data  # nothing deleted, nothing rewritten
    assert store.duplicates == ["a"] and "more than one row" in caplog.text
    assert store.status("a") == "ok" and store.done == {"a", "b"}  # resume does not rerun it

    # --retry-errors drops the failed copy only: the ok row stays
    store = JsonlStore(path, retry={"failed", "degraded"})
    assert path.read_bytes() == b'{"id": "a", "status": "ok"}\n{"id": "b", "status": "ok"}\n'
    assert store.status("a") == "ok"


def test_two_ok_copies_stay_and_two_failed_copies_rerun(tmp_path):
    path = tmp_path / "x.jsonl"
    data = (b'{"id": "a", "status": "ok", "v": 1}\n{"id": "a", "status": "ok", "v": 2}\n'
            b'{"id": "c", "status": "failed"}\n{"id": "c", "status": "failed"}\n')
    path.write_bytes(data)
    assert JsonlStore(path).done == {"a", "c"} and path.read_bytes() == data
    store = JsonlStore(path, drop_errors=True)
    assert store.done == {"a"} and [r["v"] for r in read_rows(path)] == [1, 2]
    store.append({"id": "c", "status": "ok"})
    assert store.status("c") == "ok"


def test_whole_last_row_without_newline_is_kept(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b", "v": 2}')
    store = JsonlStore(path)
    assert store.done == {"a", "b"}
    assert path.read_bytes() == b'{"id": "a"}\n{"id": "b", "v": 2}\n'
    store.append({"id": "c"})
    assert [r["id"] for r in read_rows(path)] == ["a", "b", "c"]


def test_torn_tail_is_left_out_of_a_rewrite(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"id": "a", "error": "x"}\n{"id": "b"}\n{"id": "c", "v')
    store = JsonlStore(path, drop_errors=True)
    assert store.done == {"b"} and path.read_bytes() == b'{"id": "b"}\n'


def test_store_holds_statuses_not_rows(tmp_path):
    path = tmp_path / "x.jsonl"
    big = "x" * 20_000
    path.write_bytes(b"".join(f'{{"id": "i{i}", "status": "ok", "text": "{big}"}}\n'.encode() for i in range(50)))
    tracemalloc.start()
    store = JsonlStore(path)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(store) == 50 and store.statuses == {f"i{i}": "ok" for i in range(50)}
    assert held < 100_000  # the file is 1 MB; rows kept in memory would hold all of it


def test_readers_agree_with_the_store_on_an_unterminated_last_row(tmp_path):
    from orig_local.evaluation.rundir import read_phase
    from orig_local.study.status import phase_counts

    (tmp_path / "generate.jsonl").write_bytes(b'{"id": "a", "status": "ok"}\n{"id": "b", "status": "ok"}')
    assert set(read_phase(tmp_path, "generate")) == {"a", "b"}
    assert phase_counts(tmp_path, "generate", ["a", "b", "c"]).done == 2


def test_later_phases_read_the_row_that_made_the_item_done(tmp_path):
    # a failed row in the main file and an ok copy in a shard file (e.g. a shard reran the item):
    # the store counts the item done because of the ok row, so the generation phase must be fed
    # that row, not the failed one it happens to meet first
    from orig_local.evaluation.rundir import read_phase

    (tmp_path / "agent.jsonl").write_bytes(
        b'{"id": "a", "status": "failed", "error": "backbone down"}\n{"id": "b", "status": "degraded", "v": 1}\n')
    (tmp_path / "agent.shard-1-of-2.jsonl").write_bytes(
        b'{"id": "a", "status": "ok", "final_prompt": "p"}\n{"id": "b", "status": "failed"}\n'
        b'{"id": "b", "status": "degraded", "v": 2}\n')
    rows = read_phase(tmp_path, "agent")
    assert rows["a"]["status"] == "ok" and rows["a"]["final_prompt"] == "p"
    assert rows["b"]["v"] == 1  # of equal statuses the first stays
    store = JsonlStore(tmp_path / "agent.jsonl")
    assert store.status("a") == "failed"  # the main file alone: failed, so a resume reruns it
