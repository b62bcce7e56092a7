/*
 * The round loop of the ridge-regression policies (LinTS, LinUCB, the AdaPrivate family) on an
 * environment whose arms, rewards and regrets are pre-drawn tables: one call plays the rounds
 * up to the next release, which stays in Python (docs/architecture.md, "Table rounds").
 *
 * Every operation is the one the Python policies make, by the same code, so the results are
 * the Python loop's bit for bit (tests/policies/test_ridge_rounds.py):
 * - LAPACK dpotrf, dpotrs, dtrtrs and BLAS dsyr, daxpy, dtrsm are scipy's, bound from the
 *   `_cpointer` of the very f2py wrappers the policies call (`bind`);
 * - xᵀθ for every arm is numpy's float64 matmul loop (the `functions` of `np.matmul`);
 * - ‖L⁻¹x‖² for every arm is numpy's einsum (PyArray_EinsteinSum, what `np.einsum` calls);
 * - the rest are single IEEE operations (compiled with -ffp-contract=off: no fused multiply-add).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

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

static dpotrf_fn *dpotrf;
static dpotrs_fn *dpotrs;
static dtrtrs_fn *dtrtrs;
static dsyr_fn *dsyr;
static daxpy_fn *daxpy;
static dtrsm_fn *dtrsm;
static PyObject *linalg_error;
static PyUFuncGenericFunction matmul_loop;
static void *matmul_data;

enum { ACTION_TS = 0, ACTION_UCB = 1 };
enum { MEAN_EVERY_ROUND = 0, MEAN_KEPT = 1, MEAN_ONCE = 2 };

static void *pointer_of(PyObject *capsule, const char *name)
{
    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_Format(PyExc_TypeError, "%s is not allowed; must be the capsule of scipy's %s",
                     name, name);
        return NULL;
    }
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
}

static int find_matmul(void)
{
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL)
        return -1;
    PyObject *object = PyObject_GetAttrString(numpy, "matmul");
    Py_DECREF(numpy);
    if (object == NULL)
        return -1;
    if (!PyObject_TypeCheck(object, &PyUFunc_Type)) {
        Py_DECREF(object);
        PyErr_SetString(PyExc_RuntimeError, "numpy.matmul is not a numpy ufunc");
        return -1;
    }
    PyUFuncObject *ufunc = (PyUFuncObject *)object;
    for (int k = 0; k < ufunc->ntypes; k++) {
        const char *types = ufunc->types + (size_t)k * (size_t)ufunc->nargs;
        if (ufunc->nin == 2 && ufunc->nout == 1 && types[0] == NPY_DOUBLE
                && types[1] == NPY_DOUBLE && types[2] == NPY_DOUBLE
                && ufunc->functions[k] != NULL) {
            matmul_loop = ufunc->functions[k];
            matmul_data = ufunc->data == NULL ? NULL : ufunc->data[k];
            Py_DECREF(object);
            return 0;
        }
    }
    Py_DECREF(object);
    PyErr_SetString(PyExc_RuntimeError, "numpy.matmul has no float64 loop");
    return -1;
}

static PyObject *bind(PyObject *self, PyObject *args)
{
    PyObject *caps[6], *error;
    if (!PyArg_ParseTuple(args, "OOOOOOO:bind", &caps[0], &caps[1], &caps[2], &caps[3],
                          &caps[4], &caps[5], &error))
        return NULL;
    const char *names[6] = {"dpotrf", "dpotrs", "dtrtrs", "dsyr", "daxpy", "dtrsm"};
    void *found[6];
    for (int k = 0; k < 6; k++)
        if ((found[k] = pointer_of(caps[k], names[k])) == NULL)
            return NULL;
    if (!PyType_Check(error) || !PyType_IsSubtype((PyTypeObject *)error,
                                                  (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "error is not allowed; must be an exception class");
        return NULL;
    }
    if (matmul_loop == NULL && find_matmul() < 0)
        return NULL;
    dpotrf = (dpotrf_fn *)found[0];
    dpotrs = (dpotrs_fn *)found[1];
    dtrtrs = (dtrtrs_fn *)found[2];
    dsyr = (dsyr_fn *)found[3];
    daxpy = (daxpy_fn *)found[4];
    dtrsm = (dtrsm_fn *)found[5];
    Py_XSETREF(linalg_error, Py_NewRef(error));
    Py_RETURN_NONE;
}

/* out = a @ x for the m×n C-ordered a, by numpy's matmul loop with the dimensions and steps
 * numpy passes for a (m, n) matrix times an (n,) vector. */
static void matvec(const double *a, npy_intp m, npy_intp n, const double *x, double *out)
{
    char *args[3] = {(char *)a, (char *)x, (char *)out};
    npy_intp dimensions[4] = {1, m, n, 1};
    npy_intp steps[9] = {0, 0, 0, n * (npy_intp)sizeof(double), sizeof(double),
                         sizeof(double), 0, sizeof(double), 0};
    matmul_loop(args, dimensions, steps, matmul_data);
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

/* The array `object` as float64, C-contiguous, of `ndim` dimensions with the given sizes
 * (-1: any); writable if asked. A borrowed pointer to its data, NULL with an error if not. */
static double *doubles(PyObject *object, const char *name, int ndim, const npy_intp *shape,
                       int writable)
{
    if (!PyArray_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s is not allowed; must be a numpy array", name);
        return NULL;
    }
    PyArrayObject *array = (PyArrayObject *)object;
    int ok = PyArray_TYPE(array) == NPY_DOUBLE && PyArray_NDIM(array) == ndim
             && PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array)
             && (!writable || PyArray_ISWRITEABLE(array));
    for (int k = 0; ok && k < ndim; k++)
        ok = shape[k] < 0 || PyArray_DIM(array, k) == shape[k];
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous%s float64 "
                     "array of %d dimensions with the policy's sizes", name,
                     writable ? " writable" : "", ndim);
        return NULL;
    }
    return (double *)PyArray_DATA(array);
}

static int lapack_failed(const char *what, f_int info)
{
    PyErr_Format(linalg_error, "%s failed (info = %d)", what, (int)info);
    return -1;
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

/* A d×K Fortran-ordered float64 array: dtrsm's workspace and einsum's operand. */
static PyObject *workspace(npy_intp d, npy_intp K)
{
    npy_intp dk[2] = {d, K};
    return PyArray_ZEROS(2, dk, NPY_DOUBLE, 1);
}

/*
 * scores(action, factor, arms, theta, scale, normal) -> the round's scores, as `run` makes
 * them (for the tests that hold them to the Python policies' scores).
 */
static PyObject *scores_of(PyObject *self, PyObject *args)
{
    PyObject *factor_obj, *arms_obj, *theta_obj, *normal_obj;
    int action;
    double scale;
    if (!PyArg_ParseTuple(args, "iOOOdO:scores", &action, &factor_obj, &arms_obj, &theta_obj,
                          &scale, &normal_obj))
        return NULL;
    if (dpotrf == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "scores before bind: the LAPACK routines are unset");
        return NULL;
    }
    if (action != ACTION_TS && action != ACTION_UCB) {
        PyErr_Format(PyExc_ValueError, "action = %d is not allowed; must be 0 (TS) or 1 (UCB)",
                     action);
        return NULL;
    }
    if (!PyArray_Check(arms_obj) || PyArray_NDIM((PyArrayObject *)arms_obj) != 2) {
        PyErr_SetString(PyExc_ValueError, "arms is not allowed; must be a (K, d) array");
        return NULL;
    }
    npy_intp K = PyArray_DIM((PyArrayObject *)arms_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)arms_obj, 1);
    npy_intp kd[2] = {K, d}, vec[1] = {d};
    const double *arms = doubles(arms_obj, "arms", 2, kd, 0);
    const double *theta = arms ? doubles(theta_obj, "theta", 1, vec, 0) : NULL;
    const double *normal = NULL;
    if (theta == NULL || K < 1 || d < 1 || d > 4096)
        return theta == NULL ? NULL
            : PyErr_Format(PyExc_ValueError, "arms is not allowed; must have K >= 1 and "
                           "1 <= d <= 4096");
    if (action == ACTION_TS && (normal = doubles(normal_obj, "normal", 1, vec, 0)) == NULL)
        return NULL;
    if (!PyArray_Check(factor_obj) || PyArray_TYPE((PyArrayObject *)factor_obj) != NPY_DOUBLE
            || PyArray_NDIM((PyArrayObject *)factor_obj) != 2
            || PyArray_DIM((PyArrayObject *)factor_obj, 0) != d
            || PyArray_DIM((PyArrayObject *)factor_obj, 1) != d
            || !PyArray_IS_F_CONTIGUOUS((PyArrayObject *)factor_obj)) {
        PyErr_SetString(PyExc_ValueError, "factor is not allowed; must be a Fortran-ordered "
                        "float64 d×d array");
        return NULL;
    }
    PyObject *out = PyArray_ZEROS(1, &K, NPY_DOUBLE, 0);
    PyObject *w_obj = action == ACTION_UCB ? workspace(d, K) : NULL;
    double *scratch = malloc(sizeof(double) * (size_t)(d + K));
    int failed = out == NULL || (action == ACTION_UCB && w_obj == NULL) || scratch == NULL;
    if (!failed)
        failed = score(action, (f_int)d, (f_int)K,
                       (const double *)PyArray_DATA((PyArrayObject *)factor_obj), arms, theta,
                       scale, normal, scratch, scratch + d, w_obj,
                       (double *)PyArray_DATA((PyArrayObject *)out)) < 0;
    free(scratch);
    Py_XDECREF(w_obj);
    if (failed) {
        Py_XDECREF(out);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    return out;
}

/*
 * run(a, b, theta, arms, rewards, regrets, regret_out, reward_out, t, stop, action, scale,
 *     normals, normal_index, mean_rule, s, include, batch_start, batch, horizon)
 * → (next t, next normal index, rewards added to s, released)
 */
static PyObject *run(PyObject *self, PyObject *args)
{
    PyObject *a_obj, *b_obj, *theta_obj, *arms_obj, *rewards_obj, *regrets_obj;
    PyObject *regret_obj, *reward_obj, *normals_obj, *s_obj, *include_obj;
    Py_ssize_t t, stop, normal_index, batch_start, batch, horizon;
    int action, mean_rule;
    double scale;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnnidOniOOnnn:run", &a_obj, &b_obj, &theta_obj,
                          &arms_obj, &rewards_obj, &regrets_obj, &regret_obj, &reward_obj,
                          &t, &stop, &action, &scale, &normals_obj, &normal_index, &mean_rule,
                          &s_obj, &include_obj, &batch_start, &batch, &horizon))
        return NULL;
    if (dpotrf == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "run before bind: the LAPACK routines are unset");
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
    if (!PyArray_Check(arms_obj) || PyArray_NDIM((PyArrayObject *)arms_obj) != 3) {
        PyErr_SetString(PyExc_ValueError, "arms is not allowed; must be a (T, K, d) array");
        return NULL;
    }
    npy_intp T = PyArray_DIM((PyArrayObject *)arms_obj, 0);
    npy_intp K = PyArray_DIM((PyArrayObject *)arms_obj, 1);
    npy_intp d = PyArray_DIM((PyArrayObject *)arms_obj, 2);
    if (K < 1 || d < 1 || d > 4096 || K > (1 << 20)) {
        PyErr_Format(PyExc_ValueError, "arms of shape (%zd, %zd, %zd) is not allowed; must "
                     "have 1 <= K <= 2^20 and 1 <= d <= 4096", (Py_ssize_t)T, (Py_ssize_t)K,
                     (Py_ssize_t)d);
        return NULL;
    }
    npy_intp vec[1] = {d}, tk[2] = {T, K}, tt[1] = {T}, txt[3] = {T, K, d};
    double *arms = doubles(arms_obj, "arms", 3, txt, 0);
    double *rewards = arms ? doubles(rewards_obj, "rewards", 2, tk, 0) : NULL;
    double *regrets = rewards ? doubles(regrets_obj, "regrets", 2, tk, 0) : NULL;
    double *regret_out = regrets ? doubles(regret_obj, "regret_out", 1, tt, 1) : NULL;
    double *reward_out = regret_out ? doubles(reward_obj, "reward_out", 1, tt, 1) : NULL;
    double *b = reward_out ? doubles(b_obj, "b", 1, vec, 1) : NULL;
    double *theta = b ? doubles(theta_obj, "theta", 1, vec, 1) : NULL;
    if (theta == NULL)
        return NULL;
    /* A: d×d, Fortran order (the lower triangle is the statistic, dsyr updates it) */
    if (!PyArray_Check(a_obj) || PyArray_TYPE((PyArrayObject *)a_obj) != NPY_DOUBLE
            || PyArray_NDIM((PyArrayObject *)a_obj) != 2
            || PyArray_DIM((PyArrayObject *)a_obj, 0) != d
            || PyArray_DIM((PyArrayObject *)a_obj, 1) != d
            || !PyArray_IS_F_CONTIGUOUS((PyArrayObject *)a_obj)
            || !PyArray_ISWRITEABLE((PyArrayObject *)a_obj)) {
        PyErr_SetString(PyExc_ValueError, "a is not allowed; must be a writable Fortran-ordered "
                        "float64 d×d array");
        return NULL;
    }
    double *a = (double *)PyArray_DATA((PyArrayObject *)a_obj);
    double *normals = NULL;
    npy_intp n_normals = 0;
    if (action == ACTION_TS) {
        npy_intp any_d[2] = {-1, d};
        if ((normals = doubles(normals_obj, "normals", 2, any_d, 0)) == NULL)
            return NULL;
        n_normals = PyArray_DIM((PyArrayObject *)normals_obj, 0);
        if (normal_index < 0 || normal_index > n_normals) {
            PyErr_Format(PyExc_ValueError, "normal_index = %zd is not allowed; must be in "
                         "[0, %zd]", normal_index, (Py_ssize_t)n_normals);
            return NULL;
        }
    }
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
    if (t < 0 || stop > T || stop > horizon) {
        PyErr_Format(PyExc_ValueError, "rounds [%zd, %zd) are not allowed; must lie in [0, "
                     "%zd)", t, stop, (Py_ssize_t)(T < horizon ? T : horizon));
        return NULL;
    }

    f_int n = (f_int)d, one = 1, kk = (f_int)K, info = 0;
    double unit = 1.0;
    double *factor = malloc(sizeof(double) * (size_t)(d * d + 2 * d + 2 * K));
    PyObject *w_obj = NULL;
    if (factor == NULL)
        return PyErr_NoMemory();
    double *sample = factor + d * d, *scores = sample + d, *products = scores + K;
    if (action == ACTION_UCB && (w_obj = workspace(d, K)) == NULL) {
        free(factor);
        return NULL;
    }
    Py_ssize_t added = 0;
    int released = 0, failed = 0;
    for (; t < stop; t++) {
        if (action == ACTION_TS && normal_index >= n_normals)
            break;
        const double *arms_t = arms + t * K * d;
        memcpy(factor, a, sizeof(double) * (size_t)(d * d));
        dpotrf("L", &n, factor, &n, &info, 1);
        if (info != 0) {
            failed = lapack_failed("Cholesky", info);
            break;
        }
        if (mean_rule != MEAN_KEPT) {
            memcpy(theta, b, sizeof(double) * (size_t)d);
            dpotrs("L", &n, &one, factor, &n, theta, &n, &info, 1);
            if (info != 0) {
                failed = lapack_failed("Cholesky solve", info);
                break;
            }
            if (mean_rule == MEAN_ONCE)
                mean_rule = MEAN_KEPT;
        }
        const double *normal = action == ACTION_TS ? normals + d * normal_index++ : NULL;
        if (score(action, n, kk, factor, arms_t, theta, scale, normal, sample, products, w_obj,
                  scores) < 0) {
            failed = -1;
            break;
        }
        npy_intp index = argmax(scores, K);
        double r = rewards[t * K + index];
        regret_out[t] = regrets[t * K + index];
        reward_out[t] = r;
        /* clip_reward: min(max(r, 0), 1) as Python's max and min pick */
        double clipped = 0.0 > r ? 0.0 : r;
        clipped = 1.0 < clipped ? 1.0 : clipped;
        const double *x = arms_t + index * d;
        dsyr("L", &n, &unit, x, &one, a, &n, 1);
        if (batch == 0) {
            if (clipped == 1.0)
                for (npy_intp i = 0; i < d; i++)
                    b[i] += x[i];
            else
                for (npy_intp i = 0; i < d; i++)
                    b[i] += clipped * x[i];
        } else {
            Py_ssize_t offset = t - batch_start;
            if (include == NULL || include[offset]) {
                if (clipped != 0.0)
                    daxpy(&n, &clipped, x, &one, s, &one);
                added++;
            }
            if (offset + 1 == batch || t == horizon - 1) {
                released = 1;
                t++;
                break;
            }
        }
    }
    free(factor);
    Py_XDECREF(w_obj);
    if (failed)
        return NULL;
    return Py_BuildValue("nnnO", t, normal_index, added, released ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(dpotrf, dpotrs, dtrtrs, dsyr, daxpy, dtrsm, error): the `_cpointer` capsules of "
     "scipy's f2py routines and the exception a failed factorisation raises."},
    {"scores", scores_of, METH_VARARGS,
     "scores(action, factor, arms, theta, scale, normal): one round's scores of the K arms, "
     "as `run` makes them."},
    {"run", run, METH_VARARGS,
     "run(a, b, theta, arms, rewards, regrets, regret_out, reward_out, t, stop, action, scale, "
     "normals, normal_index, mean_rule, s, include, batch_start, batch, horizon) -> "
     "(t, normal_index, added, released): the rounds from t to stop or the next release."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ridge", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ridge(void)
{
    import_array();
    import_umath();
    return PyModule_Create(&module);
}
