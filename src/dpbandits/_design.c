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
 *   -ffp-contract=off: no fused multiply-add), with Python's ZeroDivisionError where its
 *   float division raises. Where the weights come out NaN, their NaNs' sign bits may differ.
 *
 * `draw` also makes `rng.choice(n, p=w / w.sum())` of the clipped weights, as Shuffle-GLM picks
 * its action from the design: numpy's maximum and add loops, Generator.choice's checks, sums
 * and one `random()` draw (tests/test_design.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_design.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#include "numpy/random/bitgen.h"
#include "numpy_loops.h"

#define D sizeof(double)

static Loop matmul_loop, solve_loop, cholesky_loop, svd_loop, maximum_loop, add_loop;

/* `matmul_with` numpy's matmul loop, b C-ordered (or a vector). */
static void matmul(const double *a, npy_intp a_m, npy_intp a_n, npy_intp m, npy_intp n,
                   const double *b, npy_intp p, int vector, double *out)
{
    matmul_with(&matmul_loop, a, a_m, a_n, m, n, b, p * (npy_intp)D, D, p, vector, out);
}

/* `int(h.argmax())` of a float64 vector. */
static npy_intp argmax(PyArrayObject *h)
{
    npy_intp j = 0;
    PyDataType_GetArrFuncs(PyArray_DESCR(h))->argmax(PyArray_DATA(h), PyArray_DIM(h, 0), &j, h);
    return j;
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

/* V⁻¹ = solve(xsᵀxs/k, I) of the start's rows xs (k×k, C-ordered) into `v_inv`: 0, or 1 if
 * it is not finite. */
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
    return !all_finite(v_inv, k * k);
}

/* -1 with Python's ZeroDivisionError, as the numpy formulation's float division raises it. */
static Py_ssize_t zero_division(void)
{
    PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
    return -1;
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
        if (g - 1.0 == 0.0) /* Python's float division raises here */
            return zero_division();
        double step = (g / (double)k - 1.0) / (g - 1.0);
        double keep = 1.0 - step;
        for (npy_intp i = 0; i < n; i++)
            weights[i] *= keep;
        weights[j] += step;
        /* ((1 − λ)V + λ x xᵀ)⁻¹ = (V⁻¹ − u uᵀ·λ/(1 − λ + λg))/(1 − λ), u = V⁻¹x_j */
        matmul(v_inv, k * (npy_intp)D, D, k, k, x + j * k, 1, 1, u);
        if (1.0 - step + step * g == 0.0)
            return zero_division();
        double c = step / (1.0 - step + step * g);
        for (npy_intp a = 0; a < k; a++)
            for (npy_intp b = 0; b < k; b++)
                v_inv[a * k + b] = (v_inv[a * k + b] - u[a] * u[b] * c) / keep;
    }
}

/* The thin SVD of the C-ordered n×d `a` (p = min(n, d)): singular values into `s` and Vᵀ
 * into `vt` (p×d), `u` n×p scratch; 1 if a singular value is not finite. */
static int thin_svd(const double *a, npy_intp n, npy_intp d, double *u, double *s, double *vt)
{
    npy_intp p = n < d ? n : d;
    char *args[4] = {(char *)a, (char *)u, (char *)s, (char *)vt};
    npy_intp dimensions[4] = {1, n, d, p};
    npy_intp steps[11] = {0, 0, 0, 0, d * D, D, p * D, D, D, d * D, D};
    svd_loop.function(args, dimensions, steps, svd_loop.data);
    return !all_finite(s, p);
}

/* g = max_j h_j, h = x_jᵀV(π)⁻¹x_j by Cholesky, as `design.leverages(x, π).max()`
 * (`y` n×k, `v` and `chol` k×k scratch); 1 if a factor or solve is not finite. */
static int leverage_max(PyArrayObject *x_arr, const double *weights, double *y, double *v,
                        double *chol, double *g)
{
    npy_intp n = PyArray_DIM(x_arr, 0), k = PyArray_DIM(x_arr, 1);
    const double *x = (const double *)PyArray_DATA(x_arr);
    for (npy_intp i = 0; i < n; i++)
        for (npy_intp b = 0; b < k; b++)
            y[i * k + b] = x[i * k + b] * weights[i];
    matmul(y, D, k * D, k, n, x, k, 0, v); /* (x * w[:, None]).T @ x */
    char *chol_args[2] = {(char *)v, (char *)chol};
    npy_intp chol_dimensions[2] = {1, k};
    npy_intp chol_steps[6] = {0, 0, k * D, D, k * D, D};
    cholesky_loop.function(chol_args, chol_dimensions, chol_steps, cholesky_loop.data);
    if (!all_finite(chol, k * k))
        return 1;
    npy_intp shape[2] = {k, n};
    PyArrayObject *z = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    if (z == NULL)
        return -1;
    char *solve_args[3] = {(char *)chol, (char *)x, PyArray_DATA(z)};
    npy_intp solve_dimensions[3] = {1, k, n};
    npy_intp solve_steps[9] = {0, 0, 0, k * D, D, D, k * D, n * D, D}; /* b = x.T */
    solve_loop.function(solve_args, solve_dimensions, solve_steps, solve_loop.data);
    if (!all_finite((const double *)PyArray_DATA(z), k * n)) {
        Py_DECREF(z);
        return 1;
    }
    PyArrayObject *ops[2] = {z, z};
    PyArrayObject *h = PyArray_EinsteinSum((char *)"ij,ij->j", 2, ops, NULL, NPY_KEEPORDER,
                                           NPY_SAFE_CASTING, NULL);
    Py_DECREF(z);
    if (h == NULL)
        return -1;
    *g = nan_max((const double *)PyArray_DATA(h), n);
    Py_DECREF(h);
    return 0;
}

/* The points argument: a C-contiguous native float64 array (n, d), n, d >= 1. */
static PyArrayObject *points_of(PyObject *a_obj)
{
    PyArrayObject *a_arr = (PyArrayObject *)a_obj;
    if (!PyArray_Check(a_obj) || PyArray_TYPE(a_arr) != NPY_DOUBLE || PyArray_NDIM(a_arr) != 2
            || !PyArray_IS_C_CONTIGUOUS(a_arr) || !PyArray_ISALIGNED(a_arr)
            || !PyArray_ISNOTSWAPPED(a_arr) || PyArray_DIM(a_arr, 0) < 1
            || PyArray_DIM(a_arr, 1) < 1) {
        PyErr_SetString(PyExc_ValueError, "points are not allowed; must be a C-contiguous "
                        "native float64 array (n, d) with n, d >= 1");
        return NULL;
    }
    return a_arr;
}

/* `design`'s (weights, basis, g, iterations) or None for checked points. */
static PyObject *design_of(PyArrayObject *a_arr, double tol, Py_ssize_t max_iter,
                           double rank_tol)
{
    npy_intp n = PyArray_DIM(a_arr, 0), d = PyArray_DIM(a_arr, 1), p = n < d ? n : d;
    const double *a = (const double *)PyArray_DATA(a_arr);
    PyObject *result = NULL, *basis = NULL, *weights = NULL;
    PyArrayObject *x_arr = NULL, *scratch = NULL;
    npy_intp *start = NULL;
    double *svd_work = PyMem_Malloc(D * (size_t)(n * p + p + p * d));
    if (svd_work == NULL)
        return PyErr_NoMemory();
    double *sv = svd_work + n * p, *vt = sv + p;
    if (thin_svd(a, n, d, svd_work, sv, vt)) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    double threshold = rank_tol * (sv[0] > 1.0 ? sv[0] : 1.0);
    npy_intp k = 0;
    for (npy_intp i = 0; i < p; i++)
        k += sv[i] > threshold;
    npy_intp basis_shape[2] = {k, d}, x_shape[2] = {n, k};
    basis = PyArray_SimpleNew(2, basis_shape, NPY_DOUBLE);
    weights = PyArray_ZEROS(1, &n, NPY_DOUBLE, 0);
    x_arr = (PyArrayObject *)PyArray_SimpleNew(2, x_shape, NPY_DOUBLE);
    scratch = (PyArrayObject *)PyArray_SimpleNew(2, x_shape, NPY_DOUBLE);
    double *work = PyMem_Malloc(D * (size_t)(n + 5 * k * k + k + 1));
    start = PyMem_Malloc(sizeof(npy_intp) * (size_t)(k + 1));
    if (basis == NULL || weights == NULL || x_arr == NULL || scratch == NULL || work == NULL
            || start == NULL) {
        PyMem_Free(work);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(PyArray_DATA((PyArrayObject *)basis), vt, D * (size_t)(k * d));
    if (k == 0) { /* all zero: the caller refuses the set */
        PyMem_Free(work);
        result = Py_BuildValue("(OOdn)", weights, basis, NAN, (Py_ssize_t)0);
        goto done;
    }
    const double *u_rows = (const double *)PyArray_DATA((PyArrayObject *)basis);
    double *x = (double *)PyArray_DATA(x_arr);
    matmul_with(&matmul_loop, a, d * D, D, n, d, u_rows, D, d * D, k, 0, x); /* a @ basis.T */
    double *ru = work, *xs = ru + n, *gram = xs + k * k, *eye = gram + k * k;
    double *v_inv = eye + k * k, *chol = v_inv + k * k, *u = chol + k * k;
    double *w = (double *)PyArray_DATA((PyArrayObject *)weights), g = NAN;
    Py_ssize_t it = -1;
    int status = greedy(x_arr, scratch, ru, u, start);
    if (status == 0) {
        for (npy_intp c = 0; c < k; c++) {
            w[start[c]] = 1.0 / (double)k;
            memcpy(xs + c * k, x + start[c] * k, D * (size_t)k);
        }
        status = start_inverse(xs, k, gram, eye, v_inv);
    }
    if (status == 0)
        status = (it = fw_steps(x_arr, w, v_inv, tol, max_iter, scratch, u)) < 0 ? -1 : 0;
    if (status == 0)
        status = leverage_max(x_arr, w, (double *)PyArray_DATA(scratch), gram, chol, &g);
    PyMem_Free(work);
    if (status == 0)
        result = Py_BuildValue("(OOdn)", weights, basis, g, it);
    else if (status == 1)
        result = Py_NewRef(Py_None);
done:
    PyMem_Free(svd_work);
    PyMem_Free(start);
    Py_XDECREF(basis);
    Py_XDECREF(weights);
    Py_XDECREF((PyObject *)x_arr);
    Py_XDECREF((PyObject *)scratch);
    return result;
}

static PyObject *design(PyObject *self, PyObject *args)
{
    PyObject *a_obj;
    double tol, rank_tol;
    Py_ssize_t max_iter;
    if (!PyArg_ParseTuple(args, "Odnd:design", &a_obj, &tol, &max_iter, &rank_tol))
        return NULL;
    PyArrayObject *a_arr = points_of(a_obj);
    return a_arr == NULL ? NULL : design_of(a_arr, tol, max_iter, rank_tol);
}

/* `Generator.choice(n, p=p)` for n >= 1 probabilities that pass its checks (else -1): the
 * cumulative sums divided by the last, one `random()` draw u, and the first index whose sum
 * exceeds u (`searchsorted(u, side="right")` on sums that never decrease). */
static npy_intp choice(bitgen_t *bitgen, const double *p, npy_intp n, double *cdf)
{
    double total = p[0], carry = 0.0; /* numpy's Kahan sum of p, which must be 1 ± √eps */
    int negative = p[0] < 0.0;
    for (npy_intp i = 1; i < n; i++) {
        double y = p[i] - carry, t = total + y;
        carry = (t - total) - y;
        total = t;
        negative = negative || p[i] < 0.0;
    }
    if (negative || isnan(total) || fabs(total - 1.0) > sqrt(DBL_EPSILON))
        return -1;
    cdf[0] = p[0];
    for (npy_intp i = 1; i < n; i++)
        cdf[i] = cdf[i - 1] + p[i];
    const double last = cdf[n - 1];
    for (npy_intp i = 0; i < n; i++)
        cdf[i] = cdf[i] / last;
    const double u = bitgen->next_double(bitgen->state);
    npy_intp i = 0;
    while (i < n && !(u < cdf[i]))
        i++;
    return i;
}

/*
 * draw(points, tol, max_iter, rank_tol, capsule) → int or None
 */
static PyObject *draw(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *capsule;
    double tol, rank_tol;
    Py_ssize_t max_iter;
    if (!PyArg_ParseTuple(args, "OdndO:draw", &a_obj, &tol, &max_iter, &rank_tol, &capsule))
        return NULL;
    PyArrayObject *a_arr = points_of(a_obj);
    if (a_arr == NULL)
        return NULL;
    if (!PyCapsule_IsValid(capsule, "BitGenerator")) {
        PyErr_SetString(PyExc_TypeError, "capsule is not allowed; must be "
                        "rng.bit_generator.capsule");
        return NULL;
    }
    bitgen_t *bitgen = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    npy_intp n = PyArray_DIM(a_arr, 0);
    if (!all_finite((const double *)PyArray_DATA(a_arr), n * PyArray_DIM(a_arr, 1))
            || !(tol > 0.0 && tol <= 1.0))
        Py_RETURN_NONE; /* `compute_design` refuses them */
    PyObject *found = design_of(a_arr, tol, max_iter, rank_tol);
    if (found == NULL || found == Py_None)
        return found;
    PyArrayObject *weights = (PyArrayObject *)PyTuple_GET_ITEM(found, 0);
    npy_intp k = PyArray_DIM((PyArrayObject *)PyTuple_GET_ITEM(found, 1), 0);
    double g = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(found, 2));
    if (k == 0 || g > (double)(2 * k) * (1 + 1e-9)) { /* `spanned`, `checked_g` raise */
        Py_DECREF(found);
        Py_RETURN_NONE;
    }
    double *work = PyMem_Malloc(D * (size_t)(2 * n));
    if (work == NULL) {
        Py_DECREF(found);
        return PyErr_NoMemory();
    }
    /* p = np.clip(weights, 0.0, None) / its sum: numpy's maximum loop, its add loop as the
     * reduction calls it (from 0.0), then one division each */
    double *p = work, zero = 0.0;
    char *max_args[3] = {PyArray_DATA(weights), (char *)&zero, (char *)p};
    npy_intp max_steps[3] = {D, 0, D};
    maximum_loop.function(max_args, &n, max_steps, maximum_loop.data);
    double total = add_reduce(&add_loop, p, n);
    Py_DECREF(found);
    for (npy_intp i = 0; i < n; i++)
        p[i] = p[i] / total;
    npy_intp index = choice(bitgen, p, n, work + n);
    PyMem_Free(work);
    if (index < 0)
        Py_RETURN_NONE; /* `Generator.choice` raises */
    return PyLong_FromSsize_t((Py_ssize_t)index);
}

static PyMethodDef methods[] = {
    {"design", design, METH_VARARGS,
     "design(points, tol, max_iter, rank_tol) -> (weights, basis, g, iterations) or None: "
     "the G-optimal design of `design.compute_design` on the rows of the float64 C-ordered "
     "points (n, d): the span's basis (rows of Vᵀ whose singular value exceeds rank_tol·"
     "max(1, s₁)), the greedy spanning start, Frank–Wolfe steps until max h <= (1 + tol)·k "
     "or max_iter steps, and g recomputed by Cholesky; None where a decomposition is not "
     "finite (numpy's calls then raise or give their result). An all-zero set has an empty "
     "basis and no steps."},
    {"draw", draw, METH_VARARGS,
     "draw(points, tol, max_iter, rank_tol, capsule) -> int or None: the index that "
     "`rng.choice(n, p=w / w.sum())` draws from rng.bit_generator.capsule (one random() "
     "draw; hold the generator's lock), w = np.clip(weights, 0, None) of `design`'s weights; "
     "None, drawing nothing, where `design.g_optimal_design` or the choice would raise or "
     "`design` gives None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_design",
    "Frank–Wolfe for the G-optimal design on numpy's own float64 kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__design(void)
{
    import_array();
    const char *linalg = "numpy.linalg._umath_linalg";
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {linalg, "solve", 2, 1, &solve_loop},
                              {linalg, "cholesky_lo", 1, 1, &cholesky_loop},
                              {linalg, "svd_s", 1, 3, &svd_loop},
                              {"numpy", "maximum", 2, 1, &maximum_loop},
                              {"numpy", "add", 2, 1, &add_loop}};
    return find_loops(loops, 6) < 0 ? NULL : PyModule_Create(&module);
}
