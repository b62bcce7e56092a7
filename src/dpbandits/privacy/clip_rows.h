/*
 * Per-sample gradient clipping as numpy computes it, for the C extensions that clip rows
 * (`privacy/_shuffle.c`, `privacy/_sgd.c`): the row norms are numpy's einsum
 * (PyArray_EinsteinSum, what `np.einsum` calls) and sqrt, the scaling single IEEE operations
 * in numpy's order. Include after numpy_loops.h.
 */
#ifndef DPBANDITS_CLIP_ROWS_H
#define DPBANDITS_CLIP_ROWS_H

/* `np.sqrt(np.einsum("ij,ij->i", v, v))`: a new (n,) array, NULL with an error. */
static PyArrayObject *row_norms(PyArrayObject *v)
{
    PyArrayObject *norms = row_dots(v, v);
    if (norms == NULL)
        return NULL;
    double *values = (double *)PyArray_DATA(norms);
    for (npy_intp i = 0; i < PyArray_DIM(norms, 0); i++)
        values[i] = sqrt(values[i]);
    return norms;
}

/* Each row of the C-ordered v scaled in place by min(1, bound/max(‖row‖, 1e-300)); -1 with
 * an error. */
static int clip_in_place(PyArrayObject *v, double bound)
{
    PyArrayObject *norms = row_norms(v);
    if (norms == NULL)
        return -1;
    npy_intp n = PyArray_DIM(v, 0), d = PyArray_DIM(v, 1);
    double *x = (double *)PyArray_DATA(v);
    const double *norm = (const double *)PyArray_DATA(norms);
    for (npy_intp i = 0; i < n; i++) {
        /* np.minimum(1.0, bound / np.maximum(norm, 1e-300)), NaN kept as numpy keeps it */
        double floored = isnan(norm[i]) || norm[i] >= 1e-300 ? norm[i] : 1e-300;
        double ratio = bound / floored;
        double factor = isnan(ratio) || ratio < 1.0 ? ratio : 1.0;
        for (npy_intp b = 0; b < d; b++)
            x[i * d + b] = x[i * d + b] * factor;
    }
    Py_DECREF(norms);
    return 0;
}

#endif
