/*
 * parse/html.py's collapse in C, to the character (tests/unit/test_text_collapse.py holds the
 * two to each other): ``" ".join(text.split())``, a page's visible text with every run of
 * whitespace made one space and none at either end. On python3.11-doc (26,000 characters of
 * text a page) the split and join cost ~0.2-0.4 ms of a parse worker's page, building one str
 * per word; this is one pass that writes the answer once (benchmarks/README.md, "Near the
 * limit").
 *
 * Whitespace is what str.split() splits on (Py_UNICODE_ISSPACE): ASCII's \t \n \v \f \r, space
 * and \x1c-\x1f, and Unicode's (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Py_UNICODE_ISSPACE for the one-byte kind, looked up once at import. */
static unsigned char latin1_space[256];

#define COLLAPSE(TYPE, IS_SPACE)                                                          \
    do {                                                                                  \
        const TYPE *in = (const TYPE *)data;                                              \
        TYPE *out = (TYPE *)buffer;                                                       \
        Py_ssize_t i = 0;                                                                 \
        while (i < n) {                                                                   \
            while (i < n && IS_SPACE(in[i])) i++;                                         \
            if (i == n) break;                                                            \
            if (written) out[written++] = ' ';                                            \
            while (i < n && !IS_SPACE(in[i])) out[written++] = in[i++];                   \
        }                                                                                 \
    } while (0)

#define LATIN1_SPACE(ch) (latin1_space[(ch)])
#define UCS_SPACE(ch) (Py_UNICODE_ISSPACE(ch))

static PyObject *collapse(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "collapse() takes a str");
        return NULL;
    }
    if (PyUnicode_READY(text) < 0) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0) return PyUnicode_FromStringAndSize("", 0);
    void *buffer = PyMem_Malloc((size_t)n * (size_t)kind);
    if (buffer == NULL) return PyErr_NoMemory();
    Py_ssize_t written = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        COLLAPSE(Py_UCS1, LATIN1_SPACE);
    } else if (kind == PyUnicode_2BYTE_KIND) {
        COLLAPSE(Py_UCS2, UCS_SPACE);
    } else {
        COLLAPSE(Py_UCS4, UCS_SPACE);
    }
    /* Narrowed to the answer's widest character (a wide space may have been the widest). */
    PyObject *result = PyUnicode_FromKindAndData(kind, buffer, written);
    PyMem_Free(buffer);
    return result;
}

static PyMethodDef methods[] = {
    {"collapse", collapse, METH_O,
     "collapse(text) -> ' '.join(text.split()), in one pass"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_text", "parse/html.py's whitespace collapse in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__text(void) {
    for (int ch = 0; ch < 256; ch++) latin1_space[ch] = Py_UNICODE_ISSPACE(ch) ? 1 : 0;
    return PyModule_Create(&module);
}
