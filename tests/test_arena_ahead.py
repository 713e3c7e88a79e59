"""The arena mapped ahead (judge.Judge.map_arena_ahead, the sandbox's `map`): a judge started early sizes the
arena, allocates its pages and faults them into both mappings while it waits for the GPU; after the gate, hello
keeps those mappings. Run on the CPU, with the reference standing in for the candidate: verification passes
only where the judge and its sandbox see the same bytes."""
from __future__ import annotations

import pytest

from harness import judge
from tests.conftest import cpu_judge, load_reference


def make_judge() -> judge.Judge:
    return cpu_judge("arena-ahead-test", 11)


def verified(referee: judge.Judge, extra_bytes: int = 0) -> dict:
    for shape, slots in referee.planned_shapes():
        referee.layouts[shape.name] = referee.layout_for(shape, slots)
    referee.open_arena(max(judge.layout_end(layout) for layout in referee.layouts.values()) + extra_bytes)
    load_reference(referee)
    checks = {}
    for shape, _ in referee.planned_shapes():
        checks[shape.name] = referee.verify(shape, referee.layouts[shape.name], False)
    return checks


def test_hello_keeps_the_mappings_made_ahead():
    referee = make_judge()
    referee.start_sandbox()
    try:
        referee.map_arena_ahead()
        ahead = referee.arena
        needed = max(judge.layout_end(referee.layout_for(shape, slots)) for shape, slots in referee.planned_shapes())
        assert referee.confinement["arena_ahead"]["bytes"] >= needed
        assert referee.confinement["arena_ahead"]["populated"] is True   # Linux 5.14+ (MADV_POPULATE_WRITE)
        checks = verified(referee)
        assert referee.arena is ahead and len(ahead) == referee.confinement["arena_ahead"]["bytes"]
        assert all(check["trials"] >= 1 for check in checks.values())   # every check shape too
        with pytest.raises(judge.SandboxFailed, match="map after hello"):
            referee.sandbox.ask("map", arena_bytes=len(ahead))
    finally:
        referee.stop_sandbox()


def test_an_arena_larger_than_foreseen_is_mapped_afresh_on_both_sides():
    referee = make_judge()
    referee.start_sandbox()
    try:
        referee.map_arena_ahead()
        ahead_bytes = len(referee.arena)
        verified(referee, extra_bytes=ahead_bytes)   # an output far larger than any input would need this
        assert len(referee.arena) > ahead_bytes
    finally:
        referee.stop_sandbox()


def test_an_arena_that_memory_cannot_hold_twice_is_mapped_after_the_gate(monkeypatch):
    """The judge before this one still holds an arena as large: ahead of the gate there must be room for two."""
    referee = make_judge()
    referee.start_sandbox()
    try:
        monkeypatch.setattr(judge, "available_memory", lambda: 1 << 20)
        referee.map_arena_ahead()
        assert referee.arena is None
        assert referee.confinement["arena_ahead"].startswith("not mapped: ")
        assert all(check["trials"] >= 1 for check in verified(referee).values())
    finally:
        referee.stop_sandbox()
