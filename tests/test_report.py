"""Memory timelines (analysis.liveness.Timeline, present.plot) and the offline HTML report
(present.html), checked as text and in a real headless Chromium."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from html import unescape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fixture_path, needs_browser, needs_dot, needs_matplotlib
from hloscope.workflow import pipeline
from hloscope.analysis.liveness import Timeline, analyze, timeline_of
from hloscope.analysis.memory import memory_report
from hloscope.cli import run
from hloscope.hlo.parser import parse_file
from hloscope.present.html import render_html, target_key
from hloscope.present.plot import text_chart

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

BERT_PRE = fixture_path("cpu", "bert_layer_forward.pre.hlo")
BERT_POST = fixture_path("cpu", "bert_layer_forward.post.hlo")


# --- timelines ------------------------------------------------------------------------------

def test_timeline_keeps_every_step_when_short() -> None:
    a = analyze(parse_file(BERT_POST))
    t = timeline_of(a, "fused")
    assert t.steps == len(a.timeline) and t.temp == a.timeline
    assert t.step == tuple(range(t.steps))
    assert max(t.temp) == t.peak_bytes == a.figures.temp_peak_bytes == 3_539_968
    assert t.temp[t.peak_step] == t.peak_bytes
    assert (t.parameter_bytes, t.output_bytes) == (a.figures.parameter_bytes,
                                                    a.figures.output_bytes)


def test_timeline_downsampling_keeps_the_peak() -> None:
    a = analyze(parse_file(fixture_path("cpu", "bert_layer_train_step.post.hlo")))
    t = timeline_of(a, "fused", points=16)
    width = -(-len(a.timeline) // 16)
    assert len(t.temp) <= 16 and t.step == tuple(range(0, len(a.timeline), width))
    # Each point is the largest figure of its run of steps, so the peak survives.
    for k, s in enumerate(t.step):
        assert t.temp[k] == max(a.timeline[s:s + width])
    assert max(t.temp) == a.figures.temp_peak_bytes


def test_memory_report_has_fused_unfused_and_eager_timelines() -> None:
    r = memory_report(parse_file(BERT_POST), None, parse_file(BERT_PRE))
    assert [t.label for t in r.timelines] == ["fused", "unfused", "eager"]
    fused, unfused, eager = r.timelines
    assert fused.peak_bytes == r.fused.temp_peak_bytes
    assert unfused.peak_bytes == r.unfused.temp_peak_bytes
    assert eager.peak_bytes == r.eager.temp_peak_bytes
    assert unfused.steps > fused.steps  # the expanded module has more steps


def _timeline(label: str, temp: tuple[int, ...]) -> Timeline:
    peak = max(temp)
    return Timeline(label, len(temp), 100, 10, tuple(range(len(temp))), temp,
                    temp.index(peak), peak, f"op{temp.index(peak)}")


def test_text_chart_blocks_scale_and_peak_marker() -> None:
    """Two curves on one scale (the larger peak, 800 B, fills the top row): the unfused
    one reaches the top at step 2 of 4; the fused one peaks at a quarter of it."""
    chart = text_chart([_timeline("fused", (0, 200, 100, 0)),
                        _timeline("unfused", (0, 400, 800, 0))], width=4, height=2)
    lines = chart.splitlines()
    assert lines[0].startswith("temp bytes live over the schedule, one scale for all (top: "
                               "800 B)")
    assert "fused: peak 200 B at step 1 of 4 (op1)" in chart
    assert "unfused: peak 800 B at step 2 of 4 (op2)" in chart
    i = lines.index("unfused: peak 800 B at step 2 of 4 (op2)")
    # height 2 → 16 eighths; 400 B = 8 eighths (a full bottom cell), 800 B = 16 (both cells).
    assert lines[i + 1] == "     800 B │  █ "
    assert lines[i + 2] == "         0 │ ██ "
    assert lines[i + 4] == " " * 12 + "  ▲ peak"
    j = lines.index("fused: peak 200 B at step 1 of 4 (op1)")
    assert lines[j + 2] == "         0 │ ▄▂ "  # 200 B = 4 eighths, 100 B = 2


def test_text_chart_says_when_a_curve_is_below_one_block() -> None:
    chart = text_chart([_timeline("fused", (0, 1, 0)), _timeline("unfused", (0, 10_000, 0))])
    assert "fused: peak 1 B at step 1 of 3 (op1); below one block at this scale" in chart


def test_memory_plot_in_the_terminal(capsys) -> None:
    assert run(["memory", BERT_POST, "--pre", BERT_PRE, "--plot"]) == 0
    out = capsys.readouterr().out
    assert "temp bytes live over the schedule" in out
    for label in ("fused: peak 3.38 MiB", "unfused: peak", "eager: peak"):
        assert label in out
    assert "▲ peak" in out and "█" in out


@needs_matplotlib
def test_timeline_svg_is_xml_with_its_curves(tmp_path, capsys) -> None:
    out = tmp_path / "t.svg"
    assert run(["memory", BERT_POST, "--pre", BERT_PRE, "--svg", str(out)]) == 0
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    text = out.read_text()
    assert "timeline-axes" in text  # the axes' id
    for label in ("fused: peak", "unfused: peak", "eager: peak", "parameters (27.41 MiB)"):
        assert label in text
    # Deterministic: the same input draws the same file (no dates, fixed ids).
    again = tmp_path / "u.svg"
    assert run(["memory", BERT_POST, "--pre", BERT_PRE, "--svg", str(again)]) == 0
    assert again.read_text() == text


def test_memory_svg_without_matplotlib_says_how_to_install(tmp_path, capsys,
                                                           monkeypatch) -> None:
    import hloscope.present.plot as plot
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert plot.matplotlib_missing() is not None
    assert run(["memory", BERT_POST, "--svg", str(tmp_path / "t.svg")]) == 2
    assert "pip install 'matplotlib>=3.7'" in capsys.readouterr().err


# --- the HTML report ------------------------------------------------------------------------

def _programs() -> list[pipeline.Program]:
    """The BERT layer forward as compiled for cpu and gpu-h100, with XLA's figures."""
    out = []
    for target, backend in (("cpu", "cpu"), ("gpu-h100", "gpu")):
        d = fixture_path(target)
        with open(os.path.join(d, "bert_layer_forward.memory.json")) as f:
            xla = json.load(f)
        out.append(pipeline.Program(
            target, pipeline.read_text(os.path.join(d, "bert_layer_forward.pre.hlo")),
            pipeline.read_text(os.path.join(d, "bert_layer_forward.post.hlo")),
            f"{target}/pre", f"{target}/post", backend, "jax", xla))
    return out


def _report(targets: int = 1):
    modules: pipeline.Modules = {}
    rep = pipeline.diff_programs(_programs()[:targets], "examples/bert_layer.py", "forward",
                                 {"seq": 128}, modules=modules)
    return rep, modules


@pytest.fixture(scope="module")
def one_target_html() -> str:
    rep, modules = _report(1)
    return render_html(rep, pipeline.report_graphs(modules))


@pytest.fixture(scope="module")
def two_target_html() -> str:
    rep, modules = _report(2)
    return render_html(rep, pipeline.report_graphs(modules))


def test_fusion_table_opens_biggest_first_with_a_scope_of_this_module(one_target_html) -> None:
    rep, _ = _report(1)
    t = rep.targets[0]
    table = re.search(r'<table class="fusion-table".*?</table>', one_target_html, re.S).group(0)
    names = re.findall(r'<td class="mono" data-v="([^"]+)">', table)
    by_bytes = {f.name: f.eliminated_bytes for f in t.fusions}
    assert len(names) == len(t.fusions)
    assert [by_bytes[n] for n in names] == sorted(by_bytes.values(), reverse=True)
    hint = re.search(r'class="scope-filter" placeholder="e\.g\. ([^"]+)"', one_target_html)
    assert hint is not None and any(hint.group(1) in " ".join(f.scopes) for f in t.fusions)


def test_report_is_self_contained(one_target_html) -> None:
    html = one_target_html
    assert html.startswith("<!DOCTYPE html>")
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    # Nothing to fetch: the only URLs are XML namespace names inside the inline SVGs.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert not re.search(r"(src|href)=[\"'](https?:)?//", html)


def test_report_explains_the_memory_columns_and_classes(one_target_html) -> None:
    html = one_target_html
    assert 'title="parameters + outputs - alias + temp packed: what the program needs at ' \
        'once">total</th>' in html
    assert 'title="outputs kept in the buffer of the parameter they alias' in html
    assert '<td title="a temporary in the packed temp allocation">temp</td>' in html
    from hloscope.present.format import MEMORY_HELP
    assert MEMORY_HELP["temp-in-output"].startswith("a temporary XLA keeps inside an output")
    assert MEMORY_HELP["temp-in-donated"].startswith("a temporary XLA keeps inside a donated")


@needs_dot
def test_report_holds_the_tables_and_pictures(one_target_html) -> None:
    rep, _ = _report(1)
    t = rep.targets[0]
    html = one_target_html
    assert "hloscope diff examples/bert_layer.py" in html and "entry forward" in html
    assert "XLA memory_analysis()" in html and "3.38 MiB" in html  # XLA's temp, and ours
    assert "fused temp ÷ XLA&#39;s temp_size_in_bytes: 1.000" in html
    # One fusion row per fusion, each linked to its picture's cluster.
    rows = re.findall(r'<tr data-node="([^"]*)" data-scope=', html)
    assert len(rows) == len(t.fusions) == 29
    assert all(r.startswith("cpu-cluster-") for r in rows)
    ids = {unescape(i) for i in re.findall(r'\bid="([^"]+)"', html)}
    assert set(rows) <= ids
    assert "timeline-cpu" in ids and "cpu-timeline-timeline-axes" in ids
    assert 'class="graph-view" id="graph-cpu"' in html
    live = re.search(r'<table class="live">.*?</table>', html, re.S).group(0)
    assert live.count("<tr>") == 1 + min(15, len(t.live_at_peak))


def test_multi_target_report_has_tabs_and_a_comparison(two_target_html) -> None:
    html = two_target_html
    assert html.count('role="tab"') == 3  # comparison, cpu, gpu-h100
    assert 'id="tab-comparison"' in html and 'id="tab-gpu-h100"' in html
    assert 'class="comparison"' in html
    # Ids of the two graphs do not collide.
    ids = [unescape(i) for i in re.findall(r'\bid="([^"]+)"', html)]
    assert len(ids) == len(set(ids))
    assert target_key("gpu-h100") == "gpu-h100" and target_key("a b/c") == "a_b_c"


def test_report_without_dot_shows_the_source(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    rep, modules = _report(1)
    html = render_html(rep, pipeline.report_graphs(modules), timeline=False)
    assert "apt-get install graphviz" in html and '<pre class="dot">digraph' in html


@needs_dot
@needs_matplotlib
def test_diff_html_and_svg_from_the_command_line(tmp_path, capsys) -> None:
    html, svgs = tmp_path / "r.html", tmp_path / "svg"
    assert run(["diff", BERT_PRE, BERT_POST, "--html", str(html), "--svg", str(svgs),
                "-q"]) == 0
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(svgs)) == ["hlo.fusions.svg", "hlo.timeline.svg"]
    for name in os.listdir(svgs):
        ET.parse(svgs / name)


@needs_dot
@needs_matplotlib
def test_report_command_reads_a_saved_directory(tmp_path, capsys) -> None:
    saved = tmp_path / "saved"
    assert run(["diff", BERT_PRE, BERT_POST, "--save", str(saved), "-q", "--json"]) == 0
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert run(["report", str(saved), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    assert 'id="graph-hlo"' in out.read_text()


def test_report_command_errors(tmp_path, capsys) -> None:
    assert run(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "no module_*.txt files" in capsys.readouterr().err


# --- in a real browser ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-software-rasterizer"])
        yield b
        b.close()


def _open(browser, html: str, tmp_path):
    """Write the report to a file and load it from its file URL; the problems list collects
    console errors and warnings, page errors and any request but the page's own."""
    path = str(tmp_path / "report.html")
    with open(path, "w") as f:
        f.write(html)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    url = "file://" + path
    page.on("request", lambda r: problems.append(f"request {r.url}") if r.url != url else None)
    page.goto(url)
    return page, problems


@needs_browser
@needs_dot
@needs_matplotlib
def test_report_in_chromium(browser, one_target_html, tmp_path) -> None:
    page, problems = _open(browser, one_target_html, tmp_path)
    timeline = page.locator("#timeline-cpu svg").bounding_box()
    graph = page.locator("#graph-cpu svg").bounding_box()
    assert timeline and timeline["width"] > 400 and timeline["height"] > 150
    assert graph and graph["width"] > 400 and graph["height"] > 300
    # Click a fusion's row: its cluster in the graph is highlighted and brought into view.
    row = page.locator("#fusions-cpu tbody tr").nth(3)
    node_id = row.get_attribute("data-node")
    row.click()
    assert page.evaluate(f"document.getElementById({node_id!r}).classList.contains('hl')")
    assert "hl" in (row.get_attribute("class") or "")
    box = page.locator(f"[id='{node_id}']").bounding_box()
    view = page.locator("#graph-cpu").bounding_box()
    assert box and view
    assert view["x"] <= box["x"] + box["width"] / 2 <= view["x"] + view["width"]
    assert view["y"] <= box["y"] + box["height"] / 2 <= view["y"] + view["height"]
    # And back: clicking a node in the graph marks its row.
    other = page.locator("#fusions-cpu tbody tr").nth(0).get_attribute("data-node")
    page.evaluate(f"document.getElementById({other!r}).dispatchEvent("
                  "new MouseEvent('click', {bubbles: true}))")
    assert "hl" in (page.locator(f"#fusions-cpu tr[data-node='{other}']")
                    .get_attribute("class") or "")
    # The scope filter hides rows that do not match; sorting orders by the number.
    page.fill("input.scope-filter", "reduce_max")
    shown = page.evaluate("Array.from(document.querySelectorAll('#fusions-cpu tbody tr'))"
                          ".filter(r => !r.hidden).length")
    assert 0 < shown < 29
    page.fill("input.scope-filter", "")
    page.click("#fusions-cpu th:has-text('eliminated')")
    values = page.evaluate("Array.from(document.querySelectorAll('#fusions-cpu tbody tr'))"
                           ".map(r => Number(r.cells[7].dataset.v))")
    assert values == sorted(values, reverse=True) and values[0] > 0
    # Zoom changes the view box.
    before = page.get_attribute("#graph-cpu svg", "viewBox")
    page.click("#graph-cpu .zoom-in")
    assert page.get_attribute("#graph-cpu svg", "viewBox") != before
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert problems == []


@needs_browser
@needs_dot
@needs_matplotlib
def test_multi_target_report_tabs_in_chromium(browser, two_target_html, tmp_path) -> None:
    page, problems = _open(browser, two_target_html, tmp_path)
    assert page.is_visible("#tab-comparison") and not page.is_visible("#tab-cpu")
    page.click("nav.tabs button[data-tab='tab-gpu-h100']")
    assert page.is_visible("#tab-gpu-h100") and not page.is_visible("#tab-comparison")
    box = page.locator("#graph-gpu-h100 svg").bounding_box()
    assert box and box["width"] > 400 and box["height"] > 300
    page.screenshot(path=str(tmp_path / "tabs.png"))
    assert problems == []


def test_every_option_says_what_it_does() -> None:
    """Each option of each command has help text (a new user found --dtype, --depth, --top
    and sweep's --target without any)."""
    from hloscope.cli import main
    bare = [f"{name} {opt.opts[0]}" for name, command in main.commands.items()
            for opt in command.params
            if opt.param_type_name == "option" and not getattr(opt, "help", None)
            and opt.opts[0] not in ("--help",)]
    assert bare == []


def test_the_two_per_fusion_counts_are_labelled_where_they_appear(one_target_html,
                                                                  capsys) -> None:
    """`fusions` counts a fusion's computation as written (intermediates); `diff` counts the
    unfused program's values from inside it (eliminated). Both views say which is which."""
    from hloscope.cli import run
    from hloscope.present.format import ELIMINATED_HELP, INTERMEDIATES_HELP
    assert run(["fusions", fixture_path("cpu", "bert_layer_forward.post.hlo"), "--top", "1"]) == 0
    assert f"({INTERMEDIATES_HELP})" in capsys.readouterr().out
    from markupsafe import escape
    assert f'title="{escape(INTERMEDIATES_HELP)}">intermediates</th>' in one_target_html
    assert f'title="{escape(ELIMINATED_HELP)} (the table opens' in one_target_html


def test_long_names_are_clipped_in_the_middle_and_counted() -> None:
    from hloscope.present.format import NAME_LIMIT, clip, few
    assert clip("adam/Mul_51") == "adam/Mul_51"
    long = "gradient_tape/encoder_layer_1/multi_head_attention_1/attention_output_1/MatMul/MatMul"
    cut = clip(long)
    assert len(cut) == NAME_LIMIT and "…" in cut
    assert long.startswith(cut.split("…")[0]) and long.endswith(cut.split("…")[1])
    assert clip("a/Reshape;a/MatMul/Reshape") == "a/Reshape (merged)"
    assert few(["a", "b", "c", "d"]) == "a, b +2" and few(["a"]) == "a"


def test_fusion_table_scope_cells_stay_short_on_tensorflow_names() -> None:
    """TensorFlow's op names run to hundreds of characters (merged 'a;b' names of nested
    scopes): each cell of the scopes column stays within two clipped names and a count."""
    from hloscope.present.format import NAME_LIMIT
    path = fixture_path("cpu", "bert_layer_tf_train_step.post.hlo")
    from click.testing import CliRunner

    from hloscope.cli import main
    out = CliRunner().invoke(main, ["fusions", path, "--top", "0"]).output
    header = next(line for line in out.splitlines() if line.lstrip().startswith("fusion "))
    start, end = header.index("scopes"), header.index("source")
    assert end - start <= 2 * NAME_LIMIT + len(", ") + len(" +99") + 2


def test_json_lays_the_structure_over_lines_and_each_row_on_one() -> None:
    """--json: the report's structure indented, each item of a table (an array of objects) on
    a line of its own, a row (an object of plain values, or one four levels down that holds no
    table) on one line; the text reads back as the same data."""
    import json
    from hloscope.present.json import render
    report = {"schema": "x", "targets": [{
        "target": "cpu",
        "memory": {"fused": {"temp": 1, "steps": [1, 2]}},
        "fusions": [{"name": "f", "scopes": ["a", "b"]}, {"name": "g", "scopes": []}],
        "xla": {"allocations": [{"index": 0, "values": [{"id": 1}, {"id": 2}]}]}}]}
    text = render(report)
    assert json.loads(text) == report
    lines = text.splitlines()
    assert lines[:3] == ["{", '  "schema": "x",', '  "targets": [']
    assert '        "fused": {"temp": 1, "steps": [1, 2]}' in lines
    assert ['        {"name": "f", "scopes": ["a", "b"]},', '        {"name": "g", "scopes": []}'] \
        == lines[lines.index('      "fusions": [') + 1:lines.index('      "fusions": [') + 3]
    # an allocation holds a table of its values: over lines, each value a row
    assert '              {"id": 1},' in lines and '              {"id": 2}' in lines
    assert text.endswith("}\n")


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) |
                    st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12))
def test_json_writes_a_plain_value_as_the_encoder_does(value) -> None:  # type: ignore
    """A key or plain value written without the encoder (_scalar: str, int, bool, None) is
    written as the encoder writes it, and a report laid out over lines (its plain fields
    written so) reads back as the same data as the report encoded whole: non-ASCII text,
    escapes, big and negative ints, NaN and infinities alike."""
    from hloscope.present.json import _layout, _one_line, _scalar
    if not isinstance(value, (dict, list)):
        assert _scalar(value) == _one_line(value)
    report = {"r": {"s": {"t": {"v": value, "w": [value, {"x": value}]}}}, "u": value}
    out: list[str] = []
    _layout(report, "", 0, out)
    # read back, the two are the same data (NaN, which equals nothing, compared as written)
    assert json.dumps(json.loads("".join(out))) == json.dumps(json.loads(_one_line(report)))


def test_the_memory_report_says_when_a_module_is_not_scheduled(capsys) -> None:
    """A pre-optimization module (no is_scheduled=true) runs in text order: the report says
    so, in the terminal and in JSON; an optimized module's does not."""
    assert run(["memory", BERT_PRE]) == 0
    assert "not scheduled (no is_scheduled=true in its header)" in capsys.readouterr().out
    assert run(["memory", BERT_POST]) == 0
    assert "not scheduled" not in capsys.readouterr().out
    assert run(["memory", BERT_PRE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scheduled"] is False
    assert run(["memory", BERT_POST, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scheduled"] is True
