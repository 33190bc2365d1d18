// SwiGLU's vectors; see fused/swiglu_avx512.h.

#include "fused/swiglu_avx512.h"

#include <cmath>

#include "common/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {

#if defined(__x86_64__)
namespace {

#define TW_AVX512F __attribute__((target("avx512f,avx512dq")))

// floor(v + 0.5) with MLX's double 0.5: the sum is taken in double.
TW_AVX512F inline __m256 floor_half(__m256 v) {
  const __m512d d = _mm512_add_pd(_mm512_cvtps_pd(v), _mm512_set1_pd(0.5));
  return _mm512_cvtpd_ps(_mm512_roundscale_pd(d, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}

// MLX's sigmoid (unary_ops.h: 1 / (1 + exp(|x|)), mirrored for x >= 0)
// with its exp (simd/math.h), 16 lanes at a time: the same operations in
// the same order, each an exactly rounded IEEE one (its std::fma calls are
// single FMAs), so every lane has the bits of the scalar code. exp's input
// is |x| here, so its branch for inputs below -88 never applies.
TW_AVX512F inline __m512 mlx_sigmoid16(__m512 x) {
  const __m512 a = _mm512_abs_ps(x);
  __m512 y = _mm512_mul_ps(a, _mm512_set1_ps(1.442695f));
  const __m512 ipart = _mm512_insertf32x8(
      _mm512_castps256_ps512(floor_half(_mm512_castps512_ps256(y))),
      floor_half(_mm512_extractf32x8_ps(y, 1)), 1);
  const __m512 fpart = _mm512_sub_ps(y, ipart);
  y = _mm512_set1_ps(1.535336188319500e-4f);
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(1.339887440266574e-3f));
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(9.618437357674640e-3f));
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(5.550332471162809e-2f));
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(2.402264791363012e-1f));
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(6.931472028550421e-1f));
  y = _mm512_fmadd_ps(y, fpart, _mm512_set1_ps(1.000000000000000f));
  const __m512i epart = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(ipart), _mm512_set1_epi32(127)), 23);
  __m512 e = _mm512_mul_ps(_mm512_castsi512_ps(epart), y);
  e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), e, a);
  e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(88.0f), _CMP_GT_OQ), e,
                           _mm512_set1_ps(INFINITY));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, e));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ),
                              _mm512_sub_ps(one, s), s);
}

TW_AVX512F int swiglu_avx512(const float* g, const float* u, float* o, int j0, int j1) {
  int j = j0;
  for (; j + 16 <= j1; j += 16) {
    const __m512 gv = _mm512_loadu_ps(g + j);
    const __m512 sv = _mm512_mul_ps(gv, mlx_sigmoid16(gv));
    _mm512_storeu_ps(o + j, _mm512_mul_ps(sv, _mm512_loadu_ps(u + j)));
  }
  return j;
}

} // namespace

int swiglu_vectors(const float* g, const float* u, float* o, int j0, int j1) {
  return have_avx512() ? swiglu_avx512(g, u, o, j0, j1) : j0;
}

#else

int swiglu_vectors(const float*, const float*, float*, int j0, int) {
  return j0;
}

#endif

} // namespace thinkwire
