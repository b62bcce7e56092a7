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
 * numpy's C headers are not needed: the documented bitgen_t struct is declared below and the
 * pointer is taken from the PyCapsule `rng.bit_generator.capsule` ("BitGenerator").  The caller
 * must hold `rng.bit_generator.lock`; the GIL is released while sampling.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;

typedef struct bitgen {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} bitgen_t;

#define PARAM_LIMIT ((uint64_t)1 << 31) /* s, t < 2^31 */
#define U64_MAX_ ((uint64_t)UINT64_MAX)
#define U128_MAX_ (~(u128)0)
/* Lower bound used when the exponent of Bernoulli(exp(-x)) is too large to form exactly. */
#define HUGE_FLOOR ((u128)1 << 63)

enum { SAMPLE_OK = 0, SAMPLE_OVERFLOW = 1 };

/* Random bits for one output value: 64-bit words from next_uint64, handed out w bits at a
 * time (low bits first); a request that does not fit in what is left takes a fresh word and
 * drops the rest.  The pool is emptied before every output value, so a call of n draws gives
 * the same numbers as n calls of one. */
typedef struct {
    bitgen_t *bg;
    uint64_t bits;
    unsigned avail;
} rsrc_t;

static inline uint64_t next64(rsrc_t *rs) { return rs->bg->next_uint64(rs->bg->state); }

/* w random bits, 1 <= w <= 63. */
static inline uint64_t take_bits(rsrc_t *rs, unsigned w)
{
    if (rs->avail < w) {
        rs->bits = next64(rs);
        rs->avail = 64;
    }
    const uint64_t x = rs->bits & (((uint64_t)1 << w) - 1);
    rs->bits >>= w;
    rs->avail -= w;
    return x;
}

static inline unsigned bit_width64(uint64_t m) { return 64u - (unsigned)__builtin_clzll(m); }

/* Uniform integer in [0, m]: rejection sampling on w-bit words, w the bit width of m (no
 * modulo bias).  m == 0 consumes no randomness; w = 64 takes whole words. */
static inline uint64_t uniform_upto64(rsrc_t *rs, uint64_t m)
{
    if (m == 0)
        return 0;
    const unsigned w = bit_width64(m);
    if (w == 64)
        for (;;) {
            const uint64_t x = next64(rs);
            if (x <= m)
                return x;
        }
    for (;;) {
        const uint64_t x = take_bits(rs, w);
        if (x <= m)
            return x;
    }
}

/* Uniform integer in [0, m] for 128-bit m: the high part (as many bits as m's high word
 * has, from the pool), then the low part (a whole word). */
static u128 uniform_upto128(rsrc_t *rs, u128 m)
{
    const uint64_t hi_m = (uint64_t)(m >> 64);
    if (hi_m == 0)
        return uniform_upto64(rs, (uint64_t)m);
    const unsigned w = bit_width64(hi_m);
    for (;;) {
        const uint64_t hi = w == 64 ? next64(rs) : take_bits(rs, w);
        const uint64_t lo = next64(rs);
        const u128 x = ((u128)hi << 64) | lo;
        if (x <= m)
            return x;
    }
}

/* Bernoulli(n/d) for d >= 1 (n >= d gives 1): [uniform below d] < n. */
static inline int bern_ratio64(rsrc_t *rs, uint64_t n, uint64_t d)
{
    if (n == 0)
        return 0;
    if (n >= d)
        return 1;
    return uniform_upto64(rs, d - 1) < n;
}

static inline int bern_ratio128(rsrc_t *rs, u128 n, u128 d)
{
    if (n == 0)
        return 0;
    if (n >= d)
        return 1;
    return uniform_upto128(rs, d - 1) < n;
}

/* Bernoulli(n / (d k)) for 0 <= n <= d, k >= 1.  When d k does not fit in 128 bits it is drawn
 * as Bernoulli(n/d) AND Bernoulli(1/k) (independent, same law). */
static inline int bern_ratio_scaled(rsrc_t *rs, u128 n, u128 d, uint64_t k)
{
    if ((d >> 64) == 0) {
        const u128 dk = d * (u128)k; /* < 2^128 */
        if ((dk >> 64) == 0)
            return bern_ratio64(rs, (uint64_t)n, (uint64_t)dk);
        return bern_ratio128(rs, n, dk);
    }
    if (((d >> 96) == 0 && (k >> 32) == 0) || d <= U128_MAX_ / k)
        return bern_ratio128(rs, n, d * (u128)k);
    return bern_ratio128(rs, n, d) && bern_ratio64(rs, 1, k);
}

/* CKS 2020 Algorithm 1, case gamma = n/d in [0, 1]: K = 1; while Bernoulli(gamma/K): K++;
 * return [K odd].  Returns -1 on counter overflow (probability < 1/(2^64)!). */
static int bern_exp_unit(rsrc_t *rs, u128 n, u128 d)
{
    uint64_t k = 1;
    for (;;) {
        if (!bern_ratio_scaled(rs, n, d, k))
            break;
        if (k == U64_MAX_)
            return -1;
        k++;
    }
    return (int)(k & 1);
}

/* Bernoulli(exp(-1)): Algorithm 1 with gamma = 1/1 (same draws as bern_exp_unit(rs, 1, 1)). */
static inline int bern_exp1(rsrc_t *rs)
{
    uint64_t k = 1;
    for (;;) {
        /* Bernoulli(1/k): k == 1 is certain and draws nothing; else [uniform below k] == 0. */
        if (k > 1 && uniform_upto64(rs, k - 1) != 0)
            break;
        k++;
    }
    return (int)(k & 1);
}

/* CKS 2020 Algorithm 1 for gamma = F + r/d >= 0 (0 <= r < d): floor(gamma) = F successive
 * Bernoulli(exp(-1)) (stop at the first failure), then Bernoulli(exp(-(r/d))).
 * Returns 0/1, or -1 on counter overflow. */
static int bern_exp(rsrc_t *rs, u128 F, u128 r, u128 d)
{
    for (u128 i = 0; i < F; i++)
        if (!bern_exp1(rs))
            return 0;
    return bern_exp_unit(rs, r, d);
}

/* CKS 2020 Algorithm 2 with s = 1: discrete Laplace, P(y) proportional to exp(-|y|/t). */
static int dlaplace(rsrc_t *rs, uint64_t t, int64_t *out)
{
    const uint64_t vmax = ((uint64_t)INT64_MAX - (t - 1)) / t; /* u + t v <= INT64_MAX */
    for (;;) {
        const uint64_t u = uniform_upto64(rs, t - 1);
        const int d = bern_exp_unit(rs, u, t);
        if (d < 0)
            return SAMPLE_OVERFLOW;
        if (!d)
            continue;
        uint64_t v = 0;
        while (bern_exp1(rs)) {
            if (v == vmax)
                return SAMPLE_OVERFLOW;
            v++;
        }
        const uint64_t x = u + t * v;
        const int b = bern_ratio64(rs, 1, 2);
        if (b && x == 0)
            continue;
        *out = b ? -(int64_t)x : (int64_t)x;
        return SAMPLE_OK;
    }
}

/* Exponent x = a^2 / (2 D^2) of the acceptance step of Algorithm 3, where a = |t|Y| - s^2| and
 * D = s t, as floor *F, remainder *r and denominator *den = 2 D^2 (x = F + r/den, r < den).
 * Exact for every a < 2^95 (|Y| < 2^63, t <= 2^31).  a < 2^64 uses a^2 directly unless
 * force_split; otherwise a = qD + rho gives x = floor(q^2/2) + floor(q rho / D) + R/(2D^2) with
 * R = (q mod 2) D^2 + 2 (q rho mod D) D + rho^2 < 4 D^2.  Returns 1 when q >= 2^32: then only
 * the bound x >= 2^63 is known and *F = 2^63 (a lower bound), *r = 0. */
static int accept_split(u128 a, u128 D, u128 *F, u128 *r, u128 *den, int force_split)
{
    const u128 dd = 2 * D * D;
    *den = dd;
    if ((a >> 64) == 0 && !force_split) {
        u128 num = a * a, f = 0;
        while (num >= dd && f < 4) { /* x is small in the typical case: avoid a division */
            num -= dd;
            f++;
        }
        if (num >= dd) {
            f += num / dd;
            num %= dd;
        }
        *F = f;
        *r = num;
        return 0;
    }
    const u128 q = a / D, rho = a % D;
    if ((q >> 32) != 0) {
        *F = HUGE_FLOOR;
        *r = 0;
        return 1;
    }
    const u128 qq = q * q;         /* < 2^64 */
    const u128 qr = q * rho;       /* < 2^32 * 2^62 */
    u128 f = (qq >> 1) + qr / D;
    u128 rem = ((qq & 1) ? D * D : 0) + 2 * (qr % D) * D + rho * rho; /* < 4 D^2 < 2^126 */
    while (rem >= dd) {
        rem -= dd;
        f++;
    }
    *F = f;
    *r = rem;
    return 0;
}

/* CKS 2020 Algorithm 3 with integer sigma = s (t = s + 1): discrete Gaussian. */
static int dgauss(rsrc_t *rs, uint64_t s, int64_t *out)
{
    const uint64_t t = s + 1;
    const u128 D = (u128)s * t; /* < 2^62 */
    const u128 s2 = (u128)s * s;
    for (;;) {
        int64_t y;
        if (dlaplace(rs, t, &y) != SAMPLE_OK)
            return SAMPLE_OVERFLOW;
        const uint64_t ay = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        const u128 ty = (u128)t * ay; /* < 2^94 */
        const u128 a = ty >= s2 ? ty - s2 : s2 - ty;
        u128 F, r, den;
        int c;
        if (accept_split(a, D, &F, &r, &den, 0)) {
            /* x >= F = 2^63: the F-fold Bernoulli(exp(-1)) run of Algorithm 1 fails before it
             * ends (and so C = 0) unless it succeeds F times, which is then an error. */
            c = bern_exp(rs, F, 0, 1);
            if (c != 0)
                return SAMPLE_OVERFLOW;
        } else {
            c = bern_exp(rs, F, r, den);
            if (c < 0)
                return SAMPLE_OVERFLOW;
        }
        if (c) {
            *out = y;
            return SAMPLE_OK;
        }
    }
}

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
    PyErr_SetString(PyExc_RuntimeError,
                    "exact sampler left its representable range (an event of probability "
                    "< exp(-2^31)); no value was returned");
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

/* One symmetric matrix γ_d·Z_d on the diagonal, γ_a·Z_a above and below it: first the dim
 * diagonal draws (σ_d), then the draws above the diagonal row by row (σ_a), the order of
 * `discrete_gaussian` called for the diagonal and then for `np.triu_indices(dim, 1)`. */
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
    if (view.ndim != 2 || view.shape[0] != view.shape[1] || view.shape[0] < 1
            || view.format == NULL || strcmp(view.format, "d") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError,
                        "out must be a writable C-contiguous square float64 matrix");
        return NULL;
    }
    const Py_ssize_t dim = view.shape[0];
    double *m = (double *)view.buf;
    int status = SAMPLE_OK;
    Py_BEGIN_ALLOW_THREADS
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
