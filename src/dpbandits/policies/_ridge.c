/*
 * The round loop of the ridge-regression policies on an environment whose arms, rewards and
 * regrets are pre-drawn tables, one call per stretch of rounds up to the next release (which
 * stays in Python; docs/architecture.md, "Table rounds"):
 * - `run`: LinTS, LinUCB and the AdaPrivate family (A factorised every round);
 * - `run_switching`: RarelySwitching-zCDP and AdaC-OFUL-zCDP (a frozen factor between switches);
 * - `run_episodic`: zCDP-Episodic (an episode's own statistics besides A);
 * - `run_tree`: JDP-LinUCB (V_t from the tree release, its node noises drawn ahead in Python);
 * - `run_dgs`: DGS-LinUCB, whose release every round (exact or numpy noise) is made here too,
 *   by the exact samplers and calibration of `dpbandits.privacy._exact` (their headers).
 *
 * Every operation is the one the Python policies make, by the same code, so the results are
 * the Python loop's bit for bit (tests/policies/test_ridge_rounds.py):
 * - LAPACK dpotrf, dpotrs, dtrtrs, dsyevx and BLAS dsyr, daxpy, dtrsm, dtrsv are scipy's,
 *   bound from the `_cpointer` of the very f2py wrappers the policies call (`bind`);
 * - xᵀθ and yᵀy are numpy's float64 matmul loop (the `functions` of `np.matmul`), ln of a
 *   factor's diagonal numpy's float64 log loop and its sum numpy's add loop as a reduction,
 *   the rounding of a leaf to the noise grid numpy's float64 rint loop;
 * - ‖L⁻¹x‖² for every arm is numpy's einsum (PyArray_EinsteinSum, what `np.einsum` calls);
 * - the rest are single IEEE operations (compiled with -ffp-contract=off: no fused
 *   multiply-add), and ln(1 + v) is the C library's, as Python's `math.log1p` is.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_ridge.c must be compiled without -ffast-math: its results are IEEE operations, bit for bit"
#endif

typedef int f_int; /* scipy's LP64 LAPACK/BLAS (`_flapack`, `_fblas`) */

typedef void dpotrf_fn(const char *, const f_int *, double *, const f_int *, f_int *, size_t);
typedef void dpotrs_fn(const char *, const f_int *, const f_int *, const double *,
                       const f_int *, double *, const f_int *, f_int *, size_t);
typedef void dtrtrs_fn(const char *, const char *, const char *, const f_int *, const f_int *,
                       const double *, const f_int *, double *, const f_int *, f_int *, size_t,
                       size_t, size_t);
typedef void dsyr_fn(const char *, const f_int *, const double *, const double *,
                     const f_int *, double *, const f_int *, size_t);
typedef void daxpy_fn(const f_int *, const double *, const double *, const f_int *, double *,
                      const f_int *);
typedef void dtrsm_fn(const char *, const char *, const char *, const char *, const f_int *,
                      const f_int *, const double *, const double *, const f_int *, double *,
                      const f_int *, size_t, size_t, size_t, size_t);
typedef void dtrsv_fn(const char *, const char *, const char *, const f_int *, const double *,
                      const f_int *, double *, const f_int *, size_t, size_t, size_t);

typedef void dsyevx_fn(const char *, const char *, const char *, const f_int *, double *,
                       const f_int *, const double *, const double *, const f_int *,
                       const f_int *, const double *, f_int *, double *, double *,
                       const f_int *, double *, const f_int *, f_int *, f_int *, f_int *,
                       size_t, size_t, size_t);

static dpotrf_fn *dpotrf;
static dpotrs_fn *dpotrs;
static dtrtrs_fn *dtrtrs;
static dsyr_fn *dsyr;
static daxpy_fn *daxpy;
static dtrsm_fn *dtrsm;
static dtrsv_fn *dtrsv;
static dsyevx_fn *dsyevx;
static PyObject *linalg_error;

#include "../numpy_loops.h"
#include "../privacy/exact_calibration.h"
#include "../privacy/exact_sampler.h"
#include "outcome_tables.h"

static Loop matmul_loop, log_loop, add_loop, rint_loop;

enum { ACTION_TS = 0, ACTION_UCB = 1 };
enum { MEAN_EVERY_ROUND = 0, MEAN_KEPT = 1, MEAN_ONCE = 2 };
enum { TREE_AT_STOP = 0, TREE_FLOOR = 1, TREE_SNAP = 2 }; /* why `run_tree` returned */
#define SIGNAL_EVERY 4096    /* rounds between checks for Ctrl-C */

/* ---- binding ---------------------------------------------------------------------------- */

/* The routine behind scipy's f2py wrapper `object` of BLAS/LAPACK routine `name`. */
static void *pointer_of(PyObject *object, const char *name)
{
    PyObject *label = PyObject_GetAttrString(object, "__name__");
    const char *text = label != NULL && PyUnicode_Check(label) ? PyUnicode_AsUTF8(label) : NULL;
    size_t n = text != NULL ? strlen(text) : 0, m = strlen(name);
    int named = text != NULL && n >= m && strcmp(text + n - m, name) == 0
                && (n == m || text[n - m - 1] == ' ');
    Py_XDECREF(label);
    PyObject *capsule = named ? PyObject_GetAttrString(object, "_cpointer") : NULL;
    void *found = capsule != NULL && PyCapsule_CheckExact(capsule)
                  ? PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule)) : NULL;
    Py_XDECREF(capsule);
    if (found == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s is not allowed; must be scipy's f2py wrapper of %s",
                     name, name);
    }
    return found;
}

/* Workspace of `lambda_min_of` for d×d matrices: the copy dsyevx overwrites, its outputs and
 * the work arrays scipy's wrapper passes (lwork = 8d, iwork 5d, ifail d). */
typedef struct {
    double *copy, *w, *z, *work;
    f_int *iwork, *ifail;
} EigenWork;

static int eigen_work_for(npy_intp d, EigenWork *e)
{
    e->copy = malloc(sizeof(double) * (size_t)(d * d + d + 1 + 8 * d));
    e->iwork = malloc(sizeof(f_int) * (size_t)(6 * d));
    if (e->copy == NULL || e->iwork == NULL) {
        free(e->copy);
        free(e->iwork);
        PyErr_NoMemory();
        return -1;
    }
    e->w = e->copy + d * d, e->z = e->w + d, e->work = e->z + 1;
    e->ifail = e->iwork + 5 * d;
    return 0;
}

static void eigen_work_free(EigenWork *e)
{
    free(e->copy);
    free(e->iwork);
}

/* The smallest eigenvalue of the symmetric d×d matrix whose lower triangle `a` holds, as
 * `linalg.lambda_min` asks scipy's dsyevx for it (no vectors, range "I", il = iu = 1,
 * abstol 0); returns LAPACK's info. */
static f_int lambda_min_of(const double *a, f_int n, double *out, EigenWork *e)
{
    f_int il = 1, iu = 1, m = 0, ldz = 1, lwork = 8 * n > 1 ? 8 * n : 1, info = 0;
    double vl = 0.0, vu = 1.0, abstol = 0.0;
    memcpy(e->copy, a, sizeof(double) * (size_t)n * (size_t)n);
    dsyevx("N", "I", "L", &n, e->copy, &n, &vl, &vu, &il, &iu, &abstol, &m, e->w, e->z, &ldz,
           e->work, &lwork, e->iwork, e->ifail, &info, 1, 1, 1);
    *out = e->w[0];
    return info;
}

/* The bound routines on 2 × 2 problems with exact answers: a wrong routine or integer width
 * fails here, at import, instead of giving other numbers. */
static int self_check(void)
{
    f_int two = 2, one = 1, info = 0;
    double unit = 1.0, scale = 2.0;
    const double gram_2x2[4] = {2.0, 1.0, 1.0, 2.0};
    EigenWork eigen_work[1];
    if (eigen_work_for(2, eigen_work) < 0)
        return -1;
    double factor[4] = {4.0, 2.0, 2.0, 5.0};                  /* A = [[4, 2], [2, 5]] */
    dpotrf("L", &two, factor, &two, &info, 1);                /* L = [[2, 0], [1, 2]] */
    int ok = info == 0 && factor[0] == 2.0 && factor[1] == 1.0 && factor[3] == 2.0;
    double x[2] = {8.0, 12.0};                                /* A⁻¹(8, 12) = (1, 2) */
    dpotrs("L", &two, &one, factor, &two, x, &two, &info, 1);
    ok = ok && info == 0 && fabs(x[0] - 1.0) < 1e-12 && fabs(x[1] - 2.0) < 1e-12;
    double y[2] = {4.0, 4.0};                                 /* L⁻ᵀ(4, 4) = (1, 2) */
    dtrtrs("L", "T", "N", &two, &one, factor, &two, y, &two, &info, 1, 1, 1);
    ok = ok && info == 0 && y[0] == 1.0 && y[1] == 2.0;
    double z[2] = {4.0, 6.0};                                 /* L⁻¹(4, 6) = (2, 2) */
    dtrsv("L", "N", "N", &two, factor, &two, z, &one, 1, 1, 1);
    ok = ok && z[0] == 2.0 && z[1] == 2.0;
    double w[2] = {4.0, 6.0};
    dtrsm("L", "L", "N", "N", &two, &one, &unit, factor, &two, w, &two, 1, 1, 1, 1);
    ok = ok && w[0] == 2.0 && w[1] == 2.0;
    double gram[4] = {0.0, 0.0, 7.0, 0.0}, v[2] = {1.0, 2.0};
    dsyr("L", &two, &unit, v, &one, gram, &two, 1);           /* lower of v vᵀ; upper kept */
    ok = ok && gram[0] == 1.0 && gram[1] == 2.0 && gram[2] == 7.0 && gram[3] == 4.0;
    double sum[2] = {1.0, 1.0};
    daxpy(&two, &scale, v, &one, sum, &one);                  /* (1, 1) + 2(1, 2) */
    ok = ok && sum[0] == 3.0 && sum[1] == 5.0;
    double smallest = 0.0;                                    /* of [[2, 1], [1, 2]]: 1 */
    ok = ok && lambda_min_of(gram_2x2, 2, &smallest, eigen_work) == 0
         && fabs(smallest - 1.0) < 1e-12;
    eigen_work_free(eigen_work);
    if (!ok)
        PyErr_SetString(PyExc_RuntimeError, "bind: the routines do not compute what scipy's "
                        "dpotrf, dpotrs, dtrtrs, dtrsv, dtrsm, dsyr, daxpy and dsyevx "
                        "compute");
    return ok ? 0 : -1;
}

static PyObject *bind(PyObject *self, PyObject *args)
{
    enum { N_ROUTINES = 8 };
    PyObject *wrappers[N_ROUTINES], *error;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO:bind", &wrappers[0], &wrappers[1], &wrappers[2],
                          &wrappers[3], &wrappers[4], &wrappers[5], &wrappers[6], &wrappers[7],
                          &error))
        return NULL;
    const char *names[N_ROUTINES] = {"dpotrf", "dpotrs", "dtrtrs", "dsyr", "daxpy", "dtrsm",
                                     "dtrsv", "dsyevx"};
    void *found[N_ROUTINES];
    for (int k = 0; k < N_ROUTINES; k++)
        if ((found[k] = pointer_of(wrappers[k], names[k])) == NULL)
            return NULL;
    if (!PyType_Check(error) || !PyType_IsSubtype((PyTypeObject *)error,
                                                  (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "error is not allowed; must be an exception class");
        return NULL;
    }
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {"numpy", "log", 1, 1, &log_loop},
                              {"numpy", "add", 2, 1, &add_loop},
                              {"numpy", "rint", 1, 1, &rint_loop}};
    if (find_loops(loops, 4) < 0)
        return NULL;
    dpotrf = (dpotrf_fn *)found[0];
    dpotrs = (dpotrs_fn *)found[1];
    dtrtrs = (dtrtrs_fn *)found[2];
    dsyr = (dsyr_fn *)found[3];
    daxpy = (daxpy_fn *)found[4];
    dtrsm = (dtrsm_fn *)found[5];
    dtrsv = (dtrsv_fn *)found[6];
    dsyevx = (dsyevx_fn *)found[7];
    if (self_check() < 0) {
        dpotrf = NULL; /* unbound again: every entry point refuses to run */
        return NULL;
    }
    Py_XSETREF(linalg_error, Py_NewRef(error));
    Py_RETURN_NONE;
}

static int bound(const char *caller)
{
    if (dpotrf != NULL)
        return 0;
    PyErr_Format(PyExc_RuntimeError, "%s before bind: the LAPACK routines are unset", caller);
    return -1;
}

/* ---- numpy's operations ----------------------------------------------------------------- */

/* out = a @ x for the m×n C-ordered a, by numpy's matmul loop with the dimensions and steps
 * numpy passes for a (m, n) matrix times an (n,) vector (m = 1: a vector, xᵀx-like dot). */
static void matvec(const double *a, npy_intp m, npy_intp n, const double *x, double *out)
{
    npy_intp size = (npy_intp)sizeof(double);
    matmul_with(&matmul_loop, a, n * size, size, m, n, x, size, 0, 1, 1, out);
}

/* `float(x @ y)` of two vectors of length n. */
static double dot(const double *x, const double *y, npy_intp n)
{
    double out;
    matvec(x, 1, n, y, &out);
    return out;
}

/* `2.0 * float(np.log(factor.diagonal()).sum())`: numpy's log loop on the strided diagonal,
 * then its add loop as the reduction makes it, from the identity 0.0 (`logs`: d scratch). */
static double log_det(const double *factor, npy_intp d, double *logs)
{
    char *log_args[2] = {(char *)factor, (char *)logs};
    npy_intp log_steps[2] = {(d + 1) * (npy_intp)sizeof(double), sizeof(double)};
    log_loop.function(log_args, &d, log_steps, log_loop.data);
    return 2.0 * add_reduce(&add_loop, logs, d);
}

/* numpy's argmax of float64: the first largest value, or the first NaN. */
static npy_intp argmax(const double *s, npy_intp n)
{
    npy_intp best = 0;
    double top = s[0];
    if (isnan(top))
        return 0;
    for (npy_intp i = 1; i < n; i++) {
        if (isnan(s[i]))
            return i;
        if (s[i] > top) {
            top = s[i];
            best = i;
        }
    }
    return best;
}

/* `add_reward`: b += x when r is 1 (1·x is x), else b += r·x, as numpy does it. */
static void add_reward(double *b, const double *x, double r, npy_intp d)
{
    if (r == 1.0)
        for (npy_intp i = 0; i < d; i++)
            b[i] += x[i];
    else
        for (npy_intp i = 0; i < d; i++)
            b[i] += r * x[i];
}

static int lapack_failed(const char *what, f_int info)
{
    PyErr_Format(linalg_error, "%s failed (info = %d)", what, (int)info);
    return -1;
}

/* The lower Cholesky factor of A (its copy in `factor`), as `linalg.cholesky`. */
static int factorise(const double *a, f_int n, double *factor)
{
    f_int info = 0;
    memcpy(factor, a, sizeof(double) * (size_t)n * (size_t)n);
    dpotrf("L", &n, factor, &n, &info, 1);
    return info != 0 ? lapack_failed("Cholesky", info) : 0;
}

/* The scores of the K arms of one round, from the lower Cholesky factor of A and θ̂:
 * TS   xᵀ(θ̂ + scale·L⁻ᵀz), as `(arms @ sample)` after `sample *= v; sample += θ̂`;
 * UCB  scale·‖L⁻¹x‖ + xᵀθ̂, as `ucb_index`: sqrt of the einsum, *= α, += arms @ θ̂.
 * `sample` and `products` are d- and K-sized scratch; `w_obj` a d×K Fortran array (UCB). */
static int score(int action, f_int n, f_int k, const double *factor, const double *arms_t,
                 const double *theta, double scale, const double *normal, double *sample,
                 double *products, PyObject *w_obj, double *scores)
{
    npy_intp d = n, K = k;
    f_int one = 1, info = 0;
    double unit = 1.0;
    if (action == ACTION_TS) {
        memcpy(sample, normal, sizeof(double) * (size_t)d);
        dtrtrs("L", "T", "N", &n, &one, factor, &n, sample, &n, &info, 1, 1, 1);
        if (info != 0)
            return lapack_failed("triangular solve", info);
        for (npy_intp i = 0; i < d; i++) {
            if (scale != 1.0) /* 1·ξ is ξ */
                sample[i] *= scale;
            sample[i] += theta[i];
        }
        matvec(arms_t, K, d, sample, scores);
        return 0;
    }
    /* the K×d C-ordered arms are xᵀ as a d×K Fortran-ordered matrix */
    double *w = (double *)PyArray_DATA((PyArrayObject *)w_obj);
    memcpy(w, arms_t, sizeof(double) * (size_t)(K * d));
    dtrsm("L", "L", "N", "N", &n, &k, &unit, factor, &n, w, &n, 1, 1, 1, 1);
    PyArrayObject *ops[2] = {(PyArrayObject *)w_obj, (PyArrayObject *)w_obj};
    PyObject *squares = (PyObject *)PyArray_EinsteinSum(
        (char *)"ij,ij->j", 2, ops, NULL, NPY_KEEPORDER, NPY_SAFE_CASTING, NULL);
    if (squares == NULL)
        return -1;
    const double *sq_values = (const double *)PyArray_DATA((PyArrayObject *)squares);
    for (npy_intp j = 0; j < K; j++)
        scores[j] = sqrt(sq_values[j]);
    Py_DECREF(squares);
    if (scale != 1.0) /* 1·w is w */
        for (npy_intp j = 0; j < K; j++)
            scores[j] *= scale;
    matvec(arms_t, K, d, theta, products);
    for (npy_intp j = 0; j < K; j++)
        scores[j] += products[j];
    return 0;
}

/* ---- arguments -------------------------------------------------------------------------- */

/* A block of standard normal rows, (n, d) float64 C-ordered, whose row `index` (0 … n) is the
 * next to use; its data and n, or NULL with an error. */
static const double *normals_of(PyObject *object, npy_intp d, Py_ssize_t index, npy_intp *n)
{
    npy_intp any_d[2] = {-1, d};
    const double *normals = doubles(object, "normals", 2, any_d, 0);
    if (normals == NULL)
        return NULL;
    *n = PyArray_DIM((PyArrayObject *)object, 0);
    if (index < 0 || index > *n) {
        PyErr_Format(PyExc_ValueError, "normal_index = %zd is not allowed; must be in [0, %zd]",
                     index, (Py_ssize_t)*n);
        return NULL;
    }
    return normals;
}

/* A d×d float64 matrix in Fortran order (writable if asked), as the policies keep A. */
static double *square(PyObject *object, const char *name, npy_intp d, int writable)
{
    PyArrayObject *array = (PyArrayObject *)object;
    if (!PyArray_Check(object) || PyArray_TYPE(array) != NPY_DOUBLE || PyArray_NDIM(array) != 2
            || PyArray_DIM(array, 0) != d || PyArray_DIM(array, 1) != d
            || !PyArray_IS_F_CONTIGUOUS(array) || !PyArray_ISALIGNED(array)
            || !PyArray_ISNOTSWAPPED(array) || (writable && !PyArray_ISWRITEABLE(array))) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a%s Fortran-ordered native "
                     "float64 d x d array", name, writable ? " writable" : "");
        return NULL;
    }
    return (double *)PyArray_DATA(array);
}

/* Arrays a call reads or writes must not share memory where one of them is written. */
typedef struct {
    const char *name;
    PyObject *array; /* a numpy array, or NULL: not used */
    int written;
} Use;

static int apart(const Use *uses, int n)
{
    for (int i = 0; i < n; i++) {
        if (uses[i].array == NULL)
            continue;
        const char *a = PyArray_BYTES((PyArrayObject *)uses[i].array);
        const char *a_end = a + PyArray_NBYTES((PyArrayObject *)uses[i].array);
        for (int j = 0; j < i; j++) {
            if (uses[j].array == NULL || !(uses[i].written || uses[j].written))
                continue;
            const char *b = PyArray_BYTES((PyArrayObject *)uses[j].array);
            const char *b_end = b + PyArray_NBYTES((PyArrayObject *)uses[j].array);
            if (a < b_end && b < a_end) {
                PyErr_Format(PyExc_ValueError, "%s and %s are not allowed to share memory; "
                             "must be separate arrays", uses[j].name, uses[i].name);
                return -1;
            }
        }
    }
    return 0;
}

/* The tables' six arrays as uses, followed by a call's own. */
static int apart_with(const Tables *tb, const Use *own, int n_own)
{
    Use uses[16];
    const char *names[6] = {"arms", "rewards", "regrets", "regret", "reward", "chosen"};
    for (int k = 0; k < 6; k++)
        uses[k] = (Use){names[k], (PyObject *)tb->arrays[k], k >= 3};
    for (int k = 0; k < n_own && k < 10; k++)
        uses[6 + k] = own[k];
    return apart(uses, 6 + (n_own < 10 ? n_own : 10));
}

/* Round t's pull of arm `index`: record the arm, its regret and reward; the clipped reward
 * (`clip_reward`: min(max(r, 0), 1) as Python's max and min pick). */
static double pull(const Tables *tables, npy_intp t, npy_intp index)
{
    double r = tables->rewards[t * tables->K + index];
    tables->chosen[t] = index;
    tables->regret[t] = tables->regrets[t * tables->K + index];
    tables->reward[t] = r;
    double clipped = 0.0 > r ? 0.0 : r;
    return 1.0 < clipped ? 1.0 : clipped;
}

/* Scratch of one call: a factor, d- and K-sized vectors and the UCB workspace. */
typedef struct {
    double *factor, *sample, *logs, *scores, *products;
    PyObject *w_obj;
} Scratch;

static int scratch_for(npy_intp d, npy_intp K, int ucb, Scratch *s)
{
    s->w_obj = NULL;
    s->factor = malloc(sizeof(double) * (size_t)(d * d + 2 * d + 2 * K));
    if (s->factor == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->sample = s->factor + d * d, s->logs = s->sample + d;
    s->scores = s->logs + d, s->products = s->scores + K;
    if (ucb) {
        npy_intp dk[2] = {d, K}; /* d×K, Fortran order, as f2py's dtrsm returns */
        if ((s->w_obj = PyArray_ZEROS(2, dk, NPY_DOUBLE, 1)) == NULL) {
            free(s->factor);
            return -1;
        }
    }
    return 0;
}

static void scratch_free(Scratch *s)
{
    free(s->factor);
    Py_XDECREF(s->w_obj);
}

/* Round t's UCB arm from the factor and θ (`score`, numpy's argmax) and its pull (`pull`):
 * the arm's index and clipped reward. */
static int ucb_pull(const Tables *tb, npy_intp t, const double *factor, const double *theta,
                    double scale, Scratch *sc, npy_intp *index, double *r)
{
    const double *arms_t = tb->arms + t * tb->K * tb->d;
    if (score(ACTION_UCB, (f_int)tb->d, (f_int)tb->K, factor, arms_t, theta, scale, NULL,
              sc->sample, sc->products, sc->w_obj, sc->scores) < 0)
        return -1;
    *index = argmax(sc->scores, tb->K);
    *r = pull(tb, t, *index);
    return 0;
}

/* ---- releases with exact noise ------------------------------------------------------------ */

enum { RELEASE_MADE = 0, RELEASE_DECLINED = 1, RELEASE_OVERFLOW = 2 };

/* θ ← rint(θ/γ)·γ + γ·Z, Z discrete Gaussian of integer σ/γ (γ the grid of σ), as
 * `snapped_release(noise, θ, σ)` makes it (bitgen's lock held by the caller). RELEASE_DECLINED,
 * θ unchanged, where `snapped_release` takes its other path (a coordinate beyond 2^53·γ or not
 * finite); RELEASE_OVERFLOW, with its RuntimeError set, if the sampler leaves its range. */
static int snapped_gaussian(double *theta, npy_intp d, double sigma, bitgen_t *bitgen)
{
    const double gamma = calibration_grid(sigma), integer_sigma = ceil(sigma / gamma);
    int near = 1; /* every |θ_i| < 2^53·γ (NaN is not) */
    for (npy_intp i = 0; i < d && near; i++)
        near = fabs(theta[i]) < 0x1p53 * gamma;
    if (!near || !(integer_sigma >= 1.0 && integer_sigma < (double)PARAM_LIMIT))
        return RELEASE_DECLINED;
    for (npy_intp i = 0; i < d; i++)
        theta[i] /= gamma;
    apply(&rint_loop, theta, theta, d);
    for (npy_intp i = 0; i < d; i++) {
        rsrc_t rs = {bitgen, 0, 0};
        int64_t z = 0;
        if (dgauss(&rs, (uint64_t)integer_sigma, &z) != SAMPLE_OK) {
            PyErr_SetString(PyExc_RuntimeError, SAMPLE_OVERFLOW_MESSAGE);
            return RELEASE_OVERFLOW;
        }
        theta[i] = theta[i] * gamma + gamma * (double)z;
    }
    return RELEASE_MADE;
}

/* θ ← the release of θ with exact noise, as `LinearPolicy.gaussian_release` after
 * `calibrate_release(plain, Δ)`: σ the calibration of `plain` for sensitivity Δ
 * (`calibration_inflate`, RELEASE_DECLINED where it declines), then `snapped_gaussian`. */
static int exact_release(double *theta, npy_intp d, double plain, double sensitivity,
                         bitgen_t *bitgen, double *sigma_out)
{
    if (!calibration_inflate(plain, sensitivity, (double)d, sigma_out))
        return RELEASE_DECLINED;
    return snapped_gaussian(theta, d, *sigma_out, bitgen);
}

/* zCDP-Episodic's episode estimates (θ̂, Δ, σ) remembered within a call by the bytes of the
 * episode's (A, b), as the policy's `episode_memo` remembers them: one-sample episodes
 * (c_trigger = 1) repeat, the arms coming from a finite pool. Open addressing; emptied when
 * half full. */
#define EPISODE_SLOTS 1024

typedef struct {
    uint64_t hash;
    double *key; /* A (d·d) then b (d), then θ̂ (d); NULL: empty slot */
    double sensitivity, sigma;
} EpisodeEntry;

typedef struct {
    EpisodeEntry *slots;
    npy_intp count, d;
} EpisodeMemo;

static uint64_t episode_hash(const double *a, const double *b, npy_intp d)
{
    uint64_t h = 1469598103934665603ULL;
    for (npy_intp k = 0; k < d * d + d; k++) {
        uint64_t word;
        memcpy(&word, k < d * d ? a + k : b + (k - d * d), sizeof word);
        h = (h ^ word) * 1099511628211ULL;
    }
    h ^= h >> 33; /* the slot is the low bits: fold the high ones in (MurmurHash3's fmix64) */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static void episode_memo_clear(EpisodeMemo *m)
{
    for (npy_intp i = 0; i < EPISODE_SLOTS; i++) {
        free(m->slots[i].key);
        m->slots[i].key = NULL;
    }
    m->count = 0;
}

/* The slot of (a, b): its entry, or the empty slot where it goes. */
static EpisodeEntry *episode_slot(EpisodeMemo *m, const double *a, const double *b,
                                  uint64_t hash)
{
    const npy_intp d = m->d;
    for (npy_intp i = (npy_intp)(hash & (EPISODE_SLOTS - 1));; i = (i + 1) & (EPISODE_SLOTS - 1)) {
        EpisodeEntry *e = &m->slots[i];
        if (e->key == NULL || (e->hash == hash
                               && memcmp(e->key, a, sizeof(double) * (size_t)(d * d)) == 0
                               && memcmp(e->key + d * d, b, sizeof(double) * (size_t)d) == 0))
            return e;
    }
}

/* Remember (θ̂, Δ, σ) for (a, b); a failed allocation only forgoes the memo. */
static void episode_remember(EpisodeMemo *m, const double *a, const double *b, uint64_t hash,
                             const double *theta_hat, double sensitivity, double sigma)
{
    const npy_intp d = m->d;
    if (m->count >= EPISODE_SLOTS / 2)
        episode_memo_clear(m);
    EpisodeEntry *e = episode_slot(m, a, b, hash);
    if (e->key != NULL || (e->key = malloc(sizeof(double) * (size_t)(d * d + 2 * d))) == NULL)
        return;
    memcpy(e->key, a, sizeof(double) * (size_t)(d * d));
    memcpy(e->key + d * d, b, sizeof(double) * (size_t)d);
    memcpy(e->key + d * d + d, theta_hat, sizeof(double) * (size_t)d);
    e->hash = hash, e->sensitivity = sensitivity, e->sigma = sigma;
    m->count++;
}

/* Whether a signal this thread blocks is pending. Around `run_dgs` and `run_episodic` and the
 * recording of what they release, the caller (`ridge_rounds.signals_held`) blocks the signals
 * a handler can be set for: the loop stops between rounds when one arrives, and it is
 * delivered (its handler runs) once the releases are recorded. A call plays at least one round
 * first, so that a signal the thread keeps blocked itself cannot stop every call at once. */
static int held_signal_pending(void)
{
    sigset_t blocked, pending;
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0 || sigpending(&pending) != 0)
        return 0;
    for (int number = 1; number < NSIG; number++)
        if (sigismember(&blocked, number) == 1 && sigismember(&pending, number) == 1)
            return 1;
    return 0;
}

/* hold_signals() → the thread's previous signal mask (bytes): block every signal a handler
 * can be set for, but the faults a process raises on itself (`ridge_rounds.signals_held`). */
static PyObject *hold_signals(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    const int faults[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS,
                          SIGABRT};
    sigset_t held, previous;
    sigfillset(&held);
    for (size_t k = 0; k < sizeof faults / sizeof faults[0]; k++)
        sigdelset(&held, faults[k]);
    if (pthread_sigmask(SIG_BLOCK, &held, &previous) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyBytes_FromStringAndSize((const char *)&previous, sizeof previous);
}

/* restore_signals(previous): the signal mask `hold_signals` returned, back in force. */
static PyObject *restore_signals(PyObject *self, PyObject *previous)
{
    (void)self;
    if (!PyBytes_Check(previous) || PyBytes_GET_SIZE(previous) != (Py_ssize_t)sizeof(sigset_t)) {
        PyErr_SetString(PyExc_TypeError, "previous is not allowed; must be what hold_signals "
                        "returned");
        return NULL;
    }
    sigset_t mask;
    memcpy(&mask, PyBytes_AS_STRING(previous), sizeof mask);
    if (pthread_sigmask(SIG_SETMASK, &mask, NULL) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* The exception set now, cleared and returned (a new reference, its traceback attached): a
 * loop that released something before it failed returns it beside what it did, so that the
 * policy records those releases before it raises. */
static PyObject *caught_error(void)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (type == NULL) {
        PyErr_SetString(PyExc_SystemError, "a compiled loop failed without an exception");
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL)
        PyException_SetTraceback(value, traceback);
    Py_DECREF(type);
    Py_XDECREF(traceback);
    return value;
}

/* The bit generator behind `capsule` (None: NULL, numpy noise), or an error. */
static int bitgen_of(PyObject *capsule, bitgen_t **out)
{
    *out = NULL;
    if (capsule == Py_None)
        return 0;
    if (!PyCapsule_IsValid(capsule, "BitGenerator")) {
        PyErr_SetString(PyExc_TypeError, "capsule is not allowed; must be None or "
                        "rng.bit_generator.capsule");
        return -1;
    }
    *out = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    return 0;
}

/* ---- the loops -------------------------------------------------------------------------- */

/*
 * run(a, b, theta, tables, t, stop, action, scale, normals, normal_index, mean_rule, s,
 *     include, batch_start, batch, horizon)
 * → (next t, next normal index, rewards added to s, released)
 */
static PyObject *run(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *b_obj, *theta_obj, *tables_obj, *normals_obj, *s_obj, *include_obj;
    Py_ssize_t t, stop, normal_index, batch_start, batch, horizon;
    int action, mean_rule;
    double scale;
    Tables tb;
    if (!PyArg_ParseTuple(args, "OOOOnnidOniOOnnn:run", &a_obj, &b_obj, &theta_obj,
                          &tables_obj, &t, &stop, &action, &scale, &normals_obj, &normal_index,
                          &mean_rule, &s_obj, &include_obj, &batch_start, &batch, &horizon)
            || bound("run") < 0)
        return NULL;
    if (batch < 0) {
        PyErr_Format(PyExc_ValueError, "batch = %zd is not allowed; must be 0 (none) or B >= 1",
                     batch);
        return NULL;
    }
    if (action != ACTION_TS && action != ACTION_UCB) {
        PyErr_Format(PyExc_ValueError, "action = %d is not allowed; must be 0 (TS) or 1 (UCB)",
                     action);
        return NULL;
    }
    if (mean_rule < MEAN_EVERY_ROUND || mean_rule > MEAN_ONCE) {
        PyErr_Format(PyExc_ValueError, "mean_rule = %d is not allowed; must be 0, 1 or 2",
                     mean_rule);
        return NULL;
    }
    if (tables_from(tables_obj, t, stop, &tb) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, vec[1] = {d};
    double *a = square(a_obj, "a", d, 1);
    double *b = a ? doubles(b_obj, "b", 1, vec, 1) : NULL;
    double *theta = b ? doubles(theta_obj, "theta", 1, vec, 1) : NULL;
    if (theta == NULL)
        return NULL;
    if (stop > horizon) {
        PyErr_Format(PyExc_ValueError, "stop = %zd is not allowed; must be <= horizon = %zd",
                     stop, horizon);
        return NULL;
    }
    const double *normals = NULL;
    npy_intp n_normals = 0;
    if (action == ACTION_TS
            && (normals = normals_of(normals_obj, d, normal_index, &n_normals)) == NULL)
        return NULL;
    double *s = NULL;
    const npy_bool *include = NULL;
    if (batch > 0) {
        if ((s = doubles(s_obj, "s", 1, vec, 1)) == NULL)
            return NULL;
        if (include_obj != Py_None) {
            PyArrayObject *inc = (PyArrayObject *)include_obj;
            if (!PyArray_Check(include_obj) || PyArray_TYPE(inc) != NPY_BOOL
                    || PyArray_NDIM(inc) != 1 || PyArray_DIM(inc, 0) != batch
                    || !PyArray_IS_C_CONTIGUOUS(inc)) {
                PyErr_Format(PyExc_ValueError, "include is not allowed; must be None or a "
                             "contiguous bool vector of B = %zd values", batch);
                return NULL;
            }
            include = (const npy_bool *)PyArray_DATA(inc);
        }
        if (t < batch_start || t >= batch_start + batch) {
            PyErr_Format(PyExc_ValueError, "t = %zd is not allowed; must be in the batch "
                         "[%zd, %zd)", t, batch_start, batch_start + batch);
            return NULL;
        }
    }

    Use own[6] = {{"a", a_obj, 1}, {"b", b_obj, 1}, {"theta", theta_obj, 1},
                  {"normals", normals != NULL ? normals_obj : NULL, 0},
                  {"s", s != NULL ? s_obj : NULL, 1},
                  {"include", include != NULL ? include_obj : NULL, 0}};
    Scratch sc;
    if (apart_with(&tb, own, 6) < 0 || scratch_for(d, K, action == ACTION_UCB, &sc) < 0)
        return NULL;
    f_int n = (f_int)d, one = 1, kk = (f_int)K, info = 0;
    double unit = 1.0;
    Py_ssize_t added = 0;
    int released = 0, failed = 0;
    for (; t < stop; t++) {
        if ((t & (SIGNAL_EVERY - 1)) == 0 && (failed = PyErr_CheckSignals()) < 0)
            break;
        if (action == ACTION_TS && normal_index >= n_normals)
            break;
        const double *arms_t = tb.arms + t * K * d;
        if ((failed = factorise(a, n, sc.factor)) < 0)
            break;
        if (mean_rule != MEAN_KEPT) {
            memcpy(theta, b, sizeof(double) * (size_t)d);
            dpotrs("L", &n, &one, sc.factor, &n, theta, &n, &info, 1);
            if (info != 0) {
                failed = lapack_failed("Cholesky solve", info);
                break;
            }
            if (mean_rule == MEAN_ONCE)
                mean_rule = MEAN_KEPT;
        }
        const double *normal = action == ACTION_TS ? normals + d * normal_index++ : NULL;
        if ((failed = score(action, n, kk, sc.factor, arms_t, theta, scale, normal, sc.sample,
                            sc.products, sc.w_obj, sc.scores)) < 0)
            break;
        npy_intp index = argmax(sc.scores, K);
        double r = pull(&tb, t, index);
        const double *x = arms_t + index * d;
        dsyr("L", &n, &unit, x, &one, a, &n, 1);
        if (batch == 0) {
            add_reward(b, x, r, d);
            continue;
        }
        Py_ssize_t offset = t - batch_start;
        if (include == NULL || include[offset]) {
            if (r != 0.0) /* BLAS daxpy returns at once when a = 0 */
                daxpy(&n, &r, x, &one, s, &one);
            added++;
        }
        if (offset + 1 == batch || t == horizon - 1) {
            released = 1;
            t++;
            break;
        }
    }
    scratch_free(&sc);
    if (failed)
        return NULL;
    return Py_BuildValue("nnnO", t, normal_index, added, released ? Py_True : Py_False);
}

/*
 * run_switching(a, s, theta, factor_tau, tables, t, stop, scale, in_episode, growth_bound,
 *               mass, log_det_tau, log_c, lam)
 * → (next t, in_episode, growth_bound, mass, switch due at next t)
 *
 * A round of RarelySwitching-zCDP / AdaC-OFUL-zCDP (`_SwitchingIncrement.choose`, `observe`):
 * when the growth bound is within the margin of ln(1 + C), ln det A_t − ln det A_τ is computed;
 * above ln(1 + C) the call returns before the round, for the policy's own test and switch.
 */
static PyObject *run_switching(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *s_obj, *theta_obj, *tau_obj, *tables_obj;
    Py_ssize_t t, stop, in_episode;
    double scale, growth_bound, mass, log_det_tau, log_c, lam;
    Tables tb;
    if (!PyArg_ParseTuple(args, "OOOOOnndnddddd:run_switching", &a_obj, &s_obj, &theta_obj,
                          &tau_obj, &tables_obj, &t, &stop, &scale, &in_episode,
                          &growth_bound, &mass, &log_det_tau, &log_c, &lam)
            || bound("run_switching") < 0 || tables_from(tables_obj, t, stop, &tb) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, vec[1] = {d};
    double *a = square(a_obj, "a", d, 1);
    const double *tau = a ? square(tau_obj, "factor_tau", d, 0) : NULL;
    double *s = tau ? doubles(s_obj, "s", 1, vec, 1) : NULL;
    const double *theta = s ? doubles(theta_obj, "theta", 1, vec, 0) : NULL;
    if (theta == NULL)
        return NULL;
    Use own[4] = {{"a", a_obj, 1}, {"s", s_obj, 1}, {"theta", theta_obj, 0},
                  {"factor_tau", tau_obj, 0}};
    Scratch sc;
    if (apart_with(&tb, own, 4) < 0 || scratch_for(d, K, 1, &sc) < 0)
        return NULL;
    f_int n = (f_int)d, one = 1;
    double unit = 1.0;
    /* `margin()`'s constant factors, in its order: 2^-40·d², then ·(d + n)·κ */
    double tiny = ldexp(1.0, -40) * (double)d * (double)d;
    int due = 0, failed = 0;
    for (; t < stop; t++) {
        if ((t & (SIGNAL_EVERY - 1)) == 0 && (failed = PyErr_CheckSignals()) < 0)
            break;
        if (in_episode > 0) {
            double kappa = ((double)d * lam + mass) / lam;
            double margin = 1e-6 + tiny * (double)(d + in_episode) * kappa;
            if (growth_bound > log_c - margin) {
                if ((failed = factorise(a, n, sc.factor)) < 0)
                    break;
                if (log_det(sc.factor, d, sc.logs) - log_det_tau > log_c) {
                    due = 1;
                    break;
                }
            }
        }
        npy_intp index;
        double r;
        if ((failed = ucb_pull(&tb, t, tau, theta, scale, &sc, &index, &r)) < 0)
            break;
        const double *x = tb.arms + (t * K + index) * d;
        dsyr("L", &n, &unit, x, &one, a, &n, 1);
        add_reward(s, x, r, d);
        in_episode++;
        memcpy(sc.sample, x, sizeof(double) * (size_t)d); /* y = L_τ⁻¹x */
        dtrsv("L", "N", "N", &n, tau, &n, sc.sample, &one, 1, 1, 1);
        growth_bound += log1p(dot(sc.sample, sc.sample, d));
        mass += dot(x, x, d);
    }
    scratch_free(&sc);
    if (failed)
        return NULL;
    return Py_BuildValue("nnddO", t, in_episode, growth_bound, mass, due ? Py_True : Py_False);
}

/*
 * run_episodic(a, a_episode, b_episode, theta, tables, t, stop, scale, in_episode, log_det_tau,
 *              log_c, a_start, b_start, rho, capsule, records)
 * → (next t, in_episode, log_det_tau, switches made, switch due at next t, the exception that
 *    stopped the loop or None)
 *
 * Rounds of zCDP-Episodic (`ZCDPEpisodic.choose`, `observe`). A switch is due before a round
 * when the episode has data and ln det A_t − ln det A_τ > ln c. With exact noise (`capsule`
 * the noise generator's, its lock held by the caller) the switch is made here as `switch`
 * makes it: θ̂ = (A^(ℓ))⁻¹b^(ℓ), Δ = 1/λ_min(A^(ℓ)), σ the calibration of Δ/√(2ρ) for Δ
 * (these remembered by the episode's bytes, `EpisodeMemo`), θ ← `snapped_gaussian(θ̂, σ)`,
 * A^(ℓ), b^(ℓ) ← a_start, b_start; each switch fills a row
 * (round, rewards in the episode, Δ, σ) of the float64 (n, 4) `records`, for the policy's
 * ledger. The call returns before a due switch it does not make (numpy noise, `capsule`
 * None; a calibration or release the compiled path declines; `records` full), for the
 * policy's own.
 */
static PyObject *run_episodic(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *a_ep_obj, *b_ep_obj, *theta_obj, *tables_obj, *a_start_obj,
        *b_start_obj, *capsule, *records_obj;
    Py_ssize_t t, stop, in_episode;
    double scale, log_det_tau, log_c, rho;
    Tables tb;
    if (!PyArg_ParseTuple(args, "OOOOOnndnddOOdOO:run_episodic", &a_obj, &a_ep_obj, &b_ep_obj,
                          &theta_obj, &tables_obj, &t, &stop, &scale, &in_episode,
                          &log_det_tau, &log_c, &a_start_obj, &b_start_obj, &rho, &capsule,
                          &records_obj)
            || bound("run_episodic") < 0 || tables_from(tables_obj, t, stop, &tb) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, vec[1] = {d}, rows4[2] = {-1, 4};
    double *a = square(a_obj, "a", d, 1);
    double *a_ep = a ? square(a_ep_obj, "a_episode", d, 1) : NULL;
    double *b_ep = a_ep ? doubles(b_ep_obj, "b_episode", 1, vec, 1) : NULL;
    double *theta = b_ep ? doubles(theta_obj, "theta", 1, vec, 1) : NULL;
    const double *a_start = theta ? square(a_start_obj, "a_start", d, 0) : NULL;
    const double *b_start = a_start ? doubles(b_start_obj, "b_start", 1, vec, 0) : NULL;
    bitgen_t *bitgen = NULL;
    if (b_start == NULL || bitgen_of(capsule, &bitgen) < 0)
        return NULL;
    double *records = NULL;
    npy_intp capacity = 0;
    if (bitgen != NULL) {
        if ((records = doubles(records_obj, "records", 2, rows4, 1)) == NULL)
            return NULL;
        capacity = PyArray_DIM((PyArrayObject *)records_obj, 0);
        if (!(rho > 0.0 && rho < INFINITY)) {
            PyErr_Format(PyExc_ValueError, "rho = %R is not allowed; must be a finite number "
                         "> 0", PyTuple_GET_ITEM(args, 13));
            return NULL;
        }
    }
    Use own[7] = {{"a", a_obj, 1}, {"a_episode", a_ep_obj, 1}, {"b_episode", b_ep_obj, 1},
                  {"theta", theta_obj, 1}, {"a_start", a_start_obj, 0},
                  {"b_start", b_start_obj, 0}, {"records", records ? records_obj : NULL, 1}};
    Scratch sc;
    EigenWork eigen;
    if (apart_with(&tb, own, 7) < 0 || scratch_for(d, K, 1, &sc) < 0)
        return NULL;
    double *episode_factor = malloc(sizeof(double) * (size_t)(d * d));
    EpisodeMemo memo = {calloc(EPISODE_SLOTS, sizeof(EpisodeEntry)), 0, d};
    if (episode_factor == NULL || memo.slots == NULL || eigen_work_for(d, &eigen) < 0) {
        if (episode_factor == NULL || memo.slots == NULL)
            PyErr_NoMemory();
        free(episode_factor);
        free(memo.slots);
        scratch_free(&sc);
        return NULL;
    }
    f_int n = (f_int)d, one = 1, info = 0;
    double unit = 1.0;
    const double noise_divisor = sqrt(2.0 * rho); /* σ = Δ/√(2ρ), `gaussian_sigma` */
    Py_ssize_t made = 0;
    int due = 0, failed = 0;
    const Py_ssize_t first = t; /* a call plays a round before it stops for a signal */
    for (; t < stop; t++) {
        if ((t & (SIGNAL_EVERY - 1)) == 0
                && ((failed = PyErr_CheckSignals()) < 0 || (t > first && held_signal_pending())))
            break;
        if ((failed = factorise(a, n, sc.factor)) < 0)
            break;
        double current;
        if (in_episode > 0 && (current = log_det(sc.factor, d, sc.logs)) - log_det_tau > log_c) {
            /* the switch here, or before the round by the policy */
            double smallest, sigma;
            due = 1;
            if (bitgen == NULL || made >= capacity)
                break;
            const uint64_t hash = episode_hash(a_ep, b_ep, d);
            const EpisodeEntry *known = episode_slot(&memo, a_ep, b_ep, hash);
            double sensitivity;
            if (known->key != NULL) {
                memcpy(sc.sample, known->key + d * d + d, sizeof(double) * (size_t)d);
                sensitivity = known->sensitivity, sigma = known->sigma;
            } else {
                memcpy(episode_factor, a_ep, sizeof(double) * (size_t)(d * d));
                dpotrf("L", &n, episode_factor, &n, &info, 1);
                if (info != 0)
                    break;
                memcpy(sc.sample, b_ep, sizeof(double) * (size_t)d);
                dpotrs("L", &n, &one, episode_factor, &n, sc.sample, &n, &info, 1);
                if (info != 0 || lambda_min_of(a_ep, n, &smallest, &eigen) != 0
                        || smallest == 0.0)
                    break;
                sensitivity = 1.0 / smallest;
                if (!(sensitivity > 0.0 && sensitivity < INFINITY)
                        || !calibration_inflate(sensitivity / noise_divisor, sensitivity,
                                                (double)d, &sigma))
                    break;
                episode_remember(&memo, a_ep, b_ep, hash, sc.sample, sensitivity, sigma);
            }
            const int status = snapped_gaussian(sc.sample, d, sigma, bitgen);
            failed = -(status == RELEASE_OVERFLOW);
            if (status != RELEASE_MADE)
                break;
            due = 0;
            double *row = records + 4 * made++;
            row[0] = (double)t, row[1] = (double)in_episode, row[2] = sensitivity, row[3] = sigma;
            memcpy(theta, sc.sample, sizeof(double) * (size_t)d);
            log_det_tau = current;
            in_episode = 0;
            memcpy(a_ep, a_start, sizeof(double) * (size_t)(d * d));
            memcpy(b_ep, b_start, sizeof(double) * (size_t)d);
        }
        npy_intp index;
        double r;
        if ((failed = ucb_pull(&tb, t, sc.factor, theta, scale, &sc, &index, &r)) < 0)
            break;
        const double *x = tb.arms + (t * K + index) * d;
        dsyr("L", &n, &unit, x, &one, a, &n, 1);
        dsyr("L", &n, &unit, x, &one, a_ep, &n, 1);
        add_reward(b_ep, x, r, d);
        in_episode++;
    }
    episode_memo_clear(&memo);
    free(memo.slots);
    free(episode_factor);
    eigen_work_free(&eigen);
    scratch_free(&sc);
    PyObject *error = failed ? caught_error() : Py_NewRef(Py_None);
    if (error == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("nndnOO", t, in_episode, log_det_tau, made,
                                  due && !failed ? Py_True : Py_False, error);
    Py_DECREF(error);
    return out;
}

/*
 * run_tree(released, base, shift, theta, tables, t, stop, scale, grid, limit, noises, ops,
 *          offsets) → (next t, why)
 *
 * A round of JDP-LinUCB (`JDPLinUCB.choose`, `observe`) on the tree release Ñ = `released`,
 * (d+1)×(d+1): V_t = base + Ñ[:d, :d] factorised, θ̂ = V_t⁻¹(Ñ[:d, d] + shift), the UCB arm;
 * then Ñ += the leaf z zᵀ, z = [x; r] (on the grid γ = `grid` when γ > 0, as `observe` snaps
 * it when max|z|² < limit = SNAP_LIMIT·γ), and the node noises of round t + i:
 * ops[offsets[i]] … ops[offsets[i + 1] − 1], each 2k + 1 (Ñ += noises[k]) or 2k (Ñ −= it),
 * in `advance_noise`'s order. why: TREE_AT_STOP; TREE_FLOOR before round `next t`, whose V_t
 * is not positive definite (the policy floors it); TREE_SNAP after the pull of round
 * `next t`, whose leaf needs `MatrixTree.snap` (the policy observes it).
 */
static PyObject *run_tree(PyObject *self, PyObject *args)
{
    PyObject *released_obj, *base_obj, *shift_obj, *theta_obj, *tables_obj, *noises_obj,
        *ops_obj, *offsets_obj;
    Py_ssize_t t, stop;
    double scale, grid, limit;
    Tables tb;
    if (!PyArg_ParseTuple(args, "OOOOOnndddOOO:run_tree", &released_obj, &base_obj,
                          &shift_obj, &theta_obj, &tables_obj, &t, &stop, &scale, &grid,
                          &limit, &noises_obj, &ops_obj, &offsets_obj)
            || bound("run_tree") < 0 || tables_from(tables_obj, t, stop, &tb) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, d1 = d + 1, vec[1] = {d}, dd[2] = {d, d}, big[2] = {d1, d1};
    npy_intp any_big[3] = {-1, d1, d1};
    double *released = doubles(released_obj, "released", 2, big, 1);
    const double *base = released ? doubles(base_obj, "base", 2, dd, 0) : NULL;
    const double *shift = base ? doubles(shift_obj, "shift", 1, vec, 0) : NULL;
    double *theta = shift ? doubles(theta_obj, "theta", 1, vec, 1) : NULL;
    const double *noises = theta ? doubles(noises_obj, "noises", 3, any_big, 0) : NULL;
    if (noises == NULL)
        return NULL;
    if (!(grid >= 0.0)) {
        PyErr_Format(PyExc_ValueError, "grid = %R is not allowed; must be >= 0",
                     PyTuple_GET_ITEM(args, 8));
        return NULL;
    }
    npy_intp n_noises = PyArray_DIM((PyArrayObject *)noises_obj, 0);
    PyArrayObject *ops_arr = (PyArrayObject *)ops_obj, *off_arr = (PyArrayObject *)offsets_obj;
    npy_intp rounds = stop - t;
    if (!PyArray_Check(ops_obj) || PyArray_TYPE(ops_arr) != NPY_INT64
            || PyArray_NDIM(ops_arr) != 1 || !PyArray_IS_C_CONTIGUOUS(ops_arr)
            || !PyArray_ISALIGNED(ops_arr) || !PyArray_ISNOTSWAPPED(ops_arr)
            || !PyArray_Check(offsets_obj) || PyArray_TYPE(off_arr) != NPY_INT64
            || PyArray_NDIM(off_arr) != 1 || PyArray_DIM(off_arr, 0) != rounds + 1
            || !PyArray_IS_C_CONTIGUOUS(off_arr) || !PyArray_ISALIGNED(off_arr)
            || !PyArray_ISNOTSWAPPED(off_arr)) {
        PyErr_SetString(PyExc_ValueError, "ops and offsets are not allowed; must be aligned "
                        "native int64 vectors, offsets of stop - t + 1 values");
        return NULL;
    }
    /* copies, checked once: neither a signal handler nor the loop's writes can change them */
    npy_intp n_ops = PyArray_DIM(ops_arr, 0);
    npy_int64 *offsets = malloc(sizeof(npy_int64) * (size_t)(rounds + 1 + n_ops));
    if (offsets == NULL)
        return PyErr_NoMemory();
    npy_int64 *ops = offsets + rounds + 1;
    memcpy(offsets, PyArray_DATA(off_arr), sizeof(npy_int64) * (size_t)(rounds + 1));
    memcpy(ops, PyArray_DATA(ops_arr), sizeof(npy_int64) * (size_t)n_ops);
    int ok = offsets[0] == 0 && offsets[rounds] == n_ops;
    for (npy_intp i = 0; ok && i < rounds; i++)
        ok = offsets[i] <= offsets[i + 1];
    for (npy_intp k = 0; ok && k < n_ops; k++)
        ok = ops[k] >= 0 && ops[k] / 2 < n_noises;
    if (!ok) {
        free(offsets);
        PyErr_SetString(PyExc_ValueError, "ops and offsets are not allowed; offsets must rise "
                        "from 0 to len(ops) and each op name one of the noises");
        return NULL;
    }
    Use own[5] = {{"released", released_obj, 1}, {"base", base_obj, 0},
                  {"shift", shift_obj, 0}, {"theta", theta_obj, 1}, {"noises", noises_obj, 0}};
    Scratch sc;
    if (apart_with(&tb, own, 5) < 0 || scratch_for(d, K, 1, &sc) < 0) {
        free(offsets);
        return NULL;
    }
    double *leaf = malloc(sizeof(double) * (size_t)(d1 * d1 + d1));
    if (leaf == NULL) {
        free(offsets);
        scratch_free(&sc);
        return PyErr_NoMemory();
    }
    double *z = leaf + d1 * d1;
    f_int n = (f_int)d, one = 1, info = 0;
    npy_intp cells = d1 * d1, start = t;
    int why = TREE_AT_STOP, failed = 0;
    for (; t < stop; t++) {
        if (((t - start) & (SIGNAL_EVERY - 1)) == 0 && (failed = PyErr_CheckSignals()) < 0)
            break;
        /* V_t = base + Ñ[:d, :d] into the factor's (Fortran) layout, factorised in place */
        for (npy_intp j = 0; j < d; j++)
            for (npy_intp i = 0; i < d; i++)
                sc.factor[i + j * d] = base[i * d + j] + released[i * d1 + j];
        dpotrf("L", &n, sc.factor, &n, &info, 1);
        if (info != 0) {
            why = TREE_FLOOR;
            break;
        }
        for (npy_intp i = 0; i < d; i++)
            theta[i] = released[i * d1 + d] + shift[i];
        dpotrs("L", &n, &one, sc.factor, &n, theta, &n, &info, 1);
        if (info != 0) {
            failed = lapack_failed("Cholesky solve", info);
            break;
        }
        npy_intp index;
        double r;
        if ((failed = ucb_pull(&tb, t, sc.factor, theta, scale, &sc, &index, &r)) < 0)
            break;
        memcpy(z, tb.arms + (t * K + index) * d, sizeof(double) * (size_t)d);
        z[d] = r;
        for (npy_intp i = 0; i < d1; i++)
            for (npy_intp j = 0; j < d1; j++)
                leaf[i * d1 + j] = z[i] * z[j];
        if (grid != 0.0) {
            double top = 0.0; /* max|z|, NaN when any is */
            for (npy_intp i = 0; i < d1 && !isnan(top); i++)
                top = isnan(z[i]) ? z[i] : (fabs(z[i]) > top ? fabs(z[i]) : top);
            if (!(top * top < limit)) {
                why = TREE_SNAP;
                break;
            }
            for (npy_intp k = 0; k < cells; k++)
                leaf[k] /= grid;
            apply(&rint_loop, leaf, leaf, cells);
            for (npy_intp k = 0; k < cells; k++)
                leaf[k] *= grid;
        }
        for (npy_intp k = 0; k < cells; k++)
            released[k] += leaf[k];
        for (npy_int64 k = offsets[t - start]; k < offsets[t - start + 1]; k++) {
            const double *noise = noises + (ops[k] / 2) * cells;
            if (ops[k] & 1)
                for (npy_intp c = 0; c < cells; c++)
                    released[c] += noise[c];
            else
                for (npy_intp c = 0; c < cells; c++)
                    released[c] -= noise[c];
        }
    }
    free(leaf);
    free(offsets);
    scratch_free(&sc);
    if (failed)
        return NULL;
    return Py_BuildValue("ni", t, why);
}

/*
 * run_dgs(a, b, theta, tables, t, stop, alpha, scale, capsule, normals, normal_index)
 * → (next t, next normal index, releases, last σ, whether Python must play round `next t`,
 *    the exception that stopped the loop or None)
 *
 * Rounds of DGS-LinUCB (`DGSLinUCB.choose`, `observe`): θ̂ = A⁻¹b, Δ = 1/λ_min(A), the release
 * θ̃ written to `theta`, the UCB arm for θ̃ with width α, then A and b updated.
 * - exact noise (`capsule` the noise generator's, whose lock the caller holds): σ = the
 *   calibration of Δ·scale for Δ (`calibration_inflate`), θ̃ = rint(θ̂/γ)·γ + γ·Z, Z discrete
 *   Gaussian of integer σ/γ, as `snapped_release`;
 * - numpy noise (`capsule` None): σ = scale/λ_min(A), θ̃ = θ̂ + σ·z, z the next row of `normals`
 *   (the call returns when they run out).
 * A round whose release leaves these exact paths (the calibration declines, λ_min is 0 or
 * eigenvalues fail, a coordinate of θ̂ is beyond the snap limit or not finite) is not played:
 * the call returns before it, for the policy's `choose`.
 */
static PyObject *run_dgs(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *b_obj, *theta_obj, *tables_obj, *capsule, *normals_obj;
    Py_ssize_t t, stop, normal_index;
    double alpha, scale;
    Tables tb;
    if (!PyArg_ParseTuple(args, "OOOOnnddOOn:run_dgs", &a_obj, &b_obj, &theta_obj,
                          &tables_obj, &t, &stop, &alpha, &scale, &capsule, &normals_obj,
                          &normal_index)
            || bound("run_dgs") < 0 || tables_from(tables_obj, t, stop, &tb) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, vec[1] = {d};
    double *a = square(a_obj, "a", d, 1);
    double *b = a ? doubles(b_obj, "b", 1, vec, 1) : NULL;
    double *theta = b ? doubles(theta_obj, "theta", 1, vec, 1) : NULL;
    if (theta == NULL)
        return NULL;
    bitgen_t *bitgen = NULL;
    const double *normals = NULL;
    npy_intp n_normals = 0;
    if (bitgen_of(capsule, &bitgen) < 0)
        return NULL;
    if (bitgen == NULL
            && (normals = normals_of(normals_obj, d, normal_index, &n_normals)) == NULL)
        return NULL;
    Use own[4] = {{"a", a_obj, 1}, {"b", b_obj, 1}, {"theta", theta_obj, 1},
                  {"normals", normals != NULL ? normals_obj : NULL, 0}};
    Scratch sc;
    EigenWork eigen;
    if (apart_with(&tb, own, 4) < 0 || scratch_for(d, K, 1, &sc) < 0)
        return NULL;
    if (eigen_work_for(d, &eigen) < 0) {
        scratch_free(&sc);
        return NULL;
    }
    f_int n = (f_int)d, one = 1, info = 0;
    double unit = 1.0, last_sigma = 0.0;
    Py_ssize_t releases = 0;
    int python_round = 0, failed = 0;
    const Py_ssize_t first = t; /* a call plays a round before it stops for a signal */
    for (; t < stop; t++) {
        if ((t & (SIGNAL_EVERY - 1)) == 0
                && ((failed = PyErr_CheckSignals()) < 0 || (t > first && held_signal_pending())))
            break;
        if (bitgen == NULL && normal_index >= n_normals)
            break;
        if ((failed = factorise(a, n, sc.factor)) < 0)
            break;
        double *estimate = sc.sample; /* θ̂, then θ̃ (the UCB scores need no sample) */
        memcpy(estimate, b, sizeof(double) * (size_t)d);
        dpotrs("L", &n, &one, sc.factor, &n, estimate, &n, &info, 1);
        if (info != 0) {
            failed = lapack_failed("Cholesky solve", info);
            break;
        }
        double smallest, sigma;
        if (lambda_min_of(a, n, &smallest, &eigen) != 0 || smallest == 0.0) {
            python_round = 1;
            break;
        }
        if (bitgen != NULL) {
            const double sensitivity = 1.0 / smallest;
            const int made = exact_release(estimate, d, sensitivity * scale, sensitivity,
                                           bitgen, &sigma);
            failed = -(made == RELEASE_OVERFLOW);
            python_round = made == RELEASE_DECLINED;
            if (made != RELEASE_MADE)
                break;
        } else {
            sigma = scale / smallest;
            const double *z = normals + d * normal_index++;
            for (npy_intp i = 0; i < d; i++)
                estimate[i] += sigma * z[i];
        }
        memcpy(theta, estimate, sizeof(double) * (size_t)d);
        last_sigma = sigma;
        releases++;
        npy_intp index;
        double r;
        if ((failed = ucb_pull(&tb, t, sc.factor, theta, alpha, &sc, &index, &r)) < 0)
            break;
        const double *x = tb.arms + (t * K + index) * d;
        dsyr("L", &n, &unit, x, &one, a, &n, 1);
        add_reward(b, x, r, d);
    }
    eigen_work_free(&eigen);
    scratch_free(&sc);
    PyObject *error = failed ? caught_error() : Py_NewRef(Py_None);
    if (error == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("nnndOO", t, normal_index, releases, last_sigma,
                                  python_round ? Py_True : Py_False, error);
    Py_DECREF(error);
    return out;
}

/* ---- checks ----------------------------------------------------------------------------- */

/*
 * scores(action, factor, arms, theta, scale, normal) -> one round's scores, as the loops make
 * them; log_det(factor) -> ln det A from its factor, as the loops compute it (for the tests
 * that hold both to the Python policies' numbers).
 */
static PyObject *scores_of(PyObject *self, PyObject *args)
{
    PyObject *factor_obj, *arms_obj, *theta_obj, *normal_obj;
    int action;
    double scale;
    if (!PyArg_ParseTuple(args, "iOOOdO:scores", &action, &factor_obj, &arms_obj, &theta_obj,
                          &scale, &normal_obj)
            || bound("scores") < 0)
        return NULL;
    if (action != ACTION_TS && action != ACTION_UCB) {
        PyErr_Format(PyExc_ValueError, "action = %d is not allowed; must be 0 (TS) or 1 (UCB)",
                     action);
        return NULL;
    }
    if (!PyArray_Check(arms_obj) || PyArray_NDIM((PyArrayObject *)arms_obj) != 2
            || PyArray_DIM((PyArrayObject *)arms_obj, 0) < 1
            || PyArray_DIM((PyArrayObject *)arms_obj, 0) > K_LIMIT
            || PyArray_DIM((PyArrayObject *)arms_obj, 1) < 1
            || PyArray_DIM((PyArrayObject *)arms_obj, 1) > D_LIMIT) {
        PyErr_Format(PyExc_ValueError, "arms is not allowed; must be a (K, d) array with "
                     "1 <= K <= %d and 1 <= d <= %d", K_LIMIT, D_LIMIT);
        return NULL;
    }
    npy_intp K = PyArray_DIM((PyArrayObject *)arms_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)arms_obj, 1);
    npy_intp kd[2] = {K, d}, vec[1] = {d};
    const double *arms = doubles(arms_obj, "arms", 2, kd, 0);
    const double *theta = arms ? doubles(theta_obj, "theta", 1, vec, 0) : NULL;
    const double *factor = theta ? square(factor_obj, "factor", d, 0) : NULL;
    const double *normal = NULL;
    if (factor == NULL
            || (action == ACTION_TS && (normal = doubles(normal_obj, "normal", 1, vec, 0))
                == NULL))
        return NULL;
    Scratch sc;
    if (scratch_for(d, K, action == ACTION_UCB, &sc) < 0)
        return NULL;
    PyObject *out = NULL;
    if (score(action, (f_int)d, (f_int)K, factor, arms, theta, scale, normal, sc.sample,
              sc.products, sc.w_obj, sc.scores) == 0
            && (out = PyArray_ZEROS(1, &K, NPY_DOUBLE, 0)) != NULL)
        memcpy(PyArray_DATA((PyArrayObject *)out), sc.scores, sizeof(double) * (size_t)K);
    scratch_free(&sc);
    return out;
}

static PyObject *log_det_of(PyObject *self, PyObject *args)
{
    PyObject *factor_obj;
    if (!PyArg_ParseTuple(args, "O:log_det", &factor_obj) || bound("log_det") < 0)
        return NULL;
    if (!PyArray_Check(factor_obj) || PyArray_NDIM((PyArrayObject *)factor_obj) != 2
            || PyArray_DIM((PyArrayObject *)factor_obj, 0) < 1
            || PyArray_DIM((PyArrayObject *)factor_obj, 0) > D_LIMIT) {
        PyErr_Format(PyExc_ValueError, "factor is not allowed; must be d x d with 1 <= d <= %d",
                     D_LIMIT);
        return NULL;
    }
    npy_intp d = PyArray_DIM((PyArrayObject *)factor_obj, 0);
    const double *factor = square(factor_obj, "factor", d, 0);
    if (factor == NULL)
        return NULL;
    double *logs = malloc(sizeof(double) * (size_t)d);
    if (logs == NULL)
        return PyErr_NoMemory();
    double value = log_det(factor, d, logs);
    free(logs);
    return PyFloat_FromDouble(value);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(dpotrf, dpotrs, dtrtrs, dsyr, daxpy, dtrsm, dtrsv, dsyevx, error): scipy's f2py "
     "wrappers of these routines (their `_cpointer` is called) and the exception a failed "
     "factorisation raises; checked on 2 x 2 problems."},
    {"run", run, METH_VARARGS,
     "run(a, b, theta, tables, t, stop, action, scale, normals, normal_index, mean_rule, s, "
     "include, batch_start, batch, horizon) -> "
     "(t, normal_index, added, released): ridge rounds from t to stop or the next release."},
    {"run_switching", run_switching, METH_VARARGS,
     "run_switching(a, s, theta, factor_tau, tables, t, stop, scale, in_episode, "
     "growth_bound, mass, log_det_tau, log_c, lam) -> (t, "
     "in_episode, growth_bound, mass, due): frozen rounds up to stop or the next switch."},
    {"run_episodic", run_episodic, METH_VARARGS,
     "run_episodic(a, a_episode, b_episode, theta, tables, t, stop, scale, in_episode, "
     "log_det_tau, log_c, a_start, b_start, rho, capsule, records) -> (t, in_episode, "
     "log_det_tau, switches, due, error): zCDP-Episodic rounds, with their switches under "
     "exact noise, up to stop or a switch the policy makes."},
    {"run_tree", run_tree, METH_VARARGS,
     "run_tree(released, base, shift, theta, tables, t, stop, scale, grid, limit, noises, "
     "ops, offsets) -> (t, why): JDP-LinUCB rounds up to stop, a V_t to floor (why 1) or a "
     "leaf for the tree's snap (why 2)."},
    {"run_dgs", run_dgs, METH_VARARGS,
     "run_dgs(a, b, theta, tables, t, stop, alpha, scale, capsule, normals, normal_index) -> "
     "(t, normal_index, releases, last_sigma, python_round, error): DGS-LinUCB rounds with "
     "their releases up to stop, the end of the normals, or a round only the policy can "
     "play."},
    {"hold_signals", hold_signals, METH_NOARGS,
     "hold_signals() -> the previous signal mask: block the signals a handler can be set for "
     "(not the faults a process raises on itself)."},
    {"restore_signals", restore_signals, METH_O,
     "restore_signals(previous): put back the mask hold_signals returned."},
    {"scores", scores_of, METH_VARARGS,
     "scores(action, factor, arms, theta, scale, normal): one round's scores of the K arms, "
     "as the loops make them."},
    {"log_det", log_det_of, METH_VARARGS,
     "log_det(factor): ln det A from its lower Cholesky factor, as the loops compute it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ridge", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ridge(void)
{
    import_array();
    return PyModule_Create(&module);
}
