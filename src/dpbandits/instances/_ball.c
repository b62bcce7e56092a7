/*
 * The arm draws of the synthetic GLM instance (docs/glm.md, "Instance generator"): for every
 * arm, d normals N(0, 1) and then one uniform U(0, 1) from a numpy Generator, in that
 * interleaved order, and the radius U^(1/d).
 *
 * The values are those of `g.normal(0.0, 1.0, size=d)` and `g.uniform(0.0, 1.0) ** (1/d)`
 * called once per arm: the same numpy distribution functions (libnpyrandom, linked from the
 * numpy this package is built against) on the same BitGenerator, and C's pow as Python's float
 * power uses.  The caller passes `rng.bit_generator.capsule` and holds `rng.bit_generator.lock`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "numpy/random/distributions.h"

static PyObject *ball_draws(PyObject *self, PyObject *args)
{
    PyObject *capsule, *normals_obj, *radii_obj;
    double inv_d;
    if (!PyArg_ParseTuple(args, "OOOd:ball_draws", &capsule, &normals_obj, &radii_obj, &inv_d))
        return NULL;
    if (!PyCapsule_IsValid(capsule, "BitGenerator")) {
        PyErr_SetString(PyExc_TypeError,
                        "expected rng.bit_generator.capsule (a PyCapsule named 'BitGenerator')");
        return NULL;
    }
    bitgen_t *bg = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    Py_buffer normals, radii;
    if (PyObject_GetBuffer(normals_obj, &normals, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(radii_obj, &radii, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&normals);
        return NULL;
    }
    Py_ssize_t arms = radii.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t total = normals.len / (Py_ssize_t)sizeof(double);
    if (arms <= 0 || total % arms != 0) {
        PyBuffer_Release(&normals);
        PyBuffer_Release(&radii);
        PyErr_SetString(PyExc_ValueError, "normals must hold d float64 values per radius");
        return NULL;
    }
    Py_ssize_t d = total / arms;
    double *v = (double *)normals.buf, *rad = (double *)radii.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < arms; i++) {
        for (Py_ssize_t j = 0; j < d; j++)
            v[i * d + j] = random_normal(bg, 0.0, 1.0);
        rad[i] = pow(random_uniform(bg, 0.0, 1.0), inv_d);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&normals);
    PyBuffer_Release(&radii);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ball_draws", ball_draws, METH_VARARGS,
     "ball_draws(capsule, normals, radii, inv_d): fill float64 `normals` (arms x d) and "
     "`radii` (arms) with each arm's d normals and uniform**inv_d, drawn in that order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ball", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ball(void) { return PyModule_Create(&module); }
