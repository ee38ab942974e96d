#!/usr/bin/env python3
"""Capture the HLO fixtures that hloscope's tests read, so that anyone can regenerate them.

For each example model and target it writes, under fixtures/<target>/:
  <model>_<entry>.pre.hlo      HLO before XLA optimization (with source metadata)
  <model>_<entry>.post.hlo     HLO after optimization (scheduled, fused)
  <model>_<entry>.memory.json  XLA's Compiled.memory_analysis() figures (JAX only)
  <model>_<entry>.xla-*        XLA's own buffer assignment of that compile (JAX only): on cpu
                               its BufferAssignmentProto (xla-assignment.pb) and the module's
                               HloModuleProto that names the ids (xla-module.pb); on gpu and tpu
                               the compile's dumped xla-buffer-assignment.txt
The generated programs of GENERATED (tests/jax_programs.py) are captured for their targets.
And, for the CPU, an --xla_dump_to directory under fixtures/dumps/ with XLA's buffer assignment,
memory usage report and live ranges: the ground truth for the memory model.

Usage:
  python scripts/capture_fixtures.py                   # cpu, plus TPU/GPU targets whose
                                                       # extras are installed
  python scripts/capture_fixtures.py --targets cpu,tpu-v3
  python scripts/capture_fixtures.py --python /path/to/venv/bin/python --targets gpu-h100
  python scripts/capture_fixtures.py --targets cpu,gpu-h100,tpu-v3 --only donated
  python scripts/capture_fixtures.py --targets gpu-h100,tpu-v3 --only generated --no-dump

Training steps that donate their state (the examples' default ``train_step`` entries, jitted with
donate_argnums) are written as ``<model>_<entry>_donated``; their ``*_undonated`` twins keep the
plain names the older fixtures have (``bert_layer_train_step`` is the undonated step).
TPU and GPU targets compile without the hardware: pip install -e '.[tpu]' / '.[gpu]'.
Each non-CPU target runs in its own process (the CUDA plugin needs its environment set before
JAX is imported).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
FIXTURES = os.path.join(ROOT, "fixtures")
from hloscope.frontends.targets import NO_FUSION, get_target  # noqa: E402

DEFAULT_TARGETS = ("cpu", "tpu-v3", "tpu-v4", "gpu-h100")


# The models whose no-fusion compiles are captured (the calibration set of the unfused model).
NO_FUSION_MODELS = {("bert_layer", "forward"), ("bert_layer", "train_step_undonated"),
                    ("bert_layer", "train_step"),
                    ("small_models", "convnet_train_step"), ("small_models", "layer_norm")}
ONLY = ""  # --only: capture only the fixtures whose name holds this


def jax_models() -> dict[str, dict]:
    import bert_layer
    import scan_rnn
    import small_models
    return {"bert_layer": bert_layer.hloscope_entries(), "scan_rnn": scan_rnn.hloscope_entries(),
            "small_models": small_models.hloscope_entries(),
            # BERT-Base, a stack of two layers, its Adam step donated.
            "bert_stack2": {"train_step": bert_layer.stacked_train_step("base", 2, 1, 128)}}


# Generated programs (tests/jax_programs.py) whose assignment once differed from XLA's, kept as
# fixtures of the target they differed on: each taught a rule (docs/memory-model.md).
GENERATED = {
    # Two loops' 64 KiB state, equal in size and in post order: XLA's buffer ids break the
    # tie (the least id of a value the loop state's instructions define).
    "generated_sgd_b16_w128_scan_dense_scan": ("gpu", {
        "batch": 16, "width": 128, "layers": ["scan", "dense", "scan"], "mode": "sgd",
        "donate": False}),
    # A loop body whose fusions wait on one another by control edges: its post order (and so
    # its value ids) visits the last control predecessor first.
    "generated_adam_b8_w16_scan_relu_dus": ("gpu", {
        "batch": 8, "width": 16, "layers": ["scan", "relu", "dus"], "mode": "adam",
        "donate": False}),
    # libtpu does not let a fusion's output take over an operand of another shape (f32[16]
    # read as f32[1,16] through a bitcast), as XLA:GPU does.
    "generated_grad_b2_w16_softmax_scan_donated": ("tpu-v3", {
        "batch": 2, "width": 16, "layers": ["softmax", "scan"], "mode": "grad",
        "donate": True}),
}


def generated_models(target: str) -> dict[str, dict]:
    """The GENERATED programs kept for ``target`` (a target, or the start of one's name)."""
    import jax
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import jax_programs
    out = {}
    for stem, (kept_for, d) in GENERATED.items():
        if not target.startswith(kept_for):
            continue
        fn, args, donate = jax_programs.build(d)
        out[stem] = {"": (jax.jit(fn, donate_argnums=donate) if donate else fn, args)}
    return out


def stem_of(model: str, entry: str, fn: object) -> str:
    """The fixture name of a model's entry: ``*_undonated`` entries keep the plain name, entries
    that are jitted with donation get ``_donated``."""
    from hloscope.frontends.jax import wrapper_kind
    name = entry[:-len("_undonated")] if entry.endswith("_undonated") else entry
    if wrapper_kind(fn) and not name.endswith("_donated"):
        name += "_donated"
    return name if model == "small_models" else f"{model}_{name}"


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(path, ROOT)} ({len(text):,} bytes)")


def capture_jax(target: str, variant: str = "") -> None:
    """Every model's entries for one target; with ``variant`` (run with XLA_FLAGS set), only
    the no-fusion calibration models, written as ``*.<variant>.post.hlo``."""
    from hloscope.frontends.jax import lower
    models = jax_models()
    if not variant:
        models.update(generated_models(target))
    for model, entries in models.items():
        for entry, (fn, args) in entries.items():
            if variant and (model, entry) not in NO_FUSION_MODELS:
                continue
            stem = stem_of(model, entry, fn) if entry else model
            if ONLY not in stem:
                continue
            lowered = lower(fn, args, target)
            base = os.path.join(FIXTURES, target, stem)
            if variant:
                base += "." + variant
            else:
                write(base + ".pre.hlo", lowered.pre)
            write(base + ".post.hlo", lowered.post)
            write(base + ".memory.json", json.dumps(lowered.memory, indent=2, sort_keys=True)
                  + "\n")
            if not variant:
                write_assignment(base, lowered.assignment)


def write_assignment(base: str, captured: dict) -> None:
    from hloscope.xla.captured import save_captured
    for path in save_captured(os.path.dirname(base), captured, stem=os.path.basename(base)):
        print(f"wrote {os.path.relpath(path, ROOT)} ({os.path.getsize(path):,} bytes)")


def capture_keras(target: str) -> None:
    """The Keras 3 encoder (JAX backend): runs in a child process with KERAS_BACKEND=jax, so
    that this process's TensorFlow keeps its own Keras backend."""
    import keras_encoder
    from hloscope.frontends.jax import lower
    for entry, (fn, args) in keras_encoder.hloscope_entries().items():
        stem = stem_of("keras_encoder", entry, fn)
        if ONLY not in stem:
            continue
        lowered = lower(fn, args, target)
        base = os.path.join(FIXTURES, target, stem)
        write(base + ".pre.hlo", lowered.pre)
        write(base + ".post.hlo", lowered.post)
        write(base + ".memory.json", json.dumps(lowered.memory, indent=2, sort_keys=True) + "\n")
        write_assignment(base, lowered.assignment)


def run_child(python: str, target: str, variant: str = "") -> None:
    env = dict(os.environ)
    if target.startswith("gpu"):
        env.update(JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", CUDA_VISIBLE_DEVICES="-1")
    args = [python, __file__, "--only-target", target, "--only", ONLY]
    if variant == "keras":
        env["KERAS_BACKEND"] = "jax"
        args += ["--variant", variant]
    elif variant:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_disable_hlo_passes="
                            + NO_FUSION[target.split("-")[0]][variant]).strip()
        args += ["--variant", variant]
    subprocess.run(args, env=env, check=True)


def capture_tf() -> None:
    import bert_layer_tf
    from hloscope.frontends.tf import lower
    for entry, (fn, args) in bert_layer_tf.hloscope_entries().items():
        lowered = lower(fn, args)
        base = os.path.join(FIXTURES, "cpu", f"bert_layer_tf_{entry}")
        write(base + ".pre.hlo", lowered.pre)
        write(base + ".post.hlo", lowered.post)
        write(base + ".memory.json", json.dumps(lowered.memory, indent=2, sort_keys=True) + "\n")
        write_assignment(base, lowered.assignment)


# --xla_dump_to directories kept as ground truth for buffer assignment: (target, model, entry,
# no-fusion variant or ""). The first is the full dump the inspect tests read; of the others
# only the buffer assignment and live ranges are kept.
DUMPS = [("cpu", "bert_layer", "forward", ""), ("cpu", "scan_rnn", "forward", ""),
         ("cpu", "small_models", "bert_layer_bf16_train_step", ""),
         ("cpu", "bert_layer", "train_step_undonated", "nofusion"),
         ("cpu", "small_models", "dropout_mlp", ""),
         ("gpu-h100", "bert_layer", "train_step_undonated", ""),
         ("gpu-h100", "small_models", "convnet_train_step", ""),
         ("gpu-h100", "bert_layer", "forward", "nofusion"),
         ("gpu-h100", "bert_layer", "train_step_undonated", "nofusion"),
         ("tpu-v3", "small_models", "layer_norm", ""),
         ("tpu-v3", "bert_layer", "forward", ""),
         ("tpu-v3", "bert_layer", "train_step_undonated", "")]
# The donated training steps, on every target the issue measures them on.
DUMPS += [(target, model, entry, "")
          for target in ("cpu", "gpu-h100", "tpu-v3")
          for model, entry in (("bert_layer", "train_step"), ("bert_stack2", "train_step"),
                               ("small_models", "convnet_train_step_donated"),
                               ("scan_rnn", "train_step"),
                               ("small_models", "bert_layer_bf16_train_step_donated"))]


def dump_child(out_dir: str, target: str, model: str, entry: str) -> None:
    """Runs with XLA_FLAGS=--xla_dump_to set: compile one entry once."""
    from hloscope.frontends.jax import lower
    fn, args = jax_models()[model][entry]
    lowered = lower(fn, args, target)
    with open(os.path.join(out_dir, "memory_analysis.json"), "w") as f:
        json.dump(lowered.memory, f, indent=2, sort_keys=True)
        f.write("\n")


def capture_dump(target: str, model: str, entry: str, variant: str, python: str) -> None:
    stem = stem_of(model, entry, jax_models()[model][entry][0])
    if ONLY not in stem:
        return
    name = f"{target.split('-')[0]}_{stem}"
    if variant:
        name += "_" + variant
    dest = os.path.join(FIXTURES, "dumps", name)
    full = (target, model, entry, variant) == DUMPS[0]
    with tempfile.TemporaryDirectory() as tmp:
        flags = f"--xla_dump_to={tmp} --xla_dump_hlo_as_text"
        if variant:
            flags += " --xla_disable_hlo_passes=" + NO_FUSION[target.split("-")[0]][variant]
        env = dict(os.environ, XLA_FLAGS=flags)
        if target.startswith("gpu"):
            env.update(JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", CUDA_VISIBLE_DEVICES="-1")
        subprocess.run([python, __file__, "--dump-child", tmp, "--only-target", target,
                        "--model", model, "--entry", entry], env=env, check=True)
        # The module of interest is the last one compiled (helper jits that build the example
        # arguments come first); keep its files.
        posts = [p for p in glob.glob(os.path.join(tmp, "module_*after_optimizations.txt"))
                 if (target == "cpu") == ("cpu_after" in p)]  # GPU runs dump CPU helpers too
        main = max(posts, key=lambda p: int(os.path.basename(p).split(".")[0][7:]))
        # "module_0042.jit_forward.": the module number alone is shared with helper modules
        # of another backend (a TPU run also dumps CPU modules).
        module_prefix = ".".join(os.path.basename(main).split(".")[:2]) + "."
        keep = [p for p in glob.glob(os.path.join(tmp, module_prefix + "*.txt"))
                if full or p.endswith(("-buffer-assignment.txt", "-live-range.txt",
                                       "after_optimizations.txt"))]
        keep.append(os.path.join(tmp, "memory_analysis.json"))
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.makedirs(dest)
        for p in sorted(keep):
            shutil.copy(p, dest)
            print(f"wrote {os.path.relpath(os.path.join(dest, os.path.basename(p)), ROOT)}")


def available(target: str) -> bool:
    return importlib.util.find_spec(get_target(target).plugin) is not None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", help="comma-separated targets (default: cpu and each of "
                    f"{', '.join(DEFAULT_TARGETS[1:])} whose extra is installed)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for non-CPU targets (a venv with the tpu/gpu extras)")
    ap.add_argument("--no-tf", action="store_true", help="skip the TensorFlow model")
    ap.add_argument("--no-dump", action="store_true", help="skip the --xla_dump_to directories")
    ap.add_argument("--only-keras", action="store_true", help="capture only the Keras model")
    ap.add_argument("--only-dumps", action="store_true",
                    help="capture only the --xla_dump_to directories of the targets")
    ap.add_argument("--no-fusion", action="store_true",
                    help="also capture XLA's own no-fusion compiles (calibration models only)")
    ap.add_argument("--only-target", help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="", help=argparse.SUPPRESS)
    ap.add_argument("--dump-child", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--entry", help=argparse.SUPPRESS)
    ap.add_argument("--only", default="", metavar="TEXT",
                    help="capture only the fixtures whose name holds TEXT (e.g. donated)")
    a = ap.parse_args()
    global ONLY
    ONLY = a.only
    if a.dump_child:
        dump_child(a.dump_child, a.only_target, a.model, a.entry)
        return 0
    if a.only_target:
        if a.variant == "keras":
            capture_keras(a.only_target)
        else:
            capture_jax(a.only_target, a.variant)
        return 0
    targets = a.targets.split(",") if a.targets else [t for t in DEFAULT_TARGETS if
                                                       t == "cpu" or available(t)]
    if a.only_keras:
        run_child(sys.executable, "cpu", "keras")
        return 0
    if a.only_dumps:
        for d in DUMPS:
            if d[0] in targets:
                capture_dump(*d, sys.executable if d[0] == "cpu" else a.python)
        return 0
    for target in targets:
        if target == "cpu":
            capture_jax("cpu")
            if importlib.util.find_spec("keras") is not None:
                run_child(sys.executable, "cpu", "keras")
            if not a.no_tf:
                if importlib.util.find_spec("tensorflow") is None:
                    print("tensorflow not installed: skipping bert_layer_tf", file=sys.stderr)
                else:
                    capture_tf()
            if not a.no_dump:
                for d in DUMPS:
                    if d[0] == "cpu":
                        capture_dump(*d, sys.executable)
        else:
            run_child(a.python, target)
            if not a.no_dump:
                for d in DUMPS:
                    if d[0] == target:
                        capture_dump(*d, a.python)
        if a.no_fusion:
            for variant in NO_FUSION[target.split("-")[0]]:
                run_child(sys.executable if target == "cpu" else a.python, target, variant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
