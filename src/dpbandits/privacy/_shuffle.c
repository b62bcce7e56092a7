/*
 * The per-user passes of shuffle vector summation (`vector_sum.py`) and of P_GD's gradient
 * clipping (`shuffle_gd.py`) in one call each, on the users' n × D vectors, and P_GD's
 * iterations in one call (`gd_steps`):
 * - `clip_rows`: each row scaled by min(1, L/max(‖v‖, 1e-300)), as `clipped_gradients_rows`;
 * - `max_row_norm`: max ‖v‖ over the rows, as `_check_vectors` finds it (NaN if one is NaN);
 * - `level_sums`: Σ_u ȳ_u per coordinate, ȳ = ⌊w g/L⌋ + [U < frac], w = v + L clipped to
 *   [0, 2g] after scaling, from the rounding draws U the caller made (`_rounded_levels`).
 *
 * Every number is the one numpy computes, by the same code (tests/privacy/test_vector_sum.py):
 * the clipping is `clip_rows.h`'s, the rest single IEEE operations in numpy's order (compiled
 * with -ffp-contract=off), and the level sums integers, exact in any order. `gd_steps`
 * computes Xθ by numpy's matmul loop, μ by the link's ufunc loop, θ·θ by numpy's matmul,
 * draws the rounding uniforms as `Generator.random` does (one `next_double` each, row by row)
 * and the blanket counts by the caller's `blanket` (`vector_sum.blanket_deviation` on the same
 * generator). A NaN in `level_sums` returns None: the caller then makes numpy's calls. NaN
 * norms and clipped rows may differ from numpy's in their sign bit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_shuffle.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "../numpy_loops.h"
#include "clip_rows.h"
#include "numpy/random/bitgen.h"

#define D_ ((npy_intp)sizeof(double))

/* A C-contiguous aligned native float64 (n, D) array, n, D >= 1 (writable if asked). */
static int rows(PyObject *object, const char *name, int writable)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 2
            && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)
            && PyArray_DIM(a, 0) >= 1 && PyArray_DIM(a, 1) >= 1
            && (!writable || PyArray_ISWRITEABLE(a)))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous native%s "
                 "float64 array (n, D) with n, D >= 1", name, writable ? " writable" : "");
    return -1;
}

/* A C-contiguous aligned native float64 (size,) array (writable if asked). */
static int vector(PyObject *object, const char *name, npy_intp size, int writable)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_NDIM(a) == 1
            && PyArray_DIM(a, 0) == size && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a)
            && PyArray_ISNOTSWAPPED(a) && (!writable || PyArray_ISWRITEABLE(a)))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous native%s "
                 "float64 array of %zd values", name, writable ? " writable" : "",
                 (Py_ssize_t)size);
    return -1;
}

static PyObject *clip_rows(PyObject *self, PyObject *args)
{
    PyObject *v_obj;
    double bound;
    if (!PyArg_ParseTuple(args, "Od:clip_rows", &v_obj, &bound) || rows(v_obj, "v", 1) < 0
            || clip_in_place((PyArrayObject *)v_obj, bound) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *max_row_norm(PyObject *self, PyObject *args)
{
    PyObject *v_obj;
    if (!PyArg_ParseTuple(args, "O:max_row_norm", &v_obj) || rows(v_obj, "v", 0) < 0)
        return NULL;
    PyArrayObject *norms = row_norms((PyArrayObject *)v_obj);
    if (norms == NULL)
        return NULL;
    double top = nan_max((const double *)PyArray_DATA(norms), PyArray_DIM(norms, 0));
    Py_DECREF(norms);
    return PyFloat_FromDouble(top);
}

static PyObject *level_sums(PyObject *self, PyObject *args)
{
    PyObject *v_obj, *u_obj;
    double bound;
    long long g;
    if (!PyArg_ParseTuple(args, "OdLO:level_sums", &v_obj, &bound, &g, &u_obj)
            || rows(v_obj, "v", 0) < 0 || rows(u_obj, "uniforms", 0) < 0)
        return NULL;
    PyArrayObject *v = (PyArrayObject *)v_obj, *u = (PyArrayObject *)u_obj;
    npy_intp n = PyArray_DIM(v, 0), d = PyArray_DIM(v, 1);
    if (PyArray_DIM(u, 0) != n || PyArray_DIM(u, 1) != d || g < 1 || g > ((int64_t)1 << 40)) {
        PyErr_SetString(PyExc_ValueError, "uniforms, g are not allowed; must be the shape of "
                        "v, and 1 <= g <= 2^40");
        return NULL;
    }
    int64_t *totals = PyMem_Calloc((size_t)d, sizeof(int64_t));
    if (totals == NULL)
        return PyErr_NoMemory();
    const double *x = (const double *)PyArray_DATA(v), *draws = (const double *)PyArray_DATA(u);
    double per = (double)g / bound, top = 2.0 * (double)g; /* params.g / params.bound, 2.0 * g */
    int finite = 1;
    for (npy_intp i = 0; i < n && finite; i++)
        for (npy_intp b = 0; b < d; b++) {
            double scaled = (x[i * d + b] + bound) * per;
            if (isnan(scaled)) {
                finite = 0;
                break;
            }
            scaled = scaled > 0.0 ? scaled : 0.0; /* np.clip(·, 0.0, 2g) */
            scaled = scaled < top ? scaled : top;
            double base = floor(scaled);
            totals[b] += (int64_t)base + (draws[i * d + b] < scaled - base);
        }
    PyObject *out = NULL;
    if (!finite)
        out = Py_NewRef(Py_None);
    else if ((out = PyArray_SimpleNew(1, &d, NPY_DOUBLE)) != NULL)
        for (npy_intp b = 0; b < d; b++)
            ((double *)PyArray_DATA((PyArrayObject *)out))[b] = (double)totals[b];
    PyMem_Free(totals);
    return out;
}

/* ---- P_GD's iterations -------------------------------------------------------------- */

static Loop matmul_loop;


/* Σ_u ȳ_u per coordinate (`level_sums`'s arithmetic) of the n×d rows x, each rounding draw the
 * next `random()` of the generator, row by row (`rng.random(v.shape)`). */
static void draw_level_sums(bitgen_t *bitgen, const double *x, npy_intp n, npy_intp d,
                            double bound, long long g, int64_t *totals)
{
    double per = (double)g / bound, top = 2.0 * (double)g;
    for (npy_intp b = 0; b < d; b++)
        totals[b] = 0;
    for (npy_intp i = 0; i < n; i++)
        for (npy_intp b = 0; b < d; b++) {
            double u = bitgen->next_double(bitgen->state);
            double scaled = (x[i * d + b] + bound) * per;
            scaled = scaled > 0.0 ? scaled : 0.0;
            scaled = scaled < top ? scaled : top;
            double base = floor(scaled);
            totals[b] += (int64_t)base + (u < scaled - base);
        }
}

/* `np.sqrt(theta @ theta)` of a float64 (d,) array: numpy's own matmul. */
static int vector_norm(PyObject *theta, double *norm)
{
    PyObject *dot = PyNumber_MatrixMultiply(theta, theta);
    if (dot == NULL)
        return -1;
    *norm = sqrt(PyFloat_AsDouble(dot));
    Py_DECREF(dot);
    return PyErr_Occurred() ? -1 : 0;
}

/* The clipped gradients G of P_GD at θ into the n×d array `grads` (`shuffle_gd`'s
 * (μ(Xθ) − y)[:, None]·X + (λ_max/n)·θ, μ by the loop `mean` or the identity (NULL), then
 * `clipped_gradients_rows`); whether every row passes `_check_vectors` and no entry is NaN
 * (else numpy's calls decide the iteration). */
static int clipped_gradients(const double *x, const double *y, npy_intp n, npy_intp d,
                             const double *theta, double lam_over_n, double bound,
                             const Loop *mean, PyArrayObject *grads, double *xt, double *z,
                             double *c)
{
    double *gr = (double *)PyArray_DATA(grads);
    matmul_with(&matmul_loop, x, d * D_, D_, n, d, theta, D_, 0, 1, 1, xt); /* X @ θ */
    if (mean != NULL)
        apply(mean, xt, z, n);
    else
        memcpy(z, xt, sizeof(double) * (size_t)n);
    for (npy_intp b = 0; b < d; b++)
        c[b] = lam_over_n * theta[b];
    for (npy_intp i = 0; i < n; i++) {
        double r = z[i] - y[i];
        for (npy_intp b = 0; b < d; b++)
            gr[i * d + b] = r * x[i * d + b] + c[b];
    }
    if (clip_in_place(grads, bound) < 0)
        return -1;
    if (any_nan(gr, n * d))
        return 0;
    PyArrayObject *norms = row_norms(grads);
    if (norms == NULL)
        return -1;
    double top = nan_max((const double *)PyArray_DATA(norms), n);
    Py_DECREF(norms);
    return !(top > bound * (1 + 1e-9));
}

/*
 * gd_steps(x, y, theta, total, iterations, lam_over_n, step, radius, bound, g, mean, rng,
 *          blanket) → (theta, done)
 */
static PyObject *gd_steps(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *y_obj, *theta_obj, *total_obj, *mean_obj, *rng, *blanket_of;
    Py_ssize_t iterations;
    double lam_over_n, step, radius, bound;
    long long g;
    if (!PyArg_ParseTuple(args, "OOOOnddddLOOO:gd_steps", &x_obj, &y_obj, &theta_obj,
                          &total_obj, &iterations, &lam_over_n, &step, &radius, &bound, &g,
                          &mean_obj, &rng, &blanket_of)
            || rows(x_obj, "x", 0) < 0)
        return NULL;
    PyArrayObject *xa = (PyArrayObject *)x_obj;
    npy_intp n = PyArray_DIM(xa, 0), d = PyArray_DIM(xa, 1);
    if (vector(y_obj, "y", n, 0) < 0 || vector(theta_obj, "theta", d, 0) < 0
            || vector(total_obj, "total", d, 1) < 0)
        return NULL;
    if (g < 1 || g > ((long long)1 << 40) || !(bound > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "g, bound are not allowed; must be 1 <= g <= 2^40, "
                        "bound > 0");
        return NULL;
    }
    /* μ's loop (NULL: the identity), this call's: its callbacks and einsum let others run */
    Loop mean_loop = {NULL, NULL};
    const Loop *mean = NULL;
    if (mean_obj != Py_None) {
        if (ufunc_loop(mean_obj, "mean", 1, 1, &mean_loop) < 0)
            return NULL;
        mean = &mean_loop;
    }
    PyObject *bit_generator = PyObject_GetAttrString(rng, "bit_generator");
    PyObject *capsule = bit_generator ? PyObject_GetAttrString(bit_generator, "capsule") : NULL;
    PyObject *lock = capsule ? PyObject_GetAttrString(bit_generator, "lock") : NULL;
    Py_XDECREF(bit_generator);
    if (lock == NULL || !PyCapsule_IsValid(capsule, "BitGenerator")) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError))
            PyErr_Clear();
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "rng is not allowed; must be a numpy Generator");
        Py_XDECREF(capsule);
        Py_XDECREF(lock);
        return NULL;
    }
    bitgen_t *bitgen = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    const double *x = (const double *)PyArray_DATA(xa);
    const double *y = (const double *)PyArray_DATA((PyArrayObject *)y_obj);
    double *total = (double *)PyArray_DATA((PyArrayObject *)total_obj);
    npy_intp shape[2] = {n, d};
    PyArrayObject *grads = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    PyObject *theta = PyArray_NewCopy((PyArrayObject *)theta_obj, NPY_CORDER);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(2 * n + 2 * d));
    int64_t *totals = PyMem_Malloc(sizeof(int64_t) * (size_t)d);
    PyObject *result = NULL;
    Py_ssize_t done = 0;
    if (grads == NULL || theta == NULL || work == NULL || totals == NULL) {
        PyErr_NoMemory();
        goto finish;
    }
    double *xt = work, *z = xt + n, *c = z + n, *g_hat = c + d;
    const double scale = bound / (double)g, offset = (double)n * bound;
    for (; done < iterations; done++) {
        double *th = (double *)PyArray_DATA((PyArrayObject *)theta);
        int ok = clipped_gradients(x, y, n, d, th, lam_over_n, bound, mean, grads, xt, z, c);
        if (ok < 0)
            goto finish;
        if (!ok)
            break; /* numpy's calls make this iteration and the rest */
        for (npy_intp b = 0; b < d; b++)
            total[b] = total[b] + th[b];
        /* the rounding draws under the generator's lock, as `Generator.random` takes it (the
         * blanket's `binomial` takes it itself) */
        PyObject *held = PyObject_CallMethod(lock, "acquire", NULL);
        if (held == NULL)
            goto finish;
        Py_DECREF(held);
        draw_level_sums(bitgen, (const double *)PyArray_DATA(grads), n, d, bound, g, totals);
        PyObject *released = PyObject_CallMethod(lock, "release", NULL);
        if (released == NULL)
            goto finish;
        Py_DECREF(released);
        PyObject *blanket = PyObject_CallNoArgs(blanket_of);
        if (blanket == NULL)
            goto finish;
        if (vector(blanket, "blanket", d, 0) < 0) {
            Py_DECREF(blanket);
            goto finish;
        }
        const double *deviation = (const double *)PyArray_DATA((PyArrayObject *)blanket);
        for (npy_intp b = 0; b < d; b++) { /* scale·(sums + blanket) − nL, then θ − step·ĝ/n */
            g_hat[b] = scale * ((double)totals[b] + deviation[b]) - offset;
            th[b] = th[b] - step * g_hat[b] / (double)n;
        }
        Py_DECREF(blanket);
        double norm;
        if (vector_norm(theta, &norm) < 0)
            goto finish;
        if (!(norm <= radius)) /* project_ball: θ·(radius/‖θ‖) outside the ball */
            for (npy_intp b = 0; b < d; b++)
                th[b] = th[b] * (radius / norm);
    }
    result = Py_BuildValue("(On)", theta, done);
finish:
    Py_XDECREF((PyObject *)grads);
    Py_XDECREF(theta);
    Py_DECREF(capsule);
    Py_DECREF(lock);
    PyMem_Free(work);
    PyMem_Free(totals);
    return result;
}

static PyMethodDef methods[] = {
    {"clip_rows", clip_rows, METH_VARARGS,
     "clip_rows(v, bound): each row of the float64 (n, D) v scaled in place by "
     "min(1, bound/max(norm, 1e-300)), as `clipped_gradients_rows`."},
    {"max_row_norm", max_row_norm, METH_VARARGS,
     "max_row_norm(v) -> float: the largest row norm of the float64 (n, D) v (NaN if one is "
     "NaN), as `_check_vectors` finds it."},
    {"level_sums", level_sums, METH_VARARGS,
     "level_sums(v, bound, g, uniforms) -> float64 (D,) or None: the sums over users of the "
     "randomly rounded levels of P_vec, from the rounding draws `uniforms` (n, D); None if "
     "a scaled value is NaN."},
    {"gd_steps", gd_steps, METH_VARARGS,
     "gd_steps(x, y, theta, total, iterations, lam_over_n, step, radius, bound, g, mean, rng, "
     "blanket) -> (theta, done): P_GD's iterations (`shuffle_gd`) from theta, each adding "
     "theta to `total` in place, on rows x (n, d) and rewards y, the mean ufunc `mean` (None: "
     "the identity) and the Generator rng: its random() draws for the levels, then "
     "blanket() (float64 (d,)) for the blanket deviations; done < iterations where an "
     "iteration's "
     "gradients are NaN or above the bound after clipping (numpy's calls then make it and the "
     "rest)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shuffle",
    "The per-user passes of shuffle vector summation, in numpy's arithmetic.", -1, methods,
};

PyMODINIT_FUNC PyInit__shuffle(void)
{
    import_array();
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop}};
    return find_loops(loops, 1) < 0 ? NULL : PyModule_Create(&module);
}
