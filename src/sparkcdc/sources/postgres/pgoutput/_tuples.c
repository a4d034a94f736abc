/* pgoutput's TupleData -> its values' texts, in C.
 *
 * texts(data, pos, cls) reads the TupleData at data[pos:] (Int16 column count, then per column
 * a kind byte and, for 't', an Int32 length and the text) and returns (values, end): values an
 * instance of the list subclass cls holding each column's text as bytes, or None for NULL
 * ('n'). It returns None, having read nothing, at anything else: a column left unchanged ('u'),
 * one in binary ('b'), an unknown kind, a tuple running past the data. Then its Python twin,
 * messages._tuple, reads the tuple and says what is wrong, if anything. Without this module
 * the twin reads every tuple.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *texts(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    Py_ssize_t pos;
    PyObject *cls;
    if (!PyArg_ParseTuple(args, "y*nO", &buf, &pos, &cls)) return NULL;
    const unsigned char *d = (const unsigned char *)buf.buf;
    const Py_ssize_t n = buf.len;
    PyObject *values = NULL;
    if (pos < 0 || n - pos < 2) goto other;
    unsigned count = (unsigned)d[pos] << 8 | d[pos + 1];
    pos += 2;
    values = PyObject_CallNoArgs(cls);
    if (!values) goto failed;
    if (!PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a list type");
        goto failed;
    }
    for (unsigned i = 0; i < count; i++) {
        if (pos >= n) goto other;
        if (d[pos] == 'n') {
            if (PyList_Append(values, Py_None) < 0) goto failed;
            pos += 1;
            continue;
        }
        if (d[pos] != 't' || n - pos < 5) goto other;
        uint32_t length = (uint32_t)d[pos + 1] << 24 | (uint32_t)d[pos + 2] << 16 |
                          (uint32_t)d[pos + 3] << 8 | (uint32_t)d[pos + 4];
        Py_ssize_t start = pos + 5;
        if ((Py_ssize_t)length > n - start) goto other;
        PyObject *text = PyBytes_FromStringAndSize((const char *)d + start, (Py_ssize_t)length);
        if (!text) goto failed;
        int appended = PyList_Append(values, text);
        Py_DECREF(text);
        if (appended < 0) goto failed;
        pos = start + (Py_ssize_t)length;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(Nn)", values, pos);
other:
    Py_XDECREF(values);
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
failed:
    Py_XDECREF(values);
    PyBuffer_Release(&buf);
    return NULL;
}

static PyMethodDef methods[] = {
    {"texts", texts, METH_VARARGS,
     "texts(data, pos, cls) -> (values as cls, end), or None where the Python reader must read"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tuples",
                                    "pgoutput's TupleData as texts, in C.", -1, methods, NULL,
                                    NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__tuples(void) { return PyModule_Create(&module); }
