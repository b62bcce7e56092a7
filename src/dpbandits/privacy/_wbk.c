/*
 * The forward-difference recursion of the Wang–Balle–Kasiviswanathan bound (WBK 2019, Thm 27)
 * that `accountant._log_forward_diffs` documents: log-magnitudes and signs of the successive
 * differences of (1, e^{cgf(0)}, e^{cgf(1)}, ...), one row of the difference triangle at a time.
 *
 * Every operation is the one numpy applies elementwise in the vectorised formulation: IEEE
 * subtraction, absolute value, maximum, addition and comparisons, done here in C, and e^x and
 * log1p(x) through numpy's own compiled loops for float64 (the `functions` of the `np.exp` and
 * `np.log1p` ufuncs, the SIMD kernels numpy selected for this CPU), so the values are numpy's
 * bit for bit, without one Python call per row.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/ndarraytypes.h"
#include "numpy/ufuncobject.h"

#include "../numpy_loops.h"

static Loop exp_loop, log1p_loop;

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

static PyMethodDef methods[] = {
    {"log_forward_diffs", log_forward_diffs, METH_VARARGS,
     "log_forward_diffs(scale, n, out): fill float64 `out` (n + 2) with log|Δ^{i+1}| at 0 "
     "(WBK 2019, Thm 27) of the CGF x(x + 1)/scale, scale = 2σ² as Python computes it "
     "(σ**2 is C's pow), bit for bit the numpy formulation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wbk",
    "The WBK forward-difference recursion on numpy's float64 loops.", -1, methods,
};

PyMODINIT_FUNC PyInit__wbk(void)
{
    const LoopSpec loops[] = {{"numpy", "exp", 1, 1, &exp_loop},
                              {"numpy", "log1p", 1, 1, &log1p_loop}};
    return find_loops(loops, 2) < 0 ? NULL : PyModule_Create(&module);
}
