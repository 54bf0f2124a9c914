/*
 * The word-pair hashes of a page's text, its 64-bit simhash and its bottom-k sketch, in one pass
 * over the text: what dedup/simhash.py computes in Python, to the bit (tests/unit/test_dedup.py
 * holds the two to each other on random text).
 *
 * Why C: on every fetched page this was the parse worker's largest cost after the HTML parse
 * itself (benchmarks/README.md, "Near the limit"): a regex match, an encode and two hash calls
 * per word, each a Python object. No library does this recipe: Python's simhash packages take
 * ready-made features and none builds the sketch from the same hashes.
 *
 * The recipe (scheme "xxh64-seeded-v4"): the words are the runs of characters that Python's
 * regex \w matches (Py_UNICODE_ISALNUM or '_') in the already lower-cased text, each encoded as
 * UTF-8 (a lone surrogate as its three bytes, as "surrogatepass" does). A word's hash is XXH64
 * of its bytes with seed 0; a shingle's hash is XXH64 of its last word seeded with the hash of
 * the shingle of the words before it. XXH64 is written here from its specification
 * (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md) and checked against the
 * xxhash package in the tests.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t P1 = 0x9E3779B185EBCA87ULL;
static const uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t P3 = 0x165667B19E3779F9ULL;
static const uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
static const uint64_t P5 = 0x27D4EB2F165667C5ULL;

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian reads whatever the host's byte order. */
static inline uint64_t read64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t read32(const unsigned char *p) {
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24);
}

static inline uint64_t xxh_round(uint64_t acc, uint64_t input) {
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t xxh_merge(uint64_t acc, uint64_t val) {
    acc ^= xxh_round(0, val);
    return acc * P1 + P4;
}

static uint64_t xxh64(const unsigned char *p, size_t len, uint64_t seed) {
    const unsigned char *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const unsigned char *limit = end - 32;
        do {
            v1 = xxh_round(v1, read64(p));
            v2 = xxh_round(v2, read64(p + 8));
            v3 = xxh_round(v3, read64(p + 16));
            v4 = xxh_round(v4, read64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)len;
    while (p + 8 <= end) {
        h ^= xxh_round(0, read64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= read32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= (*p) * P5;
        h = rotl64(h, 11) * P1;
        p++;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* ASCII is most of most pages' text: a table for it, the Unicode database for the rest. */
static unsigned char ascii_word[128];

static void init_ascii_word(void) {
    for (int ch = 0; ch < 128; ch++) {
        ascii_word[ch] = (unsigned char)((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                                         (ch >= 'A' && ch <= 'Z') || ch == '_');
    }
}

static inline int is_word(Py_UCS4 ch) {
    return ch < 128 ? ascii_word[ch] : Py_UNICODE_ISALNUM(ch);
}

static inline unsigned char *put_utf8(unsigned char *out, Py_UCS4 ch) {
    if (ch < 0x80) {
        *out++ = (unsigned char)ch;
    } else if (ch < 0x800) {
        *out++ = (unsigned char)(0xC0 | (ch >> 6));
        *out++ = (unsigned char)(0x80 | (ch & 0x3F));
    } else if (ch < 0x10000) {
        *out++ = (unsigned char)(0xE0 | (ch >> 12));
        *out++ = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (ch & 0x3F));
    } else {
        *out++ = (unsigned char)(0xF0 | (ch >> 18));
        *out++ = (unsigned char)(0x80 | ((ch >> 12) & 0x3F));
        *out++ = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (ch & 0x3F));
    }
    return out;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The words' UTF-8 in one buffer and each word's end offset in it; returns the word count, or
 * -1 with MemoryError set. */
static Py_ssize_t split_words(PyObject *text, unsigned char **bytes, Py_ssize_t **ends) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    unsigned char *out = PyMem_Malloc(4 * (size_t)length + 1);
    Py_ssize_t *stops = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)length / 2 + 1));
    if (out == NULL || stops == NULL) {
        PyMem_Free(out);
        PyMem_Free(stops);
        PyErr_NoMemory();
        return -1;
    }
    unsigned char *w = out;
    Py_ssize_t words = 0;
    int inside = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (is_word(ch)) {
            w = put_utf8(w, ch);
            inside = 1;
        } else if (inside) {
            stops[words++] = w - out;
            inside = 0;
        }
    }
    if (inside) stops[words++] = w - out;
    *bytes = out;
    *ends = stops;
    return words;
}

/* One hash per shingle occurrence (per word when there are fewer words than a shingle). */
static uint64_t *shingle_hashes(const unsigned char *bytes, const Py_ssize_t *ends,
                                Py_ssize_t words, Py_ssize_t shingle, Py_ssize_t *count) {
    uint64_t *hashes = PyMem_Malloc(sizeof(uint64_t) * ((size_t)words + 1));
    if (hashes == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < words; i++) {
        Py_ssize_t start = i ? ends[i - 1] : 0;
        hashes[i] = xxh64(bytes + start, (size_t)(ends[i] - start), 0);
    }
    Py_ssize_t n = words;
    if (words >= shingle) {
        /* Round r: hashes[j] becomes the hash of words j..j+r, word j+r seeded with words
         * j..j+r-1's (the same order of calls as the Python version's maps). */
        for (Py_ssize_t r = 1; r < shingle; r++) {
            n = words - r;
            for (Py_ssize_t j = 0; j < n; j++) {
                Py_ssize_t k = j + r, start = ends[k - 1];
                hashes[j] = xxh64(bytes + start, (size_t)(ends[k] - start), hashes[j]);
            }
        }
    }
    *count = n;
    return hashes;
}

/* Bit i is 1 when more than half of the hashes have bit i set. Eight accumulators of eight byte
 * lanes count the 64 bit positions (lane k of accumulator j: bit 8k + j), 8 adds per hash instead
 * of 64; a lane holds 255 at most, so they are emptied into the totals every 255 hashes. */
static uint64_t majority_bits(const uint64_t *hashes, Py_ssize_t n) {
    const uint64_t lanes = 0x0101010101010101ULL;
    Py_ssize_t counts[64] = {0};
    for (Py_ssize_t done = 0; done < n;) {
        uint64_t acc[8] = {0};
        Py_ssize_t stop = n - done > 255 ? done + 255 : n;
        for (; done < stop; done++) {
            uint64_t h = hashes[done];
            for (int j = 0; j < 8; j++) acc[j] += (h >> j) & lanes;
        }
        for (int j = 0; j < 8; j++) {
            for (int k = 0; k < 8; k++) counts[8 * k + j] += (Py_ssize_t)((acc[j] >> (8 * k)) & 0xFF);
        }
    }
    uint64_t result = 0;
    for (int bit = 0; bit < 64; bit++) {
        if (2 * counts[bit] > n) result |= (uint64_t)1 << bit;
    }
    return result;
}

/* The first k distinct of ``values`` (ascending; overwritten), as a tuple of ints. */
static PyObject *first_distinct(uint64_t *values, Py_ssize_t n, Py_ssize_t k) {
    uint64_t *kept = values;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n && m < k; i++) {
        if (i == 0 || values[i] != values[i - 1]) kept[m++] = values[i];
    }
    PyObject *out = PyTuple_New(m);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *value = PyLong_FromUnsignedLongLong(kept[i]);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, value);
    }
    return out;
}

/* The k smallest distinct hashes, ascending. Hashes are uniform, so about 2k of them fall
 * below the top-byte threshold chosen here, and when at least k distinct ones do, they are
 * exactly the k smallest (every hash above the threshold is larger than all below it): a sort
 * of ~2k values instead of all n. Otherwise (short texts, bad luck) all n are sorted. */
static PyObject *smallest_distinct(uint64_t *hashes, Py_ssize_t n, Py_ssize_t k) {
    if (k == 0) return PyTuple_New(0);
    if (n > 4 * k) {
        uint64_t top = (uint64_t)((256 * 2 * k + n - 1) / n); /* ceil(512k / n) <= 128 */
        uint64_t *picked = PyMem_Malloc(sizeof(uint64_t) * (size_t)n);
        if (picked == NULL) return PyErr_NoMemory();
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if ((hashes[i] >> 56) < top) picked[m++] = hashes[i];
        }
        PyObject *result = NULL;
        if (m >= k) {
            qsort(picked, (size_t)m, sizeof(uint64_t), cmp_u64);
            Py_ssize_t distinct = 0;
            for (Py_ssize_t i = 0; i < m && distinct < k; i++) {
                distinct += i == 0 || picked[i] != picked[i - 1];
            }
            if (distinct >= k) result = first_distinct(picked, m, k);
        }
        PyMem_Free(picked);
        if (result != NULL || PyErr_Occurred()) return result;
    }
    qsort(hashes, (size_t)n, sizeof(uint64_t), cmp_u64);
    return first_distinct(hashes, n, k);
}

static PyObject *simhash_sketch(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t shingle, k;
    if (!PyArg_ParseTuple(args, "Unn:simhash_sketch", &text, &shingle, &k)) return NULL;
    if (shingle < 1 || k < 0) {
        PyErr_SetString(PyExc_ValueError, "shingle must be at least 1 and k at least 0");
        return NULL;
    }
    unsigned char *bytes = NULL;
    Py_ssize_t *ends = NULL;
    Py_ssize_t words = split_words(text, &bytes, &ends);
    if (words < 0) return NULL;
    Py_ssize_t n = 0;
    uint64_t *hashes = shingle_hashes(bytes, ends, words, shingle, &n);
    PyMem_Free(bytes);
    PyMem_Free(ends);
    if (hashes == NULL) return NULL;
    uint64_t simhash = n ? majority_bits(hashes, n) : 0;
    PyObject *smallest = smallest_distinct(hashes, n, k);
    PyMem_Free(hashes);
    if (smallest == NULL) return NULL;
    return Py_BuildValue("(KNn)", (unsigned long long)simhash, smallest, n);
}

static PyObject *xxh64_py(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "y*|K:xxh64", &data, &seed)) return NULL;
    uint64_t h = xxh64(data.buf, (size_t)data.len, seed);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef methods[] = {
    {"simhash_sketch", simhash_sketch, METH_VARARGS,
     "simhash_sketch(lowered_text, shingle, k) -> (simhash, k smallest distinct shingle "
     "hashes, shingle count)"},
    {"xxh64", xxh64_py, METH_VARARGS, "xxh64(data, seed=0) -> XXH64 of data (for the tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shingles", "Word-pair hashes, simhash and sketch in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__shingles(void) {
    init_ascii_word();
    return PyModule_Create(&module);
}
