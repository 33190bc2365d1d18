// The 8-bit-activation kernels; see quantized/int8.h for the arithmetic and
// why, and quantized/affine.h for the weight layout.

#include "quantized/int8.h"

#include "common/cpu.h"
#include "common/pool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire::int8 {
namespace {

// The byte order of one 32-element block for `bits`: 4-bit rows hold
// elements (2i, 2i+1) in the low and high nibble of byte i, so their
// kernels take x's even elements, then its odd ones.
inline int source_index(int bits, int j) {
  return bits == 4 ? (j < 16 ? 2 * j : 2 * (j - 16) + 1) : j;
}

// x * (127 / max|x|), rounded to nearest even (the vector conversion's
// rounding), for one block; returns the block's scale.
float quantize_block_portable(const float* x, int bits, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < 32; j++) {
    // In range for finite x; NaN (or inf, which makes id 0) lands on -127
    // as the vector path's max/min put it, not on undefined behaviour.
    float v = x[source_index(bits, j)] * id;
    if (!(v >= -127.0f)) v = -127.0f;
    if (v > 127.0f) v = 127.0f;
    q[j] = static_cast<int8_t>(std::nearbyint(v));
  }
  return d;
}

// The unpacked weight of block element j (in the kernels' order).
inline int weight(const uint8_t* block, int bits, int j) {
  if (bits == 8) return block[j];
  return j < 16 ? block[j] & 15 : block[j - 16] >> 4;
}

void rows_portable(const Product& p, int r0, int r1) {
  const int groups = p.k / p.group_size;
  const int blocks = p.k / 32;
  const size_t row_bytes = static_cast<size_t>(p.k) * p.bits / 8;
  for (int r = r0; r < r1; r++) {
    const uint8_t* w = p.w + r * row_bytes;
    const float* s = p.scales + static_cast<size_t>(r) * groups;
    const float* b = p.biases + static_cast<size_t>(r) * groups;
    for (int i = 0; i < p.m; i++) {
      const int8_t* xq = p.x.q + static_cast<size_t>(i) * p.k;
      const float* xd = p.x.d + static_cast<size_t>(i) * blocks;
      float total = 0.0f;
      float bias = 0.0f;
      for (int g = 0; g < groups; g++) {
        float acc = 0.0f;
        for (int c = g * p.group_size; c < (g + 1) * p.group_size; c += 32) {
          const uint8_t* wb = w + c * p.bits / 8;
          int32_t isum = 0;
          for (int j = 0; j < 32; j++) isum += weight(wb, p.bits, j) * xq[c + j];
          acc += xd[c / 32] * static_cast<float>(isum);
        }
        total += s[g] * acc;
        bias += b[g] * p.xsum[static_cast<size_t>(g) * p.xsum_stride + i];
      }
      p.y[static_cast<size_t>(i) * p.n + r] = total + bias;
    }
  }
}

#if defined(__x86_64__)

enum class Isa { avx2, avx_vnni, avx512_vnni };

Isa detect() {
  // Up to =avx2, no VNNI of either kind (=portable takes the portable
  // loops before asking).
  if (!cpu::allows(cpu::Cap::avx512)) return Isa::avx2;
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
    return Isa::avx512_vnni;
  }
  if (__builtin_cpu_supports("avxvnni")) return Isa::avx_vnni;
  return Isa::avx2;
}

Isa isa() {
  static const Isa i = detect();
  return i;
}

#define TW_AVX2 __attribute__((target("avx2,fma")))

// quantize_block_portable with vectors: the same products and rounding.
TW_AVX2 float quantize_block_avx2(const float* x, int bits, int8_t* q) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < 4; j++) {
    v[j] = _mm256_loadu_ps(x + 8 * j);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[j]));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float a = _mm_cvtss_f32(m);
  const float id = a != 0.0f ? 127.0f / a : 0.0f;
  const __m256 idv = _mm256_set1_ps(id);
  __m256i i[4];
  // Clamped as the portable loop clamps (max puts NaN on -127).
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (int j = 0; j < 4; j++) {
    i[j] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[j], idv), lo), hi));
  }
  // packs work per 128-bit lane: bytes come out as 0-3 8-11 16-19 24-27 |
  // 4-7 12-15 20-23 28-31 in dwords; the permute puts them in order.
  const __m256i w16a = _mm256_packs_epi32(i[0], i[1]);
  const __m256i w16b = _mm256_packs_epi32(i[2], i[3]);
  __m256i bytes = _mm256_packs_epi16(w16a, w16b);
  bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  if (bits == 4) {
    // Per lane: even elements then odd ones; then the lanes' evens together.
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    bytes = _mm256_shuffle_epi8(bytes, split);
    bytes = _mm256_permute4x64_epi64(bytes, 0xd8); // qwords 0 2 1 3
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes);
  return a / 127.0f;
}

// The sum of a block's 32 quantized values (exact in 32 bits).
TW_AVX2 int32_t block_sum_avx2(const int8_t* q) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), v);
  const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// The kernels, once per instruction set: the same source compiled under
// each target, so the AVX2 build never holds an AVX-512 instruction.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace with_avx2 {
constexpr Isa kIsa = Isa::avx2;
#include "quantized/int8_tile.inc"
} // namespace with_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,avxvnni")
namespace with_avx_vnni {
constexpr Isa kIsa = Isa::avx_vnni;
#include "quantized/int8_tile.inc"
} // namespace with_avx_vnni
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni")
namespace with_avx512_vnni {
constexpr Isa kIsa = Isa::avx512_vnni;
#include "quantized/int8_tile.inc"
} // namespace with_avx512_vnni
#pragma GCC pop_options

#endif // __x86_64__

} // namespace

void quantize_rows(const float* x, int m, int k, int bits, int8_t* q, float* d) {
  const int blocks = k / 32;
  for (int i = 0; i < m; i++) {
    for (int c = 0; c < blocks; c++) {
      const size_t at = static_cast<size_t>(i) * k + static_cast<size_t>(c) * 32;
#if defined(__x86_64__)
      if (have_avx2()) {
        d[static_cast<size_t>(i) * blocks + c] = quantize_block_avx2(x + at, bits, q + at);
        continue;
      }
#endif
      d[static_cast<size_t>(i) * blocks + c] = quantize_block_portable(x + at, bits, q + at);
    }
  }
}

bool needs_corr(int bits) {
#if defined(__x86_64__)
  return bits == 8 && have_avx2() && isa() == Isa::avx2;
#else
  (void)bits;
  return false;
#endif
}

void group_sums(const Activations& x, int m, int k, int group_size, int stride, float* sums) {
  const int blocks = k / 32;
  const int per_group = group_size / 32;
  for (int i = 0; i < m; i++) {
    for (int g = 0; g < k / group_size; g++) {
      float c = 0.0f;
      for (int b = g * per_group; b < (g + 1) * per_group; b++) {
        const int8_t* q = x.q + static_cast<size_t>(i) * k + static_cast<size_t>(b) * 32;
        int32_t sum = 0;
#if defined(__x86_64__)
        if (have_avx2()) {
          sum = block_sum_avx2(q);
        } else {
          for (int j = 0; j < 32; j++) sum += q[j];
        }
#else
        for (int j = 0; j < 32; j++) sum += q[j];
#endif
        c += x.d[static_cast<size_t>(i) * blocks + b] * static_cast<float>(sum);
      }
      sums[static_cast<size_t>(g) * stride + i] = c;
    }
  }
}

void rows(const Product& p, int r0, int r1) {
#if defined(__x86_64__)
  if (have_avx2()) {
    switch (isa()) {
      case Isa::avx512_vnni: return with_avx512_vnni::rows_isa(p, r0, r1);
      case Isa::avx_vnni: return with_avx_vnni::rows_isa(p, r0, r1);
      case Isa::avx2: return with_avx2::rows_isa(p, r0, r1);
    }
  }
#endif
  rows_portable(p, r0, r1);
}

const char* isa_name() {
#if defined(__x86_64__)
  if (have_avx2()) {
    switch (isa()) {
      case Isa::avx512_vnni: return "avx512-vnni";
      case Isa::avx_vnni: return "avx-vnni";
      case Isa::avx2: return "avx2";
    }
  }
#endif
  return "portable";
}

void product(const float* x, int m, int k, const uint8_t* w, const float* scales,
             const float* biases, int n, int group_size, int bits, float* y) {
  const int groups = k / group_size;
  const int stride = (m + 3) / 4 * 4;
  const bool corr = int8::needs_corr(bits);
  const size_t table = static_cast<size_t>(groups) * stride;
  thread_local std::vector<float> scratch;
  thread_local std::vector<int8_t> q;
  scratch.assign(table * (corr ? 2 : 1) + static_cast<size_t>(m) * (k / 32), 0.0f);
  q.resize(static_cast<size_t>(m) * k);
  float* xsum = scratch.data();
  float* corr_table = corr ? xsum + table : nullptr;
  float* d = xsum + table * (corr ? 2 : 1);
  int8::quantize_rows(x, m, k, bits, q.data(), d);
  const int8::Activations xa{q.data(), d};
  int8::group_sums(xa, m, k, group_size, stride, xsum);
  if (corr) {
    for (size_t j = 0; j < table; j++) corr_table[j] = 128.0f * xsum[j];
  }
  int8::Product p{xa, xsum, corr_table, stride, w, scales, biases, y, m, n, k, group_size, bits};
  Pool::get().run(rows_part<int8::Product, int8::rows>, &p, parts_for(n, k, bits));
}

} // namespace thinkwire::int8
