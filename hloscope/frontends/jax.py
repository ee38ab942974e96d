"""Lower a JAX function to HLO text before and after XLA optimization, for a Target.

JAX is imported here and only here (and only when a function of this module is called), so the
rest of hloscope works without it. The returned text is the contract with everything downstream.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from hloscope.frontends.targets import Target, get_target


@dataclass(frozen=True)
class Lowered:
    """HLO text before (``pre``) and after (``post``) optimization, and XLA's own memory figures
    (``memory``: argument, output, alias and temp bytes from ``Compiled.memory_analysis()``)."""

    pre: str
    post: str
    target: str
    memory: dict[str, int] = field(default_factory=dict)
    # XLA's own compile with its fusion passes off (Target.no_fusion_passes), when asked for.
    post_unfused: Optional[str] = None
    memory_unfused: dict[str, int] = field(default_factory=dict)
    framework: str = "jax"
    # How the program was split over devices (frontends.parallel.Parallel.as_dict()), if it was.
    parallel: Optional[dict[str, Any]] = None
    # What was asked to be donated, in words ("arguments 0, 1 (the entry's own jax.jit)",
    # "none", ...); what XLA made of it is the optimized module's input_output_alias.
    donation: str = ""
    # XLA's own buffer assignment of each compile, as hloscope.xla.read_captured takes it:
    # {"proto", "module"} (base64; cpu) or {"dump"} (the *-buffer-assignment.txt; gpu, tpu).
    assignment: dict[str, str] = field(default_factory=dict)
    assignment_unfused: dict[str, str] = field(default_factory=dict)


class CompileError(RuntimeError):
    """XLA refused to compile the program; the message is XLA's, first lines."""


def compile_error(error: BaseException, target: str) -> CompileError:
    lines = [line for line in str(error).splitlines() if line.strip()][:6]
    return CompileError(f"XLA could not compile for {target}: "
                        + ("\n  ".join(lines) or type(error).__name__))


class MissingCompilerError(RuntimeError):
    pass


class EntryError(ValueError):
    """The entry cannot be lowered as asked (a donation it cannot take, ...): the message says
    why and what to do instead."""


def parse_donate(text: Optional[str]) -> Optional[str]:
    """``--donate``: "all", "none" or argument numbers ("0,1,2"); None keeps the entry's own.
    Returns the normalised text; raises EntryError on anything else."""
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("all", "none"):
        return t
    try:
        nums = sorted({int(x) for x in t.split(",") if x.strip()})
    except ValueError:
        nums = []
    if not nums or min(nums) < 0:
        raise EntryError(f"--donate takes all, none or argument numbers like 0,1,2; got "
                         f"'{text}'")
    return ",".join(map(str, nums))


def donate_argnums(donate: str, count: int) -> tuple[int, ...]:
    """The argument numbers of a normalised ``--donate`` for a function of ``count``
    arguments."""
    if donate == "none":
        return ()
    if donate == "all":
        return tuple(range(count))
    nums = tuple(int(x) for x in donate.split(","))
    if nums and max(nums) >= count:
        raise EntryError(f"--donate {donate}: the entry takes {count} argument(s), numbered "
                         f"0 to {count - 1}")
    return nums


def wrapper_kind(fn: Any) -> str:
    """What compiled-function wrapper ``fn`` is ("jax.jit", "nnx.jit", "equinox.filter_jit",
    or its type's name for anything else with ``.lower``), or "" for a plain function. A
    wrapper is lowered through its own ``.lower``, so the user's donation, shardings and state
    handling stay as they are."""
    lower = getattr(fn, "lower", None)
    if not callable(lower) or isinstance(fn, type):
        return ""
    module = type(fn).__module__ or ""
    name = type(fn).__name__
    if name == "PjitFunction" or module.startswith("jax"):
        return "jax.jit"
    if module.startswith("flax"):
        return "nnx.jit"
    if module.startswith("equinox"):
        return "equinox.filter_jit"
    return f"{module}.{name}".strip(".")


def _jax_lowered(lowered: Any) -> Any:
    """JAX's own ``jax.stages.Lowered`` inside a wrapper's (nnx and equinox keep it as
    ``.lowered``)."""
    import jax
    seen = 0
    while not isinstance(lowered, jax.stages.Lowered) and seen < 4:
        inner = getattr(lowered, "lowered", None)
        if inner is None:
            raise EntryError(f"{type(lowered).__name__} returned by .lower() holds no "
                             "jax.stages.Lowered; hloscope cannot read its HLO")
        lowered, seen = inner, seen + 1
    return lowered


def _donated_arguments(lowered: Any) -> tuple[int, ...]:
    """The top-level arguments with a donated leaf, from JAX's ``args_info``."""
    import jax
    try:
        args = lowered.args_info[0]
    except Exception:
        return ()
    out = []
    for k, a in enumerate(args):
        leaves = jax.tree.leaves(a, is_leaf=lambda x: hasattr(x, "donated"))
        if any(getattr(x, "donated", False) for x in leaves):
            out.append(k)
    return tuple(out)


def _arguments_text(nums: tuple[int, ...]) -> str:
    if not nums:
        return "none"
    return ("argument " if len(nums) == 1 else "arguments ") + ", ".join(map(str, nums))


def _prepare_environment(target: Target) -> None:
    if target.platform == "tpu":
        # Another process (or this one's CPU backend) may hold libtpu's lock file; a deviceless
        # compile does not need exclusive use of a TPU.
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    if target.platform == "cuda":
        # A deviceless CUDA compile: the plugin must not look for a driver or a GPU.
        import sys
        if "jax" in sys.modules and os.environ.get("CUDA_VISIBLE_DEVICES") != "-1":
            raise MissingCompilerError(
                "GPU targets need JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 and CUDA_VISIBLE_DEVICES=-1 "
                "set before JAX is imported; run the GPU lowering in a fresh process")
        os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"


def devices_for(target: Target, count: int, topology: Optional[str] = None) -> list[Any]:
    """``count`` JAX devices to compile for: the local CPUs (more than one only under
    ``--xla_force_host_platform_device_count``), or a deviceless TPU topology's (``topology``,
    else the target's own) or GPU topology's first ``count``."""
    _prepare_environment(target)
    import jax
    if target.platform == "cpu":
        found = jax.devices("cpu")
    else:
        from jax.experimental import topologies
        try:
            if target.platform == "tpu":
                assert target.topology is not None
                topo = topologies.get_topology_desc(topology_name=topology or target.topology,
                                                    platform="tpu")
            else:
                assert target.target_config is not None
                with open(target.target_config) as f:
                    config = f.read()
                # slices x hosts per slice x devices per host: one host's ``count`` GPUs
                topo = topologies.get_topology_desc(platform="cuda", target_config=config,
                                                    topology=f"1x1x{max(1, count)}")
        except Exception as e:  # a missing or busy plugin shows up as many different errors
            import importlib.util
            hint = "" if importlib.util.find_spec(target.plugin) else \
                f"; install it with: pip install -e '.[{target.extra}]'"
            reason = str(e).splitlines()[0] if str(e) else repr(e)
            raise MissingCompilerError(f"cannot compile for {target.name}: {reason}{hint}") \
                from e
        found = list(topo.devices)
    if len(found) < count:
        raise MissingCompilerError(f"{target.name} offers {len(found)} device(s) here, not "
                                   f"{count}")
    return list(found[:count])


def lower(fn: Callable[..., Any], args: tuple[Any, ...], target: str | Target = "cpu",
          static_argnums: tuple[int, ...] = (), *, dtype: Optional[str] = None,
          xla_unfused: bool = False, devices: int = 1,
          batch_axes: Optional[Sequence[Optional[int]]] = None,
          topology: Optional[str] = None,
          pre_args: Optional[tuple[Any, ...]] = None,
          on_text: Optional[Callable[[str, str], None]] = None,
          donate: Optional[str] = None, mesh: Any = None) -> Lowered:
    """Lower and compile ``fn(*args)`` for ``target``; arguments may be arrays or
    ``jax.ShapeDtypeStruct``s (only shapes and dtypes matter, nothing is allocated).

    ``dtype`` ("bf16", "f16", "f32") casts the floating-point arguments. ``xla_unfused`` also
    compiles with XLA's fusion passes off (a per-compile option, so no fresh process is
    needed). ``devices`` > 1 splits each argument leaf along its ``batch_axes`` entry (None:
    replicated) over a one-axis mesh of that many devices (``frontends.parallel``); the text
    before optimization is then the unpartitioned program of all devices, so ``pre_args``
    (one device's share of the arguments) gives the ``pre`` of one device instead.

    ``fn`` may be a compiled-function wrapper (``jax.jit``, ``nnx.jit``,
    ``equinox.filter_jit``: anything with ``.lower``): it is lowered through its own
    ``.lower`` with its own donation and state handling, never wrapped again; hloscope only
    places the arguments on the target's device (array leaves become shape-only specs there,
    concrete objects such as an NNX model and optimizer stay what they are). ``donate``
    ("all", "none", "0,1"; see ``parse_donate``) sets the donated arguments of a plain
    function, and overrides a ``jax.jit`` wrapper's by jitting the function it wraps again;
    None keeps the entry's own (a plain function donates nothing). ``mesh`` (``--mesh``): the
    jax.sharding.Mesh the model file built its shardings over; every argument keeps its own
    sharding (a leaf without one is replicated over the mesh) and XLA partitions the program
    (``lower_on_mesh``). Errors while tracing ``fn`` propagate as raised; XLA's refusals
    become ``CompileError``."""
    t = get_target(target) if isinstance(target, str) else target
    donate = parse_donate(donate)
    cast = _float_dtype(dtype)
    kind = wrapper_kind(fn)
    if mesh is not None:
        return lower_on_mesh(fn, args, t, mesh, kind, cast, xla_unfused, on_text, donate)
    found = devices_for(t, devices, topology)
    import jax
    from jax.sharding import SingleDeviceSharding

    def spec(a: Any) -> Any:
        dt = a.dtype
        if cast is not None and jax.numpy.issubdtype(dt, jax.numpy.floating):
            dt = cast
        return jax.ShapeDtypeStruct(a.shape, dt)  # type: ignore[no-untyped-call]

    own = ""  # a jax.jit entry's own donation, where hloscope must jit it again
    if kind and (donate is not None or devices > 1):
        inner = getattr(fn, "__wrapped__", None)
        if kind != "jax.jit" or inner is None:
            if donate is not None:
                raise EntryError(f"--donate cannot change the donation of an {kind} entry; "
                                 "set donate_argnums where the model file wraps the function "
                                 "(or return the plain function and let --donate choose)")
            raise EntryError(f"--devices {devices} splits a plain function's arguments; this "
                             f"entry is already compiled ({kind}) with its own shardings: "
                             "return the plain function from hloscope_entries")
        if donate is None:
            # --devices: jit the wrapped function again with the shardings, keeping the
            # entry's donation (read from a trace, which compiles nothing).
            nums = _donated_arguments(getattr(fn, "trace")(*jax.tree.map(spec, args)))
            donate, own = (",".join(map(str, nums)) if nums else "none"), " (the entry's own " \
                "jax.jit)"
        fn, kind = inner, ""
    if kind:
        device = SingleDeviceSharding(found[0])

        def placed(a: Any) -> Any:
            return _array_spec(a, cast, device)

        if kind == "equinox.filter_jit":
            # equinox traces array leaves only: a shape-only spec would be a static value. It
            # gets the concrete arrays, which live on this machine's CPU.
            if t.platform != "cpu":
                raise EntryError(f"an equinox.filter_jit entry compiles the arrays it is given, "
                                 f"and those live on the CPU: hloscope cannot lower it for "
                                 f"{t.name}; return the plain function (with --donate) for "
                                 "that target")

            def placed(a: Any) -> Any:  # noqa: F811
                if cast is not None and hasattr(a, "astype") and hasattr(a, "dtype") and \
                        jax.numpy.issubdtype(a.dtype, jax.numpy.floating):
                    return a.astype(cast)
                return a
        wrapped = getattr(fn, "lower")(*jax.tree.map(placed, args))
        lowered = _jax_lowered(wrapped)
        how = f"{_arguments_text(_donated_arguments(lowered))} (the entry's own {kind})"
    else:
        specs = jax.tree.map(spec, args)
        sharding: Any = SingleDeviceSharding(found[0])
        if devices > 1:
            import numpy as np
            from jax.sharding import Mesh

            assert batch_axes is not None
            sharding = shardings(Mesh(np.array(found), (MESH_AXIS,)), specs, batch_axes)
        nums = donate_argnums(donate, len(args)) if donate is not None else ()
        jitted = jax.jit(fn, in_shardings=sharding, static_argnums=static_argnums,
                         donate_argnums=nums)
        lowered = jitted.lower(*specs)
        how = _arguments_text(nums) + (own or (f" (--donate {donate})" if donate is not None
                                               else ""))
    pre = lowered.as_text(dialect="hlo", debug_info=True)
    if pre_args is not None and not kind:
        alone = jax.jit(fn, in_shardings=SingleDeviceSharding(found[0]),
                        static_argnums=static_argnums, donate_argnums=nums)
        pre = alone.lower(*jax.tree.map(spec, pre_args)).as_text(dialect="hlo",
                                                                  debug_info=True)
    if on_text is not None:
        on_text("pre", pre)
    return Lowered(pre, target=t.name, donation=how,
                   **compile_both(lowered, t, xla_unfused, on_text))


def _array_spec(a: Any, cast: Any, sharding: Any) -> Any:
    """A shape-only spec of an array leaf (its floating dtype cast to ``cast``, when given)
    placed with ``sharding``; any other leaf as it is."""
    import jax
    if not (hasattr(a, "shape") and hasattr(a, "dtype")) or isinstance(a, type):
        return a
    dt = a.dtype
    if cast is not None and jax.numpy.issubdtype(dt, jax.numpy.floating):
        dt = cast
    return jax.ShapeDtypeStruct(a.shape, dt, sharding=sharding)  # type: ignore


def lower_on_mesh(fn: Callable[..., Any], args: tuple[Any, ...], t: Target, mesh: Any,
                  kind: str, cast: Any, xla_unfused: bool,
                  on_text: Optional[Callable[[str, str], None]],
                  donate: Optional[str]) -> Lowered:
    """``lower`` for a step sharded over ``mesh`` by the model file itself: the arguments keep
    their shardings (a shape-only spec's ``sharding``, or the jax.jit's in_shardings), and
    XLA's SPMD partitioner makes the program one device runs. The text before optimization
    is the whole program, before partitioning."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    replicated = NamedSharding(mesh, PartitionSpec())  # type: ignore[no-untyped-call]

    def keep(a: Any) -> Any:
        sharding = getattr(a, "sharding", None)
        if not isinstance(sharding, jax.sharding.Sharding) or \
                set(sharding.device_set) - set(mesh.devices.flat):
            sharding = replicated  # a concrete array lives on this machine's CPU
        return _array_spec(a, cast, sharding)

    specs = jax.tree.map(keep, args)
    if kind:
        if donate is not None:
            raise EntryError(f"--donate cannot change the donation of an {kind} entry under "
                             "--mesh (jitting it again would drop its shardings); set "
                             "donate_argnums where the model file jits the step")
        if kind == "equinox.filter_jit":
            raise EntryError("an equinox.filter_jit entry compiles the concrete arrays it is "
                             "given; under --mesh return a jax.jit step with its shardings")
        lowered = _jax_lowered(getattr(fn, "lower")(*specs))
        how = f"{_arguments_text(_donated_arguments(lowered))} (the entry's own {kind})"
    else:
        nums = donate_argnums(donate, len(args)) if donate is not None else ()
        lowered = jax.jit(fn, donate_argnums=nums).lower(*specs)
        how = _arguments_text(nums) + (f" (--donate {donate})" if donate is not None else "")
    pre = lowered.as_text(dialect="hlo", debug_info=True)
    if on_text is not None:
        on_text("pre", pre)
    return Lowered(pre, target=t.name, donation=how,
                   **compile_both(lowered, t, xla_unfused, on_text))


def compile_both(lowered: Any, target: Target, xla_unfused: bool,
                 on_text: Optional[Callable[[str, str], None]] = None,
                 text: Callable[[str], str] = lambda s: s) -> dict[str, Any]:
    """``lowered`` compiled for ``target`` (and, with ``xla_unfused``, again with XLA's
    fusion passes off): the ``Lowered`` fields ``post``, ``memory``, ``post_unfused``,
    ``memory_unfused``, ``assignment`` and ``assignment_unfused``. ``text`` rewrites each
    optimized text (the TensorFlow frontend's source lines); ``on_text`` gets "post" as soon
    as it is there. XLA's refusals become ``CompileError``."""
    post = ""

    def compiled_text(compiled: Any) -> None:
        # Handed over before XLA's figures and assignment are read off the compile (0.3 s on
        # the 32-layer llama step, most of it without the GIL): the reading of the text starts
        # beside them.
        nonlocal post
        post = text(compiled.as_text() or "")
        if on_text is not None:
            on_text("post", post)

    try:
        compiled, assignment, memory = _compile(lowered, target, on_compiled=compiled_text)
        unfused, assignment_unfused, memory_unfused = _compile(
            lowered, target, {"xla_disable_hlo_passes": target.no_fusion_passes}) \
            if xla_unfused else (None, {}, {})
    except Exception as e:  # jaxlib's XlaRuntimeError and friends
        raise compile_error(e, target.name) from e
    return {"post": post, "memory": memory,
            "post_unfused": text(unfused.as_text()) if unfused is not None else None,
            "memory_unfused": memory_unfused,
            "assignment": assignment, "assignment_unfused": assignment_unfused}


def compile_with_assignment(lowered: Any, target: Target,
                            options: Optional[dict[str, Any]] = None
                            ) -> tuple[Any, dict[str, str]]:
    """``lowered`` compiled (with ``options``), and XLA's own buffer assignment of that
    compile as ``Lowered.assignment`` keeps it. XLA:CPU returns it as a proto; the deviceless
    gpu and tpu compiles return an empty one, so they compile with ``xla_dump_to`` set to a
    scratch directory (a per-compile option) and the dumped ``*-buffer-assignment.txt`` is
    read back (benchmarks/assignment_cost.py: a median 1.00-1.08x of the compile
    alone on the BERT layer step, within the noise of this machine)."""
    compiled, assignment, _ = _compile(lowered, target, options)
    return compiled, assignment


def _compile(lowered: Any, target: Target, options: Optional[dict[str, Any]] = None,
             on_compiled: Optional[Callable[[Any], None]] = None
             ) -> tuple[Any, dict[str, str], dict[str, int]]:
    """``compile_with_assignment``, and XLA's figures (``memory_stats``) of the compile, read
    off the one ``memory_analysis()`` that also gives XLA:CPU's assignment (a call takes
    0.2 s on the 32-layer llama step). ``on_compiled`` gets the compiled executable as soon
    as there is one, before any of that."""
    import base64
    import glob
    import tempfile
    opts = dict(options or {})
    if target.platform == "cpu":
        compiled = lowered.compile(compiler_options=opts or None)
        if on_compiled is not None:
            on_compiled(compiled)
        stats = _memory_analysis(compiled)
        figures = memory_stats(compiled, stats)
        try:
            proto = stats.serialized_buffer_assignment_proto
            module = compiled.runtime_executable().hlo_modules()[0] \
                .as_serialized_hlo_module_proto()
        except Exception:  # a jaxlib without them: no assignment, the figures still stand
            return compiled, {}, figures
        if not proto:
            return compiled, {}, figures
        return compiled, {"proto": base64.b64encode(proto).decode(),
                          "module": base64.b64encode(module).decode()}, figures
    with tempfile.TemporaryDirectory(prefix="hloscope-xla-dump-") as tmp:
        opts.update(xla_dump_to=tmp, xla_dump_hlo_as_text=True)
        compiled = lowered.compile(compiler_options=opts)
        if on_compiled is not None:
            on_compiled(compiled)
        figures = memory_stats(compiled)
        found = sorted(glob.glob(os.path.join(tmp, "*after_optimizations-buffer-assignment.txt")))
        if not found:
            return compiled, {}, figures
        with open(max(found, key=os.path.getsize)) as f:
            return compiled, {"dump": f.read()}, figures


DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


def _float_dtype(name: Optional[str]) -> Any:
    if name is None:
        return None
    import jax.numpy as jnp
    if name not in DTYPES:
        raise ValueError(f"unknown dtype '{name}'; choose one of: {', '.join(DTYPES)}")
    return getattr(jnp, DTYPES[name])


def _memory_analysis(compiled: Any) -> Any:
    """``Compiled.memory_analysis()``, or None where the backend has none."""
    try:
        return compiled.memory_analysis()
    except Exception:  # some deviceless backends do not implement it
        return None


def memory_stats(compiled: Any, stats: Any = None) -> dict[str, int]:
    """XLA's own figures from ``Compiled.memory_analysis()`` (empty if the backend has none);
    ``stats``: that call's result, where the caller already has it."""
    if stats is None:
        stats = _memory_analysis(compiled)
    if stats is None:
        return {}
    keys = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
            "temp_size_in_bytes", "generated_code_size_in_bytes", "peak_memory_in_bytes")
    return {k: int(getattr(stats, k)) for k in keys if hasattr(stats, k)}


MESH_AXIS = "data"  # the one axis of --devices N's mesh


def shardings(mesh: Any, specs: Any, axes: Sequence[Optional[int]]) -> Any:
    """``jax.jit`` in_shardings for ``specs``: each leaf split along its axis or replicated."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec
    leaves, tree = jax.tree.flatten(specs)
    if len(leaves) != len(axes):
        raise ValueError(f"{len(axes)} batch axes for {len(leaves)} arguments")
    out = [NamedSharding(mesh, PartitionSpec(*([None] * ax), MESH_AXIS)  # type: ignore
                         if ax is not None else PartitionSpec())  # type: ignore
           for ax in axes]
    return jax.tree.unflatten(tree, out)
