/*
 * The minibatch steps of one DP-SGD epoch (`dpsgd.sgd_passes`, docs/glm.md, "DP-SGD and the
 * RDP accountant") in one call: for each minibatch of the epoch's order,
 * θ ← θ − (lr0/√k)(mean of the clipped (μ(xᵀθ) − y)x + 2λθ + the step's noise row).
 * Private-GLM refits by thousands of such steps on minibatches of up to 2048 rows, and a numpy
 * call per operation cost more than their arithmetic.
 *
 * Every number is the one numpy computes, by the same code (tests/privacy/test_dpsgd.py):
 * X[idx] @ θ by numpy's float64 matmul loop with the dimensions and steps numpy passes, μ by
 * the link's ufunc loop, the clipping `clip_rows.h`'s, the column means numpy's order for a
 * C-ordered (rows, d ≥ 2) array (from 0.0, row by row, then ÷ rows), the rest single IEEE
 * operations in the order Python evaluates them (compiled with -ffp-contract=off). The noise
 * rows are the caller's draws. A step whose clipped gradients or new θ hold a NaN, or that
 * raises a floating-point exception, is not made: the caller makes it and the rest with numpy,
 * which keeps NaN's sign bits and warns or raises as its errstate says.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fenv.h>
#include <math.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "numpy/arrayobject.h"
#include "numpy/ufuncobject.h"

#ifdef __FAST_MATH__
#error "_sgd.c must be compiled without -ffast-math: its results are IEEE operations"
#endif

#include "../numpy_loops.h"
#include "clip_rows.h"

#define D_ ((npy_intp)sizeof(double))
/* the floating-point exceptions numpy warns of by default (a step raising one is left to
 * numpy, which warns or raises as the caller's errstate says; underflow, which numpy ignores
 * by default and the links' loops raise for large |xᵀθ|, is not checked) */
#define FP_EXCEPTIONS (FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID)

static Loop matmul_loop;

/* A C-contiguous aligned native array of `type` with `ndim` dims: `rows` first and, for
 * ndim 2, `cols` second (each where >= 0); -1 with a ValueError naming it. */
static int checked(PyObject *object, const char *name, int type, int ndim, npy_intp rows,
                   npy_intp cols, const char *allowed)
{
    PyArrayObject *a = (PyArrayObject *)object;
    if (PyArray_Check(object) && PyArray_TYPE(a) == type && PyArray_NDIM(a) == ndim
            && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)
            && (rows < 0 || PyArray_DIM(a, 0) == rows)
            && (ndim == 1 || cols < 0 || PyArray_DIM(a, 1) == cols))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s is not allowed; must be %s", name, allowed);
    return -1;
}

/*
 * sgd_steps(x, y, order, theta, first, stride, count, batch, noise, k, clip, two_lam, lr0,
 *           mean) → (theta, done)
 */
static PyObject *sgd_steps(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *y_obj, *order_obj, *theta_obj, *noise_obj, *mean_obj;
    Py_ssize_t first, stride, count, batch, k;
    double clip, two_lam, lr0;
    if (!PyArg_ParseTuple(args, "OOOOnnnnOndddO:sgd_steps", &x_obj, &y_obj, &order_obj,
                          &theta_obj, &first, &stride, &count, &batch, &noise_obj, &k, &clip,
                          &two_lam, &lr0, &mean_obj)
            || checked(x_obj, "x", NPY_DOUBLE, 2, -1, -1, "a C-contiguous float64 (n, d)"))
        return NULL;
    npy_intp n = PyArray_DIM((PyArrayObject *)x_obj, 0);
    npy_intp d = PyArray_DIM((PyArrayObject *)x_obj, 1);
    if (n < 1 || d < 2) {
        PyErr_Format(PyExc_ValueError, "x of shape (%zd, %zd) is not allowed; must have n >= 1 "
                     "rows and d >= 2 columns (numpy sums one column pairwise)", (Py_ssize_t)n,
                     (Py_ssize_t)d);
        return NULL;
    }
    if (checked(y_obj, "y", NPY_DOUBLE, 1, n, 0, "a C-contiguous float64 (n,)") < 0
            || checked(order_obj, "order", NPY_INTP, 1, n, 0, "a C-contiguous intp (n,)") < 0
            || checked(theta_obj, "theta", NPY_DOUBLE, 1, d, 0, "a C-contiguous float64 (d,)") < 0
            || checked(noise_obj, "noise", NPY_DOUBLE, 2, count, d,
                       "a C-contiguous float64 (count, d)") < 0)
        return NULL;
    if (first < 0 || stride < 1 || count < 0 || batch < 1 || k < 0) {
        PyErr_SetString(PyExc_ValueError, "first, stride, count, batch, k are not allowed; must "
                        "be first >= 0, stride >= 1, count >= 0, batch >= 1, k >= 0");
        return NULL;
    }
    Loop mean_loop = {NULL, NULL}; /* this call's: einsum releases the GIL to other callers */
    if (mean_obj != Py_None && ufunc_loop(mean_obj, "mean", 1, 1, &mean_loop) < 0)
        return NULL;
    const double *x = (const double *)PyArray_DATA((PyArrayObject *)x_obj);
    const double *y = (const double *)PyArray_DATA((PyArrayObject *)y_obj);
    const npy_intp *order = (const npy_intp *)PyArray_DATA((PyArrayObject *)order_obj);
    const double *noise = (const double *)PyArray_DATA((PyArrayObject *)noise_obj);
    npy_intp rows_max = batch < n ? batch : n;
    npy_intp shape[2] = {rows_max, d};
    PyArrayObject *grads = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    PyObject *theta = PyArray_NewCopy((PyArrayObject *)theta_obj, NPY_CORDER);
    double *work = PyMem_Malloc(sizeof(double) * (size_t)(rows_max * (d + 3) + 2 * d));
    PyObject *result = NULL;
    Py_ssize_t done = 0;
    if (grads == NULL || theta == NULL || work == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto finish;
    }
    double *xb = work, *yb = xb + rows_max * d, *z = yb + rows_max, *mu = z + rows_max;
    double *sums = mu + rows_max, *next = sums + d;
    double *th = (double *)PyArray_DATA((PyArrayObject *)theta);
    double *g = (double *)PyArray_DATA(grads);
    fexcept_t raised_before;
    fegetexceptflag(&raised_before, FP_EXCEPTIONS);
    for (; done < count; done++) {
        if (first >= n || done > (n - 1 - first) / stride)
            break; /* an empty minibatch: numpy's mean of nothing */
        npy_intp start = first + done * stride;
        feclearexcept(FP_EXCEPTIONS);
        npy_intp rows = n - start < batch ? n - start : batch; /* order[start:start + batch] */
        for (npy_intp i = 0; i < rows; i++) {
            npy_intp j = order[start + i];
            if (j < 0 || j >= n) {
                PyErr_Format(PyExc_ValueError, "order[%zd] = %zd is not allowed; must be in "
                             "[0, %zd)", (Py_ssize_t)(start + i), (Py_ssize_t)j, (Py_ssize_t)n);
                goto finish;
            }
            for (npy_intp b = 0; b < d; b++)
                xb[i * d + b] = x[j * d + b];
            yb[i] = y[j];
        }
        matmul_with(&matmul_loop, xb, d * D_, D_, rows, d, th, D_, 0, 1, 1, z); /* X[idx] @ θ */
        if (fetestexcept(FP_EXCEPTIONS))
            break; /* tested before the link's loop: scipy's loops clear the flags */
        if (mean_obj == Py_None)
            memcpy(mu, z, sizeof(double) * (size_t)rows);
        else
            apply(&mean_loop, z, mu, rows);
        for (npy_intp i = 0; i < rows; i++) {
            double r = mu[i] - yb[i];
            for (npy_intp b = 0; b < d; b++)
                g[i * d + b] = r * xb[i * d + b];
        }
        if (fetestexcept(FP_EXCEPTIONS))
            break;
        npy_intp step_shape[2] = {rows, d};
        PyArrayObject *step = rows == rows_max ? (PyArrayObject *)Py_NewRef(grads)
            : (PyArrayObject *)PyArray_SimpleNewFromData(2, step_shape, NPY_DOUBLE, g);
        int clipped = step == NULL ? -1 : clip_in_place(step, clip);
        Py_XDECREF((PyObject *)step);
        if (clipped < 0)
            goto finish;
        if (any_nan(g, rows * d))
            break;
        for (npy_intp b = 0; b < d; b++)
            sums[b] = 0.0;
        for (npy_intp i = 0; i < rows; i++)
            for (npy_intp b = 0; b < d; b++)
                sums[b] = sums[b] + g[i * d + b];
        double lr = lr0 / sqrt((double)(k + done + 1));
        const double *row = noise + done * d;
        for (npy_intp b = 0; b < d; b++) {
            double mean = sums[b] / (double)rows + two_lam * th[b];
            next[b] = th[b] - lr * (mean + row[b]);
        }
        if (any_nan(next, d) || fetestexcept(FP_EXCEPTIONS))
            break;
        memcpy(th, next, sizeof(double) * (size_t)d);
    }
    fesetexceptflag(&raised_before, FP_EXCEPTIONS);
    result = Py_BuildValue("(On)", theta, done);
finish:
    Py_XDECREF((PyObject *)grads);
    Py_XDECREF(theta);
    PyMem_Free(work);
    return result;
}

static PyMethodDef methods[] = {
    {"sgd_steps", sgd_steps, METH_VARARGS,
     "sgd_steps(x, y, order, theta, first, stride, count, batch, noise, k, clip, two_lam, lr0, "
     "mean) -> (theta, done): DP-SGD's steps k + 1, ..., k + count from theta, step s on the "
     "rows order[first + s*stride:][:batch] of x (n, d >= 2) and y, adding noise[s]; mean is "
     "the link's mean ufunc (None: the identity). done < count where a step starts at n or "
     "beyond, its clipped gradients or new theta hold a NaN, or it raises a floating-point "
     "exception: the caller makes it and the rest."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sgd", "DP-SGD's minibatch steps, in numpy's arithmetic.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__sgd(void)
{
    import_array();
    const LoopSpec loops[] = {{"numpy", "matmul", 2, 1, &matmul_loop}};
    return find_loops(loops, 1) < 0 ? NULL : PyModule_Create(&module);
}
