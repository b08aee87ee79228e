/* _fastcall -- the plan executes' foreign calls without ctypes: each
 * function takes the C entry point's address (from ctypes, so the library
 * is the one the binding loaded) and the call's arguments as Python ints,
 * floats and None (NULL), and returns the gko_status_t as an int.  The GIL
 * is released around the call, as ctypes does.  Optional: built by make
 * (when Python.h is found) and bundled by make wheel; without it the
 * binding calls through ctypes.  CPython's stable ABI (3.10+: METH_FASTCALL). */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>

typedef int (*gemm_execute_fn)(void *plan, float alpha, const void *a, const void *b, float beta,
                               const void *c, void *d, const void *bias, void *workspace,
                               size_t workspace_bytes, void *stream);
typedef int (*conv_execute_fn)(void *plan, const void *x, const void *w, const void *bias, void *y,
                               void *workspace, size_t workspace_bytes, void *stream);
typedef int (*conv_execute_residual_fn)(void *plan, float alpha, const void *x, const void *w,
                                        const void *bias, float beta, const void *z, void *y,
                                        void *workspace, size_t workspace_bytes, void *stream);
typedef int (*spmm_execute_fn)(void *plan, float alpha, const void *b, float beta, void *c,
                               void *workspace, size_t workspace_bytes, void *stream);

/* the argument kinds: p an address (int, or None for NULL), f a float, z a size */
static int take(const char *name, const char *kinds, PyObject *const *args, Py_ssize_t n,
                void **p, double *f, size_t *z) {
  Py_ssize_t want = (Py_ssize_t)strlen(kinds);
  if (n != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, n);
    return -1;
  }
  void **first = p; /* the function's address */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = args[i];
    switch (kinds[i]) {
    case 'p':
      if (o == Py_None) {
        *p++ = NULL;
        break;
      }
      if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: argument %zd must be an address (int) or None", name,
                     i + 1);
        return -1;
      }
      *p = PyLong_AsVoidPtr(o);
      if (*p++ == NULL && PyErr_Occurred()) return -1;
      break;
    case 'f':
      *f = PyFloat_AsDouble(o);
      if (*f++ == -1.0 && PyErr_Occurred()) return -1;
      break;
    default: { /* 'z' */
      PyObject *index = PyNumber_Index(o);
      if (!index) return -1;
      *z = PyLong_AsSize_t(index);
      Py_DECREF(index);
      if (*z == (size_t)-1 && PyErr_Occurred()) return -1;
      break;
    }
    }
  }
  if (!*first) {
    PyErr_Format(PyExc_ValueError, "%s: the function address is NULL", name);
    return -1;
  }
  return 0;
}

/* gemm_execute(fn, plan, alpha, a, b, beta, c, d, bias, workspace, workspace_bytes, stream) */
static PyObject *gemm_execute(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  void *p[10];
  double f[2];
  size_t z;
  if (take("gemm_execute", "ppfppfppppzp", args, n, p, f, &z)) return NULL;
  gemm_execute_fn fn = (gemm_execute_fn)p[0];
  int s;
  Py_BEGIN_ALLOW_THREADS
  s = fn(p[1], (float)f[0], p[2], p[3], (float)f[1], p[4], p[5], p[6], p[7], z, p[8]);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(s);
}

/* conv_execute(fn, plan, x, w, bias, y, workspace, workspace_bytes, stream) */
static PyObject *conv_execute(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  void *p[8];
  size_t z;
  if (take("conv_execute", "pppppppzp", args, n, p, NULL, &z)) return NULL;
  conv_execute_fn fn = (conv_execute_fn)p[0];
  int s;
  Py_BEGIN_ALLOW_THREADS
  s = fn(p[1], p[2], p[3], p[4], p[5], p[6], z, p[7]);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(s);
}

/* conv_execute_residual(fn, plan, alpha, x, w, bias, beta, z, y, workspace,
 * workspace_bytes, stream) */
static PyObject *conv_execute_residual(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  void *p[9];
  double f[2];
  size_t z;
  if (take("conv_execute_residual", "ppfpppfpppzp", args, n, p, f, &z)) return NULL;
  conv_execute_residual_fn fn = (conv_execute_residual_fn)p[0];
  int s;
  Py_BEGIN_ALLOW_THREADS
  s = fn(p[1], (float)f[0], p[2], p[3], p[4], (float)f[1], p[5], p[6], p[7], z, p[8]);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(s);
}

/* spmm_execute(fn, plan, alpha, b, beta, c, workspace, workspace_bytes, stream) */
static PyObject *spmm_execute(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  void *p[6];
  double f[2];
  size_t z;
  if (take("spmm_execute", "ppfpfppzp", args, n, p, f, &z)) return NULL;
  spmm_execute_fn fn = (spmm_execute_fn)p[0];
  int s;
  Py_BEGIN_ALLOW_THREADS
  s = fn(p[1], (float)f[0], p[2], (float)f[1], p[3], p[4], z, p[5]);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(s);
}

#define FASTCALL(f) (PyCFunction)(void (*)(void)) f, METH_FASTCALL
static PyMethodDef methods[] = {
    {"gemm_execute", FASTCALL(gemm_execute), "gko_gemm_execute through its address"},
    {"conv_execute", FASTCALL(conv_execute), "gko_conv_execute through its address"},
    {"conv_execute_residual", FASTCALL(conv_execute_residual),
     "gko_conv_execute_residual through its address"},
    {"spmm_execute", FASTCALL(spmm_execute), "gko_spmm_execute through its address"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "gko._fastcall",
                                    "The plan executes' foreign calls without ctypes.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__fastcall(void) { return PyModule_Create(&module); }
