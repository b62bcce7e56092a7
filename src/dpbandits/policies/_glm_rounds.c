/*
 * RS-GLinUCB's rounds on pre-drawn tables (`RSGLinUCB.play_table`), one call for a stretch of
 * rounds that neither warm up (Criterion I) nor switch (Criterion II): the elimination by θ_w,
 * the optimistic choice with H_prev, and the update of Z_τ, H_cur and H_cur⁻¹. The call
 * stops before a round that warms up, switches or finds Z_τ full; the policy plays that round
 * in Python (its fits) and calls again.
 *
 * Every number is the one `RSGLinUCB.select` and `update` compute, by the same code
 * (tests/policies/test_rs_glinucb.py): products are numpy's float64 matmul loop, called with
 * the dimensions and steps numpy passes (x·θ for 1-d x and θ is its dot); the quadratic forms
 * are numpy's einsum (PyArray_EinsteinSum, what `small_linalg.einsum` calls) on arrays of the
 * same layout; ln det H_cur is the loop of numpy.linalg's `slogdet` gufunc (as
 * `small_linalg.slogdet`); μ̇ is `glm_links.h`'s; the rest are single IEEE operations in the
 * order Python evaluates them (compiled with -ffp-contract=off), and the argmax and maximum
 * numpy's (the first largest or first NaN; NaN if one is NaN).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_glm_rounds.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "../numpy_loops.h"
#include "../glm_links.h"

#define D ((npy_intp)sizeof(double))

static Loop matmul_loop, exp_loop, slogdet_loop;
static BoundUfunc expit;

/* A C-contiguous aligned native float64 array of `ndim` dimensions with these sizes (-1: any,
 * at least 1), writable if asked. */
static double *doubles(PyObject *object, const char *name, int ndim, const npy_intp *shape,
                       int writable)
{
    PyArrayObject *a = (PyArrayObject *)object;
    int ok = PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == ndim
             && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)
             && (!writable || PyArray_ISWRITEABLE(a));
    for (int k = 0; ok && k < ndim; k++)
        ok = shape[k] < 0 ? PyArray_DIM(a, k) >= 1 : PyArray_DIM(a, k) == shape[k];
    if (ok)
        return (double *)PyArray_DATA(a);
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous native%s float64 "
                 "array of %d dimensions with the sizes of the other arguments", name,
                 writable ? " writable" : "", ndim);
    return NULL;
}

/* ln det a of a C-ordered d×d matrix as `glm.logdet` gives it: the slogdet loop's ln |det|,
 * −∞ where its sign is not > 0. */
static double logdet(const double *a, npy_intp d)
{
    double sign, value;
    char *args[3] = {(char *)a, (char *)&sign, (char *)&value};
    npy_intp dimensions[2] = {1, d}, steps[5] = {0, 0, 0, d * D, D};
    slogdet_loop.function(args, dimensions, steps, slogdet_loop.data);
    return sign > 0 ? value : -INFINITY;
}

/* `quad_forms(X, A)` = einsum("ij,ij->i", X @ A, X) into `out`, X the (K, d) array `x`, A a
 * C-ordered d×d matrix (`xa`: a (K, d) array for X @ A). */
static int quad_forms(PyArrayObject *x, const double *a, PyArrayObject *xa, PyArrayObject *out)
{
    npy_intp K = PyArray_DIM(x, 0), d = PyArray_DIM(x, 1);
    matmul_with(&matmul_loop, PyArray_DATA(x), d * D, D, K, d, a, d * D, D, d, 0,
                PyArray_DATA(xa));
    PyArrayObject *ops[2] = {xa, x};
    PyArrayObject *done = PyArray_EinsteinSum((char *)"ij,ij->i", 2, ops, NULL, NPY_KEEPORDER,
                                              NPY_SAFE_CASTING, out);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* numpy's float64 argmax: the first largest value, or the first NaN. */
static npy_intp first_argmax(const double *v, npy_intp n)
{
    npy_intp best = 0;
    double top = v[0];
    for (npy_intp i = 1; i < n && !isnan(top); i++)
        if (!(v[i] <= top)) {
            top = v[i];
            best = i;
        }
    return best;
}

/* The policy's state and constants that the rounds read and write. */
typedef struct {
    npy_intp d, K, capacity;
    double *v_inv, *h_cur, *h_cur_inv, *prev_inv, *theta_w, *centre, *z_x, *z_r;
    int aliased, running_max, strict, divide_e, link;
    double thr_w, width, beta, log_dbl, logdet_prev, max_logdet_cur, max_logdet_prev;
} State;

/* Criterion II in the variant's form (log-determinants, or their running maxima): 1 due, 0
 * not. `known` and `current` hold ln det H_cur once computed since its last change. */
static int switch_due(const State *s, int *known, double *current)
{
    double lhs, rhs;
    if (s->running_max) {
        lhs = s->max_logdet_cur;
        rhs = s->log_dbl + s->max_logdet_prev;
    } else {
        if (!*known) {
            *current = logdet(s->h_cur, s->d);
            *known = 1;
        }
        lhs = *current;
        rhs = s->log_dbl + (s->aliased ? *current : s->logdet_prev);
    }
    return s->strict ? lhs > rhs : lhs >= rhs;
}

/* `update` of a round that did not warm up: Z_τ, then H_cur += w·xxᵀ and its inverse by
 * Sherman–Morrison, w = μ̇(x·θ_w)(/e); with running maxima, ln det H_cur (then `known`) and
 * its running maximum. */
static void grow(State *s, npy_intp n, const double *x, double r, double *u, int *known,
                 double *current)
{
    npy_intp d = s->d;
    memcpy(s->z_x + n * d, x, sizeof(double) * (size_t)d);
    s->z_r[n] = r;
    double z, scratch;
    matmul_with(&matmul_loop, x, d * D, D, 1, d, s->theta_w, D, 0, 1, 1, &z); /* x @ θ_w */
    link_dot(s->link, &expit.loop, &exp_loop, &z, &scratch, 1);
    double weight = s->divide_e ? z / M_E : z;
    for (npy_intp i = 0; i < d; i++)
        for (npy_intp j = 0; j < d; j++)
            s->h_cur[i * d + j] = s->h_cur[i * d + j] + weight * (x[i] * x[j]);
    matmul_with(&matmul_loop, s->h_cur_inv, d * D, D, d, d, x, D, 0, 1, 1, u); /* A⁻¹x */
    double q;
    matmul_with(&matmul_loop, x, d * D, D, 1, d, u, D, 0, 1, 1, &q); /* x @ u */
    double coefficient = weight / (1.0 + weight * q);
    for (npy_intp i = 0; i < d; i++)
        for (npy_intp j = 0; j < d; j++)
            s->h_cur_inv[i * d + j] = s->h_cur_inv[i * d + j] - coefficient * (u[i] * u[j]);
    *known = s->running_max;
    if (s->running_max) {
        *current = logdet(s->h_cur, d);
        s->max_logdet_cur = *current > s->max_logdet_cur ? *current : s->max_logdet_cur;
    }
}

/* Work arrays of one call: the round's arms, X @ A and the two quadratic forms as numpy
 * arrays (for einsum), and doubles for the scores. */
typedef struct {
    PyArrayObject *x, *xa, *m, *q;
    double *c, *width, *low, *index, *u;
} Work;

static void free_work(Work *w)
{
    Py_XDECREF((PyObject *)w->x);
    Py_XDECREF((PyObject *)w->xa);
    Py_XDECREF((PyObject *)w->m);
    Py_XDECREF((PyObject *)w->q);
    PyMem_Free(w->c);
}

static int make_work(Work *w, npy_intp K, npy_intp d)
{
    npy_intp shape[2] = {K, d};
    w->x = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    w->xa = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    w->m = (PyArrayObject *)PyArray_SimpleNew(1, &K, NPY_DOUBLE);
    w->q = (PyArrayObject *)PyArray_SimpleNew(1, &K, NPY_DOUBLE);
    w->c = PyMem_Malloc(sizeof(double) * (size_t)(4 * K + d));
    if (w->x == NULL || w->xa == NULL || w->m == NULL || w->q == NULL || w->c == NULL) {
        free_work(w);
        PyErr_NoMemory();
        return -1;
    }
    w->width = w->c + K;
    w->low = w->width + K;
    w->index = w->low + K;
    w->u = w->index + K;
    return 0;
}

/* `select` of a round that neither warms up nor switches, from its quadratic forms m: the
 * elimination by θ_w, then argmax of x·centre + β‖x‖_{H_prev⁻¹} over the kept arms; -1 with
 * an error. */
static npy_intp choose(const State *s, Work *w)
{
    npy_intp K = s->K, d = s->d;
    const double *x = PyArray_DATA(w->x), *m = PyArray_DATA(w->m);
    matmul_with(&matmul_loop, x, d * D, D, K, d, s->theta_w, D, 0, 1, 1, w->c); /* arms @ θ_w */
    for (npy_intp k = 0; k < K; k++) {
        w->width[k] = s->width * sqrt(m[k]);
        w->low[k] = w->c[k] - w->width[k];
    }
    double top = nan_max(w->low, K);
    if (quad_forms(w->x, s->prev_inv, w->xa, w->q) < 0)
        return -1;
    const double *q = PyArray_DATA(w->q);
    matmul_with(&matmul_loop, x, d * D, D, K, d, s->centre, D, 0, 1, 1, w->index);
    for (npy_intp k = 0; k < K; k++) {
        w->index[k] = w->index[k] + s->beta * sqrt(q[k]);
        if (!(w->c[k] + w->width[k] >= top))
            w->index[k] = -INFINITY;
    }
    return first_argmax(w->index, K);
}

/*
 * rs_glinucb(arms, rewards, regrets, regret, reward, chosen, t, stop, v_inv, h_cur, h_cur_inv,
 *            prev_inv, theta_w, centre, z_x, z_r, n, aliased, running_max, strict, divide_e,
 *            link, expit, thr_w, width, beta, log_dbl, logdet_prev, max_logdet_cur,
 *            max_logdet_prev) → (next t, next n, max_logdet_cur, ln det H_cur or None)
 */
static PyObject *rs_glinucb(PyObject *self, PyObject *args)
{
    PyObject *arms_o, *rewards_o, *regrets_o, *regret_o, *reward_o, *chosen_o, *v_inv_o;
    PyObject *h_cur_o, *h_cur_inv_o, *prev_inv_o, *theta_w_o, *centre_o, *z_x_o, *z_r_o;
    PyObject *expit_o;
    Py_ssize_t t, stop, n;
    State s;
    if (!PyArg_ParseTuple(args, "OOOOOOnnOOOOOOOOnppppiOddddddd:rs_glinucb", &arms_o,
                          &rewards_o, &regrets_o, &regret_o, &reward_o, &chosen_o, &t, &stop,
                          &v_inv_o, &h_cur_o, &h_cur_inv_o, &prev_inv_o, &theta_w_o, &centre_o,
                          &z_x_o, &z_r_o, &n, &s.aliased, &s.running_max, &s.strict,
                          &s.divide_e, &s.link, &expit_o, &s.thr_w, &s.width, &s.beta,
                          &s.log_dbl, &s.logdet_prev, &s.max_logdet_cur, &s.max_logdet_prev))
        return NULL;
    npy_intp any3[3] = {-1, -1, -1};
    const double *arms = doubles(arms_o, "arms", 3, any3, 0);
    if (arms == NULL || link_kind(s.link) < 0
            || (s.link == LOGISTIC && bind_ufunc(&expit, expit_o, "expit") < 0))
        return NULL;
    npy_intp T = PyArray_DIM((PyArrayObject *)arms_o, 0);
    s.K = PyArray_DIM((PyArrayObject *)arms_o, 1);
    s.d = PyArray_DIM((PyArrayObject *)arms_o, 2);
    npy_intp d = s.d, K = s.K, tk[2] = {T, K}, dd[2] = {d, d}, only_d[1] = {d};
    npy_intp any_d[2] = {-1, d}, any1[1] = {-1};
    const double *rewards = doubles(rewards_o, "rewards", 2, tk, 0);
    const double *regrets = rewards ? doubles(regrets_o, "regrets", 2, tk, 0) : NULL;
    double *regret = regrets ? doubles(regret_o, "regret", 1, &T, 1) : NULL;
    double *reward = regret ? doubles(reward_o, "reward", 1, &T, 1) : NULL;
    PyArrayObject *chosen_a = (PyArrayObject *)chosen_o;
    if (reward == NULL)
        return NULL;
    if (!PyArray_Check(chosen_o) || PyArray_TYPE(chosen_a) != NPY_INT64
            || PyArray_NDIM(chosen_a) != 1 || PyArray_DIM(chosen_a, 0) != T
            || !PyArray_IS_C_CONTIGUOUS(chosen_a) || !PyArray_ISWRITEABLE(chosen_a)) {
        PyErr_SetString(PyExc_ValueError, "chosen is not allowed; must be a writable "
                        "C-contiguous int64 array of the tables' length");
        return NULL;
    }
    int64_t *chosen = (int64_t *)PyArray_DATA(chosen_a);
    if ((s.v_inv = doubles(v_inv_o, "v_inv", 2, dd, 0)) == NULL
            || (s.h_cur = doubles(h_cur_o, "h_cur", 2, dd, 1)) == NULL
            || (s.h_cur_inv = doubles(h_cur_inv_o, "h_cur_inv", 2, dd, 1)) == NULL
            || (s.prev_inv = doubles(prev_inv_o, "prev_inv", 2, dd, 0)) == NULL
            || (s.theta_w = doubles(theta_w_o, "theta_w", 1, only_d, 0)) == NULL
            || (s.centre = doubles(centre_o, "centre", 1, only_d, 0)) == NULL
            || (s.z_x = doubles(z_x_o, "z_x", 2, any_d, 1)) == NULL
            || (s.z_r = doubles(z_r_o, "z_r", 1, any1, 1)) == NULL)
        return NULL;
    s.capacity = PyArray_DIM((PyArrayObject *)z_x_o, 0);
    if (PyArray_DIM((PyArrayObject *)z_r_o, 0) != s.capacity || n < 0 || n > s.capacity
            || t < 0 || stop > T || t > stop) {
        PyErr_SetString(PyExc_ValueError, "z_r, n, t, stop are not allowed; must be z_x's "
                        "length, 0 <= n <= it, 0 <= t <= stop <= the tables' length");
        return NULL;
    }
    Work w;
    if (make_work(&w, K, d) < 0)
        return NULL;
    double *x = PyArray_DATA(w.x);
    const double *m = PyArray_DATA(w.m);
    int known = 0, failed = 0;
    double current = 0.0;
    for (; t < stop && n < s.capacity; t++, n++) {
        memcpy(x, arms + t * K * d, sizeof(double) * (size_t)(K * d));
        if ((failed = quad_forms(w.x, s.v_inv, w.xa, w.m) < 0))
            break;
        int warm = 0;
        for (npy_intp k = 0; k < K; k++)
            warm = warm || m[k] > s.thr_w;
        if (warm || switch_due(&s, &known, &current))
            break;
        npy_intp a = choose(&s, &w);
        if ((failed = a < 0))
            break;
        chosen[t] = a;
        regret[t] = regrets[t * K + a];
        reward[t] = rewards[t * K + a];
        grow(&s, n, arms + (t * K + a) * d, reward[t], w.u, &known, &current);
    }
    free_work(&w);
    if (failed)
        return NULL;
    if (!known)
        return Py_BuildValue("(nndO)", t, n, s.max_logdet_cur, Py_None);
    return Py_BuildValue("(nndd)", t, n, s.max_logdet_cur, current);
}

static PyMethodDef methods[] = {
    {"rs_glinucb", rs_glinucb, METH_VARARGS,
     "rs_glinucb(arms, rewards, regrets, regret, reward, chosen, t, stop, v_inv, h_cur, "
     "h_cur_inv, prev_inv, theta_w, centre, z_x, z_r, n, aliased, running_max, strict, "
     "divide_e, link, expit, thr_w, width, beta, log_dbl, logdet_prev, max_logdet_cur, "
     "max_logdet_prev) -> (next t, next n, max_logdet_cur, logdet): RS-GLinUCB's rounds t, "
     "t + 1, … "
     "before stop on the tables, each recorded in regret, reward and chosen; h_cur, h_cur_inv, "
     "z_x and z_r are updated in place. It stops before a round whose arms warm up (x'V⁻¹x > "
     "thr_w), whose Criterion II is due, or where Z_tau (z_x) is full; logdet is ln det "
     "h_cur where the last round computed it, else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_glm_rounds",
    "RS-GLinUCB's table rounds, on numpy's own kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__glm_rounds(void)
{
    import_array();
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {"numpy", "exp", 1, 1, &exp_loop},
                              {"numpy.linalg._umath_linalg", "slogdet", 1, 2, &slogdet_loop}};
    return find_loops(loops, 3) < 0 ? NULL : PyModule_Create(&module);
}
