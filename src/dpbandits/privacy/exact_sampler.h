/*
 * The exact discrete samplers of Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
 * Differential Privacy", Algorithms 1-3, on a numpy BitGenerator: the sampling core shared by
 * `dpbandits.privacy._exact` (its Python entry points) and `dpbandits.policies._ridge` (compiled
 * rounds that release with exact noise).  See _exact.c for the arithmetic and the ranges.
 */
#ifndef DPBANDITS_EXACT_SAMPLER_H
#define DPBANDITS_EXACT_SAMPLER_H

#include <stdint.h>

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
/* The one-line error of a SAMPLE_OVERFLOW, which the callers raise as RuntimeError. */
#define SAMPLE_OVERFLOW_MESSAGE                                                          \
    "exact sampler left its representable range (an event of probability < exp(-2^31)); " \
    "no value was returned"

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

#endif /* DPBANDITS_EXACT_SAMPLER_H */
