"""Data parallelism over N devices (``--devices N``): the program each device runs when one
size of a model file (its batch) is split over N devices and everything else is replicated.

The split is found, not declared: the entry's arguments are built twice, at the batch given
and at twice it, and an argument whose shape doubles along one axis is split along that axis
(``P("data")`` on a one-axis mesh); one whose shape stays is replicated. ``jax.jit`` with those
shardings lowers one SPMD program, and XLA's partitioner turns it into the per-device program,
with the all-reduces of the gradients in it. Its figures (XLA's and hloscope's) are per device.

Devices come from where they can without hardware: on cpu, ``--xla_force_host_platform_
device_count=N`` in a worker process of its own; on tpu, a deviceless topology of the target's
generation big enough for N devices (``v2:8x8`` has 128). Where XLA or the plugin refuses the
N-device program, the per-device program is lowered instead (the batch divided by N, no
collectives) and the report says so and why.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

from hloscope.frontends.entry import lower_entry
from hloscope.frontends.jax import CompileError, Lowered, MissingCompilerError
from hloscope.frontends.loader import ModelFile, ModelFileError
from hloscope.frontends.targets import Target


# Devices per chip as JAX counts them: v2 and v3 show each of a chip's two TensorCores as a
# device; v4 and v5p join theirs into one megacore device; v5e and v6e have one per chip.
_TPU_DEVICES_PER_CHIP = {"v2": 2, "v3": 2, "v4": 1, "v5p": 1, "v5e": 1, "v6e": 1}
_TPU_3D = {"v4", "v5p"}


@dataclass(frozen=True)
class Parallel:
    """How a program was split: ``mode`` "spmd" (XLA partitioned the N-device program) or
    "per-device" (it could not; this is one device's share lowered alone, and ``reason`` says
    why)."""

    devices: int
    size: str  # the size split over the devices (batch)
    global_value: int
    per_device: int
    mode: str
    reason: str = ""
    topology: str = ""  # the deviceless TPU topology compiled for, if any
    mesh: str = ""  # --mesh: the model's own shardings over this mesh ("data=2,model=4")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Mesh = tuple[tuple[str, int], ...]  # --mesh data=8,model=4: axis names and sizes, in order


def parse_mesh(text: str) -> Mesh:
    """``data=8,model=4`` → ``(("data", 8), ("model", 4))``; a ValueError says what is
    wrong."""
    axes: list[tuple[str, int]] = []
    for part in text.split(","):
        name, eq, size = part.strip().partition("=")
        if not eq or not name.strip().isidentifier() or not size.strip().isdigit() or \
                int(size) < 1:
            raise ValueError(f"{text!r}: expected NAME=SIZE,... with each size a positive "
                             "integer, e.g. data=8,model=4")
        if name.strip() in dict(axes):
            raise ValueError(f"{text!r}: axis '{name.strip()}' is named twice")
        axes.append((name.strip(), int(size)))
    return tuple(axes)


def mesh_text(mesh: Mesh) -> str:
    return ",".join(f"{n}={k}" for n, k in mesh)


def lower_on_mesh(model: ModelFile, entry: str, sizes: dict[str, Any], target: Target,
                  mesh: Mesh, dtype: Optional[str] = None, xla_unfused: bool = True,
                  donate: Optional[str] = None) -> tuple[Lowered, Parallel]:
    """One device's program of ``entry`` as the model file shards it over ``mesh``: hloscope
    builds a jax.sharding.Mesh of that shape over the target's devices (host devices on cpu,
    a deviceless topology on tpu and gpu), hands it to ``hloscope_entries(mesh=...)``, and
    XLA partitions the step the entry returns."""
    import numpy as np
    from jax.sharding import Mesh as JaxMesh

    from hloscope.frontends import jax as jax_frontend
    count = math.prod(k for _, k in mesh)
    topology = tpu_topology(target.topology, count) if target.platform == "tpu" and \
        target.topology else ""
    found = jax_frontend.devices_for(target, count, topology or None)
    jax_mesh = JaxMesh(np.array(found).reshape([k for _, k in mesh]),
                       tuple(n for n, _ in mesh))
    chosen = model.entry(entry, sizes, mesh=jax_mesh)
    lowered = jax_frontend.lower(chosen.fn, chosen.args, target, dtype=dtype,
                                 xla_unfused=xla_unfused, donate=donate, mesh=jax_mesh)
    return lowered, Parallel(count, "", 0, 0, "mesh", topology=topology,
                             mesh=mesh_text(mesh))


def tpu_topology(default: str, devices: int) -> str:
    """The smallest topology of ``default``'s generation ("v3:2x2") with at least ``devices``
    devices, its chips a power of two laid out as evenly as the torus allows: 128 v2 devices
    are 64 chips, ``v2:8x8``."""
    generation, _, shape = default.partition(":")
    per_chip = _TPU_DEVICES_PER_CHIP.get(generation, 1)
    default_chips = math.prod(int(d) for d in shape.split("x"))
    chips = max(default_chips, 1 << max(0, math.ceil(math.log2(math.ceil(devices / per_chip)))))
    k = chips.bit_length() - 1
    if generation in _TPU_3D:
        # Doubled in turn along x, y, z from 1x1x1, then written as libtpu names them.
        dims = [1, 1, 1]
        for i in range(k):
            dims[i % 3] *= 2
        a, b, c = sorted(dims, reverse=min(dims) == 1)  # 2x2x1, 2x2x2, 2x2x4, 2x4x4, ...
        return f"{generation}:{a}x{b}x{c}"
    return f"{generation}:{1 << (k // 2)}x{1 << (k - k // 2)}"


def batch_axes(model: ModelFile, entry: str, sizes: dict[str, Any],
               size: str) -> tuple[Optional[int], ...]:
    """For each array leaf of the entry's arguments (``jax.tree.leaves`` order), the axis that
    grows with ``size``, or None where the argument does not depend on it (replicated)."""
    import jax
    known = {s.name: s.default for s in model.sizes}
    if size not in known:
        raise ModelFileError(f"{model.path}: --devices splits the size '{size}', which "
                             f"hloscope_entries() does not take; it takes: "
                             f"{', '.join(known) or 'no sizes'} (choose one with --split)")
    value = sizes.get(size, known[size])
    if not isinstance(value, int) or isinstance(value, bool):
        raise ModelFileError(f"{model.path}: --devices splits '{size}', which is "
                             f"{value!r}, not an integer")
    one = model.entry(entry, {**sizes, size: value})
    two = model.entry(entry, {**sizes, size: value * 2})
    if one.framework != "jax":
        raise ModelFileError(f"{model.path}: entry '{entry}' is a TensorFlow function; "
                             "--devices needs a JAX entry (jax.jit shards its arguments)")
    a, b = jax.tree.leaves(one.args), jax.tree.leaves(two.args)
    if len(a) != len(b):
        raise ModelFileError(f"{model.path}: entry '{entry}' takes {len(a)} arrays at "
                             f"{size}={value} but {len(b)} at {size}={value * 2}; --devices "
                             "needs the same arguments at every size")
    axes: list[Optional[int]] = []
    for i, (x, y) in enumerate(zip(a, b)):
        sx, sy = tuple(x.shape), tuple(y.shape)
        changed = [d for d in range(len(sx)) if len(sx) == len(sy) and sx[d] != sy[d]]
        if not changed and sx == sy:
            axes.append(None)
        elif len(changed) == 1 and sy[changed[0]] == 2 * sx[changed[0]]:
            axes.append(changed[0])
        else:
            raise ModelFileError(f"{model.path}: argument {i} of entry '{entry}' is {sx} at "
                                 f"{size}={value} and {sy} at {size}={value * 2}: not one "
                                 "axis that grows with it, so it cannot be split")
    if all(ax is None for ax in axes):
        raise ModelFileError(f"{model.path}: no argument of entry '{entry}' grows with "
                             f"'{size}', so there is nothing to split over devices")
    return tuple(axes)


def lower_data_parallel(model: ModelFile, entry: str, sizes: dict[str, Any], target: Target,
                        devices: int, size: str = "batch", dtype: Optional[str] = None,
                        xla_unfused: bool = True, donate: Optional[str] = None
                        ) -> tuple[Lowered, Parallel]:
    """One device's program of ``entry`` split ``devices`` ways over ``size``."""
    from hloscope.frontends import jax as jax_frontend
    axes = batch_axes(model, entry, sizes, size)
    value = sizes.get(size, next(s.default for s in model.sizes if s.name == size))
    if value % devices:
        raise ModelFileError(f"{model.path}: {size}={value} does not split over {devices} "
                             f"devices; give a multiple of {devices} (--set {size}=...)")
    per_device = value // devices
    topology = tpu_topology(target.topology, devices) if target.platform == "tpu" and \
        target.topology else ""
    chosen = model.entry(entry, sizes)
    alone = model.entry(entry, {**sizes, size: per_device})
    try:
        lowered = jax_frontend.lower(chosen.fn, chosen.args, target, dtype=dtype,
                                     xla_unfused=xla_unfused, devices=devices,
                                     batch_axes=axes, topology=topology or None,
                                     pre_args=alone.args, donate=donate)
        return lowered, Parallel(devices, size, value, per_device, "spmd", topology=topology)
    except (CompileError, MissingCompilerError) as e:
        if out_of_memory(str(e)):
            raise  # XLA partitioned it and says it does not fit: that is the answer
        reason = str(e).splitlines()[0]
    except Exception as e:  # a sharding the model's own code rejects, and the like
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    lowered = lower_entry(alone, target, model.path, dtype, xla_unfused, donate=donate)
    return lowered, Parallel(devices, size, value, per_device, "per-device", reason)


def out_of_memory(message: str) -> bool:
    """XLA:TPU refuses a program that does not fit its HBM (RESOURCE_EXHAUSTED)."""
    return "RESOURCE_EXHAUSTED" in message or "Ran out of memory" in message
