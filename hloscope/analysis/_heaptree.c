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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
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
    int64_t *lo = PyMem_Realloc(v->lo, (size_t)cap * sizeof(int64_t));
    if (!lo) return -1;
    v->lo = lo;
    int64_t *hi = PyMem_Realloc(v->hi, (size_t)cap * sizeof(int64_t));
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
        Busy *buf = PyMem_Realloc(dst->buf, (size_t)cap * sizeof(Busy));
        if (!buf) return -1;
        dst->buf = buf;
        Busy *tmp = PyMem_Realloc(dst->tmp, (size_t)cap * sizeof(Busy));
        if (!tmp) return -1;
        dst->tmp = tmp;
        dst->cap = cap;
    }
    if (dst->runs >= dst->run_cap) {
        Py_ssize_t cap = grown(dst->run_cap, dst->runs + 1, 64);
        Py_ssize_t *run = PyMem_Realloc(dst->run, (size_t)cap * sizeof(Py_ssize_t));
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
static PyObject *place(PyObject *self, PyObject *args) {
    PyObject *ranges_obj, *sizes_obj, *give_up_obj;
    long long alignment;
    if (!PyArg_ParseTuple(args, "O!O!LO", &PyList_Type, &ranges_obj, &PyList_Type, &sizes_obj,
                          &alignment, &give_up_obj))
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

    Tree t = {0};
    Py_ssize_t *tile = NULL, *seen = NULL, *first = NULL, *count = NULL;
    int64_t *sizes = NULL, *starts = NULL;
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
    t.stored = PyMem_Calloc((size_t)(2 * t.size), sizeof(Vec));
    t.below = PyMem_Calloc((size_t)(2 * t.size), sizeof(Vec));
    /* at most two tiles per level, and every ancestor of each */
    Py_ssize_t depth = 2;
    for (Py_ssize_t s = t.size; s > 1; s >>= 1) depth++;
    tile = PyMem_Malloc((size_t)(2 * depth) * sizeof(Py_ssize_t));
    seen = PyMem_Malloc((size_t)(2 * depth * depth) * sizeof(Py_ssize_t));
    offsets = PyList_New(0);
    if (!offsets || !t.stored || !t.below || !tile || !seen) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t heap = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (heap >= give_up) break;
        const Range *r = all + first[i];
        int64_t size = sizes[i];
        t.scratch.n = t.scratch.runs = 0;
        for (Py_ssize_t k = 0; k < count[i]; k++)
            if (tree_busy(&t, (Py_ssize_t)r[k].start, (Py_ssize_t)r[k].end, tile, seen) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        int64_t offset = best_fit(&t, size, (int64_t)alignment);
        PyObject *o = PyLong_FromLongLong(offset);
        if (!o || PyList_Append(offsets, o) < 0) {
            Py_XDECREF(o);
            goto done;
        }
        Py_DECREF(o);
        if (size)  /* an empty buffer takes no room, and splits no gap */
            for (Py_ssize_t k = 0; k < count[i]; k++)
                if (tree_add(&t, (Py_ssize_t)r[k].start, (Py_ssize_t)r[k].end, offset,
                             offset + size, tile, seen) < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
        if (offset + size > heap) heap = offset + size;
    }
    result = Py_BuildValue("OL", offsets, (long long)heap);
done:
    Py_XDECREF(offsets);
    for (Py_ssize_t k = 0; k < 2 * t.size; k++) {
        if (t.stored) {
            PyMem_Free(t.stored[k].lo);
            PyMem_Free(t.stored[k].hi);
        }
        if (t.below) {
            PyMem_Free(t.below[k].lo);
            PyMem_Free(t.below[k].hi);
        }
    }
    PyMem_Free(t.stored);
    PyMem_Free(t.below);
    PyMem_Free(t.scratch.buf);
    PyMem_Free(t.scratch.tmp);
    PyMem_Free(t.scratch.run);
    PyMem_Free(tile);
    PyMem_Free(seen);
    PyMem_Free(sizes);
    PyMem_Free(first);
    PyMem_Free(count);
    PyMem_Free(all);
    PyMem_Free(starts);
    return result;
}

static PyMethodDef methods[] = {
    {"place", place, METH_VARARGS,
     "place(ranges, sizes, alignment, give_up) -> (offsets, heap), or None where the heap "
     "might pass 2**62: heap._place_tree's best fit in the order given."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_heaptree",
    "heap._place_tree's loop in C (same offsets; heap.py is the reference).", -1, methods,
};

PyMODINIT_FUNC PyInit__heaptree(void) { return PyModule_Create(&module); }
