"""Packing live ranges into one heap: the algorithm behind XLA's temp allocation size.

XLA's ``GlobalDecreasingSizeBestFitHeap`` (xla/service/heap_simulator/heap_simulator.cc)
sorts the buffers (largest first, then longest-lived, then by id) and places each at the
best-fitting free offset over its live time: the smallest free gap that holds it, lowest
offset on ties. A buffer may be a group of colocated values (values sharing one buffer): it
occupies its offset during each member's range, so gaps between members stay usable.
``ChooseBestHeapAlgorithm`` runs the spatial and the temporal order and keeps the smaller.

Placed chunks are kept in a segment tree over time whose nodes hold merged busy offset
intervals (``_TimeTree``), so one placement reads O(log T) merged lists, not every chunk that
lives long: no quadratic blow-up on a training step's long-lived activations. (The bucketed
chunk list it replaced, ``_Timeline``, stays as the tests' oracle.) The tree's placement loop
is also compiled (``_heaptree.c``, built where a C compiler is; the same offsets, a test
compares), and used where it is built. Without it, in the temporal order with one range per
buffer (the eager model: an online allocator) a free list of gaps gives the same placements
faster. libtpu's first fit in event order (tpu-v3) finds its gap through the free gaps indexed
by the room they have (``_FirstFitGaps``).
Orders after the first stop once they reach the best heap so far, and (where an order is
placed in Python) none runs once one reaches ``packing_bound`` (the least heap any aligned
placement can have): the answer is that of running every order in full (a test compares).
"""

from __future__ import annotations

import bisect
import heapq
import os
import threading
from array import array
from dataclasses import dataclass
from typing import Callable, Optional

from hloscope.hlo.compiled import compiled


@dataclass(frozen=True, slots=True)
class Interval:
    """One buffer to place: ``ranges`` are inclusive (start, end) schedule times."""

    id: int
    size: int
    ranges: tuple[tuple[int, int], ...]
    # XLA's sort keys when the caller knows them (liveness._heap_keys: durations in the heap
    # simulator's event clock); empty: computed here from the ranges.
    spatial_key: tuple[int, ...] = ()
    temporal_key: tuple[int, ...] = ()

    @property
    def start(self) -> int:
        return min(r[0] for r in self.ranges)

    @property
    def end(self) -> int:
        return max(r[1] for r in self.ranges)


@dataclass(frozen=True, slots=True)
class Placement:
    offsets: dict[int, int]  # interval id → offset
    heap_size: int
    order: str  # "spatial" or "temporal": the order that won


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment if alignment > 1 else n


_NEVER = 1 << 80  # a heap size no placement reaches: never give up
_FLOAT_EXACT = 1 << 53  # every integer below it is exact as a float
_C_EXACT = 1 << 62  # _heaptree places heaps below it (its 64-bit integers hold any sum)

# The same placement loop compiled (_heaptree.c, built by setup.py where a C compiler is):
# ranges, sizes, alignment, give-up heap → the offsets placed and the heap, or None where the
# heap might pass _C_EXACT. Optional: where it is not built, Python's tree places.
# (Optional, after them: a board, array('q'), the slot to read another order's heap from, the
# slot to post this one's to, and whether to give up only past the other's heap; see
# _side_by_side.)
_CompiledPlace = Callable[..., Optional[tuple[list[int], int]]]
_compiled_place: Optional[_CompiledPlace] = compiled("hloscope.analysis._heaptree", "place")


class _Timeline:
    """Placed chunks, bucketed by time so that an overlap query touches only nearby chunks.
    A chunk that spans many buckets would be copied into each of them and visited again and
    again by long queries, so those live in one list of their own, scanned once per query."""

    LONG = 8  # buckets; a chunk spanning more is kept in the long list

    def __init__(self, end: int, bucket: int = 64) -> None:
        self.bucket = bucket
        self.buckets: list[list[tuple[int, int, int, int]]] = [
            [] for _ in range(end // bucket + 1)]
        # Long chunks sorted by end, so that a query skips those that ended before it starts.
        self.long: list[tuple[int, int, int, int]] = []
        self.long_ends: list[int] = []

    def add(self, start: int, end: int, offset: int, size: int) -> None:
        chunk = (start, end, offset, size)
        first, last = start // self.bucket, end // self.bucket
        if last - first > self.LONG:
            k = bisect.bisect_right(self.long_ends, end)
            self.long_ends.insert(k, end)
            self.long.insert(k, chunk)
            return
        for b in range(first, last + 1):
            self.buckets[b].append(chunk)

    def busy(self, start: int, end: int) -> list[tuple[int, int]]:
        """(offset, end offset) of the chunks live at some time in [start, end]."""
        k = bisect.bisect_left(self.long_ends, start)
        out = [(off, off + size) for s, _, off, size in self.long[k:] if s <= end]
        first = start // self.bucket
        for b in range(first, end // self.bucket + 1):
            for s, e, off, size in self.buckets[b]:
                # Count a chunk once: in the first bucket where it and the query meet.
                if s <= end and start <= e and (b == first or s // self.bucket == b):
                    out.append((off, off + size))
        return out


def _best_fit(busy: list[tuple[int, int]], size: int, alignment: int) -> int:
    """The offset of the smallest free gap that holds ``size``; the top of the heap if none."""
    best_offset, best_gap = -1, None
    cursor = 0
    for lo, hi in busy:
        if lo > cursor:
            start = _align(cursor, alignment)
            gap = lo - start
            if gap >= size and (best_gap is None or gap < best_gap):
                best_offset, best_gap = start, gap
        if hi > cursor:
            cursor = hi
    if best_offset >= 0:
        return best_offset
    return _align(cursor, alignment)


def _place(intervals: list[Interval], alignment: int) -> tuple[dict[int, int], int]:
    """Best fit in the given order, the placed chunks in a bucketed list (``_Timeline``) and
    their gaps walked in offset order (``_best_fit``): the tests' oracle for ``_place_tree``."""
    end = max((iv.end for iv in intervals), default=0)
    timeline = _Timeline(end)

    def fit(ranges: tuple[tuple[int, int], ...], size: int) -> int:
        taken: list[tuple[int, int]] = []
        for s, e in ranges:
            taken.extend(timeline.busy(s, e))
        taken.sort()
        return _best_fit(taken, size, alignment)

    return _place_in(intervals, fit, timeline.add)


def _place_in(intervals: list[Interval], fit: Callable[[tuple[tuple[int, int], ...], int], int],
              add: Callable[[int, int, int, int], None],
              give_up: int = _NEVER) -> tuple[dict[int, int], int]:
    """Best fit in the given order over an index of placed chunks: ``fit(ranges, size)`` is
    the best-fitting offset for a buffer of ``size`` live over ``ranges``, ``add`` places a
    chunk. It stops once the heap reaches ``give_up`` (the heap only grows, so the order
    cannot end below it); the offsets are then partial."""
    offsets: dict[int, int] = {}
    heap = 0
    for iv in intervals:
        if heap >= give_up:
            break
        offset = fit(iv.ranges, iv.size)
        offsets[iv.id] = offset
        if iv.size:  # an empty buffer takes no room, and splits no gap
            for s, e in iv.ranges:
                add(s, e, offset, iv.size)
        heap = max(heap, offset + iv.size)
    return offsets, heap


def _best_fit_bounds(starts: list[float], ends: list[float], size: int,
                     alignment: int) -> float:
    """``_best_fit`` from the busy intervals' starts and ends, each sorted on its own (a sort
    of plain numbers, no pairs made): of nonempty half-open intervals, the free gaps are
    exactly [k-th smallest end, (k+1)-th smallest start) where that is not empty (a point is
    free where as many intervals have started as have ended), in offset order, with an end
    at 0 before them all for the gap below the smallest start. Same offset as ``_best_fit``
    (the tests compare)."""
    if not starts:
        return 0
    starts.sort()
    ends.sort()
    # (gap, aligned offset) of each gap that holds ``size``; the alignment is _align's, inline
    gaps = [(s - a, a) for e, s in zip([0, *ends], starts)
            if s > e and s - (a := -(-e // alignment) * alignment) >= size]
    # the smallest gap, the lowest offset of equal ones; else the top of the heap
    return min(gaps)[1] if gaps else -(-ends[-1] // alignment) * alignment


def _merge_in(starts: list[float], ends: list[float], lo: float, hi: float) -> None:
    """Add [lo, hi) to the busy offset intervals [starts[i], ends[i]) (sorted, disjoint,
    touching ones merged)."""
    i = bisect.bisect_left(ends, lo)  # the first that ends at or after lo
    j = bisect.bisect_right(starts, hi)  # past the last that starts at or before hi
    if i < j:
        first, last = starts[i], ends[j - 1]
        starts[i:j] = [first if first < lo else lo]
        ends[i:j] = [last if last > hi else hi]
    else:
        starts.insert(i, lo)
        ends.insert(i, hi)


class _TimeTree:
    """Placed chunks in a segment tree over time, as merged offset intervals (each node's a
    pair of lists, starts and ends, for ``_merge_in``). A chunk is kept at the O(log T) nodes
    whose time ranges tile its own (``stored``), and in the union of each of those nodes and
    their ancestors (``below``: everything stored in a node's subtree). The chunks live at
    some time of a query's range are then the ``below`` of the nodes tiling the query and the
    ``stored`` of their ancestors: O(log T) lists, each merged, so many long-lived chunks that
    sit side by side cost one interval, not one each. Same gaps, same best fit as
    ``_Timeline`` (the tests keep that one as the oracle)."""

    def __init__(self, end: int) -> None:
        size = 1
        while size < end + 2:
            size *= 2
        self.size = size
        self.stored: dict[int, tuple[list[float], list[float]]] = {}
        self.below: dict[int, tuple[list[float], list[float]]] = {}

    def _tiles(self, start: int, end: int) -> list[int]:
        out = []
        lo, hi = start + self.size, end + self.size + 1
        while lo < hi:
            if lo & 1:
                out.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                out.append(hi)
            lo >>= 1
            hi >>= 1
        return out

    def add(self, start: int, end: int, offset: float, size: int) -> None:
        lo, hi = offset, offset + size
        stored, below = self.stored, self.below
        tiles = self._tiles(start, end)
        for node in tiles:
            m = stored.get(node)
            if m is None:
                stored[node] = ([lo], [hi])
            else:
                _merge_in(*m, lo, hi)
        seen: set[int] = set()
        for node in tiles:
            while node and node not in seen:
                seen.add(node)
                m = below.get(node)
                if m is None:
                    below[node] = ([lo], [hi])
                else:
                    starts, ends = m
                    i = bisect.bisect_right(starts, lo) - 1
                    if i >= 0 and ends[i] >= hi:
                        # Already busy there: so is every ancestor's union, which holds this
                        # one's.
                        break
                    _merge_in(starts, ends, lo, hi)
                node >>= 1

    def busy(self, start: int, end: int, starts: list[float], ends: list[float]) -> None:
        """Append the starts and ends of the busy offset intervals over [start, end] to
        ``starts`` and ``ends`` (unsorted, possibly overlapping)."""
        stored, below = self.stored, self.below
        ancestors: set[int] = set()
        for node in self._tiles(start, end):
            m = below.get(node)
            if m is not None:
                starts.extend(m[0])
                ends.extend(m[1])
            node >>= 1
            while node and node not in ancestors:
                ancestors.add(node)
                m = stored.get(node)
                if m is not None:
                    starts.extend(m[0])
                    ends.extend(m[1])
                node >>= 1


def _spans(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Inclusive integer ranges, those that overlap or touch joined, in order: the same
    integers."""
    if len(ranges) == 1:  # most buffers
        return tuple(ranges)
    ranges.sort()
    out = [ranges[0]]
    for s, e in ranges[1:]:
        last_s, last_e = out[-1]
        if s <= last_e + 1:
            if e > last_e:
                out[-1] = (last_s, e)
        else:
            out.append((s, e))
    return tuple(out)


def _place_tree(intervals: list[Interval], alignment: int, give_up: int = _NEVER,
                compiled: bool = True,
                board: Optional[tuple["array[int]", int, int, bool]] = None
                ) -> tuple[dict[int, int], int]:
    """``_place`` with the chunks in a ``_TimeTree``: the same offsets (a test compares).
    The tree's time is the rank among the ranges' distinct starts, not the schedule step: a
    range [s, e] becomes [rank of s, rank of the last start at or before e], and two ranges
    meet exactly where their ranks do (each start is at or before the other's end in either
    clock), so the tree is as tall as the buffers ask, not the schedule (the unfused llama
    step: 2,048 leaves for 19,563 steps). A buffer's ranges that overlap or touch in ranks
    are one: the same ranks, busy once (``_spans``; a colocated chain of values, one range
    each, is queried and stored as one range, not one per value). ``board``: the compiled
    loop's board, as ``_side_by_side`` gives it (the Python tree places in full)."""
    if compiled and _compiled_place is not None:
        # None where an offset might not fit the compiled loop's 64-bit integers
        done = _compiled_place([iv.ranges for iv in intervals], [iv.size for iv in intervals],
                               alignment, min(give_up, _C_EXACT), *(board or ()))
        if done is not None:
            placed, heap = done
            return dict(zip([iv.id for iv in intervals], placed)), heap
    starts = sorted({s for iv in intervals for s, _ in iv.ranges})
    rank = {s: k for k, s in enumerate(starts)}
    ranked = [Interval(iv.id, iv.size, _spans([(rank[s], bisect.bisect_right(starts, e) - 1)
                                               for s, e in iv.ranges]))
              for iv in intervals]
    top = sum(_align(iv.size, alignment) for iv in intervals) + alignment  # past every offset
    tree = _TimeTree(len(starts))
    busy = tree.busy
    # The tree keeps offsets as floats where every offset is exact as one (the heap is at most
    # the buffers' aligned sizes summed): CPython sorts a list of floats, or of ints below
    # 2**30, with a type-specific compare, and a heap past 1 GiB has offsets above that (the
    # 32-layer llama step's unfused placement: its two sorts per fit 2x faster as floats).
    number: Callable[[int], float] = float if top < _FLOAT_EXACT else int

    def fit(ranges: tuple[tuple[int, int], ...], size: int) -> int:
        lows: list[float] = []
        highs: list[float] = []
        for s, e in ranges:
            busy(s, e, lows, highs)
        return int(_best_fit_bounds(lows, highs, size, alignment))

    def add(start: int, end: int, offset: int, size: int) -> None:
        tree.add(start, end, number(offset), size)

    return _place_in(ranked, fit, add, give_up)


class _FreeGaps:
    """An allocator's free offset gaps [starts[k], ends[k]): sorted, disjoint, never touching,
    the last one open-ended. ``live`` holds the placed chunks by the time they end, so that
    ``release_before`` frees those whose range ended before a start. ``_added`` and
    ``_removed`` hear of every gap made and unmade (for an index of them)."""

    TOP = 1 << 62

    def __init__(self) -> None:
        self.starts: list[int] = [0]
        self.ends: list[int] = [self.TOP]
        self.live: list[tuple[int, int, int]] = []  # (end time, offset, size)
        self._added(0, self.TOP)

    def _added(self, lo: int, hi: int) -> None:
        pass

    def _removed(self, lo: int, hi: int) -> None:
        pass

    def release_before(self, start: int) -> None:
        """Free each chunk whose range ended before ``start``, merged with the gaps beside."""
        live, starts, ends = self.live, self.starts, self.ends
        while live and live[0][0] < start:
            _, lo, size = heapq.heappop(live)
            hi = lo + size
            i = bisect.bisect_left(starts, lo)
            if i < len(starts) and starts[i] == hi:  # merge with the free gap above
                self._removed(hi, ends[i])
                hi = ends[i]
                del starts[i], ends[i]
            if i > 0 and ends[i - 1] == lo:  # ... and with the one below
                lo = starts[i - 1]
                self._removed(lo, ends[i - 1])
                del starts[i - 1], ends[i - 1]
                i -= 1
            starts.insert(i, lo)
            ends.insert(i, hi)
            self._added(lo, hi)

    def take(self, k: int, offset: int, size: int, end: int) -> None:
        """Place a chunk of ``size`` at ``offset`` in gap ``k``, live until time ``end``."""
        if not size:  # an empty buffer takes no room, and splits no gap
            return
        starts, ends = self.starts, self.ends
        lo, hi = starts[k], ends[k]
        self._removed(lo, hi)
        del starts[k], ends[k]
        for a, b in ((offset + size, hi), (lo, offset)):
            if b > a:
                starts.insert(k, a)
                ends.insert(k, b)
                self._added(a, b)
        heapq.heappush(self.live, (end, offset, size))


class _FirstFitGaps(_FreeGaps):
    """Free gaps indexed by what they hold once aligned (``room``), in classes by its bit
    length, each class's gap starts sorted: the lowest gap that holds ``size`` is the lowest
    start of the classes above ``size``'s (each of their gaps holds it) or the first gap of
    its own class that does, not a walk over every gap below it (with 16 KiB alignment, each
    small long-lived chunk leaves a gap too short to use)."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment
        self.classes: dict[int, list[int]] = {}  # bit length of the room -> gap starts
        self.end_of: dict[int, int] = {}
        super().__init__()

    def _room_class(self, lo: int, hi: int) -> int:
        return max(hi - _align(lo, self.alignment), 0).bit_length()

    def _added(self, lo: int, hi: int) -> None:
        self.end_of[lo] = hi
        bisect.insort(self.classes.setdefault(self._room_class(lo, hi), []), lo)

    def _removed(self, lo: int, hi: int) -> None:
        c = self._room_class(lo, hi)
        starts = self.classes[c]
        del starts[bisect.bisect_left(starts, lo)]
        if not starts:
            del self.classes[c]
        del self.end_of[lo]

    def first_fit(self, size: int) -> int:
        """The index (in ``starts``) of the lowest gap that holds ``size`` once aligned."""
        b = size.bit_length()
        best = self.TOP
        for c, starts in self.classes.items():
            if c > b and starts[0] < best:
                best = starts[0]
        alignment, end_of = self.alignment, self.end_of
        for lo in self.classes.get(b, ()):
            if lo >= best:
                break
            if _align(lo, alignment) + size <= end_of[lo]:
                best = lo
                break
        return bisect.bisect_left(self.starts, best)


def _place_online(intervals: list[Interval], alignment: int,
                  give_up: int = _NEVER) -> tuple[dict[int, int], int]:
    """``_place`` for intervals of one range each, given in start-time order: then the chunks
    that conflict with the next one are exactly those still live at its start, so an
    allocator's free list gives the same best fit without querying placed chunks. The free
    gaps are split on placement and merged back when a chunk's range has ended. Same offsets
    as ``_place`` (a test checks it)."""
    gaps = _FreeGaps()
    starts, ends = gaps.starts, gaps.ends
    offsets: dict[int, int] = {}
    heap = 0
    for iv in intervals:
        if heap >= give_up:
            break
        (start, end), = iv.ranges
        gaps.release_before(start)
        best, best_gap = -1, -1
        for k in range(len(starts) - 1):
            at = _align(starts[k], alignment)
            gap = ends[k] - at
            if gap >= iv.size and (best_gap < 0 or gap < best_gap):
                best, best_gap = k, gap
        k = best if best >= 0 else len(starts) - 1
        offset = _align(starts[k], alignment)
        offsets[iv.id] = offset
        gaps.take(k, offset, iv.size, end)
        heap = max(heap, offset + iv.size)
    return offsets, heap


def _first_fit_online(intervals: list[Interval], alignment: int,
                      give_up: int = _NEVER) -> tuple[dict[int, int], int]:
    """An online first-fit allocator: each interval in the order given (start time, then end,
    then id: the heap simulator's event order) at the lowest aligned offset free for it,
    a buffer of several ranges held from its first start to its last end, and freed after
    its last step. Measured as libtpu's (tpu-v3) temp heap: its own assignment of a ConvNet
    step places each value exactly so. The free gaps indexed by the room they have
    (``_FirstFitGaps``), not the live chunks sorted per placement (``_first_fit_scan``, the
    tests' oracle): the cost does not grow with the buffers that live long."""
    gaps = _FirstFitGaps(alignment)
    starts = gaps.starts
    offsets: dict[int, int] = {}
    heap = 0
    for iv in intervals:
        if heap >= give_up:
            break
        gaps.release_before(iv.start)
        size = iv.size
        if not size:  # an empty buffer fits below every chunk
            offsets[iv.id] = 0
            continue
        k = gaps.first_fit(size)
        offset = _align(starts[k], alignment)
        offsets[iv.id] = offset
        gaps.take(k, offset, size, iv.end)
        heap = max(heap, offset + size)
    return offsets, heap


def _first_fit_scan(intervals: list[Interval], alignment: int,
                    give_up: int = _NEVER) -> tuple[dict[int, int], int]:
    """``_first_fit_online`` by walking the live chunks in offset order at each placement (the
    allocator it replaced: quadratic in the chunks that live long); the tests' oracle."""
    live: list[tuple[int, int, int]] = []  # (end, offset, size)
    placed: dict[int, tuple[int, int]] = {}  # offset -> (offset, size) of the live chunks
    offsets: dict[int, int] = {}
    heap = 0
    for iv in intervals:
        if heap >= give_up:
            break
        start, end = iv.start, iv.end
        while live and live[0][0] < start:
            _, off, _size = heapq.heappop(live)
            placed.pop(off, None)
        offset = 0
        for off, size in sorted(placed.values()):
            if _align(offset, alignment) + iv.size <= off:
                break
            offset = max(offset, off + size)
        offset = _align(offset, alignment)
        offsets[iv.id] = offset
        if iv.size:
            placed[offset] = (offset, iv.size)
            heapq.heappush(live, (end, offset, iv.size))
        heap = max(heap, offset + iv.size)
    return offsets, heap


def packing_bound(intervals: list[Interval], alignment: int = 1) -> int:
    """The least heap any placement of ``intervals`` at ``alignment``-aligned offsets can
    have: at each time the buffers live then sit side by side, each but the topmost taking
    its size rounded up to the alignment, so the heap is at least the sum of those minus the
    largest rounding among them. The most of that over time (without alignment: the most
    bytes live at once)."""
    events: dict[int, list[tuple[int, int]]] = {}  # time -> (aligned size, slack) changes
    for iv in intervals:
        if not iv.size:
            continue
        rounded = _align(iv.size, alignment)
        change = (rounded, rounded - iv.size)
        gone = (-rounded, rounded - iv.size)
        last = -1
        for start, end in sorted(iv.ranges):  # a time the buffer is live counts once
            start = max(start, last + 1)
            if start <= end:
                events.setdefault(start, []).append(change)
                events.setdefault(end + 1, []).append(gone)
                last = end
    bound = live = 0
    slacks: dict[int, int] = {}  # rounding -> how many live buffers have it
    for t in sorted(events):
        for rounded, slack in events[t]:
            live += rounded
            count = slacks.get(slack, 0) + (1 if rounded > 0 else -1)
            if count:
                slacks[slack] = count
            else:
                del slacks[slack]
        if slacks:
            bound = max(bound, live - max(slacks))
    return bound


def pack(intervals: list[Interval], alignment: int = 1,
         orders: tuple[str, ...] = ("spatial", "temporal")) -> Placement:
    """Place every interval; return the offsets and heap size of the better of XLA's two
    orders (spatial: size, then lifetime; temporal: start time, then size), or of the
    ``orders`` given; the first of equal heaps, as XLA's ChooseBestHeapAlgorithm keeps it.
    Same answer as placing every order in full, faster: an order stops once its heap reaches
    the best so far (it cannot end below), and an order that reaches ``packing_bound``, below
    which no order can pack, ends the search."""
    keys = {"spatial": lambda iv: iv.spatial_key or (-iv.size, -(iv.end - iv.start), iv.id),
            "temporal": lambda iv: iv.temporal_key or (iv.start, -iv.size, iv.id),
            "first-fit": lambda iv: (iv.start, iv.end, iv.id)}
    # The online allocator needs the intervals in start order: the temporal order of old. It
    # beats the tree in Python, not the compiled one.
    single = _compiled_place is None and \
        all(len(iv.ranges) == 1 and not iv.temporal_key for iv in intervals)
    placers = {name: _first_fit_online if name == "first-fit" else
               _place_online if name == "temporal" and single else _place_tree
               for name in orders}
    # The bound costs about what the compiled tree takes to place an order: worth it only
    # where an order is placed in Python.
    compiled = _compiled_place is not None and all(p is _place_tree for p in placers.values())
    bound = packing_bound(intervals, alignment) if len(orders) > 1 and not compiled else -1
    if compiled and len(orders) == 2 and SIDE_BY_SIDE and len(intervals) >= SIDE_BY_SIDE \
            and cores() > 1:
        return _side_by_side(intervals, alignment, (orders[0], orders[1]),
                             [keys[name] for name in orders])
    best: Placement | None = None
    for name in orders:
        order = sorted(intervals, key=keys[name])
        offsets, heap = placers[name](order, alignment,
                                      _NEVER if best is None else best.heap_size)
        if best is None or heap < best.heap_size:
            best = Placement(offsets, heap, name)
        if best.heap_size <= bound:
            break
    assert best is not None
    return best


# The compiled placement lets other threads run while it places, so where there are cores to
# spare and enough buffers to pay for a thread (about 0.1 ms to start), pack places its two
# orders side by side. Each posts its heap when it has placed every buffer, and the other gives
# up once its own heap reaches that (the first order only once it passes it: it wins a tie):
# the same answer as one order after the other. The pre-optimization 32-layer llama step's two
# orders: 28 and 22 ms one after the other. 0: never (tests compare the two).
SIDE_BY_SIDE = 1000


def cores() -> int:
    """The processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _side_by_side(intervals: list[Interval], alignment: int, orders: tuple[str, str],
                  keys: list[Callable[[Interval], tuple[int, ...]]]) -> Placement:
    """``pack``'s two compiled orders, the second placed in a thread, the first here; the
    better heap, the first of equal ones."""
    board = array("q", [_C_EXACT, _C_EXACT])  # each order's heap, once placed in full
    results: list[Optional[tuple[dict[int, int], int]]] = [None, None]
    errors: list[BaseException] = []

    def place(k: int, order: list[Interval]) -> None:
        try:
            results[k] = _place_tree(order, alignment, board=(board, 1 - k, k, k == 0))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            errors.append(e)

    second = threading.Thread(target=place, args=(1, sorted(intervals, key=keys[1])))
    second.start()
    place(0, sorted(intervals, key=keys[0]))
    second.join()
    if errors:
        raise errors[0]
    best: Placement | None = None
    for name, done in zip(orders, results):
        assert done is not None
        offsets, heap = done
        if best is None or heap < best.heap_size:
            best = Placement(offsets, heap, name)
    assert best is not None
    return best
