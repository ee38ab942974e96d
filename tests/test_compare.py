"""`hloscope compare`: two compiles aligned by source op.

A hand-made pair whose figures are worked out here; the real pairs of
scripts/capture_compare.py (the BERT step with and without donation, remat, bf16, a fusion pass
off), whose deltas must land on the scopes named in each test; a run against itself; the JSON's
sums against each side's own report.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import fixture_path, needs_browser, needs_dot, needs_jax, needs_matplotlib
from test_report import _open, browser  # noqa: F401  (the browser fixture, shared)
from hloscope.analysis.compare import Figures, TargetComparison, compare, dims, growth
from hloscope.analysis.scopes import NO_OP_NAME, scope_of
from hloscope.cli import run
from hloscope.workflow.pipeline import SideSpec, side_measures

META = 'metadata={{op_name="jit(f)/layer/{op}" source_file="/src/m.py" source_line={line}}}'
EXP, NEG = META.format(op="exp", line=3), META.format(op="broadcast_in_dim", line=4)

# A: exp and a broadcast in a fusion each, so exp's result is a buffer (1 KiB) that the
# broadcast reads (its output is twice the size: it cannot take the buffer over).
TWO_FUSIONS = f"""HloModule two, entry_computation_layout={{(f32[256]{{0}})->f32[256,2]{{1,0}}}}

fused_exp {{
  p = f32[256]{{0}} parameter(0)
  ROOT e = f32[256]{{0}} exponential(p), {EXP}
}}

fused_neg {{
  p = f32[256]{{0}} parameter(0)
  ROOT n = f32[256,2]{{1,0}} broadcast(p), dimensions={{0}}, {NEG}
}}

ENTRY main {{
  x = f32[256]{{0}} parameter(0)
  a = f32[256]{{0}} fusion(x), kind=kLoop, calls=fused_exp, {EXP}
  ROOT b = f32[256,2]{{1,0}} fusion(a), kind=kLoop, calls=fused_neg, {NEG}
}}
"""

# B: both in one fusion: exp's result never becomes a buffer.
ONE_FUSION = f"""HloModule one, entry_computation_layout={{(f32[256]{{0}})->f32[256,2]{{1,0}}}}

fused_both {{
  p = f32[256]{{0}} parameter(0)
  e = f32[256]{{0}} exponential(p), {EXP}
  ROOT n = f32[256,2]{{1,0}} broadcast(e), dimensions={{0}}, {NEG}
}}

ENTRY main {{
  x = f32[256]{{0}} parameter(0)
  ROOT b = f32[256,2]{{1,0}} fusion(x), kind=kLoop, calls=fused_both, {NEG}
}}
"""


@pytest.fixture(scope="module")
def hand_made(tmp_path_factory) -> TargetComparison:
    d = tmp_path_factory.mktemp("pair")
    (d / "a.hlo").write_text(TWO_FUSIONS)
    (d / "b.hlo").write_text(ONE_FUSION)
    a = side_measures(SideSpec(str(d / "a.hlo"), backend="cpu"))
    b = side_measures(SideSpec(str(d / "b.hlo"), backend="cpu"))
    return compare(a, b, "a", "b").targets[0]


def test_hand_made_totals(hand_made) -> None:
    a, b = hand_made.a, hand_made.b
    # A keeps exp's 1 KiB result between its two fusions; B has no temporary at all.
    assert (a.temp_peak_bytes, b.temp_peak_bytes) == (1024, 0)
    assert (a.parameter_bytes, a.output_bytes, b.parameter_bytes, b.output_bytes) == \
        (1024, 2048, 1024, 2048)
    assert (a.total_bytes, b.total_bytes) == (4096, 3072)
    assert (a.fusions, b.fusions) == (2, 1)
    # Fusing the two eliminates exp's result: 1 KiB of traffic, on B only.
    assert (a.eliminated_bytes, b.eliminated_bytes) == (0, 1024)


def test_hand_made_scopes_and_lines(hand_made) -> None:
    scopes = {r.key: r for r in hand_made.by_scope}
    assert set(scopes) == {"layer"}
    layer = scopes["layer"]
    assert layer.a == Figures(peak_bytes=1024, fusions=2)
    assert layer.b == Figures(fusions=1, eliminated_bytes=1024, eliminated_count=1)
    assert layer.delta == Figures(peak_bytes=-1024, fusions=-1, eliminated_bytes=1024,
                                  eliminated_count=1)
    lines = {r.key: r for r in hand_made.by_source}
    # exp (line 3): its buffer at A's peak, its fusion on A only, eliminated on B.
    assert lines["/src/m.py:3"].a == Figures(peak_bytes=1024, fusions=1)
    assert lines["/src/m.py:3"].b == Figures(eliminated_bytes=1024, eliminated_count=1)
    # The broadcast (line 4): a fusion on both sides (B's fusion carries its metadata).
    assert lines["/src/m.py:4"].delta == Figures()
    assert hand_made.by_source[0].key == "/src/m.py:3"  # the mover first


def test_hand_made_peak_buffers_and_regrouping(hand_made) -> None:
    assert hand_made.appeared_at_peak == ()
    [gone] = hand_made.vanished_at_peak
    assert (gone.name, gone.cls, gone.bytes, gone.op_name) == ("a", "temp", 1024, "layer/exp")
    assert hand_made.matched_fusions == 0
    moved = {(r.side, r.fusion): r for r in hand_made.regrouped}
    assert set(moved) == {("a", "a"), ("a", "b"), ("b", "b")}
    assert [(c.fusion, c.ops) for c in moved[("a", "a")].other] == [("b", 1)]
    assert [(c.fusion, c.ops) for c in moved[("a", "b")].other] == [("b", 1)]
    assert sorted((c.fusion, c.ops) for c in moved[("b", "b")].other) == [("a", 1), ("b", 1)]


def test_growth_rules(hand_made) -> None:
    temp = growth(hand_made, "temp")
    assert (temp.a_bytes, temp.b_bytes, temp.source) == (1024, 0, "hloscope")
    assert not temp.grew_over(0.0)
    total = growth(hand_made, "total")
    assert total.b_bytes == total.a_bytes - 1024
    layer = growth(hand_made, "scope=layer")
    assert (layer.a_bytes, layer.b_bytes) == (1024, 0)
    # B against A the other way round grows.
    assert growth(hand_made, "scope=nothing").a_bytes == 0


def test_scope_and_dims() -> None:
    assert scope_of("jit(step)/transpose(jvp(layer_3))/attention/dot_general") == \
        "transpose(jvp(layer_3))/attention"
    assert scope_of("jit(step)/mul") == "(top level)"
    assert scope_of("") == NO_OP_NAME
    # XLA joins merged ops' names with ';': the first names the scope.
    assert scope_of("jit(f)/a/mul;jit(f)/b/add") == "a"
    assert dims("f32[768,3072]{1,0}") == dims("bf16[768,3072]{0,1}") == "[768,3072]"
    assert dims("(f32[2]{0}, s32[])") == "([2], [])"


# --- the command ---------------------------------------------------------------------------------

def _files(tmp_path) -> tuple[str, str]:
    a, b = tmp_path / "a.hlo", tmp_path / "b.hlo"
    a.write_text(TWO_FUSIONS)
    b.write_text(ONE_FUSION)
    return str(a), str(b)


def test_cli_terminal_and_json(tmp_path, capsys) -> None:
    a, b = _files(tmp_path)
    assert run(["compare", a, b, "--backend", "cpu", "-q"]) == 0
    out = capsys.readouterr().out
    assert f"A: {a}" in out and f"B: {b}" in out
    assert "temp peak" in out and "-1.00 KiB" in out
    assert "buffers vanished: live at A's peak, not at B's (1, 1.00 KiB)" in out
    assert "0 with the same kind and ops on both sides; 2 of A's and 1 of B's" in out
    assert run(["compare", a, b, "--backend", "cpu", "--json", "-q"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "hloscope.compare/1"
    [t] = data["targets"]
    assert t["by_scope"][0]["delta"]["peak_bytes"] == -1024
    assert "_timelines" not in t


def test_cli_fail_if_grows(tmp_path, capsys) -> None:
    a, b = _files(tmp_path)
    # B against A: temp fell, so nothing grew.
    assert run(["compare", a, b, "--backend", "cpu", "--fail-if-grows", "temp:0%", "-q"]) == 0
    capsys.readouterr()
    # A against B: the temp grew from nothing, the total by 1 KiB of 3 KiB (33%).
    assert run(["compare", b, a, "--backend", "cpu", "--fail-if-grows", "5%",
                "--fail-if-grows", "scope=layer:10%", "-q"]) == 1
    err = capsys.readouterr().err
    assert "total grew +33.3% on hlo (3.00 KiB -> 4.00 KiB, hloscope), over the 5.0% allowed" \
        in err
    assert "scope=layer grew from nothing" in err
    assert run(["compare", b, a, "--backend", "cpu", "--fail-if-grows", "34%", "-q"]) == 0


@pytest.mark.parametrize("args, message", [
    (["--fail-if-grows", "lots"], "expected [total|temp|scope=NAME:]PERCENT"),
    (["--fail-if-grows", "peak:5%"], "expected [total|temp|scope=NAME:]PERCENT"),
    (["--a", "--bogus"], "--a '--bogus': No such option '--bogus'"),
    (["--b", "--dtype f64"], "--b '--dtype f64': Invalid value for '--dtype'"),
    (["--a", "'unclosed"], "--a \"'unclosed\": No closing quotation"),
    (["--b-xla-flags", "--xla_foo"], "--b-xla-flags compiles a model file"),
])
def test_cli_bad_options(tmp_path, capsys, args, message) -> None:
    a, b = _files(tmp_path)
    assert run(["compare", a, b, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_bad_paths(tmp_path, capsys) -> None:
    a, _ = _files(tmp_path)
    assert run(["compare", a]) == 2
    assert "give A and B" in capsys.readouterr().err
    assert run(["compare", a, str(tmp_path / "missing.hlo")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[] constant(1\n}\n")
    assert run(["compare", a, str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.hlo:4:" in err and "Traceback" not in err


# --- real pairs -----------------------------------------------------------------------------------

def _pair(target: str, pair: str, depth=None) -> TargetComparison:
    base = fixture_path("compare", target, pair)
    if not os.path.isdir(base):
        pytest.skip(f"no {target} {pair} pair (scripts/capture_compare.py --targets {target})")
    a = side_measures(SideSpec(os.path.join(base, "a")))
    b = side_measures(SideSpec(os.path.join(base, "b")))
    return compare(a, b, "a", "b", depth).targets[0]


TARGETS = ["cpu", "gpu-h100"]
PAIRS = ["donation", "remat", "dtype", "pass"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pair", PAIRS)
def test_groups_add_up_to_each_side(target, pair) -> None:
    """Every group figure is a sum over that side's own report: the scopes (and the source
    lines) add up to its temp peak, saved activations, fusions and eliminated bytes, and XLA's
    figures are the saved compile's."""
    t = _pair(target, pair)
    for label in ("a", "b"):
        side = getattr(t, label)
        for rows in (t.by_scope, t.by_source):
            figs = [getattr(r, label) for r in rows]
            assert sum(f.peak_bytes for f in figs) == side.temp_peak_bytes
            assert sum(f.saved_bytes for f in figs) == side.saved_bytes
            assert sum(f.fusions for f in figs) == side.fusions
            assert sum(f.eliminated_bytes for f in figs) == side.eliminated_bytes
        with open(fixture_path("compare", target, pair, label, target, "target.json")) as f:
            xla = json.load(f)["xla"]
        assert side.xla["temp_size_in_bytes"] == xla["temp_size_in_bytes"]
    for r in t.by_scope + t.by_source:
        assert r.delta == r.b.minus(r.a)


@pytest.mark.parametrize("target", TARGETS)
def test_against_itself(target) -> None:
    base = fixture_path("compare", target, "donation", "b")
    if not os.path.isdir(base):
        pytest.skip(f"no {target} pair")
    side = side_measures(SideSpec(base))
    t = compare(side, side, "b", "b").targets[0]
    assert all(r.delta == Figures() for r in t.by_scope + t.by_source)
    assert t.appeared_at_peak == t.vanished_at_peak == t.regrouped == ()
    assert t.matched_fusions == t.a.fusions == t.b.fusions


@pytest.mark.parametrize("target", TARGETS)
def test_donation_pair(target) -> None:
    t = _pair(target, "donation")
    a, b = t.a, t.b
    # Donated, the new weights and moments go where the old ones were: every output but the
    # loss, the step counter and the output tuple's table aliases a parameter.
    assert a.alias_bytes == 0 and 0 < b.output_bytes - b.alias_bytes < 1024
    assert b.xla["alias_size_in_bytes"] == b.alias_bytes
    # The total falls by the outputs less what temp grows, to the byte as XLA counts it.
    assert a.total_bytes - b.total_bytes == b.alias_bytes - (b.temp_bytes - a.temp_bytes)
    assert a.xla["total_bytes"] - b.xla["total_bytes"] == a.total_bytes - b.total_bytes
    # No change of program: the same fusions, the same intermediates eliminated.
    assert t.regrouped == () and a.eliminated_bytes == b.eliminated_bytes
    scopes = {r.key: r for r in t.by_scope}
    # Undonated, the forward activations live in the outputs' buffers before the outputs
    # are written (elsewhere); donated, those buffers are the parameters', still in use, so
    # the activations move into temp: the forward scope jvp() gains temp and loses elsewhere.
    fwd = scopes["jvp()"]
    assert fwd.delta.peak_bytes > 0 and fwd.b.peak_bytes > fwd.a.peak_bytes
    if target == "cpu":
        assert fwd.delta.peak_elsewhere_bytes < 0
        # XLA:CPU copies the donated weights it still reads after writing them: copies
        # without metadata, a weight matrix among them, appear at B's peak.
        assert t.by_scope[0].key == NO_OP_NAME
        assert any(p.name.startswith("copy") and dims(p.shape) in ("[768,3072]", "[3072,768]")
                   for p in t.appeared_at_peak)


@pytest.mark.parametrize("target", TARGETS)
def test_remat_pair(target) -> None:
    t = _pair(target, "remat", depth=1)
    scopes = {r.key: r for r in t.by_scope}
    # Remat keeps the two layers' forward activations out of memory: the saved bytes fall,
    # and they fall in the forward scopes of layer 0 and layer 1.
    assert t.b.saved_bytes < t.a.saved_bytes / 4
    fwd = [scopes[f"jvp(layer_{i})"] for i in (0, 1)]
    assert all(f.delta.saved_bytes < 0 for f in fwd)
    assert -sum(f.delta.saved_bytes for f in fwd) >= 0.9 * (t.a.saved_bytes - t.b.saved_bytes)
    # The recomputation runs in the backward scopes: more fusions there.
    for i in (0, 1):
        back = scopes[f"transpose(jvp(layer_{i}))"]
        assert back.b.fusions > back.a.fusions


@pytest.mark.parametrize("target", TARGETS)
def test_dtype_pair(target) -> None:
    t = _pair(target, "dtype")
    # bf16 weights and moments: half the bytes of the state.
    assert t.b.parameter_bytes * 2 == pytest.approx(t.a.parameter_bytes, rel=0.01)
    assert t.b.xla["argument_size_in_bytes"] == t.b.parameter_bytes
    # Every op's dims are the same: most of A's fusions find their ops in B's fusions.
    placed = sum(c.ops for r in t.regrouped if r.side == "a" for c in r.other if c.fusion)
    total = sum(r.ops for r in t.regrouped if r.side == "a")
    assert total and placed > 0.5 * total
    if target == "cpu":
        # XLA:CPU computes bf16 in f32: the converts it makes carry no metadata, and that is
        # where the new fusions and the extra temp are.
        first = t.by_scope[0]
        assert first.key == NO_OP_NAME and first.delta.fusions > 100
        assert first.delta.peak_bytes > 0.5 * (t.b.temp_peak_bytes - t.a.temp_peak_bytes)


def test_pass_pair_cpu() -> None:
    t = _pair("cpu", "pass")
    # dot-library-rewriter off: no dot goes into a YNN (kCustom) fusion on B.
    kinds_a = {r.kind for r in t.regrouped if r.side == "a"}
    assert "kCustom" in kinds_a
    assert not any(r.kind == "kCustom" for r in t.regrouped if r.side == "b")
    assert t.b.fusions < t.a.fusions
    # The plain dots are buffers of their own: the weight gradient of the feed-forward
    # output (bert_layer.py:71, transposed) is live at B's peak, in the backward scope.
    scopes = {r.key: r for r in t.by_scope}
    assert t.by_scope[0].key == "transpose(jvp())"
    assert scopes["transpose(jvp())"].delta.peak_bytes > 8 * 2**20
    assert any(p.name.startswith("dot") and p.source.endswith("bert_layer.py:71")
               for p in t.appeared_at_peak)
    assert t.b.xla["temp_size_in_bytes"] - t.a.xla["temp_size_in_bytes"] == \
        t.b.temp_bytes - t.a.temp_bytes


def test_pass_pair_gpu() -> None:
    t = _pair("gpu-h100", "pass")
    # multi_output_fusion off: fewer ops share a fusion, so B has more fusions, and every
    # multi-output fusion of A is split on B.
    assert t.b.fusions > t.a.fusions
    assert any(len(r.other) > 1 for r in t.regrouped if r.side == "a")
    assert t.b.xla["temp_size_in_bytes"] - t.a.xla["temp_size_in_bytes"] == \
        t.b.temp_bytes - t.a.temp_bytes


# --- model files and the HTML page -------------------------------------------------------------

@needs_jax
def test_model_file_under_two_sets_of_options(capsys) -> None:
    """One model file, --a/--b: the shared --entry applies to both, each side adds its own;
    B's donation is the only difference."""
    model = os.path.join(os.path.dirname(__file__), "..", "examples", "small_models.py")
    assert run(["compare", model, "--entry", "layer_norm", "--a", "--donate none",
                "--b", "--donate all", "--json", "-q"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["a"].endswith("--entry layer_norm --donate none")
    assert data["b"].endswith("--entry layer_norm --donate all")
    [t] = data["targets"]
    assert t["a"]["alias_bytes"] == 0 and t["b"]["alias_bytes"] > 0
    assert t["b"]["xla"]["alias_size_in_bytes"] == t["b"]["alias_bytes"]


@needs_jax
def test_xla_flags_side(capsys) -> None:
    """--b-xla-flags compiles side B in a worker process with those flags: with XLA:CPU's
    fusion passes off (its loop fusion and the dot library's), every op of B is wrapped in a
    fusion of its own (fusion-wrapper), so nothing is eliminated, where A (the same file, no
    flags) eliminates intermediates."""
    model = os.path.join(os.path.dirname(__file__), "..", "examples", "small_models.py")
    assert run(["compare", model, "--entry", "layer_norm", "--b-xla-flags",
                "--xla_disable_hlo_passes=fusion,dot-library-rewriter", "--json", "-q"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "XLA_FLAGS='--xla_disable_hlo_passes=fusion,dot-library-rewriter'" in data["b"]
    [t] = data["targets"]
    assert t["a"]["eliminated_bytes"] > 0 and t["b"]["eliminated_bytes"] == 0
    assert t["b"]["fusions"] > t["a"]["fusions"]
    assert t["b"]["xla"]["temp_size_in_bytes"] == t["b"]["temp_bytes"]


@pytest.fixture(scope="module")
def pass_html(tmp_path_factory) -> str:
    base = fixture_path("compare", "cpu", "pass")
    out = tmp_path_factory.mktemp("html") / "compare.html"
    assert run(["compare", os.path.join(base, "a"), os.path.join(base, "b"), "--html",
                str(out), "-q"]) == 0
    return out.read_text()


@needs_dot
@needs_matplotlib
def test_html_page(pass_html) -> None:
    html = pass_html
    assert "<script src" not in html and "http://" not in html.replace(
        "http://www.w3.org", "")
    assert 'id="graph-cpu-a"' in html and 'id="graph-cpu-b"' in html
    assert 'id="timeline-cpu"' in html
    assert "Scopes that moved most" in html and "Source lines that moved most" in html


@needs_browser
@needs_dot
@needs_matplotlib
def test_html_in_chromium(browser, pass_html, tmp_path) -> None:  # noqa: F811
    page, problems = _open(browser, pass_html, tmp_path)
    box = page.locator("#timeline-cpu svg").bounding_box()
    assert box and box["width"] > 400 and box["height"] > 150
    # A mover's row filters both sides' fusion tables by its scope.
    row = page.locator("table.movers[data-kind=scope] tbody tr").first
    scope = row.get_attribute("data-scope")
    assert scope == "transpose(jvp())"
    row.click()
    values = page.evaluate("Array.from(document.querySelectorAll('input.scope-filter'))"
                           ".map(i => i.value)")
    assert values == ["transpose\\(jvp\\(\\)\\)"] * 2
    for side in ("a", "b"):
        rows = page.locator(f"#fusions-cpu-{side} tbody tr")
        shown = [r for r in rows.all() if r.is_visible()]
        assert 0 < len(shown) < rows.count()
        assert all(scope in (r.get_attribute("data-scope") or "") for r in shown)
    # A regrouped fusion's row points at its node in that side's graph.
    first = page.locator("#fusions-cpu-a tbody tr").first
    page.fill("input.scope-filter >> nth=0", "")
    node = first.get_attribute("data-node")
    assert node
    first.click()
    assert page.evaluate(f"document.getElementById({node!r}).classList.contains('hl')")
    assert problems == []
