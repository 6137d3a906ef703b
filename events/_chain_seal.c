/* The hash chain's writer loop, compiled: clawlog.events._chain_seal.

   seal(prev, rows, start) hashes rows[start:] in place, each linked to the one before it,
   exactly as clawlog.events.chain.link encodes an event (chain version 1: see chain.py's
   docstring), and returns the last hash. A row is the tuple the SQLite writer inserts:

       (position, stream, version, type, schema_version, payload, recorded_at)
       (... the same, correlation_id, causation_id, actor, idempotency_key)

   and becomes the same tuple with its hash (a 32-byte bytearray) appended. The Python
   loop it replaces (sqlite_writer._Plan.seal) pays about 0.75 us a row in hashlib's
   per-call work and in building the hashed bytes; here one call hashes a batch with
   OpenSSL's SHA-256 (its SHA-NI code where the CPU has it) and no temporary objects but
   the hash. Bad values raise as the Python encoding would (TypeError, OverflowError,
   UnicodeEncodeError, ValueError) and leave the rows before the bad one hashed. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init and friends: the fastest one-shot path */
#include <openssl/sha.h>

#define HASH_SIZE 32

static void put_be64(unsigned char *out, unsigned long long value) {
    for (int i = 7; i >= 0; i--) {
        out[i] = (unsigned char)(value & 0xff);
        value >>= 8;
    }
}

static void put_be32(unsigned char *out, unsigned long value) {
    out[0] = (unsigned char)(value >> 24);
    out[1] = (unsigned char)(value >> 16);
    out[2] = (unsigned char)(value >> 8);
    out[3] = (unsigned char)value;
}

/* A u64 field: an int from 0 to 2**64 - 1 (struct's "Q"). */
static int put_u64(unsigned char *out, PyObject *value) {
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "an integer is required, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    unsigned long long number = PyLong_AsUnsignedLongLong(value);
    if (number == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    put_be64(out, number);
    return 0;
}

/* A text field: u32 length, then UTF-8. */
static int hash_text(SHA256_CTX *ctx, PyObject *value) {
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a str is required, not %.100s", Py_TYPE(value)->tp_name);
        return -1;
    }
    Py_ssize_t size;
    const char *data = PyUnicode_AsUTF8AndSize(value, &size);
    if (data == NULL) {
        return -1;
    }
    if ((unsigned long long)size > 0xffffffffULL) {
        PyErr_SetString(PyExc_OverflowError, "a text field is longer than 2**32 - 1 bytes");
        return -1;
    }
    unsigned char length[4];
    put_be32(length, (unsigned long)size);
    SHA256_Update(ctx, length, 4);
    SHA256_Update(ctx, data, (size_t)size);
    return 0;
}

/* An optional text field: 0x00 if None, else 0x01 and the text field. */
static int hash_optional_text(SHA256_CTX *ctx, PyObject *value) {
    static const unsigned char absent = 0, present = 1;
    if (value == Py_None) {
        SHA256_Update(ctx, &absent, 1);
        return 0;
    }
    SHA256_Update(ctx, &present, 1);
    return hash_text(ctx, value);
}

/* The hash of one row after prev (chain.link), into digest. */
static int link_row(const unsigned char *prev, PyObject *row, unsigned char *digest) {
    Py_ssize_t items = PyTuple_GET_SIZE(row);
    PyObject **field = &PyTuple_GET_ITEM(row, 0);
    /* position, version, schema_version (u64), recorded_at (double), len(payload) (u32) */
    unsigned char fixed[8 * 4 + 4];
    if (put_u64(fixed, field[0]) < 0 || put_u64(fixed + 8, field[2]) < 0 ||
        put_u64(fixed + 16, field[4]) < 0) {
        return -1;
    }
    double recorded_at = PyFloat_AsDouble(field[6]);
    if (recorded_at == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    if (PyFloat_Pack8(recorded_at, (char *)fixed + 24, 0) < 0) {
        return -1;
    }
    Py_buffer payload;
    if (PyObject_GetBuffer(field[5], &payload, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if ((unsigned long long)payload.len > 0xffffffffULL) {
        PyBuffer_Release(&payload);
        PyErr_SetString(PyExc_OverflowError, "a payload is longer than 2**32 - 1 bytes");
        return -1;
    }
    put_be32(fixed + 32, (unsigned long)payload.len);

    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, prev, HASH_SIZE);
    SHA256_Update(&ctx, fixed, sizeof fixed);
    SHA256_Update(&ctx, payload.buf, (size_t)payload.len);
    PyBuffer_Release(&payload);
    if (hash_text(&ctx, field[3]) < 0 || hash_text(&ctx, field[1]) < 0) {
        return -1;
    }
    if (items == 7) {
        static const unsigned char no_envelope[4] = {0, 0, 0, 0};
        SHA256_Update(&ctx, no_envelope, sizeof no_envelope);
    } else {
        for (Py_ssize_t i = 7; i < 11; i++) {
            if (hash_optional_text(&ctx, field[i]) < 0) {
                return -1;
            }
        }
    }
    SHA256_Final(digest, &ctx);
    return 0;
}

static PyObject *seal(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "seal(prev, rows, start) takes three arguments");
        return NULL;
    }
    PyObject *rows = args[1];
    if (!PyList_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer given;
    if (PyObject_GetBuffer(args[0], &given, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (given.len != HASH_SIZE) {
        PyBuffer_Release(&given);
        PyErr_SetString(PyExc_ValueError, "prev must be 32 bytes");
        return NULL;
    }
    unsigned char prev[HASH_SIZE];
    memcpy(prev, given.buf, HASH_SIZE);
    PyBuffer_Release(&given);

    PyObject *last = Py_NewRef(args[0]);
    for (Py_ssize_t index = start < 0 ? 0 : start; index < PyList_GET_SIZE(rows); index++) {
        PyObject *row = PyList_GET_ITEM(rows, index);
        Py_ssize_t items = PyTuple_Check(row) ? PyTuple_GET_SIZE(row) : -1;
        if (items != 7 && items != 11) {
            PyErr_SetString(PyExc_TypeError, "a row must be a tuple of 7 or 11 values");
            goto failed;
        }
        if (link_row(prev, row, prev) < 0) {
            goto failed;
        }
        PyObject *hash = PyByteArray_FromStringAndSize((const char *)prev, HASH_SIZE);
        if (hash == NULL) {
            goto failed;
        }
        PyObject *sealed = PyTuple_New(items + 1);
        if (sealed == NULL) {
            Py_DECREF(hash);
            goto failed;
        }
        for (Py_ssize_t i = 0; i < items; i++) {
            PyTuple_SET_ITEM(sealed, i, Py_NewRef(PyTuple_GET_ITEM(row, i)));
        }
        PyTuple_SET_ITEM(sealed, items, Py_NewRef(hash));
        Py_SETREF(last, hash);
        PyList_SetItem(rows, index, sealed); /* steals sealed, drops the old row */
    }
    return last;

failed:
    Py_DECREF(last);
    return NULL;
}

static PyMethodDef methods[] = {
    {"seal", (PyCFunction)(void (*)(void))seal, METH_FASTCALL,
     "seal(prev, rows, start) -> the last hash: rows[start:] hashed in place, each "
     "linked to the one before it (clawlog.events.chain, version 1)."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "clawlog.events._chain_seal",
    .m_doc = "The hash chain's writer loop, compiled (see clawlog.events.chain).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC PyInit__chain_seal(void) { return PyModuleDef_Init(&definition); }
