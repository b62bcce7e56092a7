/*
 * The Wang–Balle–Kasiviswanathan bound (WBK 2019, Thm 27) as `accountant.py` vectorises it:
 * - `log_forward_diffs`, the forward-difference recursion that `accountant._log_forward_diffs`
 *   documents: log-magnitudes and signs of the successive differences of
 *   (1, e^{cgf(0)}, e^{cgf(1)}, ...), one row of the difference triangle at a time;
 * - `log_a_ints`, log A_α of integer orders from those differences (`accountant._log_a_ints`):
 *   each order's terms, then their log-sum-exp.
 *
 * Every operation is the one numpy applies elementwise in the vectorised formulation: IEEE
 * subtraction, absolute value, minimum, maximum, addition, multiplication, division and
 * comparisons, done here in C in Python's order (compiled with -ffp-contract=off), and e^x,
 * log(x), log1p(x) and the row sums through numpy's own compiled loops for float64 (the
 * `functions` of the `np.exp`, `np.log`, `np.log1p` and `np.add` ufuncs, the SIMD kernels numpy
 * selected for this CPU; a row's sum as `np.add.reduce` calls its loop, from 0.0), so the
 * values are numpy's bit for bit, without one Python call per row.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/ndarraytypes.h"
#include "numpy/ufuncobject.h"

#include "../numpy_loops.h"

static Loop exp_loop, log_loop, log1p_loop, add_loop;

#define N_LIMIT ((Py_ssize_t)1 << 20)  /* orders up to 2^20: far above any the accountant uses */

/* The larger, NaN if either is NaN: numpy's maximum wherever the two differ from ±0 (the
 * triangle never holds -0.0, so the sign numpy gives max(-0.0, 0.0) does not arise). */
static inline double maximum(double a, double b)
{
    if (isnan(a))
        return a;
    if (isnan(b))
        return b;
    return a >= b ? a : b;
}

/* The smaller, NaN if either is NaN: numpy's minimum (ties aside, which give the same value). */
static inline double minimum(double a, double b)
{
    if (isnan(a))
        return a;
    if (isnan(b))
        return b;
    return a <= b ? a : b;
}

static PyObject *log_forward_diffs(PyObject *self, PyObject *args)
{
    double scale;
    Py_ssize_t n;
    PyObject *out_obj;
    if (!PyArg_ParseTuple(args, "dnO:log_forward_diffs", &scale, &n, &out_obj))
        return NULL;
    if (n < 0 || n > N_LIMIT) {
        PyErr_Format(PyExc_ValueError, "n = %zd is not allowed; must be in [0, %zd]", n,
                     N_LIMIT);
        return NULL;
    }
    Py_buffer out;
    if (PyObject_GetBuffer(out_obj, &out,
                           PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return NULL;
    if (out.ndim != 1 || out.format == NULL || strcmp(out.format, "d") != 0
            || out.shape[0] != n + 2) {
        PyErr_Format(PyExc_ValueError, "out is not allowed; must be a float64 vector of "
                     "n + 2 = %zd values", n + 2);
        PyBuffer_Release(&out);
        return NULL;
    }
    Py_ssize_t size = n + 3;
    double *work = malloc(sizeof(double) * (size_t)(7 * size));
    char *signs = malloc((size_t)size);
    if (work == NULL || signs == NULL) {
        free(work);
        free(signs);
        PyBuffer_Release(&out);
        return PyErr_NoMemory();
    }
    double *vec = work, *gap = work + size, *hi = work + 2 * size;
    double *e = work + 3 * size, *neg_e = work + 4 * size;
    double *sub = work + 5 * size, *add = work + 6 * size;
    double *deltas = (double *)out.buf;
    vec[0] = 0.0;
    signs[0] = 1;
    for (Py_ssize_t k = 0; k < n + 2; k++) {  /* x (x + 1) / scale, x = 0 .. n + 1 */
        double x = (double)k;
        double product = x * (x + 1.0);
        vec[k + 1] = product / scale;
        signs[k + 1] = 1;
    }
    for (Py_ssize_t i = 0; i < n + 2; i++) {
        Py_ssize_t m = n + 2 - i;
        int all_same = 1;
        for (Py_ssize_t j = 0; j < m; j++) {
            double a = vec[j], b = vec[j + 1];
            gap[j] = -fabs(b - a);
            hi[j] = maximum(a, b);
            all_same &= signs[j] == signs[j + 1];
        }
        /* separate input and output buffers, as numpy's own calls had */
        apply(&exp_loop, gap, e, m);  /* e^{-gap} */
        for (Py_ssize_t j = 0; j < m; j++)
            neg_e[j] = -e[j];
        apply(&log1p_loop, neg_e, sub, m);
        if (!all_same)
            apply(&log1p_loop, e, add, m);
        for (Py_ssize_t j = 0; j < m; j++) {
            double a = vec[j], b = vec[j + 1];
            char sa = signs[j], sb = signs[j + 1];
            int same = sa == sb;
            double value = same ? hi[j] + sub[j] : hi[j] + add[j];
            vec[j] = isnan(value) ? -INFINITY : value;
            signs[j] = same ? (char)((b >= a) == sb) : sb;
        }
        deltas[i] = vec[0];
    }
    free(work);
    free(signs);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}


/* A C-contiguous buffer of `format` ("d" float64, "?" bool, "l" int64) with `ndim` dims,
 * `rows` first and, for ndim 2, `cols` second (each where >= 0); -1 with a ValueError naming
 * it (released then). */
static int take(PyObject *object, Py_buffer *view, const char *name, const char *format,
                int ndim, Py_ssize_t rows, Py_ssize_t cols, int writable)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, view, flags) < 0)
        return -1;
    if (PyBuffer_IsContiguous(view, 'C') && view->ndim == ndim && view->format != NULL
            && strcmp(view->format, format) == 0
            && view->itemsize == (strcmp(format, "?") == 0 ? 1 : 8)
            && (rows < 0 || view->shape[0] == rows)
            && (ndim == 1 || cols < 0 || view->shape[1] == cols))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous %s array of %d "
                 "dimensions (%zd, %zd)", name, format, ndim, rows, cols);
    PyBuffer_Release(view);
    return -1;
}

/*
 * log_a_ints(log_q, scale, first, log2, log4, i, exact, lo_idx, hi_idx, deltas, log_comb,
 *            inside, out)
 */
static PyObject *log_a_ints(PyObject *self, PyObject *args)
{
    double log_q, scale, first, log2, log4;
    PyObject *objects[8];
    if (!PyArg_ParseTuple(args, "dddddOOOOOOOO:log_a_ints", &log_q, &scale, &first, &log2,
                          &log4, &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &objects[7]))
        return NULL;
    Py_buffer views[8];
    int taken = 0;
    PyObject *result = NULL;
    double *work = NULL;
    /* i (T,), exact (orders,), lo_idx and hi_idx (n_exact - 1,), deltas, log_comb and inside
     * (orders, T), out (orders,) */
    if (take(objects[0], &views[0], "i", "d", 1, -1, -1, 0) < 0)
        goto finish;
    taken = 1;
    Py_ssize_t terms = views[0].shape[0];
    if (take(objects[1], &views[1], "exact", "?", 1, -1, -1, 0) < 0)
        goto finish;
    taken = 2;
    Py_ssize_t orders = views[1].shape[0];
    if (take(objects[2], &views[2], "lo_idx", "l", 1, -1, -1, 0) < 0)
        goto finish;
    taken = 3;
    Py_ssize_t tight_terms = views[2].shape[0];
    const Py_ssize_t shapes[5][3] = {{1, tight_terms, -1}, {1, -1, -1}, {2, orders, terms},
                                     {2, orders, terms}, {1, orders, -1}};
    const char *names[5] = {"hi_idx", "deltas", "log_comb", "inside", "out"};
    const char *formats[5] = {"l", "d", "d", "?", "d"};
    for (int k = 0; k < 5; k++) {
        if (take(objects[3 + k], &views[3 + k], names[k], formats[k], (int)shapes[k][0],
                 shapes[k][1], shapes[k][2], k == 4) < 0)
            goto finish;
        taken = 4 + k;
    }
    if (terms < 1 || orders < 1 || tight_terms > terms) {
        PyErr_SetString(PyExc_ValueError, "i, exact, lo_idx are not allowed; must hold >= 1 "
                        "terms, >= 1 orders and at most as many exact terms as terms");
        goto finish;
    }
    const double *i = views[0].buf, *deltas = views[4].buf, *log_comb = views[5].buf;
    const char *exact = views[1].buf, *inside = views[6].buf;
    const int64_t *lo = views[2].buf, *hi = views[3].buf;
    Py_ssize_t n_deltas = views[4].shape[0];
    double *out = views[7].buf;
    work = malloc(sizeof(double) * (size_t)(2 * terms + 2 * orders * terms + 5 * orders));
    if (work == NULL) {
        PyErr_NoMemory();
        goto finish;
    }
    /* separate input and output buffers, as numpy's own calls had */
    double *bound = work, *padded = bound + terms;
    double *shifted = padded + terms, *powers = shifted + orders * terms;
    double *top = powers + orders * terms, *neg_top = top + orders, *e_top = neg_top + orders;
    double *sums = e_top + orders, *logs = sums + orders;
    for (Py_ssize_t t = 0; t < terms; t++) /* _LOG2 + (i - 1.0) * i / (2.0 * sigma**2) */
        bound[t] = log2 + (i[t] - 1.0) * i[t] / scale;
    for (Py_ssize_t t = 0; t < terms; t++) {
        if (t >= tight_terms) {
            padded[t] = INFINITY;
            continue;
        }
        if (lo[t] < 0 || lo[t] >= n_deltas || hi[t] < 0 || hi[t] >= n_deltas) {
            PyErr_Format(PyExc_ValueError, "deltas of %zd values is not allowed; must reach "
                         "index %lld", n_deltas, (long long)(lo[t] > hi[t] ? lo[t] : hi[t]));
            goto finish;
        }
        padded[t] = minimum(log4 + 0.5 * (deltas[lo[t]] + deltas[hi[t]]), bound[t]);
    }
    for (Py_ssize_t o = 0; o < orders; o++) {
        double *row = shifted + o * terms; /* the terms, then less their largest */
        const double *comb = log_comb + o * terms;
        double largest = -INFINITY;
        for (Py_ssize_t t = 0; t < terms; t++) {
            double value = (exact[o] ? padded[t] : bound[t]) + i[t] * log_q + comb[t];
            if (t == 0)
                value = 2.0 * log_q + comb[0] + first;
            row[t] = inside[o * terms + t] ? value : -INFINITY;
            largest = t == 0 ? row[0] : maximum(largest, row[t]);
        }
        top[o] = maximum(largest, 0.0); /* np.maximum(terms.max(axis=1), 0.0) */
        for (Py_ssize_t t = 0; t < terms; t++)
            row[t] = row[t] - top[o];
        neg_top[o] = -top[o];
    }
    apply(&exp_loop, shifted, powers, orders * terms);
    apply(&exp_loop, neg_top, e_top, orders);
    for (Py_ssize_t o = 0; o < orders; o++)
        sums[o] = e_top[o] + add_reduce(&add_loop, powers + o * terms, terms);
    apply(&log_loop, sums, logs, orders);
    for (Py_ssize_t o = 0; o < orders; o++)
        out[o] = top[o] + logs[o];
    result = Py_NewRef(Py_None);
finish:
    free(work);
    for (int k = 0; k < taken; k++)
        PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"log_forward_diffs", log_forward_diffs, METH_VARARGS,
     "log_forward_diffs(scale, n, out): fill float64 `out` (n + 2) with log|Δ^{i+1}| at 0 "
     "(WBK 2019, Thm 27) of the CGF x(x + 1)/scale, scale = 2σ² as Python computes it "
     "(σ**2 is C's pow), bit for bit the numpy formulation."},
    {"log_a_ints", log_a_ints, METH_VARARGS,
     "log_a_ints(log_q, scale, first, log2, log4, i, exact, lo_idx, hi_idx, deltas, log_comb, "
     "inside, out): fill float64 `out` (orders) with log A_α of `accountant._log_a_ints` from "
     "its scalars (scale = 2σ²) and its order grid, bit for bit the numpy formulation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wbk",
    "The WBK bound's forward differences and log A_α on numpy's float64 loops.", -1, methods,
};

PyMODINIT_FUNC PyInit__wbk(void)
{
    const LoopSpec loops[] = {{"numpy", "exp", 1, 1, &exp_loop},
                              {"numpy", "log", 1, 1, &log_loop},
                              {"numpy", "log1p", 1, 1, &log1p_loop},
                              {"numpy", "add", 2, 1, &add_loop}};
    return find_loops(loops, 4) < 0 ? NULL : PyModule_Create(&module);
}
