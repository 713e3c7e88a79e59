"""Worker result lines reach the runner as they are written, each once; a cut-off line ends the stream."""
import json

from harness.spawn import LineReader


def test_lines_arrive_once_and_a_partial_line_waits(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"shape": "seed"}) + "\n" + '{"shape": "med')
    reader = LineReader(path)
    assert reader.new_lines() == [{"shape": "seed"}]
    assert reader.new_lines() == []
    with open(path, "a") as handle:
        handle.write('ium"}\n')
    assert reader.new_lines() == [{"shape": "medium"}]


def test_a_corrupt_line_ends_the_stream(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"shape": "seed"}\n{not json}\n{"shape": "large"}\n')
    reader = LineReader(path)
    assert reader.new_lines() == [{"shape": "seed"}]
    assert reader.new_lines() == []
