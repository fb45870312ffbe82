/*
** fj_array.h: the growth of the PyMem arrays that hold a variable number of
** things (cache entries, guard leaves and accessors, the native plan's steps
** and groups).
**
** Responsible for: making room for one more element, doubling the capacity.
** Not responsible for: what the elements are or who frees them.
*/
#ifndef FJ_ARRAY_H
#define FJ_ARRAY_H
#include <Python.h>

/*
** Room for element 'n' in the PyMem array 'arr' (n used, *cap allocated,
** each 'size' bytes): 'arr' itself when n < *cap, else 'arr' reallocated to
** twice *cap ('first' when it is 0), *cap updated.  Returns the array to
** store back, or NULL with MemoryError ('arr' is then unchanged).
*/
static inline void *fj_array_grow(void *arr, Py_ssize_t n, Py_ssize_t *cap, size_t size,
                                  Py_ssize_t first)
{
    if (n < *cap)
        return arr;
    Py_ssize_t c = *cap ? *cap * 2 : first;
    void *p = PyMem_Realloc(arr, (size_t)c * size);
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *cap = c;
    return p;
}

#endif
