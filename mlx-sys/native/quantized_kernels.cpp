// thinkwire's CPU kernels for MLX's affine-quantized weights; see
// quantized_kernels.h for the layout and why they exist.
//
// A row's dot product is computed per group as
//     scale * sum(q_j * x_j) + bias * sum(x_j)
// which equals the dot product with the dequantized row (scale * q + bias)
// up to float rounding, reads each packed byte once and needs one multiply
// per weight. The sums of x per group are shared by every row.

#include "quantized_kernels.h"

#include "kernel_pool.h"
#include "quantized_avx512.h"
#include "quantized_mxfp4.h"
#include "quantized_int8.h"
#include "panel_products.h"
#include "quantized_panels.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <dlfcn.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {
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

// Part `part` of `parts` of a product's weight rows, for the pool: split on
// multiples of 8 rows so parts do not share cache lines of y.
template <class P, void (*Rows)(const P&, int, int)>
void rows_part(const void* ctx, int part, int parts) {
  const P& p = *static_cast<const P*>(ctx);
  const int blocks = (p.n + 7) / 8;
  const int b0 = static_cast<int>(static_cast<int64_t>(blocks) * part / parts);
  const int b1 = static_cast<int>(static_cast<int64_t>(blocks) * (part + 1) / parts);
  Rows(p, std::min(b0 * 8, p.n), std::min(b1 * 8, p.n));
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

// y[m, n] = x[m, k] . W^T, reading the packed weights once for all m rows.
void product(const float* x, int m, int k, const uint8_t* w, const float* scales,
             const float* biases, int n, int group_size, int bits, float* y) {
  if (avx512::available()) {
    // quantized_avx512.h: no group sums, x permuted for 4 bits only.
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

// product() with x quantized to 8 bits (quantized_int8.h).
void product_int8(const float* x, int m, int k, const uint8_t* w, const float* scales,
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

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);

// OpenBLAS's own threads spin (yielding) for a long while after each
// multi-threaded call. Once these kernels carry the weights, BLAS only sees
// attention's small products between them, and its spinning threads would
// take the cores the kernels need. So while thinkwire's kernels are in use,
// OpenBLAS runs single-threaded, except inside the prefill products below,
// which get its full thread count back. Other BLAS libraries are left alone.
class BlasThreads {
 public:
  static BlasThreads& get() {
    static BlasThreads* b = new BlasThreads(); // never destroyed
    return *b;
  }
  // Called by every kernel entry: BLAS to one thread from now on.
  void quiet() {
    if (set_ != nullptr && !quiet_.exchange(true)) set_(1);
  }
  // Runs f with BLAS at its full thread count. Streams may prefill at
  // the same time: the count goes up with the first and down with the last.
  template <class F>
  void full(F&& f) {
    if (set_ == nullptr || full_threads_ <= 1) return f();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (active_++ == 0) set_(full_threads_);
    }
    struct Down {
      BlasThreads* b;
      ~Down() {
        std::lock_guard<std::mutex> lock(b->mutex_);
        if (--b->active_ == 0) b->set_(1);
      }
    } down{this};
    f();
  }

 private:
  BlasThreads() {
    set_ = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    full_threads_ = get != nullptr ? get() : 1;
  }
  void (*set_)(int) = nullptr;
  int full_threads_ = 1;
  std::atomic<bool> quiet_{false};
  std::mutex mutex_;
  int active_ = 0; // prefills running with the full count
};

SgemmFn blas_sgemm() {
  // The BLAS that libmlx loaded (OpenBLAS behind thinkwire's forwarding layer
  // on the CPU wheel); looked up at run time so this library links no BLAS.
  static SgemmFn fn = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  return fn;
}

// Rows [r0, r1) of W dequantized to f32, row-major, into out.
struct Dequant {
  const uint8_t* w;
  const float* scales;
  const float* biases;
  int r0, r1, k, group_size, bits;
  float* out;
  const uint8_t* e8m0 = nullptr; // MXFP4 scales instead of scales/biases
  bool panels = false;           // w, scales and biases in int8 panels
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

// Rows [a, b) of d in MLX's layout.
void dequantize_rows(const Dequant& d, int a, int b) {
#if defined(__x86_64__)
  if (have_avx2()) return dequantize_avx2(d, a, b);
#endif
  dequantize_portable(d, a, b);
}

void dequantize_part(const void* ctx, int part, int parts) {
  const Dequant& d = *static_cast<const Dequant*>(ctx);
  const int rows = d.r1 - d.r0;
  const int a = d.r0 + static_cast<int>(static_cast<int64_t>(rows) * part / parts);
  const int b = d.r0 + static_cast<int>(static_cast<int64_t>(rows) * (part + 1) / parts);
  if (d.e8m0 != nullptr) {
    return mxfp4::dequantize_rows(d.w, d.e8m0, d.k, a, b, d.out + static_cast<size_t>(a - d.r0) * d.k);
  }
  if (d.panels) {
    // Each row back in MLX's layout first, then as below.
    const int groups = d.k / d.group_size;
    thread_local std::vector<uint8_t> row_w;
    thread_local std::vector<float> row_sb;
    row_w.resize(static_cast<size_t>(d.k) * d.bits / 8);
    row_sb.resize(2 * static_cast<size_t>(groups));
    for (int r = a; r < b; r++) {
      panels::unpack_row(d.w, d.scales, d.biases, d.k, d.group_size, d.bits, r, row_w.data(),
                         row_sb.data(), row_sb.data() + groups);
      const Dequant one{row_w.data(), row_sb.data(), row_sb.data() + groups, 0, 1, d.k,
                        d.group_size, d.bits, d.out + static_cast<size_t>(r - d.r0) * d.k};
      dequantize_rows(one, 0, 1);
    }
    return;
  }
  dequantize_rows(d, a, b);
}

// Prefill: dequantize a tile of rows (on every thread) and let BLAS
// multiply it; the numbers are those of the dequantized f32 weights. A tile
// is at most ~8 MB, so most matrices of small models take one. `d` names
// the weights; its rows and buffer are set here.
void blas_tiles(SgemmFn sgemm, const float* x, int m, int k, int n, float* y, Dequant d) {
  const int tile_rows = std::max(64, static_cast<int>((8u << 20) / (sizeof(float) * k)));
  thread_local std::vector<float> tile;
  tile.resize(static_cast<size_t>(std::min(tile_rows, n)) * k);
  d.out = tile.data();
  for (int r0 = 0; r0 < n; r0 += tile_rows) {
    const int r1 = std::min(n, r0 + tile_rows);
    d.r0 = r0;
    d.r1 = r1;
    Pool::get().run(dequantize_part, &d, Pool::get().size());
    Pool::get().nap();
    // y[:, r0:r1] = x . tile^T
    BlasThreads::get().full(
        [&] { sgemm(101, 111, 112, m, r1 - r0, k, 1.0f, x, k, tile.data(), k, 0.0f, y + r0, n); });
  }
}

// y[m, n] = x[m, k] . W^T for MXFP4 W, reading it once for all m rows.
void mxfp4_product(const float* x, int m, int k, const uint8_t* w, const uint8_t* scales, int n,
                   float* y) {
  thread_local std::vector<float> permuted;
  permuted.resize(static_cast<size_t>(m) * k);
  for (int i = 0; i < m; i++) {
    permute_for_4bit(x + static_cast<size_t>(i) * k, k, permuted.data() + static_cast<size_t>(i) * k);
  }
  mxfp4::Product p{permuted.data(), w, scales, y, m, n, k};
  Pool::get().run(rows_part<mxfp4::Product, mxfp4::rows>, &p, parts_for(n, k, 4));
}

} // namespace

#if defined(__x86_64__)
bool have_avx2() {
  static const bool yes = [] {
    const char* isa = std::getenv("THINKWIRE_KERNEL_ISA");
    if (isa != nullptr && std::string(isa) == "portable") return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
}
#endif

bool quantized_supported(int group_size, int bits) {
  return (bits == 4 || bits == 8) && (group_size == 32 || group_size == 64 || group_size == 128);
}

int kernel_threads() {
  return Pool::get().size();
}

void parallel_parts(void (*fn)(const void* ctx, int part, int parts), const void* ctx, int parts) {
  Pool::get().run(fn, ctx, std::max(1, std::min(parts, Pool::get().size())));
}

const char* int8_isa() {
  return int8::isa_name();
}

void quantized_matmul_f32(const float* x, int m, int k, const uint8_t* w, const float* scales,
                          const float* biases, int n, int group_size, int bits, float* y,
                          QuantizedPath path, Activations activations) {
  if (!quantized_supported(group_size, bits)) {
    throw std::invalid_argument("thinkwire quantized matmul: no kernel for " +
                                std::to_string(bits) + "-bit weights in groups of " +
                                std::to_string(group_size));
  }
  if (k <= 0 || k % group_size != 0) {
    throw std::invalid_argument("thinkwire quantized matmul: input size " + std::to_string(k) +
                                " is not a multiple of the group size " +
                                std::to_string(group_size));
  }
  BlasThreads::get().quiet();
  kernels_in_use.store(true, std::memory_order_relaxed);
  const auto kernels = activations == Activations::int8_panels ? product_panels
                       : activations == Activations::int8     ? product_int8
                       : activations == Activations::f32_tiles ? product_tiles
                                                              : product;
  const bool panels = activations == Activations::int8_panels ||
                      activations == Activations::f32_tiles;
  if (path == QuantizedPath::row_by_row) {
    for (int i = 0; i < m; i++) {
      kernels(x + static_cast<size_t>(i) * k, 1, k, w, scales, biases, n, group_size, bits,
              y + static_cast<size_t>(i) * n);
    }
    return;
  }
  SgemmFn sgemm = nullptr;
  if (path == QuantizedPath::blas ||
      (path == QuantizedPath::automatic && m > kMaxKernelRows && !panels)) {
    sgemm = blas_sgemm();
    if (sgemm == nullptr && path == QuantizedPath::blas) {
      throw std::runtime_error("thinkwire quantized matmul: no cblas_sgemm in this process");
    }
  }
  if (sgemm == nullptr) {
    // Decode steps, batched or not (and a BLAS-less process): one pass over
    // the packed weights for all rows of x.
    kernels(x, m, k, w, scales, biases, n, group_size, bits, y);
    return;
  }
  Dequant d{w, scales, biases, 0, 0, k, group_size, bits, nullptr};
  d.panels = panels;
  blas_tiles(sgemm, x, m, k, n, y, d);
}

void mxfp4_matmul_f32(const float* x, int m, int k, const uint8_t* w, const uint8_t* scales, int n,
                      float* y, QuantizedPath path) {
  if (k <= 0 || k % mxfp4::kBlock != 0) {
    throw std::invalid_argument("thinkwire MXFP4 matmul: input size " + std::to_string(k) +
                                " is not a multiple of 32");
  }
  BlasThreads::get().quiet();
  kernels_in_use.store(true, std::memory_order_relaxed);
  if (path == QuantizedPath::row_by_row) {
    for (int i = 0; i < m; i++) {
      mxfp4_product(x + static_cast<size_t>(i) * k, 1, k, w, scales, n, y + static_cast<size_t>(i) * n);
    }
    return;
  }
  SgemmFn sgemm = nullptr;
  if (path == QuantizedPath::blas || (path == QuantizedPath::automatic && m > kMaxKernelRows)) {
    sgemm = blas_sgemm();
    if (sgemm == nullptr && path == QuantizedPath::blas) {
      throw std::runtime_error("thinkwire MXFP4 matmul: no cblas_sgemm in this process");
    }
  }
  if (sgemm == nullptr) return mxfp4_product(x, m, k, w, scales, n, y);
  Dequant d{w, nullptr, nullptr, 0, 0, k, mxfp4::kBlock, 4, nullptr};
  d.e8m0 = scales;
  blas_tiles(sgemm, x, m, k, n, y, d);
}

} // namespace thinkwire
