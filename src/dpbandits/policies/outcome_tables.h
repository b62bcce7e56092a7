/*
 * The arguments of the compiled table rounds (`policies/_ridge.c`, `policies/_glm_rounds.c`):
 * float64 arrays checked for their layout and sizes, and a run's `OutcomeTables` (the arms,
 * every pull's reward and regret, and the per-round regret, reward and arm the rounds fill).
 * Include after numpy/arrayobject.h.
 */
#ifndef DPBANDITS_OUTCOME_TABLES_H
#define DPBANDITS_OUTCOME_TABLES_H

#define D_LIMIT (1 << 26)    /* d² doubles stay far below SIZE_MAX; LAPACK's int holds d */
#define K_LIMIT 0x7fffffff   /* LAPACK's int holds K */

/* The array `object` as float64, C-contiguous, of `ndim` dimensions with the given sizes
 * (-1: any); writable if asked. A borrowed pointer to its data, NULL with an error if not. */
static double *doubles(PyObject *object, const char *name, int ndim, const npy_intp *shape,
                       int writable)
{
    if (!PyArray_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s is not allowed; must be a numpy array", name);
        return NULL;
    }
    PyArrayObject *array = (PyArrayObject *)object;
    int ok = PyArray_TYPE(array) == NPY_DOUBLE && PyArray_NDIM(array) == ndim
             && PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array)
             && PyArray_ISNOTSWAPPED(array) && (!writable || PyArray_ISWRITEABLE(array));
    for (int k = 0; ok && k < ndim; k++)
        ok = shape[k] < 0 || PyArray_DIM(array, k) == shape[k];
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s is not allowed; must be a C-contiguous%s native "
                     "float64 array of %d dimensions with the policy's sizes", name,
                     writable ? " writable" : "", ndim);
        return NULL;
    }
    return (double *)PyArray_DATA(array);
}

/* A run's `OutcomeTables` (borrowed: the frozen object keeps its arrays) and the rounds
 * [t, stop) asked for. */
typedef struct {
    const double *arms, *rewards, *regrets;
    double *regret, *reward;
    npy_int64 *chosen;
    npy_intp T, K, d;
    PyArrayObject *arrays[6]; /* arms, rewards, regrets, regret, reward, chosen */
} Tables;

static PyArrayObject *field(PyObject *tables, const char *name)
{
    PyObject *value = PyObject_GetAttrString(tables, name);
    if (value == NULL)
        return NULL;
    Py_DECREF(value); /* the frozen tables object holds it */
    if (!PyArray_Check(value)) {
        PyErr_Format(PyExc_TypeError, "tables.%s is not allowed; must be a numpy array", name);
        return NULL;
    }
    return (PyArrayObject *)value;
}

static int tables_from(PyObject *tables, Py_ssize_t t, Py_ssize_t stop, Tables *out)
{
    const char *names[6] = {"arms", "rewards", "regrets", "regret", "reward", "chosen"};
    for (int k = 0; k < 6; k++)
        if ((out->arrays[k] = field(tables, names[k])) == NULL)
            return -1;
    PyArrayObject *arms = out->arrays[0];
    if (PyArray_NDIM(arms) != 3) {
        PyErr_SetString(PyExc_ValueError, "arms is not allowed; must be a (T, K, d) array");
        return -1;
    }
    npy_intp T = PyArray_DIM(arms, 0), K = PyArray_DIM(arms, 1), d = PyArray_DIM(arms, 2);
    if (K < 1 || d < 1 || d > D_LIMIT || K > K_LIMIT) {
        PyErr_Format(PyExc_ValueError, "arms of shape (%zd, %zd, %zd) is not allowed; must "
                     "have 1 <= K <= %d and 1 <= d <= %d", (Py_ssize_t)T, (Py_ssize_t)K,
                     (Py_ssize_t)d, K_LIMIT, D_LIMIT);
        return -1;
    }
    npy_intp tk[2] = {T, K}, tt[1] = {T}, txt[3] = {T, K, d};
    out->T = T, out->K = K, out->d = d;
    if ((out->arms = doubles((PyObject *)arms, "arms", 3, txt, 0)) == NULL
            || (out->rewards = doubles((PyObject *)out->arrays[1], "rewards", 2, tk, 0)) == NULL
            || (out->regrets = doubles((PyObject *)out->arrays[2], "regrets", 2, tk, 0)) == NULL
            || (out->regret = doubles((PyObject *)out->arrays[3], "regret", 1, tt, 1)) == NULL
            || (out->reward = doubles((PyObject *)out->arrays[4], "reward", 1, tt, 1)) == NULL)
        return -1;
    PyArrayObject *chosen = out->arrays[5];
    if (PyArray_TYPE(chosen) != NPY_INT64 || PyArray_NDIM(chosen) != 1
            || PyArray_DIM(chosen, 0) != T || !PyArray_IS_C_CONTIGUOUS(chosen)
            || !PyArray_ISALIGNED(chosen) || !PyArray_ISNOTSWAPPED(chosen)
            || !PyArray_ISWRITEABLE(chosen)) {
        PyErr_SetString(PyExc_ValueError, "chosen is not allowed; must be a writable native "
                        "int64 vector of T values");
        return -1;
    }
    out->chosen = (npy_int64 *)PyArray_DATA(chosen);
    if (t < 0 || t > stop || stop > T) {
        PyErr_Format(PyExc_ValueError, "rounds [%zd, %zd) are not allowed; must lie in [0, "
                     "%zd)", t, stop, (Py_ssize_t)T);
        return -1;
    }
    return 0;
}

#endif
