// The f32-activation kernels on AVX-512 CPUs; see quantized/affine_avx512.h for
// why they dequantize in registers. Every function holding AVX-512
// instructions carries the target attribute, and only runs after
// available() said yes.

#include "quantized/affine_avx512.h"


#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {
namespace avx512 {

#if defined(__x86_64__)

namespace {

#define TW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

// The 32 weights of one chunk as two vectors of 16 floats, scale * q +
// bias: for 4 bits the low nibbles (x's permuted elements 0..15) then the
// high ones (16..31); for 8 bits bytes 0..15 then 16..31.
template <int Bits>
TW_AVX512 __attribute__((always_inline)) inline void dequantize(const uint8_t* w, __m512 scale,
                                                                __m512 bias, __m512& lo,
                                                                __m512& hi) {
  __m128i a, b;
  if constexpr (Bits == 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    const __m128i mask = _mm_set1_epi8(0x0f);
    a = _mm_and_si128(v, mask);
    b = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
  } else {
    a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16));
  }
  lo = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(a)), scale, bias);
  hi = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)), scale, bias);
}

// W weight rows from r against R rows of x from i. Each (x row, weight
// row) pair has one accumulator that takes, chunk by chunk, the FMA of the
// low half and then of the high half: the same operations in the same
// order for every W and R, so a row's result never depends on its batch.
template <int Bits, int W, int R>
TW_AVX512 void tile(const Product& p, int r, int i) {
  const int groups = p.k / p.group_size;
  const size_t row_bytes = static_cast<size_t>(p.k) * Bits / 8;
  const uint8_t* w = p.w + r * row_bytes;
  const float* s = p.scales + static_cast<size_t>(r) * groups;
  const float* bs = p.biases + static_cast<size_t>(r) * groups;
  const float* x = p.x + static_cast<size_t>(i) * p.k;
  __m512 acc[W][R];
  #pragma GCC unroll 8
  for (int a = 0; a < W; a++) {
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) acc[a][b] = _mm512_setzero_ps();
  }
  for (int g = 0; g < groups; g++) {
    __m512 scale[W], bias[W];
    #pragma GCC unroll 8
    for (int a = 0; a < W; a++) {
      scale[a] = _mm512_set1_ps(s[a * groups + g]);
      bias[a] = _mm512_set1_ps(bs[a * groups + g]);
    }
    for (int c = g * p.group_size; c < (g + 1) * p.group_size; c += 32) {
      __m512 lo[W], hi[W];
      #pragma GCC unroll 8
      for (int a = 0; a < W; a++) {
        dequantize<Bits>(w + a * row_bytes + static_cast<size_t>(c) * Bits / 8, scale[a], bias[a],
                         lo[a], hi[a]);
      }
      #pragma GCC unroll 8
      for (int b = 0; b < R; b++) {
        const float* xb = x + static_cast<size_t>(b) * p.k + c;
        const __m512 x0 = _mm512_loadu_ps(xb);
        const __m512 x1 = _mm512_loadu_ps(xb + 16);
        #pragma GCC unroll 8
        for (int a = 0; a < W; a++) {
          acc[a][b] = _mm512_fmadd_ps(lo[a], x0, acc[a][b]);
          acc[a][b] = _mm512_fmadd_ps(hi[a], x1, acc[a][b]);
        }
      }
    }
  }
  #pragma GCC unroll 8
  for (int a = 0; a < W; a++) {
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) {
      p.y[static_cast<size_t>(i + b) * p.n + r + a] = _mm512_reduce_add_ps(acc[a][b]);
    }
  }
}

// Every row of x against W weight rows from r: x's rows in eights, then
// the rest in a four, a two and a one.
template <int Bits, int W>
TW_AVX512 void pass(const Product& p, int r) {
  int i = 0;
  for (; i + 8 <= p.m; i += 8) tile<Bits, W, 8>(p, r, i);
  if (p.m - i >= 4) {
    tile<Bits, W, 4>(p, r, i);
    i += 4;
  }
  if (p.m - i >= 2) {
    tile<Bits, W, 2>(p, r, i);
    i += 2;
  }
  if (p.m - i >= 1) tile<Bits, W, 1>(p, r, i);
}

template <int Bits>
TW_AVX512 void rows_bits(const Product& p, int r0, int r1) {
  int r = r0;
  for (; r + 2 <= r1; r += 2) pass<Bits, 2>(p, r);
  for (; r < r1; r++) pass<Bits, 1>(p, r);
}

} // namespace

void rows(const Product& p, int r0, int r1) {
  if (p.bits == 4) return rows_bits<4>(p, r0, r1);
  rows_bits<8>(p, r0, r1);
}

#else

bool available() {
  return false;
}

void rows(const Product&, int, int) {}

#endif

} // namespace avx512
} // namespace thinkwire
