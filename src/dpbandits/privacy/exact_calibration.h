/*
 * The snapping inflation of a Gaussian calibration, `inflate_for_snapping` of
 * dpbandits.privacy.exact_noise, in exact binary arithmetic: the smallest σ′ on its own grid with
 * σ′Δ ≥ σ(Δ + γ(σ′)·r), r the double above √dim, tried in the same order as there (σ′ starts at
 * γ⌈σ/γ⌉; after a failed test it moves to the grid value at or above the double after the
 * correctly rounded σ(Δ + γr)/Δ).  Shared by `dpbandits.privacy._exact` (`inflate`, which the
 * policies' calibration calls) and `dpbandits.policies._ridge` (DGS-LinUCB's compiled rounds).
 *
 * Every double here is m·2^e with an integer m < 2^53, and γ is a power of two, so σ′Δ, σΔ and
 * σγr are integers below 2^106 times powers of two; they are compared as 256-bit integers after
 * aligning their exponents, and the quotient is rounded from a 256-bit integer division.  The
 * function declines (returns 0), and the caller takes the Python path, which gives the answer
 * or the error, where σ, Δ or a candidate σ′ leaves [2^-1000, 2^1000] (the grid's range, where
 * the Python test may raise), dim is not in [1, 2^53), the exponents lie more than
 * CALIBRATION_SHIFT_LIMIT bits apart, or no σ′ passes within CALIBRATION_STEPS candidates.
 */
#ifndef DPBANDITS_EXACT_CALIBRATION_H
#define DPBANDITS_EXACT_CALIBRATION_H

#include <math.h>
#include <stdint.h>

#define CALIBRATION_GRID_BITS 20  /* exact_noise.GRID_BITS: σ/γ ∈ [2^20, 2^21) */
#define CALIBRATION_STEPS 200     /* linear_core.INFLATE_STEPS */
#define CALIBRATION_SHIFT_LIMIT 140 /* 106-bit products shifted by at most this fit 256 bits */

typedef struct {
    uint64_t w[4]; /* little-endian limbs */
} wide256;

static inline int calibration_in_range(double x) { return x >= 0x1p-1000 && x <= 0x1p1000; }

/* γ = 2^(⌊log2 x⌋ − 20) of `ExactNoise.grid`. */
static inline double calibration_grid(double x)
{
    int e;
    (void)frexp(x, &e);
    return ldexp(1.0, e - 1 - CALIBRATION_GRID_BITS);
}

/* γ⌈x/γ⌉ of `ExactNoise.effective_sigma` (x/γ < 2^21: every step exact). */
static inline double calibration_effective(double x)
{
    const double gamma = calibration_grid(x);
    return ceil(x / gamma) * gamma;
}

/* x = m·2^e, m an integer below 2^53 (x finite and > 0). */
static inline void calibration_split(double x, uint64_t *m, int *e)
{
    int k;
    const double f = frexp(x, &k);
    *m = (uint64_t)ldexp(f, 53);
    *e = k - 53;
}

/* x·2^s for x < 2^106 and 0 <= s <= CALIBRATION_SHIFT_LIMIT (below 2^246). */
static wide256 wide_shifted(unsigned __int128 x, int s)
{
    wide256 r = {{0, 0, 0, 0}};
    const int q = s / 64, b = s % 64;
    const uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    const uint64_t parts[3] = {lo << b, b ? (hi << b) | (lo >> (64 - b)) : hi,
                               b ? hi >> (64 - b) : 0};
    for (int i = 0; i < 3; i++)
        if (q + i < 4)
            r.w[q + i] = parts[i];
    return r;
}

static wide256 wide_add(wide256 a, wide256 b)
{
    wide256 r;
    unsigned carry = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned __int128 s = (unsigned __int128)a.w[i] + b.w[i] + carry;
        r.w[i] = (uint64_t)s;
        carry = (unsigned)(s >> 64);
    }
    return r;
}

static int wide_compare(wide256 a, wide256 b)
{
    for (int i = 3; i >= 0; i--)
        if (a.w[i] != b.w[i])
            return a.w[i] < b.w[i] ? -1 : 1;
    return 0;
}

static int wide_bits(wide256 a)
{
    for (int i = 3; i >= 0; i--)
        if (a.w[i] != 0)
            return 64 * i + 64 - __builtin_clzll(a.w[i]);
    return 0;
}

/* a·2^s, 0 <= s < 256, for a below 2^(256 − s). */
static wide256 wide_shift_left(wide256 a, int s)
{
    wide256 r = {{0, 0, 0, 0}};
    const int q = s / 64, b = s % 64;
    for (int i = 3; i >= q; i--) {
        uint64_t v = a.w[i - q] << b;
        if (b && i - q - 1 >= 0)
            v |= a.w[i - q - 1] >> (64 - b);
        r.w[i] = v;
    }
    return r;
}

/* a ← ⌊a/d⌋, returning a mod d (d >= 1). */
static uint64_t wide_divide(wide256 *a, uint64_t d)
{
    uint64_t rem = 0;
    for (int i = 3; i >= 0; i--) {
        const unsigned __int128 cur = ((unsigned __int128)rem << 64) | a->w[i];
        a->w[i] = (uint64_t)(cur / d);
        rem = (uint64_t)(cur % d);
    }
    return rem;
}

static inline int wide_bit(wide256 a, int i) { return (int)((a.w[i / 64] >> (i % 64)) & 1); }

/* Whether any bit below position i (i >= 0) is set. */
static int wide_any_below(wide256 a, int i)
{
    for (int k = 0; k < i / 64; k++)
        if (a.w[k] != 0)
            return 1;
    return i % 64 != 0 && (a.w[i / 64] & (((uint64_t)1 << (i % 64)) - 1)) != 0;
}

/* The 64 bits of a from position lo up. */
static uint64_t wide_bits_from(wide256 a, int lo)
{
    const int q = lo / 64, b = lo % 64;
    uint64_t v = a.w[q] >> b;
    if (b && q + 1 < 4)
        v |= a.w[q + 1] << (64 - b);
    return v;
}

/* The double nearest (ties to even) to n·2^e/d for 0 < n < 2^247, 1 <= d < 2^53, as Python's
 * int / int rounds; 0 (declined) if it lies outside the grid's range. */
static int calibration_quotient(wide256 n, uint64_t d, int e, double *out)
{
    const int k = 250 - wide_bits(n); /* n·2^k has 250 bits: the quotient has at least 197 */
    wide256 q = wide_shift_left(n, k);
    const uint64_t rem = wide_divide(&q, d);
    int drop = wide_bits(q) - 53;
    uint64_t m = wide_bits_from(q, drop) & ((((uint64_t)1) << 53) - 1);
    const int half = wide_bit(q, drop - 1);
    const int sticky = rem != 0 || wide_any_below(q, drop - 1);
    if (half && (sticky || (m & 1))) {
        m++;
        if (m == ((uint64_t)1 << 53)) {
            m >>= 1;
            drop++;
        }
    }
    const int exponent = e - k + drop; /* value = m·2^exponent, 2^52 <= m < 2^53 */
    if (exponent + 52 < -1000 || exponent + 52 >= 1000)
        return 0;
    *out = ldexp((double)m, exponent);
    return 1;
}

/*
 * σ′ for a release calibrated as σ for ℓ2 sensitivity Δ, snapped in dim coordinates
 * (`linear_core.inflate_exact`): 1 and *out on success, 0 where this function declines (see
 * above; no test decided here then differs from the Python one, which the caller then runs).
 */
static int calibration_inflate(double sigma, double sensitivity, double dim, double *out)
{
    if (!(calibration_in_range(sigma) && calibration_in_range(sensitivity) && dim >= 1
          && dim < 0x1p53))
        return 0;
    const double root = nextafter(sqrt(dim), INFINITY);
    uint64_t ms, md, mr;
    int es, ed, er;
    calibration_split(sigma, &ms, &es);
    calibration_split(sensitivity, &md, &ed);
    calibration_split(root, &mr, &er);
    const unsigned __int128 sd = (unsigned __int128)ms * md, sr = (unsigned __int128)ms * mr;
    double value = calibration_effective(sigma);
    for (int step = 0; step < CALIBRATION_STEPS; step++) {
        if (!calibration_in_range(value))
            return 0;
        uint64_t mv;
        int ev, eg;
        calibration_split(value, &mv, &ev);
        (void)frexp(value, &eg);
        eg -= 1 + CALIBRATION_GRID_BITS; /* γ(σ′) = 2^eg */
        /* σ′Δ against σΔ + σγr, all three x·2^e */
        const int e1 = ev + ed, e2 = es + ed, e3 = es + er + eg;
        const int e0 = e1 < e2 ? (e1 < e3 ? e1 : e3) : (e2 < e3 ? e2 : e3);
        const int s1 = e1 - e0, s2 = e2 - e0, s3 = e3 - e0;
        if (s1 > CALIBRATION_SHIFT_LIMIT || s2 > CALIBRATION_SHIFT_LIMIT
                || s3 > CALIBRATION_SHIFT_LIMIT)
            return 0;
        const wide256 lhs = wide_shifted((unsigned __int128)mv * md, s1);
        const wide256 rhs = wide_add(wide_shifted(sd, s2), wide_shifted(sr, s3));
        if (wide_compare(lhs, rhs) >= 0) {
            *out = value;
            return 1;
        }
        double bound; /* σ(Δ + γr)/Δ = rhs·2^e0 / (md·2^ed), correctly rounded */
        if (!calibration_quotient(rhs, md, e0 - ed, &bound))
            return 0;
        value = calibration_effective(nextafter(bound, INFINITY));
    }
    return 0;
}

#endif /* DPBANDITS_EXACT_CALIBRATION_H */
