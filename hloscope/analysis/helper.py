"""The unfused estimate in a second process, beside the rest of the report.

Once XLA has compiled, the largest single part of ``hloscope diff``'s work is the unfused
estimate (every fusion expanded, the module re-scheduled, its liveness): about as long as
everything else the optimized module needs together (parse, verify, fused liveness, fusion
clusters). Python runs one thread at a time, so on a machine with a core to spare that
estimate goes to a helper process of its own: ``python -m hloscope.analysis.helper``, started
before the model is lowered (it imports no framework, so it is ready long before XLA is
done). It reads one request from stdin (the optimized text, its source name and backend),
parses the text itself and writes ``memory.unfused_part`` back, both as pickles between this
process and its own child. Whatever goes wrong there (the process failing, a text it cannot
read), ``result`` returns None and the caller computes the part itself: the report is the
same either way (tests/test_helper.py).

``hloscope memory`` reads its module itself, so there the helper is a fork of the command
once the text is parsed (``ForkedUnfused``): the child has the parsed module already, computes
the unfused estimate while the command verifies the module and computes the fused figures,
and writes the part back through a pipe. Where the backend has several memory schedulers
(tpu: list, dfs, post-order; each a liveness of the whole unfused module), the command takes
the last one itself once its fused figures are done (``split_schedulers``), and keeps the
cheaper of the two parts (``memory.cheaper``): the figure of trying them all in one process.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
from typing import Optional

from hloscope.analysis import heap
from hloscope.analysis.heap import cores
from hloscope.analysis.memory import UnfusedPart, unfused_part
from hloscope.hlo.ir import Module

# Off: every part is computed in the calling process (tests compare the two).
ENABLED = True


# Texts smaller than this (characters) are analysed in one process: a helper takes about
# half a second to start, and the unfused estimate of a 1 MB module takes about as long.
MIN_TEXT = 1_000_000


def wanted(size: int) -> bool:
    """Whether a helper is worth starting for a text of ``size`` characters: enabled, large
    enough, and with a second core for it."""
    return ENABLED and size >= MIN_TEXT and cores() >= 2


class UnfusedHelper:
    """One helper process for one optimized module."""

    def __init__(self) -> None:
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")
        self._proc: Optional[subprocess.Popen[bytes]] = subprocess.Popen(
            [sys.executable, "-m", "hloscope.analysis.helper"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self._writer: Optional[threading.Thread] = None

    def submit(self, text: str, source: str, backend: Optional[str]) -> None:
        """Hand the optimized text over; written from a thread of its own, so the caller
        goes on at once."""
        proc = self._proc
        if proc is None or proc.stdin is None or self._writer is not None:
            return
        stdin = proc.stdin
        blob = pickle.dumps((text, source, backend), protocol=pickle.HIGHEST_PROTOCOL)

        def write() -> None:
            try:
                stdin.write(blob)
                stdin.close()
            except OSError:  # the helper is gone; result() says so
                pass
        self._writer = threading.Thread(target=write, name="hloscope-helper-writer",
                                        daemon=True)
        self._writer.start()

    def result(self) -> Optional[UnfusedPart]:
        """The helper's answer (waiting for it), or None if it has none."""
        proc = self._proc
        if proc is None or self._writer is None or proc.stdout is None:
            return None
        try:
            data = proc.stdout.read()
            self._writer.join()
            proc.wait()
            part = pickle.loads(data) if proc.returncode == 0 and data else None
        except Exception:  # noqa: BLE001 - any failure there means: compute it here
            part = None
        finally:
            self._proc = None
        return part if isinstance(part, UnfusedPart) else None

    def close(self) -> None:
        """Stop the helper if nothing was asked of it (a lowering that failed)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    f.close()


class ForkedUnfused:
    """``memory.unfused_part(module, backend, schedulers=schedulers)`` computed in a forked
    child of this process, which has the parsed module already: no second parse, no
    start-up."""

    def __init__(self, module: Module, backend: Optional[str],
                 schedulers: Optional[tuple[str, ...]] = None) -> None:
        read, write = os.pipe()
        # Both processes now keep a core busy: neither places its heap orders side by side in
        # a thread of its own (heap.SIDE_BY_SIDE), which would only take a core from the
        # other. This process places them so again once the child is done.
        self._side_by_side = heap.SIDE_BY_SIDE
        heap.SIDE_BY_SIDE = 0
        try:
            pid = os.fork()
        except OSError:
            self._done()
            raise
        if pid == 0:  # the child: answer through the pipe, and leave without cleaning up
            code = 1
            try:
                os.close(read)
                gc.disable()
                blob = pickle.dumps(unfused_part(module, backend, schedulers=schedulers),
                                    protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as f:
                    f.write(blob)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self._pid: Optional[int] = pid
        self._read = read

    def _done(self) -> None:
        heap.SIDE_BY_SIDE = self._side_by_side

    def result(self) -> Optional[UnfusedPart]:
        """The child's answer (waiting for it), or None if it has none."""
        pid, self._pid = self._pid, None
        if pid is None:
            return None
        try:
            with os.fdopen(self._read, "rb") as f:
                data = f.read()
            _, status = os.waitpid(pid, 0)
            part = pickle.loads(data) if status == 0 and data else None
        except Exception:  # noqa: BLE001 - any failure there means: compute it here
            part = None
        finally:
            self._done()
        return part if isinstance(part, UnfusedPart) else None

    def close(self) -> None:
        """Stop the child if its answer was not asked for (the command failed)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            os.close(self._read)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            self._done()


def single_threaded() -> bool:
    """Whether this process runs one thread (native ones too: JAX's or TensorFlow's, where a
    fork could leave the child waiting on a lock that another thread held)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: the threads Python knows of
        return threading.active_count() == 1


def fork_unfused(module: Module, backend: Optional[str], size: int,
                 schedulers: Optional[tuple[str, ...]] = None) -> Optional[ForkedUnfused]:
    """A forked child computing the unfused estimate of ``module`` (parsed from ``size``
    characters; under ``schedulers``, some of the backend's, when given), or None where one
    is not worth it (``wanted``), or this process cannot fork or runs other threads."""
    if not wanted(size) or not hasattr(os, "fork") or not single_threaded():
        return None
    try:
        return ForkedUnfused(module, backend, schedulers)
    except OSError:
        return None


def split_schedulers(schedulers: tuple[str, ...]
                     ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The backend's memory schedulers shared between a forked child and the command: the
    command, done with its fused figures long before the child (on a tpu-v3 llama step it
    then waited 2 s of 3.2 s), takes the last one (each is a liveness of the whole unfused
    module), the child the others. One scheduler (cpu, gpu): all of it in the child."""
    if len(schedulers) < 2:
        return schedulers, ()
    return schedulers[:-1], schedulers[-1:]


def _serve() -> int:
    gc.disable()  # a short-lived process whose objects all live to its end
    heap.SIDE_BY_SIDE = 0  # the process that started this one works meanwhile: no core spare
    from hloscope.hlo.parser import parse
    data = sys.stdin.buffer.read()
    if not data:
        return 0  # closed unused
    text, source, backend = pickle.loads(data)
    part = unfused_part(parse(text, source), backend)
    sys.stdout.buffer.write(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    # Written and flushed: leave without freeing the module object by object (the caller
    # reads until this process closes its output, so its clean-up would be waited for).
    os._exit(_serve())
