// Package openblas reaches OpenBLAS's cblas_sgemm at run time, through
// dlopen of libopenblas.so.0, so that vkbench can show a tuned CPU sgemm
// beside vkc's matmul on the same cores where the library is installed,
// and builds and runs unchanged where it is not (Open then reports it
// missing). Nothing links against OpenBLAS at build time.
package openblas

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

// The CBLAS enumerations' values, fixed by the CBLAS standard.
enum { ob_row_major = 101, ob_no_trans = 111 };

typedef void (*ob_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
	const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

static ob_sgemm_fn ob_sgemm_ptr;

// ob_open loads the library and finds cblas_sgemm; NULL on success, else
// dlerror's message. The handle is kept for the life of the process.
static const char *ob_open(const char *name) {
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) return dlerror();
	ob_sgemm_fn fn = (ob_sgemm_fn)dlsym(lib, "cblas_sgemm");
	if (!fn) return dlerror();
	ob_sgemm_ptr = fn;
	return NULL;
}

// ob_sgemm computes C = A·B for row-major m x k and k x n matrices.
static void ob_sgemm(int m, int n, int k, const float *a, const float *b, float *c) {
	ob_sgemm_ptr(ob_row_major, ob_no_trans, ob_no_trans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Library is the shared object Open loads.
const Library = "libopenblas.so.0"

// ErrMissing wraps Open's error where the library or its cblas_sgemm
// cannot be loaded.
var ErrMissing = errors.New("openblas: not available")

var (
	once    sync.Once
	openErr error
)

// Open loads the library once per process; later calls return the first
// call's result.
func Open() error {
	once.Do(func() { openErr = load(Library) })
	return openErr
}

// load dlopens the shared object name and finds its cblas_sgemm.
func load(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if msg := C.ob_open(cname); msg != nil {
		return fmt.Errorf("%w: %s", ErrMissing, C.GoString(msg))
	}
	return nil
}

// Sgemm computes c = a·b for row-major n x n matrices with OpenBLAS's
// cblas_sgemm (its own threads, as many as it sees cores). It refuses
// slices of the wrong length, and calls before a successful Open.
func Sgemm(n int, a, b, c []float32) error {
	if err := Open(); err != nil {
		return err
	}
	if n <= 0 || n > 1<<15 || len(a) != n*n || len(b) != n*n || len(c) != n*n {
		return fmt.Errorf("openblas: Sgemm of side %d needs three slices of %d elements (got %d, %d, %d)", n, n*n, len(a), len(b), len(c))
	}
	return SgemmShape(n, n, n, a, b, c)
}

// SgemmShape computes c[m x n] = a[m x k]·b[k x n], row-major, with
// cblas_sgemm, for the shapes that are not squares (matrix-vector
// products, long K). It refuses slices of the wrong length, sizes past
// 2^15 per side, and calls before a successful Open.
func SgemmShape(m, n, k int, a, b, c []float32) error {
	if err := Open(); err != nil {
		return err
	}
	if m <= 0 || n <= 0 || k <= 0 || m > 1<<15 || n > 1<<15 || k > 1<<20 || len(a) != m*k || len(b) != k*n || len(c) != m*n {
		return fmt.Errorf("openblas: Sgemm of %d x %d x %d needs slices of %d, %d, %d elements (got %d, %d, %d)", m, n, k, m*k, k*n, m*n, len(a), len(b), len(c))
	}
	C.ob_sgemm(C.int(m), C.int(n), C.int(k), (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), (*C.float)(unsafe.Pointer(&c[0])))
	return nil
}
