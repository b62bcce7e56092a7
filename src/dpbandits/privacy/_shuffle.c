/*
 * The per-user passes of shuffle vector summation (`vector_sum.py`) and of P_GD's gradient
 * clipping (`shuffle_gd.py`) in one call each, on the users' n × D vectors:
 * - `clip_rows`: each row scaled by min(1, L/max(‖v‖, 1e-300)), as `clipped_gradients_rows`;
 * - `max_row_norm`: max ‖v‖ over the rows, as `_check_vectors` finds it (NaN if one is NaN);
 * - `level_sums`: Σ_u ȳ_u per coordinate, ȳ = ⌊w g/L⌋ + [U < frac], w = v + L clipped to
 *   [0, 2g] after scaling, from the rounding draws U the caller made (`_rounded_levels`).
 *
 * Every number is the one numpy computes, by the same code (tests/privacy/test_vector_sum.py):
 * the row norms are numpy's einsum (PyArray_EinsteinSum, what `np.einsum` calls) and sqrt,
 * the rest single IEEE operations in numpy's order (compiled with -ffp-contract=off), and the
 * level sums integers, exact in any order. A NaN in `level_sums` returns None: the caller then
 * makes numpy's calls. NaN norms and clipped rows may differ from numpy's in their sign bit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_shuffle.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "../numpy_loops.h"

/* A C-contiguous aligned native float64 (n, D) array, n, D >= 1 (writable if asked). */
static int rows(PyObject *object, const char *name, int writable)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 2
            && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)
            && PyArray_DIM(a, 0) >= 1 && PyArray_DIM(a, 1) >= 1
            && (!writable || PyArray_ISWRITEABLE(a)))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous native%s "
                 "float64 array (n, D) with n, D >= 1", name, writable ? " writable" : "");
    return -1;
}

/* `np.sqrt(np.einsum("ij,ij->i", v, v))`: a new (n,) array, NULL with an error. */
static PyArrayObject *row_norms(PyArrayObject *v)
{
    PyArrayObject *norms = row_dots(v, v);
    if (norms == NULL)
        return NULL;
    double *values = (double *)PyArray_DATA(norms);
    for (npy_intp i = 0; i < PyArray_DIM(norms, 0); i++)
        values[i] = sqrt(values[i]);
    return norms;
}

static PyObject *clip_rows(PyObject *self, PyObject *args)
{
    PyObject *v_obj;
    double bound;
    if (!PyArg_ParseTuple(args, "Od:clip_rows", &v_obj, &bound) || rows(v_obj, "v", 1) < 0)
        return NULL;
    PyArrayObject *v = (PyArrayObject *)v_obj;
    PyArrayObject *norms = row_norms(v);
    if (norms == NULL)
        return NULL;
    npy_intp n = PyArray_DIM(v, 0), d = PyArray_DIM(v, 1);
    double *x = (double *)PyArray_DATA(v);
    const double *norm = (const double *)PyArray_DATA(norms);
    for (npy_intp i = 0; i < n; i++) {
        /* np.minimum(1.0, bound / np.maximum(norm, 1e-300)), NaN kept as numpy keeps it */
        double floored = isnan(norm[i]) || norm[i] >= 1e-300 ? norm[i] : 1e-300;
        double ratio = bound / floored;
        double factor = isnan(ratio) || ratio < 1.0 ? ratio : 1.0;
        for (npy_intp b = 0; b < d; b++)
            x[i * d + b] = x[i * d + b] * factor;
    }
    Py_DECREF(norms);
    Py_RETURN_NONE;
}

static PyObject *max_row_norm(PyObject *self, PyObject *args)
{
    PyObject *v_obj;
    if (!PyArg_ParseTuple(args, "O:max_row_norm", &v_obj) || rows(v_obj, "v", 0) < 0)
        return NULL;
    PyArrayObject *norms = row_norms((PyArrayObject *)v_obj);
    if (norms == NULL)
        return NULL;
    double top = nan_max((const double *)PyArray_DATA(norms), PyArray_DIM(norms, 0));
    Py_DECREF(norms);
    return PyFloat_FromDouble(top);
}

static PyObject *level_sums(PyObject *self, PyObject *args)
{
    PyObject *v_obj, *u_obj;
    double bound;
    long long g;
    if (!PyArg_ParseTuple(args, "OdLO:level_sums", &v_obj, &bound, &g, &u_obj)
            || rows(v_obj, "v", 0) < 0 || rows(u_obj, "uniforms", 0) < 0)
        return NULL;
    PyArrayObject *v = (PyArrayObject *)v_obj, *u = (PyArrayObject *)u_obj;
    npy_intp n = PyArray_DIM(v, 0), d = PyArray_DIM(v, 1);
    if (PyArray_DIM(u, 0) != n || PyArray_DIM(u, 1) != d || g < 1 || g > ((int64_t)1 << 40)) {
        PyErr_SetString(PyExc_ValueError, "uniforms, g are not allowed; must be the shape of "
                        "v, and 1 <= g <= 2^40");
        return NULL;
    }
    int64_t *totals = PyMem_Calloc((size_t)d, sizeof(int64_t));
    if (totals == NULL)
        return PyErr_NoMemory();
    const double *x = (const double *)PyArray_DATA(v), *draws = (const double *)PyArray_DATA(u);
    double per = (double)g / bound, top = 2.0 * (double)g; /* params.g / params.bound, 2.0 * g */
    int finite = 1;
    for (npy_intp i = 0; i < n && finite; i++)
        for (npy_intp b = 0; b < d; b++) {
            double scaled = (x[i * d + b] + bound) * per;
            if (isnan(scaled)) {
                finite = 0;
                break;
            }
            scaled = scaled > 0.0 ? scaled : 0.0; /* np.clip(·, 0.0, 2g) */
            scaled = scaled < top ? scaled : top;
            double base = floor(scaled);
            totals[b] += (int64_t)base + (draws[i * d + b] < scaled - base);
        }
    PyObject *out = NULL;
    if (!finite)
        out = Py_NewRef(Py_None);
    else if ((out = PyArray_SimpleNew(1, &d, NPY_DOUBLE)) != NULL)
        for (npy_intp b = 0; b < d; b++)
            ((double *)PyArray_DATA((PyArrayObject *)out))[b] = (double)totals[b];
    PyMem_Free(totals);
    return out;
}

static PyMethodDef methods[] = {
    {"clip_rows", clip_rows, METH_VARARGS,
     "clip_rows(v, bound): each row of the float64 (n, D) v scaled in place by "
     "min(1, bound/max(norm, 1e-300)), as `clipped_gradients_rows`."},
    {"max_row_norm", max_row_norm, METH_VARARGS,
     "max_row_norm(v) -> float: the largest row norm of the float64 (n, D) v (NaN if one is "
     "NaN), as `_check_vectors` finds it."},
    {"level_sums", level_sums, METH_VARARGS,
     "level_sums(v, bound, g, uniforms) -> float64 (D,) or None: the sums over users of the "
     "randomly rounded levels of P_vec, from the rounding draws `uniforms` (n, D); None if "
     "a scaled value is NaN."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shuffle",
    "The per-user passes of shuffle vector summation, in numpy's arithmetic.", -1, methods,
};

PyMODINIT_FUNC PyInit__shuffle(void)
{
    import_array();
    return PyModule_Create(&module);
}
