"""XLA's own buffer assignment, read as XLA writes it (hloscope.xla): the proto XLA:CPU returns
and the dump text of gpu and tpu compiles, on every fixture that has them, and the model held
against each value by value."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from hloscope.analysis.agreement import agreement
from hloscope.cli import run
from hloscope.hlo.parser import parse_file
from hloscope.xla.assignment import figures_from_buffer_assignment
from hloscope.xla.captured import load_captured, read_captured
from hloscope.xla.proto import ProtoError, heap_traces, instruction_names, read_assignment

from conftest import FIXTURES, ROOT, fixture_path, needs_jax

CAPTURED = sorted(p[:-len(".memory.json")] for p in glob.glob(os.path.join(FIXTURES, "*",
                                                                          "*.memory.json"))
                  if load_captured(os.path.dirname(p), stem=os.path.basename(p)[:-12]))


def _captured(base: str) -> dict[str, str]:
    return load_captured(os.path.dirname(base), stem=os.path.basename(base))


def test_every_jax_fixture_kept_xla_assignment() -> None:
    # Every JAX fixture of cpu, gpu-h100 and tpu-v3 has XLA's own assignment beside it.
    targets = {os.path.basename(os.path.dirname(b)) for b in CAPTURED}
    assert {"cpu", "gpu-h100", "tpu-v3"} <= targets
    cpu = [b for b in CAPTURED if "/cpu/" in b]
    assert len(cpu) >= 15
    assert all("proto" in _captured(b) and "module" in _captured(b) for b in cpu)
    assert all("dump" in _captured(b) for b in CAPTURED if "/cpu/" not in b)


# Values the model puts in another class than XLA while every figure agrees: two equal-size
# temporaries of the Keras encoder (and of the same layer from TensorFlow), one parked in the
# output allocation by XLA and the other by hloscope (measured; a change in either direction
# shows up here).
CLASS_SWAPS = {"cpu/keras_encoder_forward": 2, "cpu/bert_layer_tf_forward": 2}

# tpu-v3: hloscope's HLO-level temp over libtpu's own temp allocation, measured. With libtpu's
# own heap (first-fit in event order, 16 KiB offsets: read off its assignment) and the
# operands its fusions say may share their output (backend_config aliasing_operands), all 14
# are exact (the two-layer donated stack was 0.984 before the second). A fixture that
# departs is listed here with its ratio; the model is never above libtpu.
TPU_V3_RATIO: dict[str, float] = {}


@pytest.mark.parametrize("base", CAPTURED, ids=lambda b: os.path.relpath(b, FIXTURES))
def test_assignment_read_and_mapped(base: str) -> None:
    """Each value names an instruction of the optimized module (proto ids mapped through the
    module's own proto); the allocations' parameters, outputs and alias are memory_analysis()'s
    on every target, and so is temp on cpu and gpu, where the model agrees to the byte; on
    tpu-v3 the rest of memory_analysis()'s temp is the scratch row."""
    key = os.path.relpath(base, FIXTURES)
    allocations = read_captured(_captured(base))
    module = parse_file(base + ".post.hlo")
    with open(base + ".memory.json") as f:
        xla = json.load(f)
    own = figures_from_buffer_assignment(allocations)
    keys = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes")
    assert {k: own[k] for k in keys} == {k: xla[k] for k in keys}
    from hloscope.frontends.targets import get_target
    backend = get_target(key.split("/")[0]).backend
    a = agreement(module, xla, backend, allocations=allocations)
    if key.startswith("tpu-v4/"):
        # libtpu's v4 assignment is of a module after memory-space assignment (slices and
        # copies the printed text does not have): not mapped, not modelled.
        assert a.figures == () and "on-chip memory" in a.unchecked
        return
    names = {i.name for c in module.computations for i in c.instructions}
    values = [v for al in allocations for v in al.values]
    assert values and all(v.instruction in names for v in values)
    temp = next(f for f in a.figures if f.name == "temp")
    assert a.comparison is not None
    if key.startswith("tpu-v3/"):
        assert a.scratch == xla["temp_size_in_bytes"] - own["temp_size_in_bytes"] >= 0
        assert temp.ours <= temp.xla
        assert round(temp.ours / temp.xla, 3) == TPU_V3_RATIO.get(os.path.basename(base), 1.0)
        return
    assert own["temp_size_in_bytes"] == xla["temp_size_in_bytes"]
    assert a.scratch is None
    assert temp.ours == temp.xla, (base, temp)
    assert len(a.comparison.class_mismatches) == CLASS_SWAPS.get(key, 0)


@pytest.mark.parametrize("base", CAPTURED, ids=lambda b: os.path.relpath(b, FIXTURES))
def test_parameters_and_outputs_are_xlas(base: str) -> None:
    """The model's parameter and output bytes are memory_analysis()'s on every target, tpu-v4
    included: a tuple's index table counted as the backend lays it out (on TPU 4 bytes per
    element in 1 KiB steps on v3, 512-byte steps on v4; 8 bytes per element elsewhere)."""
    from hloscope.analysis.liveness import analyze
    from hloscope.frontends.targets import get_target
    key = os.path.relpath(base, FIXTURES)
    with open(base + ".memory.json") as f:
        xla = json.load(f)
    figures = analyze(parse_file(base + ".post.hlo"),
                      get_target(key.split("/")[0]).backend).figures
    assert (figures.parameter_bytes, figures.output_bytes, figures.alias_bytes) == \
        (xla["argument_size_in_bytes"], xla["output_size_in_bytes"], xla["alias_size_in_bytes"])


def test_tpu_tuple_tables_take_4_bytes_an_element_in_granules() -> None:
    """Measured on deviceless tpu-v3 and tpu-v4 compiles of functions returning n arrays: the
    output tuple's allocation."""
    from hloscope.analysis.backends import BACKENDS
    from hloscope.hlo.shape import parse_shape
    def table(n: int) -> Any:
        return parse_shape("(" + ", ".join(["f32[8,128]{1,0}"] * n) + ")")
    v3 = {3: 1024, 127: 1024, 128: 1024, 129: 1024, 200: 1024, 256: 1024, 257: 2048,
          300: 2048, 520: 3072}
    v4 = {3: 512, 128: 512, 129: 1024, 200: 1024, 300: 1536}
    assert {n: BACKENDS["tpu"].value_bytes(table(n)) for n in v3} == v3
    assert {n: BACKENDS["tpu-v4"].value_bytes(table(n)) for n in v4} == v4
    assert BACKENDS["cpu"].value_bytes(table(3)) == BACKENDS["gpu"].value_bytes(table(3)) == 24


def test_xla_peak_is_where_its_temp_allocation_is_fullest() -> None:
    """XLA's own temp allocation over the model's schedule: its top is the highest byte a
    value occupies, reached at the step reported, by values live there."""
    from hloscope.analysis.agreement import xla_peak
    from hloscope.analysis.liveness import analyze
    base = fixture_path("cpu", "bert_layer_train_step_donated")
    allocations = read_captured(_captured(base))
    a = analyze(parse_file(base + ".post.hlo"))
    p = xla_peak(a, allocations)
    assert p is not None
    temp = [al for al in allocations if al.kind == "temp" and al.color == 0]
    highest = max(v.offset + v.size for al in temp for v in al.values)
    assert p.top == highest and p.allocation_bytes == sum(al.size for al in temp)
    assert p.live and max(v.offset + v.size for v in p.live) == p.top
    ranges = {(v.instruction, v.index): (v.start, v.end) for v in a.values}
    assert all(ranges[(v.name, v.index)][0] <= p.step <= ranges[(v.name, v.index)][1]
               for v in p.live)
    assert p.timeline[0][0] <= p.step and max(top for _, top in p.timeline) == p.top


def test_proto_names_come_from_the_module_proto() -> None:
    base = fixture_path("cpu", "bert_layer_train_step_donated")
    c = _captured(base)
    import base64
    names = instruction_names(base64.b64decode(c["module"]))
    assert len(names) > 100 and all(isinstance(k, int) for k in names)
    # Instruction ids are 64-bit unique ids: the computation's in the high half.
    assert max(names) > 2 ** 32
    assert heap_traces(base64.b64decode(c["proto"])) == ()  # jaxlib 0.10.2 records none


def test_not_a_proto_is_a_clear_error() -> None:
    with pytest.raises(ProtoError, match="not a serialized BufferAssignment"):
        read_assignment(b"\xff\xff\xff", b"")
    # A buffer whose instruction id the module does not have.
    base = fixture_path("cpu", "bert_layer_train_step_donated")
    import base64
    with pytest.raises(ProtoError, match="which the module does not have"):
        read_assignment(base64.b64decode(_captured(base)["proto"]), b"")


def _saved_donated_step(tmp_path: Any) -> Any:
    """A directory as `diff --save` writes the cpu target of the donated BERT layer step:
    its texts, XLA's figures and XLA's own assignment (the proto and the module proto)."""
    from hloscope.workflow.pipeline import SAVED_TARGET
    base = fixture_path("cpu", "bert_layer_train_step_donated")
    d = tmp_path / "cpu"
    d.mkdir()
    for part in ("pre", "post"):
        shutil.copy(f"{base}.{part}.hlo", d / f"{part}.hlo")
    for kind in ("xla-assignment.pb", "xla-module.pb"):
        shutil.copy(f"{base}.{kind}", d / kind)
    with open(base + ".memory.json") as f:
        xla = json.load(f)
    (d / SAVED_TARGET).write_text(json.dumps({"target": "cpu", "backend": "cpu", "xla": xla}))
    return d


def test_saved_run_checks_value_by_value_without_jax(tmp_path, capsys) -> None:
    """A `diff --save` directory keeps the proto: `check` compares value by value from it, in a
    process that never imports JAX."""
    d = _saved_donated_step(tmp_path)
    code = ("import sys; from hloscope.cli import run; rc = run(['check', sys.argv[1]]); "
            "assert 'jax' not in sys.modules; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "values in another class: 0" in proc.stdout
    assert "sharing XLA does, hloscope not: 0" in proc.stdout
    assert "1 of 1 checked agree within 1%" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None,
                    reason="grpcio-tools (protoc) not installed: pip install grpcio-tools")
def test_descriptor_is_the_schema_compiled() -> None:
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_proto.py"),
                           "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_jax
def test_proto_and_dump_of_one_compile_agree(tmp_path) -> None:
    """The two ways XLA gives its assignment, on one compile: the same allocations, kinds,
    sizes and values at the same offsets."""
    import jax
    import jax.numpy as jnp

    from hloscope.xla.dump import read_buffer_assignment

    def step(w, x):
        h = jnp.tanh(x @ w)

        def body(c, _):
            return jnp.sin(c) @ w, c.sum()
        c, ys = jax.lax.scan(body, h, None, length=3)
        return w - 0.1 * c.T @ x, ys.sum()

    lowered = jax.jit(step, donate_argnums=0).lower(jnp.ones((128, 128)), jnp.ones((64, 128)))
    compiled = lowered.compile(compiler_options={"xla_dump_to": str(tmp_path),
                                                 "xla_dump_hlo_as_text": True})
    proto = compiled.memory_analysis().serialized_buffer_assignment_proto
    module = compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()
    (dump,) = glob.glob(str(tmp_path / "*after_optimizations-buffer-assignment.txt"))
    with open(dump) as f:
        from_dump = read_buffer_assignment(f.read())

    def plain(allocations):  # type: ignore[no-untyped-def]
        return [(a.index, a.size, a.kind, a.color, a.live_out,
                 sorted((v.instruction, v.index, v.size, v.offset) for v in a.values))
                for a in allocations]

    assert plain(read_assignment(proto, module)) == plain(from_dump)


def test_report_shows_xla_assignment_and_the_split(tmp_path) -> None:
    """The HTML report of a saved run shows the agreement with XLA's own assignment, XLA's
    temp allocation at its fullest (marked as XLA's) and where the step's bytes go."""
    d = _saved_donated_step(tmp_path)
    out = tmp_path / "r.html"
    assert run(["report", str(d), "-o", str(out)]) == 0
    html = out.read_text()
    assert "agreement with XLA&#39;s own assignment (130 allocations, proto): temp 1.000" in html
    assert "XLA's own assignment at its fullest" in html
    assert "activations kept for the backward pass, in temp" in html


# Values libtpu places elsewhere than hloscope while the totals agree (measured): in the
# ConvNet step two 1 MiB and two small values trade places (libtpu keeps a pooling output's
# region busy two steps longer than the model's live range says).
MOVED = {"convnet_train_step": 4, "layer_norm": 0, "scan_rnn_train_step": 0}


@pytest.mark.parametrize("stem", sorted(MOVED))
def test_tpu_heap_places_each_value_where_libtpu_does(stem: str) -> None:
    """libtpu's temp heap (tpu-v3) is first-fit in the heap simulator's event order at 16 KiB
    offsets: the values of its temp allocation sit at the offsets hloscope gives them."""
    from hloscope.analysis.liveness import analyze
    base = fixture_path("tpu-v3", stem)
    allocations = read_captured(_captured(base))
    a = analyze(parse_file(base + ".post.hlo"), "tpu")
    ours = {(a.values[v].instruction, a.values[v].index): b.offset
            for b in a.buffers if b.cls == "temp" for v in b.values}
    xla = {(v.instruction, v.index): v.offset for al in allocations
           if al.kind == "temp" and al.color == 0 for v in al.values
           if (v.instruction, v.index) in ours}
    assert len(xla) >= 2
    assert sum(ours[k] != off for k, off in xla.items()) == MOVED[stem]
