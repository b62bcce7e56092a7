/*
 * The damped Newton fit of the GLM maximum-likelihood estimate (`glm.numpy_newton`, docs/glm.md,
 * "MLE solvers") in one call, for the probit and logistic links: Armijo backtracking on the
 * canonical loss F(θ) = Σ b(xᵢᵀθ) − rᵢxᵢᵀθ + λ‖θ‖², the norm cap ‖θ‖ ≤ cap by the model's
 * minimiser over the ball, stop on ‖∇F‖_∞ ≤ tol·max(1, n) or the capped problem's KKT
 * conditions. GLM-UCB and RS-GLinUCB refit every round, so a numpy call per operation cost
 * more than the arithmetic on their few thousand rows.
 *
 * Every number is the one the numpy formulation computes, by the same code, so θ and the
 * link values left in the buffers are its bits (tests/test_glm.py):
 * - Xθ, Xᵀ(μ − r), (X·μ̇)ᵀX, rᵀz, θᵀθ and gᵀp are numpy's float64 matmul loop, called with the
 *   dimensions and steps numpy passes for these arrays; Σ b(zᵢ) is numpy's add loop as its
 *   reduction calls it (from 0.0);
 * - Φ and the logistic sigmoid are the float64 loops of scipy's `ndtr` and `expit` ufuncs,
 *   exp and ln(1 + eᶻ) numpy's `exp` and `logaddexp` loops;
 * - the Newton step is the loop of numpy.linalg's `solve1` gufunc (LAPACK's gesv, as
 *   `small_linalg.solve`), and `numpy.linalg.solve` itself where that is not finite (which
 *   raises on a singular Hessian: the fit then stops, as the numpy one does);
 * - the rare step onto the cap's sphere calls the Python minimiser bound with `bind`;
 * - the rest are single IEEE operations in the order Python evaluates them (compiled with
 *   -ffp-contract=off: no fused multiply-add).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_newton.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "numpy_loops.h"
#include "newton_api.h"

#define D ((npy_intp)sizeof(double))
#define LINE_SEARCH_TRIALS 31 /* the full step, then up to 30 halvings */

enum { PROBIT = NEWTON_PROBIT, LOGISTIC = NEWTON_LOGISTIC };

static Loop matmul_loop, add_loop, exp_loop, logaddexp_loop, solve1_loop, ndtr_loop, expit_loop;
static PyObject *numpy_solve, *linalg_error, *ball_minimiser; /* bound by `bind` */
static double inv_sqrt_2pi;

/* out = a @ x for the m×n a with steps (a_m, a_n) and the contiguous vector x. */
static void matvec(const double *a, npy_intp a_m, npy_intp a_n, npy_intp m, npy_intp n,
                   const double *x, double *out)
{
    matmul_with(&matmul_loop, a, a_m, a_n, m, n, x, D, 0, 1, 1, out);
}

/* `float(x @ y)` of two contiguous vectors of length n. */
static double dot(const double *x, const double *y, npy_intp n)
{
    double out;
    matvec(x, n * D, D, 1, n, y, &out);
    return out;
}

/* (μ, μ̇, b) at the n values z, as `glm._link_values_into`. */
static void link_values(int link, npy_intp n, const double *z, double *mu, double *mudot,
                        double *pot)
{
    if (link == PROBIT) {
        apply(&ndtr_loop, (double *)z, mu, n);
        for (npy_intp i = 0; i < n; i++)
            pot[i] = (z[i] * z[i]) * -0.5;
        apply(&exp_loop, pot, mudot, n);
        for (npy_intp i = 0; i < n; i++) {
            mudot[i] *= inv_sqrt_2pi;
            pot[i] = z[i] * mu[i] + mudot[i];
        }
        return;
    }
    apply(&expit_loop, (double *)z, mu, n);
    for (npy_intp i = 0; i < n; i++)
        mudot[i] = mu[i] * (1.0 - mu[i]);
    double zero = 0.0;
    char *args[3] = {(char *)&zero, (char *)z, (char *)pot};
    npy_intp steps[3] = {0, D, D};
    logaddexp_loop.function(args, &n, steps, logaddexp_loop.data);
}

/* F = float(b.sum() − r @ z) + λ·float(θ @ θ). */
static double loss(const double *pot, const double *r, const double *z, npy_intp n,
                   double lam, const double *theta, npy_intp d)
{
    return (add_reduce(&add_loop, pot, n) - dot(r, z, n)) + lam * dot(theta, theta, d);
}

/* numpy's max of |v|: the largest, or NaN if one is NaN. */
static double abs_max(const double *v, npy_intp n, double *scratch)
{
    for (npy_intp i = 0; i < n; i++)
        scratch[i] = fabs(v[i]);
    return nan_max(scratch, n);
}

/* `glm._kkt_on_sphere`: 1, 0, or -1 with Python's ZeroDivisionError (`tangential` scratch). */
static int kkt_on_sphere(const double *theta, const double *g, npy_intp d, double threshold,
                         double cap, double *tangential)
{
    double norm2 = dot(theta, theta, d);
    double floor = cap * (1.0 - 1e-10);
    if (norm2 < floor * floor)
        return 0;
    if (norm2 == 0.0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
        return -1;
    }
    double radial = dot(g, theta, d) / norm2;
    for (npy_intp j = 0; j < d; j++)
        tangential[j] = g[j] - radial * theta[j];
    return radial <= 0.0 && abs_max(tangential, d, tangential) <= threshold;
}

/* A new float64 array of the given shape holding a copy of `data`. */
static PyObject *array_of(int ndim, npy_intp *shape, const double *data)
{
    PyObject *out = PyArray_SimpleNew(ndim, shape, NPY_DOUBLE);
    if (out != NULL) {
        npy_intp size = PyArray_SIZE((PyArrayObject *)out);
        memcpy(PyArray_DATA((PyArrayObject *)out), data, (size_t)(size * D));
    }
    return out;
}

/* A contiguous float64 vector result of a Python call with `d` entries into `out`, then
 * released; -1 with an error if the call failed or gave something else. */
static int take_vector(PyObject *result, npy_intp d, double *out, const char *what)
{
    if (result == NULL)
        return -1;
    PyArrayObject *a = (PyArrayObject *)result;
    int ok = PyArray_Check(result) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 1
             && PyArray_DIM(a, 0) == d && PyArray_IS_C_CONTIGUOUS(a);
    if (ok)
        memcpy(out, PyArray_DATA(a), (size_t)(d * D));
    else
        PyErr_Format(PyExc_TypeError, "%s did not return a float64 vector of length %zd", what,
                     (Py_ssize_t)d);
    Py_DECREF(result);
    return ok ? 0 : -1;
}

/* `small_linalg.solve(H, g)` into out: 0, 1 if numpy.linalg.solve raised LinAlgError (the
 * error cleared), -1 with another error. */
static int solve(const double *h, const double *g, npy_intp d, double *out)
{
    char *args[3] = {(char *)h, (char *)g, (char *)out};
    npy_intp dimensions[2] = {1, d};
    npy_intp steps[7] = {0, 0, 0, d * D, D, D, D};
    solve1_loop.function(args, dimensions, steps, solve1_loop.data);
    if (all_finite(out, d))
        return 0;
    npy_intp square[2] = {d, d};
    PyObject *h_arr = array_of(2, square, h), *g_arr = array_of(1, &d, g);
    PyObject *result = h_arr == NULL || g_arr == NULL
                           ? NULL
                           : PyObject_CallFunctionObjArgs(numpy_solve, h_arr, g_arr, NULL);
    Py_XDECREF(h_arr);
    Py_XDECREF(g_arr);
    if (result == NULL && PyErr_ExceptionMatches(linalg_error)) {
        PyErr_Clear();
        return 1;
    }
    return take_vector(result, d, out, "numpy.linalg.solve");
}

/* p = `_ball_model_minimiser(H, H @ θ − g, cap) − θ` (`b` d scratch). */
static int ball_step(const double *h, const double *theta, const double *g, npy_intp d,
                     double cap, double *b, double *p)
{
    matvec(h, d * D, D, d, d, theta, b);
    for (npy_intp j = 0; j < d; j++)
        b[j] -= g[j];
    npy_intp square[2] = {d, d};
    PyObject *h_arr = array_of(2, square, h), *b_arr = array_of(1, &d, b);
    PyObject *cap_obj = PyFloat_FromDouble(cap);
    PyObject *result = h_arr == NULL || b_arr == NULL || cap_obj == NULL
                           ? NULL
                           : PyObject_CallFunctionObjArgs(ball_minimiser, h_arr, b_arr,
                                                          cap_obj, NULL);
    Py_XDECREF(h_arr);
    Py_XDECREF(b_arr);
    Py_XDECREF(cap_obj);
    if (take_vector(result, d, p, "the ball minimiser") < 0)
        return -1;
    for (npy_intp j = 0; j < d; j++)
        p[j] -= theta[j];
    return 0;
}

/* A C-ordered float64 array of `ndim` dimensions (writeable if `scratch`) with at least
 * `rows` rows (and `cols` columns when 2-D), or NULL with a TypeError naming it. */
static double *buffer(PyObject *object, const char *name, int ndim, npy_intp rows,
                      npy_intp cols, int scratch)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == ndim
            && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)
            && (!scratch || PyArray_ISWRITEABLE(a)) && PyArray_DIM(a, 0) >= rows
            && (ndim == 1 || PyArray_DIM(a, 1) == cols))
        return (double *)PyArray_DATA(a);
    PyErr_Format(PyExc_TypeError,
                 "%s must be a%s C-ordered float64 array of %d dimension(s) with at least %zd "
                 "rows%s", name, scratch ? " writeable" : "", ndim, (Py_ssize_t)rows,
                 ndim == 2 ? " of the data's width" : "");
    return NULL;
}

/* The four (z, μ, μ̇, b) buffers of a tuple, each with at least n entries. */
static int values_of(PyObject *tuple, const char *name, npy_intp n, double **out)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of four arrays (z, mu, mudot, b)",
                     name);
        return -1;
    }
    for (int k = 0; k < 4; k++)
        if ((out[k] = buffer(PyTuple_GET_ITEM(tuple, k), name, 1, n, 0, 1)) == NULL)
            return -1;
    return 0;
}

/* The fit (`glm.numpy_newton` from its cap check on); `cur`/`next` the value buffers at the
 * iterate and at the trial point, swapped on every accepted step. Returns 0 or -1 with an
 * error; *success, *steps, *capped and *swaps as the numpy fit ends. */
static int fit(const double *x, npy_intp n, npy_intp d, const double *r, double **cur,
               double **next, double *weighted, double *resid, int link, double lam,
               double cap, int has_cap, double tol, Py_ssize_t max_iter, int known,
               NewtonScratch *s, int *success, Py_ssize_t *steps, int *capped, int *swaps)
{
    double *theta = s->theta, *g = s->g, *p = s->p, *h = s->h;
    *success = 0;
    *steps = 0;
    *capped = 0;
    *swaps = 0;
    if (has_cap) {
        double norm = sqrt(dot(theta, theta, d));
        if (norm > cap) {
            double factor = cap / norm;
            for (npy_intp j = 0; j < d; j++)
                theta[j] *= factor;
            known = 0;
        }
    }
    if (!known) {
        matvec(x, d * D, D, n, d, theta, cur[0]);
        link_values(link, n, cur[0], cur[1], cur[2], cur[3]);
    }
    double threshold = tol * (n > 1 ? (double)n : 1.0);
    double two_lam = 2.0 * lam;
    double F = loss(cur[3], r, cur[0], n, lam, theta, d);
    for (;;) {
        const double *mu = cur[1], *mudot = cur[2];
        for (npy_intp i = 0; i < n; i++)
            resid[i] = mu[i] - r[i];
        matvec(x, D, d * D, d, n, resid, g); /* Xᵀ(μ − r): X.T's steps */
        for (npy_intp j = 0; j < d; j++)
            g[j] += two_lam * theta[j];
        if (abs_max(g, d, s->work) <= threshold) {
            *success = 1;
            break;
        }
        if (*capped) {
            int kkt = kkt_on_sphere(theta, g, d, threshold, cap, s->work);
            if (kkt < 0)
                return -1;
            if (kkt) {
                *success = 1;
                break;
            }
        }
        if (*steps == max_iter)
            break;
        for (npy_intp i = 0; i < n; i++)
            for (npy_intp j = 0; j < d; j++)
                weighted[i * d + j] = x[i * d + j] * mudot[i];
        /* weighted.T @ X: (d, n) with steps (D, d·D) times (n, d) C-ordered */
        matmul_with(&matmul_loop, weighted, D, d * D, d, n, x, d * D, D, d, 0, h);
        for (npy_intp a = 0; a < d; a++)
            for (npy_intp b = 0; b < d; b++)
                h[a * d + b] += two_lam * (a == b ? 1.0 : 0.0); /* H += 2λ·I, as numpy */
        int solved = solve(h, g, d, p);
        if (solved < 0)
            return -1;
        if (solved > 0)
            break;
        for (npy_intp j = 0; j < d; j++)
            p[j] = -p[j];
        if (has_cap) {
            for (npy_intp j = 0; j < d; j++)
                s->trial[j] = theta[j] + p[j];
            if (dot(s->trial, s->trial, d) > cap * cap) {
                if (ball_step(h, theta, g, d, cap, s->work, p) < 0)
                    return -1;
                *capped = 1;
            }
        }
        double slope = dot(g, p, d);
        if (!(slope < 0.0))
            break;
        *steps += 1;
        int rounding = -slope <= 1e-12 * (1.0 + fabs(F));
        double step = 1.0, F_new = 0.0;
        int accepted = 0;
        for (int k = 0; k < LINE_SEARCH_TRIALS; k++) {
            for (npy_intp j = 0; j < d; j++)
                s->trial[j] = theta[j] + step * p[j];
            matvec(x, d * D, D, n, d, s->trial, next[0]);
            link_values(link, n, next[0], next[1], next[2], next[3]);
            F_new = loss(next[3], r, next[0], n, lam, s->trial, d);
            if (rounding || F_new <= F + 1e-4 * step * slope) {
                accepted = 1;
                break;
            }
            step *= 0.5;
        }
        if (!accepted)
            break;
        int same = 1;
        for (npy_intp j = 0; j < d; j++)
            same = same && s->trial[j] == theta[j];
        if (same)
            break;
        memcpy(theta, s->trial, (size_t)(d * D));
        F = F_new;
        for (int k = 0; k < 4; k++) {
            double *kept = cur[k];
            cur[k] = next[k];
            next[k] = kept;
        }
        *swaps ^= 1;
    }
    return 0;
}

static PyObject *newton(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *r_obj, *theta_obj, *cur_obj, *next_obj, *weighted_obj, *resid_obj,
        *cap_obj;
    int link, known;
    double lam, tol;
    Py_ssize_t max_iter;
    if (!PyArg_ParseTuple(args, "OOOO!O!OOidOdnp", &x_obj, &r_obj, &theta_obj, &PyTuple_Type,
                          &cur_obj, &PyTuple_Type, &next_obj, &weighted_obj, &resid_obj, &link,
                          &lam, &cap_obj, &tol, &max_iter, &known))
        return NULL;
    if (numpy_solve == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_newton.newton before bind");
        return NULL;
    }
    if (link != PROBIT && link != LOGISTIC) {
        PyErr_Format(PyExc_ValueError, "link = %d is not allowed; allowed: %d (probit), "
                     "%d (logistic)", link, PROBIT, LOGISTIC);
        return NULL;
    }
    PyArrayObject *xa = (PyArrayObject *)x_obj;
    if (!PyArray_Check(x_obj) || PyArray_NDIM(xa) != 2 || PyArray_DIM(xa, 0) < 1) {
        PyErr_SetString(PyExc_TypeError, "X must be a float64 array of at least one row");
        return NULL;
    }
    npy_intp n = PyArray_DIM(xa, 0), d = PyArray_DIM(xa, 1);
    if (d < 1) {
        PyErr_SetString(PyExc_ValueError, "X must have at least one column");
        return NULL;
    }
    double *x = buffer(x_obj, "X", 2, n, d, 0);
    double *r = x == NULL ? NULL : buffer(r_obj, "r", 1, n, 0, 0);
    if (r != NULL && PyArray_DIM((PyArrayObject *)r_obj, 0) != n) {
        PyErr_Format(PyExc_ValueError, "r must have %zd entries, one per row of X",
                     (Py_ssize_t)n);
        return NULL;
    }
    double *theta0 = r == NULL ? NULL : buffer(theta_obj, "theta", 1, d, 0, 0);
    double *weighted = theta0 == NULL ? NULL : buffer(weighted_obj, "weighted", 2, n, d, 1);
    double *resid = weighted == NULL ? NULL : buffer(resid_obj, "resid", 1, n, 0, 1);
    double *cur[4], *next[4];
    if (resid == NULL || values_of(cur_obj, "cur", n, cur) < 0
            || values_of(next_obj, "trial", n, next) < 0)
        return NULL;
    if (PyArray_DIM((PyArrayObject *)theta_obj, 0) != d) {
        PyErr_Format(PyExc_ValueError, "theta must have %zd entries", (Py_ssize_t)d);
        return NULL;
    }
    int has_cap = cap_obj != Py_None;
    double cap = has_cap ? PyFloat_AsDouble(cap_obj) : 0.0;
    if (has_cap && cap == -1.0 && PyErr_Occurred())
        return NULL;
    NewtonScratch s;
    double *memory = newton_scratch(&s, NULL, d);
    if (memory == NULL)
        return NULL;
    memcpy(s.theta, theta0, (size_t)(d * D));
    int success, capped, swaps;
    Py_ssize_t steps;
    int failed = fit(x, n, d, r, cur, next, weighted, resid, link, lam, cap, has_cap, tol,
                     max_iter, known, &s, &success, &steps, &capped, &swaps);
    PyObject *out = NULL;
    if (!failed) {
        PyObject *theta = array_of(1, &d, s.theta);
        if (theta != NULL)
            out = Py_BuildValue("(NOnOO)", theta, success ? Py_True : Py_False, steps,
                                capped ? Py_True : Py_False, swaps ? Py_True : Py_False);
    }
    PyMem_Free(memory);
    return out;
}

static PyObject *loss_of(PyObject *self, PyObject *args)
{
    PyObject *pot_obj, *r_obj, *z_obj, *theta_obj;
    double lam;
    if (!PyArg_ParseTuple(args, "OOOdO", &pot_obj, &r_obj, &z_obj, &lam, &theta_obj))
        return NULL;
    double *pot = buffer(pot_obj, "b", 1, 1, 0, 0);
    npy_intp n = pot == NULL ? 0 : PyArray_DIM((PyArrayObject *)pot_obj, 0);
    double *r = pot == NULL ? NULL : buffer(r_obj, "r", 1, n, 0, 0);
    double *z = r == NULL ? NULL : buffer(z_obj, "z", 1, n, 0, 0);
    double *theta = z == NULL ? NULL : buffer(theta_obj, "theta", 1, 1, 0, 0);
    if (theta == NULL)
        return NULL;
    return PyFloat_FromDouble(loss(pot, r, z, n, lam, theta,
                                   PyArray_DIM((PyArrayObject *)theta_obj, 0)));
}

static int bound(void)
{
    return numpy_solve != NULL;
}

static const NewtonApi api = {bound, link_values, fit};

static PyObject *bind(PyObject *self, PyObject *args)
{
    PyObject *special, *solve_fn, *error, *ball;
    if (!PyArg_ParseTuple(args, "OOOO", &special, &solve_fn, &error, &ball))
        return NULL;
    if (find_loop(special, "ndtr", 1, 1, &ndtr_loop) < 0
            || find_loop(special, "expit", 1, 1, &expit_loop) < 0)
        return NULL;
    inv_sqrt_2pi = 1.0 / sqrt(2.0 * M_PI);
    Py_XSETREF(numpy_solve, Py_NewRef(solve_fn));
    Py_XSETREF(linalg_error, Py_NewRef(error));
    Py_XSETREF(ball_minimiser, Py_NewRef(ball));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(special, solve, LinAlgError, ball_minimiser): the module of scipy's special "
     "ufuncs (its `ndtr` and `expit` loops are taken), numpy.linalg.solve and its error, and "
     "`glm._ball_model_minimiser`."},
    {"newton", newton, METH_VARARGS,
     "newton(X, r, theta, cur, trial, weighted, resid, link, lam, cap, tol, max_iter, known) "
     "-> (theta, success, steps, capped, swapped): `glm.numpy_newton` on the n rows of the "
     "C-ordered X (n, d), link 1 (probit) or 2 (logistic), cap None for no cap; cur and trial "
     "are (z, mu, mudot, b) buffers (known: cur holds them at theta), weighted (>= n, d) and "
     "resid scratch. swapped: the values at the returned theta are in `trial`'s buffers."},
    {"loss", loss_of, METH_VARARGS,
     "loss(b, r, z, lam, theta) -> float: the fit's F = float(b.sum() - r @ z) + "
     "lam * float(theta @ theta), as it computes it (vectors: contiguous float64, none empty; "
     "r and z at least as long as b)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_newton",
    "The damped Newton GLM fit in one call, on numpy's and scipy's own kernels.", -1, methods,
};

PyMODINIT_FUNC PyInit__newton(void)
{
    import_array();
    const char *linalg = "numpy.linalg._umath_linalg";
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop},
                              {"numpy", "add", 2, 1, &add_loop},
                              {"numpy", "exp", 1, 1, &exp_loop},
                              {"numpy", "logaddexp", 2, 1, &logaddexp_loop},
                              {linalg, "solve1", 2, 1, &solve1_loop}};
    if (find_loops(loops, 5) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    PyObject *capsule = m == NULL ? NULL : PyCapsule_New((void *)&api, NEWTON_API_CAPSULE, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
