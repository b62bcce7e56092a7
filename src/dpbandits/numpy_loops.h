/*
 * numpy's own compiled inner loops, taken from a ufunc's `functions` table, for the C
 * extensions that must give numpy's bits without a Python call per operation
 * (`privacy/_wbk.c`, `policies/_ridge.c`, `_design.c`, `_stacked.c`, `_newton.c`). Include
 * after numpy/ufuncobject.h.
 */
#ifndef DPBANDITS_NUMPY_LOOPS_H
#define DPBANDITS_NUMPY_LOOPS_H

typedef struct {
    PyUFuncGenericFunction function;
    void *data;
} Loop;

/* The float64 loop of `object`, which must be a numpy ufunc (`name` for the errors) whose
 * `nin` inputs and `nout` outputs are all float64; the object is borrowed. */
static int ufunc_loop(PyObject *object, const char *name, int nin, int nout, Loop *loop)
{
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *ufunc_type = numpy == NULL ? NULL : PyObject_GetAttrString(numpy, "ufunc");
    Py_XDECREF(numpy);
    int is_ufunc = ufunc_type != NULL && PyType_Check(ufunc_type)
                   && PyObject_TypeCheck(object, (PyTypeObject *)ufunc_type);
    Py_XDECREF(ufunc_type);
    if (!is_ufunc) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "%s is not a numpy ufunc", name);
        return -1;
    }
    PyUFuncObject *ufunc = (PyUFuncObject *)object;
    for (int k = 0; ufunc->nin == nin && ufunc->nout == nout && k < ufunc->ntypes; k++) {
        const char *types = ufunc->types + (size_t)k * (size_t)ufunc->nargs;
        int all_double = 1;
        for (int j = 0; j < nin + nout; j++)
            all_double = all_double && types[j] == NPY_DOUBLE;
        if (!all_double)
            continue;
        loop->function = ufunc->functions[k];
        loop->data = ufunc->data == NULL ? NULL : ufunc->data[k];
        if (loop->function == NULL) {
            PyErr_Format(PyExc_RuntimeError, "%s's float64 loop is not available", name);
            return -1;
        }
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "%s has no float64 loop", name);
    return -1;
}

/* The loop of ufunc `<module>.<name>` (numpy or one of its modules, such as
 * `numpy.linalg._umath_linalg`) whose `nin` inputs and `nout` outputs are all float64. */
static int find_loop(PyObject *module, const char *name, int nin, int nout, Loop *loop)
{
    PyObject *object = PyObject_GetAttrString(module, name);
    if (object == NULL)
        return -1;
    int status = ufunc_loop(object, name, nin, nout, loop);
    Py_DECREF(object);
    return status;
}

/* A loop to find: ufunc `name` of module `module` ("numpy", "numpy.linalg._umath_linalg"). */
typedef struct {
    const char *module;
    const char *name;
    int nin, nout;
    Loop *loop;
} LoopSpec;

/* Every loop of the table found (`find_loop`), or -1 with an error. */
static inline int find_loops(const LoopSpec *specs, int count)
{
    for (int k = 0; k < count; k++) {
        PyObject *module = PyImport_ImportModule(specs[k].module);
        int failed = module == NULL || find_loop(module, specs[k].name, specs[k].nin,
                                                 specs[k].nout, specs[k].loop) < 0;
        Py_XDECREF(module);
        if (failed)
            return -1;
    }
    return 0;
}

/* out (C-ordered m×p) = a @ b by numpy's float64 matmul loop `loop`, with the dimensions and
 * steps numpy passes: a m×n read with steps (a_m, a_n), b n×p with steps (b_n, b_p); where b
 * is a vector (`vector`, p = 1) numpy's steps along its added axis and the output's are 0. */
static inline void matmul_with(const Loop *loop, const double *a, npy_intp a_m, npy_intp a_n,
                               npy_intp m, npy_intp n, const double *b, npy_intp b_n,
                               npy_intp b_p, npy_intp p, int vector, double *out)
{
    npy_intp size = (npy_intp)sizeof(double);
    char *args[3] = {(char *)a, (char *)b, (char *)out};
    npy_intp dimensions[4] = {1, m, n, p};
    npy_intp steps[9] = {0, 0, 0, a_m, a_n, b_n, vector ? 0 : b_p, p * size,
                         vector ? 0 : size};
    loop->function(args, dimensions, steps, loop->data);
}

/* numpy's max of n >= 1 float64 values: the largest, or NaN if one is NaN. */
static inline double nan_max(const double *v, npy_intp n)
{
    double top = v[0];
    for (npy_intp i = 1; i < n && !isnan(top); i++)
        top = isnan(v[i]) || v[i] > top ? v[i] : top;
    return top;
}

/* numpy's float64 argmax of n >= 1 values: the first largest, or the first NaN. */
static inline npy_intp first_argmax(const double *v, npy_intp n)
{
    npy_intp best = 0;
    double top = v[0];
    for (npy_intp i = 1; i < n && !isnan(top); i++)
        if (!(v[i] <= top)) {
            top = v[i];
            best = i;
        }
    return best;
}

/* Every one of the n values finite. */
static inline int all_finite(const double *v, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Any NaN among the n values. */
static inline int any_nan(const double *v, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++)
        if (isnan(v[i]))
            return 1;
    return 0;
}

/* `v.sum()` of n contiguous float64 values: numpy's add loop `add` as its reduction calls it,
 * from 0.0. */
static inline double add_reduce(const Loop *add, const double *v, npy_intp n)
{
    double total = 0.0;
    char *args[3] = {(char *)&total, (char *)v, (char *)&total};
    npy_intp steps[3] = {0, sizeof(double), 0};
    add->function(args, &n, steps, add->data);
    return total;
}

/* ln |det a| of a C-ordered d×d matrix by numpy.linalg's `slogdet` loop `slogdet`, −∞ where
 * its sign is not > 0 (`glm.logdet`; `small_linalg.slogdet_stack`, then np.where). */
static inline double logdet_with(const Loop *slogdet, const double *a, npy_intp d)
{
    npy_intp size = (npy_intp)sizeof(double);
    double sign, value;
    char *args[3] = {(char *)a, (char *)&sign, (char *)&value};
    npy_intp dimensions[2] = {1, d}, steps[5] = {0, 0, 0, d * size, size};
    slogdet->function(args, dimensions, steps, slogdet->data);
    return sign > 0 ? value : -INFINITY;
}

#ifdef Py_ARRAYOBJECT_H
/* `np.einsum("ij,ij->i", a, b)`: a new (n,) array, NULL with an error (include after
 * numpy/arrayobject.h). */
static inline PyArrayObject *row_dots(PyArrayObject *a, PyArrayObject *b)
{
    PyArrayObject *ops[2] = {a, b};
    return PyArray_EinsteinSum((char *)"ij,ij->i", 2, ops, NULL, NPY_KEEPORDER,
                               NPY_SAFE_CASTING, NULL);
}
#endif

/* out[j] = f(in[j]) for j < m by a one-input loop, on contiguous float64 (in may be out). */
static inline void apply(const Loop *loop, double *in, double *out, npy_intp m)
{
    char *args[2] = {(char *)in, (char *)out};
    npy_intp dimensions[1] = {m};
    npy_intp steps[2] = {sizeof(double), sizeof(double)};
    loop->function(args, dimensions, steps, loop->data);
}

#endif
