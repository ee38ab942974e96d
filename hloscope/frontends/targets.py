"""Compilation targets: the local CPU (default), and TPU and GPU targets compiled without the
hardware (deviceless AOT through libtpu and the CUDA plugin).

A Target is plain data; ``device_for()`` in hloscope.frontends.jax turns it into a JAX device.
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
}


class UnknownTargetError(ValueError):
    pass


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target '{name}'; choose one of: {', '.join(TARGETS)}") from None
