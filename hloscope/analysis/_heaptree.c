/* hloscope.analysis._heaptree: heap._place_tree's loop in C, the same algorithm.
 *
 * Best fit in a given order over a segment tree on time whose nodes hold merged busy offset
 * intervals (heap._TimeTree): a chunk is kept at the O(log T) nodes tiling its time range
 * ("stored") and in the union of those nodes' subtrees ("below", held by each tile and its
 * ancestors). A query over [start, end] reads the "below" of its tiles and the "stored" of
 * their ancestors, then takes the smallest free gap that holds the buffer (the lowest offset
 * of equal ones; the top of the heap if none), as heap._best_fit_bounds does. Offsets are
 * 64-bit: where the sizes, aligned and summed, might not fit, place() returns None and heap.py
 * places in Python, as it does where this module is not built. heap.py is the reference; a
 * test compares the two on drawn buffers.
 *
 * Also OutputTable, liveness._OutputTable in C (described where it is defined below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *lo, *hi;  /* sorted, disjoint; touching intervals merged */
    Py_ssize_t n, cap;
} Vec;

/* a capacity of at least ``need``: ``cap`` doubled (``least`` when there is none yet) */
static Py_ssize_t grown(Py_ssize_t cap, Py_ssize_t need, Py_ssize_t least) {
    cap = cap ? cap * 2 : least;
    while (cap < need) cap *= 2;
    return cap;
}

static int vec_reserve(Vec *v, Py_ssize_t need) {
    if (need <= v->cap) return 0;
    Py_ssize_t cap = grown(v->cap, need, 4);
    int64_t *lo = PyMem_RawRealloc(v->lo, (size_t)cap * sizeof(int64_t));
    if (!lo) return -1;
    v->lo = lo;
    int64_t *hi = PyMem_RawRealloc(v->hi, (size_t)cap * sizeof(int64_t));
    if (!hi) return -1;
    v->hi = hi;
    v->cap = cap;
    return 0;
}

/* first index i with a[i] >= x */
static Py_ssize_t lower_bound(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* first index i with a[i] > x */
static Py_ssize_t upper_bound(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* heap._merge_in: add [lo, hi) to v */
static int merge_in(Vec *v, int64_t lo, int64_t hi) {
    Py_ssize_t i = lower_bound(v->hi, v->n, lo);
    Py_ssize_t j = upper_bound(v->lo, v->n, hi);
    if (i < j) {
        int64_t first = v->lo[i], last = v->hi[j - 1];
        v->lo[i] = first < lo ? first : lo;
        v->hi[i] = last > hi ? last : hi;
        Py_ssize_t tail = v->n - j;
        if (j - i > 1 && tail) {
            memmove(v->lo + i + 1, v->lo + j, (size_t)tail * sizeof(int64_t));
            memmove(v->hi + i + 1, v->hi + j, (size_t)tail * sizeof(int64_t));
        }
        v->n -= j - i - 1;
        return 0;
    }
    if (vec_reserve(v, v->n + 1) < 0) return -1;
    Py_ssize_t tail = v->n - i;
    if (tail) {
        memmove(v->lo + i + 1, v->lo + i, (size_t)tail * sizeof(int64_t));
        memmove(v->hi + i + 1, v->hi + i, (size_t)tail * sizeof(int64_t));
    }
    v->lo[i] = lo;
    v->hi[i] = hi;
    v->n += 1;
    return 0;
}

typedef struct {
    int64_t lo, hi;
} Busy;

/* A query's busy intervals: sorted runs one after another (each node's list is sorted). */
typedef struct {
    Busy *buf, *tmp;
    Py_ssize_t n, cap;
    Py_ssize_t *run;  /* where each run starts */
    Py_ssize_t runs, run_cap;
} Scratch;

typedef struct {
    Py_ssize_t size;  /* leaves: a power of two */
    Vec *stored, *below;  /* 2 * size nodes each, node 1 the root */
    Scratch scratch;
} Tree;

static Py_ssize_t tiles(const Tree *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *out) {
    Py_ssize_t n = 0, lo = start + t->size, hi = end + t->size + 1;
    while (lo < hi) {
        if (lo & 1) out[n++] = lo++;
        if (hi & 1) out[n++] = --hi;
        lo >>= 1;
        hi >>= 1;
    }
    return n;
}

static int seen_has(const Py_ssize_t *seen, Py_ssize_t n, Py_ssize_t node) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (seen[k] == node) return 1;
    return 0;
}

/* _TimeTree.add; ``seen`` holds room for every ancestor of every tile */
static int tree_add(Tree *t, Py_ssize_t start, Py_ssize_t end, int64_t lo, int64_t hi,
                    Py_ssize_t *tile, Py_ssize_t *seen) {
    Py_ssize_t nt = tiles(t, start, end, tile), ns = 0;
    for (Py_ssize_t k = 0; k < nt; k++)
        if (merge_in(&t->stored[tile[k]], lo, hi) < 0) return -1;
    for (Py_ssize_t k = 0; k < nt; k++) {
        for (Py_ssize_t node = tile[k]; node && !seen_has(seen, ns, node); node >>= 1) {
            seen[ns++] = node;
            Vec *v = &t->below[node];
            Py_ssize_t i = upper_bound(v->lo, v->n, lo) - 1;
            if (i >= 0 && v->hi[i] >= hi) break;  /* busy there already, and so above */
            if (merge_in(v, lo, hi) < 0) return -1;
        }
    }
    return 0;
}

/* a node's list, one more sorted run */
static int append(Scratch *dst, const Vec *src) {
    if (!src->n) return 0;
    Py_ssize_t need = dst->n + src->n;
    if (need > dst->cap) {
        Py_ssize_t cap = grown(dst->cap, need, 256);
        Busy *buf = PyMem_RawRealloc(dst->buf, (size_t)cap * sizeof(Busy));
        if (!buf) return -1;
        dst->buf = buf;
        Busy *tmp = PyMem_RawRealloc(dst->tmp, (size_t)cap * sizeof(Busy));
        if (!tmp) return -1;
        dst->tmp = tmp;
        dst->cap = cap;
    }
    if (dst->runs >= dst->run_cap) {
        Py_ssize_t cap = grown(dst->run_cap, dst->runs + 1, 64);
        Py_ssize_t *run = PyMem_RawRealloc(dst->run, (size_t)cap * sizeof(Py_ssize_t));
        if (!run) return -1;
        dst->run = run;
        dst->run_cap = cap;
    }
    dst->run[dst->runs++] = dst->n;
    for (Py_ssize_t k = 0; k < src->n; k++)
        dst->buf[dst->n + k] = (Busy){src->lo[k], src->hi[k]};
    dst->n = need;
    return 0;
}

/* the runs merged into one, sorted by lo: bottom-up, adjacent runs pairwise, O(n log runs) */
static void merge_runs(Scratch *b) {
    while (b->runs > 1) {
        Py_ssize_t out = 0;
        for (Py_ssize_t r = 0; r < b->runs; r += 2) {
            /* read this pair's bounds before the merged run's start overwrites run[out] */
            Py_ssize_t i = b->run[r];
            Py_ssize_t mid = r + 1 < b->runs ? b->run[r + 1] : b->n;
            Py_ssize_t end = r + 2 < b->runs ? b->run[r + 2] : b->n;
            Py_ssize_t j = mid, k = i;
            b->run[out++] = i;
            while (i < mid && j < end)
                b->tmp[k++] = b->buf[i].lo <= b->buf[j].lo ? b->buf[i++] : b->buf[j++];
            while (i < mid) b->tmp[k++] = b->buf[i++];
            while (j < end) b->tmp[k++] = b->buf[j++];
        }
        Busy *swap = b->buf;
        b->buf = b->tmp;
        b->tmp = swap;
        b->runs = out;
    }
}

/* _TimeTree.busy, into t->scratch */
static int tree_busy(Tree *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *tile,
                     Py_ssize_t *seen) {
    Py_ssize_t nt = tiles(t, start, end, tile), ns = 0;
    for (Py_ssize_t k = 0; k < nt; k++) {
        if (append(&t->scratch, &t->below[tile[k]]) < 0) return -1;
        for (Py_ssize_t node = tile[k] >> 1; node && !seen_has(seen, ns, node); node >>= 1) {
            seen[ns++] = node;
            if (append(&t->scratch, &t->stored[node]) < 0) return -1;
        }
    }
    return 0;
}

static int64_t align_up(int64_t n, int64_t alignment) {
    return alignment > 1 ? (n + alignment - 1) / alignment * alignment : n;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}


/* heap._best_fit over t->scratch: the smallest free gap that holds ``size`` (the lowest
   offset of equal ones), else the top of the heap; the busy intervals walked in offset order */
static int64_t best_fit(Tree *t, int64_t size, int64_t alignment) {
    Scratch *b = &t->scratch;
    if (!b->n) return 0;
    merge_runs(b);
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (Py_ssize_t k = 0; k < b->n; k++) {
        int64_t lo = b->buf[k].lo, hi = b->buf[k].hi;
        if (lo > cursor) {
            int64_t a = align_up(cursor, alignment);
            int64_t gap = lo - a;
            if (gap >= size && (best < 0 || gap < best_gap)) {
                best = a;
                best_gap = gap;
            }
        }
        if (hi > cursor) cursor = hi;
    }
    return best >= 0 ? best : align_up(cursor, alignment);
}

typedef struct {
    int64_t start, end;
} Range;

static int cmp_range(const void *a, const void *b) {
    const Range *x = a, *y = b;
    if (x->start != y->start) return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

/* place(ranges, sizes, alignment, give_up) -> (offsets of the buffers placed, heap), or None

   ranges: per buffer, a tuple of (start, end) schedule times (inclusive); sizes: per buffer,
   its size in bytes; both in the order of placement. As heap._place_tree, the tree's time is
   the rank among the distinct starts, and a buffer's ranges that overlap or touch in ranks are
   one. The offsets list is shorter than the buffers where the heap reached give_up first.
   None where a size is negative or the sizes, aligned and summed, reach 2**62 (offsets might
   not fit): the caller places those in Python. */
/* A heap another thread posts, read and written whole (an aligned 64-bit word). */
static int64_t posted(const int64_t *at) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(at, __ATOMIC_RELAXED);
#else
    return *(const volatile int64_t *)at;
#endif
}

static void post(int64_t *at, int64_t heap) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(at, heap, __ATOMIC_RELAXED);
#else
    *(volatile int64_t *)at = heap;
#endif
}

static PyObject *place(PyObject *self, PyObject *args) {
    PyObject *ranges_obj, *sizes_obj, *give_up_obj, *board_obj = Py_None;
    long long alignment;
    Py_ssize_t read_at = 0, write_at = 0;
    int strict = 0;
    if (!PyArg_ParseTuple(args, "O!O!LO|Onnp", &PyList_Type, &ranges_obj, &PyList_Type,
                          &sizes_obj, &alignment, &give_up_obj, &board_obj, &read_at, &write_at,
                          &strict))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(ranges_obj);
    if (PyList_GET_SIZE(sizes_obj) != n || alignment < 1) {
        PyErr_SetString(PyExc_ValueError, "place: ranges and sizes differ in length, or the "
                        "alignment is below 1");
        return NULL;
    }
    int overflow = 0;
    long long give_up = PyLong_AsLongLongAndOverflow(give_up_obj, &overflow);
    if (give_up == -1 && PyErr_Occurred()) return NULL;
    if (overflow > 0) give_up = INT64_MAX;
    /* The board, where orders placed side by side (heap.pack) post their heaps: this call
     * also gives up once its heap reaches board[read_at] (passes it, with strict), and
     * writes its heap to board[write_at] when it places every buffer. */
    Py_buffer board = {0};
    int64_t *posts = NULL;
    if (board_obj != Py_None) {
        if (PyObject_GetBuffer(board_obj, &board, PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
            return NULL;
        Py_ssize_t slots = board.len / (Py_ssize_t)sizeof(int64_t);
        if (board.itemsize != sizeof(int64_t) || !board.format || strcmp(board.format, "q") ||
            read_at < 0 || write_at < 0 || read_at >= slots || write_at >= slots) {
            PyBuffer_Release(&board);
            PyErr_SetString(PyExc_ValueError, "place: the board must be an array('q') that "
                            "holds read_at and write_at");
            return NULL;
        }
        posts = board.buf;
    }

    Tree t = {0};
    Py_ssize_t *tile = NULL, *seen = NULL, *first = NULL, *count = NULL;
    int64_t *sizes = NULL, *starts = NULL, *placed = NULL;
    Range *all = NULL;
    PyObject *offsets = NULL, *result = NULL;
    const int64_t limit = (int64_t)1 << 62;

    /* the sizes, and every range, read once */
    Py_ssize_t total = 0;
    sizes = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    first = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    count = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    if (!sizes || !first || !count) {
        PyErr_NoMemory();
        goto done;
    }
    if (alignment >= limit) {  /* no offset past 0 would fit: Python places */
        result = Py_NewRef(Py_None);
        goto done;
    }
    int64_t room = alignment;  /* the sizes aligned and summed: past every offset */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(ranges_obj, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) == 0) {
            PyErr_SetString(PyExc_TypeError, "place: each buffer's ranges must be a tuple of "
                            "(start, end) pairs, at least one");
            goto done;
        }
        first[i] = total;
        total += PyTuple_GET_SIZE(r);
        long long size = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(sizes_obj, i), &overflow);
        if (size == -1 && PyErr_Occurred()) goto done;
        if (overflow || size < 0 || size >= limit) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        sizes[i] = size;
        room += align_up(size, alignment);
        if (room >= limit) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    first[n] = total;
    all = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(Range));
    starts = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    if (!all || !starts) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(ranges_obj, i);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(r); k++) {
            PyObject *pair = PyTuple_GET_ITEM(r, k);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                PyErr_SetString(PyExc_TypeError, "place: a range must be a (start, end) pair");
                goto done;
            }
            int over_s = 0, over_e = 0;
            long long s = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(pair, 0), &over_s);
            long long e = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(pair, 1), &over_e);
            if (PyErr_Occurred()) goto done;
            if (over_s || over_e || e < s) {
                PyErr_SetString(PyExc_ValueError, "place: a range ends before it starts, or "
                                "lies outside int64");
                goto done;
            }
            all[first[i] + k] = (Range){s, e};
            starts[first[i] + k] = s;
        }
    }
    /* ranks: the distinct starts, sorted */
    qsort(starts, (size_t)total, sizeof(int64_t), cmp64);
    Py_ssize_t leaves = 0;
    for (Py_ssize_t k = 0; k < total; k++)
        if (!leaves || starts[k] != starts[leaves - 1]) starts[leaves++] = starts[k];
    /* each buffer's ranges in ranks, sorted, those that overlap or touch joined (in place) */
    for (Py_ssize_t i = 0; i < n; i++) {
        Range *r = all + first[i];
        Py_ssize_t nr = first[i + 1] - first[i], m = 0;
        for (Py_ssize_t k = 0; k < nr; k++) {
            r[k].start = lower_bound(starts, leaves, r[k].start);
            r[k].end = upper_bound(starts, leaves, r[k].end) - 1;
        }
        if (nr > 1) qsort(r, (size_t)nr, sizeof(Range), cmp_range);
        for (Py_ssize_t k = 0; k < nr; k++) {
            if (m && r[k].start <= r[m - 1].end + 1) {
                if (r[k].end > r[m - 1].end) r[m - 1].end = r[k].end;
            } else {
                r[m++] = r[k];
            }
        }
        count[i] = m;
    }

    t.size = 1;
    while (t.size < leaves + 2) t.size *= 2;
    t.stored = PyMem_RawCalloc((size_t)(2 * t.size), sizeof(Vec));
    t.below = PyMem_RawCalloc((size_t)(2 * t.size), sizeof(Vec));
    /* at most two tiles per level, and every ancestor of each */
    Py_ssize_t depth = 2;
    for (Py_ssize_t s = t.size; s > 1; s >>= 1) depth++;
    tile = PyMem_Malloc((size_t)(2 * depth) * sizeof(Py_ssize_t));
    seen = PyMem_Malloc((size_t)(2 * depth * depth) * sizeof(Py_ssize_t));
    placed = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!placed || !t.stored || !t.below || !tile || !seen) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    /* The placement itself touches no Python object and allocates with the raw allocator:
     * other threads run meanwhile (heap.pack places its orders side by side). */
    int64_t heap = 0;
    Py_ssize_t done_n = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = 0;
    for (; i < n && !failed; i++) {
        if (heap >= give_up) break;
        if (posts && heap >= posted(posts + read_at) + strict) break;
        const Range *r = all + first[i];
        int64_t size = sizes[i];
        t.scratch.n = t.scratch.runs = 0;
        for (Py_ssize_t k = 0; k < count[i] && !failed; k++)
            if (tree_busy(&t, (Py_ssize_t)r[k].start, (Py_ssize_t)r[k].end, tile, seen) < 0)
                failed = 1;
        if (failed) break;
        int64_t offset = best_fit(&t, size, (int64_t)alignment);
        placed[done_n++] = offset;
        if (size)  /* an empty buffer takes no room, and splits no gap */
            for (Py_ssize_t k = 0; k < count[i] && !failed; k++)
                if (tree_add(&t, (Py_ssize_t)r[k].start, (Py_ssize_t)r[k].end, offset,
                             offset + size, tile, seen) < 0)
                    failed = 1;
        if (offset + size > heap) heap = offset + size;
    }
    if (posts && i == n && !failed) post(posts + write_at, heap);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    offsets = PyList_New(done_n);
    if (!offsets) goto done;
    for (Py_ssize_t i = 0; i < done_n; i++) {
        PyObject *o = PyLong_FromLongLong(placed[i]);
        if (!o) goto done;
        PyList_SET_ITEM(offsets, i, o);
    }
    result = Py_BuildValue("OL", offsets, (long long)heap);
done:
    Py_XDECREF(offsets);
    for (Py_ssize_t k = 0; k < 2 * t.size; k++) {
        if (t.stored) {
            PyMem_RawFree(t.stored[k].lo);
            PyMem_RawFree(t.stored[k].hi);
        }
        if (t.below) {
            PyMem_RawFree(t.below[k].lo);
            PyMem_RawFree(t.below[k].hi);
        }
    }
    PyMem_RawFree(t.stored);
    PyMem_RawFree(t.below);
    PyMem_RawFree(t.scratch.buf);
    PyMem_RawFree(t.scratch.tmp);
    PyMem_RawFree(t.scratch.run);
    PyMem_Free(tile);
    PyMem_Free(seen);
    PyMem_Free(sizes);
    PyMem_Free(first);
    PyMem_Free(count);
    PyMem_Free(all);
    PyMem_Free(starts);
    PyMem_Free(placed);
    if (posts) PyBuffer_Release(&board);
    return result;
}

/* ---- OutputTable: liveness._OutputTable in C ----------------------------------------------
 *
 * The output allocations (an output's or a donated parameter's) that temporaries may move
 * into, and the search for the first that takes a group of values (liveness._assign; the
 * Python class is the reference). Each allocation keeps its members sorted by start (ties in
 * the order added) as arrays. A candidate is any allocation from `first` on that is not an
 * index table, and that has no member strictly covering the 64-step bucket of the value's
 * start or end ("covered", a bitset over allocations per bucket), nor strictly overlapping
 * one of two members it started with (the longest-lived and the last to end): each such
 * member overlaps the value at a step that is neither end, where no handoff helps. The full
 * test is _Slot.conflicts', calling the given handoff(earlier, later) where two values
 * touch. Any candidate the filters drop would fail that test, so the first allocation found
 * is the reference's. */

#define BUCKET 64

typedef struct {
    Py_ssize_t n, cap;
    int64_t *start, *end;
    PyObject **member;
    int disjoint, table;
    uint64_t *occupied;           /* bit b: a member occupies a step of bucket b */
    int nkeep;
    int64_t keep_start[2], keep_end[2];
} OSlot;

typedef struct {
    PyObject_HEAD
    Py_ssize_t nslots, words, nbuckets, bwords;
    int64_t steps;                /* no value ends after this step */
    OSlot *slots;
    uint64_t *covered;            /* nbuckets rows of `words` words */
    uint64_t *candidates;         /* the allocations that are not index tables */
} OutputTable;


/* A Value's fields read from their slots (liveness.Value, a dataclass with slots: the offsets
 * found once by bind_value, through the class's member descriptors); any other object, or
 * before bind_value, by name. */
enum { V_ID, V_INSTRUCTION, V_COMPUTATION, V_INDEX, V_START, V_END, V_SIZE, V_IS_TABLE,
       V_OP_NAME, V_SOURCE, V_MEMORY_SPACE, V_COUNT };
static const char *value_field_texts[V_COUNT] = {"id", "instruction", "computation", "index",
                                                 "start", "end", "size", "is_table",
                                                 "op_name", "source", "memory_space"};
static PyObject *value_field_names[V_COUNT];
static PyTypeObject *value_type = NULL;
static Py_ssize_t value_offsets[V_COUNT];

/* Field k of v, a new reference. */
static PyObject *vfield(PyObject *v, int k) {
    if (value_type && Py_IS_TYPE(v, value_type)) {
        PyObject *x = *(PyObject **)((char *)v + value_offsets[k]);
        if (x) return Py_NewRef(x);
    }
    return PyObject_GetAttr(v, value_field_names[k]);
}

/* bind_value(Value): read Values' slots directly from now on (each of value_field_texts must
 * be an object slot of the class itself, else TypeError and reads stay by name). */
static PyObject *bind_value(PyObject *self, PyObject *type) {
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "bind_value(Value): a class");
        return NULL;
    }
    Py_ssize_t offsets[V_COUNT];
    for (int k = 0; k < V_COUNT; k++) {
        PyObject *d = PyObject_GetAttr(type, value_field_names[k]);
        if (!d) return NULL;
        int plain = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
            ((PyMemberDescrObject *)d)->d_common.d_type == (PyTypeObject *)type;
        PyMemberDef *m = plain ? ((PyMemberDescrObject *)d)->d_member : NULL;
        Py_DECREF(d);
        if (!m || m->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "field %R is not an object slot", value_field_names[k]);
            return NULL;
        }
        offsets[k] = m->offset;
    }
    memcpy(value_offsets, offsets, sizeof offsets);
    Py_XSETREF(value_type, (PyTypeObject *)Py_NewRef(type));
    Py_RETURN_NONE;
}

static int value_range(PyObject *v, int64_t *start, int64_t *end) {
    PyObject *s = vfield(v, V_START);
    if (!s) return -1;
    *start = PyLong_AsLongLong(s);
    Py_DECREF(s);
    if (*start == -1 && PyErr_Occurred()) return -1;
    PyObject *e = vfield(v, V_END);
    if (!e) return -1;
    *end = PyLong_AsLongLong(e);
    Py_DECREF(e);
    if (*end == -1 && PyErr_Occurred()) return -1;
    if (*start < 0 || *end < *start) {
        PyErr_SetString(PyExc_ValueError, "a value's range must be 0 <= start <= end");
        return -1;
    }
    return 0;
}

static Py_ssize_t bucket_of(const OutputTable *t, int64_t step) {
    return (Py_ssize_t)(step / BUCKET);  /* step <= t->steps (checked_range): a bucket */
}

/* value_range, and the value must end by the table's last step */
static int checked_range(const OutputTable *t, PyObject *v, int64_t *start, int64_t *end) {
    if (value_range(v, start, end) < 0) return -1;
    if (*end > t->steps) {
        PyErr_SetString(PyExc_ValueError, "a value ends after the table's last step");
        return -1;
    }
    return 0;
}

static int oslot_add(OutputTable *t, OSlot *s, PyObject *v, int64_t vs, int64_t ve) {
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap ? 2 * s->cap : 4;
        int64_t *start = PyMem_Realloc(s->start, cap * sizeof(int64_t));
        if (!start) { PyErr_NoMemory(); return -1; }
        s->start = start;
        int64_t *end = PyMem_Realloc(s->end, cap * sizeof(int64_t));
        if (!end) { PyErr_NoMemory(); return -1; }
        s->end = end;
        PyObject **member = PyMem_Realloc(s->member, cap * sizeof(PyObject *));
        if (!member) { PyErr_NoMemory(); return -1; }
        s->member = member;
        s->cap = cap;
    }
    for (Py_ssize_t b = bucket_of(t, vs), last = bucket_of(t, ve); b <= last; b++)
        s->occupied[b / 64] |= (uint64_t)1 << (b % 64);
    Py_ssize_t k = upper_bound(s->start, s->n, vs);
    if (s->disjoint && ((k > 0 && s->end[k - 1] > vs) || (k < s->n && s->start[k] < ve)))
        s->disjoint = 0;  /* e.g. a loop's state values, which overlap by design */
    memmove(s->start + k + 1, s->start + k, (s->n - k) * sizeof(int64_t));
    memmove(s->end + k + 1, s->end + k, (s->n - k) * sizeof(int64_t));
    memmove(s->member + k + 1, s->member + k, (s->n - k) * sizeof(PyObject *));
    s->start[k] = vs;
    s->end[k] = ve;
    s->member[k] = Py_NewRef(v);
    s->n++;
    return 0;
}

/* Mark the buckets a member of allocation k covers strictly inside its range. */
static void cover(OutputTable *t, Py_ssize_t k, int64_t vs, int64_t ve) {
    int64_t lo = vs / BUCKET + 1, hi = ve >= BUCKET ? (ve - BUCKET) / BUCKET : -1;
    if (hi >= t->nbuckets) hi = t->nbuckets - 1;
    uint64_t bit = (uint64_t)1 << (k % 64);
    for (int64_t b = lo; b <= hi; b++) t->covered[b * t->words + k / 64] |= bit;
}

/* 1 if the value (v, over [vs, ve]) conflicts with a member of s, 0 if not, -1 on error. */
static int oslot_conflicts(OSlot *s, PyObject *v, int64_t vs, int64_t ve, PyObject *handoff) {
    Py_ssize_t k = upper_bound(s->start, s->n, ve);
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t j = s->disjoint ? k - 1 - i : i;
        if (s->end[j] < vs) {
            if (s->disjoint) return 0;  /* ends are sorted too: none before it reaches v */
            continue;
        }
        int r = 0;
        if (s->end[j] == vs) {
            PyObject *got = PyObject_CallFunctionObjArgs(handoff, s->member[j], v, NULL);
            if (!got) return -1;
            r = PyObject_IsTrue(got);
            Py_DECREF(got);
            if (r < 0) return -1;
        }
        if (!r && ve == s->start[j]) {
            PyObject *got = PyObject_CallFunctionObjArgs(handoff, v, s->member[j], NULL);
            if (!got) return -1;
            r = PyObject_IsTrue(got);
            Py_DECREF(got);
            if (r < 0) return -1;
        }
        if (!r) return 1;
    }
    return 0;
}

/* Any bucket of [lo, hi] occupied in s? */
static int occupied_in(const OutputTable *t, const OSlot *s, int64_t lo, int64_t hi) {
    if (hi >= t->nbuckets) hi = t->nbuckets - 1;
    for (int64_t b = lo; b <= hi; b++) {
        if ((b % 64) == 0 && b + 63 <= hi) {
            if (s->occupied[b / 64]) return 1;
            b += 63;
            continue;
        }
        if (s->occupied[b / 64] & ((uint64_t)1 << (b % 64))) return 1;
    }
    return 0;
}

static void output_table_dealloc(OutputTable *t) {
    if (t->slots) {
        for (Py_ssize_t k = 0; k < t->nslots; k++) {
            OSlot *s = &t->slots[k];
            for (Py_ssize_t j = 0; j < s->n; j++) Py_DECREF(s->member[j]);
            PyMem_Free(s->start);
            PyMem_Free(s->end);
            PyMem_Free(s->member);
            PyMem_Free(s->occupied);
        }
        PyMem_Free(t->slots);
    }
    PyMem_Free(t->covered);
    PyMem_Free(t->candidates);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int table_slot(OutputTable *t, Py_ssize_t k) {
    if (k < 0 || k >= t->nslots) {
        PyErr_SetString(PyExc_IndexError, "no such allocation");
        return -1;
    }
    return 0;
}

static int add_members(OutputTable *t, Py_ssize_t k, PyObject *members) {
    PyObject *seq = PySequence_Fast(members, "members must be a sequence");
    if (!seq) return -1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        PyObject *v = PySequence_Fast_GET_ITEM(seq, j);
        int64_t vs, ve;
        if (checked_range(t, v, &vs, &ve) < 0 || oslot_add(t, &t->slots[k], v, vs, ve) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        cover(t, k, vs, ve);
    }
    Py_DECREF(seq);
    return 0;
}

/* OutputTable(members, tables, steps): members[k], allocation k's values sorted by start;
 * tables[k], whether it is an index table; steps, the last step a value may end at. */
static PyObject *output_table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *members, *tables;
    Py_ssize_t steps;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyList_Type, &members, &PyList_Type, &tables, &steps))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(members);
    if (PyList_GET_SIZE(tables) != n || steps < 0) {
        PyErr_SetString(PyExc_ValueError, "one table flag per allocation, and steps >= 0");
        return NULL;
    }
    OutputTable *t = (OutputTable *)type->tp_alloc(type, 0);
    if (!t) return NULL;
    t->nslots = n;
    t->steps = steps;
    t->words = n / 64 + 1;
    t->nbuckets = steps / BUCKET + 2;
    t->bwords = t->nbuckets / 64 + 1;
    t->slots = PyMem_Calloc(n ? n : 1, sizeof(OSlot));
    t->covered = PyMem_Calloc(t->nbuckets * t->words, sizeof(uint64_t));
    t->candidates = PyMem_Calloc(t->words, sizeof(uint64_t));
    if (!t->slots || !t->covered || !t->candidates) goto fail_memory;
    for (Py_ssize_t k = 0; k < n; k++) {
        OSlot *s = &t->slots[k];
        s->disjoint = 1;
        s->occupied = PyMem_Calloc(t->bwords, sizeof(uint64_t));
        if (!s->occupied) goto fail_memory;
        int table = PyObject_IsTrue(PyList_GET_ITEM(tables, k));
        if (table < 0) goto fail;
        s->table = table;
        if (!table) t->candidates[k / 64] |= (uint64_t)1 << (k % 64);
        if (add_members(t, k, PyList_GET_ITEM(members, k)) < 0) goto fail;
        /* the longest-lived member (the earliest of equal ones) and the last to end */
        Py_ssize_t longest = -1, last = -1;
        for (Py_ssize_t j = 0; j < s->n; j++) {
            if (longest < 0 || s->end[j] - s->start[j] > s->end[longest] - s->start[longest])
                longest = j;
            if (last < 0 || s->end[j] > s->end[last] ||
                    (s->end[j] == s->end[last] && s->start[j] > s->start[last]))
                last = j;
        }
        if (longest >= 0) {
            s->keep_start[0] = s->start[longest];
            s->keep_end[0] = s->end[longest];
            s->keep_start[1] = s->start[last];
            s->keep_end[1] = s->end[last];
            s->nkeep = 2;
        }
    }
    return (PyObject *)t;
fail_memory:
    PyErr_NoMemory();
fail:
    Py_DECREF(t);
    return NULL;
}

/* The first allocation from `first` on that takes the group `members` (ms, me: their
 * ranges; members[0] its first value), -1 where none does, -2 with an exception set. */
static Py_ssize_t find_in(OutputTable *t, Py_ssize_t first, PyObject *members,
                          const int64_t *ms, const int64_t *me, PyObject *handoff) {
    Py_ssize_t m = PyList_GET_SIZE(members);
    if (m == 0 || first >= t->nslots) return -1;
    if (first < 0) first = 0;
    int64_t vs = ms[0], ve = me[0];
    const uint64_t *row_s = t->covered + bucket_of(t, vs) * t->words;
    const uint64_t *row_e = t->covered + bucket_of(t, ve) * t->words;
    /* the buckets wholly inside (vs, ve) */
    int64_t inside_lo = (vs + BUCKET) / BUCKET, inside_hi = ve / BUCKET - 1;
    for (Py_ssize_t w = first / 64; w < t->words; w++) {
        uint64_t bits = t->candidates[w] & ~(row_s[w] | row_e[w]);
        if (w == first / 64) bits &= ~(uint64_t)0 << (first % 64);
        while (bits) {
            Py_ssize_t k = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            OSlot *s = &t->slots[k];
            int overlaps = 0;
            for (int i = 0; i < s->nkeep; i++)
                if (s->keep_start[i] < ve && s->keep_end[i] > vs) overlaps = 1;
            if (overlaps) continue;
            if (m == 1 && inside_lo <= inside_hi && occupied_in(t, s, inside_lo, inside_hi))
                continue;  /* a member occupies a bucket inside v's range */
            int conflict = 0;
            for (Py_ssize_t j = 0; j < m && !conflict; j++) {
                conflict = oslot_conflicts(s, PyList_GET_ITEM(members, j), ms[j], me[j], handoff);
                if (conflict < 0) return -2;
            }
            if (!conflict) return k;
        }
    }
    return -1;
}

/* The members' ranges into *ms, *me (the stack arrays where they fit, else allocated); 0, or
 * -1 with an exception set (and nothing to free). */
static int member_ranges(OutputTable *t, PyObject *members, int64_t *stack_s, int64_t *stack_e,
                         int64_t **ms, int64_t **me) {
    Py_ssize_t m = PyList_GET_SIZE(members);
    *ms = m <= 8 ? stack_s : PyMem_Malloc(m * sizeof(int64_t));
    *me = m <= 8 ? stack_e : PyMem_Malloc(m * sizeof(int64_t));
    int error = !*ms || !*me;
    if (error) PyErr_NoMemory();
    for (Py_ssize_t j = 0; !error && j < m; j++)
        error = checked_range(t, PyList_GET_ITEM(members, j), &(*ms)[j], &(*me)[j]) < 0;
    if (error) {
        if (*ms != stack_s) PyMem_Free(*ms);
        if (*me != stack_e) PyMem_Free(*me);
        return -1;
    }
    return 0;
}

static void free_ranges(int64_t *ms, int64_t *me, int64_t *stack_s, int64_t *stack_e) {
    if (ms != stack_s) PyMem_Free(ms);
    if (me != stack_e) PyMem_Free(me);
}

/* find(first, members, handoff) -> the first allocation from `first` on that takes the
 * group `members` (members[0] its first value), or -1. */
static PyObject *output_table_find(OutputTable *t, PyObject *args) {
    Py_ssize_t first;
    PyObject *members, *handoff;
    if (!PyArg_ParseTuple(args, "nO!O", &first, &PyList_Type, &members, &handoff)) return NULL;
    if (PyList_GET_SIZE(members) == 0 || first >= t->nslots) return PyLong_FromSsize_t(-1);
    int64_t stack_s[8], stack_e[8], *ms, *me;
    if (member_ranges(t, members, stack_s, stack_e, &ms, &me) < 0) return NULL;
    Py_ssize_t found = find_in(t, first, members, ms, me, handoff);
    free_ranges(ms, me, stack_s, stack_e);
    return found < -1 ? NULL : PyLong_FromSsize_t(found);
}

/* ---- place_temps: liveness._assign's loop over the temporaries, in C ---------------------
 * Each group of temporaries, largest first, moves into an output allocation if one takes it:
 * first the allocation of an operand of its first value's instruction that dies where that
 * value is defined, if the value may take it over (BufferAssigner's first try: the
 * reference is _assign's operand_share), else the first allocation from the smallest that
 * fits on (find). The Python rules stay in Python: handoff(earlier, later), and dying(v, op,
 * u, True) for an operand read through an element of a multi-output fusion. */
static PyObject *operands_name = NULL, *shape_name = NULL, *empty_tuple = NULL;

/* Value field k of v equals (as a str) that of u? 1, 0, or -1 */
static int same_field(PyObject *v, PyObject *u, int k) {
    PyObject *a = vfield(v, k);
    if (!a) return -1;
    PyObject *b = vfield(u, k);
    if (!b) { Py_DECREF(a); return -1; }
    int same = a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
    Py_DECREF(a);
    Py_DECREF(b);
    return same;
}

/* Does operand name `op` read the value u as its defining instruction itself (u is that
 * instruction's value at index (), not an element of it)? 1, 0, or -1. */
static int reads_itself(PyObject *u, PyObject *op) {
    PyObject *uinstr = vfield(u, V_INSTRUCTION);
    PyObject *uindex = uinstr ? vfield(u, V_INDEX) : NULL;
    int direct = -1;
    if (uindex) {
        direct = uinstr == op ? 1 : PyObject_RichCompareBool(uinstr, op, Py_EQ);
        if (direct == 1) direct = PyTuple_Check(uindex) && PyTuple_GET_SIZE(uindex) == 0;
    }
    Py_XDECREF(uinstr);
    Py_XDECREF(uindex);
    return direct;
}

typedef struct {
    PyObject *values, *group_of, *instr_at, *trees, *handoff, *dying;
    Py_ssize_t *alloc;        /* per group root: its output allocation, or -1 */
    Py_ssize_t nalloc;
    int64_t *out_size;        /* per allocation */
} Temps;

static PyObject *call_truthy(PyObject *f, PyObject *a, PyObject *b, int *r) {
    PyObject *got = PyObject_CallFunctionObjArgs(f, a, b, NULL);
    if (!got) return NULL;
    *r = PyObject_IsTrue(got);
    Py_DECREF(got);
    return *r < 0 ? NULL : Py_None;
}

/* dict[key] (borrowed), or NULL with KeyError(key) where it has none (or another error) */
static PyObject *must_get(PyObject *dict, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(dict, key);
    if (!got && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, key);
    return got;
}

/* The instruction that defines value v (borrowed), with v's computation in *comp (a new
 * reference, NULL where it could not be read); NULL with an exception set. instr_at is either
 * the builder's dict, (computation, name) -> instruction, or a list of each value's
 * instruction by value id (liveness's def_instrs: no key to make, no dict to search). */
static PyObject *defining_instr(PyObject *instr_at, PyObject *v, PyObject **comp) {
    *comp = vfield(v, V_COMPUTATION);
    if (!*comp) return NULL;
    if (PyList_Check(instr_at)) {
        PyObject *id = vfield(v, V_ID);
        Py_ssize_t k = id ? PyLong_AsSsize_t(id) : -1;
        Py_XDECREF(id);
        if (k == -1 && PyErr_Occurred()) return NULL;
        if (k < 0 || k >= PyList_GET_SIZE(instr_at)) {
            PyErr_SetString(PyExc_IndexError, "a value id past the instructions by value");
            return NULL;
        }
        return PyList_GET_ITEM(instr_at, k);
    }
    PyObject *iname = vfield(v, V_INSTRUCTION);
    PyObject *key = iname ? PyTuple_Pack(2, *comp, iname) : NULL;
    PyObject *instr = key ? must_get(instr_at, key) : NULL;
    Py_XDECREF(iname);
    Py_XDECREF(key);
    return instr;
}

/* instr_at as defining_instr takes it: a dict or a list; 0, or -1 with TypeError */
static int instr_lookup(PyObject *instr_at) {
    if (PyDict_Check(instr_at) || PyList_Check(instr_at)) return 0;
    PyErr_SetString(PyExc_TypeError, "instr_at: a dict by (computation, name) or a list by "
                    "value id");
    return -1;
}

/* operand_share: the allocation, -1 where none, -2 with an exception set. */
static Py_ssize_t operand_share(OutputTable *t, Temps *c, PyObject *members, const int64_t *ms,
                                const int64_t *me, int64_t size) {
    PyObject *v = PyList_GET_ITEM(members, 0), *comp = NULL, *operands = NULL, *seq = NULL;
    Py_ssize_t found = -2, m = PyList_GET_SIZE(members);
    int64_t vs = ms[0];
    PyObject *instr = defining_instr(c->instr_at, v, &comp);
    if (!instr) goto done;
    operands = PyObject_GetAttr(instr, operands_name);
    seq = operands ? PySequence_Fast(operands, "operands must be a sequence") : NULL;
    if (!seq) goto done;
    found = -1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq) && found == -1; j++) {
        PyObject *op = PySequence_Fast_GET_ITEM(seq, j);
        PyObject *tk = PyTuple_Pack(2, comp, op);
        if (!tk) { found = -2; break; }
        PyObject *tree = PyDict_GetItemWithError(c->trees, tk);
        Py_DECREF(tk);
        if (!tree) { if (PyErr_Occurred()) found = -2; continue; }
        PyObject *uid_obj = PyDict_GetItemWithError(tree, empty_tuple);
        if (!uid_obj) { if (PyErr_Occurred()) found = -2; continue; }
        Py_ssize_t uid = PyLong_AsSsize_t(uid_obj);
        if (uid == -1 && PyErr_Occurred()) { found = -2; break; }
        if (uid < 0 || uid >= PyTuple_GET_SIZE(c->values) ||
                uid >= PyList_GET_SIZE(c->group_of)) {
            PyErr_SetString(PyExc_IndexError, "a value id out of range");
            found = -2;
            break;
        }
        PyObject *u = PyTuple_GET_ITEM(c->values, uid);
        int64_t us, ue;
        if (value_range(u, &us, &ue) < 0) { found = -2; break; }
        if (ue != vs) continue;
        Py_ssize_t g = PyLong_AsSsize_t(PyList_GET_ITEM(c->group_of, uid));
        if (g == -1 && PyErr_Occurred()) { found = -2; break; }
        Py_ssize_t k = g >= 0 && g < c->nalloc ? c->alloc[g] : -1;
        if (k < 0 || c->out_size[k] < size) continue;
        /* _dying(v, op, u, True): u in v's computation, read as itself or as an element */
        int same = same_field(v, u, V_COMPUTATION);
        if (same < 0) { found = -2; break; }
        if (!same) continue;
        int direct = reads_itself(u, op);
        if (direct < 0) { found = -2; break; }
        if (!direct) {
            PyObject *got = PyObject_CallFunctionObjArgs(c->dying, v, op, u, Py_True, NULL);
            if (!got) { found = -2; break; }
            int none = got == Py_None;
            Py_DECREF(got);
            if (none) continue;
        }
        int ok;
        if (!call_truthy(c->handoff, u, v, &ok)) { found = -2; break; }
        if (!ok) continue;
        int conflict = 0;
        for (Py_ssize_t i = 0; i < m && !conflict; i++)
            conflict = oslot_conflicts(&t->slots[k], PyList_GET_ITEM(members, i), ms[i], me[i],
                                       c->handoff);
        if (conflict < 0) { found = -2; break; }
        if (!conflict) found = k;
    }
done:
    Py_XDECREF(comp);
    Py_XDECREF(operands);
    Py_XDECREF(seq);
    return found;
}

static int64_t as_int64(PyObject *o, int *error) {
    int64_t x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred()) *error = 1;
    return x;
}

/* place_temps(groups, roots, sizes, output_sizes, output_groups, values, group_of, instr_at,
 * trees, handoff, dying, temps_in_outputs) -> per group, the allocation it went into, or -1.
 * groups[i]: a group's values sorted by start, roots[i] its root (a value id), sizes[i] its
 * size, in the order they are tried; output_sizes[k]: allocation k's size (ascending, as
 * the allocations are tried), output_groups[k]: the group it was made for; values: every
 * value by id, group_of: each value's group root; instr_at: (computation, name) ->
 * Instruction, or each value's instruction by id (defining_instr); trees: (computation,
 * name) -> {index: value id}. A group that goes into an allocation is added to it. */
static PyObject *output_table_place_temps(OutputTable *t, PyObject *args) {
    PyObject *groups, *roots, *sizes, *output_sizes, *output_groups;
    Temps c = {0};
    int temps_in_outputs;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!OO!OOp", &PyList_Type, &groups, &PyList_Type,
                          &roots, &PyList_Type, &sizes, &PyList_Type, &output_sizes,
                          &PyList_Type, &output_groups, &PyTuple_Type, &c.values, &PyList_Type,
                          &c.group_of, &c.instr_at, &PyDict_Type, &c.trees,
                          &c.handoff, &c.dying, &temps_in_outputs) || instr_lookup(c.instr_at) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(groups);
    if (PyList_GET_SIZE(roots) != n || PyList_GET_SIZE(sizes) != n ||
            PyList_GET_SIZE(output_sizes) != t->nslots ||
            PyList_GET_SIZE(output_groups) != t->nslots) {
        PyErr_SetString(PyExc_ValueError, "one root and size per group, one size and group per "
                        "allocation");
        return NULL;
    }
    PyObject *result = NULL;
    uint8_t *ends = PyMem_Calloc((size_t)t->steps + 1, 1);  /* an allocation's member ends */
    c.nalloc = PyList_GET_SIZE(c.group_of);
    c.alloc = PyMem_Malloc((c.nalloc ? c.nalloc : 1) * sizeof(Py_ssize_t));
    c.out_size = PyMem_Malloc((t->nslots ? t->nslots : 1) * sizeof(int64_t));
    PyObject *placed = PyList_New(n);
    if (!ends || !c.alloc || !c.out_size) { PyErr_NoMemory(); goto done; }
    if (!placed) goto done;
    int error = 0;
    for (Py_ssize_t g = 0; g < c.nalloc; g++) c.alloc[g] = -1;
    for (Py_ssize_t k = 0; k < t->nslots && !error; k++) {
        c.out_size[k] = as_int64(PyList_GET_ITEM(output_sizes, k), &error);
        Py_ssize_t g = (Py_ssize_t)as_int64(PyList_GET_ITEM(output_groups, k), &error);
        if (!error && g >= 0 && g < c.nalloc) c.alloc[g] = k;
        OSlot *s = &t->slots[k];
        for (Py_ssize_t j = 0; j < s->n; j++) ends[s->end[j]] = 1;
    }
    if (error) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *members = PyList_GET_ITEM(groups, i);
        if (!PyList_Check(members) || !PyList_GET_SIZE(members)) {
            PyErr_SetString(PyExc_TypeError, "each group is a non-empty list of values");
            goto done;
        }
        int64_t size = as_int64(PyList_GET_ITEM(sizes, i), &error);
        Py_ssize_t root = (Py_ssize_t)as_int64(PyList_GET_ITEM(roots, i), &error);
        if (error) goto done;
        int64_t stack_s[8], stack_e[8], *ms, *me;
        if (member_ranges(t, members, stack_s, stack_e, &ms, &me) < 0) goto done;
        Py_ssize_t k = ends[ms[0]] ? operand_share(t, &c, members, ms, me, size) : -1;
        if (k == -1 && temps_in_outputs) {
            Py_ssize_t first = lower_bound(c.out_size, t->nslots, size);
            k = find_in(t, first, members, ms, me, c.handoff);
        }
        if (k >= 0) {
            OSlot *s = &t->slots[k];
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(members) && k >= 0; j++) {
                if (oslot_add(t, s, PyList_GET_ITEM(members, j), ms[j], me[j]) < 0) {
                    k = -2;
                    break;
                }
                cover(t, k, ms[j], me[j]);
                ends[me[j]] = 1;
            }
            if (k >= 0 && root >= 0 && root < c.nalloc) c.alloc[root] = k;
        }
        free_ranges(ms, me, stack_s, stack_e);
        if (k < -1) goto done;
        PyList_SET_ITEM(placed, i, PyLong_FromSsize_t(k));
        if (!PyList_GET_ITEM(placed, i)) goto done;
    }
    result = Py_NewRef(placed);
done:
    Py_XDECREF(placed);
    PyMem_Free(ends);
    PyMem_Free(c.alloc);
    PyMem_Free(c.out_size);
    return result;
}

static PyObject *output_table_add(OutputTable *t, PyObject *args) {
    Py_ssize_t k;
    PyObject *members;
    if (!PyArg_ParseTuple(args, "nO", &k, &members) || table_slot(t, k) < 0) return NULL;
    if (add_members(t, k, members) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *output_table_conflicts(OutputTable *t, PyObject *args) {
    Py_ssize_t k;
    PyObject *v, *handoff;
    if (!PyArg_ParseTuple(args, "nOO", &k, &v, &handoff) || table_slot(t, k) < 0) return NULL;
    int64_t vs, ve;
    if (checked_range(t, v, &vs, &ve) < 0) return NULL;
    int r = oslot_conflicts(&t->slots[k], v, vs, ve, handoff);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyObject *output_table_members(OutputTable *t, PyObject *args) {
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "n", &k) || table_slot(t, k) < 0) return NULL;
    OSlot *s = &t->slots[k];
    PyObject *out = PyList_New(s->n);
    if (!out) return NULL;
    for (Py_ssize_t j = 0; j < s->n; j++) PyList_SET_ITEM(out, j, Py_NewRef(s->member[j]));
    return Py_BuildValue("NO", out, s->disjoint ? Py_True : Py_False);
}

static PyMethodDef output_table_methods[] = {
    {"find", (PyCFunction)output_table_find, METH_VARARGS,
     "find(first, members, handoff) -> the first allocation from first on that takes the "
     "group, or -1."},
    {"place_temps", (PyCFunction)output_table_place_temps, METH_VARARGS,
     "place_temps(groups, roots, sizes, output_sizes, output_groups, values, group_of, "
     "instr_at, trees, handoff, dying, temps_in_outputs) -> per group, the allocation it "
     "went into or -1: liveness._assign's loop over the temporaries."},
    {"add", (PyCFunction)output_table_add, METH_VARARGS,
     "add(k, members): the group's values go into allocation k."},
    {"conflicts", (PyCFunction)output_table_conflicts, METH_VARARGS,
     "conflicts(k, value, handoff) -> does value overlap a member of allocation k?"},
    {"members", (PyCFunction)output_table_members, METH_VARARGS,
     "members(k) -> (allocation k's values sorted by start, whether they are disjoint)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OutputTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hloscope.analysis._heaptree.OutputTable",
    .tp_basicsize = sizeof(OutputTable),
    .tp_dealloc = (destructor)output_table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "liveness._OutputTable in C: output allocations that temporaries may move into.",
    .tp_methods = output_table_methods,
    .tp_new = output_table_new,
};

/* ---- make_values: analyze's loop that makes the Values, in C -------------------------------
 * make_values(defs, uses, live_out, aliased, entry_name, end, new_value, source_of,
 * facts_of) -> the Values, by id: what analyze's Python loop (the reference, _make_values)
 * makes from the builder's definitions (computation, instruction, index, shape, start) and
 * last uses. An entry parameter's value starts at 0 and (unless donated: in aliased) lives
 * to the end, as does a live-out value. source_of(instr) and facts_of(shape) are asked once
 * per metadata object and per shape object: (text, logical, padded, size, memory space,
 * is_table). */
static PyObject *parameter_name = NULL, *opcode_name = NULL, *metadata_name = NULL,
                *op_name_name = NULL, *name_name = NULL, *empty_str = NULL;

/* memo[address of key] or fn(arg) stored there; a new reference. */
static PyObject *memo_call(PyObject *memo, PyObject *key, PyObject *fn, PyObject *arg) {
    PyObject *address = PyLong_FromVoidPtr(key);
    if (!address) return NULL;
    PyObject *got = PyDict_GetItemWithError(memo, address);
    if (got) {
        Py_DECREF(address);
        return Py_NewRef(got);
    }
    if (PyErr_Occurred() || !(got = PyObject_CallOneArg(fn, arg))) {
        Py_DECREF(address);
        return NULL;
    }
    int stored = PyDict_SetItem(memo, address, got);
    Py_DECREF(address);
    if (stored < 0) { Py_DECREF(got); return NULL; }
    return got;
}

static PyObject *make_values(PyObject *self, PyObject *args) {
    PyObject *defs, *uses, *live_out, *aliased, *entry_name, *new_value, *source_of, *facts_of;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "O!O!O!O!UnOOO", &PyList_Type, &defs, &PyList_Type, &uses,
                          &PySet_Type, &live_out, &PySet_Type, &aliased, &entry_name, &end,
                          &new_value, &source_of, &facts_of))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(defs);
    if (PyList_GET_SIZE(uses) != n) {
        PyErr_SetString(PyExc_ValueError, "one last use per definition");
        return NULL;
    }
    PyObject *out = PyList_New(n), *sources = PyDict_New(), *facts = PyDict_New();
    PyObject *result = NULL;
    if (!out || !sources || !facts) goto done;
    for (Py_ssize_t vid = 0; vid < n; vid++) {
        PyObject *d = PyList_GET_ITEM(defs, vid);
        if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 5) {
            PyErr_SetString(PyExc_TypeError, "a definition is (computation, instruction, "
                            "index, shape, start)");
            goto done;
        }
        PyObject *comp = PyTuple_GET_ITEM(d, 0), *instr = PyTuple_GET_ITEM(d, 1),
                 *index = PyTuple_GET_ITEM(d, 2), *shape = PyTuple_GET_ITEM(d, 3);
        PyObject *start = Py_NewRef(PyTuple_GET_ITEM(d, 4));
        PyObject *last = Py_NewRef(PyList_GET_ITEM(uses, vid));
        PyObject *id = PyLong_FromSsize_t(vid), *end_obj = NULL, *opcode = NULL, *md = NULL,
                 *name = NULL, *source = NULL, *fact = NULL, *op_name = NULL, *made = NULL;
        if (!id) goto fail;
        opcode = PyObject_GetAttr(instr, opcode_name);
        if (!opcode) goto fail;
        int entry_parameter = PyUnicode_Check(opcode) &&
            PyUnicode_Compare(opcode, parameter_name) == 0 &&
            PyUnicode_Check(comp) && PyUnicode_Compare(comp, entry_name) == 0;
        int out_of_program = PySet_Contains(live_out, id);
        if (out_of_program < 0) goto fail;
        if (entry_parameter) {
            Py_SETREF(start, PyLong_FromLong(0));
            if (!start) goto fail;
            int donated = PySet_Contains(aliased, id);
            if (donated < 0) goto fail;
            if (!donated) out_of_program = 1;
        }
        if (out_of_program) {
            end_obj = PyLong_FromSsize_t(end);
            if (!end_obj) goto fail;
            Py_SETREF(last, Py_NewRef(end_obj));
        }
        md = PyObject_GetAttr(instr, metadata_name);
        name = md ? PyObject_GetAttr(instr, name_name) : NULL;
        source = name ? memo_call(sources, md, source_of, instr) : NULL;
        fact = source ? memo_call(facts, shape, facts_of, shape) : NULL;
        if (!fact) goto fail;
        if (!PyTuple_Check(fact) || PyTuple_GET_SIZE(fact) != 6) {
            PyErr_SetString(PyExc_TypeError, "facts_of gives (text, logical, padded, size, "
                            "memory space, is_table)");
            goto fail;
        }
        op_name = md == Py_None ? Py_NewRef(empty_str) : PyObject_GetAttr(md, op_name_name);
        if (!op_name) goto fail;
        PyObject *fields[14] = {id, name, comp, index, PyTuple_GET_ITEM(fact, 0),
                                PyTuple_GET_ITEM(fact, 1), PyTuple_GET_ITEM(fact, 2),
                                PyTuple_GET_ITEM(fact, 3), start, last,
                                PyTuple_GET_ITEM(fact, 4), PyTuple_GET_ITEM(fact, 5), op_name,
                                source};
        made = PyObject_Vectorcall(new_value, fields, 14, NULL);
        if (!made) goto fail;
        PyList_SET_ITEM(out, vid, made);
        Py_DECREF(start); Py_DECREF(last); Py_DECREF(id); Py_XDECREF(end_obj);
        Py_DECREF(opcode); Py_DECREF(md); Py_DECREF(name); Py_DECREF(source);
        Py_DECREF(fact); Py_DECREF(op_name);
        continue;
    fail:
        Py_XDECREF(start); Py_XDECREF(last); Py_XDECREF(id); Py_XDECREF(end_obj);
        Py_XDECREF(opcode); Py_XDECREF(md); Py_XDECREF(name); Py_XDECREF(source);
        Py_XDECREF(fact); Py_XDECREF(op_name);
        goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    Py_XDECREF(sources);
    Py_XDECREF(facts);
    return result;
}

/* ---- heap_keys: liveness._heap_keys' event clock, in C ---------------------------------------
 * heap_keys(members, sizes, group_of, xla_id) -> per heap buffer k (members[k]: its values in
 * member order, sizes[k] its size), (began, ended) of the value whose key leads (the least
 * (began, xla id) of its members), the last of its members' ends and that value's id, in
 * the heap simulator's clock: liveness._heap_keys (the reference) counts it so, which see. */
typedef struct {
    int64_t start, end;
    Py_ssize_t vid, slot;
    PyObject *key;  /* xla_id[vid], borrowed */
} HMember;

static int hk_error = 0;

static int key_order(PyObject *a, PyObject *b) {
    if (a == b || hk_error) return 0;  /* after an error, no more calls into Python */
    int lt = PyObject_RichCompareBool(a, b, Py_LT);
    if (lt < 0) { hk_error = 1; return 0; }
    if (lt) return -1;
    int gt = PyObject_RichCompareBool(b, a, Py_LT);
    if (gt < 0) { hk_error = 1; return 0; }
    return gt ? 1 : 0;
}

static const HMember *hk_members = NULL;

/* by (start, end, xla id), over indices into hk_members */
static int cmp_by_start(const void *a, const void *b) {
    const HMember *x = &hk_members[*(const Py_ssize_t *)a], *y = &hk_members[*(const Py_ssize_t *)b];
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return key_order(x->key, y->key);
}

typedef struct { int64_t end; Py_ssize_t rank; } ByEnd;

static int cmp_by_end(const void *a, const void *b) {
    const ByEnd *x = a, *y = b;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static PyObject *heap_keys(PyObject *self, PyObject *args) {
    PyObject *members, *sizes, *group_of, *xla_id;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &members, &PyList_Type, &sizes,
                          &PyList_Type, &group_of, &PyDict_Type, &xla_id))
        return NULL;
    Py_ssize_t nslots = PyList_GET_SIZE(members), n = 0, ngroups = PyList_GET_SIZE(group_of);
    if (PyList_GET_SIZE(sizes) != nslots) {
        PyErr_SetString(PyExc_ValueError, "one size per heap buffer");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nslots; k++) {
        PyObject *ms = PyList_GET_ITEM(members, k);
        if (!PyList_Check(ms) || !PyList_GET_SIZE(ms)) {
            PyErr_SetString(PyExc_TypeError, "each heap buffer's members: a non-empty list");
            return NULL;
        }
        n += PyList_GET_SIZE(ms);
    }
    PyObject *result = NULL;
    HMember *m = PyMem_Calloc(n ? n : 1, sizeof(HMember));
    Py_ssize_t *first_of = PyMem_Calloc(nslots + 1, sizeof(Py_ssize_t));  /* slot -> members */
    int64_t *size = PyMem_Calloc(nslots ? nslots : 1, sizeof(int64_t));
    Py_ssize_t *by_start = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    ByEnd *by_end = PyMem_Calloc(n ? n : 1, sizeof(ByEnd));
    ByEnd *in_slot = PyMem_Calloc(n ? n : 1, sizeof(ByEnd));  /* per slot, by (end, order) */
    int64_t *began = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    int64_t *ended = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    char *seen = PyMem_Calloc(ngroups ? ngroups : 1, 1), *started = PyMem_Calloc(nslots + 1, 1);
    if (!m || !first_of || !size || !by_start || !by_end || !in_slot || !began || !ended ||
            !seen || !started) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < nslots; k++) {
        size[k] = PyLong_AsLongLong(PyList_GET_ITEM(sizes, k));
        if (size[k] == -1 && PyErr_Occurred()) goto done;
        first_of[k] = at;
        PyObject *ms = PyList_GET_ITEM(members, k);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ms); j++, at++) {
            PyObject *v = PyList_GET_ITEM(ms, j), *id = vfield(v, V_ID);
            if (!id) goto done;
            m[at].vid = PyLong_AsSsize_t(id);
            m[at].key = PyDict_GetItemWithError(xla_id, id);
            Py_DECREF(id);
            if (m[at].vid == -1 && PyErr_Occurred()) goto done;
            if (!m[at].key) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "a value without an xla id");
                goto done;
            }
            if (m[at].vid < 0 || m[at].vid >= ngroups) {
                PyErr_SetString(PyExc_IndexError, "a value id out of range");
                goto done;
            }
            if (value_range(v, &m[at].start, &m[at].end) < 0) goto done;
            m[at].slot = k;
            by_start[at] = at;
            in_slot[at] = (ByEnd){m[at].end, at};
            began[at] = ended[at] = -1;
        }
    }
    first_of[nslots] = n;
    hk_members = m;
    hk_error = 0;
    qsort(by_start, n, sizeof(Py_ssize_t), cmp_by_start);
    hk_members = NULL;
    if (hk_error) goto done;
    for (Py_ssize_t i = 0; i < n; i++) by_end[i] = (ByEnd){m[by_start[i]].end, i};
    qsort(by_end, n, sizeof(ByEnd), cmp_by_end);  /* by end, then start order */
    for (Py_ssize_t k = 0; k < nslots; k++)
        qsort(in_slot + first_of[k], first_of[k + 1] - first_of[k], sizeof(ByEnd), cmp_by_end);
    int64_t clock = 0;
    Py_ssize_t ia = 0, ib = 0;
    while (ia < n || ib < n) {
        int64_t step = ia < n ? m[by_start[ia]].start : INT64_MAX;
        if (ib < n && by_end[ib].end < step) step = by_end[ib].end;
        for (; ia < n && m[by_start[ia]].start == step; ia++) {
            Py_ssize_t i = by_start[ia];
            Py_ssize_t k = m[i].slot;
            if (size[k] == 0) {
                began[i] = ended[i] = clock;
                continue;
            }
            Py_ssize_t g = PyLong_AsSsize_t(PyList_GET_ITEM(group_of, m[i].vid));
            if (g == -1 && PyErr_Occurred()) goto done;
            if (g < 0 || g >= ngroups) {
                PyErr_SetString(PyExc_IndexError, "a group root out of range");
                goto done;
            }
            if (!seen[g] && started[k]) {
                /* it takes over an operand that dies here: that one is freed first */
                ByEnd *lo = in_slot + first_of[k], *hi = in_slot + first_of[k + 1];
                for (Py_ssize_t span = hi - lo; span > 0;) {  /* the first ending at step */
                    Py_ssize_t half = span / 2;
                    if (lo[half].end < step) { lo += half + 1; span -= half + 1; }
                    else span = half;
                }
                for (; lo < hi && lo->end == step; lo++) {
                    Py_ssize_t w = lo->rank;
                    if (began[w] >= 0 && ended[w] < 0) {
                        ended[w] = clock++;
                        break;
                    }
                }
            }
            seen[g] = 1;
            started[k] = 1;
            began[i] = clock++;
        }
        for (; ib < n && by_end[ib].end == step; ib++) {
            Py_ssize_t i = by_start[by_end[ib].rank];
            if (ended[i] < 0) {
                ended[i] = clock;
                if (size[m[i].slot]) clock++;
            }
        }
    }
    PyObject *out = PyList_New(nslots);
    if (!out) goto done;
    for (Py_ssize_t k = 0; k < nslots; k++) {
        Py_ssize_t first = first_of[k];
        int64_t last_end = ended[first];
        for (Py_ssize_t i = first + 1; i < first_of[k + 1]; i++) {
            if (began[i] < began[first] ||
                    (began[i] == began[first] && key_order(m[i].key, m[first].key) < 0))
                first = i;
            if (ended[i] > last_end) last_end = ended[i];
        }
        if (hk_error) { Py_DECREF(out); goto done; }
        PyObject *row = Py_BuildValue("(LLLn)", (long long)began[first], (long long)ended[first],
                                      (long long)last_end, m[first].vid);
        if (!row) { Py_DECREF(out); goto done; }
        PyList_SET_ITEM(out, k, row);
    }
    result = out;
done:
    PyMem_Free(m); PyMem_Free(first_of); PyMem_Free(size); PyMem_Free(by_start);
    PyMem_Free(by_end); PyMem_Free(in_slot); PyMem_Free(began); PyMem_Free(ended);
    PyMem_Free(seen); PyMem_Free(started);
    return result;
}

/* ---- heap_takeovers: the heap simulator's replay, in C -------------------------------------
 * heap_takeovers(order, group_of, kind, instr_at, trees, values, handoff) -> [(group, taken
 * over)] (instr_at: as defining_instr takes it): for each group of the heap in the order its
 * first value comes (order: the heap's values sorted by (start, end, id)), the group whose
 * buffer it takes over, or -1: a group of
 * one value (kind[root] 2; 1 for the heap's other groups) takes over the buffer of an
 * operand of its instruction, read as itself, whose value dies where it is defined, is alone
 * in its group in the heap, was not taken over before, and that handoff(u, v) lets it take
 * (HeapSimulator::RunComputation). _assign's Python loop is the reference. */
static PyObject *heap_takeovers(PyObject *self, PyObject *args) {
    PyObject *order, *group_of, *kind, *instr_at, *trees, *values, *handoff;
    if (!PyArg_ParseTuple(args, "O!O!YOO!O!O", &PyList_Type, &order, &PyList_Type, &group_of,
                          &kind, &instr_at, &PyDict_Type, &trees, &PyTuple_Type,
                          &values, &handoff) || instr_lookup(instr_at) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(group_of);
    if (PyByteArray_GET_SIZE(kind) != n || PyTuple_GET_SIZE(values) != n) {
        PyErr_SetString(PyExc_ValueError, "one kind, group and value per value id");
        return NULL;
    }
    const char *kinds = PyByteArray_AS_STRING(kind);
    char *placed = PyMem_Calloc(n ? n : 1, 1), *taken = PyMem_Calloc(n ? n : 1, 1);
    PyObject *out = PyList_New(0), *result = NULL;
    if (!placed || !taken) { PyErr_NoMemory(); goto done; }
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
        PyObject *v = PyList_GET_ITEM(order, i), *vid_obj = vfield(v, V_ID);
        if (!vid_obj) goto done;
        Py_ssize_t vid = PyLong_AsSsize_t(vid_obj);
        Py_DECREF(vid_obj);
        if (vid == -1 && PyErr_Occurred()) goto done;
        if (vid < 0 || vid >= n) { PyErr_SetString(PyExc_IndexError, "a value id out of range"); goto done; }
        Py_ssize_t g = PyLong_AsSsize_t(PyList_GET_ITEM(group_of, vid));
        if (g == -1 && PyErr_Occurred()) goto done;
        if (g < 0 || g >= n) { PyErr_SetString(PyExc_IndexError, "a group root out of range"); goto done; }
        if (placed[g]) continue;  /* the buffer's earlier value made its slot */
        placed[g] = 1;
        Py_ssize_t over = -1;
        if (kinds[g] == 2) {
            int64_t vs, ve;
            if (value_range(v, &vs, &ve) < 0) goto done;
            PyObject *comp;
            PyObject *instr = defining_instr(instr_at, v, &comp);
            PyObject *operands = instr ? PyObject_GetAttr(instr, operands_name) : NULL;
            PyObject *seq = operands ? PySequence_Fast(operands, "operands must be a sequence")
                                     : NULL;
            Py_XDECREF(operands);
            int error = !seq;
            for (Py_ssize_t j = 0; !error && j < PySequence_Fast_GET_SIZE(seq) && over < 0; j++) {
                PyObject *op = PySequence_Fast_GET_ITEM(seq, j);
                PyObject *tk = PyTuple_Pack(2, comp, op);
                if (!tk) { error = 1; break; }
                PyObject *tree = PyDict_GetItemWithError(trees, tk);
                Py_DECREF(tk);
                if (!tree) { error = PyErr_Occurred() != NULL; continue; }
                PyObject *uid_obj = PyDict_GetItemWithError(tree, empty_tuple);
                if (!uid_obj) { error = PyErr_Occurred() != NULL; continue; }
                Py_ssize_t uid = PyLong_AsSsize_t(uid_obj);
                if (uid == -1 && PyErr_Occurred()) { error = 1; break; }
                if (uid < 0 || uid >= n) {
                    PyErr_SetString(PyExc_IndexError, "a value id out of range");
                    error = 1;
                    break;
                }
                PyObject *u = PyTuple_GET_ITEM(values, uid);
                /* _dying(v, op, u, elements=False): in v's computation, dying where v starts,
                 * read as the defining instruction itself */
                int64_t us, ue;
                if (value_range(u, &us, &ue) < 0) { error = 1; break; }
                if (ue != vs) continue;
                int same = same_field(v, u, V_COMPUTATION);
                if (same < 0) { error = 1; break; }
                if (!same) continue;
                int direct = reads_itself(u, op);
                if (direct < 0) { error = 1; break; }
                if (!direct) continue;
                Py_ssize_t ug = PyLong_AsSsize_t(PyList_GET_ITEM(group_of, uid));
                if (ug == -1 && PyErr_Occurred()) { error = 1; break; }
                if (ug < 0 || ug >= n) {
                    PyErr_SetString(PyExc_IndexError, "a group root out of range");
                    error = 1;
                    break;
                }
                if (kinds[ug] == 0 || kinds[ug] != 2 || taken[uid]) continue;
                int ok;
                if (!call_truthy(handoff, u, v, &ok)) { error = 1; break; }
                if (!ok) continue;
                if (!placed[ug]) {
                    PyObject *k = PyLong_FromSsize_t(ug);
                    if (k) { PyErr_SetObject(PyExc_KeyError, k); Py_DECREF(k); }
                    error = 1;
                    break;
                }
                over = ug;
                taken[uid] = 1;
            }
            Py_XDECREF(comp);
            Py_XDECREF(seq);
            if (error) goto done;
        }
        PyObject *row = Py_BuildValue("(nn)", g, over);
        if (!row || PyList_Append(out, row) < 0) { Py_XDECREF(row); goto done; }
        Py_DECREF(row);
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    PyMem_Free(placed);
    PyMem_Free(taken);
    return result;
}


/* ---- The builder's common step (liveness._Builder.run) ------------------------------------
 *
 * plain_steps(instrs, i, name, schedule, instr_at, trees, defs, uses, parent, stop, suffixes)
 * takes instrs[i], instrs[i + 1], ... while each is a plain step: an array (its shape's
 * element_type is not "tuple", Shape.is_tuple) of its own, whose opcode is not in stop and
 * ends in none of suffixes, whose operands all have trees; or a bitcast with operands that
 * all have trees. Each is scheduled (schedule, instr_at); a plain step reads its operands'
 * values at its step (uses) and defines one value (defs, uses, parent; its tree in trees), a
 * bitcast names its first operand's tree (reading nothing), as run's loop and _tree do.
 * Returns the index of the first instruction it did not take (len(instrs) at the end), which
 * run takes in Python, each untouched. */
static PyObject *element_type_name = NULL, *tuple_text = NULL, *bitcast_text = NULL;

/* The trees of instr's operands into found (borrowed; *no their count, found grown where it
 * must be): 1, 0 where one has none or is not a dict (run's Python takes the step), -1 with
 * an exception set. */
static int operand_trees(PyObject *instr, PyObject *name, PyObject *trees, PyObject ***found,
                         PyObject **found_stack, Py_ssize_t *found_cap, Py_ssize_t *no) {
    PyObject *operands = PyObject_GetAttr(instr, operands_name);
    PyObject *ops = operands ? PySequence_Fast(operands, "operands must be a sequence") : NULL;
    Py_XDECREF(operands);
    if (!ops) return -1;
    *no = PySequence_Fast_GET_SIZE(ops);
    if (*no > *found_cap) {
        PyObject **more = PyMem_Realloc(*found == found_stack ? NULL : *found,
                                        *no * sizeof(PyObject *));
        if (!more) { Py_DECREF(ops); PyErr_NoMemory(); return -1; }
        *found = more;
        *found_cap = *no;
    }
    int all = 1;
    for (Py_ssize_t k = 0; k < *no && all; k++) {
        PyObject *key = PyTuple_Pack(2, name, PySequence_Fast_GET_ITEM(ops, k));
        PyObject *tree = key ? PyDict_GetItemWithError(trees, key) : NULL;
        Py_XDECREF(key);
        if (!tree) {
            if (PyErr_Occurred()) { Py_DECREF(ops); return -1; }
            all = 0;
        } else if (!PyDict_Check(tree)) {
            all = 0;
        }
        (*found)[k] = tree;  /* borrowed: trees holds it while this step runs */
    }
    Py_DECREF(ops);
    return all;
}

static PyObject *plain_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11 || !PyTuple_Check(args[0]) || !PyLong_Check(args[1]) ||
            !PyUnicode_Check(args[2]) || !PyList_Check(args[3]) || !PyDict_Check(args[4]) ||
            !PyDict_Check(args[5]) || !PyList_Check(args[6]) || !PyList_Check(args[7]) ||
            !PyList_Check(args[8]) || !PyAnySet_Check(args[9]) || !PyTuple_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "plain_steps(instrs: tuple, i: int, name: str, "
                        "schedule: list, instr_at: dict, trees: dict, defs: list, uses: list, "
                        "parent: list, stop: frozenset, suffixes: tuple)");
        return NULL;
    }
    PyObject *instrs = args[0], *name = args[2], *schedule = args[3], *instr_at = args[4],
             *trees = args[5], *defs = args[6], *uses = args[7], *parent = args[8],
             *stop = args[9], *suffixes = args[10];
    Py_ssize_t n = PyTuple_GET_SIZE(instrs), i = PyLong_AsSsize_t(args[1]);
    if (i < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "plain_steps: i < 0");
        return NULL;
    }
    if (PyList_GET_SIZE(uses) != PyList_GET_SIZE(defs) ||
            PyList_GET_SIZE(parent) != PyList_GET_SIZE(defs)) {
        PyErr_SetString(PyExc_ValueError, "plain_steps: one use and one parent per definition");
        return NULL;
    }
    PyObject *found_stack[8], **found = found_stack;
    Py_ssize_t found_cap = 8;
    for (; i < n; i++) {
        PyObject *instr = PyTuple_GET_ITEM(instrs, i);
        PyObject *opcode = PyObject_GetAttr(instr, opcode_name);
        if (!opcode) goto fail;
        if (opcode == bitcast_text ||
                (PyUnicode_Check(opcode) && PyUnicode_Compare(opcode, bitcast_text) == 0)) {
            /* a view: its operand's tree under its own name, no value and no read */
            Py_DECREF(opcode);
            Py_ssize_t no = 0;
            int all = operand_trees(instr, name, trees, &found, found_stack, &found_cap, &no);
            if (all < 0) goto fail;
            if (!all || !no) break;
            PyObject *iname = PyObject_GetAttr(instr, name_name);
            PyObject *key = iname ? PyTuple_Pack(2, name, iname) : NULL;
            Py_XDECREF(iname);
            PyObject *step = key ? PyTuple_Pack(2, name, instr) : NULL;
            int ok = step && PyList_Append(schedule, step) == 0 &&
                     PyDict_SetItem(instr_at, key, instr) == 0 &&
                     PyDict_SetItem(trees, key, found[0]) == 0;
            Py_XDECREF(step);
            Py_XDECREF(key);
            if (!ok) goto fail;
            continue;
        }
        int stops = PyUnicode_Check(opcode) ? PySet_Contains(stop, opcode) : 1;
        if (stops < 0) { Py_DECREF(opcode); goto fail; }
        int plain = !stops;
        for (Py_ssize_t k = 0; plain && k < PyTuple_GET_SIZE(suffixes); k++) {
            Py_ssize_t tail = PyUnicode_Tailmatch(opcode, PyTuple_GET_ITEM(suffixes, k), 0,
                                                  PY_SSIZE_T_MAX, 1);
            if (tail < 0) { Py_DECREF(opcode); goto fail; }
            if (tail) plain = 0;
        }
        Py_DECREF(opcode);
        if (!plain) break;
        PyObject *shape = PyObject_GetAttr(instr, shape_name);
        PyObject *etype = shape ? PyObject_GetAttr(shape, element_type_name) : NULL;
        if (!etype) { Py_XDECREF(shape); goto fail; }
        int is_tuple = etype == tuple_text ||
            (PyUnicode_Check(etype) && PyUnicode_Compare(etype, tuple_text) == 0);
        Py_DECREF(etype);
        if (is_tuple) { Py_DECREF(shape); break; }
        /* every operand's tree first: where one is missing, run's Python says so */
        Py_ssize_t no = 0;
        int all = operand_trees(instr, name, trees, &found, found_stack, &found_cap, &no);
        if (all < 0) { Py_DECREF(shape); goto fail; }
        if (!all) { Py_DECREF(shape); break; }
        PyObject *iname = PyObject_GetAttr(instr, name_name);
        PyObject *key = iname ? PyTuple_Pack(2, name, iname) : NULL;
        Py_XDECREF(iname);
        Py_ssize_t t = PyList_GET_SIZE(schedule), vid = PyList_GET_SIZE(defs);
        PyObject *t_obj = key ? PyLong_FromSsize_t(t) : NULL;
        PyObject *vid_obj = t_obj ? PyLong_FromSsize_t(vid) : NULL;
        PyObject *step = vid_obj ? PyTuple_Pack(2, name, instr) : NULL;
        int ok = step && PyList_Append(schedule, step) == 0 &&
                 PyDict_SetItem(instr_at, key, instr) == 0;
        for (Py_ssize_t k = 0; ok && k < no; k++) {
            Py_ssize_t pos = 0;
            PyObject *index, *v;
            while (ok && PyDict_Next(found[k], &pos, &index, &v)) {
                Py_ssize_t at = PyLong_AsSsize_t(v);
                if (at < 0 || at >= vid) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_IndexError, "plain_steps: a value id past defs");
                    ok = 0;
                    break;
                }
                Py_ssize_t last = PyLong_AsSsize_t(PyList_GET_ITEM(uses, at));
                if (last == -1 && PyErr_Occurred()) { ok = 0; break; }
                if (last < t) PyList_SetItem(uses, at, Py_NewRef(t_obj));
            }
        }
        PyObject *def = ok ? PyTuple_Pack(5, name, instr, empty_tuple, shape, t_obj) : NULL;
        PyObject *tree = def ? PyDict_New() : NULL;
        ok = tree && PyDict_SetItem(tree, empty_tuple, vid_obj) == 0 &&
             PyList_Append(defs, def) == 0 && PyList_Append(uses, t_obj) == 0 &&
             PyList_Append(parent, vid_obj) == 0 && PyDict_SetItem(trees, key, tree) == 0;
        Py_XDECREF(tree);
        Py_XDECREF(def);
        Py_XDECREF(step);
        Py_XDECREF(vid_obj);
        Py_XDECREF(t_obj);
        Py_XDECREF(key);
        Py_DECREF(shape);
        if (!ok) goto fail;
    }
    if (found != found_stack) PyMem_Free(found);
    return PyLong_FromSsize_t(i);
fail:
    if (found != found_stack) PyMem_Free(found);
    return NULL;
}


/* ---- Handoff: liveness._assign's handoff(earlier, later), compiled ------------------------
 *
 * Handoff(instr_at, trees, share[, by_value]) is a callable: handoff(earlier, later) -> bool,
 * whether later may take over earlier's buffer where earlier dies: later's instruction (found
 * in by_value, as defining_instr takes it; instr_at where not given) is not a copy, and for
 * an operand of it whose tree's root value is earlier, share(instruction, operand index, the
 * operand's shape, later's index) says yes (the backend's rule, with the module bound). The
 * Python closure in _assign is the reference. */
typedef struct {
    PyObject_HEAD
    PyObject *instr_at, *trees, *share;
    PyObject *by_value;  /* where later's instruction is found: instr_at, or a list by id */
    /* the last question and its answer: the search for an output allocation asks about the
     * same pair again when it checks the allocation's members */
    PyObject *last_earlier, *last_later, *last_answer;
    vectorcallfunc vectorcall;
} Handoff;

static PyObject *copy_text = NULL, *get_name = NULL;

static void handoff_dealloc(Handoff *h) {
    PyObject_GC_UnTrack(h);
    Py_CLEAR(h->instr_at);
    Py_CLEAR(h->trees);
    Py_CLEAR(h->share);
    Py_CLEAR(h->by_value);
    Py_CLEAR(h->last_earlier);
    Py_CLEAR(h->last_later);
    Py_CLEAR(h->last_answer);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static int handoff_traverse(Handoff *h, visitproc visit, void *arg) {
    Py_VISIT(h->instr_at);
    Py_VISIT(h->trees);
    Py_VISIT(h->share);
    Py_VISIT(h->by_value);
    Py_VISIT(h->last_earlier);
    Py_VISIT(h->last_later);
    return 0;
}

static PyObject *handoff_vectorcall(Handoff *h, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);

static PyObject *handoff_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *instr_at, *trees, *share, *by_value = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O|O:Handoff", &PyDict_Type, &instr_at, &PyDict_Type,
                          &trees, &share, &by_value) ||
            (by_value && instr_lookup(by_value) < 0))
        return NULL;
    if (!PyCallable_Check(share)) {
        PyErr_SetString(PyExc_TypeError, "Handoff: share must be callable");
        return NULL;
    }
    Handoff *h = (Handoff *)type->tp_alloc(type, 0);
    if (!h) return NULL;
    h->instr_at = Py_NewRef(instr_at);
    h->trees = Py_NewRef(trees);
    h->share = Py_NewRef(share);
    h->by_value = Py_NewRef(by_value ? by_value : instr_at);
    h->vectorcall = (vectorcallfunc)handoff_vectorcall;
    return (PyObject *)h;
}

static PyObject *handoff_answer(Handoff *h, PyObject *earlier, PyObject *later);

/* handoff(earlier, later), the last answer again where it is the last question */
static PyObject *handoff_vectorcall(Handoff *h, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "handoff(earlier, later)");
        return NULL;
    }
    PyObject *earlier = args[0], *later = args[1];
    if (h->last_answer && earlier == h->last_earlier && later == h->last_later)
        return Py_NewRef(h->last_answer);
    PyObject *answer = handoff_answer(h, earlier, later);
    if (answer) {
        Py_XSETREF(h->last_earlier, Py_NewRef(earlier));
        Py_XSETREF(h->last_later, Py_NewRef(later));
        Py_XSETREF(h->last_answer, Py_NewRef(answer));
    }
    return answer;
}

static PyObject *handoff_answer(Handoff *h, PyObject *earlier, PyObject *later) {
    PyObject *comp;
    PyObject *instr = defining_instr(h->by_value, later, &comp);  /* borrowed */
    PyObject *opcode = instr ? PyObject_GetAttr(instr, opcode_name) : NULL;
    PyObject *eid = opcode ? vfield(earlier, V_ID) : NULL;
    PyObject *operands = eid ? PyObject_GetAttr(instr, operands_name) : NULL;
    PyObject *seq = operands ? PySequence_Fast(operands, "operands must be a sequence") : NULL;
    PyObject *result = NULL;
    Py_XDECREF(operands);
    if (!seq) goto done;
    int copy = opcode == copy_text ||
        (PyUnicode_Check(opcode) && PyUnicode_Compare(opcode, copy_text) == 0);
    if (copy) {  /* a copy exists to make a second buffer: it never takes one over */
        result = Py_NewRef(Py_False);
        goto done;
    }
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *tk = PyTuple_Pack(2, comp, PySequence_Fast_GET_ITEM(seq, k));
        PyObject *tree = tk ? must_get(h->trees, tk) : NULL;
        PyObject *root = NULL;
        if (tree && PyDict_Check(tree)) {  /* a tree is a dict: .get(()) without the call */
            root = PyDict_GetItemWithError(tree, empty_tuple);
            root = root ? Py_NewRef(root) : PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        } else if (tree) {
            root = PyObject_CallMethodOneArg(tree, get_name, empty_tuple);
        }
        if (!root) { Py_XDECREF(tk); goto done; }
        int same = root == Py_None ? 0 : PyObject_RichCompareBool(root, eid, Py_EQ);
        Py_DECREF(root);
        if (same <= 0) {
            Py_DECREF(tk);
            if (same < 0) goto done;
            continue;
        }
        PyObject *op_instr = PyDict_GetItemWithError(h->instr_at, tk);  /* borrowed */
        Py_DECREF(tk);
        if (!op_instr) {
            if (PyErr_Occurred()) goto done;
            continue;
        }
        PyObject *shape = PyObject_GetAttr(op_instr, shape_name);
        PyObject *index = shape ? vfield(later, V_INDEX) : NULL;
        PyObject *k_obj = index ? PyLong_FromSsize_t(k) : NULL;
        PyObject *answer = k_obj ? PyObject_CallFunctionObjArgs(h->share, instr, k_obj, shape,
                                                               index, NULL) : NULL;
        Py_XDECREF(shape);
        Py_XDECREF(index);
        Py_XDECREF(k_obj);
        int yes = answer ? PyObject_IsTrue(answer) : -1;
        Py_XDECREF(answer);
        if (yes < 0) goto done;
        if (yes) {
            result = Py_NewRef(Py_True);
            goto done;
        }
    }
    result = Py_NewRef(Py_False);
done:
    Py_XDECREF(comp);
    Py_XDECREF(opcode);
    Py_XDECREF(eid);
    Py_XDECREF(seq);
    return result;
}

/* ---- eliminated_groups: memory.eliminated_intermediates' loop, in C -----------------------
 * Per grouping (fusion, op name as written, opcode, source as written): a dict key -> index
 * into C counters, made into key -> [count, bytes] at the end. */
typedef struct {
    PyObject *index;  /* key -> its row (an int) */
    int64_t *n, *bytes;
    Py_ssize_t rows, cap;
} Grouping;

/* add one value of `size` bytes to key's row; 0, or -1 with an exception (an overflow:
 * OverflowError, which the caller turns into None) */
static int grouping_add(Grouping *g, PyObject *key, int64_t size) {
    PyObject *at = PyDict_GetItemWithError(g->index, key);
    Py_ssize_t row;
    if (at) {
        row = PyLong_AsSsize_t(at);
        if (row == -1 && PyErr_Occurred()) return -1;
    } else {
        if (PyErr_Occurred()) return -1;
        if (g->rows == g->cap) {
            Py_ssize_t cap = grown(g->cap, g->rows + 1, 64);
            int64_t *n = PyMem_Realloc(g->n, (size_t)cap * sizeof(int64_t));
            if (!n) { PyErr_NoMemory(); return -1; }
            g->n = n;
            int64_t *bytes = PyMem_Realloc(g->bytes, (size_t)cap * sizeof(int64_t));
            if (!bytes) { PyErr_NoMemory(); return -1; }
            g->bytes = bytes;
            g->cap = cap;
        }
        row = g->rows;
        PyObject *r = PyLong_FromSsize_t(row);
        int stored = r ? PyDict_SetItem(g->index, key, r) : -1;
        Py_XDECREF(r);
        if (stored < 0) return -1;
        g->n[row] = 0;
        g->bytes[row] = 0;
        g->rows++;
    }
    g->n[row]++;
    if (__builtin_add_overflow(g->bytes[row], size, &g->bytes[row])) {
        PyErr_SetString(PyExc_OverflowError, "bytes past 2**63");
        return -1;
    }
    return 0;
}

/* the grouping as {key: [count, bytes]}, in the order its keys came */
static PyObject *grouping_dict(Grouping *g) {
    PyObject *out = PyDict_New(), *key, *at;
    Py_ssize_t pos = 0;
    if (!out) return NULL;
    while (PyDict_Next(g->index, &pos, &key, &at)) {
        Py_ssize_t row = PyLong_AsSsize_t(at);
        PyObject *pair = row < 0 ? NULL : Py_BuildValue("[LL]", (long long)g->n[row],
                                                          (long long)g->bytes[row]);
        if (!pair || PyDict_SetItem(out, key, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(pair);
    }
    return out;
}

static PyObject *fusion_name = NULL, *is_output_name = NULL, *constant_name = NULL;

/* eliminated_groups(values, origins, index_of, skipped, peak) -> (count, bytes, at_peak,
 * at_peak_count, (by_fusion, by_op_name, by_opcode, by_source)), or None where a sum passes
 * 2**63: memory._eliminated_groups, which see. */
static PyObject *eliminated_groups(PyObject *self, PyObject *args) {
    PyObject *values, *origins, *index_of, *skipped;
    long long peak;
    if (!PyArg_ParseTuple(args, "O!O!O!OL", &PyTuple_Type, &values, &PyDict_Type, &origins,
                          &PyDict_Type, &index_of, &skipped, &peak))
        return NULL;
    if (!PyAnySet_Check(skipped)) {
        PyErr_SetString(PyExc_TypeError, "skipped: a set of opcodes");
        return NULL;
    }
    Grouping g[4] = {{0}};
    PyObject *result = NULL, *dicts[4] = {0};
    int64_t count = 0, total = 0, at_peak = 0, at_peak_count = 0;
    int overflow = 0;
    for (int k = 0; k < 4; k++)
        if (!(g[k].index = PyDict_New())) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values); i++) {
        /* each field read once it is needed: most values stop at the origin */
        PyObject *v = PyTuple_GET_ITEM(values, i);
        PyObject *f[V_COUNT] = {0}, *key = NULL, *origin = NULL, *flag = NULL;
        PyObject *opcode = NULL, *fusion = NULL;
        int ok = 0;
        if (!(f[V_COMPUTATION] = vfield(v, V_COMPUTATION)) ||
                !(f[V_INSTRUCTION] = vfield(v, V_INSTRUCTION)) ||
                !(key = PyTuple_Pack(2, f[V_COMPUTATION], f[V_INSTRUCTION])))
            goto next;
        origin = PyDict_GetItemWithError(origins, key);  /* borrowed */
        if (!origin) { ok = !PyErr_Occurred(); goto next; }
        flag = PyObject_GetAttr(origin, is_output_name);
        int output = flag ? PyObject_IsTrue(flag) : -1;
        if (output) { ok = output > 0; goto next; }
        int table = (f[V_IS_TABLE] = vfield(v, V_IS_TABLE)) ? PyObject_IsTrue(f[V_IS_TABLE]) : -1;
        if (table) { ok = table > 0; goto next; }
        PyObject *index = PyDict_GetItemWithError(index_of, f[V_COMPUTATION]);
        PyObject *instr = index ? must_get(index, f[V_INSTRUCTION]) : NULL;
        if (!index && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, f[V_COMPUTATION]);
        if (!instr || !(opcode = PyObject_GetAttr(instr, opcode_name))) goto next;
        int skip = PySet_Contains(skipped, opcode);
        if (skip) { ok = skip > 0; goto next; }
        int error = 0;
        int64_t size = 0, start = 0, end = 0;
        if (!(f[V_SIZE] = vfield(v, V_SIZE)) || !(f[V_START] = vfield(v, V_START)) ||
                !(f[V_END] = vfield(v, V_END)) || !(f[V_OP_NAME] = vfield(v, V_OP_NAME)) ||
                !(f[V_SOURCE] = vfield(v, V_SOURCE)) ||
                !(fusion = PyObject_GetAttr(origin, fusion_name)))
            goto next;
        size = as_int64(f[V_SIZE], &error);
        start = as_int64(f[V_START], &error);
        end = as_int64(f[V_END], &error);
        if (error) goto next;
        PyObject *keys[4] = {fusion, f[V_OP_NAME], opcode, f[V_SOURCE]};
        count++;
        overflow = __builtin_add_overflow(total, size, &total);
        if (!overflow && start <= peak && peak <= end) {
            overflow = __builtin_add_overflow(at_peak, size, &at_peak);
            at_peak_count++;
        }
        ok = !overflow;
        for (int k = 0; k < 4 && ok; k++)
            if (grouping_add(&g[k], keys[k], size) < 0) ok = 0;
    next:
        for (int k = 0; k < V_COUNT; k++) Py_XDECREF(f[k]);
        Py_XDECREF(key);
        Py_XDECREF(flag);
        Py_XDECREF(opcode);
        Py_XDECREF(fusion);
        if (!ok) {
            if (overflow || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                result = Py_NewRef(Py_None);
            }
            goto done;
        }
    }
    for (int k = 0; k < 4; k++)
        if (!(dicts[k] = grouping_dict(&g[k]))) goto done;
    result = Py_BuildValue("LLLL(OOOO)", (long long)count, (long long)total,
                           (long long)at_peak, (long long)at_peak_count,
                           dicts[0], dicts[1], dicts[2], dicts[3]);
done:
    for (int k = 0; k < 4; k++) {
        Py_XDECREF(g[k].index);
        PyMem_Free(g[k].n);
        PyMem_Free(g[k].bytes);
        Py_XDECREF(dicts[k]);
    }
    return result;
}

/* ---- split_groups: liveness._split_groups, in C ------------------------------------------ */
enum { C_PARAMETER, C_CONSTANT, C_OUTPUT, C_TEMP };

/* liveness._class_of for value v: its class code, -1 with an exception set */
static int class_code(PyObject *v, PyObject *instr_at, PyObject *live_out, PyObject *entry) {
    PyObject *comp = NULL;
    PyObject *instr = defining_instr(instr_at, v, &comp);  /* borrowed */
    PyObject *opcode = instr ? PyObject_GetAttr(instr, opcode_name) : NULL;
    int code = -1;
    if (!opcode) goto done;
    int param = PyUnicode_Check(opcode) && PyUnicode_Compare(opcode, parameter_name) == 0;
    if (param) {
        int entry_comp = PyObject_RichCompareBool(comp, entry, Py_EQ);
        if (entry_comp < 0) goto done;
        if (entry_comp) { code = C_PARAMETER; goto done; }
    }
    if (PyUnicode_Check(opcode) && PyUnicode_Compare(opcode, constant_name) == 0) {
        code = C_CONSTANT;
        goto done;
    }
    PyObject *id = vfield(v, V_ID);
    int out = id ? PySet_Contains(live_out, id) : -1;
    Py_XDECREF(id);
    if (out >= 0) code = out ? C_OUTPUT : C_TEMP;
done:
    Py_XDECREF(comp);
    Py_XDECREF(opcode);
    return code;
}

/* v's post-order place (post_offset[comp] + post_places[comp][name], 0 where it has none);
 * -1 with an exception set */
static int64_t post_place(PyObject *v, PyObject *places, PyObject *offsets) {
    PyObject *comp = vfield(v, V_COMPUTATION);
    if (!comp) return -1;
    int64_t at = 0;
    PyObject *in = PyDict_GetItemWithError(places, comp);
    PyObject *name = in ? vfield(v, V_INSTRUCTION) : NULL;
    PyObject *k = name ? PyDict_GetItemWithError(in, name) : NULL;
    Py_XDECREF(name);
    if (k) {
        PyObject *offset = must_get(offsets, comp);
        int error = 0;
        at = offset ? as_int64(k, &error) + as_int64(offset, &error) : -1;
        if (!offset || error) at = -1;
    } else if (PyErr_Occurred()) {
        at = -1;
    }
    Py_DECREF(comp);
    return at;
}

typedef struct {
    int64_t start, id;
    PyObject *v;
} Member;

static int cmp_member(const void *a, const void *b) {
    const Member *x = a, *y = b;
    if (x->start != y->start) return (x->start > y->start) - (x->start < y->start);
    return (x->id > y->id) - (x->id < y->id);
}

/* members sorted by (start, id) in place; 0, or -1 with an exception set */
static int sort_members(PyObject *members) {
    Py_ssize_t m = PyList_GET_SIZE(members);
    Member *a = PyMem_Malloc((size_t)m * sizeof(Member));
    if (!a) { PyErr_NoMemory(); return -1; }
    int error = 0;
    for (Py_ssize_t i = 0; i < m && !error; i++) {
        PyObject *v = PyList_GET_ITEM(members, i);
        PyObject *start = vfield(v, V_START), *id = start ? vfield(v, V_ID) : NULL;
        if (!id) error = 1;
        a[i] = (Member){id ? as_int64(start, &error) : 0, id ? as_int64(id, &error) : 0, v};
        Py_XDECREF(start);
        Py_XDECREF(id);
    }
    if (!error) {
        qsort(a, (size_t)m, sizeof(Member), cmp_member);
        /* the list holds each value once already: the same references, reordered */
        for (Py_ssize_t i = 0; i < m; i++) PyList_SET_ITEM(members, i, a[i].v);
    }
    PyMem_Free(a);
    return error ? -1 : 0;
}

/* split_groups(groups, instr_at, live_out, entry_name, post_places, post_offset, classes) ->
 * (temps, sizes, places, others): liveness._split_groups, which see (instr_at: as
 * defining_instr takes it; classes: the class of each code, parameter, constant, output,
 * temp). */
static PyObject *split_groups(PyObject *self, PyObject *args) {
    PyObject *groups, *instr_at, *live_out, *entry, *places, *offsets, *classes;
    if (!PyArg_ParseTuple(args, "O!OOOO!O!O!", &PyDict_Type, &groups, &instr_at,
                          &live_out, &entry, &PyDict_Type, &places, &PyDict_Type, &offsets,
                          &PyTuple_Type, &classes) || instr_lookup(instr_at) < 0)
        return NULL;
    if (!PyAnySet_Check(live_out) || PyTuple_GET_SIZE(classes) != 4) {
        PyErr_SetString(PyExc_TypeError, "live_out: a set; classes: four");
        return NULL;
    }
    PyObject *temps = PyList_New(0), *sizes = PyList_New(0), *at_list = PyList_New(0),
             *others = PyList_New(0), *result = NULL, *g, *members;
    Py_ssize_t pos = 0;
    if (!temps || !sizes || !at_list || !others) goto done;
    while (PyDict_Next(groups, &pos, &g, &members)) {
        if (!PyList_Check(members) || !PyList_GET_SIZE(members)) {
            PyErr_SetString(PyExc_TypeError, "each group is a non-empty list of values");
            goto done;
        }
        Py_ssize_t m = PyList_GET_SIZE(members);
        if (m > 1 && sort_members(members) < 0) goto done;
        /* the class (the first of parameter, constant, output its values have), the largest
         * memory space and size, and whether every value is an index table */
        int code = C_TEMP, all_tables = 1;
        PyObject *space = NULL, *size = NULL;
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *v = PyList_GET_ITEM(members, i);
            int c = class_code(v, instr_at, live_out, entry);
            if (c < 0) goto fail;
            if (c < code) code = c;
            PyObject *vs = vfield(v, V_MEMORY_SPACE), *vz = vs ? vfield(v, V_SIZE) : NULL;
            PyObject *vt = vz ? vfield(v, V_IS_TABLE) : NULL;
            int table = vt ? PyObject_IsTrue(vt) : -1;
            Py_XDECREF(vt);
            int more_space = table < 0 ? -1 : !space ? 1
                : PyObject_RichCompareBool(vs, space, Py_GT);
            int more_size = more_space < 0 ? -1 : !size ? 1
                : PyObject_RichCompareBool(vz, size, Py_GT);
            if (more_size < 0) { Py_XDECREF(vs); Py_XDECREF(vz); goto fail; }
            if (more_space) Py_XSETREF(space, Py_NewRef(vs));
            if (more_size) Py_XSETREF(size, Py_NewRef(vz));
            Py_DECREF(vs);
            Py_DECREF(vz);
            all_tables = all_tables && table;
        }
        int spaced = PyObject_IsTrue(space);
        if (spaced < 0) goto fail;
        if (code != C_TEMP || spaced || all_tables) {
            PyObject *row = Py_BuildValue("(OOOOOO)", g, members, PyTuple_GET_ITEM(classes, code),
                                          space, size, all_tables ? Py_True : Py_False);
            int stored = row ? PyList_Append(others, row) : -1;
            Py_XDECREF(row);
            if (stored < 0) goto fail;
        } else {
            int64_t at = -1;
            for (Py_ssize_t i = 0; i < m; i++) {
                int64_t p = post_place(PyList_GET_ITEM(members, i), places, offsets);
                if (p < 0) goto fail;
                if (at < 0 || p < at) at = p;
            }
            PyObject *pair = PyTuple_Pack(2, g, members), *place = PyLong_FromLongLong(at);
            int stored = pair && place && PyList_Append(temps, pair) == 0 &&
                         PyList_Append(sizes, size) == 0 && PyList_Append(at_list, place) == 0;
            Py_XDECREF(pair);
            Py_XDECREF(place);
            if (!stored) goto fail;
        }
        Py_DECREF(space);
        Py_DECREF(size);
        continue;
    fail:
        Py_XDECREF(space);
        Py_XDECREF(size);
        goto done;
    }
    result = PyTuple_Pack(4, temps, sizes, at_list, others);
done:
    Py_XDECREF(temps);
    Py_XDECREF(sizes);
    Py_XDECREF(at_list);
    Py_XDECREF(others);
    return result;
}

static PyTypeObject HandoffType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hloscope.analysis._heaptree.Handoff",
    .tp_basicsize = sizeof(Handoff),
    .tp_dealloc = (destructor)handoff_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Handoff, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)handoff_traverse,
    .tp_new = handoff_new,
    .tp_doc = "Handoff(instr_at, trees, share[, by_value]): handoff(earlier, later) -> bool, "
              "liveness._assign's handoff compiled (share: the backend's rule with the module "
              "bound; by_value: each value's instruction by id).",
};

static PyMethodDef methods[] = {
    {"bind_value", bind_value, METH_O,
     "bind_value(Value): read liveness.Value's slots directly from now on."},
    {"plain_steps", (PyCFunction)(void (*)(void))plain_steps, METH_FASTCALL,
     "plain_steps(instrs, i, name, schedule, instr_at, trees, defs, uses, parent, stop, "
     "suffixes) -> the index of the first instruction not taken: liveness._Builder.run's "
     "common step (an array of its own), compiled."},
    {"heap_takeovers", heap_takeovers, METH_VARARGS,
     "heap_takeovers(order, group_of, kind, instr_at, trees, values, handoff) -> [(group, "
     "the group whose buffer it takes over or -1)]: the heap simulator's replay in "
     "liveness._assign, compiled."},
    {"heap_keys", heap_keys, METH_VARARGS,
     "heap_keys(members, sizes, group_of, xla_id) -> per heap buffer, (began, ended) of its "
     "leading value, its members' last end and that value's id: liveness._heap_keys' clock, "
     "compiled."},
    {"make_values", make_values, METH_VARARGS,
     "make_values(defs, uses, live_out, aliased, entry_name, end, new_value, source_of, "
     "facts_of) -> the Values by id: liveness._make_values' loop, compiled."},

    {"split_groups", split_groups, METH_VARARGS,
     "split_groups(groups, instr_at, live_out, entry_name, post_places, post_offset, classes) "
     "-> (temps, sizes, places, others): liveness._split_groups, compiled."},
    {"eliminated_groups", eliminated_groups, METH_VARARGS,
     "eliminated_groups(values, origins, index_of, skipped, peak) -> (count, bytes, at_peak, "
     "at_peak_count, (by_fusion, by_op_name, by_opcode, by_source)) or None: memory."
     "_eliminated_groups, compiled."},
    {"place", place, METH_VARARGS,
     "place(ranges, sizes, alignment, give_up[, board, read_at, write_at, strict]) -> "
     "(offsets, heap), or None where the heap might pass 2**62: heap._place_tree's best fit "
     "in the order given (the board: heap._side_by_side's)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_heaptree",
    "heap._place_tree's loop and liveness._OutputTable in C (same offsets and allocations; "
    "heap.py and liveness.py are the references).", -1, methods,
};

PyMODINIT_FUNC PyInit__heaptree(void) {
    operands_name = PyUnicode_InternFromString("operands");
    shape_name = PyUnicode_InternFromString("shape");
    element_type_name = PyUnicode_InternFromString("element_type");
    tuple_text = PyUnicode_InternFromString("tuple");
    bitcast_text = PyUnicode_InternFromString("bitcast");
    copy_text = PyUnicode_InternFromString("copy");
    get_name = PyUnicode_InternFromString("get");
    empty_tuple = PyTuple_New(0);
    parameter_name = PyUnicode_InternFromString("parameter");
    opcode_name = PyUnicode_InternFromString("opcode");
    metadata_name = PyUnicode_InternFromString("metadata");
    op_name_name = PyUnicode_InternFromString("op_name");
    name_name = PyUnicode_InternFromString("name");
    empty_str = PyUnicode_InternFromString("");
    fusion_name = PyUnicode_InternFromString("fusion");
    constant_name = PyUnicode_InternFromString("constant");
    is_output_name = PyUnicode_InternFromString("is_output");
    if (!fusion_name || !is_output_name || !constant_name || !parameter_name || !opcode_name ||
            !metadata_name || !op_name_name || !name_name || !empty_str)
        return NULL;
    if (!operands_name || !shape_name || !element_type_name || !tuple_text || !copy_text ||
            !bitcast_text ||
            !get_name || !empty_tuple || PyType_Ready(&OutputTableType) < 0 ||
            PyType_Ready(&HandoffType) < 0)
        return NULL;
    for (int k = 0; k < V_COUNT; k++)
        if (!(value_field_names[k] = PyUnicode_InternFromString(value_field_texts[k])))
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "OutputTable", (PyObject *)&OutputTableType) < 0 ||
            PyModule_AddObjectRef(m, "Handoff", (PyObject *)&HandoffType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
