// thinkwire's CPU kernels for MXFP4 weights; see mxfp4/mxfp4.h for the
// format and why they look values up instead of converting them.

#include "mxfp4/mxfp4.h"

#include "common/cpu.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {
namespace mxfp4 {

namespace {

// E2M1 values by nibble: bit 3 is the sign.
constexpr float kValues[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// Scalar loops: per pair and block, the 16 (low, high) nibble pairs of the
// block in byte order, then the block's sum times its scale.
void rows_portable(const Product& p, int r0, int r1) {
  const int blocks = p.k / kBlock;
  const size_t row_bytes = static_cast<size_t>(p.k) / 2;
  for (int r = r0; r < r1; r++) {
    const uint8_t* w = p.w + r * row_bytes;
    const uint8_t* e = p.scales + static_cast<size_t>(r) * blocks;
    for (int i = 0; i < p.m; i++) {
      const float* x = p.x + static_cast<size_t>(i) * p.k;
      float total = 0.0f;
      for (int g = 0; g < blocks; g++) {
        const uint8_t* b = w + g * 16;
        const float* xg = x + g * kBlock;
        float acc = 0.0f;
        for (int j = 0; j < 16; j++) {
          acc += kValues[b[j] & 15] * xg[j] + kValues[b[j] >> 4] * xg[16 + j];
        }
        total += scale_of(e[g]) * acc;
      }
      p.y[static_cast<size_t>(i) * p.n + r] = total;
    }
  }
}

void dequantize_portable(const uint8_t* w, const uint8_t* scales, int k, int r0, int r1,
                         float* out) {
  const int blocks = k / kBlock;
  for (int r = r0; r < r1; r++) {
    const uint8_t* wr = w + static_cast<size_t>(r) * (k / 2);
    const uint8_t* e = scales + static_cast<size_t>(r) * blocks;
    float* o = out + static_cast<size_t>(r - r0) * k;
    for (int j = 0; j < k; j++) {
      o[j] = kValues[(wr[j / 2] >> ((j & 1) * 4)) & 15] * scale_of(e[j / kBlock]);
    }
  }
}

#if defined(__x86_64__)

#define TW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define TW_AVX2 __attribute__((target("avx2,fma")))

// ------------------------------------------------------------------ AVX-512

// The scales of n blocks as floats (what scale_of gives), 16 at a time: a
// block's scale is then one broadcast from memory, off the shuffle port the
// table lookups need.
TW_AVX512 inline void scales512(const uint8_t* e, int n, float* out) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(e + i)));
    __m512i bits = _mm512_slli_epi32(v, 23);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(v, _mm512_setzero_si512()),
                                 _mm512_set1_epi32(0x00400000));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(v, _mm512_set1_epi32(255)),
                                 _mm512_set1_epi32(0x7fc00000));
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(bits));
  }
  for (; i < n; i++) out[i] = scale_of(e[i]);
}

// W weight rows from r against R rows of x from i: per block, each weight
// row's table is scaled once, and 16 weights are one permute of it (the
// permute reads only an index's low 4 bits, so a byte's low nibble needs no
// mask). One accumulator per pair, low half then high half per block.
template <int W, int R>
TW_AVX512 void tile512(const Product& p, int r, int i) {
  const int blocks = p.k / kBlock;
  const size_t row_bytes = static_cast<size_t>(p.k) / 2;
  const uint8_t* w = p.w + r * row_bytes;
  const uint8_t* e = p.scales + static_cast<size_t>(r) * blocks;
  const float* x = p.x + static_cast<size_t>(i) * p.k;
  const __m512 values = _mm512_loadu_ps(kValues);
  __m512 acc[W][R];
  #pragma GCC unroll 8
  for (int a = 0; a < W; a++) {
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) acc[a][b] = _mm512_setzero_ps();
  }
  constexpr int kSpan = 64; // blocks whose scales are converted at once
  alignas(64) float sc[W][kSpan];
  for (int g = 0; g < blocks; g++) {
    if (g % kSpan == 0) {
      #pragma GCC unroll 8
      for (int a = 0; a < W; a++) {
        scales512(e + a * blocks + g, blocks - g < kSpan ? blocks - g : kSpan, sc[a]);
      }
    }
    __m512 lo[W], hi[W];
    #pragma GCC unroll 8
    for (int a = 0; a < W; a++) {
      const __m512 table = _mm512_mul_ps(values, _mm512_set1_ps(sc[a][g % kSpan]));
      const __m512i q = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + a * row_bytes + g * 16)));
      lo[a] = _mm512_permutexvar_ps(q, table);
      hi[a] = _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table);
    }
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) {
      const float* xb = x + static_cast<size_t>(b) * p.k + g * kBlock;
      const __m512 x0 = _mm512_loadu_ps(xb);
      const __m512 x1 = _mm512_loadu_ps(xb + 16);
      #pragma GCC unroll 8
      for (int a = 0; a < W; a++) {
        acc[a][b] = _mm512_fmadd_ps(lo[a], x0, acc[a][b]);
        acc[a][b] = _mm512_fmadd_ps(hi[a], x1, acc[a][b]);
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

// Every row of x against W weight rows from r: x's rows in eights, then a
// four, a two and a one.
template <int W>
TW_AVX512 void pass512(const Product& p, int r) {
  int i = 0;
  for (; i + 8 <= p.m; i += 8) tile512<W, 8>(p, r, i);
  if (p.m - i >= 4) {
    tile512<W, 4>(p, r, i);
    i += 4;
  }
  if (p.m - i >= 2) {
    tile512<W, 2>(p, r, i);
    i += 2;
  }
  if (p.m - i >= 1) tile512<W, 1>(p, r, i);
}

TW_AVX512 void rows_avx512(const Product& p, int r0, int r1) {
  int r = r0;
  for (; r + 2 <= r1; r += 2) pass512<2>(p, r);
  for (; r < r1; r++) pass512<1>(p, r);
}

TW_AVX512 void dequantize_avx512(const uint8_t* w, const uint8_t* scales, int k, int r0, int r1,
                                 float* out) {
  const int blocks = k / kBlock;
  const __m512 values = _mm512_loadu_ps(kValues);
  const __m128i mask = _mm_set1_epi8(0x0f);
  for (int r = r0; r < r1; r++) {
    const uint8_t* wr = w + static_cast<size_t>(r) * (k / 2);
    const uint8_t* e = scales + static_cast<size_t>(r) * blocks;
    float* o = out + static_cast<size_t>(r - r0) * k;
    for (int g = 0; g < blocks; g++) {
      const __m512 table = _mm512_mul_ps(values, _mm512_set1_ps(scale_of(e[g])));
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + g * 16));
      const __m128i lo = _mm_and_si128(v, mask);
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
      // Elements 0..15 and 16..31 in order: low and high nibbles interleaved.
      _mm512_storeu_ps(o + g * kBlock,
                       _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)), table));
      _mm512_storeu_ps(o + g * kBlock + 16,
                       _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi)), table));
    }
  }
}

// --------------------------------------------------------------------- AVX2

// The E2M1 values doubled, as bytes: a shuffle looks up 16 nibbles at once,
// and the block's scale is halved to match.
TW_AVX2 inline __m128i doubled_values() {
  return _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

TW_AVX2 inline __m256 widen8s(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

TW_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One weight row against R rows of x from i. Per pair and block: two
// accumulators (x's elements 0..7 and 16..23, then 8..15 and 24..31), their
// sum times the halved scale into the pair's running vector.
template <int R>
TW_AVX2 void tile256(const Product& p, int r, int i) {
  const int blocks = p.k / kBlock;
  const uint8_t* w = p.w + r * (static_cast<size_t>(p.k) / 2);
  const uint8_t* e = p.scales + static_cast<size_t>(r) * blocks;
  const float* x = p.x + static_cast<size_t>(i) * p.k;
  const __m128i table = doubled_values();
  const __m128i mask = _mm_set1_epi8(0x0f);
  __m256 t[R];
  #pragma GCC unroll 4
  for (int b = 0; b < R; b++) t[b] = _mm256_setzero_ps();
  for (int g = 0; g < blocks; g++) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + g * 16));
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(v, mask));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), mask));
    const __m256 q0 = widen8s(lo), q1 = widen8s(_mm_unpackhi_epi64(lo, lo));
    const __m256 q2 = widen8s(hi), q3 = widen8s(_mm_unpackhi_epi64(hi, hi));
    const __m256 half = _mm256_set1_ps(0.5f * scale_of(e[g]));
    #pragma GCC unroll 4
    for (int b = 0; b < R; b++) {
      const float* xb = x + static_cast<size_t>(b) * p.k + g * kBlock;
      __m256 a0 = _mm256_mul_ps(q0, _mm256_loadu_ps(xb));
      __m256 a1 = _mm256_mul_ps(q1, _mm256_loadu_ps(xb + 8));
      a0 = _mm256_fmadd_ps(q2, _mm256_loadu_ps(xb + 16), a0);
      a1 = _mm256_fmadd_ps(q3, _mm256_loadu_ps(xb + 24), a1);
      t[b] = _mm256_fmadd_ps(half, _mm256_add_ps(a0, a1), t[b]);
    }
  }
  #pragma GCC unroll 4
  for (int b = 0; b < R; b++) p.y[static_cast<size_t>(i + b) * p.n + r] = hsum256(t[b]);
}

TW_AVX2 void rows_avx2(const Product& p, int r0, int r1) {
  for (int r = r0; r < r1; r++) {
    int i = 0;
    for (; i + 4 <= p.m; i += 4) tile256<4>(p, r, i);
    switch (p.m - i) {
      case 3: tile256<3>(p, r, i); break;
      case 2: tile256<2>(p, r, i); break;
      case 1: tile256<1>(p, r, i); break;
      default: break;
    }
  }
}

#endif

} // namespace

float scale_of(uint8_t e) {
  uint32_t bits;
  if (e == 0) {
    bits = 0x00400000u; // 2^-127, subnormal
  } else if (e == 255) {
    bits = 0x7fc00000u; // NaN
  } else {
    bits = static_cast<uint32_t>(e) << 23;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void rows(const Product& p, int r0, int r1) {
#if defined(__x86_64__)
  if (have_avx512()) return rows_avx512(p, r0, r1);
  if (have_avx2()) return rows_avx2(p, r0, r1);
#endif
  rows_portable(p, r0, r1);
}

void dequantize_rows(const uint8_t* w, const uint8_t* scales, int k, int r0, int r1, float* out) {
#if defined(__x86_64__)
  if (have_avx512()) return dequantize_avx512(w, scales, k, r0, r1, out);
#endif
  dequantize_portable(w, scales, k, r0, r1, out);
}

} // namespace mxfp4
} // namespace thinkwire
