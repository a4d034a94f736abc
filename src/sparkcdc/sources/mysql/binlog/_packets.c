/* The binlog dump's receive buffer -> its events, in C.
 *
 * split(buffer, start, end) walks the MySQL packets held whole in buffer[start:end] (3-byte
 * length, sequence number, payload) and returns (events, next start, last sequence number or
 * -1): the payload of each packet that is a binlog event (first byte 0, the OK marker, which is
 * cut off), as bytes. It stops at the first packet not held whole, at an empty or 16 MiB packet
 * (an event split over several packets) and at any packet that is not an event (an error, the
 * end of the stream): the packet reader in protocol.py takes those. Without this module its
 * Python twin, packets.split_packets, runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_PACKET 0xFFFFFF

static PyObject *split(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &start, &end)) return NULL;
    if (start < 0 || end > buf.len || start > end) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "start and end must lie inside the buffer");
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)buf.buf;
    PyObject *events = PyList_New(0);
    Py_ssize_t s = start;
    int seq = -1;
    while (events && end - s > 4) {
        Py_ssize_t length = b[s] | b[s + 1] << 8 | b[s + 2] << 16;
        if (length + 4 > end - s || length == 0 || length >= MAX_PACKET || b[s + 4] != 0) break;
        PyObject *event = PyBytes_FromStringAndSize((const char *)b + s + 5, length - 1);
        if (!event || PyList_Append(events, event) < 0) {
            Py_XDECREF(event);
            Py_CLEAR(events);
            break;
        }
        Py_DECREF(event);
        seq = b[s + 3];
        s += 4 + length;
    }
    PyBuffer_Release(&buf);
    if (!events) return NULL;
    return Py_BuildValue("(Nni)", events, s, seq);
}

static PyMethodDef methods[] = {
    {"split", split, METH_VARARGS,
     "split(buffer, start, end) -> (events, next start, last sequence number or -1)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packets",
                                    "The binlog dump's packets split into events, in C.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__packets(void) { return PyModule_Create(&module); }
