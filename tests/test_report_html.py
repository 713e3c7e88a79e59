"""The HTML report: one self-contained page from leaderboard rows, with charts, the bandwidth floor, the
environment and a section per failing candidate; every candidate-written string escaped."""
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from harness.leaderboard import build_rows
from harness.problem import load_problem
from harness.records import Record
from harness.report_html import (CHARTS_NEED, device_bandwidth, floor_bytes, render_report, write_report)

REPO = Path(__file__).resolve().parent.parent
PROBLEM = load_problem(REPO / "problems" / "scalar_gated_delta.yaml")
SHAPES = ["seed", "medium"]
ATTACK = "<script>alert(1)</script>"
H200 = {"device": "cuda", "device_name": "NVIDIA H200", "driver": "580.159.04", "torch": "2.11.0+cu130",
        "torch_cuda": "13.0", "harness_commit": "abc1234", "cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 16}
CPU = {"device": "cpu", "device_name": "Intel(R) Xeon(R)", "torch": "2.4.0", "harness_commit": "abc1234",
       "cpu": "Intel(R) Xeon(R)", "cpu_count": 2}


def record(candidate, shape, status, time_us=None, kind="candidate", reason="", check=""):
    # samples around the median, so rows get a 95% interval as real records do
    timing = {"samples_us": [time_us * (1 + d / 100) for d in range(-10, 11)], "n": 21} if time_us else {}
    return Record(run_id="r", problem="scalar_gated_delta", problem_sha256="ps", candidate=candidate,
                  candidate_sha256="c" * 64, kind=kind, shape=shape, status=status, reason=reason, stage="done",
                  env_key="e", config_sha256="cfg", device="cuda", time_us=time_us, check=check, timing=timing,
                  max_abs_err=1e-6 if time_us else None)


def synthetic_rows():
    records = []
    for name, kind, times in [("ref:eager", "baseline", (9500.0, 109000.0)), ("ref:graph", "baseline", (300.0, 5000.0)),
                              ("fast", "candidate", (5.0, 117.0)), ("medium_one", "candidate", (190.0, 3900.0)),
                              ("slow", "candidate", (280.0, 4500.0))]:
        records += [record(name, shape, "ok", t, kind=kind) for shape, t in zip(SHAPES, times)]
    records += [record("evil" + ATTACK, shape, "integrity", reason="D108: took too long " + ATTACK, check="D108")
                for shape in SHAPES]
    records += [record("broken", "seed", "ok", 50.0), record("broken", "medium", "wrong", reason="max error 3")]
    order = ["ref:eager", "ref:graph", "fast", "medium_one", "slow", "evil" + ATTACK, "broken"]
    return build_rows(records, order, SHAPES)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    pytest.importorskip("matplotlib")
    directory = tmp_path_factory.mktemp("report")
    log = directory / "build.log"
    log.write_text("nvcc: error: something " + ATTACK + "\n")
    path = write_report(directory, PROBLEM, H200, synthetic_rows(), SHAPES, {"run_id": "r1"}, logs={"broken": log})
    assert path == directory / "report.html"
    return path


def test_page_is_self_contained(page):
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", text, re.I)
    assert "<link" not in text.lower()
    assert text.count("<script>") == 1     # the sorting script alone


def test_one_chart_per_shape_and_the_speedup_chart(page):
    text = page.read_text()
    assert text.count("<svg") == len(SHAPES) + 1
    assert 'id="chart-speedup"' in text and all(f'id="chart-{i}"' in text for i in range(len(SHAPES)))
    seed_chart = text[text.index('id="chart-0"'):text.index('id="chart-1"')]
    assert "(baseline)" in seed_chart and "broken" not in seed_chart   # wrong at medium: not charted at seed
    assert CHARTS_NEED not in text


def test_bandwidth_fraction_on_an_h200(page):
    text = page.read_text()
    assert "4.8 TB/s for NVIDIA H200 (source: datasheet)" in text
    # fast at medium: 3 inputs of 8*1024*16*64 floats, 2 of 8*1024*16, and an output like q; 4 bytes each
    medium = PROBLEM.shapes["medium"]
    assert floor_bytes(PROBLEM, medium) == (4 * 8 * 1024 * 16 * 64 + 2 * 8 * 1024 * 16) * 4
    fraction = floor_bytes(PROBLEM, medium) / 117e-6 / 4.8e12
    assert f"{fraction * 100:.2f}%" in text
    assert "Assumption: the output has the shape of the first input" in text


def test_unknown_devices_have_no_bandwidth():
    assert device_bandwidth(CPU).source == "not known" and device_bandwidth(CPU).bytes_per_s is None
    assert device_bandwidth({"device": "cuda", "device_name": "Some Future GPU"}).source == "not known"
    assert device_bandwidth({"device": "cuda", "device_name": "NVIDIA H100 80GB HBM3"}).bytes_per_s == 3.35e12
    text = render_report(PROBLEM, CPU, synthetic_rows(), SHAPES, {})
    assert "not known (source: not known), so no fraction is given" in text


def test_failing_candidates_have_a_section_with_reason_and_log(page):
    text = page.read_text()
    section = text[text.index("<h2>Failing candidates</h2>"):]
    assert section.count('<section class="failure">') == 2
    assert "max error 3" in section and "integrity (D108)" in section
    assert "nvcc: error: something" in section and "Log excerpt" in section


def test_candidate_text_is_escaped(page):
    text = page.read_text()
    assert ATTACK not in text
    assert "alert(1)" in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # the one <script> element is ours: nothing a candidate wrote opens another
    assert len(re.findall(r"<script", text, re.I)) == 1


def test_dollar_signs_in_names_are_not_mathtext():
    pytest.importorskip("matplotlib")
    rows = build_rows([record("ref:eager", "seed", "ok", 100.0, kind="baseline"),
                       record("cost_$\\frac{1}{0}$_$", "seed", "ok", 10.0)], ["ref:eager", "cost_$\\frac{1}{0}$_$"],
                      ["seed"])
    text = render_report(PROBLEM, H200, rows, ["seed"], {})
    assert text.count("<svg") == 2


def test_without_matplotlib_the_tables_stay_and_one_line_says_why(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    text = render_report(PROBLEM, H200, synthetic_rows(), SHAPES, {})
    assert "<svg" not in text and CHARTS_NEED in text
    assert 'id="leaderboard"' in text and "Failing candidates" in text


def _browser() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome",
                                                "google-chrome-stable"))), None)


def _png_rows(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the defiltered scanlines of an 8-bit RGB(A) PNG (Chromium's screenshots)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, width = 8, [], 0
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    raw, stride, rows, previous = zlib.decompress(b"".join(chunks)), width * channels, [], bytes(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def test_a_real_browser_renders_the_charts(page, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium, chromium-browser or google-chrome binary on PATH (apt-get install chromium)")
    # --no-sandbox: Chromium refuses to run as root with its sandbox; the page is ours and fetches nothing
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(flags + ["--dump-dom", f"{page.as_uri()}#sort=1"], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") == len(SHAPES) + 1
    assert 'data-sorted-by="1"' in dom.stdout          # the script ran: sorted by candidate, from the address
    names = re.findall(r'<tr class="[a-z]+"><td[^>]*>[^<]*</td><td>([^<]*)</td>', dom.stdout)
    assert names[:3] == ["broken", "evil&lt;script&gt;alert(1)&lt;/script&gt;", "fast"]
    assert dom.stdout.count("<script") == 1
    shot = tmp_path / "report.png"
    run = subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1400,2000", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    width, height, rows = _png_rows(shot.read_bytes())
    assert (width, height) == (1400, 2000)
    # charts fill the page with colour: the bars are blue and the baselines orange, far from white
    blue = sum(line.count(bytes([0x4c, 0x78, 0xa8])) for line in rows)
    orange = sum(line.count(bytes([0xd9, 0xa4, 0x41])) for line in rows)
    assert blue > 5000 and orange > 1000, (blue, orange)
