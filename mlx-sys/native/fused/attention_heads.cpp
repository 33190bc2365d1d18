// Attention for a decode step on the CPU; see fused/attention_heads.h.
//
// Per query head: scores for eight key rows at a time (eight vector
// accumulators over the head dimension, reduced together), a max-shifted
// softmax with a vector exp, then the value rows weighted by the
// probabilities, up to three heads sharing each loaded value vector; with
// 16-float vectors on AVX-512 CPUs when the head sizes are multiples of 16.
// Keys and values are floats or IEEE halves (a cache kept at half the
// bytes: attention over a long cache is bound by its reads), widened as
// they are loaded.

#include "fused/attention_heads.h"
#include "common/cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {
namespace {

// An IEEE half's exact value as a float.
float widen(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in a float.
    const float m = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -m : m;
  }
  uint32_t bits = sign | (exp == 0x1f ? (0xffu << 23) | (mant << 13)
                                      : ((exp + 112) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline float widen(float f) { return f; }

template <typename T>
void attend_heads_portable(const AttendHeads& a) {
  const T* keys = static_cast<const T*>(a.k);
  const T* values = static_cast<const T*>(a.v);
  for (int h = 0; h < a.heads; h++) {
    const float* q = a.q + static_cast<int64_t>(h) * a.hd;
    float* p = a.scratch + static_cast<int64_t>(h) * (a.seen + 8);
    float top = -INFINITY;
    for (int j = 0; j < a.seen; j++) {
      const T* k = keys + j * a.k_stride;
      float s = 0.0f;
      for (int d = 0; d < a.hd; d++) s += q[d] * widen(k[d]);
      p[j] = s;
      top = std::max(top, s);
    }
    float sum = 0.0f;
    for (int j = 0; j < a.seen; j++) {
      p[j] = std::exp(p[j] - top);
      sum += p[j];
    }
    float* out = a.out + h * a.out_stride;
    std::fill(out, out + a.vd, 0.0f);
    const float inv = 1.0f / sum;
    for (int j = 0; j < a.seen; j++) {
      const float w = p[j] * inv;
      const T* v = values + j * a.v_stride;
      for (int d = 0; d < a.vd; d++) out[d] += w * widen(v[d]);
    }
  }
}

#if defined(__x86_64__)

#define TW_AVX2 __attribute__((target("avx2,fma,f16c")))
// The vector loops over rows, heads and columns have constant trip counts
// and must be unrolled for their accumulators to stay in registers; the
// native files build at -O2, where GCC would otherwise keep them in memory
// (half the speed, measured).
#define TW_PRAGMA(x) _Pragma(#x)
#define TW_UNROLL(n) TW_PRAGMA(GCC unroll n)

// How many rows ahead the loops ask for a key or value row's cache lines:
// a long cache comes from memory, and the hardware prefetcher alone left a
// third of the time waiting on it (8 rows measured best of 8, 16, 32:
// 2000 positions in f16, 1.37x).
constexpr int kAhead = 8;

// Asks for `bytes` of row min(j, last) (never past the cache); the key
// loops ask for each row's part as they load the part of the row 8 before.
template <typename T>
inline void prefetch_row(const T* base, int64_t stride, int j, int last, int bytes) {
  const char* p = reinterpret_cast<const char*>(base + std::min(j, last) * stride);
  for (int b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
}

// Eight keys or values from p, widened.
TW_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
TW_AVX2 inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The sums of eight vectors, lane i holding the sum of v[i].
TW_AVX2 inline __m256 sum8(const __m256 (&v)[8]) {
  const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

TW_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// e^x for x <= 0 (scores minus their max): 2^n * e^r with n = round(x /
// ln 2), r = x - n ln 2 in two parts, e^r by a degree-6 minimax
// polynomial; below -87 (and for -inf) the result is 0.
TW_AVX2 inline __m256 exp_nonpositive(__m256 in) {
  const __m256 floor = _mm256_set1_ps(-87.0f);
  const __m256 x = _mm256_max_ps(in, floor);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)),
                       _mm256_cmp_ps(in, floor, _CMP_GE_OQ));
}

// Head h's scores q . k_j for every row j it sees, into p (padded to 8).
template <typename T>
TW_AVX2 void scores(const AttendHeads& a, const float* q, float* p) {
  const T* keys = static_cast<const T*>(a.k);
  int j = 0;
  for (; j + 8 <= a.seen; j += 8) {
    __m256 acc[8];
    TW_UNROLL(8)
    for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();
    const T* ahead = keys + std::min(j + kAhead, a.seen - 8) * a.k_stride;
    for (int d = 0; d < a.hd; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      TW_UNROLL(8)
      for (int r = 0; r < 8; r++) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + r * a.k_stride + d), _MM_HINT_T0);
        acc[r] = _mm256_fmadd_ps(qv, load8(keys + (j + r) * a.k_stride + d), acc[r]);
      }
    }
    _mm256_storeu_ps(p + j, sum8(acc));
  }
  for (; j < a.seen; j++) {
    __m256 acc = _mm256_setzero_ps();
    for (int d = 0; d < a.hd; d += 8) {
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8(keys + j * a.k_stride + d), acc);
    }
    p[j] = hsum(acc);
  }
}

// p_j = e^(p_j - max) / sum in place; the padding after `seen` becomes 0.
TW_AVX2 void softmax(float* p, int seen) {
  const int padded = (seen + 7) / 8 * 8;
  std::fill(p + seen, p + padded, -INFINITY);
  __m256 top = _mm256_set1_ps(-INFINITY);
  for (int j = 0; j < padded; j += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(p + j));
  __m128 t = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
  t = _mm_max_ps(t, _mm_movehl_ps(t, t));
  t = _mm_max_ss(t, _mm_movehdup_ps(t));
  const __m256 m = _mm256_set1_ps(_mm_cvtss_f32(t));
  __m256 sum = _mm256_setzero_ps();
  for (int j = 0; j < padded; j += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(p + j), m));
    _mm256_storeu_ps(p + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum(sum));
  for (int j = 0; j < padded; j += 8) _mm256_storeu_ps(p + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), inv));
}

// out_h = sum_j p_h[j] v_j for H heads (H <= 3) over C * 8 columns from d0.
template <typename T, int H, int C>
TW_AVX2 void weighted_columns(const AttendHeads& a, int h0, int d0) {
  const T* values = static_cast<const T*>(a.v);
  const float* p[H];
  for (int h = 0; h < H; h++) p[h] = a.scratch + static_cast<int64_t>(h0 + h) * (a.seen + 8);
  __m256 acc[H][C];
  TW_UNROLL(3)
  for (int h = 0; h < H; h++) {
    TW_UNROLL(4)
    for (int c = 0; c < C; c++) acc[h][c] = _mm256_setzero_ps();
  }
  for (int j = 0; j < a.seen; j++) {
    const T* v = values + j * a.v_stride + d0;
    prefetch_row(values + d0, a.v_stride, j + kAhead, a.seen - 1, C * 8 * sizeof(T));
    __m256 vv[C];
    TW_UNROLL(4)
    for (int c = 0; c < C; c++) vv[c] = load8(v + 8 * c);
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) {
      const __m256 w = _mm256_broadcast_ss(p[h] + j);
      TW_UNROLL(4)
      for (int c = 0; c < C; c++) acc[h][c] = _mm256_fmadd_ps(w, vv[c], acc[h][c]);
    }
  }
  for (int h = 0; h < H; h++) {
    float* out = a.out + (h0 + h) * a.out_stride + d0;
    for (int c = 0; c < C; c++) _mm256_storeu_ps(out + 8 * c, acc[h][c]);
  }
}

// Every value column for heads [h0, h0 + H): 32 at a time, then 8.
template <typename T, int H>
TW_AVX2 void weighted_values(const AttendHeads& a, int h0) {
  int d0 = 0;
  for (; d0 + 32 <= a.vd; d0 += 32) weighted_columns<T, H, 4>(a, h0, d0);
  for (; d0 < a.vd; d0 += 8) weighted_columns<T, H, 1>(a, h0, d0);
}

template <typename T>
TW_AVX2 void attend_heads_avx2(const AttendHeads& a) {
  for (int h = 0; h < a.heads; h++) {
    float* p = a.scratch + static_cast<int64_t>(h) * (a.seen + 8);
    scores<T>(a, a.q + static_cast<int64_t>(h) * a.hd, p);
    softmax(p, a.seen);
  }
  int h = 0;
  for (; h + 3 <= a.heads; h += 3) weighted_values<T, 3>(a, h);
  if (a.heads - h == 2) weighted_values<T, 2>(a, h);
  if (a.heads - h == 1) weighted_values<T, 1>(a, h);
}

// AVX2+FMA (and F16C for halves) where the cap allows AVX2 (common/cpu.h:
// =portable keeps attention on the loops above too).
bool have_avx2_fma() {
  static const bool yes = cpu::allows(cpu::Cap::avx2) && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return yes;
}

// The same steps with 16-float vectors where the head sizes allow: half the
// FMAs per score and per weighted value (THINKWIRE_KERNEL_ISA=avx2 or
// portable keeps them off).
#define TW_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma,f16c")))

TW_AVX512 inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
TW_AVX512 inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The 8-lane sums of a 16-lane vector's halves.
TW_AVX512 inline __m256 fold(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

// Scores q_h . k_j of heads [h0, h0 + H) for every row j, into their rows
// of scratch, with each key vector loaded once for all H heads; eight rows
// at a time, each row's 16-lane sums folded to 8 lanes and summed as the
// AVX2 path sums them. A head's arithmetic is the same for every H.
template <typename T, int H>
TW_AVX512 void scores512(const AttendHeads& a, int h0) {
  const T* keys = static_cast<const T*>(a.k);
  const float* q[H];
  float* p[H];
  for (int h = 0; h < H; h++) {
    q[h] = a.q + static_cast<int64_t>(h0 + h) * a.hd;
    p[h] = a.scratch + static_cast<int64_t>(h0 + h) * (a.seen + 8);
  }
  int j = 0;
  for (; j + 8 <= a.seen; j += 8) {
    __m512 acc[H][8];
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) {
      TW_UNROLL(8)
      for (int r = 0; r < 8; r++) acc[h][r] = _mm512_setzero_ps();
    }
    const T* ahead = keys + std::min(j + kAhead, a.seen - 8) * a.k_stride;
    for (int d = 0; d < a.hd; d += 16) {
      __m512 qv[H];
      TW_UNROLL(3)
      for (int h = 0; h < H; h++) qv[h] = _mm512_loadu_ps(q[h] + d);
      TW_UNROLL(8)
      for (int r = 0; r < 8; r++) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + r * a.k_stride + d), _MM_HINT_T0);
        const __m512 kv = load16(keys + (j + r) * a.k_stride + d);
        TW_UNROLL(3)
        for (int h = 0; h < H; h++) acc[h][r] = _mm512_fmadd_ps(qv[h], kv, acc[h][r]);
      }
    }
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) {
      __m256 half[8];
      TW_UNROLL(8)
      for (int r = 0; r < 8; r++) half[r] = fold(acc[h][r]);
      _mm256_storeu_ps(p[h] + j, sum8(half));
    }
  }
  for (; j < a.seen; j++) {
    __m512 acc[H];
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) acc[h] = _mm512_setzero_ps();
    for (int d = 0; d < a.hd; d += 16) {
      const __m512 kv = load16(keys + j * a.k_stride + d);
      TW_UNROLL(3)
      for (int h = 0; h < H; h++) acc[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q[h] + d), kv, acc[h]);
    }
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) p[h][j] = hsum(fold(acc[h]));
  }
}

// weighted_columns with C 16-float vectors.
template <typename T, int H, int C>
TW_AVX512 void weighted_columns512(const AttendHeads& a, int h0, int d0) {
  const T* values = static_cast<const T*>(a.v);
  const float* p[H];
  for (int h = 0; h < H; h++) p[h] = a.scratch + static_cast<int64_t>(h0 + h) * (a.seen + 8);
  __m512 acc[H][C];
  TW_UNROLL(3)
  for (int h = 0; h < H; h++) {
    TW_UNROLL(4)
    for (int c = 0; c < C; c++) acc[h][c] = _mm512_setzero_ps();
  }
  for (int j = 0; j < a.seen; j++) {
    const T* v = values + j * a.v_stride + d0;
    prefetch_row(values + d0, a.v_stride, j + kAhead, a.seen - 1, C * 16 * sizeof(T));
    __m512 vv[C];
    TW_UNROLL(4)
    for (int c = 0; c < C; c++) vv[c] = load16(v + 16 * c);
    TW_UNROLL(3)
    for (int h = 0; h < H; h++) {
      const __m512 w = _mm512_set1_ps(p[h][j]);
      TW_UNROLL(4)
      for (int c = 0; c < C; c++) acc[h][c] = _mm512_fmadd_ps(w, vv[c], acc[h][c]);
    }
  }
  for (int h = 0; h < H; h++) {
    float* out = a.out + (h0 + h) * a.out_stride + d0;
    for (int c = 0; c < C; c++) _mm512_storeu_ps(out + 16 * c, acc[h][c]);
  }
}

template <typename T, int H>
TW_AVX512 void weighted_values512(const AttendHeads& a, int h0) {
  int d0 = 0;
  for (; d0 + 64 <= a.vd; d0 += 64) weighted_columns512<T, H, 4>(a, h0, d0);
  for (; d0 < a.vd; d0 += 16) weighted_columns512<T, H, 1>(a, h0, d0);
}

template <typename T>
TW_AVX512 void attend_heads_avx512(const AttendHeads& a) {
  int h = 0;
  for (; h + 3 <= a.heads; h += 3) scores512<T, 3>(a, h);
  if (a.heads - h == 2) scores512<T, 2>(a, h);
  if (a.heads - h == 1) scores512<T, 1>(a, h);
  for (h = 0; h < a.heads; h++) softmax(a.scratch + static_cast<int64_t>(h) * (a.seen + 8), a.seen);
  h = 0;
  for (; h + 3 <= a.heads; h += 3) weighted_values512<T, 3>(a, h);
  if (a.heads - h == 2) weighted_values512<T, 2>(a, h);
  if (a.heads - h == 1) weighted_values512<T, 1>(a, h);
}


#endif

} // namespace

namespace {

template <typename T>
void attend_heads_as(const AttendHeads& a) {
#if defined(__x86_64__)
  if (a.hd % 16 == 0 && a.vd % 16 == 0 && have_avx512()) return attend_heads_avx512<T>(a);
  if (a.hd % 8 == 0 && a.vd % 8 == 0 && have_avx2_fma()) return attend_heads_avx2<T>(a);
#endif
  attend_heads_portable<T>(a);
}

} // namespace

void attend_heads(const AttendHeads& a) {
  if (a.f16) return attend_heads_as<uint16_t>(a);
  attend_heads_as<float>(a);
}

} // namespace thinkwire
