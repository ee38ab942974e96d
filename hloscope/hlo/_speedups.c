/* hloscope.hlo._speedups: hot paths of the hlo layer in C, each the same as its Python
 * reference, which runs where this module is not built (setup.py builds it where a C compiler
 * is) and which tests hold it equal to: the parser's line match, the Instruction constructor
 * and its generic twin (Maker), transform's graph orders (graph_order) and verify's memo key
 * (like_key), each described where it is defined.
 *
 * read_line(line, attribute_of, Attribute): the parser's line path match. It reads one
 * instruction line as XLA prints it:
 *   [ROOT ]%name = shape opcode(inner), key=value, ...
 * (the shape an array's, or a tuple of arrays without comments),
 * and returns (is_root, name, shape_text, opcode, inner, operands, attributes), exactly what
 * parser._read_line (the regular expressions _LINE_RE, _ATTR_RE, _KEY_RE and _nested_end)
 * returns for it; None where that returns None, and also where a line has a character past
 * U+00FF or brackets nested past 64 deep in a value: the parser then reads the line with its
 * token path, as it does every line the match refuses.
 *
 * read_line(line, attribute_of, Attribute, shapes, memo, configs) also makes the line's
 * Instruction itself (with the Maker bind_instruction made) where nothing in it needs
 * decoding in Python: made_whole says when; the tuple otherwise.
 *
 * bind_instruction(Instruction, names): the Maker (below) of ir.Instruction, which
 * ir.new_instruction is (ir._new_instruction: each field stored in its slot) and which
 * read_line makes its Instructions with.
 *
 * name and opcode are interned, and so is every attribute's key. A value that is one token
 * (attribute_of's rows) is looked up in attribute_of by (key, value) and made there once by
 * Attribute(key, value); a nested one (a backend config's JSON) is made each time. operands
 * is the names in inner, '%' dropped and interned, or None where inner is not a name list.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

typedef const Py_UCS1 *Text;

static int name_start(Py_UCS1 c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int name_part(Py_UCS1 c) {
    return name_start(c) || (c >= '0' && c <= '9') || c == '.';
}

static int is_digit(Py_UCS1 c) { return c >= '0' && c <= '9'; }

/* The name at i ([A-Za-z_][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)*) as far as it goes: its end, or
 * -1 where there is none or a '-' follows it. Wherever the grammar reads a name, what must
 * come next never starts with a name character or '-', so a shorter match never does. */
static Py_ssize_t name_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    if (i >= n || !name_start(s[i])) return -1;
    i++;
    for (;;) {
        while (i < n && name_part(s[i])) i++;
        if (i < n && s[i] == '-') {
            if (i + 1 < n && name_part(s[i + 1])) {
                i++;
                continue;
            }
            return -1;
        }
        return i;
    }
}

/* The string at i (a '"'): the end after its closing quote, or -1 (parser._STRING_PATTERN). */
static Py_ssize_t string_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    for (i++; i < n; i++) {
        Py_UCS1 c = s[i];
        if (c == '"') return i + 1;
        if (c == '\n') return -1;
        if (c == '\\') {
            if (i + 1 >= n || s[i + 1] == '\n') return -1;
            i++;
        }
    }
    return -1;
}

/* The number at i ([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?), longest: its end, or -1. */
static Py_ssize_t number_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    if (i < n && is_digit(s[i])) {
        while (i < n && is_digit(s[i])) i++;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && is_digit(s[i])) i++;
        }
    } else if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
        i++;
        while (i < n && is_digit(s[i])) i++;
    } else {
        return -1;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        Py_ssize_t j = i + 1;
        if (j < n && (s[j] == '-' || s[j] == '+')) j++;
        if (j < n && is_digit(s[j])) {
            while (j < n && is_digit(s[j])) j++;
            i = j;
        }
    }
    return i;
}

/* -?\d+ at i: its end, or -1. */
static Py_ssize_t signed_digits(Text s, Py_ssize_t i, Py_ssize_t n) {
    if (i < n && s[i] == '-') i++;
    if (i >= n || !is_digit(s[i])) return -1;
    while (i < n && is_digit(s[i])) i++;
    return i;
}

/* -?\d+_-?\d+(?:_-?\d+)? at i, longest: its end, or -1. */
static Py_ssize_t pad_triple_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    i = signed_digits(s, i, n);
    if (i < 0 || i >= n || s[i] != '_') return -1;
    i = signed_digits(s, i + 1, n);
    if (i >= 0 && i < n && s[i] == '_') {
        Py_ssize_t j = signed_digits(s, i + 1, n);
        if (j >= 0) i = j;
    }
    return i;
}

/* A padding (parser._PAD_PATTERN: triples joined by 'x'), longest: its end, or -1. */
static Py_ssize_t pad_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    i = pad_triple_end(s, i, n);
    while (i >= 0 && i < n && s[i] == 'x') {
        Py_ssize_t j = pad_triple_end(s, i + 1, n);
        if (j < 0) break;
        i = j;
    }
    return i;
}

/* The end of the run of characters of ``chars`` at i, where it is 2 or more long; else -1. */
static Py_ssize_t run_end(Text s, Py_ssize_t i, Py_ssize_t n, const char *chars) {
    Py_ssize_t j = i;
    while (j < n && s[j] && strchr(chars, s[j])) j++;
    return j - i >= 2 ? j : -1;
}

/* Dimension labels (parser._DIM_LABELS_PATTERN, e.g. b01f_01io->b01f): the end, or -1. */
static Py_ssize_t dim_labels_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    i = run_end(s, i, n, "0123456789bf?");
    if (i < 0 || i >= n || s[i] != '_') return -1;
    i = run_end(s, i + 1, n, "0123456789io?");
    if (i < 0 || i + 1 >= n || s[i] != '-' || s[i + 1] != '>') return -1;
    return run_end(s, i + 2, n, "0123456789bf?");
}

/* The array shape at i, its layout too (parser._ARRAY_PATTERN, the SHAPE token): its end,
 * or -1. A layout that does not close before a brace or the line's end leaves no shape:
 * without it, the '{' could follow no shape in the line pattern either. */
static Py_ssize_t array_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    if (i >= n || !(s[i] >= 'a' && s[i] <= 'z')) return -1;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || is_digit(s[i]))) i++;
    if (i >= n || s[i] != '[') return -1;
    while (i < n && s[i] != ']' && s[i] != '\n') i++;
    if (i >= n) return -1;
    i++;
    if (i < n && s[i] == '{') {  /* the layout */
        i++;
        while (i < n && s[i] != '{' && s[i] != '}' && s[i] != '\n') i++;
        if (i >= n || s[i] != '}') return -1;
        i++;
    }
    return i;
}

/* A brace group at i with no brace inside outside strings: the end after its '}', or -1. */
static Py_ssize_t flat_group_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    for (i++; i < n;) {
        Py_UCS1 c = s[i];
        if (c == '}') return i + 1;
        if (c == '{' || c == '\n') return -1;
        if (c == '"') {
            i = string_end(s, i, n);
            if (i < 0) return -1;
        } else {
            i++;
        }
    }
    return -1;
}

static int nested_char(Py_UCS1 c) {
    return name_part(c) || c == ':' || c == ',' || c == '+' || c == '-' || c == '=' || c == ' ';
}

#define MAX_DEPTH 64

/* parser._nested_end: the end of the bracket group at i where every bracket outside strings
 * closes the one opened last and ", " or the line's end follows it; else -1. */
static Py_ssize_t nested_end(Text s, Py_ssize_t i, Py_ssize_t n) {
    Py_UCS1 stack[MAX_DEPTH];
    int depth = 0;
    while (i < n) {
        Py_UCS1 c = s[i];
        if (c == '"') {
            i = string_end(s, i, n);
            if (i < 0) return -1;
            continue;
        }
        if (c == '{' || c == '[' || c == '(') {
            if (depth == MAX_DEPTH) return -1;
            stack[depth++] = c;
        } else if (c == '}' || c == ']' || c == ')') {
            Py_UCS1 open = c == '}' ? '{' : c == ']' ? '[' : '(';
            if (depth == 0 || stack[--depth] != open) return -1;
            if (depth == 0) {
                Py_ssize_t end = i + 1;
                return end == n || (end + 1 < n && s[end] == ',' && s[end + 1] == ' ')
                    ? end : -1;
            }
        } else if (!nested_char(c)) {
            return -1;
        }
        i++;
    }
    return -1;
}

/* The interned text s[a:b] of line, or NULL with an error set. */
static PyObject *interned(PyObject *line, Py_ssize_t a, Py_ssize_t b) {
    PyObject *t = PyUnicode_Substring(line, a, b);
    if (t) PyUnicode_InternInPlace(&t);
    return t;
}

/* The names in s[a:b] ((?:%?NAME(?:, %?NAME)*)?), '%' dropped, interned; Py_None (a new
 * reference) where it is not such a list; NULL with an error set. */
static PyObject *operand_names(PyObject *line, Text s, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t count = 0, i = a;
    if (a == b) return PyTuple_New(0);
    for (;;) {  /* first the form, and how many */
        if (i < b && s[i] == '%') i++;
        i = name_end(s, i, b);
        if (i < 0) Py_RETURN_NONE;
        count++;
        if (i == b) break;
        if (i + 1 >= b || s[i] != ',' || s[i + 1] != ' ') Py_RETURN_NONE;
        i += 2;
    }
    PyObject *names = PyTuple_New(count);
    if (!names) return NULL;
    i = a;
    for (Py_ssize_t k = 0; k < count; k++) {
        if (s[i] == '%') i++;
        Py_ssize_t e = name_end(s, i, b);
        PyObject *name = interned(line, i, e);
        if (!name) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, k, name);
        i = e + 2;
    }
    return names;
}

/* One attribute's value from s[v:e]: attribute_of's (key, value) row, made once; a new
 * reference, or NULL with an error set. */
static PyObject *shared_attribute(PyObject *key, PyObject *value, PyObject *attribute_of,
                                  PyObject *make) {
    PyObject *row = PyTuple_Pack(2, key, value);
    if (!row) return NULL;
    PyObject *found = PyDict_GetItemWithError(attribute_of, row);
    if (found) {
        Py_DECREF(row);
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(row);
        return NULL;
    }
    PyObject *made = PyObject_CallFunctionObjArgs(make, key, value, NULL);
    if (made && PyDict_SetItem(attribute_of, row, made) < 0) Py_CLEAR(made);
    Py_DECREF(row);
    return made;
}

#define MAX_FIELDS 32

/* The offsets of the slots `names` of `type`, each a plain writable object slot of the type
 * itself (found through its descriptor); 0, or -1 with TypeError set. */
static int slot_offsets(PyObject *type, PyObject *names, Py_ssize_t *offsets) {
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    if (count > MAX_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "too many fields");
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *d = PyObject_GetAttr(type, PyTuple_GET_ITEM(names, k));
        if (!d) return -1;
        int plain = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
            ((PyMemberDescrObject *)d)->d_common.d_type == (PyTypeObject *)type;
        PyMemberDef *m = plain ? ((PyMemberDescrObject *)d)->d_member : NULL;
        Py_DECREF(d);
        if (!m || m->type != T_OBJECT_EX || (m->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "field %R is not a writable object slot",
                         PyTuple_GET_ITEM(names, k));
            return -1;
        }
        offsets[k] = m->offset;
    }
    return 0;
}

/* Maker(type, names): a callable making instances of a frozen dataclass with slots from
 * every field, given in order, each stored in its slot (no __init__, so no __post_init__:
 * for classes without one). The slots are found once, by their descriptors: each must be a
 * plain writable object slot, else Maker raises TypeError and the caller keeps the class's
 * own constructor. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *type;
    Py_ssize_t count;
    Py_ssize_t offsets[MAX_FIELDS];
} Maker;

static PyObject *maker_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Maker *mk = (Maker *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != mk->count || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "%s takes its %zd fields, by position",
                     mk->type->tp_name, mk->count);
        return NULL;
    }
    PyObject *made = mk->type->tp_alloc(mk->type, 0);
    if (!made) return NULL;
    for (Py_ssize_t k = 0; k < nargs; k++)
        *(PyObject **)((char *)made + mk->offsets[k]) = Py_NewRef(args[k]);
    return made;
}

static PyObject *maker_new(PyTypeObject *cls, PyObject *args, PyObject *kwds) {
    PyObject *type, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &type, &PyTuple_Type, &names)) return NULL;
    Maker *mk = (Maker *)cls->tp_alloc(cls, 0);
    if (!mk) return NULL;
    if (slot_offsets(type, names, mk->offsets) < 0) {
        Py_DECREF(mk);
        return NULL;
    }
    mk->type = (PyTypeObject *)Py_NewRef(type);
    mk->count = PyTuple_GET_SIZE(names);
    mk->vectorcall = maker_call;
    return (PyObject *)mk;
}

static void maker_dealloc(Maker *mk) {
    Py_XDECREF(mk->type);
    Py_TYPE(mk)->tp_free((PyObject *)mk);
}

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hloscope.hlo._speedups.Maker",
    .tp_basicsize = sizeof(Maker),
    .tp_dealloc = (destructor)maker_dealloc,
    .tp_vectorcall_offset = offsetof(Maker, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Maker(type, names)(*fields): an instance of a frozen dataclass with slots, "
              "each field stored in its slot (no __init__).",
    .tp_new = maker_new,
};

/* An Instruction's fields, in ir._FIELDS' order (unfuse's loops below read them). */
enum { F_NAME, F_OPCODE, F_SHAPE, F_OPERANDS, F_ATTRIBUTES, F_IS_ROOT, F_PARAMETER_NUMBER,
       F_LITERAL, F_CALLED, F_FUSION_KIND, F_METADATA, F_BACKEND_CONFIG, F_CONTROLS, F_COUNT };
static const char *field_texts[F_COUNT] = {
    "name", "opcode", "shape", "operands", "attributes", "is_root", "parameter_number",
    "literal", "called_computations", "fusion_kind", "metadata", "backend_config",
    "control_predecessors"};
static PyObject *field_names[F_COUNT];
static int fields_in_order = 0;  /* the Maker's slots are field_texts' order */

/* bind_instruction(Instruction, names) -> the Maker of Instruction, kept for read_line. */
static Maker *instruction_maker = NULL;

static PyObject *bind_instruction(PyObject *self, PyObject *args) {
    PyObject *maker = PyObject_Call((PyObject *)&MakerType, args, NULL);
    if (!maker) return NULL;
    Py_XSETREF(instruction_maker, (Maker *)Py_NewRef(maker));
    /* unfuse's loops read an Instruction's slots directly only when they are in order */
    PyObject *names = PyTuple_GET_ITEM(args, 1);
    fields_in_order = PyTuple_GET_SIZE(names) == F_COUNT;
    for (Py_ssize_t k = 0; fields_in_order && k < F_COUNT; k++) {
        int same = PyUnicode_Check(PyTuple_GET_ITEM(names, k)) &&
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, k), field_texts[k]) == 0;
        fields_in_order = same;
    }
    return maker;
}

/* The keys whose values make an Instruction's decoded fields (bind_parser): a line with one
 * of them is made by the parser in Python, apart from metadata and backend_config values
 * decoded before (memo and configs). */
static PyObject *decoded_keys = NULL;
static PyObject *metadata_key = NULL, *backend_config_key = NULL;

static PyObject *bind_parser(PyObject *self, PyObject *keys) {
    if (!PyFrozenSet_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "bind_parser(keys: frozenset)");
        return NULL;
    }
    if (!metadata_key && !(metadata_key = PyUnicode_InternFromString("metadata"))) return NULL;
    if (!backend_config_key &&
            !(backend_config_key = PyUnicode_InternFromString("backend_config")))
        return NULL;
    Py_INCREF(keys);
    Py_XSETREF(decoded_keys, keys);
    Py_RETURN_NONE;
}

static int literal_char(Py_UCS1 c) {
    return name_part(c) || c == '-' || c == '+' || c == '{' || c == '}' || c == ',' ||
        c == ' ';
}

/* A parameter's number (inner all ASCII digits) or a constant's literal (inner of literal
 * characters, braces balanced, not only spaces; spaces stripped), as the parser's line path
 * takes them: a new reference; Py_None (new) where the parser refuses them. */
static PyObject *parameter_number(PyObject *inner) {
    Text s = PyUnicode_1BYTE_DATA(inner);
    Py_ssize_t n = PyUnicode_GET_LENGTH(inner);
    if (n == 0) Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_digit(s[i])) Py_RETURN_NONE;
    return PyLong_FromUnicodeObject(inner, 10);
}

static PyObject *literal_of(PyObject *inner) {
    Text s = PyUnicode_1BYTE_DATA(inner);
    Py_ssize_t n = PyUnicode_GET_LENGTH(inner), depth = 0, a = 0, b = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!literal_char(s[i])) Py_RETURN_NONE;
        if (s[i] == '{') depth++;
        else if (s[i] == '}' && --depth < 0) Py_RETURN_NONE;
    }
    while (a < b && s[a] == ' ') a++;
    while (b > a && s[b - 1] == ' ') b--;
    if (depth != 0 || a == b) Py_RETURN_NONE;
    return PyUnicode_Substring(inner, a, b);
}

/* The Instruction of a line read whole, where nothing in it needs Python: not named ROOT,
 * a parameter's number or a constant's literal in the line path's form, other ops' operands
 * a list of names, the shape in ``shapes``, and no attribute that decodes to a field but
 * metadata and backend_config texts decoded before (memo, configs). A new reference;
 * Py_None (new) where the parser must make it; NULL with an error set. */
static PyObject *made_whole(PyObject *name, PyObject *shape_text, PyObject *opcode,
                            PyObject *inner, PyObject *operands, PyObject *attributes,
                            PyObject **keys, PyObject **values, Py_ssize_t count, int root,
                            PyObject *shapes, PyObject *memo, PyObject *configs) {
    if (!instruction_maker || instruction_maker->count != 13 || !decoded_keys ||
            PyUnicode_CompareWithASCIIString(name, "ROOT") == 0)
        Py_RETURN_NONE;
    PyObject *shape = PyDict_GetItemWithError(shapes, shape_text);
    if (!shape) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *metadata = Py_None, *config = Py_None;  /* borrowed: the dicts hold them */
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject **slot = keys[k] == metadata_key ? &metadata :
            keys[k] == backend_config_key ? &config : NULL;
        if (slot) {
            *slot = PyDict_GetItemWithError(slot == &metadata ? memo : configs, values[k]);
            if (!*slot) {
                if (PyErr_Occurred()) return NULL;
                Py_RETURN_NONE;
            }
            continue;
        }
        int decoded = PySet_Contains(decoded_keys, keys[k]);
        if (decoded < 0) return NULL;
        if (decoded) Py_RETURN_NONE;
    }
    PyObject *number = NULL, *literal = NULL;  /* parameter(N), constant(...) */
    if (PyUnicode_CompareWithASCIIString(opcode, "parameter") == 0) {
        number = parameter_number(inner);
        if (number == Py_None || !number) return number;
    } else if (PyUnicode_CompareWithASCIIString(opcode, "constant") == 0) {
        literal = literal_of(inner);
        if (literal == Py_None || !literal) return literal;
    } else if (operands == Py_None) {
        Py_RETURN_NONE;
    }
    PyObject *empty = PyTuple_New(0), *made = NULL;
    if (empty) {
        PyObject *fields[13] = {name, opcode, shape, number || literal ? empty : operands,
                                attributes, root ? Py_True : Py_False,
                                number ? number : Py_None, literal ? literal : Py_None, empty,
                                Py_None, metadata, config, empty};
        made = maker_call((PyObject *)instruction_maker, fields, 13, NULL);
        Py_DECREF(empty);
    }
    Py_XDECREF(number);
    Py_XDECREF(literal);
    return made;
}

static PyObject *read_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 3 && nargs != 6) || !PyUnicode_Check(args[0]) || !PyDict_Check(args[1]) ||
            (nargs == 6 && (!PyDict_Check(args[3]) || !PyDict_Check(args[4]) ||
                            !PyDict_Check(args[5])))) {
        PyErr_SetString(PyExc_TypeError, "read_line(line: str, attribute_of: dict, Attribute"
                                         "[, shapes: dict, memo: dict, configs: dict])");
        return NULL;
    }
    PyObject *line = args[0], *attribute_of = args[1], *make = args[2];
    if (PyUnicode_READY(line) < 0) return NULL;
    if (PyUnicode_KIND(line) != PyUnicode_1BYTE_KIND) Py_RETURN_NONE;
    Text s = PyUnicode_1BYTE_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line), i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    int root = n - i >= 5 && memcmp(s + i, "ROOT ", 5) == 0;
    Py_ssize_t name0, name1, indent = i;
    if (root) i += 5;
name:
    if (i < n && s[i] == '%') i++;
    name0 = i;
    name1 = name_end(s, i, n);
    if (name1 < 0 || name1 + 3 > n || memcmp(s + name1, " = ", 3) != 0) {
        if (!root) Py_RETURN_NONE;
        root = 0;  /* "ROOT = ...": an instruction named ROOT, as the regular expression reads */
        i = indent;
        goto name;
    }
    Py_ssize_t shape0 = name1 + 3;
    i = shape0;
    if (i < n && s[i] == '(') {  /* a tuple of arrays */
        i++;
        if (i < n && s[i] != ')') {
            for (;;) {
                i = array_end(s, i, n);
                if (i < 0) Py_RETURN_NONE;
                if (i < n && s[i] == ')') break;
                if (i + 1 >= n || s[i] != ',' || s[i + 1] != ' ') Py_RETURN_NONE;
                i += 2;
            }
        }
        if (i >= n || s[i] != ')') Py_RETURN_NONE;
        i++;
    } else {
        i = array_end(s, i, n);
        if (i < 0) Py_RETURN_NONE;
    }
    Py_ssize_t shape1 = i;
    if (i >= n || s[i] != ' ') Py_RETURN_NONE;
    Py_ssize_t op0 = i + 1, op1 = name_end(s, op0, n);
    if (op1 < 0 || op1 >= n || s[op1] != '(') Py_RETURN_NONE;
    Py_ssize_t inner0 = op1 + 1;
    i = inner0;
    while (i < n && s[i] != '(' && s[i] != ')') i++;
    if (i >= n || s[i] != ')') Py_RETURN_NONE;
    Py_ssize_t inner1 = i;
    i++;

    /* The attributes: first only where each ends, so that a line not read makes nothing. */
    Py_ssize_t bounds[3 * 64];  /* key start, key end (its '='), value end; at most 64 */
    int nested[64];
    Py_ssize_t count = 0;
    while (i < n) {
        if (count == 64 || i + 1 >= n || s[i] != ',' || s[i + 1] != ' ') Py_RETURN_NONE;
        Py_ssize_t k0 = i + 2, k1 = name_end(s, k0, n);
        if (k1 < 0 || k1 >= n || s[k1] != '=') Py_RETURN_NONE;
        Py_ssize_t v = k1 + 1, e = -1;
        int deep = 0;
        if (v < n) {
            Py_UCS1 c = s[v];
            if (c == '{') {
                e = flat_group_end(s, v, n);
                if (e < 0 || (e < n && s[e] != ',')) {
                    e = nested_end(s, v, n);
                    deep = 1;
                }
            } else if (c == '%' || name_start(c)) {
                e = name_end(s, c == '%' ? v + 1 : v, n);
            } else if (c == '"') {
                e = string_end(s, v, n);
            } else {
                e = number_end(s, v, n);
            }
            if (c != '{' && c != '"' && (e < 0 || (e < n && s[e] != ','))) {
                e = pad_end(s, v, n);  /* the two values of XLA's own tokens */
                if (e < 0 || (e < n && s[e] != ',')) e = dim_labels_end(s, v, n);
            }
        }
        if (e < 0 || (!deep && e < n && s[e] != ',')) Py_RETURN_NONE;
        bounds[3 * count] = k0;
        bounds[3 * count + 1] = k1;
        bounds[3 * count + 2] = e;
        nested[count++] = deep;
        i = e;
    }

    PyObject *name = NULL, *shape = NULL, *opcode = NULL, *inner = NULL, *operands = NULL;
    PyObject *attributes = NULL, *result = NULL;
    PyObject *keys[64], *values[64];
    Py_ssize_t kept = 0;  /* keys and values held, for made_whole */
    if (!(name = interned(line, name0, name1)) ||
            !(shape = PyUnicode_Substring(line, shape0, shape1)) ||
            !(opcode = interned(line, op0, op1)) ||
            !(inner = PyUnicode_Substring(line, inner0, inner1)) ||
            !(operands = operand_names(line, s, inner0, inner1)) ||
            !(attributes = PyTuple_New(count)))
        goto done;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t k0 = bounds[3 * k], k1 = bounds[3 * k + 1], e = bounds[3 * k + 2];
        PyObject *key = interned(line, k0, k1);
        PyObject *value = key ? PyUnicode_Substring(line, k1 + 1, e) : NULL;
        PyObject *a = NULL;
        if (value)
            a = nested[k] ? PyObject_CallFunctionObjArgs(make, key, value, NULL)
                          : shared_attribute(key, value, attribute_of, make);
        if (!a) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            goto done;
        }
        PyTuple_SET_ITEM(attributes, k, a);
        keys[kept] = key;
        values[kept++] = value;
    }
    if (nargs == 6) {
        result = made_whole(name, shape, opcode, inner, operands, attributes, keys, values,
                            count, root, args[3], args[4], args[5]);
        if (result != Py_None) goto done;  /* made, or an error */
        Py_CLEAR(result);
    }
    result = PyTuple_New(7);
    if (!result) goto done;
    PyObject *is_root = root ? Py_True : Py_False;
    Py_INCREF(is_root);
    PyObject *items[7] = {is_root, name, shape, opcode, inner, operands, attributes};
    for (int k = 0; k < 7; k++) {
        PyTuple_SET_ITEM(result, k, items[k]);
    }
    name = shape = opcode = inner = operands = attributes = NULL;  /* the tuple holds them */
done:
    for (Py_ssize_t k = 0; k < kept; k++) {
        Py_DECREF(keys[k]);
        Py_DECREF(values[k]);
    }
    Py_XDECREF(name);
    Py_XDECREF(shape);
    Py_XDECREF(opcode);
    Py_XDECREF(inner);
    Py_XDECREF(operands);
    Py_XDECREF(attributes);
    return result;
}

/* graph_order(instructions, kind): an order of one computation's instructions, operands
 * before users, as transform.py's Python makes it (the reference): kind 0, bfs_schedule's
 * (Kahn's algorithm, a FIFO queue, ties in text order; the instructions in that order);
 * kind 1, post_order_names' (XLA's MakeInstructionPostOrder: depth-first from each
 * instruction no other reads as an operand, in text order, visiting the control
 * predecessors last to first, then the operands; the names in that order). Dependencies are
 * _deps': the distinct operands and control predecessors that are instructions of the
 * computation. None where two instructions share a name (the caller keeps the Python). */
static PyObject *operands_name = NULL, *controls_name = NULL, *name_name = NULL;


/* The dependencies of instruction i appended to deps from *count on, each once (mark[k]
 * holds i + 1 once k is one of them); 1 where a control predecessor is among them, else 0;
 * -1 with an exception set. read (optional) marks the instructions read as operands. */
static int deps_of(PyObject *instr, Py_ssize_t i, PyObject *pos, int controls_first,
                   Py_ssize_t **deps, Py_ssize_t *count, Py_ssize_t *capacity, Py_ssize_t *mark,
                   char *read) {
    PyObject *got = PyObject_GetAttr(instr, operands_name);
    if (!got) return -1;
    PyObject *operands = PySequence_Fast(got, "operands must be a sequence");
    Py_DECREF(got);
    if (!operands) return -1;
    got = PyObject_GetAttr(instr, controls_name);
    PyObject *controls = got ? PySequence_Fast(got, "control_predecessors must be a sequence")
                             : NULL;
    Py_XDECREF(got);
    if (!controls) { Py_DECREF(operands); return -1; }
    int status = -1, controlled = 0;
    Py_ssize_t no = PySequence_Fast_GET_SIZE(operands), nc = PySequence_Fast_GET_SIZE(controls);
    if (*count + no + nc > *capacity) {
        Py_ssize_t grown = (*capacity + no + nc) * 2;
        Py_ssize_t *more = PyMem_Realloc(*deps, grown * sizeof(Py_ssize_t));
        if (!more) { PyErr_NoMemory(); goto done; }
        *deps = more;
        *capacity = grown;
    }
    /* controls_first: the controls last to first, then the operands; else the operands,
     * then the controls first to last */
    for (int part = 0; part < 2; part++) {
        int is_controls = controls_first ? part == 0 : part == 1;
        PyObject *from = is_controls ? controls : operands;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(from);
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *name = PySequence_Fast_GET_ITEM(
                from, is_controls && controls_first ? n - 1 - j : j);
            PyObject *k = PyDict_GetItemWithError(pos, name);
            if (!k) {
                if (PyErr_Occurred()) goto done;
                continue;
            }
            Py_ssize_t at = PyLong_AsSsize_t(k);
            if (!is_controls && read) read[at] = 1;
            if (is_controls) controlled = 1;
            if (mark[at] != i + 1) {
                mark[at] = i + 1;
                (*deps)[(*count)++] = at;
            }
        }
    }
    status = controlled;
done:
    Py_DECREF(operands);
    Py_DECREF(controls);
    return status;
}

/* The depth-first walks of _depth_first_names over index arrays (instruction i's
 * dependencies: deps[first[i]] to deps[first[i + 1]]): from each instruction flag marks a
 * root (bit 1 clear), in order (the text's, or seq's where given), then from every
 * instruction, each dependency put before its user. flag's bit 2 marks the instructions
 * done; work holds 2n; the order goes to order. Returns how many instructions it holds. */
static Py_ssize_t post_order_walk(Py_ssize_t n, const Py_ssize_t *first, const Py_ssize_t *deps,
                                  char *flag, Py_ssize_t *work, Py_ssize_t *order,
                                  const Py_ssize_t *seq) {
    Py_ssize_t *stack = work, *at = work + n, done_count = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (Py_ssize_t t = 0; t < n; t++) {
            Py_ssize_t s = seq ? seq[t] : t;
            if ((flag[s] & 2) || (pass == 0 && (flag[s] & 1))) continue;
            flag[s] |= 2;
            Py_ssize_t depth = 1;
            stack[0] = s;
            at[0] = 0;
            while (depth) {
                Py_ssize_t top = stack[depth - 1];
                Py_ssize_t k = first[top] + at[depth - 1], end = first[top + 1];
                while (k < end && (flag[deps[k]] & 2)) k++;
                if (k == end) {
                    order[done_count++] = top;
                    depth--;
                } else {
                    at[depth - 1] = k + 1 - first[top];
                    flag[deps[k]] |= 2;
                    stack[depth] = deps[k];
                    at[depth] = 0;
                    depth++;
                }
            }
        }
    }
    return done_count;
}

/* Each instruction's name into names (a list of len(instrs)) and its position into pos: 1,
 * 0 where two share a name, -1 with an exception set. */
static int name_positions(PyObject *instrs, PyObject *names, PyObject *pos) {
    Py_ssize_t n = PyTuple_GET_SIZE(instrs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyObject_GetAttr(PyTuple_GET_ITEM(instrs, i), name_name);
        if (!name) return -1;
        PyList_SET_ITEM(names, i, name);
        PyObject *k = PyLong_FromSsize_t(i);
        if (!k || PyDict_SetItem(pos, name, k) < 0) { Py_XDECREF(k); return -1; }
        Py_DECREF(k);
    }
    return PyDict_GET_SIZE(pos) == n;
}

static PyObject *graph_order(PyObject *self, PyObject *args) {
    PyObject *instrs;
    int kind;
    if (!PyArg_ParseTuple(args, "O!i", &PyTuple_Type, &instrs, &kind)) return NULL;
    if (kind != 0 && kind != 1 && kind != 2) {
        PyErr_SetString(PyExc_ValueError, "kind is 0 (breadth-first), 1 (post order) or 2 "
                        "(both)");
        return NULL;
    }
    int controlled = 0;  /* a control predecessor among the dependencies */
    PyObject *post = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(instrs);
    PyObject *pos = PyDict_New(), *names = PyList_New(n), *result = NULL;
    Py_ssize_t *first = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *order = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *work = PyMem_Calloc(2 * n + 1, sizeof(Py_ssize_t));
    char *flag = PyMem_Calloc(n + 1, 1);
    Py_ssize_t capacity = 2 * n + 16, count = 0, done_count = 0;
    Py_ssize_t *deps = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
    Py_ssize_t *users = NULL, *ufirst = NULL;
    if (!pos || !names || !first || !order || !work || !flag || !deps) {
        PyErr_NoMemory();
        goto done;
    }
    int unique = name_positions(instrs, names, pos);
    if (unique < 0) goto done;
    if (!unique) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        first[i] = count;
        /* work: the marks here, the queue's counts or the walk's stacks below */
        int got = deps_of(PyTuple_GET_ITEM(instrs, i), i, pos, kind == 1, &deps, &count,
                          &capacity, work, kind != 0 ? flag : NULL);
        if (got < 0) goto done;
        controlled |= got;
    }
    first[n] = count;
    if (kind != 1) {
        /* users of each instruction, in text order; missing: the deps not yet scheduled */
        users = PyMem_Malloc((count + 1) * sizeof(Py_ssize_t));
        ufirst = PyMem_Calloc(n + 2, sizeof(Py_ssize_t));
        Py_ssize_t *missing = work;
        if (!users || !ufirst) { PyErr_NoMemory(); goto done; }
        for (Py_ssize_t j = 0; j < count; j++) ufirst[deps[j] + 2]++;
        for (Py_ssize_t i = 0; i < n; i++) ufirst[i + 2] += ufirst[i + 1];
        for (Py_ssize_t i = 0; i < n; i++) {
            missing[i] = first[i + 1] - first[i];
            for (Py_ssize_t j = first[i]; j < first[i + 1]; j++) users[ufirst[deps[j] + 1]++] = i;
        }
        Py_ssize_t head = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (missing[i] == 0) order[done_count++] = i;
        while (head < done_count) {
            Py_ssize_t v = order[head++];
            for (Py_ssize_t j = ufirst[v]; j < ufirst[v + 1]; j++)
                if (--missing[users[j]] == 0) order[done_count++] = users[j];
        }
    } else {
        done_count = post_order_walk(n, first, deps, flag, work, order, NULL);
    }
    if (kind == 2 && !controlled && done_count == n) {
        /* the post order of the instructions in the breadth-first order just found: the same
         * dependencies (without control edges, the operands in order either way), the walks
         * from the instructions in that order */
        Py_ssize_t *walked = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
        if (!walked) { PyErr_NoMemory(); goto done; }
        memset(work, 0, (2 * n + 1) * sizeof(Py_ssize_t));
        Py_ssize_t walked_count = post_order_walk(n, first, deps, flag, work, walked, order);
        post = PyList_New(walked_count);
        for (Py_ssize_t i = 0; post && i < walked_count; i++)
            PyList_SET_ITEM(post, i, Py_NewRef(PyList_GET_ITEM(names, walked[i])));
        PyMem_Free(walked);
        if (!post) goto done;
    }
    PyObject *made = PyList_New(done_count);
    if (!made) goto done;
    for (Py_ssize_t i = 0; i < done_count; i++) {
        PyObject *item = kind != 1 ? PyTuple_GET_ITEM(instrs, order[i])
                                   : PyList_GET_ITEM(names, order[i]);
        PyList_SET_ITEM(made, i, Py_NewRef(item));
    }
    result = kind == 2 ? Py_BuildValue("(NO)", made, post ? post : Py_None) : made;
done:
    Py_XDECREF(post);
    Py_XDECREF(pos);
    Py_XDECREF(names);
    PyMem_Free(first);
    PyMem_Free(order);
    PyMem_Free(work);
    PyMem_Free(flag);
    PyMem_Free(deps);
    PyMem_Free(users);
    PyMem_Free(ufirst);
    return result;
}

/* like_key(instr, index, tails) -> (ops, key): verify.problems' memo key of an instruction,
 * as verify._like_key makes it in Python (the reference): ops, the shapes of its operands
 * (None with the key where an operand is not in index); key, None where the instruction is
 * not one the memo takes (a callee, a constant, an opcode ending in one of tails), else
 * (opcode, the addresses of its shape, its operands' shapes, 0, and its attributes, 0 for
 * metadata, as bytes): equal keys, the same objects (every one alive in the module). */
static PyObject *shape_name = NULL, *opcode_name = NULL, *called_name = NULL,
                *attributes_name = NULL, *key_name = NULL, *metadata_name = NULL,
                *constant_name = NULL;

static PyObject *like_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_Check(args[1]) || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "like_key(instr, index, tails)");
        return NULL;
    }
    PyObject *instr = args[0], *index = args[1], *tails = args[2];
    PyObject *operands = NULL, *ops = NULL, *opcode = NULL, *called = NULL, *shape = NULL,
             *attributes = NULL, *key = NULL, *result = NULL;
    void **words = NULL;
    PyObject *got = PyObject_GetAttr(instr, operands_name);
    if (!got) goto done;
    operands = PySequence_Fast(got, "operands must be a sequence");
    Py_DECREF(got);
    if (!operands) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(operands);
    ops = PyList_New(n);
    if (!ops) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *name = PySequence_Fast_GET_ITEM(operands, k);
        PyObject *defined = PyDict_GetItemWithError(index, name);
        if (!defined) {
            if (PyErr_Occurred()) goto done;
            result = PyTuple_Pack(2, Py_None, Py_None);  /* an operand not defined */
            goto done;
        }
        PyObject *s = PyObject_GetAttr(defined, shape_name);
        if (!s) goto done;
        PyList_SET_ITEM(ops, k, s);
    }
    opcode = PyObject_GetAttr(instr, opcode_name);
    called = opcode ? PyObject_GetAttr(instr, called_name) : NULL;
    if (!called) goto done;
    int takes = PyObject_IsTrue(called) == 0 && PyUnicode_Check(opcode) &&
        PyUnicode_Compare(opcode, constant_name) != 0;
    if (PyErr_Occurred()) goto done;
    for (Py_ssize_t k = 0; takes && k < PyTuple_GET_SIZE(tails); k++) {
        Py_ssize_t hit = PyUnicode_Tailmatch(opcode, PyTuple_GET_ITEM(tails, k), 0,
                                             PY_SSIZE_T_MAX, 1);
        if (hit < 0) goto done;
        if (hit) takes = 0;
    }
    if (!takes) {
        result = PyTuple_Pack(2, ops, Py_None);
        goto done;
    }
    shape = PyObject_GetAttr(instr, shape_name);
    got = shape ? PyObject_GetAttr(instr, attributes_name) : NULL;
    if (!got) goto done;
    attributes = PySequence_Fast(got, "attributes must be a sequence");
    Py_DECREF(got);
    if (!attributes) goto done;
    Py_ssize_t na = PySequence_Fast_GET_SIZE(attributes), nw = 2 + n + na;
    words = PyMem_Malloc(nw * sizeof(void *));
    if (!words) { PyErr_NoMemory(); goto done; }
    words[0] = shape;
    for (Py_ssize_t k = 0; k < n; k++) words[1 + k] = PyList_GET_ITEM(ops, k);
    words[1 + n] = NULL;
    for (Py_ssize_t k = 0; k < na; k++) {
        PyObject *a = PySequence_Fast_GET_ITEM(attributes, k);
        PyObject *akey = PyObject_GetAttr(a, key_name);
        if (!akey) goto done;
        int is_metadata = akey == metadata_name ||
            (PyUnicode_Check(akey) && PyUnicode_Compare(akey, metadata_name) == 0);
        Py_DECREF(akey);
        words[2 + n + k] = is_metadata ? NULL : (void *)a;
    }
    PyObject *packed = PyBytes_FromStringAndSize((const char *)words, nw * sizeof(void *));
    if (!packed) goto done;
    key = PyTuple_Pack(2, opcode, packed);
    Py_DECREF(packed);
    if (!key) goto done;
    result = PyTuple_Pack(2, ops, key);
done:
    PyMem_Free(words);
    Py_XDECREF(operands);
    Py_XDECREF(ops);
    Py_XDECREF(opcode);
    Py_XDECREF(called);
    Py_XDECREF(shape);
    Py_XDECREF(attributes);
    Py_XDECREF(key);
    return result;
}

/* graph_deps(instructions, controls_first) -> {name: [dependency names]}: transform._deps
 * (the reference): each instruction's distinct operands, then its control predecessors
 * (controls_first: the control predecessors last to first, then the operands), that are
 * instructions of the computation; None where two instructions share a name. */
static PyObject *graph_deps(PyObject *self, PyObject *args) {
    PyObject *instrs;
    int controls_first;
    if (!PyArg_ParseTuple(args, "O!p", &PyTuple_Type, &instrs, &controls_first)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(instrs);
    PyObject *pos = PyDict_New(), *names = PyList_New(n), *result = NULL, *out = NULL;
    Py_ssize_t *first = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *mark = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    Py_ssize_t capacity = 2 * n + 16, count = 0;
    Py_ssize_t *deps = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
    if (!pos || !names || !first || !mark || !deps) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int unique = name_positions(instrs, names, pos);
    if (unique < 0) goto done;
    if (!unique) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    out = PyDict_New();
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        first[i] = count;
        if (deps_of(PyTuple_GET_ITEM(instrs, i), i, pos, controls_first, &deps, &count,
                    &capacity, mark, NULL) < 0)
            goto done;
        PyObject *list = PyList_New(count - first[i]);
        if (!list) goto done;
        for (Py_ssize_t j = first[i]; j < count; j++)
            PyList_SET_ITEM(list, j - first[i], Py_NewRef(PyList_GET_ITEM(names, deps[j])));
        int stored = PyDict_SetItem(out, PyList_GET_ITEM(names, i), list);
        Py_DECREF(list);
        if (stored < 0) goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    Py_XDECREF(pos);
    Py_XDECREF(names);
    PyMem_Free(first);
    PyMem_Free(mark);
    PyMem_Free(deps);
    return result;
}

/* list_order(instructions, sizes) -> the instructions in transform.list_schedule's order
 * (the reference), or None where two share a name or a size is not below 2**60: of the ready
 * instructions, the one with the largest gain (the sizes of the operands it is the last user
 * of, less its own size), the first in the text of equal ones; a waiting instruction's gain
 * grows when an operand's other users have run, and it is pushed again. */
typedef struct { int64_t neg_gain; Py_ssize_t at; } Ready;

static void ready_push(Ready *h, Py_ssize_t *n, Ready r) {
    Py_ssize_t i = (*n)++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        Ready p = h[parent];
        if (p.neg_gain < r.neg_gain || (p.neg_gain == r.neg_gain && p.at <= r.at)) break;
        h[i] = p;
        i = parent;
    }
    h[i] = r;
}

static Ready ready_pop(Ready *h, Py_ssize_t *n) {
    Ready top = h[0], last = h[--(*n)];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && (h[c + 1].neg_gain < h[c].neg_gain ||
                           (h[c + 1].neg_gain == h[c].neg_gain && h[c + 1].at < h[c].at)))
            c++;
        if (last.neg_gain < h[c].neg_gain ||
                (last.neg_gain == h[c].neg_gain && last.at <= h[c].at))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static PyObject *list_order(PyObject *self, PyObject *args) {
    PyObject *instrs, *sizes_obj;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &instrs, &PyList_Type, &sizes_obj))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(instrs);
    if (PyList_GET_SIZE(sizes_obj) != n) {
        PyErr_SetString(PyExc_ValueError, "one size per instruction");
        return NULL;
    }
    PyObject *pos = PyDict_New(), *result = NULL;
    Py_ssize_t *first = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *mark = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    Py_ssize_t capacity = 2 * n + 16, count = 0;
    Py_ssize_t *deps = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
    int64_t *size = PyMem_Malloc((n + 1) * sizeof(int64_t));
    int64_t *gain = PyMem_Malloc((n + 1) * sizeof(int64_t));
    Py_ssize_t *missing = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *remaining = PyMem_Calloc(n + 2, sizeof(Py_ssize_t));
    Py_ssize_t *ufirst = PyMem_Calloc(n + 2, sizeof(Py_ssize_t)), *users = NULL;
    Py_ssize_t *order = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t)), done_count = 0;
    char *is_ready = PyMem_Calloc(n + 1, 1);
    Ready *heap = NULL;
    Py_ssize_t heap_n = 0, heap_cap = 2 * n + 16;
    if (!pos || !first || !mark || !deps || !size || !gain || !missing || !remaining ||
            !ufirst || !order || !is_ready) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    const int64_t limit = (int64_t)1 << 60;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyObject_GetAttr(PyTuple_GET_ITEM(instrs, i), name_name);
        if (!name) goto done;
        PyObject *k = PyLong_FromSsize_t(i);
        int stored = k ? PyDict_SetItem(pos, name, k) : -1;
        Py_DECREF(name);
        Py_XDECREF(k);
        if (stored < 0) goto done;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(sizes_obj, i), &overflow);
        if (v == -1 && PyErr_Occurred()) goto done;
        if (overflow || v < 0 || v >= limit) { result = Py_NewRef(Py_None); goto done; }
        size[i] = v;
    }
    if (PyDict_GET_SIZE(pos) != n) { result = Py_NewRef(Py_None); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        first[i] = count;
        if (deps_of(PyTuple_GET_ITEM(instrs, i), i, pos, 0, &deps, &count, &capacity, mark,
                    NULL) < 0)
            goto done;
        missing[i] = count - first[i];
    }
    first[n] = count;
    /* users: each instruction's distinct users (a dependency is listed once per user) */
    users = PyMem_Malloc((count + 1) * sizeof(Py_ssize_t));
    heap = PyMem_Malloc(heap_cap * sizeof(Ready));
    if (!users || !heap) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t j = 0; j < count; j++) ufirst[deps[j] + 2]++;
    for (Py_ssize_t i = 0; i < n; i++) ufirst[i + 2] += ufirst[i + 1];
    for (Py_ssize_t i = 0; i < n; i++)
        for (Py_ssize_t j = first[i]; j < first[i + 1]; j++) users[ufirst[deps[j] + 1]++] = i;
    for (Py_ssize_t i = 0; i < n; i++) remaining[i] = ufirst[i + 1] - ufirst[i];
#define MAKE_READY(x) do { \
        int64_t g_ = -size[x]; \
        for (Py_ssize_t j_ = first[x]; j_ < first[(x) + 1]; j_++) \
            if (remaining[deps[j_]] == 1) g_ += size[deps[j_]]; \
        gain[x] = g_; \
        is_ready[x] = 1; \
        if (heap_n == heap_cap) { \
            Ready *more_ = PyMem_Realloc(heap, 2 * heap_cap * sizeof(Ready)); \
            if (!more_) { PyErr_NoMemory(); goto done; } \
            heap = more_; heap_cap *= 2; \
        } \
        ready_push(heap, &heap_n, (Ready){-g_, (x)}); \
    } while (0)
    for (Py_ssize_t i = 0; i < n; i++)
        if (missing[i] == 0) MAKE_READY(i);
    while (heap_n) {
        Ready r = ready_pop(heap, &heap_n);
        Py_ssize_t x = r.at;
        if (!is_ready[x] || gain[x] != -r.neg_gain) continue;  /* stale */
        is_ready[x] = 0;
        order[done_count++] = x;
        for (Py_ssize_t j = first[x]; j < first[x + 1]; j++) {
            Py_ssize_t o = deps[j];
            if (--remaining[o] == 1)
                for (Py_ssize_t k = ufirst[o]; k < ufirst[o + 1]; k++) {
                    Py_ssize_t u = users[k];
                    if (!is_ready[u]) continue;
                    gain[u] += size[o];
                    if (heap_n == heap_cap) {
                        Ready *more = PyMem_Realloc(heap, 2 * heap_cap * sizeof(Ready));
                        if (!more) { PyErr_NoMemory(); goto done; }
                        heap = more;
                        heap_cap *= 2;
                    }
                    ready_push(heap, &heap_n, (Ready){-gain[u], u});
                }
        }
        for (Py_ssize_t k = ufirst[x]; k < ufirst[x + 1]; k++) {
            Py_ssize_t u = users[k];
            if (--missing[u] == 0) MAKE_READY(u);
        }
    }
#undef MAKE_READY
    result = PyList_New(done_count);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < done_count; i++)
        PyList_SET_ITEM(result, i, Py_NewRef(PyTuple_GET_ITEM(instrs, order[i])));
done:
    Py_XDECREF(pos);
    PyMem_Free(first); PyMem_Free(mark); PyMem_Free(deps); PyMem_Free(size);
    PyMem_Free(gain); PyMem_Free(missing); PyMem_Free(remaining); PyMem_Free(ufirst);
    PyMem_Free(users); PyMem_Free(order); PyMem_Free(is_ready); PyMem_Free(heap);
    return result;
}

/* depth_first(instructions, deps, roots) -> transform._depth_first's order (the reference):
 * from each root (roots: a set of names, or None: the instructions no deps list names), in
 * text order, then from every instruction, a depth-first walk that puts every dependency, in
 * deps order, before its user; None where two instructions share a name or a deps list
 * names one that is not an instruction here. */
static PyObject *depth_first(PyObject *self, PyObject *args) {
    PyObject *instrs, *deps_obj, *roots;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyTuple_Type, &instrs, &PyDict_Type, &deps_obj,
                          &roots))
        return NULL;
    if (roots != Py_None && !PyAnySet_Check(roots)) {
        PyErr_SetString(PyExc_TypeError, "roots: a set of names, or None");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(instrs);
    PyObject *pos = PyDict_New(), *names = PyList_New(n), *result = NULL;
    Py_ssize_t *first = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *order = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t)), done_count = 0;
    Py_ssize_t *work = PyMem_Calloc(2 * n + 1, sizeof(Py_ssize_t));
    char *flag = PyMem_Calloc(n + 1, 1);
    Py_ssize_t capacity = 2 * n + 16, count = 0;
    Py_ssize_t *deps = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
    if (!pos || !names || !first || !order || !work || !flag || !deps) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int unique = name_positions(instrs, names, pos);
    if (unique < 0) goto done;
    if (!unique || PyDict_GET_SIZE(deps_obj) != n) {
        result = Py_NewRef(Py_None);  /* names twice, or deps of other instructions */
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        first[i] = count;
        PyObject *list = PyDict_GetItemWithError(deps_obj, PyList_GET_ITEM(names, i));
        if (!list) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, PyList_GET_ITEM(names, i));
            goto done;
        }
        PyObject *seq = PySequence_Fast(list, "a deps list must be a sequence");
        if (!seq) goto done;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
        if (count + m > capacity) {
            capacity = 2 * (count + m);
            Py_ssize_t *more = PyMem_Realloc(deps, capacity * sizeof(Py_ssize_t));
            if (!more) { Py_DECREF(seq); PyErr_NoMemory(); goto done; }
            deps = more;
        }
        int outside = 0;
        for (Py_ssize_t j = 0; j < m && !outside; j++) {
            PyObject *at = PyDict_GetItemWithError(pos, PySequence_Fast_GET_ITEM(seq, j));
            if (!at) {
                if (PyErr_Occurred()) { Py_DECREF(seq); goto done; }
                outside = 1;
                break;
            }
            Py_ssize_t d = PyLong_AsSsize_t(at);
            deps[count++] = d;
            if (roots == Py_None) flag[d] |= 1;  /* named by a deps list: not a root */
        }
        Py_DECREF(seq);
        if (outside) { result = Py_NewRef(Py_None); goto done; }
    }
    first[n] = count;
    if (roots != Py_None)
        for (Py_ssize_t i = 0; i < n; i++) {
            int is_root = PySet_Contains(roots, PyList_GET_ITEM(names, i));
            if (is_root < 0) goto done;
            if (!is_root) flag[i] |= 1;
        }
    done_count = post_order_walk(n, first, deps, flag, work, order, NULL);
    result = PyList_New(done_count);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < done_count; i++)
        PyList_SET_ITEM(result, i, Py_NewRef(PyTuple_GET_ITEM(instrs, order[i])));
done:
    Py_XDECREF(pos);
    Py_XDECREF(names);
    PyMem_Free(first); PyMem_Free(order); PyMem_Free(work); PyMem_Free(flag); PyMem_Free(deps);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * unfuse's loops (transform._Expander), compiled; transform._inline_fusion, _merge_pass,
 * _merge_key and _needs_expansion are the references. An Instruction's fields are read from
 * their slots where it is exactly the class bind_instruction was given (with ir._FIELDS, in
 * that order), else by name; new ones are made with its Maker. */
static PyObject *fusion_name = NULL, *parameter_name = NULL, *transpose_name = NULL,
                *reshape_name = NULL, *reduce_name = NULL, *value_name = NULL,
                *controls_key = NULL, *empty_tuple = NULL;

/* Field k of instr, a new reference. */
static PyObject *field(PyObject *instr, int k) {
    Maker *mk = instruction_maker;
    if (fields_in_order && Py_IS_TYPE(instr, mk->type)) {
        PyObject *v = *(PyObject **)((char *)instr + mk->offsets[k]);
        if (v) return Py_NewRef(v);
    }
    return PyObject_GetAttr(instr, field_names[k]);
}

/* All of instr's fields into f (new references); 0, or -1 with f cleared. */
static int all_fields(PyObject *instr, PyObject **f) {
    for (int k = 0; k < F_COUNT; k++) {
        f[k] = field(instr, k);
        if (!f[k]) {
            for (int j = 0; j < k; j++) Py_CLEAR(f[j]);
            return -1;
        }
    }
    return 0;
}

static void clear_fields(PyObject **f) {
    for (int k = 0; k < F_COUNT; k++) Py_CLEAR(f[k]);
}

static int is_name(PyObject *s, PyObject *interned) {
    return s == interned || (PyUnicode_Check(s) && PyUnicode_Compare(s, interned) == 0);
}

static int need_maker(void) {
    if (instruction_maker) return 0;
    PyErr_SetString(PyExc_RuntimeError, "bind_instruction was not called");
    return -1;
}

/* Does a sequence of Attributes hold one with key `key`? 1, 0, or -1. */
static int has_attribute(PyObject *attributes, PyObject *key) {
    PyObject *seq = PySequence_Fast(attributes, "attributes must be a sequence");
    if (!seq) return -1;
    int found = 0;
    for (Py_ssize_t k = 0; !found && k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *akey = PyObject_GetAttr(PySequence_Fast_GET_ITEM(seq, k), key_name);
        if (!akey) { found = -1; break; }
        found = is_name(akey, key);
        Py_DECREF(akey);
    }
    Py_DECREF(seq);
    return found;
}

/* needs_expansion(instructions) -> bool: does a computation hold a fusion that calls a
 * computation, or an instruction with control predecessors? */
static PyObject *needs_expansion(PyObject *self, PyObject *instrs) {
    PyObject *seq = PySequence_Fast(instrs, "instructions must be a sequence");
    if (!seq) return NULL;
    int found = 0;
    for (Py_ssize_t k = 0; !found && k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *i = PySequence_Fast_GET_ITEM(seq, k);
        PyObject *opcode = field(i, F_OPCODE), *called = NULL, *controls = NULL;
        if (opcode && is_name(opcode, fusion_name)) {
            called = field(i, F_CALLED);
            found = called ? PyObject_IsTrue(called) : -1;
        }
        if (opcode && !found) {
            controls = field(i, F_CONTROLS);
            found = controls ? PyObject_IsTrue(controls) : -1;
        }
        if (!opcode) found = -1;
        Py_XDECREF(opcode);
        Py_XDECREF(called);
        Py_XDECREF(controls);
    }
    Py_DECREF(seq);
    if (found < 0) return NULL;
    return PyBool_FromLong(found);
}

static PyObject *merge_target_of(PyObject *instr, int mergeable, PyObject *seen,
                                 PyObject *never_merge, PyObject *unkeyed);

/* expand_fusion(instr, fused, outputs, taken, fresh, relayout, new_origin, out, shapes,
 * origins, computation, seen, never_merge, unkeyed) -> (the count of bitcasts made, that of
 * the ops merged into one before them, merge_target_of's, which are not made), or None (and
 * nothing done) where the fusion or a fused op has control predecessors: origins gains
 * (computation, name) -> origin of each op made; transform._inline_fusion, which see. */
static PyObject *expand_fusion(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 14 || !PyAnySet_Check(args[2]) ||
            !PySet_Check(args[3]) || !PyList_Check(args[7]) || !PyDict_Check(args[8]) ||
            !PyDict_Check(args[9]) || !PyDict_Check(args[11]) || !PyAnySet_Check(args[12])) {
        PyErr_SetString(PyExc_TypeError, "expand_fusion(instr, fused, outputs: set, "
                        "taken: set, fresh, relayout, new_origin, out: list, shapes: dict, "
                        "origins: dict, computation, seen: dict, never_merge: frozenset, "
                        "unkeyed)");
        return NULL;
    }
    PyObject *comp_name = args[10], *seen = args[11];
    long merged = 0;
    if (need_maker() < 0) return NULL;
    PyObject *instr = args[0], *outputs = args[2], *taken = args[3],
             *fresh = args[4], *relayout = args[5], *new_origin = args[6], *out = args[7],
             *shapes = args[8], *origins = args[9];
    PyObject *own[F_COUNT] = {0}, *f[F_COUNT] = {0}, *local = NULL, *result = NULL,
             *ops = NULL;
    PyObject *fused = PySequence_Fast(args[1], "fused instructions must be a sequence");
    if (!fused) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fused);
    if (all_fields(instr, own) < 0) { Py_DECREF(fused); return NULL; }
    /* The rare cases stay in Python: control edges on the fusion or inside it. */
    int rare = PyObject_IsTrue(own[F_CONTROLS]);
    if (rare == 0) rare = has_attribute(own[F_ATTRIBUTES], controls_key);
    for (Py_ssize_t k = 0; rare == 0 && k < n; k++) {
        PyObject *controls = field(PySequence_Fast_GET_ITEM(fused, k), F_CONTROLS);
        rare = controls ? PyObject_IsTrue(controls) : -1;
        Py_XDECREF(controls);
    }
    if (rare < 0) goto done;
    if (rare) { result = Py_NewRef(Py_None); goto done; }
    PyObject *iops = PySequence_Fast(own[F_OPERANDS], "operands must be a sequence");
    if (!iops) goto done;
    Py_SETREF(own[F_OPERANDS], iops);
    local = PyDict_New();
    if (!local) goto done;
    long bitcasts = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *g = NULL, *new_name = NULL;
        if (all_fields(PySequence_Fast_GET_ITEM(fused, k), f) < 0) goto done;
        if (is_name(f[F_OPCODE], parameter_name)) {
            /* local[f.name] = instr.operands[f.parameter_number or 0] */
            Py_ssize_t at = 0, count = PySequence_Fast_GET_SIZE(iops);
            int truthy = PyObject_IsTrue(f[F_PARAMETER_NUMBER]);
            if (truthy < 0) goto fail;
            if (truthy) {
                at = PyNumber_AsSsize_t(f[F_PARAMETER_NUMBER], PyExc_IndexError);
                if (at == -1 && PyErr_Occurred()) goto fail;
                if (at < 0) at += count;
            }
            if (at < 0 || at >= count) {
                PyErr_SetString(PyExc_IndexError, "tuple index out of range");
                goto fail;
            }
            if (PyDict_SetItem(local, f[F_NAME], PySequence_Fast_GET_ITEM(iops, at)) < 0)
                goto fail;
            clear_fields(f);
            continue;
        }
        int is_root = PyObject_IsTrue(f[F_IS_ROOT]);
        if (is_root < 0) goto fail;
        if (is_root) {
            new_name = Py_NewRef(own[F_NAME]);  /* the fusion's users keep reading it */
        } else {
            int clash = PySet_Contains(taken, f[F_NAME]);
            if (clash < 0) goto fail;
            new_name = clash ? PyObject_CallOneArg(fresh, f[F_NAME]) : Py_NewRef(f[F_NAME]);
            if (!new_name) goto fail;
        }
        if (PySet_Add(taken, new_name) < 0 || PyDict_SetItem(local, f[F_NAME], new_name) < 0)
            goto fail;
        PyObject *fops = PySequence_Fast(f[F_OPERANDS], "operands must be a sequence");
        if (!fops) goto fail;
        Py_ssize_t nops = PySequence_Fast_GET_SIZE(fops);
        ops = PyTuple_New(nops);
        for (Py_ssize_t j = 0; ops && j < nops; j++) {
            PyObject *o = PySequence_Fast_GET_ITEM(fops, j);
            PyObject *renamed = PyDict_GetItemWithError(local, o);
            if (!renamed) {
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, o);
                Py_CLEAR(ops);
                break;
            }
            PyTuple_SET_ITEM(ops, j, Py_NewRef(renamed));
        }
        Py_DECREF(fops);
        if (!ops) goto fail;
        PyObject *made[F_COUNT];
        memcpy(made, f, sizeof(made));
        made[F_NAME] = new_name;
        made[F_OPERANDS] = ops;
        made[F_IS_ROOT] = is_root ? own[F_IS_ROOT] : f[F_IS_ROOT];  /* f.is_root and ... */
        made[F_CONTROLS] = empty_tuple;
        g = PyObject_Vectorcall((PyObject *)instruction_maker, made, F_COUNT, NULL);
        Py_CLEAR(ops);
        if (!g) goto fail;
        if (nops && (is_name(f[F_OPCODE], transpose_name) ||
                     is_name(f[F_OPCODE], reshape_name))) {
            PyObject *bitcast = PyObject_CallFunctionObjArgs(relayout, g, shapes, NULL);
            if (!bitcast) goto fail;
            if (bitcast != Py_None) {
                Py_SETREF(g, bitcast);
                bitcasts++;
            } else {
                Py_DECREF(bitcast);
            }
        }
        int is_output = PySet_Contains(outputs, f[F_NAME]);
        if (is_output < 0) goto fail;
        /* an op equal to one before it reads as that one: its readers here read it */
        PyObject *target = merge_target_of(g, !is_output && !is_root, seen, args[12],
                                           args[13]);
        if (!target) goto fail;
        if (target != Py_None) {
            int stored = PyDict_SetItem(local, f[F_NAME], target);
            Py_DECREF(target);
            if (stored < 0) goto fail;
            merged++;
            Py_DECREF(g);
            Py_DECREF(new_name);
            clear_fields(f);
            continue;
        }
        Py_DECREF(target);
        if (PyList_Append(out, g) < 0) goto fail;
        PyObject *shape = field(g, F_SHAPE);
        int stored = shape ? PyDict_SetItem(shapes, new_name, shape) : -1;
        Py_XDECREF(shape);
        if (stored < 0) goto fail;
        PyObject *origin_args[3] = {own[F_NAME], f[F_NAME], is_output ? Py_True : Py_False};
        PyObject *origin = PyObject_Vectorcall(new_origin, origin_args, 3, NULL);
        PyObject *key = origin ? PyTuple_Pack(2, comp_name, new_name) : NULL;
        stored = key ? PyDict_SetItem(origins, key, origin) : -1;
        Py_XDECREF(key);
        Py_XDECREF(origin);
        if (stored < 0) goto fail;
        Py_DECREF(g);
        Py_DECREF(new_name);
        clear_fields(f);
        continue;
    fail:
        Py_XDECREF(g);
        Py_XDECREF(new_name);
        clear_fields(f);
        goto done;
    }
    result = Py_BuildValue("(ll)", bitcasts, merged);
done:
    clear_fields(own);
    Py_XDECREF(local);
    Py_DECREF(fused);
    return result;
}

/* Is instr an op never merged (opcode in never_merge, or a caller other than reduce)? 1, 0,
 * or -1. */
static int never_merged(PyObject *instr, PyObject *never_merge) {
    PyObject *opcode = field(instr, F_OPCODE), *called = NULL;
    if (!opcode) return -1;
    int never = PySet_Contains(never_merge, opcode);
    if (never == 0) {
        called = field(instr, F_CALLED);
        int calls = called ? PyObject_IsTrue(called) : -1;
        never = calls < 0 ? -1 : calls && !is_name(opcode, reduce_name);
    }
    Py_DECREF(opcode);
    Py_XDECREF(called);
    return never;
}

/* merge_key(instr, never_merge, unkeyed) -> transform._merge_key's key: None for an opcode
 * in never_merge or a caller other than reduce, else (opcode, str(shape), operands,
 * ((key, value) of each attribute whose key is not in unkeyed), literal). */
static PyObject *merge_key_of(PyObject *instr, PyObject *never_merge, PyObject *unkeyed) {
    PyObject *f[F_COUNT] = {0}, *attrs = NULL, *seq = NULL, *text = NULL, *result = NULL;
    int never = never_merged(instr, never_merge);
    if (never < 0) return NULL;
    if (never) return Py_NewRef(Py_None);
    f[F_OPCODE] = field(instr, F_OPCODE);
    if (!f[F_OPCODE]) return NULL;
    f[F_ATTRIBUTES] = field(instr, F_ATTRIBUTES);
    seq = f[F_ATTRIBUTES] ? PySequence_Fast(f[F_ATTRIBUTES], "attributes must be a sequence")
                          : NULL;
    if (!seq) goto done;
    Py_ssize_t na = PySequence_Fast_GET_SIZE(seq), kept = 0;
    attrs = PyTuple_New(na);
    if (!attrs) goto done;
    for (Py_ssize_t k = 0; k < na; k++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, k);
        PyObject *akey = PyObject_GetAttr(a, key_name);
        if (!akey) goto done;
        int skip = PySequence_Contains(unkeyed, akey);
        PyObject *avalue = skip == 0 ? PyObject_GetAttr(a, value_name) : NULL;
        PyObject *pair = avalue ? PyTuple_Pack(2, akey, avalue) : NULL;
        Py_DECREF(akey);
        Py_XDECREF(avalue);
        if (skip < 0 || (!skip && !pair)) goto done;
        if (!skip) PyTuple_SET_ITEM(attrs, kept++, pair);
    }
    if (kept < na && _PyTuple_Resize(&attrs, kept) < 0) goto done;
    f[F_SHAPE] = field(instr, F_SHAPE);
    text = f[F_SHAPE] ? PyObject_Str(f[F_SHAPE]) : NULL;
    f[F_OPERANDS] = text ? field(instr, F_OPERANDS) : NULL;
    f[F_LITERAL] = f[F_OPERANDS] ? field(instr, F_LITERAL) : NULL;
    if (!f[F_LITERAL]) goto done;
    result = PyTuple_Pack(5, f[F_OPCODE], text, f[F_OPERANDS], attrs, f[F_LITERAL]);
done:
    clear_fields(f);
    Py_XDECREF(seq);
    Py_XDECREF(attrs);
    Py_XDECREF(text);
    return result;
}

static PyObject *merge_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge_key(instr, never_merge: frozenset, unkeyed)");
        return NULL;
    }
    return merge_key_of(args[0], args[1], args[2]);
}

/* Where the op `instr` merges: the name of the first op before it with its merge key, where
 * one came first and `mergeable` (it is from inside a fusion and not its output, nor a root);
 * else None, and its key recorded where it is the first. `seen` holds, per (opcode,
 * operands), the first op until a second comes, then a dict of full keys to names: the full
 * key (str(shape), the attributes) is made only for ops whose pair came before. A new
 * reference; NULL with an exception. */
static PyObject *merge_target_of(PyObject *instr, int mergeable, PyObject *seen,
                                 PyObject *never_merge, PyObject *unkeyed) {
    int never = never_merged(instr, never_merge);
    if (never < 0) return NULL;
    if (never) return Py_NewRef(Py_None);
    PyObject *opcode = field(instr, F_OPCODE), *operands = field(instr, F_OPERANDS);
    PyObject *pair = opcode && operands ? PyTuple_Pack(2, opcode, operands) : NULL;
    Py_XDECREF(opcode);
    Py_XDECREF(operands);
    if (!pair) return NULL;
    PyObject *result = NULL, *key = NULL, *name = NULL;
    PyObject *entry = PyDict_GetItemWithError(seen, pair);
    if (!entry) {
        if (!PyErr_Occurred() && PyDict_SetItem(seen, pair, instr) == 0)
            result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(entry);
    if (!PyDict_Check(entry)) {  /* the first op of the pair: its key now */
        PyObject *first = entry, *first_key = merge_key_of(first, never_merge, unkeyed);
        PyObject *first_name = first_key ? field(first, F_NAME) : NULL;
        entry = first_name ? PyDict_New() : NULL;
        int stored = entry ? PyDict_SetItem(entry, first_key, first_name) : -1;
        if (stored == 0) stored = PyDict_SetItem(seen, pair, entry);
        Py_DECREF(first);
        Py_XDECREF(first_key);
        Py_XDECREF(first_name);
        if (stored < 0) goto done;
    }
    key = merge_key_of(instr, never_merge, unkeyed);
    name = key ? field(instr, F_NAME) : NULL;
    if (!name) goto done;
    PyObject *target = PyDict_GetItemWithError(entry, key);  /* borrowed */
    if (target)
        result = Py_NewRef(mergeable ? target : Py_None);
    else if (!PyErr_Occurred() && PyDict_SetItem(entry, key, name) == 0)
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(entry);
    Py_XDECREF(key);
    Py_XDECREF(name);
    Py_DECREF(pair);
    return result;
}

/* merge_target(instr, mergeable, seen, never_merge, unkeyed) -> the name instr merges into,
 * or None: transform._Merger.target, compiled (seen: as merge_target_of keeps it). */
static PyObject *merge_target(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyDict_Check(args[2]) || !PyAnySet_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "merge_target(instr, mergeable, seen: dict, "
                        "never_merge: frozenset, unkeyed)");
        return NULL;
    }
    if (need_maker() < 0) return NULL;
    int mergeable = PyObject_IsTrue(args[1]);
    if (mergeable < 0) return NULL;
    return merge_target_of(args[0], mergeable, args[2], args[3], args[4]);
}

static PyMethodDef methods[] = {
    {"read_line", (PyCFunction)(void (*)(void))read_line, METH_FASTCALL,
     "read_line(line, attribute_of, Attribute[, shapes, memo, configs]) -> (is_root, name, "
     "shape_text, opcode, inner, operands, attributes), None, or (given the three tables) the "
     "Instruction where nothing needs decoding in Python: parser._read_line, compiled."},
    {"bind_parser", bind_parser, METH_O,
     "bind_parser(keys): the attribute keys whose values the parser decodes in Python."},
    {"bind_instruction", bind_instruction, METH_VARARGS,
     "bind_instruction(Instruction, field_names) -> the Maker of Instruction (ir."
     "_new_instruction, compiled), which read_line makes its Instructions with."},
    {"like_key", (PyCFunction)(void (*)(void))like_key, METH_FASTCALL,
     "like_key(instr, index, tails) -> (ops, key): verify._like_key, compiled."},
    {"graph_order", graph_order, METH_VARARGS,
     "graph_order(instructions, kind) -> list: bfs_schedule's instructions (kind 0) or "
     "post_order_names' names (kind 1), compiled; kind 2: (kind 0's, the post order's names "
     "for the instructions in that order, or None where control edges order them); None "
     "where two share a name."},
    {"depth_first", depth_first, METH_VARARGS,
     "depth_first(instructions, deps, roots) -> transform._depth_first's order, compiled; "
     "None where two share a name or a deps list names one not here."},
    {"list_order", list_order, METH_VARARGS,
     "list_order(instructions, sizes) -> transform.list_schedule's order, compiled; None "
     "where two share a name or a size reaches 2**60."},
    {"graph_deps", graph_deps, METH_VARARGS,
     "graph_deps(instructions, controls_first) -> {name: dependency names}: transform._deps, "
     "compiled; None where two share a name."},
    {"needs_expansion", needs_expansion, METH_O,
     "needs_expansion(instructions) -> bool: transform._needs_expansion, compiled."},
    {"expand_fusion", (PyCFunction)(void (*)(void))expand_fusion, METH_FASTCALL,
     "expand_fusion(instr, fused, outputs, taken, fresh, relayout, new_origin, out, shapes, "
     "origins, computation, seen, never_merge, unkeyed) -> (bitcasts made, ops merged), or "
     "None: transform._inline_fusion, compiled."},
    {"merge_key", (PyCFunction)(void (*)(void))merge_key, METH_FASTCALL,
     "merge_key(instr, never_merge, unkeyed) -> key or None: transform._merge_key, compiled."},
    {"merge_target", (PyCFunction)(void (*)(void))merge_target, METH_FASTCALL,
     "merge_target(instr, mergeable, seen, never_merge, unkeyed) -> the name of the op instr "
     "merges into, or None: transform._Merger.target, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "hloscope.hlo._speedups",
    "Hot paths of the hlo layer, compiled: the parser's line match, the constructors, the "
    "schedulers' graph orders and verify's memo key (parser._read_line, ir._new_instruction, "
    "transform._bfs_schedule and _post_order_names, verify._like_key are the references).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    operands_name = PyUnicode_InternFromString("operands");
    controls_name = PyUnicode_InternFromString("control_predecessors");
    name_name = PyUnicode_InternFromString("name");
    shape_name = PyUnicode_InternFromString("shape");
    opcode_name = PyUnicode_InternFromString("opcode");
    called_name = PyUnicode_InternFromString("called_computations");
    attributes_name = PyUnicode_InternFromString("attributes");
    key_name = PyUnicode_InternFromString("key");
    metadata_name = PyUnicode_InternFromString("metadata");
    constant_name = PyUnicode_InternFromString("constant");
    for (int k = 0; k < F_COUNT; k++)
        if (!(field_names[k] = PyUnicode_InternFromString(field_texts[k]))) return NULL;
    fusion_name = PyUnicode_InternFromString("fusion");
    parameter_name = PyUnicode_InternFromString("parameter");
    transpose_name = PyUnicode_InternFromString("transpose");
    reshape_name = PyUnicode_InternFromString("reshape");
    reduce_name = PyUnicode_InternFromString("reduce");
    value_name = PyUnicode_InternFromString("value");
    controls_key = PyUnicode_InternFromString("control-predecessors");
    empty_tuple = PyTuple_New(0);
    if (!fusion_name || !parameter_name || !transpose_name || !reshape_name || !reduce_name ||
            !value_name || !controls_key || !empty_tuple)
        return NULL;
    if (!operands_name || !controls_name || !name_name || !shape_name || !opcode_name ||
            !called_name || !attributes_name || !key_name || !metadata_name || !constant_name ||
            PyType_Ready(&MakerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Maker", (PyObject *)&MakerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
