/*
 * `_newton.c`'s damped Newton fit for the other extensions (`policies/_glm_rounds.c`): the
 * capsule `dpbandits._newton._api` holds a `NewtonApi`. Include after numpy/arrayobject.h.
 */
#ifndef DPBANDITS_NEWTON_API_H
#define DPBANDITS_NEWTON_API_H

#define NEWTON_API_CAPSULE "dpbandits._newton._api"

/* The links the fit takes, by the codes of `glm.COMPILED_LINKS`. */
enum { NEWTON_PROBIT = 1, NEWTON_LOGISTIC = 2 };

/* Scratch of a fit: θ (the start, then the result), the trial point, ∇F, the step, |·| and
 * ball scratch (d each), and H (d × d). */
typedef struct {
    double *theta, *trial, *g, *p, *work, *h;
} NewtonScratch;

/* The scratch of a d-dimensional fit in one zeroed block (θ in it too where `theta` is NULL,
 * else the caller's θ): the block to PyMem_Free, NULL with MemoryError. */
static inline double *newton_scratch(NewtonScratch *s, double *theta, npy_intp d)
{
    double *block = PyMem_Calloc((size_t)(5 * d + d * d + 1), sizeof(double));
    if (block == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *s = (NewtonScratch){theta == NULL ? block : theta, block + d, block + 2 * d, block + 3 * d,
                         block + 4 * d, block + 5 * d};
    return block;
}

typedef struct {
    /* Whether `_newton.bind` has given the fit numpy's solve and the ball minimiser. */
    int (*bound)(void);
    /* (μ, μ̇, b) at the n values z for the link NEWTON_PROBIT or NEWTON_LOGISTIC, as
     * `glm._link_values_into`. */
    void (*link_values)(int link, npy_intp n, const double *z, double *mu, double *mudot,
                        double *pot);
    /* `glm.numpy_newton` from its cap check on, as `_newton.newton` runs it: 0, or -1 with an
     * error; cur and next (z, μ, μ̇, b) are swapped on every accepted step (*swaps: parity). */
    int (*fit)(const double *x, npy_intp n, npy_intp d, const double *r, double **cur,
               double **next, double *weighted, double *resid, int link, double lam,
               double cap, int has_cap, double tol, Py_ssize_t max_iter, int known,
               NewtonScratch *s, int *success, Py_ssize_t *steps, int *capped, int *swaps);
} NewtonApi;

#endif
