/*
 * Rounds of the GLM baselines on pre-drawn tables, one call for a stretch of rounds:
 * - `rs_glinucb` (`RSGLinUCB.play_table`): rounds that neither warm up (Criterion I) nor
 *   switch (Criterion II): the elimination by θ_w, the optimistic choice with H_prev, and the
 *   update of Z_τ, H_cur and H_cur⁻¹. The call stops before a round that warms up, switches or
 *   finds Z_τ full; the policy plays that round in Python (its fits) and calls again.
 * - `gloc` (`GLOC.play_table`, the authors' code): every round, the optimistic choice and the
 *   online Newton step normalised onto the sphere ‖θ‖ = S.
 * - `ecolog` (`ECOLog.play_table`): the optimistic choice and the two online steps in Ṽ's
 *   eigenbasis, then Ṽ, Ṽ⁻¹ and the cumulative-loss term. The call stops before a round whose
 *   steps must project onto the ellipsoid; the policy plays that round.
 *
 * Every number is the one the policies' `select` and `update` compute, by the same code
 * (tests/policies/test_ridge_rounds.py): products are numpy's float64 matmul loop, called with
 * the dimensions and steps numpy passes (x·θ for 1-d x and θ is its dot); the quadratic forms
 * are numpy's einsum (PyArray_EinsteinSum, what `small_linalg.einsum` calls) on arrays of the
 * same layout; ln det H_cur is the loop of numpy.linalg's `slogdet` gufunc (as
 * `small_linalg.slogdet`), Ṽ's eigen-decomposition that of `eigh_lo` (as `small_linalg.eigh`),
 * logaddexp and expit numpy's and scipy's loops, exp, log, pow and sqrt the C library's (what
 * Python's math module calls); μ̇ is `glm_links.h`'s; the rest are single IEEE operations in the
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
#include "outcome_tables.h"
#include "../newton_api.h"

#define D ((npy_intp)sizeof(double))

static Loop matmul_loop, exp_loop, slogdet_loop, eigh_loop, logaddexp_loop;

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

/* out = x @ v for the C-ordered K×d rows x and a d-vector v. */
static void rows_dot(const double *x, npy_intp K, npy_intp d, const double *v, double *out)
{
    matmul_with(&matmul_loop, x, d * D, D, K, d, v, D, 0, 1, 1, out);
}

/* x · y of two contiguous d-vectors: numpy's 1-d @ 1-d (its dot). */
static double dot(const double *x, const double *y, npy_intp d)
{
    double out;
    rows_dot(x, 1, d, y, &out);
    return out;
}

/* out = M @ v for a C-ordered d×d M, or Mᵀ @ v (`transposed`: the view M.T's steps). */
static void mat_vec(const double *m, int transposed, const double *v, npy_intp d, double *out)
{
    if (!transposed)
        rows_dot(m, d, d, v, out);
    else
        matmul_with(&matmul_loop, m, D, d * D, d, d, v, D, 0, 1, 1, out);
}

/* out = v @ M for a d-vector v and a C-ordered d×d M. */
static void vec_mat(const double *v, const double *m, npy_intp d, double *out)
{
    matmul_with(&matmul_loop, v, d * D, D, 1, d, m, d * D, D, d, 0, out);
}

/* `glm.sherman_morrison` of A⁻¹ after A += w·xxᵀ, and that update of A itself: u = A⁻¹x,
 * q = x·u, A⁻¹ −= (w/(1 + wq))·uuᵀ and A += w·(x xᵀ) (`u`: d scratch). */
static void rank_one(double *a, double *a_inv, const double *x, double w, double *u, npy_intp d)
{
    mat_vec(a_inv, 0, x, d, u);
    double coefficient = w / (1.0 + w * dot(x, u, d));
    for (npy_intp i = 0; i < d; i++)
        for (npy_intp j = 0; j < d; j++) {
            a[i * d + j] = a[i * d + j] + w * (x[i] * x[j]);
            a_inv[i * d + j] = a_inv[i * d + j] - coefficient * (u[i] * u[j]);
        }
}

/* The policy's state and constants that the rounds read and write. */
typedef struct {
    npy_intp d, K, capacity;
    double *v_inv, *h_cur, *h_cur_inv, *h_prev, *prev_inv, *theta_w, *centre, *z_x, *z_r;
    int aliased, running_max, strict, divide_e, link, prev_known;
    double thr_w, width, beta, log_dbl, logdet_prev, max_logdet_cur, max_logdet_prev;
    Loop expit; /* the logistic link's expit, for this call */
} State;

/* Criterion II in the variant's form (log-determinants, or their running maxima): 1 due, 0
 * not. `known` and `current` hold ln det H_cur once computed since its last change; ln det
 * H_prev is computed once, where first needed (`_logdet_h_prev`). */
static int switch_due(State *s, int *known, double *current)
{
    double lhs, rhs;
    if (s->running_max) {
        lhs = s->max_logdet_cur;
        rhs = s->log_dbl + s->max_logdet_prev;
    } else {
        if (!*known) {
            *current = logdet_with(&slogdet_loop, s->h_cur, s->d);
            *known = 1;
        }
        if (!s->aliased && !s->prev_known) {
            s->logdet_prev = logdet_with(&slogdet_loop, s->h_prev, s->d);
            s->prev_known = 1;
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
    double z = dot(x, s->theta_w, d), scratch;
    link_dot(s->link, &s->expit, &exp_loop, &z, &scratch, 1);
    rank_one(s->h_cur, s->h_cur_inv, x, s->divide_e ? z / M_E : z, u, d);
    *known = s->running_max;
    if (s->running_max) {
        *current = logdet_with(&slogdet_loop, s->h_cur, d);
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
    rows_dot(x, K, d, s->theta_w, w->c); /* arms @ θ_w */
    for (npy_intp k = 0; k < K; k++) {
        w->width[k] = s->width * sqrt(m[k]);
        w->low[k] = w->c[k] - w->width[k];
    }
    double top = nan_max(w->low, K);
    if (quad_forms(w->x, s->prev_inv, w->xa, w->q) < 0)
        return -1;
    const double *q = PyArray_DATA(w->q);
    rows_dot(x, K, d, s->centre, w->index);
    for (npy_intp k = 0; k < K; k++) {
        w->index[k] = w->index[k] + s->beta * sqrt(q[k]);
        if (!(w->c[k] + w->width[k] >= top))
            w->index[k] = -INFINITY;
    }
    return first_argmax(w->index, K);
}

/*
 * rs_glinucb(tables, t, stop, v_inv, h_cur, h_cur_inv, h_prev, prev_inv, theta_w, centre,
 *            z_x, z_r, n, aliased, running_max, strict, divide_e, link, expit, thr_w, width,
 *            beta, log_dbl, logdet_prev, max_logdet_cur, max_logdet_prev)
 * → (next t, next n, max_logdet_cur, ln det H_cur or None, ln det H_prev or None)
 */
static PyObject *rs_glinucb(PyObject *self, PyObject *args)
{
    PyObject *tables_o, *v_inv_o, *h_cur_o, *h_cur_inv_o, *h_prev_o, *prev_inv_o, *theta_w_o;
    PyObject *centre_o, *z_x_o, *z_r_o, *expit_o, *logdet_prev_o;
    Py_ssize_t t, stop, n;
    State s;
    if (!PyArg_ParseTuple(args, "OnnOOOOOOOOOnppppiOddddOdd:rs_glinucb", &tables_o, &t, &stop,
                          &v_inv_o, &h_cur_o, &h_cur_inv_o, &h_prev_o, &prev_inv_o, &theta_w_o,
                          &centre_o, &z_x_o, &z_r_o, &n, &s.aliased, &s.running_max, &s.strict,
                          &s.divide_e, &s.link, &expit_o, &s.thr_w, &s.width, &s.beta,
                          &s.log_dbl, &logdet_prev_o, &s.max_logdet_cur, &s.max_logdet_prev))
        return NULL;
    s.prev_known = logdet_prev_o != Py_None;
    s.logdet_prev = s.prev_known ? PyFloat_AsDouble(logdet_prev_o) : 0.0;
    if (s.prev_known && s.logdet_prev == -1.0 && PyErr_Occurred())
        return NULL;
    int prev_given = s.prev_known;
    Tables tb;
    if (tables_from(tables_o, t, stop, &tb) < 0 || link_kind(s.link) < 0
            || (s.link == LOGISTIC && ufunc_loop(expit_o, "expit", 1, 1, &s.expit) < 0))
        return NULL;
    s.K = tb.K;
    s.d = tb.d;
    npy_intp d = s.d, K = s.K, dd[2] = {d, d}, only_d[1] = {d};
    npy_intp any_d[2] = {-1, d}, any1[1] = {-1};
    if ((s.v_inv = doubles(v_inv_o, "v_inv", 2, dd, 0)) == NULL
            || (s.h_cur = doubles(h_cur_o, "h_cur", 2, dd, 1)) == NULL
            || (s.h_cur_inv = doubles(h_cur_inv_o, "h_cur_inv", 2, dd, 1)) == NULL
            || (s.h_prev = doubles(h_prev_o, "h_prev", 2, dd, 0)) == NULL
            || (s.prev_inv = doubles(prev_inv_o, "prev_inv", 2, dd, 0)) == NULL
            || (s.theta_w = doubles(theta_w_o, "theta_w", 1, only_d, 0)) == NULL
            || (s.centre = doubles(centre_o, "centre", 1, only_d, 0)) == NULL
            || (s.z_x = doubles(z_x_o, "z_x", 2, any_d, 1)) == NULL
            || (s.z_r = doubles(z_r_o, "z_r", 1, any1, 1)) == NULL)
        return NULL;
    s.capacity = PyArray_DIM((PyArrayObject *)z_x_o, 0);
    if (PyArray_DIM((PyArrayObject *)z_r_o, 0) != s.capacity || n < 0 || n > s.capacity) {
        PyErr_SetString(PyExc_ValueError, "z_r, n are not allowed; must be z_x's length, "
                        "0 <= n <= it");
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
        memcpy(x, tb.arms + t * K * d, sizeof(double) * (size_t)(K * d));
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
        tb.chosen[t] = a;
        tb.regret[t] = tb.regrets[t * K + a];
        tb.reward[t] = tb.rewards[t * K + a];
        grow(&s, n, tb.arms + (t * K + a) * d, tb.reward[t], w.u, &known, &current);
    }
    free_work(&w);
    if (failed)
        return NULL;
    PyObject *cur = known ? PyFloat_FromDouble(current) : Py_NewRef(Py_None);
    PyObject *prev = s.prev_known && !prev_given ? PyFloat_FromDouble(s.logdet_prev)
                                                 : Py_NewRef(Py_None);
    PyObject *out = cur && prev ? Py_BuildValue("(nndOO)", t, n, s.max_logdet_cur, cur, prev)
                                : NULL;
    Py_XDECREF(cur);
    Py_XDECREF(prev);
    return out;
}

/* ---- ECOLog ------------------------------------------------------------------------ */

/* The constants of an ECOLog run and its state that the rounds read and write. */
typedef struct {
    npy_intp d, K;
    double lam0, S, conf_delta, diam, eta, inside_tol, bound_slack;
    int nan_compat;
    double *V, *V_inv, *theta;
    Py_ssize_t n, clamp_events, violations, first_violation, max_inside;
    double cum;
    Loop expit; /* scipy's expit, for this call */
} Eco;

/* Scratch of one round: the eigen-decomposition of Ṽ and the vectors of the online steps. */
typedef struct {
    double *eigs, *Q, *root, *inv_eigs, *a, *wa, *z0, *w0, *z, *y, *theta, *theta_bar, *diff;
    double *dv, *u, *v_new, *v_inv_new;
} EcoWork;

/* `expit` of one value, as scipy's ufunc on a 0-d array gives it. */
static double expit1(const Eco *e, double z)
{
    double out;
    apply(&e->expit, &z, &out, 1);
    return out;
}

/* `logistic_nll(z, r)` = logaddexp(0, z) − r·z, numpy's logaddexp loop. */
static double nll(double z, double r)
{
    double zero = 0.0, out;
    char *args[3] = {(char *)&zero, (char *)&z, (char *)&out};
    npy_intp one = 1, steps[3] = {0, 0, 0};
    logaddexp_loop.function(args, &one, steps, logaddexp_loop.data);
    return out - r * z;
}

/* `ECOLog._inside_throughout`: no iterate of a step from z₀ can reach ‖z‖²_{Ṽ⁻¹} ≥ limit. */
static int inside_throughout(const Eco *e, double smallest, double G00, double G0a, double Gaa,
                             double r, double limit)
{
    double eta = e->eta;
    if (!(0.0 < eta && eta < 2.0 && smallest > 0.0 && 0.0 <= r && r <= 1.0 && G00 >= 0.0
          && Gaa >= 0.0))
        return 0;
    if (!(fabs(G0a) <= sqrt(G00 * Gaa) * (1.0 + e->bound_slack)))
        return 0;
    double s_max = eta / (1.0 - fabs(1.0 - eta));
    double bound = (sqrt(G00) + s_max * sqrt(Gaa)) * (1.0 + e->bound_slack);
    return bound * bound < limit;
}

/* The probability of the online step's gradient, as its Python loop computes it. */
static double step_prob(double v)
{
    return v > -700.0 ? 1.0 / (1.0 + exp(-v)) : 0.0;
}

/* `ECOLog._online_step` from θ_c into `out`: 0, or 1 where an iterate needs a projection (the
 * policy then makes the round). Da, Gaa: aᵀa and aᵀ(a/e) of the round. */
static int online_step(Eco *e, EcoWork *w, const double *theta_c, double r, Py_ssize_t iters,
                       int bar, double Da, double Gaa, double *out)
{
    npy_intp d = e->d;
    double eta = e->eta, keep = 1.0 - eta, target = e->S * e->S;
    double limit = target + e->inside_tol;
    mat_vec(w->Q, 1, theta_c, d, w->z); /* Q.T @ θ_c */
    for (npy_intp i = 0; i < d; i++) {
        w->z0[i] = w->root[i] * w->z[i];
        w->w0[i] = w->inv_eigs[i] * w->z0[i];
    }
    double D0 = dot(w->z0, w->a, d), G00 = dot(w->z0, w->w0, d), G0a = dot(w->z0, w->wa, d);
    double alpha = 1.0, beta = 0.0, s = 0.0;
    if (inside_throughout(e, w->eigs[0], G00, G0a, Gaa, r, limit)) {
        /* α_j, β_j as `_coefficients` makes them; bases α_j·D0 + β_j·D0 */
        for (Py_ssize_t j = 0; j < iters; j++) {
            double v = (alpha * D0 + beta * D0) + s * Da;
            double prob = step_prob(v);
            s = keep * s - eta * (bar ? 2.0 * prob - 1.0 : prob - r);
            alpha = keep * alpha;
            beta = keep * beta + eta;
        }
        e->max_inside = iters > e->max_inside ? iters : e->max_inside;
    } else {
        for (Py_ssize_t j = 0; j < iters; j++) { /* p = z₀: no projection so far */
            double v = alpha * D0 + beta * D0 + s * Da;
            double prob = step_prob(v);
            double coef = bar ? 2.0 * prob - 1.0 : prob - r;
            alpha = keep * alpha;
            beta = keep * beta + eta;
            s = keep * s - eta * coef;
            double q = alpha * alpha * G00 + beta * beta * G00 + s * s * Gaa
                       + 2.0 * (alpha * beta * G00 + alpha * s * G0a + beta * s * G0a);
            if (q < limit)
                continue;
            for (npy_intp i = 0; i < d; i++) {
                double y = alpha * w->z0[i] + beta * w->z0[i] + s * w->a[i];
                w->y[i] = y * y;
            }
            if (dot(w->y, w->inv_eigs, d) < limit)
                continue;
            return 1;
        }
    }
    for (npy_intp i = 0; i < d; i++)
        w->z[i] = (alpha * w->z0[i] + beta * w->z0[i] + s * w->a[i]) / w->root[i];
    mat_vec(w->Q, 0, w->z, d, out); /* Q @ (z / root) */
    return 0;
}

/* `ECOLog.select` of round t's arms (K×d `arms`): the arm, with `clamped` set where radius²
 * was clamped; -1 with an error. */
static npy_intp eco_select(const Eco *e, Work *work, int *clamped)
{
    npy_intp K = e->K, d = e->d;
    double root = sqrt(e->lam0);
    double gamma = root / 2 + 2 * log(2 * sqrt(1 + (double)e->n / (4 * e->lam0)) / e->conf_delta)
                   / root;
    double rad2 = 2 * e->lam0 * pow(e->S, 2.0) + pow(1 + e->S, 2.0) * gamma + e->cum;
    *clamped = rad2 < 0.0;
    if (*clamped) {
        if (e->nan_compat)
            return 0;
        rad2 = 0.0;
    }
    if (quad_forms(work->x, e->V_inv, work->xa, work->q) < 0)
        return -1;
    const double *x = PyArray_DATA(work->x), *q = PyArray_DATA(work->q);
    rows_dot(x, K, d, e->theta, work->c); /* arms @ θ */
    apply(&e->expit, work->c, work->index, K);
    double radius = sqrt(rad2);
    for (npy_intp k = 0; k < K; k++)
        work->index[k] = work->index[k] + radius * sqrt(q[k]);
    return first_argmax(work->index, K);
}

/* `ECOLog.update` of arm x and reward r into the work's new Ṽ, Ṽ⁻¹ and θ: 0, or 1 where the
 * policy must make the round (an eigenvalue sum not finite, or a projection). */
static int eco_update(Eco *e, EcoWork *w, const double *x, double r, Py_ssize_t n,
                      double *cum_delta, int *violation)
{
    npy_intp d = e->d;
    char *args[3] = {(char *)e->V, (char *)w->eigs, (char *)w->Q};
    npy_intp dimensions[2] = {1, d};
    npy_intp steps[8] = {d * d * D, d * D, d * d * D, d * D, D, D, d * D, D};
    eigh_loop.function(args, dimensions, steps, eigh_loop.data);
    double total = 0.0; /* small_linalg's test: the eigenvalues' sum finite */
    for (npy_intp i = 0; i < d; i++)
        total += w->eigs[i];
    if (!isfinite(total))
        return 1;
    double count = (1 / 0.75) * ceil((9.0 / 4 + e->diam / 8) * log(e->diam / (1.0 / (double)n)));
    if (!(count >= 0.0 && count < 1e9)) /* `ecolog_iterations` below 0 or not a count */
        return 1;
    Py_ssize_t iters = (Py_ssize_t)count;
    mat_vec(w->Q, 1, x, d, w->a); /* (Q.T @ x) / root */
    for (npy_intp i = 0; i < d; i++) {
        w->root[i] = sqrt(w->eigs[i]);
        w->a[i] = w->a[i] / w->root[i];
        w->inv_eigs[i] = 1.0 / w->eigs[i];
        w->wa[i] = w->inv_eigs[i] * w->a[i];
    }
    double Da = dot(w->a, w->a, d), Gaa = dot(w->a, w->wa, d);
    if (online_step(e, w, e->theta, r, iters, 0, Da, Gaa, w->theta)
            || online_step(e, w, w->theta, r, iters, 1, Da, Gaa, w->theta_bar))
        return 1;
    for (npy_intp i = 0; i < d; i++)
        w->diff[i] = w->theta[i] - w->theta_bar[i];
    vec_mat(w->diff, e->V, d, w->dv);
    double spread = dot(w->dv, w->diff, d); /* diff @ Ṽ @ diff */
    double disc = sqrt(0.0 > spread ? 0.0 : spread);
    double z = dot(x, w->theta, d), z_bar = dot(x, w->theta_bar, d);
    double p = expit1(e, z), s = p * (1.0 - p);
    double p_bar = expit1(e, z_bar), s_bar = p_bar * (1.0 - p_bar);
    memcpy(w->v_new, e->V, sizeof(double) * (size_t)(d * d));
    memcpy(w->v_inv_new, e->V_inv, sizeof(double) * (size_t)(d * d));
    rank_one(w->v_new, w->v_inv_new, x, s, w->u, d);
    *violation = s_bar > 2.0 * s;
    *cum_delta = 2 * (1 + e->S) * (nll(z_bar, r) - nll(z, r)) - 0.5 * disc;
    return 0;
}

/*
 * ecolog(tables, t, stop, v, v_inv, theta, expit, lam0, S, conf_delta, diam, eta, inside_tol,
 *        bound_slack, nan_compat, n, cum, clamp_events, violations)
 * → (next t, n, cum, clamp_events, violations, first violation round or -1,
 *    most iterations of a step without projections or -1)
 */
static PyObject *ecolog(PyObject *self, PyObject *args)
{
    PyObject *tables_o, *v_o, *v_inv_o, *theta_o, *expit_o;
    Py_ssize_t t, stop;
    Eco e;
    if (!PyArg_ParseTuple(args, "OnnOOOOdddddddpndnn:ecolog", &tables_o, &t, &stop, &v_o,
                          &v_inv_o, &theta_o, &expit_o, &e.lam0, &e.S, &e.conf_delta, &e.diam,
                          &e.eta, &e.inside_tol, &e.bound_slack, &e.nan_compat, &e.n, &e.cum,
                          &e.clamp_events, &e.violations))
        return NULL;
    Tables tb;
    if (tables_from(tables_o, t, stop, &tb) < 0
            || ufunc_loop(expit_o, "expit", 1, 1, &e.expit) < 0)
        return NULL;
    npy_intp d = tb.d, K = tb.K, dd[2] = {d, d}, only_d[1] = {d};
    e.d = d;
    e.K = K;
    if ((e.V = doubles(v_o, "v", 2, dd, 1)) == NULL
            || (e.V_inv = doubles(v_inv_o, "v_inv", 2, dd, 1)) == NULL
            || (e.theta = doubles(theta_o, "theta", 1, only_d, 1)) == NULL)
        return NULL;
    e.first_violation = -1;
    e.max_inside = -1;
    Work work;
    double *buffer = PyMem_Malloc(sizeof(double) * (size_t)(15 * d + 4 * d * d));
    if (buffer == NULL || make_work(&work, K, d) < 0) {
        PyMem_Free(buffer);
        return buffer == NULL ? PyErr_NoMemory() : NULL;
    }
    EcoWork w;
    double **vectors[] = {&w.eigs, &w.root, &w.inv_eigs, &w.a, &w.wa, &w.z0, &w.w0, &w.z,
                          &w.y, &w.theta, &w.theta_bar, &w.diff, &w.dv, &w.u};
    double *next = buffer;
    for (size_t k = 0; k < sizeof vectors / sizeof *vectors; k++, next += d)
        *vectors[k] = next;
    w.Q = next;
    w.v_new = w.Q + d * d;
    w.v_inv_new = w.v_new + d * d;
    int failed = 0;
    for (; t < stop; t++) {
        memcpy(PyArray_DATA(work.x), tb.arms + t * K * d, sizeof(double) * (size_t)(K * d));
        int clamped, violation;
        npy_intp a = eco_select(&e, &work, &clamped);
        if ((failed = a < 0))
            break;
        const double *x = tb.arms + (t * K + a) * d;
        double r = tb.rewards[t * K + a], cum_delta;
        if (eco_update(&e, &w, x, r, e.n + 1, &cum_delta, &violation))
            break; /* the policy makes this round */
        tb.chosen[t] = a;
        tb.regret[t] = tb.regrets[t * K + a];
        tb.reward[t] = r;
        e.clamp_events += clamped;
        e.n += 1;
        memcpy(e.V, w.v_new, sizeof(double) * (size_t)(d * d));
        memcpy(e.V_inv, w.v_inv_new, sizeof(double) * (size_t)(d * d));
        if (violation && e.violations++ == 0)
            e.first_violation = t;
        e.cum = e.cum + cum_delta;
        memcpy(e.theta, w.theta, sizeof(double) * (size_t)d);
    }
    free_work(&work);
    PyMem_Free(buffer);
    if (failed)
        return NULL;
    return Py_BuildValue("(nndnnnn)", t, e.n, e.cum, e.clamp_events, e.violations,
                         e.first_violation, e.max_inside);
}

/* ---- GLOC --------------------------------------------------------------------------- */

/* μ(z) of the m values z into out, as `Link.mean`: its ufunc's loop `mean`, or z (linear). */
static void link_mean(int link, const Loop *mean, double *z, double *out, npy_intp m)
{
    if (link == LINEAR)
        memcpy(out, z, sizeof(double) * (size_t)m);
    else
        apply(mean, z, out, m);
}

/*
 * gloc(tables, t, stop, v, v_inv, theta, z, link, mean, c_mu, delta, a, tail, S, B)
 * → (next t, B)
 */
static PyObject *gloc(PyObject *self, PyObject *args)
{
    PyObject *tables_o, *v_o, *v_inv_o, *theta_o, *z_o, *mean_o;
    Py_ssize_t t, stop;
    int link;
    double c_mu, delta, a, tail, S, B;
    if (!PyArg_ParseTuple(args, "OnnOOOOiOdddddd:gloc", &tables_o, &t, &stop, &v_o, &v_inv_o,
                          &theta_o, &z_o, &link, &mean_o, &c_mu, &delta, &a, &tail, &S, &B))
        return NULL;
    Tables tb;
    Loop mean = {NULL, NULL};
    if (tables_from(tables_o, t, stop, &tb) < 0 || link_kind(link) < 0
            || (link != LINEAR && ufunc_loop(mean_o, "mean", 1, 1, &mean) < 0))
        return NULL;
    npy_intp d = tb.d, K = tb.K, dd[2] = {d, d}, only_d[1] = {d};
    double *V, *V_inv, *theta, *z;
    if ((V = doubles(v_o, "v", 2, dd, 1)) == NULL
            || (V_inv = doubles(v_inv_o, "v_inv", 2, dd, 1)) == NULL
            || (theta = doubles(theta_o, "theta", 1, only_d, 1)) == NULL
            || (z = doubles(z_o, "z", 1, only_d, 1)) == NULL)
        return NULL;
    Work work;
    double *vec = PyMem_Malloc(sizeof(double) * (size_t)(3 * d));
    if (vec == NULL || make_work(&work, K, d) < 0) {
        PyMem_Free(vec);
        return vec == NULL ? PyErr_NoMemory() : NULL;
    }
    double *u = vec, *g = u + d, *gv = g + d;
    int failed = 0;
    for (; t < stop; t++) {
        /* select: μ(x·θ) + radius·‖x‖_{V⁻¹}, radius² = `gloc_radius_sq(B, …)` */
        memcpy(PyArray_DATA(work.x), tb.arms + t * K * d, sizeof(double) * (size_t)(K * d));
        if ((failed = quad_forms(work.x, V_inv, work.xa, work.q) < 0))
            break;
        double inner = (2.0 / delta) * sqrt(1.0 + 2.0 * B / c_mu + tail);
        double radius = sqrt(1.0 + (4.0 / c_mu) * B + 8.0 * a * log(inner));
        const double *q = PyArray_DATA(work.q);
        rows_dot(PyArray_DATA(work.x), K, d, theta, work.c); /* arms @ θ */
        link_mean(link, &mean, work.c, work.index, K);
        for (npy_intp k = 0; k < K; k++)
            work.index[k] = work.index[k] + radius * sqrt(q[k]);
        npy_intp choice = first_argmax(work.index, K);
        const double *x = tb.arms + (t * K + choice) * d;
        double r = tb.rewards[t * K + choice];
        tb.chosen[t] = choice;
        tb.regret[t] = tb.regrets[t * K + choice];
        tb.reward[t] = r;
        /* update: V and V⁻¹ (w = 1: 1·(x_i x_j) is x_i x_j), B, z and the ONS step */
        rank_one(V, V_inv, x, 1.0, u, d);
        double xtheta = dot(x, theta, d), mu;
        link_mean(link, &mean, &xtheta, &mu, 1);
        for (npy_intp i = 0; i < d; i++)
            g[i] = (mu - r) * x[i];
        vec_mat(g, V_inv, d, gv); /* g @ V⁻¹ */
        B = B + (0.5 / c_mu) * dot(gv, g, d);
        mat_vec(V_inv, 0, g, d, gv); /* V⁻¹ @ g */
        for (npy_intp i = 0; i < d; i++) {
            z[i] = z[i] + xtheta * x[i];
            u[i] = theta[i] - gv[i] / c_mu;
        }
        double norm = sqrt(dot(u, u, d));
        if (norm > 0.0)
            for (npy_intp i = 0; i < d; i++)
                theta[i] = S * u[i] / norm;
    }
    free_work(&work);
    PyMem_Free(vec);
    if (failed)
        return NULL;
    return Py_BuildValue("(nd)", t, B);
}

/* ---- GLM-UCB ------------------------------------------------------------------------ */

static const NewtonApi *newton; /* `_newton`'s fit, imported on first use */

/* The float64 (z, μ, μ̇, b) buffers of a tuple, each with at least `rows` entries. */
static int newton_values(PyObject *tuple, const char *name, npy_intp rows, double **out)
{
    npy_intp any1[1] = {-1};
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4) {
        PyErr_Format(PyExc_TypeError, "%s is not allowed; must be a tuple of four arrays", name);
        return -1;
    }
    for (int k = 0; k < 4; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if ((out[k] = doubles(item, name, 1, any1, 1)) == NULL)
            return -1;
        if (PyArray_DIM((PyArrayObject *)item, 0) < rows) {
            PyErr_Format(PyExc_ValueError, "%s is not allowed; its arrays must hold %zd rows",
                         name, (Py_ssize_t)rows);
            return -1;
        }
    }
    return 0;
}

/*
 * glm_ucb(tables, t, stop, v, v_inv, tilde, theta, last, x, r, n, known, cur, trial, weighted,
 *         resid, link, mean, lam, cap, tol, max_iter, rho, log_bonus, tp)
 * → (next t, n, known, tp, failures, capped, iterations, swapped)
 */
static PyObject *glm_ucb(PyObject *self, PyObject *args)
{
    PyObject *tables_o, *v_o, *v_inv_o, *tilde_o, *theta_o, *last_o, *x_o, *r_o, *cur_o;
    PyObject *trial_o, *weighted_o, *resid_o, *mean_o, *cap_o;
    Py_ssize_t t, stop, n, known_rows, max_iter, tp;
    int link, log_bonus;
    double lam, tol, rho;
    if (!PyArg_ParseTuple(args, "OnnOOOOOOOnnOOOOiOdOdndpn:glm_ucb", &tables_o, &t,
                          &stop, &v_o, &v_inv_o, &tilde_o, &theta_o, &last_o, &x_o, &r_o, &n,
                          &known_rows, &cur_o, &trial_o, &weighted_o, &resid_o, &link, &mean_o,
                          &lam, &cap_o, &tol, &max_iter, &rho, &log_bonus, &tp))
        return NULL;
    if (newton == NULL
            && (newton = (const NewtonApi *)PyCapsule_Import(NEWTON_API_CAPSULE, 0)) == NULL)
        return NULL;
    if (!newton->bound()) {
        PyErr_SetString(PyExc_RuntimeError, "_glm_rounds.glm_ucb before _newton.bind");
        return NULL;
    }
    Tables tb;
    Loop mean = {NULL, NULL};
    if (tables_from(tables_o, t, stop, &tb) < 0 || link_kind(link) < 0 || link == LINEAR
            || ufunc_loop(mean_o, "mean", 1, 1, &mean) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "link = %d is not allowed; must be %d (logistic) "
                         "or %d (probit)", link, LOGISTIC, PROBIT);
        return NULL;
    }
    int fit_link = link == PROBIT ? NEWTON_PROBIT : NEWTON_LOGISTIC;
    int has_cap = cap_o != Py_None;
    double cap = has_cap ? PyFloat_AsDouble(cap_o) : 0.0;
    if (has_cap && cap == -1.0 && PyErr_Occurred())
        return NULL;
    npy_intp d = tb.d, K = tb.K, dd[2] = {d, d}, only_d[1] = {d}, any_d[2] = {-1, d};
    npy_intp any1[1] = {-1}, rows = n + (stop > t ? stop - t : 0);
    double *V, *V_inv, *tilde, *theta, *last, *X, *R, *weighted, *resid, *cur[4], *next[4];
    if ((V = doubles(v_o, "v", 2, dd, 1)) == NULL
            || (V_inv = doubles(v_inv_o, "v_inv", 2, dd, 1)) == NULL
            || (tilde = doubles(tilde_o, "tilde", 1, only_d, 1)) == NULL
            || (theta = doubles(theta_o, "theta", 1, only_d, 1)) == NULL
            || (last = doubles(last_o, "last", 1, only_d, 1)) == NULL
            || (X = doubles(x_o, "x", 2, any_d, 1)) == NULL
            || (R = doubles(r_o, "r", 1, any1, 1)) == NULL
            || (weighted = doubles(weighted_o, "weighted", 2, any_d, 1)) == NULL
            || (resid = doubles(resid_o, "resid", 1, any1, 1)) == NULL
            || newton_values(cur_o, "cur", rows, cur) < 0
            || newton_values(trial_o, "trial", rows, next) < 0)
        return NULL;
    if (n < 0 || known_rows < 0 || known_rows > n || tp < 1
            || PyArray_DIM((PyArrayObject *)x_o, 0) < rows
            || PyArray_DIM((PyArrayObject *)r_o, 0) < rows
            || PyArray_DIM((PyArrayObject *)weighted_o, 0) < rows
            || PyArray_DIM((PyArrayObject *)resid_o, 0) < rows) {
        PyErr_Format(PyExc_ValueError, "n = %zd, known = %zd, tp = %zd are not allowed; must "
                     "be 0 <= known <= n, tp >= 1, the data buffers holding n + %zd rows",
                     n, known_rows, tp, (Py_ssize_t)(rows - n));
        return NULL;
    }
    double *cur0 = cur[0];
    Work work;
    NewtonScratch s; /* the fit's θ is θ̂ itself */
    double *memory = newton_scratch(&s, theta, d);
    if (memory == NULL)
        return NULL;
    if (make_work(&work, K, d) < 0) {
        PyMem_Free(memory);
        return NULL;
    }
    Py_ssize_t failures = 0, capped_fits = 0, iterations = 0;
    int failed = 0;
    for (; t < stop; t++) {
        /* select: μ(x·θ̃) + ρ·s_t·‖x‖_{V⁻¹}, s_t = √ln t (`log_bonus`) or 1 */
        memcpy(PyArray_DATA(work.x), tb.arms + t * K * d, sizeof(double) * (size_t)(K * d));
        if ((failed = quad_forms(work.x, V_inv, work.xa, work.q) < 0))
            break;
        double scale = rho * (log_bonus ? sqrt(log((double)tp)) : 1.0);
        const double *q = PyArray_DATA(work.q);
        rows_dot(PyArray_DATA(work.x), K, d, tilde, work.c); /* arms @ θ̃ */
        link_mean(link, &mean, work.c, work.index, K);
        for (npy_intp k = 0; k < K; k++)
            work.index[k] = work.index[k] + scale * sqrt(q[k]);
        npy_intp choice = first_argmax(work.index, K);
        const double *x = tb.arms + (t * K + choice) * d;
        tb.chosen[t] = choice;
        tb.regret[t] = tb.regrets[t * K + choice];
        tb.reward[t] = tb.rewards[t * K + choice];
        /* update: the row, V and V⁻¹ (w = 1), then the fit warm-started at θ̂ (`solve`) */
        memcpy(X + n * d, x, sizeof(double) * (size_t)d);
        R[n] = tb.reward[t];
        n++;
        rank_one(V, V_inv, x, 1.0, work.u, d);
        int known = known_rows > 0;
        for (npy_intp j = 0; j < d && known; j++)
            known = theta[j] == last[j];
        if (known) { /* the link values of the new rows at the last solution */
            npy_intp m = n - known_rows;
            rows_dot(X + known_rows * d, m, d, last, cur[0] + known_rows);
            newton->link_values(fit_link, m, cur[0] + known_rows, cur[1] + known_rows,
                                cur[2] + known_rows, cur[3] + known_rows);
        }
        int success, capped, swaps;
        Py_ssize_t steps;
        if ((failed = newton->fit(X, n, d, R, cur, next, weighted, resid, fit_link, lam, cap,
                                  has_cap, tol, max_iter, known, &s, &success, &steps, &capped,
                                  &swaps) < 0))
            break;
        failures += !success;
        capped_fits += capped;
        iterations += steps;
        memcpy(last, theta, sizeof(double) * (size_t)d);
        memcpy(tilde, theta, sizeof(double) * (size_t)d);
        known_rows = n;
        tp++;
    }
    free_work(&work);
    PyMem_Free(memory);
    if (failed)
        return NULL;
    return Py_BuildValue("(nnnnnnnO)", t, n, known_rows, tp, failures, capped_fits,
                         iterations, cur[0] != cur0 ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"rs_glinucb", rs_glinucb, METH_VARARGS,
     "rs_glinucb(tables, t, stop, v_inv, h_cur, h_cur_inv, h_prev, prev_inv, theta_w, centre, "
     "z_x, z_r, n, aliased, running_max, strict, divide_e, link, expit, thr_w, width, beta, "
     "log_dbl, logdet_prev, max_logdet_cur, max_logdet_prev) -> (next t, next n, "
     "max_logdet_cur, logdet, logdet_prev): RS-GLinUCB's rounds t, t + 1, … before stop on the "
     "`OutcomeTables`, each recorded in regret, reward and chosen; h_cur, h_cur_inv, z_x and "
     "z_r are updated in place. It stops before a round whose arms warm up (x'V⁻¹x > thr_w), "
     "whose Criterion II is due, or where Z_tau (z_x) is full; logdet is ln det h_cur where "
     "the last round computed it, else None; logdet_prev (None: not known) is ln det h_prev "
     "where the call computed it, else None."},
    {"ecolog", ecolog, METH_VARARGS,
     "ecolog(tables, t, stop, v, v_inv, theta, expit, lam0, S, conf_delta, diam, eta, "
     "inside_tol, bound_slack, nan_compat, n, cum, clamp_events, violations) -> (next t, n, "
     "cum, clamp_events, violations, first violation, most inside iterations): ECOLog's "
     "rounds t, t + 1, … before stop on the `OutcomeTables`, each recorded in regret, reward "
     "and chosen; v, v_inv and theta are updated in place. It stops before a round whose "
     "online steps project or whose eigenvalues do not sum to a finite number (the policy "
     "makes that round); the first round with σ̇(xᵀθ̄) > 2σ̇(xᵀθ) or -1, and the most "
     "iterations of a step without projections (-1: none), which the policy's coefficient "
     "lists must cover."},
    {"glm_ucb", glm_ucb, METH_VARARGS,
     "glm_ucb(tables, t, stop, v, v_inv, tilde, theta, last, x, r, n, known, cur, trial, "
     "weighted, resid, link, mean, lam, cap, tol, max_iter, rho, log_bonus, tp) -> (next t, "
     "n, known, tp, failures, capped, iterations, swapped): GLM-UCB's rounds t … stop − 1 "
     "with `_newton`'s damped Newton fit, link 0 (logistic) or 1 (probit) with its mean "
     "ufunc, on the `OutcomeTables`, each recorded in regret, reward and chosen; v, v_inv, "
     "tilde (θ̃: the fit's θ̂ after each round), theta (θ̂), last (the last solution; its "
     "link values on the first `known` rows are in cur), the "
     "data x, r (n rows) and the buffers are updated in place; tp is the policy's round "
     "count. swapped: cur and trial changed places an odd number of times."},
    {"gloc", gloc, METH_VARARGS,
     "gloc(tables, t, stop, v, v_inv, theta, z, link, mean, c_mu, delta, a, tail, S, B) -> "
     "(next t, B): the rounds t … stop − 1 of the authors' GLOC on the `OutcomeTables` (the "
     "reference code's radius with its constants a and tail, the mean ufunc of link 0 or 1, "
     "the identity for 2), each recorded in regret, reward and chosen; v, v_inv, theta and z "
     "are updated in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_glm_rounds",
    "The GLM baselines' table rounds, on numpy's own kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__glm_rounds(void)
{
    import_array();
    const char *linalg = "numpy.linalg._umath_linalg";
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {"numpy", "exp", 1, 1, &exp_loop},
                              {"numpy", "logaddexp", 2, 1, &logaddexp_loop},
                              {linalg, "slogdet", 1, 2, &slogdet_loop},
                              {linalg, "eigh_lo", 1, 2, &eigh_loop}};
    return find_loops(loops, 5) < 0 ? NULL : PyModule_Create(&module);
}
