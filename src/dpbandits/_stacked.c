/*
 * Per-round kernels on stacks of small matrices, for trials played in lockstep (Private-GLM's
 * driver, `policies/private_glm_lockstep.py`): one call per round for the whole stack instead
 * of a numpy call per operation:
 * - `release`: every tree's release 0.5·(S + Sᵀ) + shift·I of S = data sum + cover noise, and
 *   whether Gershgorin's discs leave it short of the PSD floor (`StackedTrees.query`);
 * - `release_eigh`: the same release's eigen-decomposition, eigenvalues clipped at the floor
 *   (`StackedTrees.query_eigh`);
 * - `above`: whether the largest eigenvalue of the symmetrised WᵀHW is above a threshold
 *   (`gen_eig_max_white(H, W) > threshold`, Private-GLM's Criterion II).
 *
 * Every number is the one numpy computes, by the same code, and every decision the one numpy's
 * numbers give (tests/test_stacked.py):
 * - sums, products and the symmetrisation are single IEEE operations in numpy's order
 *   (compiled with -ffp-contract=off: no fused multiply-add);
 * - WᵀH and (WᵀH)W are numpy's float64 matmul loop, eigen-decompositions the loops of
 *   numpy.linalg's `eigh_lo` and `eigvalsh_lo` gufuncs (LAPACK's syevd, as `small_linalg`);
 * - a Gershgorin bound decides only where it is clear of the threshold by far more than the
 *   rounding of either computation (MARGIN): a short release where numpy's own discs would say
 *   so, and not above where the largest eigenvalue LAPACK returns cannot reach the threshold. The
 *   matrices it does not settle go to LAPACK (`above`) or back to numpy (`release`, which
 *   then returns None for the short flags);
 * - a non-finite eigenvalue returns None: the caller then makes numpy's calls, which raise or
 *   return what `small_linalg` returns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_stacked.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "numpy_loops.h"

#define D ((npy_intp)sizeof(double))
#define MARGIN 1e-9 /* relative to the row's absolute sum: rounding is below 1e-14 there */

static Loop matmul_loop, eigh_loop, eigvalsh_loop;

/* A float64 array of shape (n, d, d) (n = -1: any) whose matrices are C-ordered, aligned and
 * native; the stride between them in `stride`. */
static const double *stack(PyObject *object, const char *name, npy_intp n, npy_intp d,
                           npy_intp *stride)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 3
            && (n < 0 || PyArray_DIM(a, 0) == n) && PyArray_DIM(a, 1) == d
            && PyArray_DIM(a, 2) == d && PyArray_STRIDE(a, 2) == D
            && PyArray_STRIDE(a, 1) == d * D && PyArray_STRIDE(a, 0) % D == 0
            && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)) {
        *stride = PyArray_STRIDE(a, 0) / D;
        return (const double *)PyArray_DATA(a);
    }
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a native float64 array "
                 "(n, d, d) of C-ordered d x d matrices, the sizes of the other arguments",
                 name);
    return NULL;
}

/* out = 0.5·(S + Sᵀ) + shift·I for S = data + cover, as `symmetrised_shifted` computes it. */
static void symmetrised(const double *data, const double *cover, double shift, npy_intp d,
                        double *sum, double *out)
{
    for (npy_intp i = 0; i < d * d; i++)
        sum[i] = data[i] + cover[i];
    for (npy_intp a = 0; a < d; a++)
        for (npy_intp b = 0; b < d; b++) {
            double value = sum[a * d + b] + sum[b * d + a];
            out[a * d + b] = value * 0.5;
        }
    for (npy_intp a = 0; a < d; a++)
        out[a * d + a] += shift;
}

/* Row a's Gershgorin radius Σ_{b≠a} |m_ab|; its absolute sum (the scale of rounding) in
 * `scale`. */
static double radius(const double *m, npy_intp d, npy_intp a, double *scale)
{
    double total = 0.0;
    for (npy_intp b = 0; b < d; b++)
        if (b != a)
            total += fabs(m[a * d + b]);
    *scale = total + fabs(m[a * d + a]);
    return total;
}

/* 1: every disc clearly at or above `floor` (not short); 0: one clearly below (short); -1:
 * not clear, or not finite. */
static int above_floor(const double *m, npy_intp d, double floor)
{
    int clear = 1;
    for (npy_intp a = 0; a < d; a++) {
        double scale, low = m[a * d + a] - radius(m, d, a, &scale);
        double margin = MARGIN * (scale + fabs(floor)) + 1e-300;
        if (!isfinite(low) || !isfinite(scale))
            return -1;
        if (low < floor - margin)
            return 0;
        if (low < floor + margin)
            clear = -1;
    }
    return clear;
}

static PyObject *release(PyObject *self, PyObject *args)
{
    PyObject *data_obj, *cover_obj;
    double shift, floor;
    if (!PyArg_ParseTuple(args, "OOdd:release", &data_obj, &cover_obj, &shift, &floor))
        return NULL;
    if (!PyArray_Check(data_obj) || PyArray_NDIM((PyArrayObject *)data_obj) != 3) {
        PyErr_SetString(PyExc_ValueError, "data is not allowed; must be a float64 (n, d, d)");
        return NULL;
    }
    npy_intp n = PyArray_DIM((PyArrayObject *)data_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)data_obj, 1), data_step, cover_step;
    const double *data = stack(data_obj, "data", -1, d, &data_step);
    const double *cover = data ? stack(cover_obj, "cover", n, d, &cover_step) : NULL;
    if (cover == NULL)
        return NULL;
    npy_intp shape[3] = {n, d, d};
    PyObject *raw_obj = PyArray_SimpleNew(3, shape, NPY_DOUBLE);
    PyObject *short_obj = PyArray_SimpleNew(1, &n, NPY_BOOL);
    double *sum = PyMem_Malloc(sizeof(double) * (size_t)(d * d));
    if (raw_obj == NULL || short_obj == NULL || sum == NULL) {
        Py_XDECREF(raw_obj);
        Py_XDECREF(short_obj);
        PyMem_Free(sum);
        return PyErr_NoMemory();
    }
    double *raw = (double *)PyArray_DATA((PyArrayObject *)raw_obj);
    npy_bool *is_short = (npy_bool *)PyArray_DATA((PyArrayObject *)short_obj);
    int settled = 1;
    for (npy_intp i = 0; i < n; i++) {
        double *m = raw + i * d * d;
        symmetrised(data + i * data_step, cover + i * cover_step, shift, d, sum, m);
        int clear = above_floor(m, d, floor);
        settled = settled && clear >= 0;
        is_short[i] = clear == 0;
    }
    PyMem_Free(sum);
    if (!settled)
        Py_SETREF(short_obj, Py_NewRef(Py_None));
    return Py_BuildValue("(NN)", raw_obj, short_obj);
}

/* Every entry finite. */
static int all_finite(const double *v, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

static PyObject *release_eigh(PyObject *self, PyObject *args)
{
    PyObject *data_obj, *cover_obj;
    double shift, floor;
    if (!PyArg_ParseTuple(args, "OOdd:release_eigh", &data_obj, &cover_obj, &shift, &floor))
        return NULL;
    if (!PyArray_Check(data_obj) || PyArray_NDIM((PyArrayObject *)data_obj) != 3) {
        PyErr_SetString(PyExc_ValueError, "data is not allowed; must be a float64 (n, d, d)");
        return NULL;
    }
    npy_intp n = PyArray_DIM((PyArrayObject *)data_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)data_obj, 1), data_step, cover_step;
    const double *data = stack(data_obj, "data", -1, d, &data_step);
    const double *cover = data ? stack(cover_obj, "cover", n, d, &cover_step) : NULL;
    if (cover == NULL)
        return NULL;
    npy_intp shape[3] = {n, d, d};
    PyObject *vals_obj = PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    PyObject *vecs_obj = PyArray_SimpleNew(3, shape, NPY_DOUBLE);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)((n + 1) * d * d));
    if (vals_obj == NULL || vecs_obj == NULL || work == NULL) {
        Py_XDECREF(vals_obj);
        Py_XDECREF(vecs_obj);
        PyMem_Free(work);
        return PyErr_NoMemory();
    }
    double *raw = work + d * d;
    for (npy_intp i = 0; i < n; i++)
        symmetrised(data + i * data_step, cover + i * cover_step, shift, d, work,
                    raw + i * d * d);
    double *vals = (double *)PyArray_DATA((PyArrayObject *)vals_obj);
    char *loop_args[3] = {(char *)raw, (char *)vals,
                          (char *)PyArray_DATA((PyArrayObject *)vecs_obj)};
    npy_intp dimensions[2] = {n, d};
    npy_intp steps[8] = {d * d * D, d * D, d * d * D, d * D, D, D, d * D, D};
    eigh_loop.function(loop_args, dimensions, steps, eigh_loop.data);
    PyMem_Free(work);
    if (!all_finite(vals, n * d)) {
        Py_DECREF(vals_obj);
        Py_DECREF(vecs_obj);
        Py_RETURN_NONE;
    }
    for (npy_intp i = 0; i < n * d; i++) /* np.maximum(vals, floor) of finite values */
        vals[i] = vals[i] >= floor ? vals[i] : floor;
    return Py_BuildValue("(NN)", vals_obj, vecs_obj);
}

/* out = a @ b for d×d matrices, a read with steps (a_row, a_col), by numpy's matmul loop. */
static void matmul(const double *a, npy_intp a_row, npy_intp a_col, const double *b,
                   npy_intp d, double *out)
{
    char *args[3] = {(char *)a, (char *)b, (char *)out};
    npy_intp dimensions[4] = {1, d, d, d};
    npy_intp steps[9] = {0, 0, 0, a_row, a_col, d * D, D, d * D, D};
    matmul_loop.function(args, dimensions, steps, matmul_loop.data);
}

static PyObject *above_of(PyObject *self, PyObject *args)
{
    PyObject *h_obj, *w_obj;
    double above;
    if (!PyArg_ParseTuple(args, "OOd:above", &h_obj, &w_obj, &above))
        return NULL;
    if (!PyArray_Check(h_obj) || PyArray_NDIM((PyArrayObject *)h_obj) != 3) {
        PyErr_SetString(PyExc_ValueError, "h is not allowed; must be a float64 (n, d, d)");
        return NULL;
    }
    npy_intp n = PyArray_DIM((PyArrayObject *)h_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)h_obj, 1), h_step, w_step;
    const double *h = stack(h_obj, "h", -1, d, &h_step);
    const double *w = h ? stack(w_obj, "w", n, d, &w_step) : NULL;
    if (w == NULL)
        return NULL;
    PyObject *out = PyArray_SimpleNew(1, &n, NPY_BOOL);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(3 * d * d + d));
    if (out == NULL || work == NULL) {
        Py_XDECREF(out);
        PyMem_Free(work);
        return PyErr_NoMemory();
    }
    npy_bool *result = (npy_bool *)PyArray_DATA((PyArrayObject *)out);
    double *left = work, *m = left + d * d, *sym = m + d * d, *vals = sym + d * d;
    int finite = 1;
    for (npy_intp i = 0; finite && i < n; i++) {
        const double *wi = w + i * w_step;
        matmul(wi, D, d * D, h + i * h_step, d, left); /* Wᵀ H: W read transposed */
        matmul(left, d * D, D, wi, d, m);
        for (npy_intp a = 0; a < d; a++)
            for (npy_intp b = 0; b < d; b++) {
                double value = m[a * d + b] + m[b * d + a];
                sym[a * d + b] = value * 0.5;
            }
        double bound = -INFINITY, scale = 0.0;
        for (npy_intp a = 0; a < d; a++) {
            double row, high = sym[a * d + a] + radius(sym, d, a, &row);
            bound = high > bound || isnan(high) ? high : bound;
            scale = row > scale || isnan(row) ? row : scale;
        }
        if (isfinite(bound) && bound < above - MARGIN * (scale + fabs(above))) {
            result[i] = 0;
            continue;
        }
        char *loop_args[2] = {(char *)sym, (char *)vals};
        npy_intp dimensions[2] = {1, d};
        npy_intp steps[5] = {0, 0, d * D, D, D};
        eigvalsh_loop.function(loop_args, dimensions, steps, eigvalsh_loop.data);
        finite = all_finite(vals, d);
        result[i] = vals[d - 1] > above;
    }
    PyMem_Free(work);
    if (!finite) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"release", release, METH_VARARGS,
     "release(data, cover, shift, floor) -> (raw, short): every tree's release "
     "0.5·(S + Sᵀ) + shift·I, S = data + cover, and whether its Gershgorin discs leave it "
     "short of the floor (None where a disc is too close to the floor to say)."},
    {"release_eigh", release_eigh, METH_VARARGS,
     "release_eigh(data, cover, shift, floor) -> (vals, vecs) or None: the releases' "
     "eigen-decompositions, eigenvalues clipped below at the floor; None if one is not "
     "finite."},
    {"above", above_of, METH_VARARGS,
     "above(h, w, threshold) -> bool array or None: whether the largest eigenvalue of "
     "0.5·(M + Mᵀ), M = WᵀHW, is above the threshold, for each pair of the stacks; None if one "
     "computed is not finite."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stacked",
    "Per-round kernels on stacks of small matrices, on numpy's own kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__stacked(void)
{
    import_array();
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *kernels = PyImport_ImportModule("numpy.linalg._umath_linalg");
    int failed = numpy == NULL || kernels == NULL
                 || find_loop(numpy, "matmul", 2, 1, &matmul_loop) < 0
                 || find_loop(kernels, "eigh_lo", 1, 2, &eigh_loop) < 0
                 || find_loop(kernels, "eigvalsh_lo", 1, 1, &eigvalsh_loop) < 0;
    Py_XDECREF(numpy);
    Py_XDECREF(kernels);
    if (failed)
        return NULL;
    return PyModule_Create(&module);
}
