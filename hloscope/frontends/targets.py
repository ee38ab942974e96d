"""Compilation targets: the local CPU (default), and TPU and GPU targets compiled without the
hardware (deviceless AOT through libtpu and the CUDA plugin).

A Target is plain data; ``devices_for()`` in hloscope.frontends.jax turns it into JAX devices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

_CONFIG_DIR = os.path.join(os.path.dirname(__file__), "target_configs")


@dataclass(frozen=True)
class Target:
    """``platform`` is JAX's: cpu, tpu or cuda. ``topology`` names a TPU slice (libtpu);
    ``target_config`` is a GpuTargetConfigProto text file for a deviceless GPU compile."""

    name: str
    platform: str
    topology: Optional[str] = None
    target_config: Optional[str] = None
    extra: str = ""  # the pip extra that brings the compiler for this target
    description: str = ""

    @property
    def plugin(self) -> str:
        """The Python module that brings this target's compiler."""
        return {"cpu": "jax", "tpu": "libtpu", "cuda": "jax_cuda12_plugin"}[self.platform]

    @property
    def backend(self) -> str:
        """The analyses' backend table key (hloscope.analysis.backends): tpu-v2/v3 keep tuple
        tables in temp; v4 and later place them with memory-space assignment."""
        if self.platform == "tpu":
            return "tpu" if self.name in ("tpu-v2", "tpu-v3") else "tpu-v4"
        return self.family

    @property
    def family(self) -> str:
        """cpu, gpu or tpu: the key of NO_FUSION and of the analyses' backend table."""
        return {"cuda": "gpu"}.get(self.platform, self.platform)

    @property
    def no_fusion_passes(self) -> str:
        """The passes to disable for XLA's own compile without fusion (the variant that the
        unfused estimate is checked against: on gpu, dots also left as plain ops)."""
        variants = NO_FUSION[self.family]
        return variants.get("nofusion-nocublas", variants["nofusion"])


# XLA's own compile without fusion (shared/reference/xla-no-fusion.md): the passes to switch
# off per target family, given as ``xla_disable_hlo_passes`` (XLA_FLAGS in a fresh process, or
# a per-compile option). "nofusion-nocublas" also leaves dots as plain ops on the GPU (no cuBLAS
# epilogue folding), which is what hloscope's unfused estimate models.
_GPU_FUSION_PASSES = ("priority-fusion,multi_output_fusion,triton-gemm-rewriter,"
                      "splitk-rewriter,gemm-fusion-swap-operands,triton-softmax-rewriter,"
                      "fusion-block-level-rewriter,cudnn-fusion-compiler,"
                      "cudnn-fused-convolution-rewriter,conv-fusion-rewriter,norm-rewriter,"
                      "copy_fusion,sort-iota-fusion,fusion-dynamic-memcpy-rewriter,"
                      "dynamic-slice-fusion-rewriter-v2,ragged_dot_fusion_rewriter,dot-merger")
NO_FUSION: dict[str, dict[str, str]] = {
    # fusion-wrapper stays on: without it the cpu program computes wrong results.
    "cpu": {"nofusion": "fusion,dot-library-rewriter"},
    "gpu": {"nofusion": _GPU_FUSION_PASSES,
            "nofusion-nocublas": _GPU_FUSION_PASSES + ",cublas-gemm-rewriter"},
    "tpu": {"nofusion": "tpu_fusion,tpu_multi_output_fusion"},
}


TARGETS: dict[str, Target] = {
    "cpu": Target("cpu", "cpu", description="the local CPU (XLA:CPU)"),
    "tpu-v2": Target("tpu-v2", "tpu", "v2:2x2", extra="tpu", description="TPU v2, deviceless"),
    "tpu-v3": Target("tpu-v3", "tpu", "v3:2x2", extra="tpu", description="TPU v3, deviceless"),
    "tpu-v4": Target("tpu-v4", "tpu", "v4:2x2x1", extra="tpu", description="TPU v4, deviceless"),
    "tpu-v5e": Target("tpu-v5e", "tpu", "v5e:2x2", extra="tpu",
                      description="TPU v5e, deviceless"),
    "tpu-v5p": Target("tpu-v5p", "tpu", "v5p:2x2x1", extra="tpu",
                      description="TPU v5p, deviceless"),
    "tpu-v6e": Target("tpu-v6e", "tpu", "v6e:2x2", extra="tpu",
                      description="TPU v6e, deviceless"),
    "gpu-h100": Target("gpu-h100", "cuda", target_config=os.path.join(_CONFIG_DIR,
                                                                      "h100.textproto"),
                       extra="gpu", description="NVIDIA H100 (sm_90), deviceless"),
    "gpu-a100": Target("gpu-a100", "cuda", target_config=os.path.join(_CONFIG_DIR,
                                                                      "a100.textproto"),
                       extra="gpu", description="NVIDIA A100 40GB (sm_80), deviceless"),
}


class UnknownTargetError(ValueError):
    pass


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target '{name}'; choose one of: {', '.join(TARGETS)}") from None
