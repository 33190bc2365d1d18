// thinkwire's CPU kernels for MLX's affine-quantized weights; see
// quantized/affine.h for the layout and why they exist.
//
// A row's dot product is computed per group as
//     scale * sum(q_j * x_j) + bias * sum(x_j)
// which equals the dot product with the dequantized row (scale * q + bias)
// up to float rounding, reads each packed byte once and needs one multiply
// per weight. The sums of x per group are shared by every row.


#include "quantized/affine.h"

#include "common/cpu.h"
#include "common/pool.h"
#include "quantized/affine_avx512.h"

#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire::affine {
namespace {

// ---------------------------------------------------------------- kernels

// One product's shared inputs: y = x . W^T for m rows of x.
struct Product {
  const float* x;       // [m, k]: the portable loops' rows (4 bits: permuted, see
                        // permute_for_4bit), the AVX2 kernels' blocks (interleave_rows)
  const float* xsum;    // [k / group_size, xsum_stride]: x's group sums, row i in column i
  int xsum_stride;      // m rounded up to 4 (zeros after row m - 1)
  const uint8_t* w;     // [n, k * bits / 8]
  const float* scales;  // [n, groups]
  const float* biases;  // [n, groups]
  float* y;             // [m, n]
  int m, n, k, group_size, bits;
};

} // namespace

// 4-bit rows hold elements (2i, 2i+1) in the low and high nibble of byte i.
// Reordering x per 32-element chunk to [0,2,..,14 | 16,18,..,30 | 1,3,..,15 |
// 17,..,31] lets the kernel take low and high nibbles as they come.
void permute_for_4bit(const float* x, int k, float* out) {
  for (int c = 0; c < k; c += 32) {
    for (int i = 0; i < 8; i++) {
      out[c + i] = x[c + 2 * i];
      out[c + 8 + i] = x[c + 16 + 2 * i];
      out[c + 16 + i] = x[c + 2 * i + 1];
      out[c + 24 + i] = x[c + 17 + 2 * i];
    }
  }
}

namespace {

// x for the AVX2 kernels: rows in blocks of 4 (the last block the rest), so
// that one pointer walks all the x a pass over a weight row needs. Block
// i0 of R rows holds, chunk by chunk, part J (8 elements, in the 4-bit order
// for 4 bits) of row b at i0 * k + c * R + (J * R + b) * 8 for chunk c
// (c counts elements).
void interleave_rows(const float* x, int m, int k, int bits, float* out) {
  float permuted[32];
  for (int i0 = 0; i0 < m; i0 += 4) {
    const int rows = std::min(4, m - i0);
    float* block = out + static_cast<size_t>(i0) * k;
    for (int c = 0; c < k; c += 32) {
      for (int b = 0; b < rows; b++) {
        const float* src = x + static_cast<size_t>(i0 + b) * k + c;
        if (bits == 4) {
          permute_for_4bit(src, 32, permuted);
          src = permuted;
        }
        for (int j = 0; j < 4; j++) {
          std::copy(src + 8 * j, src + 8 * j + 8,
                    block + static_cast<size_t>(c) * rows + (j * rows + b) * 8);
        }
      }
    }
  }
}

// The sum over groups of bias * (x's sum over the group), in group order.
inline float bias_term(const float* b, const float* xsum, int stride, int groups) {
  float s = 0.0f;
  for (int g = 0; g < groups; g++) s += b[g] * xsum[static_cast<size_t>(g) * stride];
  return s;
}

// Every kernel below computes each (x row, W row) pair with the same
// operations in the same order whatever m is and whichever rows share a
// pass: a row's result must not depend on its batch (batched decoding has
// to give the tokens of decoding alone).

// Scalar loops: a group of weights is unpacked once for up to 8 rows of x.
void rows_portable(const Product& p, int r0, int r1) {
  const int groups = p.k / p.group_size;
  const size_t row_bytes = static_cast<size_t>(p.k) * p.bits / 8;
  constexpr int kBlock = 8;
  float q[128]; // one group's weights, in x's element order
  float total[kBlock];
  for (int i0 = 0; i0 < p.m; i0 += kBlock) {
    const int rows = std::min(kBlock, p.m - i0);
    for (int r = r0; r < r1; r++) {
      const uint8_t* w = p.w + r * row_bytes;
      const float* s = p.scales + static_cast<size_t>(r) * groups;
      std::fill(total, total + rows, 0.0f);
      for (int g = 0; g < groups; g++) {
        const int e0 = g * p.group_size;
        if (p.bits == 8) {
          for (int j = 0; j < p.group_size; j++) q[j] = w[e0 + j];
        } else {
          // x is permuted: chunk element order 0,2,..,14,16,..,30,1,..,31.
          for (int c = 0; c < p.group_size; c += 32) {
            const uint8_t* b = w + (e0 + c) / 2;
            for (int i = 0; i < 16; i++) {
              q[c + i] = static_cast<float>(b[i] & 15);
              q[c + 16 + i] = static_cast<float>(b[i] >> 4);
            }
          }
        }
        for (int i = 0; i < rows; i++) {
          const float* x = p.x + static_cast<size_t>(i0 + i) * p.k + e0;
          float acc = 0.0f;
          if (p.bits == 8) {
            for (int j = 0; j < p.group_size; j++) acc += q[j] * x[j];
          } else {
            for (int c = 0; c < p.group_size; c += 32) {
              for (int j = c; j < c + 16; j++) acc += q[j] * x[j] + q[j + 16] * x[j + 16];
            }
          }
          total[i] += s[g] * acc;
        }
      }
      const float* b = p.biases + static_cast<size_t>(r) * groups;
      for (int i = 0; i < rows; i++) {
        p.y[static_cast<size_t>(i0 + i) * p.n + r] =
            total[i] + bias_term(b, p.xsum + i0 + i, p.xsum_stride, groups);
      }
    }
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) inline __m256 widen8(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// A 32-element chunk of a packed row; part J (0..3) is the 8 weights, as
// floats, that meet x's elements [8J, 8J+8) (x permuted for 4 bits).
template <int Bits>
struct Chunk;

template <>
struct Chunk<4> {
  __m128i lo, hi;
  Chunk() = default;
  __attribute__((target("avx2,fma"), always_inline)) explicit Chunk(const uint8_t* w) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    const __m128i mask = _mm_set1_epi8(0x0f);
    lo = _mm_and_si128(v, mask);
    hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
  }
  template <int J>
  __attribute__((target("avx2,fma"), always_inline)) __m256 part() const {
    const __m128i h = J < 2 ? lo : hi;
    return widen8(J % 2 == 0 ? h : _mm_unpackhi_epi64(h, h));
  }
};

// 8 bits: each part widens straight from memory (no shuffles to split a load).
template <>
struct Chunk<8> {
  const uint8_t* w;
  Chunk() = default;
  explicit Chunk(const uint8_t* p) : w(p) {}
  template <int J>
  __attribute__((target("avx2,fma"), always_inline)) __m256 part() const {
    return widen8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + 8 * J)));
  }
};

// acc[a][b] += part J of weight row a's chunk * x row b's elements [8J, 8J+8).
template <int Bits, int W, int R, int J>
__attribute__((target("avx2,fma"), always_inline)) inline void fma_part(
    const Chunk<Bits> (&q)[W], const float* x, __m256 (&acc)[W][R]) {
  #pragma GCC unroll 4
  for (int a = 0; a < W; a++) {
    const __m256 v = q[a].template part<J>();
    #pragma GCC unroll 4
    for (int b = 0; b < R; b++) {
      acc[a][b] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x + 8 * (J * R + b)), acc[a][b]);
    }
  }
}

// W rows of weights from r times R rows of x from i: each packed chunk is
// widened once for all R rows of x (the widening, not memory, limits these
// kernels), and W > 1 shares the loads of x between weight rows. Per pair:
// two accumulators over a group (parts 0, 2 and 1, 3 of each chunk), the
// group's sum times its scale into a running vector, then the bias term.
// 3*W*R accumulators: W*R <= 4 keeps them in the 16 ymm registers.
template <int Bits, int W, int R>
__attribute__((target("avx2,fma"))) void tile_avx2(const Product& p, int r, int i) {
  const int groups = p.k / p.group_size;
  const int chunks = p.group_size / 32;
  const size_t row_bytes = static_cast<size_t>(p.k) * Bits / 8;
  const uint8_t* w = p.w + r * row_bytes;
  const float* s = p.scales + static_cast<size_t>(r) * groups;
  const float* x = p.x + static_cast<size_t>(i) * p.k;
  const float* bias = p.biases + static_cast<size_t>(r) * groups;
  __m256 t[W][R];
  // Bias terms, lane b for x row i + b: each lane is bias_term's chain of
  // FMAs, run inside the group loop instead of after it.
  __m128 bt[W];
  #pragma GCC unroll 4
  for (int a = 0; a < W; a++) {
    bt[a] = _mm_setzero_ps();
    #pragma GCC unroll 4
    for (int b = 0; b < R; b++) t[a][b] = _mm256_setzero_ps();
  }
  for (int g = 0; g < groups; g++) {
    const __m128 xs = _mm_loadu_ps(p.xsum + static_cast<size_t>(g) * p.xsum_stride + i);
    #pragma GCC unroll 4
    for (int a = 0; a < W; a++) {
      bt[a] = _mm_fmadd_ps(_mm_set1_ps(bias[a * groups + g]), xs, bt[a]);
    }
    __m256 a0[W][R], a1[W][R];
    #pragma GCC unroll 4
    for (int a = 0; a < W; a++) {
      #pragma GCC unroll 4
      for (int b = 0; b < R; b++) a0[a][b] = a1[a][b] = _mm256_setzero_ps();
    }
    for (int c = 0; c < chunks; c++) {
      Chunk<Bits> q[W];
      #pragma GCC unroll 4
      for (int a = 0; a < W; a++) q[a] = Chunk<Bits>(w + a * row_bytes);
      fma_part<Bits, W, R, 0>(q, x, a0);
      fma_part<Bits, W, R, 1>(q, x, a1);
      fma_part<Bits, W, R, 2>(q, x, a0);
      fma_part<Bits, W, R, 3>(q, x, a1);
      w += 32 * Bits / 8;
      x += 32 * R;
    }
    #pragma GCC unroll 4
    for (int a = 0; a < W; a++) {
      const __m256 scale = _mm256_set1_ps(s[a * groups + g]);
      #pragma GCC unroll 4
      for (int b = 0; b < R; b++) {
        t[a][b] = _mm256_fmadd_ps(scale, _mm256_add_ps(a0[a][b], a1[a][b]), t[a][b]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int a = 0; a < W; a++) {
    alignas(16) float terms[4];
    _mm_store_ps(terms, bt[a]);
    #pragma GCC unroll 4
    for (int b = 0; b < R; b++) {
      p.y[static_cast<size_t>(i + b) * p.n + r + a] = hsum(t[a][b]) + terms[b];
    }
  }
}

template <int Bits>
__attribute__((target("avx2,fma"))) void rows_avx2(const Product& p, int r0, int r1) {
  if (p.m == 1) {
    // One row of x: for 4 bits two weight rows per pass share its loads,
    // 8 bits take one (both as the single-row kernels before them).
    int r = r0;
    if constexpr (Bits == 4) {
      for (; r + 2 <= r1; r += 2) tile_avx2<Bits, 2, 1>(p, r, 0);
    }
    for (; r < r1; r++) tile_avx2<Bits, 1, 1>(p, r, 0);
    return;
  }
  // Weight row by weight row, so it is read from memory once; x's rows in
  // fours (the rest in a smaller pass) stay in cache.
  for (int r = r0; r < r1; r++) {
    int i = 0;
    for (; i + 4 <= p.m; i += 4) tile_avx2<Bits, 1, 4>(p, r, i);
    switch (p.m - i) {
      case 3: tile_avx2<Bits, 1, 3>(p, r, i); break;
      case 2: tile_avx2<Bits, 1, 2>(p, r, i); break;
      case 1: tile_avx2<Bits, 1, 1>(p, r, i); break;
      default: break;
    }
  }
}

#endif

void rows(const Product& p, int r0, int r1) {
#if defined(__x86_64__)
  if (have_avx2()) {
    if (p.bits == 4) return rows_avx2<4>(p, r0, r1);
    return rows_avx2<8>(p, r0, r1);
  }
#endif
  rows_portable(p, r0, r1);
}

// x's sums per group, row i of x in column i of a [groups, stride] table.
void group_sums(const float* x, int m, int k, int group_size, int stride, float* xsum) {
  const int groups = k / group_size;
  for (int i = 0; i < m; i++) {
    const float* xi = x + static_cast<size_t>(i) * k;
    for (int g = 0; g < groups; g++) {
      float s = 0.0f;
      for (int j = 0; j < group_size; j++) s += xi[g * group_size + j];
      xsum[static_cast<size_t>(g) * stride + i] = s;
    }
  }
}

} // namespace

// y[m, n] = x[m, k] . W^T, reading the packed weights once for all m rows.
void product(const float* x, int m, int k, const uint8_t* w, const float* scales,
             const float* biases, int n, int group_size, int bits, float* y) {
  if (have_avx512()) {
    // quantized/affine_avx512.h: no group sums, x permuted for 4 bits only.
    const float* xk = x;
    thread_local std::vector<float> permuted;
    if (bits == 4) {
      permuted.resize(static_cast<size_t>(m) * k);
      for (int i = 0; i < m; i++) {
        permute_for_4bit(x + static_cast<size_t>(i) * k, k,
                         permuted.data() + static_cast<size_t>(i) * k);
      }
      xk = permuted.data();
    }
    avx512::Product p{xk, w, scales, biases, y, m, n, k, group_size, bits};
    Pool::get().run(rows_part<avx512::Product, avx512::rows>, &p, parts_for(n, k, bits));
    return;
  }
  const int groups = k / group_size;
  const int stride = (m + 3) / 4 * 4; // the AVX2 kernels load 4 rows' sums at once
#if defined(__x86_64__)
  const bool interleave = have_avx2();
#else
  const bool interleave = false;
#endif
  const bool copy_x = interleave || bits == 4;
  thread_local std::vector<float> scratch;
  scratch.assign(static_cast<size_t>(groups) * stride + (copy_x ? static_cast<size_t>(m) * k : 0),
                 0.0f);
  float* xsum = scratch.data();
  group_sums(x, m, k, group_size, stride, xsum);
  const float* xk = x;
  if (copy_x) {
    float* out = scratch.data() + static_cast<size_t>(groups) * stride;
    if (interleave) {
      interleave_rows(x, m, k, bits, out);
    } else {
      for (int i = 0; i < m; i++) {
        permute_for_4bit(x + static_cast<size_t>(i) * k, k, out + static_cast<size_t>(i) * k);
      }
    }
    xk = out;
  }
  Product p{xk, xsum, stride, w, scales, biases, y, m, n, k, group_size, bits};
  Pool::get().run(rows_part<Product, rows>, &p, parts_for(n, k, bits));
}

namespace {

// Rows [r0, r1) of W dequantized to f32, row-major, into out (row r at
// out + (r - r0) * k).
struct Dequant {
  const uint8_t* w;
  const float* scales;
  const float* biases;
  int r0, r1, k, group_size, bits;
  float* out;
};

void dequantize_portable(const Dequant& d, int r0, int r1) {
  const int groups = d.k / d.group_size;
  const size_t row_bytes = static_cast<size_t>(d.k) * d.bits / 8;
  for (int r = r0; r < r1; r++) {
    const uint8_t* wr = d.w + r * row_bytes;
    const float* s = d.scales + static_cast<size_t>(r) * groups;
    const float* b = d.biases + static_cast<size_t>(r) * groups;
    float* o = d.out + static_cast<size_t>(r - d.r0) * d.k;
    for (int g = 0; g < groups; g++) {
      for (int j = g * d.group_size; j < (g + 1) * d.group_size; j++) {
        const int q = d.bits == 8 ? wr[j] : (wr[j / 2] >> ((j & 1) * 4)) & 15;
        o[j] = s[g] * q + b[g];
      }
    }
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void dequantize_avx2(const Dequant& d, int r0, int r1) {
  const int groups = d.k / d.group_size;
  const size_t row_bytes = static_cast<size_t>(d.k) * d.bits / 8;
  const __m128i mask = _mm_set1_epi8(0x0f);
  for (int r = r0; r < r1; r++) {
    const uint8_t* w = d.w + r * row_bytes;
    const float* s = d.scales + static_cast<size_t>(r) * groups;
    const float* b = d.biases + static_cast<size_t>(r) * groups;
    float* o = d.out + static_cast<size_t>(r - d.r0) * d.k;
    for (int g = 0; g < groups; g++) {
      const __m256 sv = _mm256_set1_ps(s[g]), bv = _mm256_set1_ps(b[g]);
      for (int c = 0; c < d.group_size; c += 32) {
        __m128i q0, q1; // elements 0..15 and 16..31 of the chunk, in order
        if (d.bits == 4) {
          __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
          __m128i lo = _mm_and_si128(v, mask);
          __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
          q0 = _mm_unpacklo_epi8(lo, hi);
          q1 = _mm_unpackhi_epi8(lo, hi);
          w += 16;
        } else {
          q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
          q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16));
          w += 32;
        }
        _mm256_storeu_ps(o, _mm256_fmadd_ps(sv, widen8(q0), bv));
        _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(sv, widen8(_mm_unpackhi_epi64(q0, q0)), bv));
        _mm256_storeu_ps(o + 16, _mm256_fmadd_ps(sv, widen8(q1), bv));
        _mm256_storeu_ps(o + 24, _mm256_fmadd_ps(sv, widen8(_mm_unpackhi_epi64(q1, q1)), bv));
        o += 32;
      }
    }
  }
}
#endif

} // namespace

void dequantize_rows(const uint8_t* w, const float* scales, const float* biases, int k,
                     int group_size, int bits, int r0, int r1, float* out) {
  const Dequant d{w, scales, biases, r0, r1, k, group_size, bits, out};
#if defined(__x86_64__)
  if (have_avx2()) return dequantize_avx2(d, r0, r1);
#endif
  dequantize_portable(d, r0, r1);
}

} // namespace thinkwire::affine
