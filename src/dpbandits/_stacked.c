/*
 * Per-round kernels on stacks of small matrices, one call per round instead of a numpy call
 * per operation. For trials played in lockstep (Private-GLM's driver,
 * `policies/private_glm_lockstep.py`):
 * - `release`: every tree's release 0.5·(S + Sᵀ) + shift·I of S = data sum + cover noise, and
 *   whether Gershgorin's discs leave it short of the PSD floor (`StackedTrees.query`);
 * - `release_eigh`: the same release's eigen-decomposition, eigenvalues clipped at the floor
 *   (`StackedTrees.query_eigh`);
 * - `above`: whether the largest eigenvalue of the symmetrised WᵀHW is above a threshold
 *   (`gen_eig_max_white(H, W) > threshold`, Private-GLM's Criterion II);
 * - `inverse_norms`: ‖x‖² in the metric of each V_i⁻¹ for a round's arms;
 * - `ucb`: the UCB actions of the trials without a Criterion-I arm;
 * - `cover_sums`: a tree's cover noise at every count, summed once when its trials start
 *   (`MatrixTree._cover_noise_table`);
 * - `private_glm_rounds`: a stretch of rounds in which no trial has a Criterion-I arm,
 *   switches, releases a non-finite V or an H to repair or, strict, starts a θ_w fit, each
 *   played as `select` and `update` play it with the kernels above (`play_rounds`): the
 *   trees' releases and leaves, ab8fd16's node sums and log-determinants (numpy.linalg's
 *   `slogdet` loop), the strict counter and the snapping of leaves to exact noise's grid
 *   (rint, as np.rint), each trial's reward from its outcome table.
 * For one trial (Shuffle-GLM, `policies/shuffle_glm.py`):
 * - `survivors`: successive elimination of a round's arms by a stack of batch estimates
 *   (`ShuffleGLM.numpy_survivors`);
 * - `shuffle_points`: the survivors, their weights and the points of their design
 *   (`ShuffleGLM.numpy_points`); exp, minimum and the logistic link's expit are numpy's and
 *   scipy's loops.
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
#include "glm_links.h"

#define D ((npy_intp)sizeof(double))
#define MARGIN 1e-9 /* relative to the row's absolute sum: rounding is below 1e-14 there */
#define LARGEST 0x1p1020 /* row sums above this are left to numpy (its order may overflow) */

static Loop matmul_loop, add_loop, maximum_loop, minimum_loop, exp_loop, eigh_loop,
    eigvalsh_loop, slogdet_loop;

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

/* The eigen-decompositions of n C-ordered symmetric d×d matrices by numpy.linalg's `eigh_lo`
 * loop, eigenvalues clipped below at `floor` by numpy's maximum loop (`clipped_eigh`); 0, the
 * eigenvalues not clipped, where one is not finite. */
static int clipped_eigh(const double *raw, npy_intp n, npy_intp d, double floor, double *vals,
                        double *vecs)
{
    char *loop_args[3] = {(char *)raw, (char *)vals, (char *)vecs};
    npy_intp dimensions[2] = {n, d};
    npy_intp steps[8] = {d * d * D, d * D, d * d * D, d * D, D, D, d * D, D};
    eigh_loop.function(loop_args, dimensions, steps, eigh_loop.data);
    if (!all_finite(vals, n * d))
        return 0;
    char *max_args[3] = {(char *)vals, (char *)&floor, (char *)vals}; /* np.maximum */
    npy_intp count = n * d, max_steps[3] = {D, 0, D};
    maximum_loop.function(max_args, &count, max_steps, maximum_loop.data);
    return 1;
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
    int finite = clipped_eigh(raw, n, d, floor, vals,
                              (double *)PyArray_DATA((PyArrayObject *)vecs_obj));
    PyMem_Free(work);
    if (!finite) {
        Py_DECREF(vals_obj);
        Py_DECREF(vecs_obj);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NN)", vals_obj, vecs_obj);
}

/* Whether the largest eigenvalue of 0.5·(M + Mᵀ), M = WᵀHW, is above `above`, for one pair of
 * C-ordered d×d matrices (`work`: 3d² + d doubles): 1 or 0 in `result`; the return is 0 where
 * an eigenvalue LAPACK gives is not finite (numpy's calls then raise or say), else 1. */
static int above_one(const double *h, const double *w, npy_intp d, double above, double *work,
                     npy_bool *result)
{
    double *left = work, *m = left + d * d, *sym = m + d * d, *vals = sym + d * d;
    /* Wᵀ H (W read transposed), then (Wᵀ H) W */
    matmul_with(&matmul_loop, w, D, d * D, d, d, h, d * D, D, d, 0, left);
    matmul_with(&matmul_loop, left, d * D, D, d, d, w, d * D, D, d, 0, m);
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
        *result = 0;
        return 1;
    }
    char *loop_args[2] = {(char *)sym, (char *)vals};
    npy_intp dimensions[2] = {1, d};
    npy_intp steps[5] = {0, 0, d * D, D, D};
    eigvalsh_loop.function(loop_args, dimensions, steps, eigvalsh_loop.data);
    *result = vals[d - 1] > above;
    return all_finite(vals, d);
}

static PyObject *above_of(PyObject *self, PyObject *args)
{
    PyObject *h_obj, *w_obj;
    double above;
    Pair pair;
    if (!PyArg_ParseTuple(args, "OOd:above", &h_obj, &w_obj, &above)
            || pair_of(h_obj, w_obj, "h", "w", &pair) < 0)
        return NULL;
    npy_intp n = pair.n, d = pair.d;
    PyObject *out = PyArray_SimpleNew(1, &n, NPY_BOOL);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(3 * d * d + d));
    if (out == NULL || work == NULL) {
        Py_XDECREF(out);
        PyMem_Free(work);
        return PyErr_NoMemory();
    }
    npy_bool *result = (npy_bool *)PyArray_DATA((PyArrayObject *)out);
    int finite = 1;
    for (npy_intp i = 0; finite && i < n; i++)
        finite = above_one(pair.first + i * pair.first_step, pair.second + i * pair.second_step,
                           d, above, work, result + i);
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

/* The estimates of `survivors`, checked: J stacked (θ_j, vals_j, vecs_j, scale_j) in d. */
typedef struct {
    npy_intp J, vecs_step;
    const double *thetas, *vals, *vecs, *scales;
} Estimates;

static int estimates_of(PyObject *thetas_obj, PyObject *vals_obj, PyObject *vecs_obj,
                        PyObject *scales_obj, npy_intp d, Estimates *e)
{
    npy_intp per_d[2] = {-1, d};
    if ((e->thetas = doubles(thetas_obj, "thetas", 2, per_d)) == NULL)
        return -1;
    e->J = PyArray_DIM((PyArrayObject *)thetas_obj, 0);
    npy_intp j_d[2] = {e->J, d}, j_only[1] = {e->J};
    e->vals = doubles(vals_obj, "vals", 2, j_d);
    e->scales = e->vals ? doubles(scales_obj, "scales", 1, j_only) : NULL;
    e->vecs = e->scales ? stack(vecs_obj, "vecs", e->J, d, &e->vecs_step) : NULL;
    return e->vecs == NULL ? -1 : 0;
}

/* norm[r] = ((x @ vecs) ** 2 / vals).sum(axis=1)[r] for the m rows of x (p: m×d scratch):
 * ‖x_r‖² in the metric of V⁻¹, V = vecs diag(vals) vecsᵀ; its square root if `root`. */
static void inverse_norms(const double *x, npy_intp m, npy_intp d, const double *vecs,
                          const double *vals, double *p, double *norm, int root)
{
    matmul_with(&matmul_loop, x, d * D, D, m, d, vecs, d * D, D, d, 0, p); /* x @ vecs */
    for (npy_intp r = 0; r < m; r++) {
        double *row = p + r * d;
        for (npy_intp b = 0; b < d; b++) {
            double square = row[b] * row[b];
            row[b] = square / vals[b];
        }
        double total = add_reduce(&add_loop, row, d);
        norm[r] = root ? sqrt(total) : total;
    }
}

/* Rows alive[0..m) of the K×d arms into x. */
static void gather(const double *arms, npy_intp d, const npy_intp *alive, npy_intp m, double *x)
{
    for (npy_intp r = 0; r < m; r++)
        memcpy(x + r * d, arms + alive[r] * d, sizeof(double) * (size_t)d);
}

/* Successive elimination of the K arms by the estimates (`ShuffleGLM.numpy_survivors`): the
 * survivors' indices in alive[0..m), m returned, or -1 where no arm is left before an estimate
 * (numpy's max of nothing raises). `work` holds 2Kd + 3K doubles. */
static npy_intp eliminate(const double *arms, npy_intp K, npy_intp d, const Estimates *e,
                          npy_intp *alive, double *work)
{
    double *x = work, *p = x + K * d, *width = p + K * d, *centre = width + K, *low = centre + K;
    npy_intp m = K;
    for (npy_intp i = 0; i < K; i++)
        alive[i] = i;
    for (npy_intp j = 0; j < e->J; j++) {
        if (m == 0)
            return -1;
        gather(arms, d, alive, m, x);
        inverse_norms(x, m, d, e->vecs + j * e->vecs_step, e->vals + j * d, p, width, 1);
        for (npy_intp r = 0; r < m; r++)
            width[r] = e->scales[j] * width[r];
        matmul_with(&matmul_loop, x, d * D, D, m, d, e->thetas + j * d, D, 0, 1, 1,
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
    return m;
}

/* The (K, d) arms argument: C-contiguous native float64, K, d >= 1. */
static const double *arms_of(PyObject *arms_obj, npy_intp *K, npy_intp *d)
{
    npy_intp any2[2] = {-1, -1};
    const double *arms = doubles(arms_obj, "arms", 2, any2);
    if (arms != NULL) {
        *K = PyArray_DIM((PyArrayObject *)arms_obj, 0);
        *d = PyArray_DIM((PyArrayObject *)arms_obj, 1);
    }
    return arms;
}

/* A round's elimination from its arguments: the arms and estimates `e` checked, `alive` (K)
 * and `work` (2Kd + (3 + extra)K doubles) allocated (free both), and the survivors' count m
 * (-1: none left before an estimate); -2 with an error. */
static npy_intp elimination(PyObject *arms_obj, PyObject *thetas_obj, PyObject *vals_obj,
                            PyObject *vecs_obj, PyObject *scales_obj, npy_intp extra,
                            const double **arms, npy_intp *K, npy_intp *d, Estimates *e,
                            npy_intp **alive, double **work)
{
    *alive = NULL;
    *work = NULL;
    *arms = arms_of(arms_obj, K, d);
    if (*arms == NULL || estimates_of(thetas_obj, vals_obj, vecs_obj, scales_obj, *d, e) < 0)
        return -2;
    *alive = PyMem_Malloc(sizeof(npy_intp) * (size_t)*K);
    *work = PyMem_Malloc(sizeof(double) * (size_t)(2 * *K * *d + (3 + extra) * *K));
    if (*alive == NULL || *work == NULL) {
        PyErr_NoMemory();
        return -2;
    }
    return eliminate(*arms, *K, *d, e, *alive, *work);
}

static PyObject *survivors(PyObject *self, PyObject *args)
{
    PyObject *arms_obj, *thetas_obj, *vals_obj, *vecs_obj, *scales_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:survivors", &arms_obj, &thetas_obj, &vals_obj,
                          &vecs_obj, &scales_obj))
        return NULL;
    const double *arms;
    npy_intp K, d, *alive;
    double *work;
    Estimates e;
    npy_intp m = elimination(arms_obj, thetas_obj, vals_obj, vecs_obj, scales_obj, 0, &arms, &K,
                             &d, &e, &alive, &work);
    PyObject *out = m < -1 ? NULL : m < 0 ? Py_NewRef(Py_None)
                                           : PyArray_SimpleNew(1, &m, NPY_INTP);
    if (out != NULL && out != Py_None)
        memcpy(PyArray_DATA((PyArrayObject *)out), alive, sizeof(npy_intp) * (size_t)m);
    PyMem_Free(work);
    PyMem_Free(alive);
    return out;
}

/*
 * shuffle_points(arms, thetas, vals, vecs, scales, width_scale, cap, reward_bound, link, expit,
 *                sqrt) → (alive, points, w) or None
 */
static PyObject *shuffle_points(PyObject *self, PyObject *args)
{
    PyObject *arms_obj, *thetas_obj, *vals_obj, *vecs_obj, *scales_obj, *expit_obj;
    double width_scale, cap, reward_bound;
    int link, take_sqrt;
    if (!PyArg_ParseTuple(args, "OOOOOdddiOp:shuffle_points", &arms_obj, &thetas_obj,
                          &vals_obj, &vecs_obj, &scales_obj, &width_scale, &cap, &reward_bound,
                          &link, &expit_obj, &take_sqrt))
        return NULL;
    Loop expit_loop = {NULL, NULL};
    if (link_kind(link) < 0
            || (link == LOGISTIC && ufunc_loop(expit_obj, "expit", 1, 1, &expit_loop) < 0))
        return NULL;
    const double *arms;
    npy_intp K, d, *alive;
    double *work;
    Estimates e;
    npy_intp m = elimination(arms_obj, thetas_obj, vals_obj, vecs_obj, scales_obj, 2, &arms, &K,
                             &d, &e, &alive, &work);
    PyObject *alive_arr = NULL, *points_arr = NULL, *w_arr = NULL, *out = NULL;
    if (m < 0) {
        out = m < -1 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    npy_intp points_shape[2] = {m, d};
    alive_arr = PyArray_SimpleNew(1, &m, NPY_INTP);
    points_arr = PyArray_SimpleNew(2, points_shape, NPY_DOUBLE);
    w_arr = PyArray_SimpleNew(1, &m, NPY_DOUBLE);
    if (alive_arr == NULL || points_arr == NULL || w_arr == NULL)
        goto done;
    memcpy(PyArray_DATA((PyArrayObject *)alive_arr), alive, sizeof(npy_intp) * (size_t)m);
    /* `ShuffleGLM._weights` of arms[alive]: μ̇(⟨x, θ̂₁⟩)/exp(R·min(2S, γκ^p‖x‖_{V₁⁻¹})) */
    double *x = work, *p = x + K * d, *norm = p + K * d, *low = norm + K, *beta = low + K;
    double *z = beta + K, *scratch = z + K;
    double *w = (double *)PyArray_DATA((PyArrayObject *)w_arr);
    gather(arms, d, alive, m, x);
    inverse_norms(x, m, d, e.vecs, e.vals, p, norm, 1);
    for (npy_intp r = 0; r < m; r++)
        norm[r] = width_scale * norm[r];
    char *min_args[3] = {(char *)&cap, (char *)norm, (char *)low};
    npy_intp min_steps[3] = {0, D, D};
    minimum_loop.function(min_args, &m, min_steps, minimum_loop.data);
    for (npy_intp r = 0; r < m; r++)
        low[r] = reward_bound * low[r];
    apply(&exp_loop, low, beta, m);
    matmul_with(&matmul_loop, x, d * D, D, m, d, e.thetas, D, 0, 1, 1, z); /* x @ θ̂₁ */
    link_dot(link, &expit_loop, &exp_loop, z, scratch, m);
    for (npy_intp r = 0; r < m; r++)
        w[r] = z[r] / beta[r];
    /* the design points: sqrt(w) (or w) times each survivor */
    double *points = (double *)PyArray_DATA((PyArrayObject *)points_arr);
    for (npy_intp r = 0; r < m; r++) {
        double scale = take_sqrt ? sqrt(w[r]) : w[r];
        for (npy_intp b = 0; b < d; b++)
            points[r * d + b] = scale * x[r * d + b];
    }
    out = PyTuple_Pack(3, alive_arr, points_arr, w_arr);
done:
    PyMem_Free(work);
    PyMem_Free(alive);
    Py_XDECREF(alive_arr);
    Py_XDECREF(points_arr);
    Py_XDECREF(w_arr);
    return out;
}

/* ---- Private-GLM's scores ---------------------------------------------------------- */

/* A (n, d) C-contiguous native float64 array: the rows of a stack of vectors. */
static const double *rows_of(PyObject *object, const char *name, npy_intp n, npy_intp d)
{
    npy_intp shape[2] = {n, d};
    return doubles(object, name, 2, shape);
}

static PyObject *inverse_norms_of(PyObject *self, PyObject *args)
{
    PyObject *arms_obj, *vals_obj, *vecs_obj;
    if (!PyArg_ParseTuple(args, "OOO:inverse_norms", &arms_obj, &vals_obj, &vecs_obj))
        return NULL;
    npy_intp K, d, step;
    const double *arms = arms_of(arms_obj, &K, &d);
    const double *vecs = arms ? stack(vecs_obj, "vecs", -1, d, &step) : NULL;
    npy_intp n = vecs ? PyArray_DIM((PyArrayObject *)vecs_obj, 0) : 0;
    const double *vals = vecs ? rows_of(vals_obj, "vals", n, d) : NULL;
    if (vals == NULL)
        return NULL;
    npy_intp shape[2] = {n, K};
    PyObject *out = PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    double *p = PyMem_Malloc(sizeof(double) * (size_t)(K * d));
    if (out == NULL || p == NULL) {
        Py_XDECREF(out);
        PyMem_Free(p);
        return PyErr_NoMemory();
    }
    double *norms = (double *)PyArray_DATA((PyArrayObject *)out);
    for (npy_intp i = 0; i < n; i++)
        inverse_norms(arms, K, d, vecs + i * step, vals + i * d, p, norms + i * K, 0);
    PyMem_Free(p);
    return out;
}

/* One trial's UCB action on the K×d arms: argmax of x·centre + β·‖x‖_{H_prev⁻¹}, after
 * elimination by θ_w with widths width_scale·‖x‖_{V⁻¹} where `eliminating`
 * (`PrivateGLMLockstep.numpy_ucb`; `work`: Kd + 5K doubles). */
static npy_intp ucb_action(const double *arms, npy_intp K, npy_intp d, const double *hp_vecs,
                           const double *hp_vals, const double *centre, double beta,
                           int eliminating, const double *v_vecs, const double *v_vals,
                           const double *theta_w, double width_scale, double *work)
{
    double *p = work, *bonus = p + K * d, *score = bonus + K, *width = score + K;
    double *centre_w = width + K, *low = centre_w + K;
    /* β·‖x‖_{H_prev⁻¹} + x·(θ_w + θ_τ)/2 */
    inverse_norms(arms, K, d, hp_vecs, hp_vals, p, bonus, 1);
    matmul_with(&matmul_loop, arms, d * D, D, K, d, centre, D, 0, 1, 1, score);
    for (npy_intp k = 0; k < K; k++)
        score[k] = score[k] + bonus[k] * beta;
    if (eliminating) { /* elimination by θ_w: keep x·θ_w + w ≥ max(x·θ_w − w) */
        inverse_norms(arms, K, d, v_vecs, v_vals, p, width, 1);
        matmul_with(&matmul_loop, arms, d * D, D, K, d, theta_w, D, 0, 1, 1, centre_w);
        for (npy_intp k = 0; k < K; k++) {
            width[k] = width_scale * width[k];
            low[k] = centre_w[k] - width[k];
        }
        double top = nan_max(low, K);
        for (npy_intp k = 0; k < K; k++)
            score[k] = centre_w[k] + width[k] >= top ? score[k] : -INFINITY;
    }
    return first_argmax(score, K);
}

/*
 * ucb(arms, hp_vals, hp_vecs, centre, beta, eliminating, v_vals, v_vecs, theta_w, width_scale,
 *     rows) → intp array
 */
static PyObject *ucb(PyObject *self, PyObject *args)
{
    PyObject *arms_obj, *hp_vals_obj, *hp_vecs_obj, *centre_obj, *elim_obj, *v_vals_obj;
    PyObject *v_vecs_obj, *theta_w_obj, *rows_obj;
    double beta, width_scale;
    if (!PyArg_ParseTuple(args, "OOOOdOOOOdO:ucb", &arms_obj, &hp_vals_obj, &hp_vecs_obj,
                          &centre_obj, &beta, &elim_obj, &v_vals_obj, &v_vecs_obj,
                          &theta_w_obj, &width_scale, &rows_obj))
        return NULL;
    npy_intp K, d, hp_step, v_step;
    const double *arms = arms_of(arms_obj, &K, &d);
    Pair pair;
    if (arms == NULL || pair_of(hp_vecs_obj, v_vecs_obj, "hp_vecs", "v_vecs", &pair) < 0)
        return NULL;
    npy_intp n = pair.n;
    hp_step = pair.first_step;
    v_step = pair.second_step;
    const double *hp_vecs = pair.first, *v_vecs = pair.second;
    const double *hp_vals = rows_of(hp_vals_obj, "hp_vals", n, d);
    const double *centre = hp_vals ? rows_of(centre_obj, "centre", n, d) : NULL;
    const double *v_vals = centre ? rows_of(v_vals_obj, "v_vals", n, d) : NULL;
    const double *theta_w = v_vals ? rows_of(theta_w_obj, "theta_w", n, d) : NULL;
    if (theta_w == NULL)
        return NULL;
    if (pair.d != d) {
        PyErr_SetString(PyExc_ValueError, "arms are not allowed; must have the stacks' d");
        return NULL;
    }
    PyArrayObject *elim = (PyArrayObject *)elim_obj, *mask = (PyArrayObject *)rows_obj;
    int bad_elim = !PyArray_Check(elim_obj) || PyArray_TYPE(elim) != NPY_BOOL
                   || PyArray_NDIM(elim) != 1 || PyArray_DIM(elim, 0) != n
                   || !PyArray_IS_C_CONTIGUOUS(elim);
    int bad_rows = rows_obj != Py_None
                   && (!PyArray_Check(rows_obj) || PyArray_TYPE(mask) != NPY_BOOL
                       || PyArray_NDIM(mask) != 1 || PyArray_DIM(mask, 0) != n
                       || !PyArray_IS_C_CONTIGUOUS(mask));
    if (bad_elim || bad_rows) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous bool array "
                     "of the stacks' length%s", bad_elim ? "eliminating" : "rows",
                     bad_elim ? "" : ", or None");
        return NULL;
    }
    const npy_bool *eliminating = (const npy_bool *)PyArray_DATA(elim);
    const npy_bool *chosen_rows = rows_obj == Py_None ? NULL : (npy_bool *)PyArray_DATA(mask);
    npy_intp count = n;
    for (npy_intp i = 0; chosen_rows != NULL && i < n; i++)
        count -= !chosen_rows[i];
    PyObject *out = PyArray_SimpleNew(1, &count, NPY_INTP);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(K * d + 5 * K));
    if (out == NULL || work == NULL) {
        Py_XDECREF(out);
        PyMem_Free(work);
        return PyErr_NoMemory();
    }
    npy_intp *best = (npy_intp *)PyArray_DATA((PyArrayObject *)out);
    for (npy_intp i = 0, j = 0; i < n; i++)
        if (chosen_rows == NULL || chosen_rows[i])
            best[j++] = ucb_action(arms, K, d, hp_vecs + i * hp_step, hp_vals + i * d,
                                   centre + i * d, beta, eliminating[i], v_vecs + i * v_step,
                                   v_vals + i * d, theta_w + i * d, width_scale, work);
    PyMem_Free(work);
    return out;
}

/* A C-ordered intp array of node lists (`rows` of them, -1: any), each node in 0 ... `nodes`
 * (0: none); its width in `width`. NULL with one ValueError naming the array or the node. */
static const npy_intp *node_index(PyObject *object, const char *name, npy_intp rows,
                                  npy_intp nodes, npy_intp *width)
{
    PyArrayObject *index = (PyArrayObject *)object;
    if (!PyArray_Check(object) || PyArray_TYPE(index) != NPY_INTP || PyArray_NDIM(index) != 2
            || (rows >= 0 && PyArray_DIM(index, 0) != rows) || !PyArray_IS_C_CONTIGUOUS(index)
            || !PyArray_ISALIGNED(index) || !PyArray_ISNOTSWAPPED(index)) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-ordered intp array "
                     "(counts, nodes)%s", name, rows >= 0 ? " with a row for every count" : "");
        return NULL;
    }
    const npy_intp *at = PyArray_DATA(index);
    *width = PyArray_DIM(index, 1);
    for (npy_intp k = 0; k < PyArray_DIM(index, 0) * *width; k++)
        if (at[k] < 0 || at[k] > nodes) {
            PyErr_Format(PyExc_ValueError, "node %zd is not allowed; must be in 0 ... %zd",
                         (Py_ssize_t)at[k], (Py_ssize_t)nodes);
            return NULL;
        }
    return at;
}

/* cover_sums(index, table, out): out[s] = Σ_j table[index[s, j] − 1] from zero in j's order,
 * index 0 adding nothing. */
static PyObject *cover_sums(PyObject *self, PyObject *args)
{
    PyObject *index_o, *table_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO:cover_sums", &index_o, &table_o, &out_o))
        return NULL;
    PyArrayObject *table = (PyArrayObject *)table_o;
    if (!PyArray_Check(table_o) || PyArray_NDIM(table) != 3) {
        PyErr_SetString(PyExc_ValueError, "table is not allowed; must be a float64 (nodes, d, "
                        "d)");
        return NULL;
    }
    npy_intp width, nodes = PyArray_DIM(table, 0), d = PyArray_DIM(table, 1);
    const npy_intp *at = node_index(index_o, "index", -1, nodes, &width);
    if (at == NULL)
        return NULL;
    npy_intp counts = PyArray_DIM((PyArrayObject *)index_o, 0), table_step, out_step;
    const double *z = stack(table_o, "table", -1, d, &table_step);
    double *out = z == NULL ? NULL : (double *)stack(out_o, "out", counts, d, &out_step);
    if (out == NULL)
        return NULL;
    if (!PyArray_ISWRITEABLE((PyArrayObject *)out_o)) {
        PyErr_SetString(PyExc_ValueError, "out is not allowed; must be writeable");
        return NULL;
    }
    for (npy_intp c = 0; c < counts; c++) {
        double *sum = out + c * out_step;
        for (npy_intp e = 0; e < d * d; e++)
            sum[e] = 0.0;
        for (npy_intp j = 0; j < width; j++) {
            npy_intp node = at[c * width + j];
            if (node == 0)
                continue;
            const double *noise = z + (node - 1) * table_step;
            for (npy_intp e = 0; e < d * d; e++)
                sum[e] = sum[e] + noise[e];
        }
    }
    Py_RETURN_NONE;
}

/* ---- Private-GLM's rounds in lockstep ---------------------------------------------- */

enum { PAPER, STRICT, AB8FD16 }; /* the accounting and code state the rounds follow */

/* A `StackedTrees` as the rounds read and advance it. */
typedef struct {
    double *prefix;        /* the prefix sums (n, d, d) */
    double *node_sums;     /* ab8fd16's node sums (n, nodes + 1, d, d), or NULL */
    const double *cover;   /* the cover noise at every count (n, T + 1, d, d) */
    const npy_intp *index; /* with node sums: the nodes summed at every count (T + 1, width) */
    npy_intp d, node_step, cover_step, width, count, horizon, height;
    double shift, floor;
} Tree;

/* A writable `doubles`. */
static double *writable(PyObject *object, const char *name, int ndim, const npy_intp *shape)
{
    const double *data = doubles(object, name, ndim, shape);
    if (data != NULL && !PyArray_ISWRITEABLE((PyArrayObject *)object)) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be writeable", name);
        return NULL;
    }
    return (double *)data;
}

/* A C-contiguous native array of n values of the type `type` (NPY_BOOL, NPY_INT64). */
static void *flat(PyObject *object, const char *name, int type, npy_intp n, int write)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == type && PyArray_NDIM(a) == 1
            && PyArray_DIM(a, 0) == n && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a)
            && PyArray_ISNOTSWAPPED(a) && (!write || PyArray_ISWRITEABLE(a)))
        return PyArray_DATA(a);
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous%s %s array of "
                 "the stacks' length", name, write ? " writeable" : "",
                 type == NPY_BOOL ? "bool" : "int64");
    return NULL;
}

/* The tree (prefix, node sums or None, index or None, cover, count, shift, floor) of n
 * trials' d×d matrices (`StackedTrees.kernel_state`). */
static int tree_of(PyObject *object, const char *name, npy_intp n, npy_intp d, Tree *tree)
{
    PyObject *prefix_obj, *nodes_obj, *index_obj, *cover_obj;
    Py_ssize_t count;
    if (!PyTuple_Check(object)
            || !PyArg_ParseTuple(object, "OOOOndd", &prefix_obj, &nodes_obj, &index_obj,
                                 &cover_obj, &count, &tree->shift, &tree->floor)) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a tuple (prefix, node sums, "
                     "index, cover, count, shift, floor)", name);
        return -1;
    }
    if (!PyArray_Check(cover_obj) || PyArray_NDIM((PyArrayObject *)cover_obj) != 4) {
        PyErr_Format(PyExc_ValueError, "%s's cover is not allowed; must be a float64 (n, T + 1, "
                     "d, d)", name);
        return -1;
    }
    tree->d = d;
    tree->horizon = PyArray_DIM((PyArrayObject *)cover_obj, 1) - 1;
    tree->height = 1;
    while (((npy_intp)1 << (tree->height - 1)) < tree->horizon)
        tree->height++; /* ⌈log2 T⌉ + 1 (`tree_height`) */
    npy_intp cover_shape[4] = {n, tree->horizon + 1, d, d}, prefix_shape[3] = {n, d, d};
    if ((tree->cover = doubles(cover_obj, "cover", 4, cover_shape)) == NULL
            || (tree->prefix = writable(prefix_obj, "prefix", 3, prefix_shape)) == NULL)
        return -1;
    tree->cover_step = (tree->horizon + 1) * d * d;
    tree->count = count;
    if (count < 0 || count > tree->horizon) {
        PyErr_Format(PyExc_ValueError, "%s's count %zd is not allowed; must be in 0 ... %zd",
                     name, count, (Py_ssize_t)tree->horizon);
        return -1;
    }
    tree->node_sums = NULL;
    tree->index = NULL;
    tree->width = 0;
    if (nodes_obj == Py_None)
        return 0;
    npy_intp nodes = ((npy_intp)1 << tree->height) - 1, shape[4] = {n, nodes + 1, d, d};
    if ((tree->node_sums = writable(nodes_obj, "node sums", 4, shape)) == NULL)
        return -1;
    tree->node_step = (nodes + 1) * d * d;
    tree->index = node_index(index_obj, "the index of the node sums", tree->horizon + 1, nodes,
                             &tree->width);
    return tree->index == NULL ? -1 : 0;
}

/* Whether heap node `node` is `leaf` or one of its ancestors. */
static int on_path(npy_intp node, npy_intp leaf)
{
    while (leaf > node)
        leaf >>= 1;
    return leaf == node;
}

/* Trial i's data sum at the tree's next count into `total` (`StackedTrees._data_sum` after
 * `advance`), with the leaf `pending` added as `advance` adds it (NULL: no leaf); its release
 * 0.5·(S + Sᵀ) + shift·I, S = data sum + cover noise, into `out` (`sum`: d² scratch). */
static void next_release(const Tree *tree, npy_intp i, const double *pending, double *total,
                         double *sum, double *out)
{
    npy_intp d = tree->d, dd = d * d, count = tree->count + 1;
    if (tree->node_sums == NULL) {
        const double *prefix = tree->prefix + i * dd;
        for (npy_intp e = 0; e < dd; e++)
            total[e] = pending == NULL ? prefix[e] : prefix[e] + pending[e];
    } else { /* node sums at the count's nodes, from zero in their order */
        const double *node_sums = tree->node_sums + i * tree->node_step;
        npy_intp leaf = ((npy_intp)1 << (tree->height - 1)) + count - 1;
        for (npy_intp e = 0; e < dd; e++)
            total[e] = 0.0;
        for (npy_intp j = 0; j < tree->width; j++) {
            npy_intp node = tree->index[count * tree->width + j];
            if (node == 0)
                continue;
            const double *node_sum = node_sums + node * dd;
            if (pending != NULL && on_path(node, leaf))
                for (npy_intp e = 0; e < dd; e++)
                    total[e] = total[e] + (node_sum[e] + pending[e]);
            else
                for (npy_intp e = 0; e < dd; e++)
                    total[e] = total[e] + node_sum[e];
        }
    }
    symmetrised(total, tree->cover + i * tree->cover_step + count * dd, tree->shift, d, sum, out);
}

/* Trial i's leaf added for good (`StackedTrees.advance`): to the prefix sum and to the node
 * sums of its path. */
static void add_leaf(Tree *tree, npy_intp i, const double *pending)
{
    npy_intp dd = tree->d * tree->d;
    double *prefix = tree->prefix + i * dd;
    for (npy_intp e = 0; e < dd; e++)
        prefix[e] = prefix[e] + pending[e];
    if (tree->node_sums == NULL)
        return;
    double *node_sums = tree->node_sums + i * tree->node_step;
    for (npy_intp node = ((npy_intp)1 << (tree->height - 1)) + tree->count; node > 0;
         node >>= 1) /* the leaf of count + 1, then its ancestors */
        for (npy_intp e = 0; e < dd; e++)
            node_sums[node * dd + e] = node_sums[node * dd + e] + pending[e];
}

/* Every array and constant the rounds read and write (`PrivateGLMLockstep`). */
typedef struct {
    npy_intp n, d, K, T;
    const double *arms, *rewards, *regrets; /* (T, K, d), (n, T, K), (n, T, K) */
    double *regret, *reward;                /* (n, T) */
    npy_int64 *chosen;                      /* (n, T) */
    double *v_vals, *v_vecs, *h_cur, *znw_x, *znw_y, *logdet_cur;
    const double *hp_vals, *hp_vecs, *hp_white, *centre, *theta_w, *logdet_prev;
    const npy_bool *eliminating, *stop2, *stop1;
    npy_int64 *n_nw;
    const npy_int64 *n1;
    Tree vtree, htree, counter;
    int mode, link;
    double thr_w, switch_above, beta, width_scale, log_det_ratio, snap_grid, count_margin;
    Loop expit;
} Rounds;

/* Scratch of a call: a round's releases, V's eigen-decompositions, the H sums and leaves. */
typedef struct {
    double *raw, *vals, *vecs, *h_new, *totals, *leaves, *z, *scratch, *norms, *work;
    npy_intp *best;
} Scratch;

/* Whether trial i's Criterion II switches, or cannot be decided here (numpy's calls raise
 * or say): then the round is left to the driver. */
static int switch_due(const Rounds *r, npy_intp i, double *work)
{
    if (r->stop2[i])
        return 0;
    if (r->mode == AB8FD16) /* max log det H_cur ≥ ln 2 + max log det H_prev */
        return !(r->logdet_cur[i] < r->log_det_ratio + r->logdet_prev[i]);
    npy_intp dd = r->d * r->d;
    npy_bool above;
    return !above_one(r->h_cur + i * dd, r->hp_white + i * dd, r->d, r->switch_above, work,
                      &above) || above;
}

/* Round t if it is a cold round (no trial has a Criterion-I arm) in which no trial switches,
 * releases a non-finite V or an H short of its floor (or too close to say) or, strict, starts
 * a θ_w fit: played as `select` then `update` play it, 1 returned; else 0, nothing changed. */
static int cold_round(Rounds *r, npy_intp t, Scratch *s)
{
    npy_intp n = r->n, d = r->d, K = r->K, dd = d * d;
    const double *arms = r->arms + t * K * d;
    if (r->vtree.count >= r->vtree.horizon || r->htree.count >= r->htree.horizon
            || (r->mode == STRICT && r->counter.count >= r->counter.horizon))
        return 0; /* `advance` raises */
    if (r->mode == STRICT) /* Criterion II first, in every round */
        for (npy_intp i = 0; i < n; i++)
            if (switch_due(r, i, s->work))
                return 0;
    for (npy_intp i = 0; i < n; i++) { /* Criterion I */
        inverse_norms(arms, K, d, r->v_vecs + i * dd, r->v_vals + i * d, s->work, s->norms, 0);
        npy_intp best = first_argmax(s->norms, K);
        if (s->norms[best] > r->thr_w)
            return 0;
    }
    for (npy_intp i = 0; i < n; i++) /* V's release, no leaf */
        next_release(&r->vtree, i, NULL, s->totals, s->work, s->raw + i * dd);
    if (!clipped_eigh(s->raw, n, d, r->vtree.floor, s->vals, s->vecs))
        return 0;
    if (r->mode != STRICT)
        for (npy_intp i = 0; i < n; i++)
            if (switch_due(r, i, s->work))
                return 0;
    for (npy_intp i = 0; i < n; i++) /* the UCB action, then the leaf w·xxᵀ, w = μ̇(x·θ_w)/e */
        s->best[i] = ucb_action(arms, K, d, r->hp_vecs + i * dd, r->hp_vals + i * d,
                                r->centre + i * d, r->beta, r->eliminating[i], s->vecs + i * dd,
                                s->vals + i * d, r->theta_w + i * d, r->width_scale, s->work);
    for (npy_intp i = 0; i < n; i++)
        matmul_with(&matmul_loop, arms + s->best[i] * d, d * D, D, 1, d, r->theta_w + i * d, D,
                    0, 1, 1, s->z + i); /* x·θ_w, numpy's 1-d @ 1-d */
    link_dot(r->link, &r->expit, &exp_loop, s->z, s->scratch, n);
    for (npy_intp i = 0; i < n; i++) {
        const double *x = arms + s->best[i] * d;
        double w = s->z[i] / M_E, *leaf = s->leaves + i * dd;
        for (npy_intp a = 0; a < d; a++)
            for (npy_intp b = 0; b < d; b++)
                leaf[a * d + b] = (x[a] * x[b]) * w;
        if (r->snap_grid > 0) /* on the grid γ of exact noise (`ExactNoise.snap`) */
            for (npy_intp e = 0; e < dd; e++)
                if (!(fabs(leaf[e]) >= 0x1p53 * r->snap_grid))
                    leaf[e] = rint(leaf[e] / r->snap_grid) * r->snap_grid;
        next_release(&r->htree, i, leaf, s->totals, s->work, s->h_new + i * dd);
        if (above_floor(s->h_new + i * dd, d, r->htree.floor) != 1)
            return 0; /* short of the floor, or too close to say: `repaired` */
    }
    if (r->mode == STRICT) /* the counter's release, no sample collected */
        for (npy_intp i = 0; i < n; i++) {
            double released;
            next_release(&r->counter, i, NULL, s->work, s->work + 1, &released);
            if (!r->stop1[i] && released - r->count_margin >= (double)(r->n1[i] + 1))
                return 0;
        }
    /* the round is played: commit it */
    memcpy(r->v_vals, s->vals, sizeof(double) * (size_t)(n * d));
    memcpy(r->v_vecs, s->vecs, sizeof(double) * (size_t)(n * dd));
    memcpy(r->h_cur, s->h_new, sizeof(double) * (size_t)(n * dd));
    r->vtree.count++;
    for (npy_intp i = 0; i < n; i++) {
        npy_intp arm = s->best[i];
        add_leaf(&r->htree, i, s->leaves + i * dd);
        double reward = r->rewards[(i * r->T + t) * K + arm];
        r->chosen[i * r->T + t] = arm;
        r->reward[i * r->T + t] = reward;
        r->regret[i * r->T + t] = r->regrets[(i * r->T + t) * K + arm];
        npy_int64 slot = r->n_nw[i]++;
        memcpy(r->znw_x + (i * r->T + slot) * d, arms + arm * d, sizeof(double) * (size_t)d);
        r->znw_y[i * r->T + slot] = reward;
        if (r->mode == AB8FD16) {
            double logdet = logdet_with(&slogdet_loop, r->h_cur + i * dd, d);
            r->logdet_cur[i] = logdet > r->logdet_cur[i] ? logdet : r->logdet_cur[i];
        }
    }
    r->htree.count++;
    r->counter.count++;
    return 1;
}

static void free_scratch(Scratch *s)
{
    PyMem_Free(s->raw);
    PyMem_Free(s->best);
}

static int make_scratch(Scratch *s, npy_intp n, npy_intp d, npy_intp K)
{
    npy_intp dd = d * d, work = K * d + 5 * K > 3 * dd + d ? K * d + 5 * K : 3 * dd + d;
    s->raw = PyMem_Malloc(sizeof(double) * (size_t)(4 * n * dd + dd + n * d + 2 * n + K + work));
    s->best = PyMem_Malloc(sizeof(npy_intp) * (size_t)n);
    if (s->raw == NULL || s->best == NULL) {
        free_scratch(s);
        PyErr_NoMemory();
        return -1;
    }
    s->vecs = s->raw + n * dd;
    s->h_new = s->vecs + n * dd;
    s->leaves = s->h_new + n * dd;
    s->totals = s->leaves + n * dd;
    s->vals = s->totals + dd;
    s->z = s->vals + n * d;
    s->scratch = s->z + n;
    s->norms = s->scratch + n;
    s->work = s->norms + K; /* also the counter's release, 2 doubles */
    return 0;
}

/* The driver's state tuple, checked into `r`. */
static int state_of(PyObject *state, npy_intp rounds, Rounds *r)
{
    PyObject *o[17];
    if (!PyTuple_Check(state)
            || !PyArg_ParseTuple(state, "OOOOOOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4],
                                 &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12],
                                 &o[13], &o[14], &o[15], &o[16])) {
        PyErr_SetString(PyExc_ValueError, "state is not allowed; must be the driver's tuple of "
                        "17 arrays");
        return -1;
    }
    npy_intp n = r->n, d = r->d, nd[2] = {n, d}, ndd[3] = {n, d, d}, ntd[3] = {n, r->T, d};
    npy_intp nt[2] = {n, r->T}, just_n[1] = {n};
    if ((r->v_vals = writable(o[0], "v_vals", 2, nd)) == NULL
            || (r->v_vecs = writable(o[1], "v_vecs", 3, ndd)) == NULL
            || (r->h_cur = writable(o[2], "h_cur", 3, ndd)) == NULL
            || (r->hp_vals = doubles(o[3], "hp_vals", 2, nd)) == NULL
            || (r->hp_vecs = doubles(o[4], "hp_vecs", 3, ndd)) == NULL
            || (r->hp_white = doubles(o[5], "hp_white", 3, ndd)) == NULL
            || (r->centre = doubles(o[6], "centre", 2, nd)) == NULL
            || (r->theta_w = doubles(o[7], "theta_w", 2, nd)) == NULL
            || (r->eliminating = flat(o[8], "eliminating", NPY_BOOL, n, 0)) == NULL
            || (r->stop2 = flat(o[9], "stop2", NPY_BOOL, n, 0)) == NULL
            || (r->znw_x = writable(o[10], "znw_x", 3, ntd)) == NULL
            || (r->znw_y = writable(o[11], "znw_y", 2, nt)) == NULL
            || (r->n_nw = flat(o[12], "n_nw", NPY_INT64, n, 1)) == NULL)
        return -1;
    for (npy_intp i = 0; i < n; i++) /* a round adds a row of Z_nw */
        if (r->n_nw[i] < 0 || r->n_nw[i] > r->T - rounds) {
            PyErr_Format(PyExc_ValueError, "n_nw %lld is not allowed; must be in 0 ... %zd (a "
                         "free row of znw for each round)", (long long)r->n_nw[i],
                         (Py_ssize_t)(r->T - rounds));
            return -1;
        }
    if (r->mode == AB8FD16
            && ((r->logdet_cur = writable(o[13], "logdet_cur", 1, just_n)) == NULL
                || (r->logdet_prev = doubles(o[14], "logdet_prev", 1, just_n)) == NULL))
        return -1;
    if (r->mode == STRICT && ((r->n1 = flat(o[15], "n1", NPY_INT64, n, 0)) == NULL
                              || (r->stop1 = flat(o[16], "stop1", NPY_BOOL, n, 0)) == NULL))
        return -1;
    return 0;
}

/*
 * private_glm_rounds(t, stop, tables, state, trees, constants, expit) → the next round
 */
static PyObject *private_glm_rounds(PyObject *self, PyObject *args)
{
    Py_ssize_t t, stop;
    PyObject *arms_o, *rewards_o, *regrets_o, *regret_o, *reward_o, *chosen_o, *state;
    PyObject *vtree_o, *htree_o, *counter_o, *expit_o;
    Rounds r;
    memset(&r, 0, sizeof r);
    if (!PyArg_ParseTuple(args, "nn(OOOOOO)O(OOO)(iiddddddd)O:private_glm_rounds", &t, &stop,
                          &arms_o, &rewards_o, &regrets_o, &regret_o, &reward_o, &chosen_o,
                          &state, &vtree_o, &htree_o, &counter_o, &r.mode, &r.link, &r.thr_w,
                          &r.switch_above, &r.beta, &r.width_scale, &r.log_det_ratio,
                          &r.snap_grid, &r.count_margin, &expit_o))
        return NULL;
    if (r.mode < PAPER || r.mode > AB8FD16) {
        PyErr_Format(PyExc_ValueError, "mode = %d is not allowed; must be 0 (paper), 1 (strict) "
                     "or 2 (ab8fd16)", r.mode);
        return NULL;
    }
    npy_intp any3[3] = {-1, -1, -1};
    if ((r.arms = doubles(arms_o, "arms", 3, any3)) == NULL || link_kind(r.link) < 0)
        return NULL;
    r.T = PyArray_DIM((PyArrayObject *)arms_o, 0);
    r.K = PyArray_DIM((PyArrayObject *)arms_o, 1);
    r.d = PyArray_DIM((PyArrayObject *)arms_o, 2);
    if (!PyArray_Check(rewards_o) || PyArray_NDIM((PyArrayObject *)rewards_o) != 3) {
        PyErr_SetString(PyExc_ValueError, "rewards is not allowed; must be a float64 (n, T, K)");
        return NULL;
    }
    r.n = PyArray_DIM((PyArrayObject *)rewards_o, 0);
    npy_intp ntk[3] = {r.n, r.T, r.K}, nt[2] = {r.n, r.T};
    if ((r.rewards = doubles(rewards_o, "rewards", 3, ntk)) == NULL
            || (r.regrets = doubles(regrets_o, "regrets", 3, ntk)) == NULL
            || (r.regret = writable(regret_o, "regret", 2, nt)) == NULL
            || (r.reward = writable(reward_o, "reward", 2, nt)) == NULL)
        return NULL;
    PyArrayObject *chosen = (PyArrayObject *)chosen_o;
    if (!PyArray_Check(chosen_o) || PyArray_TYPE(chosen) != NPY_INT64 || PyArray_NDIM(chosen) != 2
            || PyArray_DIM(chosen, 0) != r.n || PyArray_DIM(chosen, 1) != r.T
            || !PyArray_IS_C_CONTIGUOUS(chosen) || !PyArray_ISWRITEABLE(chosen)) {
        PyErr_SetString(PyExc_ValueError, "chosen is not allowed; must be a C-contiguous "
                        "writeable int64 array (n, T)");
        return NULL;
    }
    r.chosen = PyArray_DATA(chosen);
    if (t < 0 || stop < t || stop > r.T) {
        PyErr_Format(PyExc_ValueError, "rounds %zd ... %zd are not allowed; must lie in 0 ... %zd",
                     t, stop, (Py_ssize_t)r.T);
        return NULL;
    }
    if (state_of(state, stop - t, &r) < 0 || tree_of(vtree_o, "vtree", r.n, r.d, &r.vtree) < 0
            || tree_of(htree_o, "htree", r.n, r.d, &r.htree) < 0
            || (r.mode == STRICT && tree_of(counter_o, "counter", r.n, 1, &r.counter) < 0))
        return NULL;
    if (r.link == LOGISTIC && ufunc_loop(expit_o, "expit", 1, 1, &r.expit) < 0)
        return NULL;
    Scratch s;
    if (make_scratch(&s, r.n, r.d, r.K) < 0)
        return NULL;
    while (t < stop && cold_round(&r, t, &s))
        t++;
    free_scratch(&s);
    return PyLong_FromSsize_t(t);
}

static PyMethodDef methods[] = {
    {"private_glm_rounds", private_glm_rounds, METH_VARARGS,
     "private_glm_rounds(t, stop, (arms, rewards, regrets, regret, reward, chosen), state, "
     "(vtree, htree, counter), (mode, link, thr_w, switch_above, beta, width_scale, "
     "log_det_ratio, snap_grid, count_margin), expit) -> int: Private-GLM's lockstep rounds "
     "t, t + 1, ... before stop played while every trial's round is cold and uneventful "
     "(`PrivateGLMLockstep.play_rounds`); the first round not played."},
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
    {"inverse_norms", inverse_norms_of, METH_VARARGS,
     "inverse_norms(arms, vals, vecs) -> float64 (n, K): ‖x_k‖² in the metric of V_i⁻¹, "
     "V_i = vecs[i] diag(vals[i]) vecs[i]ᵀ, for the arms (K, d) and each of the n stacked "
     "pairs (`private_glm.inverse_norms` of stacks)."},
    {"ucb", ucb, METH_VARARGS,
     "ucb(arms, hp_vals, hp_vecs, centre, beta, eliminating, v_vals, v_vecs, theta_w, "
     "width_scale, rows) -> intp array: Private-GLM's UCB action of each trial of the bool "
     "mask rows (None: every trial): argmax of x·centre_i + beta·‖x‖_{H_i⁻¹}, after "
     "elimination by theta_w with widths width_scale·‖x‖_{V_i⁻¹} where eliminating[i] "
     "(`PrivateGLMLockstep.numpy_ucb`)."},
    {"cover_sums", cover_sums, METH_VARARGS,
     "cover_sums(index, table, out) -> None: out[s] = the sum from zero, in row s's order, "
     "of table[j - 1] for the nodes j >= 1 of index[s] (0: none), for a C-ordered intp index "
     "(counts, width), a float64 table (nodes, d, d) and out (counts, d, d)."},
    {"shuffle_points", shuffle_points, METH_VARARGS,
     "shuffle_points(arms, thetas, vals, vecs, scales, width_scale, cap, reward_bound, link, "
     "expit, sqrt) -> (alive, points, w) or None: `survivors` of the arms, their weights "
     "w = μ̇(x·thetas[0])/exp(reward_bound·min(cap, width_scale·‖x‖_{V_0⁻¹})) for link 0 "
     "(logistic, μ̇ from the ufunc `expit`), 1 (probit) or 2 (linear), and the design points "
     "sqrt(w)·x (w·x when sqrt is false); None where `survivors` gives None."},
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
                              {"numpy", "minimum", 2, 1, &minimum_loop},
                              {"numpy", "exp", 1, 1, &exp_loop},
                              {linalg, "eigh_lo", 1, 2, &eigh_loop},
                              {linalg, "eigvalsh_lo", 1, 1, &eigvalsh_loop},
                              {linalg, "slogdet", 1, 2, &slogdet_loop}};
    return find_loops(loops, 8) < 0 ? NULL : PyModule_Create(&module);
}
