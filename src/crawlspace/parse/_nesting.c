/*
 * parse/html.py's nesting_cut in C, to the character (tests/unit/test_html_nesting.py holds the
 * two to each other): where to cut a document so that parsing it stays within the nesting
 * budget. On a large page the Python scan cost ~0.4 ms of its ~4 ms in the parse worker
 * (benchmarks/README.md, "Near the limit"); this is one pass over the characters.
 *
 * The scan finds what the regex <(/?)([A-Za-z][A-Za-z0-9]{0,9}) finds, left to right without
 * overlaps: a tag's name is at most ten ASCII letters and digits, lower-cased. A start tag that is
 * not void opens an element; an end tag closes the innermost open element of its name and every
 * element opened after it, and is ignored when none of its name is open. The work is the sum,
 * over tags, of the open elements after each; the cut is at the "<" of the tag that takes the
 * work past the budget.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A tag name as a number: base 37 over [0-9a-z] (digit value + 1), at most 10 digits < 2^53. */
typedef uint64_t Name;

static inline int name_char(Py_UCS4 ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static inline uint64_t char_value(Py_UCS4 ch) {
    if (ch >= '0' && ch <= '9') return ch - '0' + 1;
    if (ch >= 'A' && ch <= 'Z') ch += 'a' - 'A';
    return ch - 'a' + 11;
}

static Name name_of(const char *text) {
    Name name = 0;
    for (; *text; text++) name = name * 37 + char_value((Py_UCS4)*text);
    return name;
}

static const char *VOID_TAGS[] = {"area", "base", "br",     "col",   "embed", "hr",
                                  "img",  "input", "link",  "meta",  "param", "source",
                                  "track", "wbr",  "keygen", "frame", NULL};
static Name void_names[16];

static int is_void(Name name) {
    for (int i = 0; VOID_TAGS[i] != NULL; i++) {
        if (void_names[i] == name) return 1;
    }
    return 0;
}

/* Open elements per name: open addressing, grown at half full. */
typedef struct {
    Name *keys;
    Py_ssize_t *counts;
    size_t size;
    size_t used;
} Counts;

static Py_ssize_t *slot(Counts *c, Name name) {
    size_t mask = c->size - 1, i = (size_t)(name * 0x9E3779B97F4A7C15ULL >> 20) & mask;
    while (c->counts[i] >= 0 && c->keys[i] != name) i = (i + 1) & mask;
    if (c->counts[i] < 0) { /* a new name */
        c->keys[i] = name;
        c->counts[i] = 0;
        c->used++;
    }
    return &c->counts[i];
}

static int counts_init(Counts *c, size_t size) {
    c->size = size;
    c->used = 0;
    c->keys = PyMem_Malloc(sizeof(Name) * size);
    c->counts = PyMem_Malloc(sizeof(Py_ssize_t) * size);
    if (c->keys == NULL || c->counts == NULL) return -1;
    for (size_t i = 0; i < size; i++) c->counts[i] = -1;
    return 0;
}

static void counts_free(Counts *c) {
    PyMem_Free(c->keys);
    PyMem_Free(c->counts);
}

static int counts_grow(Counts *c) {
    Counts bigger;
    if (counts_init(&bigger, c->size * 2) < 0) {
        counts_free(&bigger);
        return -1;
    }
    for (size_t i = 0; i < c->size; i++) {
        if (c->counts[i] >= 0) *slot(&bigger, c->keys[i]) = c->counts[i];
    }
    counts_free(c);
    *c = bigger;
    return 0;
}

typedef struct {
    Name *names;
    Py_ssize_t depth;
    Py_ssize_t capacity;
} Stack;

/* Returns the cut, -1 for none, -2 with a Python error set. */
static Py_ssize_t scan(PyObject *html, long long budget) {
    int kind = PyUnicode_KIND(html);
    const void *data = PyUnicode_DATA(html);
    Py_ssize_t length = PyUnicode_GET_LENGTH(html);
    Counts open;
    Stack stack = {NULL, 0, 0};
    Py_ssize_t result = -1;
    long long work = 0;
    if (counts_init(&open, 64) < 0) goto oom;
    for (Py_ssize_t i = 0; i + 1 < length; i++) {
        if (PyUnicode_READ(kind, data, i) != '<') continue;
        Py_ssize_t j = i + 1;
        int closing = PyUnicode_READ(kind, data, j) == '/';
        j += closing;
        if (j >= length) break;
        Py_UCS4 first = PyUnicode_READ(kind, data, j);
        if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z'))) continue;
        Name name = 0;
        Py_ssize_t end = j;
        while (end < length && end - j < 10 && name_char(PyUnicode_READ(kind, data, end))) {
            name = name * 37 + char_value(PyUnicode_READ(kind, data, end));
            end++;
        }
        if (closing) {
            Py_ssize_t *count = slot(&open, name);
            if (*count > 0) {
                while (stack.depth > 0) {
                    Name top = stack.names[--stack.depth];
                    (*slot(&open, top))--;
                    if (top == name) break;
                }
            }
        } else if (!is_void(name)) {
            if (stack.depth == stack.capacity) {
                Py_ssize_t capacity = stack.capacity ? 2 * stack.capacity : 256;
                Name *grown = PyMem_Realloc(stack.names, sizeof(Name) * (size_t)capacity);
                if (grown == NULL) goto oom;
                stack.names = grown;
                stack.capacity = capacity;
            }
            stack.names[stack.depth++] = name;
            (*slot(&open, name))++;
        }
        if (2 * open.used >= open.size && counts_grow(&open) < 0) goto oom;
        work += stack.depth;
        if (work > budget) {
            result = i;
            break;
        }
        i = end - 1; /* the next match starts after this one */
    }
    goto done;
oom:
    PyErr_NoMemory();
    result = -2;
done:
    counts_free(&open);
    PyMem_Free(stack.names);
    return result;
}

static PyObject *nesting_cut(PyObject *self, PyObject *args) {
    PyObject *html;
    long long budget;
    if (!PyArg_ParseTuple(args, "UL:nesting_cut", &html, &budget)) return NULL;
    Py_ssize_t cut = scan(html, budget);
    if (cut == -2) return NULL;
    if (cut < 0) Py_RETURN_NONE;
    return PyLong_FromSsize_t(cut);
}

static PyMethodDef methods[] = {
    {"nesting_cut", nesting_cut, METH_VARARGS,
     "nesting_cut(html, budget) -> where to cut html (None: nowhere)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_nesting", "parse/html.py's nesting scan in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__nesting(void) {
    for (int i = 0; VOID_TAGS[i] != NULL; i++) void_names[i] = name_of(VOID_TAGS[i]);
    return PyModule_Create(&module);
}
