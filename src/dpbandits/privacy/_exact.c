/*
 * Exact discrete samplers of Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
 * Differential Privacy", Algorithms 1-3, driven by a numpy BitGenerator.
 *
 * Only exact integer arithmetic is used (uint64_t and unsigned __int128); there is no floating
 * point anywhere in the sampling path, so the samplers are immune to Mironov's (2012) attack on
 * noise drawn from doubles, and the same BitGenerator state gives the same numbers on every
 * machine.  Randomness comes only from bitgen->next_uint64, in 64-bit words that are split into
 * as few bits as each uniform draw needs (a fresh pool of bits for every output value).
 *
 * Supported parameters (checked here and in exact_noise.py):
 *   discrete_gaussian:  integer sigma s with 1 <= s < 2^31  (Algorithm 3 with t = s + 1)
 *   discrete_laplace:   integer scale t with 1 <= t < 2^31  (Algorithm 2 with s = 1)
 *   bernoulli_exp:      gamma = num/den with 0 <= num < 2^64, 1 <= den < 2^64 (Algorithm 1)
 * Within these ranges every intermediate value is represented exactly.  The only way a call can
 * fail is an event of probability below exp(-2^31) (a run of > 2^31 successive successes of
 * Bernoulli(exp(-1))); it then raises RuntimeError instead of returning a wrong value.
 *
 * numpy's C headers are not needed: the documented bitgen_t struct is declared in
 * exact_sampler.h (the samplers themselves, shared with `dpbandits.policies._ridge`) and the
 * pointer is taken from the PyCapsule `rng.bit_generator.capsule` ("BitGenerator").  The caller
 * must hold `rng.bit_generator.lock`; the GIL is released while sampling.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "exact_calibration.h"
#include "exact_sampler.h"

/* ---------------------------------------------------------------- Python glue */

static bitgen_t *get_bitgen(PyObject *capsule)
{
    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_SetString(PyExc_TypeError,
                        "expected rng.bit_generator.capsule (a PyCapsule named 'BitGenerator')");
        return NULL;
    }
    return (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
}

static int format_is_int64(const char *fmt)
{
    if (fmt == NULL)
        return 0;
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    return (strcmp(fmt, "q") == 0) || (sizeof(long) == 8 && strcmp(fmt, "l") == 0);
}

static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int want_int64)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || (want_int64 && !format_is_int64(view->format))) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError,
                        want_int64 ? "out must be a writable C-contiguous int64 buffer"
                                   : "out must be a writable C-contiguous 1-byte buffer");
        return -1;
    }
    return 0;
}

static PyObject *overflow_error(void)
{
    PyErr_SetString(PyExc_RuntimeError, SAMPLE_OVERFLOW_MESSAGE);
    return NULL;
}

/* An int in [lo, hi) from a Python int; one-line ValueError naming `name` otherwise. */
static int parse_u64(PyObject *obj, const char *name, unsigned long long lo,
                     unsigned long long hi, const char *hi_text, unsigned long long *out)
{
    unsigned long long v = 0;
    int ok = PyLong_Check(obj) && !PyBool_Check(obj);
    if (ok) {
        v = PyLong_AsUnsignedLongLong(obj);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            ok = 0;
        }
    }
    if (!ok || v < lo || (hi != 0 && v >= hi)) {
        PyErr_Format(PyExc_ValueError, "%s = %R is not allowed; must be an integer in [%llu, %s)",
                     name, obj, lo, hi_text);
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *py_discrete_gaussian(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *out, *s_obj;
    unsigned long long s;
    if (!PyArg_ParseTuple(args, "OOO:discrete_gaussian", &capsule, &s_obj, &out))
        return NULL;
    if (parse_u64(s_obj, "sigma", 1, PARAM_LIMIT, "2^31", &s) < 0)
        return NULL;
    bitgen_t *bg = get_bitgen(capsule);
    if (bg == NULL)
        return NULL;
    Py_buffer view;
    if (get_out(out, &view, 8, 1) < 0)
        return NULL;
    int64_t *buf = (int64_t *)view.buf;
    const Py_ssize_t n = view.len / 8;
    int status = SAMPLE_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && status == SAMPLE_OK; i++) {
        rsrc_t rs = {bg, 0, 0};
        status = dgauss(&rs, (uint64_t)s, &buf[i]);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (status != SAMPLE_OK)
        return overflow_error();
    Py_RETURN_NONE;
}

/* Symmetric matrices γ_d·Z_d on the diagonal, γ_a·Z_a above and below it, into a square out or
 * a stack of them, one after another: first the dim diagonal draws (σ_d), then the draws above
 * the diagonal row by row (σ_a), the order of `discrete_gaussian` called for the diagonal and
 * then for `np.triu_indices(dim, 1)`; a stack of k draws what k calls for one matrix draw. */
static PyObject *py_discrete_gaussian_symmetric(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *out, *sd_obj, *sa_obj;
    double gamma_d, gamma_a;
    unsigned long long sd, sa;
    if (!PyArg_ParseTuple(args, "OOOddO:discrete_gaussian_symmetric", &capsule, &sd_obj,
                          &sa_obj, &gamma_d, &gamma_a, &out))
        return NULL;
    if (parse_u64(sd_obj, "sigma_diagonal", 1, PARAM_LIMIT, "2^31", &sd) < 0
            || parse_u64(sa_obj, "sigma_above", 1, PARAM_LIMIT, "2^31", &sa) < 0)
        return NULL;
    bitgen_t *bg = get_bitgen(capsule);
    if (bg == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    const int nd = view.ndim;
    if ((nd != 2 && nd != 3) || view.shape[nd - 1] != view.shape[nd - 2] || view.shape[nd - 1] < 1
            || view.format == NULL || strcmp(view.format, "d") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "out must be a writable C-contiguous float64 square "
                                         "matrix or stack of square matrices");
        return NULL;
    }
    const Py_ssize_t dim = view.shape[nd - 1], count = nd == 3 ? view.shape[0] : 1;
    int status = SAMPLE_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < count && status == SAMPLE_OK; k++) {
        double *m = (double *)view.buf + k * dim * dim;
        for (Py_ssize_t i = 0; i < dim && status == SAMPLE_OK; i++) {
            rsrc_t rs = {bg, 0, 0};
            int64_t z;
            status = dgauss(&rs, (uint64_t)sd, &z);
            m[i * dim + i] = gamma_d * (double)z;
        }
        for (Py_ssize_t i = 0; i < dim && status == SAMPLE_OK; i++) {
            for (Py_ssize_t j = i + 1; j < dim && status == SAMPLE_OK; j++) {
                rsrc_t rs = {bg, 0, 0};
                int64_t z;
                status = dgauss(&rs, (uint64_t)sa, &z);
                m[i * dim + j] = m[j * dim + i] = gamma_a * (double)z;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (status != SAMPLE_OK)
        return overflow_error();
    Py_RETURN_NONE;
}

static PyObject *py_discrete_laplace(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *out, *t_obj;
    unsigned long long t;
    if (!PyArg_ParseTuple(args, "OOO:discrete_laplace", &capsule, &t_obj, &out))
        return NULL;
    if (parse_u64(t_obj, "scale", 1, PARAM_LIMIT, "2^31", &t) < 0)
        return NULL;
    bitgen_t *bg = get_bitgen(capsule);
    if (bg == NULL)
        return NULL;
    Py_buffer view;
    if (get_out(out, &view, 8, 1) < 0)
        return NULL;
    int64_t *buf = (int64_t *)view.buf;
    const Py_ssize_t n = view.len / 8;
    int status = SAMPLE_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && status == SAMPLE_OK; i++) {
        rsrc_t rs = {bg, 0, 0};
        status = dlaplace(&rs, (uint64_t)t, &buf[i]);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (status != SAMPLE_OK)
        return overflow_error();
    Py_RETURN_NONE;
}

static PyObject *py_bernoulli_exp(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *out, *num_obj, *den_obj;
    if (!PyArg_ParseTuple(args, "OOOO:bernoulli_exp", &capsule, &num_obj, &den_obj, &out))
        return NULL;
    unsigned long long num, den;
    if (parse_u64(num_obj, "num", 0, 0, "2^64", &num) < 0 ||
        parse_u64(den_obj, "den", 1, 0, "2^64", &den) < 0)
        return NULL;
    bitgen_t *bg = get_bitgen(capsule);
    if (bg == NULL)
        return NULL;
    Py_buffer view;
    if (get_out(out, &view, 1, 0) < 0)
        return NULL;
    uint8_t *buf = (uint8_t *)view.buf;
    const Py_ssize_t n = view.len;
    const u128 F = num / den, r = num % den;
    int status = SAMPLE_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        rsrc_t rs = {bg, 0, 0};
        const int c = bern_exp(&rs, F, r, den);
        if (c < 0) {
            status = SAMPLE_OVERFLOW;
            break;
        }
        buf[i] = (uint8_t)c;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (status != SAMPLE_OK)
        return overflow_error();
    Py_RETURN_NONE;
}

static PyObject *u128_to_py(u128 x)
{
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(x >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)x);
    PyObject *shift = PyLong_FromLong(64);
    PyObject *res = NULL, *tmp = NULL;
    if (hi && lo && shift && (tmp = PyNumber_Lshift(hi, shift)) != NULL)
        res = PyNumber_Or(tmp, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(shift);
    Py_XDECREF(tmp);
    return res;
}

/* Test hook: (floor, remainder, denominator, is_lower_bound) of the Algorithm 3 exponent. */
static PyObject *py_accept_split(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *s_obj, *ay_obj;
    unsigned long long s, ay;
    int force_split;
    if (!PyArg_ParseTuple(args, "OOp:_accept_split", &s_obj, &ay_obj, &force_split))
        return NULL;
    if (parse_u64(s_obj, "sigma", 1, PARAM_LIMIT, "2^31", &s) < 0 ||
        parse_u64(ay_obj, "abs_y", 0, (unsigned long long)INT64_MAX + 1, "2^63", &ay) < 0)
        return NULL;
    const uint64_t t = s + 1;
    const u128 s2 = (u128)s * s, ty = (u128)t * ay, a = ty >= s2 ? ty - s2 : s2 - ty;
    u128 F, r, den;
    const int bound = accept_split(a, (u128)s * t, &F, &r, &den, force_split);
    PyObject *pf = u128_to_py(F), *pr = u128_to_py(r), *pd = u128_to_py(den);
    PyObject *res = NULL;
    if (pf && pr && pd)
        res = Py_BuildValue("(OOOO)", pf, pr, pd, bound ? Py_True : Py_False);
    Py_XDECREF(pf);
    Py_XDECREF(pr);
    Py_XDECREF(pd);
    return res;
}

/* σ′ of `inflate_for_snapping` (exact_calibration.h), or None where that declines. */
static PyObject *py_inflate(PyObject *self, PyObject *args)
{
    (void)self;
    double sigma, sensitivity;
    PyObject *dim_obj;
    if (!PyArg_ParseTuple(args, "ddO:inflate", &sigma, &sensitivity, &dim_obj))
        return NULL;
    int overflow = 0;
    const long long dim = PyLong_Check(dim_obj) ? PyLong_AsLongLongAndOverflow(dim_obj, &overflow)
                                                : 0;
    if (dim == -1 && PyErr_Occurred())
        return NULL;
    double value; /* an int dim in [1, 2^53) only: any other is the Python path's to judge */
    if (overflow || !calibration_inflate(sigma, sensitivity, (double)dim, &value))
        Py_RETURN_NONE;
    return PyFloat_FromDouble(value);
}

static PyMethodDef methods[] = {
    {"discrete_gaussian", py_discrete_gaussian, METH_VARARGS,
     "discrete_gaussian(capsule, sigma, out): fill int64 `out` (CKS 2020 Algorithm 3)."},
    {"discrete_gaussian_symmetric", py_discrete_gaussian_symmetric, METH_VARARGS,
     "discrete_gaussian_symmetric(capsule, sigma_diagonal, sigma_above, gamma_diagonal, "
     "gamma_above, out): fill the square float64 matrix `out` with scaled discrete Gaussians, "
     "symmetric (diagonal first, then above it row by row)."},
    {"discrete_laplace", py_discrete_laplace, METH_VARARGS,
     "discrete_laplace(capsule, scale, out): fill int64 `out` (CKS 2020 Algorithm 2)."},
    {"bernoulli_exp", py_bernoulli_exp, METH_VARARGS,
     "bernoulli_exp(capsule, num, den, out): fill 1-byte `out` with Bernoulli(exp(-num/den)) "
     "(CKS 2020 Algorithm 1)."},
    {"inflate", py_inflate, METH_VARARGS,
     "inflate(sigma, sensitivity, dim): the smallest grid sigma' >= sigma with sigma' Delta >= "
     "sigma (Delta + gamma(sigma') r), r the float above sqrt(dim) (inflate_for_snapping), or "
     "None where the exact binary arithmetic here declines."},
    {"_accept_split", py_accept_split, METH_VARARGS,
     "_accept_split(s, abs_y, force_split): (floor, rem, den, is_bound) of Algorithm 3's x."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_exact",
    "Exact discrete Laplace / Gaussian / Bernoulli(exp(-gamma)) samplers (CKS 2020, Alg. 1-3).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__exact(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "PARAM_LIMIT", (long)PARAM_LIMIT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
