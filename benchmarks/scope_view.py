#!/usr/bin/env python3
"""What the HTML report's program-by-scope view costs on the 24-layer BERT-Large Adam step
(seq 512, cpu, donated), measured in one run: the levels' count and nodes, the time to build
them and to lay every level out (one run of Graphviz's `dot`), the bytes they add to the report
(pictures and search index), and in Chromium the time to first paint and to open a layer.

The choice it defends: every level laid out ahead by `dot` and inlined (the report stays one
offline file, no JavaScript layout library), against the flat fusion graph of the same step
(300 nodes cut in schedule order: the whole step is about 4,600 top-level instructions).

Usage: python benchmarks/scope_view.py [--flat] [--out report.html]
  --flat   also lay out and inline the flat fusion graph, as `diff --html` does, and compare
           (needs JAX the first time, to lower the step; cached under ~/.cache/hloscope)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bert_large import bert_large_texts  # noqa: E402

from hloscope.analysis.compare import side_groups  # noqa: E402
from hloscope.analysis.diff import measure, report, target_report  # noqa: E402
from hloscope.analysis.scope_graph import scope_graph  # noqa: E402
from hloscope.hlo.parser import parse  # noqa: E402
from hloscope.present.dot import render_levels  # noqa: E402
from hloscope.present.html import render_html  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB"


def _paint(path: str) -> tuple[float, float, float]:
    """First contentful paint and load (ms, the browser's own clock) of the report, and the
    time to open the largest layer's level by a click on its group (ms)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto("file://" + path, wait_until="load")
        fcp = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]"
                            ".startTime")
        load = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        opened = page.evaluate("""() => {
            const g = document.querySelector('.scope-level:not([hidden]) g.node.opens');
            const t = performance.now();
            g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
            document.body.getBoundingClientRect();
            return performance.now() - t; }""")
        b.close()
    return fcp, load, opened


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flat", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if shutil.which("dot") is None:
        print("needs Graphviz's dot (apt-get install graphviz)", file=sys.stderr)
        return 2
    pre_text, post_text = bert_large_texts()
    pre, post = parse(pre_text, "pre"), parse(post_text, "post")
    m = measure(pre, post, "cpu")
    t = target_report(pre, post, "cpu", "cpu", measured=m)
    rep = report((t,), "bert_large_24", "train_step", {}, None, {})

    start = time.perf_counter()
    sg = scope_graph(post, side_groups(t, m)[0])
    built = time.perf_counter() - start
    start = time.perf_counter()
    svgs = render_levels(sg, "cpu-scope-")
    laid = time.perf_counter() - start
    nodes = sum(len(lv.nodes) for lv in sg.levels)
    print(f"BERT-Large 24-layer step: {len(post.entry):,} entry instructions, "
          f"{len(sg.levels):,} levels, {nodes:,} nodes in all, "
          f"{len(sg.placements):,} instructions in the search index")
    print(f"  build the levels (analysis)          {built:8.3f} s")
    print(f"  lay out every level (one dot run)    {laid:8.3f} s")

    without = render_html(rep, {}, timeline=False)
    start = time.perf_counter()
    page = render_html(rep, {}, timeline=False, scopes={"cpu": sg})
    rendered = time.perf_counter() - start
    print(f"  the whole page with the levels       {rendered:8.3f} s  (layout included)")
    print(f"  report: {_mib(len(page.encode()))}; the scope view adds "
          f"{_mib(len(page.encode()) - len(without.encode()))} "
          f"(pictures {_mib(sum(len(s.encode()) for s in svgs))})")
    if args.flat:
        from hloscope.analysis.fusion_graph import fusion_graph
        from hloscope.present.dot import render_svg
        start = time.perf_counter()
        flat = fusion_graph(post, id_prefix="cpu-")
        render_svg(flat)
        flat_time = time.perf_counter() - start
        flat_page = render_html(rep, {"cpu": flat}, timeline=False)
        extra = len(flat_page.encode()) - len(without.encode())
        print(f"  flat fusion graph ({flat.shown:,} of {flat.instructions:,} instructions): "
              f"{flat_time:.3f} s to lay out, {_mib(extra)} of the report; "
              f"levels / flat layout time = {laid / flat_time:.3f}")
    out = args.out or os.path.join(tempfile.mkdtemp(prefix="hloscope-scope-"), "report.html")
    with open(out, "w") as f:
        f.write(page)
    if os.path.exists(CHROMIUM):
        fcp, load, opened = _paint(os.path.abspath(out))
        print(f"  Chromium: first contentful paint {fcp:.0f} ms, load {load:.0f} ms, "
              f"a layer opened in {opened:.1f} ms")
    else:
        print("  (chromium is not installed: no paint timings)")
    print(f"  report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
