"""docs/walkthroughs/: the pages equal what the code computes now, and every command shown runs
and prints what the page shows.

Commands that read checked-in files run again in test_pages_are_current (every page rendered
from its template and compared with the committed page). Commands that compile a model file
are kept in docs/walkthroughs/runs.json by scripts/build_walkthroughs.py; each is run again in
test_every_compile_command_runs and compared with what is kept there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

import pytest

from conftest import needs_jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import build_walkthroughs as bw  # noqa: E402

with open(bw.RUNS) as _f:
    RUNS = json.load(_f)


def _commands_shown() -> list[str]:
    shown = []
    for name in os.listdir(bw.PAGES):
        if name.endswith(".md"):
            with open(os.path.join(bw.PAGES, name)) as f:
                shown += re.findall(r"^```console\n\$ (.+)$", f.read(), re.M)
    return shown


@pytest.mark.parametrize("name", bw.templates())
def test_pages_are_current(name, monkeypatch) -> None:
    """The committed page equals its template rendered now: fixture commands rerun, the
    figures recomputed, compile commands from runs.json."""
    monkeypatch.chdir(ROOT)
    runs = bw.Runs(RUNS, live=False)
    page = bw.render(name, runs)
    with open(os.path.join(bw.PAGES, name[:-len(".j2")])) as f:
        committed = f.read()
    assert page == committed, (f"docs/walkthroughs/{name[:-3]} is stale: run "
                               "python scripts/build_walkthroughs.py --offline")
    for command in runs.used:
        assert command in RUNS, f"{command} is not in runs.json: rerun the build"


def test_pictures_are_current(monkeypatch) -> None:
    """Each plot a page embeds is on disk, and is what its figures draw now."""
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (pip install -e "
                                             "'.[plot]')")
    monkeypatch.chdir(ROOT)
    bw.PICTURES_MADE.clear()
    runs = bw.Runs(RUNS, live=False)
    pages = "".join(bw.render(name, runs) for name in bw.templates())
    assert bw.PICTURES_MADE, "no page draws a plot"
    for path, svg in bw.PICTURES_MADE.items():
        assert f"](pictures/{os.path.basename(path)})" in pages
        with open(path) as f:
            assert f.read() == svg, f"{path} is stale: run python scripts/build_walkthroughs.py"
    # Every picture a page links to exists, in the walkthroughs' folder or docs/pictures/.
    for link in re.findall(r"!\[[^]]*\]\(([^)]+)\)", pages):
        assert os.path.exists(os.path.join(bw.PAGES, link)), link


def test_every_command_shown_is_known() -> None:
    shown = _commands_shown()
    assert len(shown) >= 15
    for command in shown:
        assert command.startswith("hloscope ")
        if bw.compiles(command):
            assert command in RUNS, command
    # Nothing is kept that no page shows any more.
    assert set(RUNS) <= set(shown)


def _extra_missing(command: str) -> str:
    extra = bw.needs(command)
    module = {"tpu": "libtpu", "gpu": "jax_cuda12_plugin"}.get(extra or "")
    if module and importlib.util.find_spec(module) is None:
        return f"{command} needs pip install -e '.[{extra}]'"
    return ""


@needs_jax
@pytest.mark.parametrize("command", sorted(RUNS))
def test_every_compile_command_runs(command) -> None:
    """Each compile command of the pages, run as a reader would, prints what the page shows
    (and the same figures as JSON)."""
    missing = _extra_missing(command)
    if missing:
        pytest.skip(missing)
    kept = RUNS[command]
    got = bw.execute(command, kept.get("fails", False))
    # How many of a fit's values the cache answered depends on which tests ran before.
    cached = re.compile(r"compiled \d+, \d+ from the cache")
    assert cached.sub("compiled ...", got["text"]) == cached.sub("compiled ...", kept["text"])
    if "json" in kept:
        strip = {"source", "model", "compiles"}

        def clean(d):  # where the files were saved differs run to run
            if isinstance(d, dict):
                return {k: clean(v) for k, v in d.items() if k not in strip}
            if isinstance(d, list):
                return [clean(v) for v in d]
            return d
        assert clean(got["json"]) == clean(kept["json"])


def test_the_formula() -> None:
    """Korthikanti et al. 2022's 16-bit, with-dropout total is s·b·h·(34 + 5·a·s/h)."""
    s, b, h, a = 512, 2, 1024, 16
    assert sum(bw.korthikanti(s, b, h, a).values()) == s * b * h * (34 + 5 * a * s // h)
    no_dropout = sum(bw.korthikanti(s, b, h, a, 2, dropout=False).values())
    assert no_dropout == s * b * h * 32 + 2 * a * s * s * b
    assert sum(bw.korthikanti(s, b, h, a, 4, dropout=False).values()) == 2 * no_dropout


@pytest.mark.parametrize("name", bw.templates())
def test_no_comparison_is_typed_in(name) -> None:
    """Every sentence that shows a figure and compares (shrinks, grows, fits, below, above,
    ...) gets its comparative word from the figures (claim, word, fits): none is typed in."""
    with open(os.path.join(bw.SOURCES, name)) as f:
        found = bw.unchecked_claims(f.read())
    assert found == [], "\n".join(f"{name}:{line}: '{w}' typed in: {s[:160]}"
                                  for line, w, s in found)


def test_the_claim_checker_catches_what_it_should() -> None:
    page = ("Fusion shrinks the temporaries from {{ gib(a) }} to {{ gib(b) }}.\n\n"
            "The step {{ word(x, y, 'grows', 'shrinks') }} by {{ gib(z) }}.\n\n"
            "```console\n$ hloscope fit m.py\nfits 3 above {{ x }}\n```\n\n"
            "It {{ claim(a < b, 'fits') }} in {{ gib(c) }}.\n")
    assert [(line, w) for line, w, _ in bw.unchecked_claims(page)] == [(1, "shrink")]
    # A tag over several lines is not prose; the prose after it is.
    tagged = ('{% set rows = [\n  ("above", 1),\n] %}\n'
              "{% if x %}{{ y }}{% endif %}\nIt grows to {{ gib(a) }}.\n")
    assert [(line, w) for line, w, _ in bw.unchecked_claims(tagged)] == [(5, "grow")]
    assert bw.claim(True, "below") == "below"
    with pytest.raises(bw.ClaimError, match="'below'"):
        bw.claim(False, "below")
    assert (bw.word(2, 1, "grows", "shrinks"), bw.word(1, 2, "grows", "shrinks"),
            bw.word(1, 1, "grows", "shrinks", "stays")) == ("grows", "shrinks", "stays")
    assert (bw.fits(10, 10), bw.fits(11, 10)) == ("fits", "does not fit")


def test_a_readme_cell_brackets_what_tensorflow_added() -> None:
    """The README's batch fitted 12 GB and one more did not: what TensorFlow 1.11 needed
    beyond the model lies between budget - total(batch + 1) and budget - total(batch); a
    batch the fit did not compile is read off the line through the nearest two it did."""
    points = [{"value": 1, "eager": 1000}, {"value": 2, "eager": 1100},
              {"value": 4, "eager": 1300}]
    assert bw.eager_at(points, 2) == (1100.0, True)
    assert bw.eager_at(points, 3) == (1200.0, False)
    assert bw.eager_at(points, 6) == (1500.0, False)
    with pytest.raises(ValueError):
        bw.eager_at(points[:1], 3)


@needs_jax
def test_a_readme_cell_counts_the_masks_and_the_clipped_gradients() -> None:
    """BERT-Base's classifier has 109,483,778 parameters (embeddings 30522+512+2 rows of 768
    and their layer norm, 12 layers of 7,087,872, the pooler and a 2-way head): the clipped
    copy of the gradients is their f32 bytes. Dropout masks per sequence of s tokens:
    s·768 (embeddings) + 12·(12·s² + 2·s·768) + 768 (pooler), 3 bytes more each in f32."""
    layer = 4 * (768 * 768 + 768) + 2 * 2 * 768 + 768 * 3072 + 3072 + 3072 * 768 + 768
    params = (30522 + 512 + 2) * 768 + 2 * 768 + 12 * layer + 768 * 768 + 768 + 768 * 2 + 2
    assert params == 109_483_778
    fit = {"budget_bytes": 10_000, "points": [{"value": 1, "eager": 6_000},
                                              {"value": 2, "eager": 7_000}]}
    cell = bw.readme_cell(fit, 1, "base", 128)
    masks = 128 * 768 + 12 * (12 * 128 * 128 + 2 * 128 * 768) + 768
    assert cell["clipped"] == 4 * params
    assert cell["f32_masks"] == 3 * masks * 2
    assert (cell["extra_low"], cell["extra_high"]) == (3_000, 4_000)
    zero = bw.readme_cell(fit, 0, "base", 128)
    assert (zero["extra_low"], zero["extra_high"]) == (4_000, None)
