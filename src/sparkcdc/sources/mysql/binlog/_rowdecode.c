/* Rows events -> typed Arrow column buffers, in C.
 *
 * The compiled twin of the generated Python decoder (rows.py and rowcode.py with typed=True):
 * the same binlog layouts and values, written straight into Arrow buffers (validity bits,
 * offsets, data) of every column of the before and after images, with no Python object per
 * value. Built by scripts/setup.sh with the system's C compiler; without it the Python decoder
 * runs, and the tests hold the two to the same Arrow arrays value by value.
 *
 * Layout(specs, keys): one table layout. specs: per column (kind, a, b, extra, arrow):
 *   INT      a = width in bytes (1, 2, 3, 4, 8), b = unsigned
 *   REAL     a = 4 (FLOAT) or 8 (DOUBLE)
 *   DECIMAL  a = precision, b = scale
 *   YEAR, BIT (a = bytes, big-endian), DATE, DATETIME2 / TIMESTAMP2 (a = fsp)
 *   STRING   a = length prefix bytes, b = BINARY(n) padding, extra = (codec, errors) for text
 *   ENUM     a = bytes, extra = members with "" first;  SET  a = bytes, extra = members
 * and arrow, the Arrow type written: int8/16/32/64 (dates as int32 days, date-times as int64
 * microseconds), float32/64, decimal128, utf8, binary. keys: (column, function turning its
 * typed value into JSON text or None for str()): the key text of each row, as a Python str.
 *
 * Rows(layout): the images of some changes. decode(kind, present, present2, data, start, end)
 * appends an event's rows and returns (rows, key texts, end reached); decode_event(kind, v2,
 * data, start, end) does the same from the event's post-header on; extend(other, lo, hi)
 * appends rows of another; buffers() gives them to Arrow.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { K_INT = 1, K_REAL, K_DECIMAL, K_YEAR, K_BIT, K_DATE, K_DATETIME2, K_TIMESTAMP2,
       K_STRING, K_ENUM, K_SET };
enum { A_I8 = 1, A_I16, A_I32, A_I64, A_F32, A_F64, A_D128, A_UTF8, A_BINARY };
static const int WIDTH[10] = {0, 1, 2, 4, 8, 4, 8, 16, 0, 0};
static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const int FRAC_BYTES[7] = {0, 1, 1, 2, 2, 3, 3};
static const int FRAC_SCALE[7] = {1, 10000, 10000, 100, 100, 1, 1};
static PyObject *S_COMMA;

/* ------------------------------------------------------------------ reading binlog values */

typedef struct {
    int kind, a, b, arrow;
    int utf8;             /* text whose bytes are UTF-8 already (valid ones are copied) */
    PyObject *extra;
    const char *codec, *errors;
} Col;

/* whether s[0:n] is well-formed UTF-8 (as Python's strict decoder accepts it) */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (!len || c > 0xF4 || i + len > n) return 0;
        for (int k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F)) return 0;
        i += len;
    }
    return 1;
}

typedef struct {          /* one value as read: which fields hold it depends on the column */
    int null;
    long long i;          /* integers, days, microseconds */
    double d;
    __int128 big;         /* decimals (p <= 38) and unsigned 64-bit integers */
    const char *s;        /* bytes in the event (strings, binary) or in text[] (decimals) */
    Py_ssize_t len;
    PyObject *obj;        /* a new str (enum, set, decoded text), when made */
    char text[160];
} Raw;

static int fail(const char *what) {
    PyErr_Format(PyExc_ValueError, "the row image ends inside %s", what);
    return -1;
}

static unsigned long long be(const unsigned char *p, int n) {
    unsigned long long v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static unsigned long long le(const unsigned char *p, int n) {
    unsigned long long v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* days since 1970-01-01; -1 in *ok for a zero or impossible date */
static long long civil_days(long long y, int m, int d, int *ok) {
    static const int mdays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    *ok = !(y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > mdays[m] + (m == 2 && leap));
    if (!*ok) return 0;
    y -= m <= 2;
    long long era = y / 400, yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

static const unsigned long long TEN[10] = {1, 10, 100, 1000, 10000, 100000, 1000000,
                                           10000000, 100000000, 1000000000};

/* the digit group of ``digits`` digits in ``n`` big-endian bytes at b; -1 when the bytes hold
   more than ``digits`` digits (a damaged value, which would not fit its precision) */
static long long digit_group(const unsigned char *b, int n, int digits) {
    unsigned long long v = be(b, n);
    return v < TEN[digits] ? (long long)v : -1;
}

/* a DECIMAL of at most 38 digits: its unscaled value into r->big, by digit groups; -1 when a
   group holds more digits than it may */
static int decimal_value(const unsigned char *p, int precision, int scale, Raw *r) {
    int intg = precision - scale, intg0 = intg / 9, intg0x = intg % 9;
    int frac0 = scale / 9, frac0x = scale % 9, q = 0;
    int size = intg0 * 4 + DIG2BYTES[intg0x] + frac0 * 4 + DIG2BYTES[frac0x];
    unsigned char b[40];
    int negative = !(p[0] & 0x80);
    long long g;
    for (int i = 0; i < size; i++) b[i] = negative ? (unsigned char)~p[i] : p[i];
    b[0] ^= 0x80;
    __int128 v = 0;
    if (intg0x) {
        if ((g = digit_group(b, DIG2BYTES[intg0x], intg0x)) < 0) return -1;
        v = g;
        q += DIG2BYTES[intg0x];
    }
    for (int i = 0; i < intg0 + frac0; i++, q += 4) {
        if ((g = digit_group(b + q, 4, 9)) < 0) return -1;
        v = v * TEN[9] + g;
    }
    if (frac0x) {
        if ((g = digit_group(b + q, DIG2BYTES[frac0x], frac0x)) < 0) return -1;
        v = v * TEN[frac0x] + g;
    }
    r->big = negative ? -v : v;
    return 0;
}

/* r->big (a DECIMAL's unscaled value) as its exact digits with ``scale`` after the point */
static void decimal_text(Raw *r, int scale) {
    char digits[48];
    int nd = 0, o = 0;
    unsigned __int128 v = r->big < 0 ? -(unsigned __int128)r->big : (unsigned __int128)r->big;
    do { digits[nd++] = (char)('0' + (int)(v % 10)); v /= 10; } while (v);
    while (nd <= scale) digits[nd++] = '0';
    if (r->big < 0) r->text[o++] = '-';
    for (int k = nd - 1; k >= 0; k--) {
        r->text[o++] = digits[k];
        if (k == scale && scale) r->text[o++] = '.';
    }
    r->s = r->text;
    r->len = o;
}

/* a DECIMAL's exact digits into r->text (r->s, r->len), and its unscaled value into r->big;
   -1 when a digit group holds more digits than it may */
static int read_decimal(const unsigned char *p, int precision, int scale, Raw *r) {
    int intg = precision - scale, intg0 = intg / 9, intg0x = intg % 9;
    int frac0 = scale / 9, frac0x = scale % 9, q = 0, o = 0, nd = 0, lead = 0;
    int size = intg0 * 4 + DIG2BYTES[intg0x] + frac0 * 4 + DIG2BYTES[frac0x];
    unsigned char b[40];
    char digits[100];
    long long g;
    int negative = !(p[0] & 0x80);
    for (int i = 0; i < size; i++) b[i] = negative ? (unsigned char)~p[i] : p[i];
    b[0] ^= 0x80;
    if (intg0x) {
        if ((g = digit_group(b, DIG2BYTES[intg0x], intg0x)) < 0) return -1;
        nd += sprintf(digits, "%0*lld", intg0x, g);
        q += DIG2BYTES[intg0x];
    }
    for (int i = 0; i < intg0; i++, q += 4) {
        if ((g = digit_group(b + q, 4, 9)) < 0) return -1;
        nd += sprintf(digits + nd, "%09lld", g);
    }
    while (lead < nd - 1 && digits[lead] == '0') lead++;
    if (negative) r->text[o++] = '-';
    if (nd == 0) r->text[o++] = '0';
    else { memcpy(r->text + o, digits + lead, nd - lead); o += nd - lead; }
    if (scale) {
        r->text[o++] = '.';
        for (int i = 0; i < frac0; i++, q += 4) {
            if ((g = digit_group(b + q, 4, 9)) < 0) return -1;
            o += sprintf(r->text + o, "%09lld", g);
        }
        if (frac0x) {
            if ((g = digit_group(b + q, DIG2BYTES[frac0x], frac0x)) < 0) return -1;
            o += sprintf(r->text + o, "%0*lld", frac0x, g);
        }
    }
    r->s = r->text;
    r->len = o;
    __int128 v = 0;
    if (precision <= 38)
        for (int k = 0; k < o; k++)
            if (r->text[k] >= '0' && r->text[k] <= '9') v = v * 10 + (r->text[k] - '0');
    r->big = negative ? -v : v;
    return 0;
}

static PyObject *set_text(Col *c, unsigned long long mask) {
    PyObject *picked = PyList_New(0);
    if (!picked) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(c->extra);
    for (Py_ssize_t i = 0; i < n && i < 64; i++)
        if ((mask >> i) & 1 && PyList_Append(picked, PyTuple_GET_ITEM(c->extra, i)) < 0) {
            Py_DECREF(picked);
            return NULL;
        }
    PyObject *text = PyUnicode_Join(S_COMMA, picked);
    Py_DECREF(picked);
    return text;
}

/* read the value of column c at *pp (not beyond end) into r; -1 with an exception on error */
static int read_value(Col *c, const unsigned char *buf, Py_ssize_t *pp, Py_ssize_t end, Raw *r) {
    Py_ssize_t p = *pp;
    const unsigned char *s = buf + p;
    int n, ok;
    unsigned long long v;
    r->null = 0;
    r->obj = NULL;
    switch (c->kind) {
    case K_INT:
        n = c->a;
        if (p + n > end) return fail("an integer");
        *pp = p + n;
        v = le(s, n);
        if (c->b) { r->big = v; r->i = (long long)v; return 0; }
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~0ULL << (8 * n);
        r->i = (long long)v;
        r->big = r->i;
        return 0;
    case K_REAL:
        if (p + c->a > end) return fail("a float");
        *pp = p + c->a;
        if (c->a == 4) { float f; memcpy(&f, s, 4); r->d = f; }
        else memcpy(&r->d, s, 8);
        return 0;
    case K_DECIMAL: {
        int intg = c->a - c->b;
        n = (intg / 9) * 4 + DIG2BYTES[intg % 9] + (c->b / 9) * 4 + DIG2BYTES[c->b % 9];
        if (p + n > end || n > 40) return fail("a decimal");
        *pp = p + n;
        if (c->arrow == A_D128 ? decimal_value(s, c->a, c->b, r)
                               : read_decimal(s, c->a, c->b, r))  /* > 38 digits: text only */
        {
            PyErr_Format(PyExc_ValueError, "a DECIMAL(%d,%d) value holds more digits than that",
                         c->a, c->b);
            return -1;
        }
        if (c->arrow == A_D128) r->len = -1;
        return 0;
    }
    case K_YEAR:
        if (p + 1 > end) return fail("a year");
        *pp = p + 1;
        r->i = s[0] ? s[0] + 1900 : 0;
        return 0;
    case K_BIT:
        if (p + c->a > end) return fail("a bit value");
        *pp = p + c->a;
        v = be(s, c->a);
        r->big = v;
        r->i = (long long)v;
        return 0;
    case K_DATE:
        if (p + 3 > end) return fail("a date");
        *pp = p + 3;
        v = le(s, 3);
        r->i = civil_days((long long)(v >> 9), (int)(v >> 5 & 15), (int)(v & 31), &ok);
        r->null = !ok;
        return 0;
    case K_DATETIME2: {
        int nf = FRAC_BYTES[c->a];
        if (p + 5 + nf > end) return fail("a datetime");
        *pp = p + 5 + nf;
        long long packed = (long long)be(s, 5) - 0x8000000000LL;
        long long ymd = packed >> 17, ym = ymd >> 5, hms = packed & 0x1FFFF;
        long long days = civil_days(ym / 13, (int)(ym % 13), (int)(ymd & 31), &ok);
        long long us = nf ? (long long)be(s + 5, nf) * FRAC_SCALE[c->a] : 0;
        long long secs = (hms >> 12) * 3600 + (hms >> 6 & 63) * 60 + (hms & 63);
        r->i = (days * 86400 + secs) * 1000000 + us;
        r->null = !ok;
        return 0;
    }
    case K_TIMESTAMP2: {
        int nf = FRAC_BYTES[c->a];
        if (p + 4 + nf > end) return fail("a timestamp");
        *pp = p + 4 + nf;
        long long secs = (long long)be(s, 4);
        r->i = secs * 1000000 + (nf ? (long long)be(s + 4, nf) * FRAC_SCALE[c->a] : 0);
        r->null = secs == 0;
        return 0;
    }
    case K_STRING:
        if (p + c->a > end) return fail("a string length");
        r->len = (Py_ssize_t)le(s, c->a);  /* at most 4 bytes: 0 .. 2^32 - 1 */
        if (r->len > end - p - c->a) return fail("a string");
        *pp = p + c->a + r->len;
        r->s = (const char *)s + c->a;
        if (c->codec && !(c->utf8 && valid_utf8((const unsigned char *)r->s, r->len)) &&
            !(r->obj = PyUnicode_Decode(r->s, r->len, c->codec, c->errors)))
            return -1;
        return 0;
    case K_ENUM: case K_SET:
        if (p + c->a > end) return fail("an enum or set");
        *pp = p + c->a;
        v = le(s, c->a);
        if (c->kind == K_SET) return (r->obj = set_text(c, v)) ? 0 : -1;
        r->obj = v < (unsigned long long)PyTuple_GET_SIZE(c->extra)
                     ? PyTuple_GET_ITEM(c->extra, (Py_ssize_t)v) : PyTuple_GET_ITEM(c->extra, 0);
        Py_INCREF(r->obj);
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "unknown column kind");
    return -1;
}

/* the typed Python value of r (for key texts), as the Python decoder gives it */
static PyObject *raw_object(Col *c, Raw *r) {
    if (r->null) Py_RETURN_NONE;
    if (r->obj) { Py_INCREF(r->obj); return r->obj; }
    switch (c->kind) {
    case K_INT: case K_BIT:
        return (c->kind == K_INT && !c->b) ? PyLong_FromLongLong(r->i)
                                            : PyLong_FromUnsignedLongLong((unsigned long long)r->big);
    case K_REAL: return PyFloat_FromDouble(r->d);
    case K_DECIMAL:
        if (r->len < 0) decimal_text(r, c->b);
        return PyUnicode_FromStringAndSize(r->s, r->len);
    case K_STRING: {
        if (c->codec) return PyUnicode_DecodeUTF8(r->s, r->len, c->errors);  /* valid UTF-8 */
        if (r->len >= c->b) return PyBytes_FromStringAndSize(r->s, r->len);
        PyObject *padded = PyBytes_FromStringAndSize(NULL, c->b);
        if (!padded) return NULL;
        memcpy(PyBytes_AS_STRING(padded), r->s, r->len);
        memset(PyBytes_AS_STRING(padded) + r->len, 0, c->b - r->len);
        return padded;
    }
    default: return PyLong_FromLongLong(r->i);
    }
}

/* ------------------------------------------------------------------ Arrow buffers */

typedef struct { unsigned char *p; Py_ssize_t len, cap; } Buf;

static int grow(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    unsigned char *np = PyMem_Realloc(b->p, cap);
    if (!np) { PyErr_NoMemory(); return -1; }
    b->p = np;
    b->cap = cap;
    return 0;
}

static int put(Buf *b, const void *src, Py_ssize_t n) {
    if (grow(b, n)) return -1;
    if (src) memcpy(b->p + b->len, src, n);
    else memset(b->p + b->len, 0, n);
    b->len += n;
    return 0;
}

static int put_bit(Buf *bits, Py_ssize_t index, int on) {
    if ((index & 7) == 0 && put(bits, NULL, 1)) return -1;
    if (on) bits->p[index >> 3] |= (unsigned char)(1 << (index & 7));
    return 0;
}

typedef struct { Buf data, offsets, valid; } Column;   /* offsets: int32, for utf8/binary */

static int put_offset(Column *col) {
    int32_t end = (int32_t)col->data.len;
    if (col->data.len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more than 2 GiB of text in one batch");
        return -1;
    }
    return put(&col->offsets, &end, 4);
}

/* one value (or a null) of column c at row index n */
static int put_value(Col *c, Column *col, Py_ssize_t n, Raw *r) {
    if (put_bit(&col->valid, n, r && !r->null)) return -1;
    if (c->arrow == A_UTF8 || c->arrow == A_BINARY) {
        if (r && !r->null) {
            const char *s = r->s;
            Py_ssize_t len = r->len;
            if (r->obj) {
                if (c->kind == K_DECIMAL) s = r->s;
                else if (!(s = PyUnicode_AsUTF8AndSize(r->obj, &len))) return -1;
            }
            if (put(&col->data, s, len)) return -1;
            if (c->arrow == A_BINARY && len < c->b && put(&col->data, NULL, c->b - len)) return -1;
        }
        return put_offset(col);
    }
    unsigned char v[16];
    memset(v, 0, sizeof v);
    if (r && !r->null) {
        int8_t i8; int16_t i16; int32_t i32; float f;
        switch (c->arrow) {
        case A_I8: i8 = (int8_t)r->i; memcpy(v, &i8, 1); break;
        case A_I16: i16 = (int16_t)r->i; memcpy(v, &i16, 2); break;
        case A_I32: i32 = (int32_t)r->i; memcpy(v, &i32, 4); break;
        case A_I64: memcpy(v, &r->i, 8); break;
        case A_F32: f = (float)r->d; memcpy(v, &f, 4); break;
        case A_F64: memcpy(v, &r->d, 8); break;
        case A_D128: memcpy(v, &r->big, 16); break;
        }
    }
    return put(&col->data, v, WIDTH[c->arrow]);
}

/* ------------------------------------------------------------------ Layout */

typedef struct {
    PyObject_HEAD
    int ncols, nkey;
    Col *cols;
    int *key_cols;
    PyObject **key_fns;   /* borrowed from key_spec, which the layout keeps */
    PyObject *specs, *key_spec;
} Layout;

/* whether a column's sizes are ones a binlog can hold, so that reading it stays inside the
   event and inside this file's buffers: integers of 1-4 or 8 bytes, floats of 4 or 8, DECIMAL
   precision 1..65 and scale 0..38 (at most the precision), length prefixes of 0..4 bytes, BIT,
   ENUM and SET values of 0..8 bytes */
static int widths_fit(const Col *c) {
    switch (c->kind) {
    case K_INT: return (c->a >= 1 && c->a <= 4) || c->a == 8;
    case K_REAL: return c->a == 4 || c->a == 8;
    case K_DECIMAL: return c->a >= 1 && c->a <= 65 && c->b >= 0 && c->b <= 38 && c->b <= c->a;
    case K_STRING: return c->a >= 0 && c->a <= 4 && c->b >= 0;
    case K_BIT: case K_ENUM: case K_SET: return c->a >= 0 && c->a <= 8;
    default: return 1;
    }
}

static int Layout_init(Layout *L, PyObject *args, PyObject *kw) {
    (void)kw;
    PyObject *specs, *keys;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &specs, &PyTuple_Type, &keys)) return -1;
    L->ncols = (int)PyTuple_GET_SIZE(specs);
    L->nkey = (int)PyTuple_GET_SIZE(keys);
    L->cols = PyMem_Calloc(L->ncols + 1, sizeof(Col));
    L->key_cols = PyMem_Calloc(L->nkey + 1, sizeof(int));
    L->key_fns = PyMem_Calloc(L->nkey + 1, sizeof(PyObject *));
    if (!L->cols || !L->key_cols || !L->key_fns) { PyErr_NoMemory(); return -1; }
    Py_INCREF(specs); L->specs = specs;
    Py_INCREF(keys); L->key_spec = keys;
    for (int i = 0; i < L->ncols; i++) {
        Col *c = &L->cols[i];
        PyObject *extra;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, i), "iiiOi", &c->kind, &c->a, &c->b,
                              &extra, &c->arrow)) return -1;
        if (c->arrow < A_I8 || c->arrow > A_BINARY || c->kind < K_INT || c->kind > K_SET) {
            PyErr_SetString(PyExc_ValueError, "unknown column or Arrow kind");
            return -1;
        }
        if ((c->kind == K_DATETIME2 || c->kind == K_TIMESTAMP2) && (c->a < 0 || c->a > 6)) {
            PyErr_SetString(PyExc_ValueError, "fractional seconds are 0..6");
            return -1;
        }
        if (!widths_fit(c)) {
            PyErr_Format(PyExc_ValueError, "column kind %d cannot be %d bytes (%d)", c->kind,
                         c->a, c->b);
            return -1;
        }
        if (extra == Py_None) continue;
        c->extra = extra;
        if (c->kind == K_STRING && !PyArg_ParseTuple(extra, "ss", &c->codec, &c->errors))
            return -1;
        c->utf8 = c->kind == K_STRING && strcmp(c->codec, "utf-8") == 0;
        if ((c->kind == K_ENUM || c->kind == K_SET) && !PyTuple_Check(extra)) {
            PyErr_SetString(PyExc_TypeError, "enum and set members must be a tuple");
            return -1;
        }
    }
    for (int j = 0; j < L->nkey; j++) {
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(keys, j), "iO", &L->key_cols[j], &L->key_fns[j]))
            return -1;
        if (L->key_cols[j] < 0 || L->key_cols[j] >= L->ncols) {
            PyErr_SetString(PyExc_ValueError, "key column out of range");
            return -1;
        }
    }
    return 0;
}

static void Layout_dealloc(Layout *L) {
    PyMem_Free(L->cols);
    PyMem_Free(L->key_cols);
    PyMem_Free(L->key_fns);
    Py_XDECREF(L->specs);
    Py_XDECREF(L->key_spec);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

static PyTypeObject LayoutType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sparkcdc.sources.mysql.binlog._rowdecode.Layout",
    .tp_basicsize = sizeof(Layout),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Layout(column specs, key specs): how the rows of one table layout are read",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Layout_init,
    .tp_dealloc = (destructor)Layout_dealloc,
};

/* ------------------------------------------------------------------ Rows */

typedef struct {
    PyObject_HEAD
    Layout *layout;
    Py_ssize_t n;
    Column *cols[2];      /* before, after */
    Buf valid[2];         /* a row has the image */
} Rows;

static void free_columns(Rows *R) {
    for (int side = 0; side < 2; side++) {
        if (R->cols[side])
            for (int i = 0; i < R->layout->ncols; i++) {
                PyMem_Free(R->cols[side][i].data.p);
                PyMem_Free(R->cols[side][i].offsets.p);
                PyMem_Free(R->cols[side][i].valid.p);
            }
        PyMem_Free(R->cols[side]);
        PyMem_Free(R->valid[side].p);
        R->cols[side] = NULL;
        memset(&R->valid[side], 0, sizeof(Buf));
    }
}

static int Rows_init(Rows *R, PyObject *args, PyObject *kw) {
    (void)kw;
    Layout *L;
    if (!PyArg_ParseTuple(args, "O!", &LayoutType, &L)) return -1;
    if (R->layout) { free_columns(R); Py_CLEAR(R->layout); }
    Py_INCREF(L);
    R->layout = L;
    R->n = 0;
    for (int side = 0; side < 2; side++) {
        R->cols[side] = PyMem_Calloc(L->ncols + 1, sizeof(Column));
        if (!R->cols[side]) { PyErr_NoMemory(); return -1; }
        for (int i = 0; i < L->ncols; i++) {
            int a = L->cols[i].arrow;
            if ((a == A_UTF8 || a == A_BINARY) && put_offset(&R->cols[side][i])) return -1;
        }
    }
    return 0;
}

static void Rows_dealloc(Rows *R) {
    if (R->layout) free_columns(R);
    Py_XDECREF(R->layout);
    Py_TYPE(R)->tp_free((PyObject *)R);
}

static int bit(const unsigned char *bits, Py_ssize_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

/* a row without this image: nulls everywhere */
static int put_no_image(Rows *R, int side) {
    Layout *L = R->layout;
    if (put_bit(&R->valid[side], R->n, 0)) return -1;
    for (int i = 0; i < L->ncols; i++)
        if (put_value(&L->cols[i], &R->cols[side][i], R->n, NULL)) return -1;
    return 0;
}

/* one image at *pp into row R->n of side; its key text (new reference, or None) in *key */
/* the key text of one integer key column written without Python (None: not that case) */
static PyObject *integer_key(Layout *L, Raw *r) {
    Col *c = &L->cols[L->key_cols[0]];
    if (L->nkey != 1 || L->key_fns[0] != Py_None || c->kind != K_INT || r->null) return NULL;
    char text[32];
    int n = sizeof text;
    int negative = !c->b && r->i < 0;
    unsigned long long v = c->b ? (unsigned long long)r->big
                                : negative ? 0ULL - (unsigned long long)r->i : (unsigned long long)r->i;
    text[--n] = ']';
    do { text[--n] = (char)('0' + v % 10); v /= 10; } while (v);
    if (negative) text[--n] = '-';
    text[--n] = '[';
    return PyUnicode_FromStringAndSize(text + n, sizeof text - n);
}

/* one image at *pp into row R->n of side; with key != NULL its key text (a new reference, or
   None when the image lacks a key column) in *key */
static int put_image(Rows *R, int side, const unsigned char *present, const unsigned char *buf,
                     Py_ssize_t *pp, Py_ssize_t end, PyObject **key) {
    Layout *L = R->layout;
    int count = 0, status = 0;
    for (int i = 0; i < L->ncols; i++) count += bit(present, i);
    int nbytes = (count + 7) / 8;
    if (*pp + nbytes > end) return fail("a null bitmap");
    const unsigned char *nulls = buf + *pp;
    *pp += nbytes;
    if (put_bit(&R->valid[side], R->n, 1)) return -1;
    PyObject *parts = key && L->nkey > 0 ? PyList_New(L->nkey) : NULL;
    if (key && L->nkey && !parts) return -1;
    PyObject *fast = NULL;
    int keyed = 0;
    for (int i = 0, k = 0; i < L->ncols && status == 0; i++) {
        Col *c = &L->cols[i];
        Raw r;
        Raw *value = NULL;
        if (bit(present, i)) {
            if (!bit(nulls, k)) {
                if (read_value(c, buf, pp, end, &r)) { status = -1; break; }
                value = &r;
            } else {
                r.null = 1;
                r.obj = NULL;
                value = &r;
            }
            k++;
        }
        status = put_value(c, &R->cols[side][i], R->n, value);
        if (parts && value && L->key_cols[0] == i && (fast = integer_key(L, value))) {
            keyed = L->nkey;
            parts = (Py_DECREF(parts), NULL);
        }
        for (int j = 0; j < L->nkey && status == 0 && value && parts; j++) {
            if (L->key_cols[j] != i) continue;
            PyObject *v = raw_object(c, value), *t = NULL;
            if (v) t = L->key_fns[j] == Py_None ? PyObject_Str(v)
                                                : PyObject_CallOneArg(L->key_fns[j], v);
            Py_XDECREF(v);
            if (!t) status = -1;
            else { PyList_SET_ITEM(parts, j, t); keyed++; }
        }
        if (value) Py_XDECREF(value->obj);
    }
    if (!key) return status;
    *key = NULL;
    if (status == 0) {
        if (fast) *key = fast;
        else if (!L->nkey || keyed < L->nkey) { Py_INCREF(Py_None); *key = Py_None; }
        else {
            PyObject *inner = PyUnicode_Join(S_COMMA, parts);
            if (inner) *key = PyUnicode_FromFormat("[%U]", inner);
            Py_XDECREF(inner);
            if (!*key) status = -1;
        }
    }
    if (status) Py_XDECREF(fast);
    Py_XDECREF(parts);
    return status;
}

/* whether every key column is in the present bitmap */
static int keyed(Layout *L, const unsigned char *present) {
    for (int j = 0; j < L->nkey; j++)
        if (!((present[L->key_cols[j] >> 3] >> (L->key_cols[j] & 7)) & 1)) return 0;
    return L->nkey > 0;
}

/* decode(kind, present, present2, data, start, end) -> (rows appended, key texts, end) */
/* Append the rows of buf[p:end] (images of kind 'c', 'u' or 'd' with the present bitmaps pres
 * and, for 'u', pres2) to R: (rows, key texts, where decoding stopped), NULL on an error. */
static PyObject *append_rows(Rows *R, int kind, const unsigned char *pres,
                             const unsigned char *pres2, const unsigned char *buf, Py_ssize_t p,
                             Py_ssize_t end) {
    Py_ssize_t first = R->n;
    PyObject *keys = PyList_New(0);
    int after_keyed = kind == 'u' && keyed(R->layout, pres2);
    while (keys && p < end) {
        PyObject *key_a = NULL, *key_b = NULL;
        Py_ssize_t row_start = p;
        int status;
        if (kind == 'c') {
            status = put_no_image(R, 0) || put_image(R, 1, pres, buf, &p, end, &key_a);
        } else if (kind == 'd') {
            status = put_image(R, 0, pres, buf, &p, end, &key_a) || put_no_image(R, 1);
        } else {
            status = put_image(R, 0, pres, buf, &p, end, after_keyed ? NULL : &key_a) ||
                     put_image(R, 1, pres2, buf, &p, end, after_keyed ? &key_b : NULL);
        }
        if (!status && p == row_start) {  /* images of no column: the loop would never end */
            PyErr_SetString(PyExc_ValueError, "a row image holds no column");
            status = -1;
        }
        PyObject *key = key_b && key_b != Py_None ? key_b : key_a;
        if (status || PyList_Append(keys, key ? key : Py_None) < 0) Py_CLEAR(keys);
        Py_XDECREF(key_a);
        Py_XDECREF(key_b);
        R->n++;
    }
    if (!keys) return NULL;
    return Py_BuildValue("(nNn)", R->n - first, keys, p);
}

static PyObject *Rows_decode(Rows *R, PyObject *args) {
    int kind;
    Py_buffer pres, pres2, data;
    Py_ssize_t p, end;
    if (!PyArg_ParseTuple(args, "Cy*y*y*nn", &kind, &pres, &pres2, &data, &p, &end)) return NULL;
    PyObject *out = NULL;
    int need = (R->layout->ncols + 7) / 8;
    if (pres.len < need || (kind == 'u' && pres2.len < need) || end > data.len || p < 0)
        PyErr_SetString(PyExc_ValueError, "a rows event shorter than its bitmaps");
    else
        out = append_rows(R, kind, pres.buf, pres2.buf, data.buf, p, end);
    PyBuffer_Release(&pres);
    PyBuffer_Release(&pres2);
    PyBuffer_Release(&data);
    return out;
}

/* decode_event(kind, v2, data, start, end): a whole rows event's body data[start:end] (after
 * the common header, no checksum): its post-header (6-byte table id, flags, and for v2 events
 * the extra data), its column count, which must be the layout's, its bitmaps, then its rows as
 * decode() appends them. */
static PyObject *Rows_decode_event(Rows *R, PyObject *args) {
    int kind, v2;
    Py_buffer data;
    Py_ssize_t p, end;
    if (!PyArg_ParseTuple(args, "Cpy*nn", &kind, &v2, &data, &p, &end)) return NULL;
    PyObject *out = NULL;
    const unsigned char *buf = data.buf;
    int need = (R->layout->ncols + 7) / 8;
    Py_ssize_t ncols = -1;
    if (p < 0 || end > data.len) goto done;
    p += 8;
    if (v2) {
        if (p + 2 > end) goto done;
        p += buf[p] | buf[p + 1] << 8;
    }
    if (p >= end) goto done;
    int width = buf[p] < 251 ? 0 : buf[p] == 252 ? 2 : buf[p] == 253 ? 3 : buf[p] == 254 ? 8 : -1;
    if (width < 0 || p + 1 + width > end) goto done; /* a length-encoded column count */
    ncols = width ? 0 : buf[p];
    for (int i = width; i > 0; i--) ncols = ncols << 8 | buf[p + i];
    p += 1 + width;
    if (ncols != R->layout->ncols || p + need * (kind == 'u' ? 2 : 1) > end) goto done;
    const unsigned char *pres = buf + p, *pres2 = buf + p + need;
    p += need * (kind == 'u' ? 2 : 1);
    out = append_rows(R, kind, pres, pres2, buf, p, end);
done:
    if (!out && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "a rows event of %zd columns where its layout has %d",
                     ncols, R->layout->ncols);
    PyBuffer_Release(&data);
    return out;
}

static int copy_bits(Buf *dst, Py_ssize_t at, const Buf *src, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t i = lo; i < hi; i++)
        if (put_bit(dst, at + i - lo, bit(src->p, i))) return -1;
    return 0;
}

/* extend(other, lo, hi): append rows lo..hi-1 of other (of the same layout) */
static PyObject *Rows_extend(Rows *R, PyObject *args) {
    Rows *O;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "Onn", &O, &lo, &hi)) return NULL;
    if (Py_TYPE(O) != Py_TYPE(R) || O->layout != R->layout || lo < 0 || hi > O->n || lo > hi) {
        PyErr_SetString(PyExc_ValueError, "rows of another layout, or out of range");
        return NULL;
    }
    for (int side = 0; side < 2; side++) {
        if (copy_bits(&R->valid[side], R->n, &O->valid[side], lo, hi)) return NULL;
        for (int i = 0; i < R->layout->ncols; i++) {
            Col *c = &R->layout->cols[i];
            Column *dst = &R->cols[side][i], *src = &O->cols[side][i];
            if (copy_bits(&dst->valid, R->n, &src->valid, lo, hi)) return NULL;
            if (c->arrow != A_UTF8 && c->arrow != A_BINARY) {
                int w = WIDTH[c->arrow];
                if (put(&dst->data, src->data.p + lo * w, (hi - lo) * w)) return NULL;
                continue;
            }
            const int32_t *off = (const int32_t *)src->offsets.p;
            if (put(&dst->data, src->data.p + off[lo], off[hi] - off[lo])) return NULL;
            int32_t base = (int32_t)dst->data.len - off[hi];
            for (Py_ssize_t k = lo + 1; k <= hi; k++) {
                int32_t o = off[k] + base;
                if (put(&dst->offsets, &o, 4)) return NULL;
            }
        }
    }
    R->n += hi - lo;
    Py_RETURN_NONE;
}

static PyObject *as_bytes(const Buf *b, Py_ssize_t len) {
    return PyBytes_FromStringAndSize((const char *)b->p, len);
}

/* buffers() -> (rows, [per side: (image validity, [per column: (validity, offsets, data)])]) */
static PyObject *Rows_buffers(Rows *R, PyObject *unused) {
    (void)unused;
    PyObject *sides = PyList_New(2);
    if (!sides) return NULL;
    Py_ssize_t bits = (R->n + 7) / 8;
    for (int side = 0; side < 2; side++) {
        PyObject *cols = PyList_New(R->layout->ncols);
        if (!cols) { Py_DECREF(sides); return NULL; }
        for (int i = 0; i < R->layout->ncols; i++) {
            Column *col = &R->cols[side][i];
            int a = R->layout->cols[i].arrow;
            PyObject *offsets = (a == A_UTF8 || a == A_BINARY) ? as_bytes(&col->offsets, col->offsets.len)
                                                                : (Py_INCREF(Py_None), Py_None);
            PyObject *t = Py_BuildValue("(NNN)", as_bytes(&col->valid, bits), offsets,
                                        as_bytes(&col->data, col->data.len));
            if (!t) { Py_DECREF(cols); Py_DECREF(sides); return NULL; }
            PyList_SET_ITEM(cols, i, t);
        }
        PyObject *t = Py_BuildValue("(NN)", as_bytes(&R->valid[side], bits), cols);
        if (!t) { Py_DECREF(sides); return NULL; }
        PyList_SET_ITEM(sides, side, t);
    }
    return Py_BuildValue("(nN)", R->n, sides);
}

static Py_ssize_t Rows_len(Rows *R) { return R->n; }

static PyObject *Rows_nbytes(Rows *R, void *unused) {
    (void)unused;
    Py_ssize_t total = 0;
    for (int side = 0; side < 2 && R->layout; side++) {
        total += R->valid[side].len;
        for (int i = 0; i < R->layout->ncols; i++)
            total += R->cols[side][i].data.len + R->cols[side][i].offsets.len +
                     R->cols[side][i].valid.len;
    }
    return PyLong_FromSsize_t(total);
}

static PyMethodDef Rows_methods[] = {
    {"decode", (PyCFunction)Rows_decode, METH_VARARGS,
     "decode(kind, present, present2, data, start, end) -> (rows, key texts, end reached)"},
    {"decode_event", (PyCFunction)Rows_decode_event, METH_VARARGS,
     "decode_event(kind, v2, data, start, end) -> decode() of a whole rows event's body"},
    {"extend", (PyCFunction)Rows_extend, METH_VARARGS, "extend(other, lo, hi): append rows"},
    {"buffers", (PyCFunction)Rows_buffers, METH_NOARGS, "the Arrow buffers of both images"},
    {NULL, NULL, 0, NULL}};


static PyObject *Rows_layout(Rows *R, void *unused) {
    (void)unused;
    if (!R->layout) Py_RETURN_NONE;
    Py_INCREF(R->layout);
    return (PyObject *)R->layout;
}

static PySequenceMethods Rows_sequence = {.sq_length = (lenfunc)Rows_len};

static PyGetSetDef Rows_getset[] = {
    {"nbytes", (getter)Rows_nbytes, NULL, "bytes held", NULL},
    {"layout", (getter)Rows_layout, NULL, "the layout of the rows", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sparkcdc.sources.mysql.binlog._rowdecode.Rows",
    .tp_basicsize = sizeof(Rows),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Rows(layout): typed before and after images of changes, as Arrow buffers",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Rows_init,
    .tp_dealloc = (destructor)Rows_dealloc,
    .tp_methods = Rows_methods,
    .tp_getset = Rows_getset,
    .tp_as_sequence = &Rows_sequence,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rowdecode",
                                    "Typed rows-event decoding into Arrow buffers, in C.", -1,
                                    NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__rowdecode(void) {
    if (PyType_Ready(&LayoutType) < 0 || PyType_Ready(&RowsType) < 0) return NULL;
    S_COMMA = PyUnicode_InternFromString(",");
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&LayoutType);
    Py_INCREF(&RowsType);
    if (PyModule_AddObject(m, "Layout", (PyObject *)&LayoutType) < 0 ||
        PyModule_AddObject(m, "Rows", (PyObject *)&RowsType) < 0) return NULL;
    return m;
}
