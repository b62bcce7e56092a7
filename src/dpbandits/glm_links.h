/*
 * μ̇ of the GLM links (`links.py`'s `Link.dot`) on contiguous float64 values, for the C
 * extensions that compute it as numpy does (`_stacked.c`, `policies/_glm_rounds.c`): logistic
 * p·(1 − p), p = expit(z) by the loop of the expit ufunc the caller passes (scipy's); probit
 * exp(−z²/2)/√(2π) by numpy's exp loop; linear 1. Include after numpy_loops.h.
 */
#ifndef DPBANDITS_GLM_LINKS_H
#define DPBANDITS_GLM_LINKS_H

enum { LOGISTIC, PROBIT, LINEAR }; /* the links of `links.LINKS`, by the kind passed */

/* A ufunc passed on a call (the link's expit or mean) is looked up by that call
 * (`ufunc_loop`) and its loop kept for the call: numpy's einsum releases the GIL, so a loop
 * shared between calls could be another thread's by the time it is used. */

/* The link kind, checked: -1 with a ValueError naming the allowed ones. */
static int link_kind(int link)
{
    if (link >= LOGISTIC && link <= LINEAR)
        return link;
    PyErr_Format(PyExc_ValueError, "link = %d is not allowed; must be 0 (logistic), 1 (probit) "
                 "or 2 (linear)", link);
    return -1;
}

/* z[r] ← μ̇(z[r]) for r < m (`scratch`: m doubles). */
static void link_dot(int link, const Loop *expit, const Loop *exp_loop, double *z,
                     double *scratch, npy_intp m)
{
    if (link == LOGISTIC) {
        apply(expit, z, scratch, m);
        for (npy_intp r = 0; r < m; r++)
            z[r] = scratch[r] * (1.0 - scratch[r]);
    } else if (link == PROBIT) {
        const double root_two_pi = sqrt(2.0 * M_PI);
        for (npy_intp r = 0; r < m; r++)
            scratch[r] = -0.5 * (z[r] * z[r]);
        apply(exp_loop, scratch, z, m);
        for (npy_intp r = 0; r < m; r++)
            z[r] = z[r] / root_two_pi;
    } else {
        for (npy_intp r = 0; r < m; r++)
            z[r] = 1.0;
    }
}

#endif
