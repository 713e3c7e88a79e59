"""Leaderboard rows derived from records; the terminal table prints candidate text verbatim."""
import dataclasses
import io

from rich.console import Console

from harness.cli import print_table
from harness.leaderboard import best_baselines, build_rows, table_cells, to_frame, to_markdown
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
    rows = build_rows([record("odd", "a", "runtime_error", reason="[/q] expected 3-d q [enforce x.cpp:1]")],
                      ["odd"], ["a"])
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=400), "p", RunSummary(rows, ["a"], None, 0, 0, 0.0))
    assert "[/q] expected 3-d q [enforce x.cpp:1]" in buffer.getvalue()


def test_baseline_skipped_at_some_shapes_stands_and_says_why():
    why = "torch.compile baseline runs only at shapes ['a']"
    records = [record("ref:eager", s, "ok", 100.0, kind="baseline") for s in "abc"] + [
        record("ref:compile", "a", "ok", 50.0, kind="baseline"),
        record("ref:compile", "b", "skipped", kind="baseline", reason=why),
        record("ref:compile", "c", "skipped", kind="baseline", reason=why)]
    row = {r.candidate: r for r in build_rows(records, ["ref:eager", "ref:compile"], list("abc"))}["ref:compile"]
    assert row.status == "ok" and row.shapes["a"]["speedup"] == 2
    assert row.reason == f"b, c skipped: {why}"


def test_tables_give_the_judges_clock_beside_the_claimed_time():
    rows = build_rows([record("ref:eager", "a", "ok", 100.0, kind="baseline", host_us=900.0),
                       record("fast", "a", "ok", 4.5, host_us=31.0)], ["ref:eager", "fast"], ["a"])
    header, body = table_cells(rows, ["a"])
    cells = {row[1]: dict(zip(header, row)) for row in body}
    assert cells["fast"]["a time"] == "4.5 µs" and cells["fast"]["a judge"] == "31 µs"
    assert cells["ref:eager"]["a judge"] == "900 µs"


def timed(candidate, shape, samples, kind="candidate"):
    samples = sorted(samples)
    return dataclasses.replace(record(candidate, shape, "ok", samples[len(samples) // 2], kind=kind),
                               timing={"method": "events", "samples_us": samples})


def test_times_carry_a_95_percent_interval_and_indistinguishable_rows_share_a_rank():
    spread = [0.97, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03, 0.99, 1.0, 1.01, 1.0]
    records = [timed("ref:eager", s, [100 * x for x in spread], kind="baseline") for s in "ab"]
    records += [timed("v13", s, [4.4 * x for x in spread]) for s in "ab"]     # 4.4 us
    records += [timed("v16", s, [4.42 * x for x in spread]) for s in "ab"]    # within v13's interval
    records += [timed("slow", s, [6.0 * x for x in spread]) for s in "ab"]    # clearly slower
    rows = {r.candidate: r for r in build_rows(records, ["ref:eager", "v13", "v16", "slow"], ["a", "b"])}
    assert rows["v13"].rank == rows["v16"].rank == 1 and rows["v13"].rank_shared and rows["v16"].rank_shared
    assert rows["slow"].rank == 3 and not rows["slow"].rank_shared
    entry = rows["v13"].shapes["a"]
    assert entry["ci_low_us"] < entry["time_us"] < entry["ci_high_us"]
    header, body = table_cells(list(rows.values()), ["a", "b"])
    cells = {row[1]: dict(zip(header, row)) for row in body}
    assert cells["v16"]["rank"] == "1=" and cells["slow"]["rank"] == "3"
    assert cells["v13"]["a time"].startswith("4.4 µs ±")


def test_console_summary_fits_120_columns():
    long_reason = "D108: the judge's clock measured 6277.0 us per call against a claimed 628.0 us " * 3
    records = [timed("ref:eager", s, [100.0 + i for i in range(10)], kind="baseline") for s in ("seed", "medium", "large")]
    records += [timed("a_rather_long_candidate_name_v17", s, [4.0 + i / 100 for i in range(10)])
                for s in ("seed", "medium", "large")]
    records += [record("cheat_with_a_long_name", s, "integrity", reason=long_reason, check="D108")
                for s in ("seed", "medium", "large")]
    rows = build_rows(records, ["ref:eager", "a_rather_long_candidate_name_v17", "cheat_with_a_long_name"],
                      ["seed", "medium", "large"])
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=120), "p", RunSummary(rows, ["seed", "medium", "large"], None, 0, 0, 0.0))
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 120, text
    assert "a_rather_long_candidate_name_v17" in text.replace("\n", "") or "a_rather_long" in text
    assert "D108" in text and "±" in text


def test_a_host_bound_time_says_so():
    eager = dataclasses.replace(record("ref:eager", "a", "ok", 8400.0, kind="baseline", host_us=8500.0),
                                timing={"method": "events", "host_bound": True})
    rows = build_rows([eager], ["ref:eager"], ["a"])
    header, body = table_cells(rows, ["a"])
    assert dict(zip(header, body[0]))["a time"] == "8.4 ms (host-bound)"
    assert to_frame(rows, ["a"]).loc[0, "a_host_bound"]


def test_leaderboard_files_are_readable_like_the_records(tmp_path):
    """They were 0600: write_atomic's temporary file comes from mkstemp, and the rename kept its mode."""
    import os
    import stat

    from harness.leaderboard import write_leaderboard
    from harness.records import append_record
    eager = record("ref:eager", "a", "ok", 100.0, kind="baseline")
    previous = os.umask(0o022)   # the usual umask, under which records.jsonl is 0644
    try:
        append_record(tmp_path / "records.jsonl", eager)
        write_leaderboard(tmp_path, "p", {"device": "cpu"}, build_rows([eager], ["ref:eager"], ["a"]), ["a"], {})
    finally:
        os.umask(previous)
    mode = lambda name: stat.S_IMODE((tmp_path / name).stat().st_mode)
    assert mode("records.jsonl") == 0o644
    assert {name: mode(name) for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.json")} == dict.fromkeys(
        ("leaderboard.md", "leaderboard.csv", "leaderboard.json"), 0o644)


def test_each_row_shows_its_change_from_the_last_run_of_the_same_source():
    records = [record("ref:eager", "a", "ok", 100.0, kind="baseline"), record("v16", "a", "ok", 9.0)]
    rows = {r.candidate: r for r in build_rows(records, ["ref:eager", "v16"], ["a"], {("c" * 64, "a"): 10.0})}
    assert abs(rows["v16"].change_vs_last - 0.9) < 1e-9 and rows["v16"].shapes["a"]["previous_us"] == 10.0
    header, body = table_cells(list(rows.values()), ["a"])
    assert dict(zip(header, body[0] if body[0][1] == "v16" else body[1]))["vs last run"] == "-10%"


def test_the_best_baseline_is_named_at_every_shape():
    records = [record("ref:eager", s, "ok", 100.0, kind="baseline") for s in "ab"] + [
        record("ref:compile", "a", "ok", 50.0, kind="baseline"),
        record("ref:compile", "b", "skipped", kind="baseline", reason="only at a"),
        record("ref:graph", "a", "ok", 60.0, kind="baseline"), record("ref:graph", "b", "ok", 80.0, kind="baseline"),
        record("fast", "a", "ok", 5.0), record("fast", "b", "ok", 8.0)]
    order = ["ref:eager", "ref:graph", "ref:compile", "fast"]
    rows = build_rows(records, order, ["a", "b"])
    assert best_baselines(rows, ["a", "b"]) == "a ref:compile 50 µs, b ref:graph 80 µs"
    fast = {r.candidate: r for r in rows}["fast"]
    assert fast.shapes["a"]["speedup_vs_best_baseline"] == 10 and fast.shapes["b"]["speedup_vs_best_baseline"] == 10
    assert "Best baseline per shape: a ref:compile 50 µs, b ref:graph 80 µs." in to_markdown("p", {}, rows, ["a", "b"])
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=120), "p", RunSummary(rows, ["a", "b"], None, 0, 0, 0.0))
    assert "Best baseline: a ref:compile 50 µs, b ref:graph 80 µs." in " ".join(buffer.getvalue().split())
