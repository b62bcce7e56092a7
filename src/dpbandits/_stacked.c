/*
 * Per-round kernels on stacks of small matrices, one call per round instead of a numpy call
 * per operation. For trials played in lockstep (Private-GLM's driver,
 * `policies/private_glm_lockstep.py`):
 * - `release`: every tree's release 0.5·(S + Sᵀ) + shift·I of S = data sum + cover noise, and
 *   whether Gershgorin's discs leave it short of the PSD floor (`StackedTrees.query`);
 * - `release_eigh`: the same release's eigen-decomposition, eigenvalues clipped at the floor
 *   (`StackedTrees.query_eigh`);
 * - `above`: whether the largest eigenvalue of the symmetrised WᵀHW is above a threshold
 *   (`gen_eig_max_white(H, W) > threshold`, Private-GLM's Criterion II).
 * For one trial (Shuffle-GLM, `policies/shuffle_glm.py`):
 * - `survivors`: successive elimination of a round's arms by a stack of batch estimates
 *   (`ShuffleGLM.numpy_survivors`).
 *
 * Every number is the one numpy computes, by the same code, and every decision the one numpy's
 * numbers give (tests/test_stacked.py):
 * - sums, products and the symmetrisation are single IEEE operations in numpy's order
 *   (compiled with -ffp-contract=off: no fused multiply-add);
 * - WᵀH, (WᵀH)W, xV and xᵀθ are numpy's float64 matmul loop, row sums its add loop as the
 *   reduction calls it (from 0.0), eigen-decompositions the loops of numpy.linalg's `eigh_lo`
 *   and `eigvalsh_lo` gufuncs (LAPACK's syevd, as `small_linalg`);
 * - a Gershgorin bound decides only where it is clear of the threshold by far more than the
 *   rounding of either computation (MARGIN): a short release where numpy's own discs would say
 *   so, and not above where the largest eigenvalue LAPACK returns cannot reach the threshold. The
 *   matrices it does not settle go to LAPACK (`above`) or back to numpy (`release`, which
 *   then returns None for the short flags);
 * - a non-finite eigenvalue returns None: the caller then makes numpy's calls, which raise or
 *   return what `small_linalg` returns; so do a NaN floor and rows whose absolute sum nears
 *   the largest double (numpy's sum in its own order may overflow there);
 * - eigenvalues are clipped by numpy's maximum loop (its signed zeros and NaNs).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_stacked.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "numpy_loops.h"

#define D ((npy_intp)sizeof(double))
#define MARGIN 1e-9 /* relative to the row's absolute sum: rounding is below 1e-14 there */
#define LARGEST 0x1p1020 /* row sums above this are left to numpy (its order may overflow) */

static Loop matmul_loop, add_loop, maximum_loop, eigh_loop, eigvalsh_loop;

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

/* Two stacks of n d×d matrices, as `stack` takes them. */
typedef struct {
    npy_intp n, d, first_step, second_step;
    const double *first, *second;
} Pair;

static int pair_of(PyObject *first, PyObject *second, const char *first_name,
                   const char *second_name, Pair *pair)
{
    if (!PyArray_Check(first) || PyArray_NDIM((PyArrayObject *)first) != 3) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a float64 (n, d, d)",
                     first_name);
        return -1;
    }
    pair->n = PyArray_DIM((PyArrayObject *)first, 0);
    pair->d = PyArray_DIM((PyArrayObject *)first, 1);
    pair->first = stack(first, first_name, -1, pair->d, &pair->first_step);
    pair->second = pair->first == NULL ? NULL
                   : stack(second, second_name, pair->n, pair->d, &pair->second_step);
    return pair->second == NULL ? -1 : 0;
}

/* The arguments (data, cover, shift, floor) of a release, parsed with `format`. */
static int release_args(PyObject *args, const char *format, Pair *pair, double *shift,
                        double *floor)
{
    PyObject *data, *cover;
    if (!PyArg_ParseTuple(args, format, &data, &cover, shift, floor))
        return -1;
    return pair_of(data, cover, "data", "cover", pair);
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
    int clear = isnan(floor) ? -1 : 1;
    for (npy_intp a = 0; a < d; a++) {
        double scale, low = m[a * d + a] - radius(m, d, a, &scale);
        double margin = MARGIN * (scale + fabs(floor)) + 1e-300;
        if (!isfinite(low) || !(scale < LARGEST)) /* numpy's sum in another order may overflow */
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
    double shift, floor;
    Pair pair;
    if (release_args(args, "OOdd:release", &pair, &shift, &floor) < 0)
        return NULL;
    npy_intp n = pair.n, d = pair.d, data_step = pair.first_step, cover_step = pair.second_step;
    const double *data = pair.first, *cover = pair.second;
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

static PyObject *release_eigh(PyObject *self, PyObject *args)
{
    double shift, floor;
    Pair pair;
    if (release_args(args, "OOdd:release_eigh", &pair, &shift, &floor) < 0)
        return NULL;
    npy_intp n = pair.n, d = pair.d, data_step = pair.first_step, cover_step = pair.second_step;
    const double *data = pair.first, *cover = pair.second;
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
    char *max_args[3] = {(char *)vals, (char *)&floor, (char *)vals}; /* np.maximum */
    npy_intp count = n * d, max_steps[3] = {D, 0, D};
    maximum_loop.function(max_args, &count, max_steps, maximum_loop.data);
    return Py_BuildValue("(NN)", vals_obj, vecs_obj);
}

static PyObject *above_of(PyObject *self, PyObject *args)
{
    PyObject *h_obj, *w_obj;
    double above;
    Pair pair;
    if (!PyArg_ParseTuple(args, "OOd:above", &h_obj, &w_obj, &above)
            || pair_of(h_obj, w_obj, "h", "w", &pair) < 0)
        return NULL;
    npy_intp n = pair.n, d = pair.d, h_step = pair.first_step, w_step = pair.second_step;
    const double *h = pair.first, *w = pair.second;
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
        /* Wᵀ H (W read transposed), then (Wᵀ H) W */
        matmul_with(&matmul_loop, wi, D, d * D, d, d, h + i * h_step, d * D, D, d, 0, left);
        matmul_with(&matmul_loop, left, d * D, D, d, d, wi, d * D, D, d, 0, m);
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
        if (scale < LARGEST && bound < above - MARGIN * (scale + fabs(above))) {
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

/* A C-contiguous aligned native float64 array of `ndim` dimensions with these sizes (-1: any). */
static const double *doubles(PyObject *object, const char *name, int ndim, const npy_intp *shape)
{
    PyArrayObject *a = (PyArrayObject *)object;
    int ok = PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == ndim
             && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a);
    for (int k = 0; ok && k < ndim; k++)
        ok = shape[k] < 0 ? PyArray_DIM(a, k) >= 1 : PyArray_DIM(a, k) == shape[k];
    if (ok)
        return (const double *)PyArray_DATA(a);
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous native float64 "
                 "array of %d dimensions, non-empty, with the sizes of the other arguments",
                 name, ndim);
    return NULL;
}

static PyObject *survivors(PyObject *self, PyObject *args)
{
    PyObject *arms_obj, *thetas_obj, *vals_obj, *vecs_obj, *scales_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:survivors", &arms_obj, &thetas_obj, &vals_obj,
                          &vecs_obj, &scales_obj))
        return NULL;
    npy_intp any2[2] = {-1, -1};
    const double *arms = doubles(arms_obj, "arms", 2, any2);
    if (arms == NULL)
        return NULL;
    npy_intp K = PyArray_DIM((PyArrayObject *)arms_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)arms_obj, 1);
    npy_intp per_d[2] = {-1, d};
    const double *thetas = doubles(thetas_obj, "thetas", 2, per_d);
    if (thetas == NULL)
        return NULL;
    npy_intp J = PyArray_DIM((PyArrayObject *)thetas_obj, 0), vecs_step;
    npy_intp j_d[2] = {J, d}, j_only[1] = {J};
    const double *vals = doubles(vals_obj, "vals", 2, j_d);
    const double *scales = vals ? doubles(scales_obj, "scales", 1, j_only) : NULL;
    const double *vecs = scales ? stack(vecs_obj, "vecs", J, d, &vecs_step) : NULL;
    if (vecs == NULL)
        return NULL;
    npy_intp *alive = PyMem_Malloc(sizeof(npy_intp) * (size_t)K);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(2 * K * d + 3 * K));
    if (alive == NULL || work == NULL) {
        PyMem_Free(alive);
        PyMem_Free(work);
        return PyErr_NoMemory();
    }
    double *x = work, *p = x + K * d, *width = p + K * d, *centre = width + K, *low = centre + K;
    npy_intp m = K;
    for (npy_intp i = 0; i < K; i++)
        alive[i] = i;
    int emptied = 0;
    for (npy_intp j = 0; j < J && !emptied; j++) {
        if (m == 0) { /* numpy's max of nothing raises: its own calls say so */
            emptied = 1;
            break;
        }
        for (npy_intp r = 0; r < m; r++)
            memcpy(x + r * d, arms + alive[r] * d, sizeof(double) * (size_t)d);
        matmul_with(&matmul_loop, x, d * D, D, m, d, vecs + j * vecs_step, d * D, D, d, 0,
                    p); /* x @ vecs */
        for (npy_intp r = 0; r < m; r++) { /* sqrt(((x @ vecs) ** 2 / vals).sum(axis=1)) */
            double *row = p + r * d;
            for (npy_intp b = 0; b < d; b++) {
                double square = row[b] * row[b];
                row[b] = square / vals[j * d + b];
            }
            double total = 0.0;
            char *add_args[3] = {(char *)&total, (char *)row, (char *)&total};
            npy_intp add_steps[3] = {0, D, 0};
            add_loop.function(add_args, &d, add_steps, add_loop.data);
            width[r] = scales[j] * sqrt(total);
        }
        matmul_with(&matmul_loop, x, d * D, D, m, d, thetas + j * d, D, 0, 1, 1,
                    centre); /* x @ theta */
        for (npy_intp r = 0; r < m; r++)
            low[r] = centre[r] - width[r];
        double top = nan_max(low, m); /* (centre - width).max() */
        npy_intp kept = 0;
        for (npy_intp r = 0; r < m; r++)
            if (centre[r] + width[r] >= top)
                alive[kept++] = alive[r];
        m = kept;
    }
    PyMem_Free(work);
    PyObject *out = emptied ? Py_NewRef(Py_None) : PyArray_SimpleNew(1, &m, NPY_INTP);
    if (out != NULL && out != Py_None)
        memcpy(PyArray_DATA((PyArrayObject *)out), alive, sizeof(npy_intp) * (size_t)m);
    PyMem_Free(alive);
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
    {"survivors", survivors, METH_VARARGS,
     "survivors(arms, thetas, vals, vecs, scales) -> intp array or None: the arms (K, d) "
     "kept by successive elimination with estimate j (thetas[j], V_j = vecs[j] diag(vals[j]) "
     "vecs[j]ᵀ, width scales[j]·‖x‖_{V_j⁻¹}); None where no arm is left before an estimate "
     "(numpy's maximum of nothing raises)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stacked",
    "Per-round kernels on stacks of small matrices, on numpy's own kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__stacked(void)
{
    import_array();
    const char *linalg = "numpy.linalg._umath_linalg";
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {"numpy", "add", 2, 1, &add_loop},
                              {"numpy", "maximum", 2, 1, &maximum_loop},
                              {linalg, "eigh_lo", 1, 2, &eigh_loop},
                              {linalg, "eigvalsh_lo", 1, 1, &eigvalsh_loop}};
    return find_loops(loops, 5) < 0 ? NULL : PyModule_Create(&module);
}
