/*
 * `design.frank_wolfe` in one call (Lattimore & Szepesvári, Ch. 21): the greedy spanning
 * start (k rows by largest residual norm, Gram–Schmidt deflation), V(π)⁻¹ of its uniform
 * design, then the Frank–Wolfe steps: the leverages h = einsum("ij,ij->i", x @ V⁻¹, x), the
 * first largest h_j, the stop test, the exact line-search step, the weights scaled and moved
 * to j, and the Sherman–Morrison update of V⁻¹.
 *
 * Every operation is the one the numpy formulation makes, by the same code, so the weights are
 * its bits (tests/test_design.py):
 * - products of matrices and vectors are numpy's float64 matmul loop (the `functions` of
 *   `np.matmul`), called with the dimensions and steps numpy passes for these arrays;
 * - the solve is the loop of numpy.linalg's `solve` gufunc (LAPACK's gesv, as
 *   `small_linalg.solve`), and `numpy.linalg.solve` itself where that gives a non-finite V⁻¹;
 * - the einsums are numpy's (PyArray_EinsteinSum, what `np.einsum` calls);
 * - the argmax is numpy's float64 argmax (the dtype's `argmax`: the first largest, or the
 *   first NaN);
 * - the rest are single IEEE operations in the order Python evaluates them (compiled with
 *   -ffp-contract=off: no fused multiply-add).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_design.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include <math.h>
#include <string.h>

#include "numpy_loops.h"

#define D sizeof(double)

static Loop matmul_loop, solve_loop;
static PyObject *linalg_solve; /* numpy.linalg.solve */

/* out (C-ordered m×p) = a @ b by numpy's matmul loop, a m×n with steps (a_m, a_n) and b n×p
 * C-ordered, or b a vector (p = 1; numpy steps 0 along its added axis and the output's). */
static void matmul(const double *a, npy_intp a_m, npy_intp a_n, npy_intp m, npy_intp n,
                   const double *b, npy_intp p, int vector, double *out)
{
    char *args[3] = {(char *)a, (char *)b, (char *)out};
    npy_intp dimensions[4] = {1, m, n, p};
    npy_intp column = vector ? 0 : (npy_intp)D;
    npy_intp steps[9] = {0, 0, 0, a_m, a_n, p * (npy_intp)D, column, p * (npy_intp)D, column};
    matmul_loop.function(args, dimensions, steps, matmul_loop.data);
}

/* `einsum("ij,ij->i", a, b)`: a new (n,) array, NULL with an error. */
static PyArrayObject *row_dots(PyArrayObject *a, PyArrayObject *b)
{
    PyArrayObject *ops[2] = {a, b};
    return PyArray_EinsteinSum((char *)"ij,ij->i", 2, ops, NULL, NPY_KEEPORDER,
                               NPY_SAFE_CASTING, NULL);
}

/* `int(h.argmax())` of a float64 vector. */
static npy_intp argmax(PyArrayObject *h)
{
    npy_intp j = 0;
    PyDataType_GetArrFuncs(PyArray_DESCR(h))->argmax(PyArray_DATA(h), PyArray_DIM(h, 0), &j, h);
    return j;
}

/* Every entry finite. */
static int all_finite(const double *v, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* The greedy spanning start: k rows of the n×k `x`, each the largest residual norm after
 * deflating the rows picked before (`residual` n×k and `ru` n scratch, `u` k). */
static int greedy(PyArrayObject *x_arr, PyArrayObject *residual, double *ru, double *u,
                  npy_intp *start)
{
    npy_intp n = PyArray_DIM(x_arr, 0), k = PyArray_DIM(x_arr, 1);
    double *r = (double *)PyArray_DATA(residual);
    memcpy(r, PyArray_DATA(x_arr), D * (size_t)(n * k));
    for (npy_intp c = 0; c < k; c++) {
        PyArrayObject *norms = row_dots(residual, residual);
        if (norms == NULL)
            return -1;
        double *values = (double *)PyArray_DATA(norms);
        for (npy_intp i = 0; i < c; i++)
            values[start[i]] = -1.0;
        npy_intp j = argmax(norms);
        double length = sqrt(values[j]);
        Py_DECREF(norms);
        start[c] = j;
        for (npy_intp b = 0; b < k; b++)
            u[b] = r[j * k + b] / length;
        matmul(r, k * (npy_intp)D, D, n, k, u, 1, 1, ru);
        for (npy_intp i = 0; i < n; i++)
            for (npy_intp b = 0; b < k; b++)
                r[i * k + b] -= ru[i] * u[b];
    }
    return 0;
}

/* V⁻¹ = solve(xsᵀxs/k, I) of the start's rows xs (k×k, C-ordered) into `v_inv`. */
static int start_inverse(const double *xs, npy_intp k, double *gram, double *eye, double *v_inv)
{
    matmul(xs, D, k * (npy_intp)D, k, k, xs, k, 0, gram); /* xs.T @ xs: numpy's syrk case */
    for (npy_intp i = 0; i < k * k; i++) {
        gram[i] /= (double)k;
        eye[i] = i % (k + 1) == 0 ? 1.0 : 0.0;
    }
    char *args[3] = {(char *)gram, (char *)eye, (char *)v_inv};
    npy_intp dimensions[3] = {1, k, k};
    npy_intp row = k * (npy_intp)D;
    npy_intp steps[9] = {0, 0, 0, row, D, row, D, row, D};
    solve_loop.function(args, dimensions, steps, solve_loop.data);
    if (all_finite(v_inv, k * k))
        return 0;
    npy_intp dims[2] = {k, k};  /* numpy.linalg.solve raises, or returns what it gives */
    PyObject *a = PyArray_SimpleNewFromData(2, dims, NPY_DOUBLE, gram);
    PyObject *b = a == NULL ? NULL : PyArray_SimpleNewFromData(2, dims, NPY_DOUBLE, eye);
    PyObject *out = b == NULL ? NULL : PyObject_CallFunctionObjArgs(linalg_solve, a, b, NULL);
    PyArrayObject *solved = out == NULL ? NULL : (PyArrayObject *)PyArray_FROM_OTF(
        out, NPY_DOUBLE, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (solved != NULL)
        memcpy(v_inv, PyArray_DATA(solved), D * (size_t)(k * k));
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(out);
    Py_XDECREF(solved);
    return solved == NULL ? -1 : 0;
}

/* Frank–Wolfe steps from the design `weights` with V(π)⁻¹ `v_inv` (k×k) until
 * max h ≤ (1 + tol)·k or max_iter steps (`xv` an n×k array, `u` k scratch): the steps made,
 * or -1 with an error. */
static Py_ssize_t fw_steps(PyArrayObject *x_arr, double *weights, double *v_inv, double tol,
                           Py_ssize_t max_iter, PyArrayObject *xv, double *u)
{
    npy_intp n = PyArray_DIM(x_arr, 0), k = PyArray_DIM(x_arr, 1);
    const double *x = (const double *)PyArray_DATA(x_arr);
    double limit = (1.0 + tol) * (double)k;
    for (Py_ssize_t it = 0;; it++) {
        matmul(x, k * (npy_intp)D, D, n, k, v_inv, k, 0, (double *)PyArray_DATA(xv));
        PyArrayObject *h = row_dots(xv, x_arr);
        if (h == NULL)
            return -1;
        npy_intp j = argmax(h);
        double g = ((const double *)PyArray_DATA(h))[j];
        Py_DECREF(h);
        if (g <= limit || it >= max_iter)
            return it;
        double step = (g / (double)k - 1.0) / (g - 1.0);
        double keep = 1.0 - step;
        for (npy_intp i = 0; i < n; i++)
            weights[i] *= keep;
        weights[j] += step;
        /* ((1 − λ)V + λ x xᵀ)⁻¹ = (V⁻¹ − u uᵀ·λ/(1 − λ + λg))/(1 − λ), u = V⁻¹x_j */
        matmul(v_inv, k * (npy_intp)D, D, k, k, x + j * k, 1, 1, u);
        double c = step / (1.0 - step + step * g);
        for (npy_intp a = 0; a < k; a++)
            for (npy_intp b = 0; b < k; b++)
                v_inv[a * k + b] = (v_inv[a * k + b] - u[a] * u[b] * c) / keep;
    }
}

static PyObject *frank_wolfe(PyObject *self, PyObject *args)
{
    PyObject *x_obj;
    double tol;
    Py_ssize_t max_iter;
    if (!PyArg_ParseTuple(args, "Odn:frank_wolfe", &x_obj, &tol, &max_iter))
        return NULL;
    PyArrayObject *x_arr = (PyArrayObject *)x_obj;
    if (!PyArray_Check(x_obj) || PyArray_TYPE(x_arr) != NPY_DOUBLE || PyArray_NDIM(x_arr) != 2
            || !PyArray_IS_C_CONTIGUOUS(x_arr) || !PyArray_ISALIGNED(x_arr)
            || !PyArray_ISNOTSWAPPED(x_arr) || PyArray_DIM(x_arr, 1) < 1
            || PyArray_DIM(x_arr, 0) < PyArray_DIM(x_arr, 1)) {
        PyErr_SetString(PyExc_ValueError, "x is not allowed; must be a C-contiguous native "
                        "float64 array (n, k) with n >= k >= 1");
        return NULL;
    }
    npy_intp n = PyArray_DIM(x_arr, 0), k = PyArray_DIM(x_arr, 1);
    const double *x = (const double *)PyArray_DATA(x_arr);
    npy_intp shape[2] = {n, k};
    PyArrayObject *weights = (PyArrayObject *)PyArray_ZEROS(1, &n, NPY_DOUBLE, 0);
    PyArrayObject *scratch = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    double *work = PyMem_Malloc(D * (size_t)(n + 4 * k * k + k));
    npy_intp *start = PyMem_Malloc(sizeof(npy_intp) * (size_t)k);
    Py_ssize_t it = -1;
    if (weights == NULL || scratch == NULL || work == NULL || start == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    double *ru = work, *xs = ru + n, *gram = xs + k * k, *eye = gram + k * k;
    double *v_inv = eye + k * k, *u = v_inv + k * k;
    if (greedy(x_arr, scratch, ru, u, start) < 0)
        goto done;
    double *w = (double *)PyArray_DATA(weights);
    for (npy_intp c = 0; c < k; c++) {
        w[start[c]] = 1.0 / (double)k;
        memcpy(xs + c * k, x + start[c] * k, D * (size_t)k);
    }
    if (start_inverse(xs, k, gram, eye, v_inv) == 0)
        it = fw_steps(x_arr, w, v_inv, tol, max_iter, scratch, u);
done:
    Py_XDECREF(scratch);
    PyMem_Free(work);
    PyMem_Free(start);
    if (it < 0) {
        Py_XDECREF(weights);
        return NULL;
    }
    return Py_BuildValue("(Nn)", (PyObject *)weights, it);
}

static PyMethodDef methods[] = {
    {"frank_wolfe", frank_wolfe, METH_VARARGS,
     "frank_wolfe(x, tol, max_iter) -> (weights, iterations): the design on the rows of the "
     "float64 C-ordered x (n, k), n >= k, from the greedy spanning start, after Frank–Wolfe "
     "steps until max h <= (1 + tol)·k or max_iter steps."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_design",
    "Frank–Wolfe for the G-optimal design on numpy's own float64 kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__design(void)
{
    import_array();
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *kernels = PyImport_ImportModule("numpy.linalg._umath_linalg");
    PyObject *linalg = PyImport_ImportModule("numpy.linalg");
    int failed = numpy == NULL || kernels == NULL || linalg == NULL
                 || find_loop(numpy, "matmul", 2, &matmul_loop) < 0
                 || find_loop(kernels, "solve", 2, &solve_loop) < 0
                 || (linalg_solve = PyObject_GetAttrString(linalg, "solve")) == NULL;
    Py_XDECREF(numpy);
    Py_XDECREF(kernels);
    Py_XDECREF(linalg);
    if (failed)
        return NULL;
    return PyModule_Create(&module);
}
