"""Leaderboard rows derived from records; the terminal table prints candidate text verbatim."""
import dataclasses
import io

from rich.console import Console

from harness.cli import print_table
from harness.leaderboard import build_rows, table_cells, to_frame
from harness.records import Record
from harness.runner import RunSummary


def record(candidate, shape, status, time_us=None, kind="candidate", reason="", check="", host_us=None):
    return Record(run_id="r", problem="p", problem_sha256="ps", candidate=candidate, candidate_sha256="c" * 64,
                  kind=kind, shape=shape, status=status, reason=reason, stage="done", env_key="e",
                  config_sha256="cfg", device="cpu", time_us=time_us, check=check, max_abs_err=1e-6 if time_us else None,
                  host_us=host_us)


def test_speedups_ranks_and_failures():
    records = [
        record("ref:eager", "a", "ok", 100.0, kind="baseline"), record("ref:eager", "b", "ok", 400.0, kind="baseline"),
        record("fast", "a", "ok", 10.0), record("fast", "b", "ok", 100.0),
        record("slow", "a", "ok", 50.0), record("slow", "b", "ok", 200.0),
        record("broken", "a", "ok", 1.0), record("broken", "b", "wrong", reason="max error 3 over tolerance"),
        record("cheat", "a", "integrity", reason="D101: input k was modified", check="D101"),
        record("cheat", "b", "integrity", reason="D101: input k was modified", check="D101"),
    ]
    rows = {r.candidate: r for r in build_rows(records, ["ref:eager", "fast", "slow", "broken", "cheat"], ["a", "b"])}
    assert rows["fast"].rank == 1 and rows["slow"].rank == 2 and rows["ref:eager"].rank == 3
    assert abs(rows["fast"].geomean_speedup - (10 * 4) ** 0.5) < 1e-9
    assert rows["fast"].shapes["a"]["speedup"] == 10
    assert rows["broken"].status == "wrong" and rows["broken"].rank is None and rows["broken"].geomean_speedup is None
    assert "b: max error" in rows["broken"].reason
    assert rows["cheat"].status == "integrity" and rows["cheat"].check == "D101"


def test_terminal_table_prints_reasons_verbatim():
    rows = build_rows([record("odd", "a", "runtime_error", reason="[/q] expected 3-d q [enforce fail at x.cpp:1]")],
                      ["odd"], ["a"])
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=400), "p", RunSummary(rows, ["a"], None, 0, 0, 0.0))
    assert "[/q] expected 3-d q [enforce fail at x.cpp:1]" in buffer.getvalue()


def test_baseline_skipped_at_some_shapes_stands_and_says_why():
    why = "torch.compile baseline runs only at shapes ['a']"
    records = [record("ref:eager", s, "ok", 100.0, kind="baseline") for s in "abc"] + [
        record("ref:compile", "a", "ok", 50.0, kind="baseline"),
        record("ref:compile", "b", "skipped", kind="baseline", reason=why),
        record("ref:compile", "c", "skipped", kind="baseline", reason=why)]
    row = {r.candidate: r for r in build_rows(records, ["ref:eager", "ref:compile"], list("abc"))}["ref:compile"]
    assert row.status == "ok" and row.shapes["a"]["speedup"] == 2
    assert row.reason == f"b, c skipped: {why}"


def test_tables_give_host_time_beside_device_time():
    rows = build_rows([record("ref:eager", "a", "ok", 100.0, kind="baseline", host_us=900.0),
                       record("fast", "a", "ok", 4.5, host_us=31.0)], ["ref:eager", "fast"], ["a"])
    header, body = table_cells(rows, ["a"])
    cells = {row[1]: dict(zip(header, row)) for row in body}
    assert cells["fast"]["a time"] == "4.5 µs" and cells["fast"]["a host"] == "31 µs"
    assert cells["ref:eager"]["a host"] == "900 µs"


def test_a_host_bound_time_says_so():
    eager = dataclasses.replace(record("ref:eager", "a", "ok", 8400.0, kind="baseline", host_us=8500.0),
                                timing={"method": "events", "host_bound": True})
    rows = build_rows([eager], ["ref:eager"], ["a"])
    header, body = table_cells(rows, ["a"])
    assert dict(zip(header, body[0]))["a time"] == "8.4 ms (host-bound)"
    assert to_frame(rows, ["a"]).loc[0, "a_host_bound"]
