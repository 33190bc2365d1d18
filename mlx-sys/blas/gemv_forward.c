/* thinkwire's BLAS forwarding layer for the MLX CPU backend.
 *
 * MLX runs every f32 matmul through cblas_sgemm, including the matrix-vector
 * products that dominate decoding (M == 1). OpenBLAS before 0.3.27 (Debian
 * 12 ships 0.3.21) packs the whole weight matrix for such a call, which
 * makes it 4-7x slower than cblas_sgemv on the same data. This library sits
 * in the wheel's BLAS slots (scripts/setup-mlx), forwards single-row and
 * single-column products to sgemv, and everything else (and every LAPACK
 * symbol) to the OpenBLAS it depends on. Newer OpenBLAS does the same
 * internally (GEMM_GEMV_FORWARD). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*,
                         int, const float*, int, float, float*, int);
extern void cblas_sgemv(int order, int trans, int m, int n, float alpha,
                        const float* a, int lda, const float* x, int incx,
                        float beta, float* y, int incy);

static sgemm_fn next_sgemm(void) {
  static sgemm_fn fn = NULL;
  if (fn == NULL) {
    fn = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
  }
  return fn;
}

static void zero(float* y, int n, int inc) {
  for (int i = 0; i < n; i++) {
    y[(size_t)i * inc] = 0.0f;
  }
}

void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc) {
  if (order == ROW_MAJOR && k > 0 && (m == 1 || n == 1)) {
    int ta = trans_a != NO_TRANS, tb = trans_b != NO_TRANS;
    /* gemm with beta == 0 must not read C; sgemv may scale it instead. */
    if (m == 1) {
      /* c[1,n] = a[1,k] . op(b)[k,n]  ==  op(b)^T . a */
      if (beta == 0.0f) zero(c, n, 1);
      if (tb) /* b is [n,k] */
        cblas_sgemv(ROW_MAJOR, NO_TRANS, n, k, alpha, b, ldb, a, ta ? lda : 1,
                    beta, c, 1);
      else /* b is [k,n] */
        cblas_sgemv(ROW_MAJOR, 112, k, n, alpha, b, ldb, a, ta ? lda : 1,
                    beta, c, 1);
      return;
    }
    /* n == 1: c[m,1] = op(a)[m,k] . op(b)[k,1] */
    if (beta == 0.0f) zero(c, m, ldc);
    if (ta) /* a is [k,m] */
      cblas_sgemv(ROW_MAJOR, 112, k, m, alpha, a, lda, b, tb ? 1 : ldb, beta,
                  c, ldc);
    else /* a is [m,k] */
      cblas_sgemv(ROW_MAJOR, NO_TRANS, m, k, alpha, a, lda, b, tb ? 1 : ldb,
                  beta, c, ldc);
    return;
  }
  next_sgemm()(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
               c, ldc);
}
