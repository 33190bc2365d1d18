// The panel kernels; see panels/int8_panels.h for the layout and why.

#include "panels/int8_panels.h"

#include "common/cpu.h"

#include "panels/amx.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire::panels {
namespace {

// 64-byte vectors per panel and block of 32 columns.
inline int vectors(int bits) {
  return bits == 4 ? 4 : 8;
}

// Byte offset of panel `panel`, block `block`, vector `v`.
inline size_t at(int panel, int blocks, int block, int bits, int v) {
  return ((static_cast<size_t>(panel) * blocks + block) * vectors(bits) + v) * 64;
}

// Weight j (0..7) of a row's 4-byte slice pair: for 4 bits, slices 0..3 are
// the low nibbles of vectors 0..3 and slices 4..7 their high nibbles; for 8
// bits, vector j. Slice j meets x's bytes [4j, 4j + 4) either way.
inline int weight(const uint8_t* block, int bits, int lane, int j, int t) {
  if (bits == 8) return block[j * 64 + lane * 4 + t];
  const uint8_t byte = block[(j % 4) * 64 + lane * 4 + t];
  return j < 4 ? byte & 15 : byte >> 4;
}

void rows_portable(const Product& p, int p0, int p1) {
  const int groups = p.k / p.group_size;
  const int blocks = p.k / 32;
  const int per = p.group_size / 32;
  for (int panel = p0; panel < p1; panel++) {
    for (int lane = 0; lane < kRows; lane++) {
      const int r = panel * kRows + lane;
      for (int i = 0; i < p.m; i++) {
        const int8_t* xq = p.x.q + static_cast<size_t>(i) * p.k;
        const float* xd = p.x.d + static_cast<size_t>(i) * blocks;
        float total = 0.0f;
        for (int g = 0; g < groups; g++) {
          float acc = 0.0f;
          for (int c = 0; c < per; c++) {
            const int blk = g * per + c;
            const uint8_t* wb = p.w + at(panel, blocks, blk, p.bits, 0);
            int32_t isum = 0;
            for (int j = 0; j < 8; j++) {
              for (int t = 0; t < 4; t++) {
                isum += weight(wb, p.bits, lane, j, t) * xq[blk * 32 + 4 * j + t];
              }
            }
            acc = std::fma(static_cast<float>(isum), xd[blk], acc);
          }
          const size_t sg = (static_cast<size_t>(panel) * groups + g) * kRows + lane;
          total = std::fma(p.scales[sg], acc, total);
          total = std::fma(p.biases[sg], p.xsum[static_cast<size_t>(g) * p.xsum_stride + i], total);
        }
        p.y[static_cast<size_t>(i) * p.n + r] = total;
      }
    }
  }
}

#if defined(__x86_64__)

#define TW_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// Slice j of a block (16 weight rows' 4 bytes each) against x's bytes
// [4j, 4j + 4) of R rows (row b at xq + b * k), into each row's sum.
template <int R>
TW_VNNI __attribute__((always_inline)) inline void dot_rows(__m512i (&isum)[R], __m512i wj,
                                                           const int8_t* xq, int k, int j) {
  #pragma GCC unroll 8
  for (int b = 0; b < R; b++) {
    int32_t four;
    std::memcpy(&four, xq + static_cast<size_t>(b) * k + 4 * j, 4);
    isum[b] = _mm512_dpbusd_epi32(isum[b], wj, _mm512_set1_epi32(four));
  }
}

// One panel against R rows of x from i0; the same operations per row as
// rows_portable, 16 rows a vector.
template <int Bits, int R>
TW_VNNI void tile(const Product& p, int panel, int i0) {
  const int groups = p.k / p.group_size;
  const int blocks = p.k / 32;
  const int per = p.group_size / 32;
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512 total[R];
  #pragma GCC unroll 8
  for (int b = 0; b < R; b++) total[b] = _mm512_setzero_ps();
  for (int g = 0; g < groups; g++) {
    __m512 acc[R];
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) acc[b] = _mm512_setzero_ps();
    for (int c = 0; c < per; c++) {
      const int blk = g * per + c;
      const uint8_t* wb = p.w + at(panel, blocks, blk, Bits, 0);
      // x's four bytes j of the block for every row, broadcast as needed;
      // the rows' integer sums are taken side by side, so no row waits on
      // its own previous dot product (a chain per row left the unit idle
      // most cycles). Integer sums: the order changes no bit.
      const int8_t* xq = p.x.q + static_cast<size_t>(i0) * p.k + blk * 32;
      __m512i isum[R];
      #pragma GCC unroll 8
      for (int b = 0; b < R; b++) isum[b] = _mm512_setzero_si512();
      if constexpr (Bits == 4) {
        #pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
          const __m512i bytes = _mm512_loadu_si512(wb + v * 64);
          dot_rows<R>(isum, _mm512_and_si512(bytes, low), xq, p.k, v);
          dot_rows<R>(isum, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low), xq, p.k, v + 4);
        }
      } else {
        #pragma GCC unroll 8
        for (int v = 0; v < 8; v++) dot_rows<R>(isum, _mm512_loadu_si512(wb + v * 64), xq, p.k, v);
      }
      #pragma GCC unroll 8
      for (int b = 0; b < R; b++) {
        const float d = p.x.d[static_cast<size_t>(i0 + b) * blocks + blk];
        acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[b]), _mm512_set1_ps(d), acc[b]);
      }
    }
    const size_t sg = (static_cast<size_t>(panel) * groups + g) * kRows;
    const __m512 scale = _mm512_loadu_ps(p.scales + sg);
    const __m512 bias = _mm512_loadu_ps(p.biases + sg);
    #pragma GCC unroll 8
    for (int b = 0; b < R; b++) {
      const float xs = p.xsum[static_cast<size_t>(g) * p.xsum_stride + i0 + b];
      total[b] = _mm512_fmadd_ps(scale, acc[b], total[b]);
      total[b] = _mm512_fmadd_ps(bias, _mm512_set1_ps(xs), total[b]);
    }
  }
  #pragma GCC unroll 8
  for (int b = 0; b < R; b++) {
    _mm512_storeu_ps(p.y + static_cast<size_t>(i0 + b) * p.n + panel * kRows, total[b]);
  }
}

#define TW_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))

// The AMX tiles rows_bits loads, two sets so that one block's product runs
// while the previous one's sums are read: 0 and 3 the int32 sums (16 rows of
// x by the panel's 16 weight rows), 1 and 4 a block of x (16 rows of 32
// bytes), 2 and 5 the block's 8 slices (one 64-byte row each, as a vector of
// the panel holds them).
amx::Config amx_config() {
  amx::Config c;
  for (int set = 0; set < 2; set++) {
    c.shape(3 * set, 16, 64);
    c.shape(3 * set + 1, 16, 32);
    c.shape(3 * set + 2, 8, 64);
  }
  return c;
}

// One block's sums into `sums` on tiles C, A, B (TDPBSUD: x's signed bytes
// by the weights' unsigned ones, 16 x 16 x 32 products). The intrinsics
// name their tiles in the instruction, so the numbers must be literals.
#define TW_BLOCK_SUMS(C, A, B, x, k, slices, sums) \
  do {                                              \
    _tile_zero(C);                                  \
    _tile_loadd(A, x, k);                           \
    _tile_loadd(B, slices, 64);                     \
    _tile_dpbsud(C, A, B);                          \
    _tile_stored(C, sums, 64);                      \
  } while (0)

// A panel's 4-bit blocks as the tiles take them: per block its 8 slices
// (0..3 the vectors' low nibbles, 4..7 their high ones), 512 bytes.
TW_AMX void unpack_slices(const Product& p, int panel, uint8_t* out) {
  const int blocks = p.k / 32;
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int blk = 0; blk < blocks; blk++) {
    const uint8_t* wb = p.w + at(panel, blocks, blk, 4, 0);
    uint8_t* o = out + static_cast<size_t>(blk) * 512;
    #pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
      const __m512i bytes = _mm512_loadu_si512(wb + v * 64);
      _mm512_storeu_si512(o + v * 64, _mm512_and_si512(bytes, low));
      _mm512_storeu_si512(o + (v + 4) * 64, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low));
    }
  }
}

// One panel against 16 rows of x from i0 on the AMX tiles; block b's
// slices at slices + b * 512. The float steps are tile()'s in tile()'s
// order, so each row is bit-identical to its VNNI result.
TW_AMX void tile_amx(const Product& p, int panel, int i0, const uint8_t* slices) {
  const int groups = p.k / p.group_size;
  const int blocks = p.k / 32;
  const int per = p.group_size / 32;
  const int8_t* xq = p.x.q + static_cast<size_t>(i0) * p.k;
  const float* xd = p.x.d + static_cast<size_t>(i0) * blocks;
  alignas(64) int32_t sums[2][16 * 16];
  __m512 total[16], acc[16];
  #pragma GCC unroll 16
  for (int b = 0; b < 16; b++) total[b] = acc[b] = _mm512_setzero_ps();
  TW_BLOCK_SUMS(0, 1, 2, xq, p.k, slices, sums[0]);
  for (int blk = 0; blk < blocks; blk++) {
    // The next block's product goes ahead of this one's float steps.
    const int next = blk + 1;
    if (next < blocks) {
      const uint8_t* ns = slices + static_cast<size_t>(next) * 512;
      if (next & 1) {
        TW_BLOCK_SUMS(3, 4, 5, xq + next * 32, p.k, ns, sums[1]);
      } else {
        TW_BLOCK_SUMS(0, 1, 2, xq + next * 32, p.k, ns, sums[0]);
      }
    }
    const int32_t* s = sums[blk & 1];
    #pragma GCC unroll 16
    for (int b = 0; b < 16; b++) {
      const __m512 d = _mm512_set1_ps(xd[static_cast<size_t>(b) * blocks + blk]);
      acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(s + 16 * b)), d, acc[b]);
    }
    if (blk % per != per - 1) continue;
    const int g = blk / per;
    const size_t sg = (static_cast<size_t>(panel) * groups + g) * kRows;
    const __m512 scale = _mm512_loadu_ps(p.scales + sg);
    const __m512 bias = _mm512_loadu_ps(p.biases + sg);
    #pragma GCC unroll 16
    for (int b = 0; b < 16; b++) {
      const float xs = p.xsum[static_cast<size_t>(g) * p.xsum_stride + i0 + b];
      total[b] = _mm512_fmadd_ps(scale, acc[b], total[b]);
      total[b] = _mm512_fmadd_ps(bias, _mm512_set1_ps(xs), total[b]);
      acc[b] = _mm512_setzero_ps();
    }
  }
  #pragma GCC unroll 16
  for (int b = 0; b < 16; b++) {
    _mm512_storeu_ps(p.y + static_cast<size_t>(i0 + b) * p.n + panel * kRows, total[b]);
  }
}

// Every row of x against panels [p0, p1): x's rows in sixteens on the AMX
// tiles where the CPU has them, then in eights, then the rest in a four, a
// two and a one.
template <int Bits>
TW_VNNI void rows_bits(const Product& p, int p0, int p1) {
  const bool tiles = p.m >= 16 && amx::available();
  thread_local std::vector<uint8_t> slices;
  if (tiles) {
    amx_config().load();
    if (Bits == 4) slices.resize(static_cast<size_t>(p.k / 32) * 512);
  }
  for (int panel = p0; panel < p1; panel++) {
    int i = 0;
    if (tiles) {
      // 8-bit panels hold their slices as the tiles take them.
      const uint8_t* sl = p.w + at(panel, p.k / 32, 0, Bits, 0);
      if (Bits == 4) {
        unpack_slices(p, panel, slices.data());
        sl = slices.data();
      }
      for (; i + 16 <= p.m; i += 16) tile_amx(p, panel, i, sl);
    }
    for (; i + 8 <= p.m; i += 8) tile<Bits, 8>(p, panel, i);
    if (p.m - i >= 4) {
      tile<Bits, 4>(p, panel, i);
      i += 4;
    }
    if (p.m - i >= 2) {
      tile<Bits, 2>(p, panel, i);
      i += 2;
    }
    if (p.m - i >= 1) tile<Bits, 1>(p, panel, i);
  }
  if (tiles) amx::release();
}

#endif

} // namespace

bool available() {
#if defined(__x86_64__)
  static const bool yes = [] {
    if (!cpu::allows(cpu::Cap::avx512)) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }();
  return yes;
#else
  return false;
#endif
}

void repack(const uint8_t* w, const float* scales, const float* biases, int n, int k,
            int group_size, int bits, uint8_t* pw, float* ps, float* pb) {
  if (n % kRows != 0 || (bits != 4 && bits != 8) || group_size <= 0 || group_size % 32 != 0 ||
      k <= 0 || k % group_size != 0) {
    throw std::invalid_argument(
        "thinkwire int8 panels: need rows in sixteens, 4 or 8 bits and groups of 32s (got " +
        std::to_string(n) + " rows, " + std::to_string(bits) + " bits, groups of " +
        std::to_string(group_size) + ", " + std::to_string(k) + " columns)");
  }
  const int groups = k / group_size;
  const int blocks = k / 32;
  const size_t row_bytes = static_cast<size_t>(k) * bits / 8;
  const int block_bytes = 32 * bits / 8;
  for (int panel = 0; panel < n / kRows; panel++) {
    for (int blk = 0; blk < blocks; blk++) {
      for (int v = 0; v < vectors(bits); v++) {
        uint8_t* dst = pw + at(panel, blocks, blk, bits, v);
        for (int lane = 0; lane < kRows; lane++) {
          const uint8_t* src = w + (static_cast<size_t>(panel) * kRows + lane) * row_bytes +
                               static_cast<size_t>(blk) * block_bytes + 4 * v;
          std::memcpy(dst + lane * 4, src, 4);
        }
      }
    }
    for (int g = 0; g < groups; g++) {
      for (int lane = 0; lane < kRows; lane++) {
        const size_t from = (static_cast<size_t>(panel) * kRows + lane) * groups + g;
        const size_t to = (static_cast<size_t>(panel) * groups + g) * kRows + lane;
        ps[to] = scales[from];
        pb[to] = biases[from];
      }
    }
  }
}

void unpack_row(const uint8_t* w, const float* scales, const float* biases, int k, int group_size,
                int bits, int r, uint8_t* row_w, float* row_scales, float* row_biases) {
  const int groups = k / group_size;
  const int blocks = k / 32;
  const int panel = r / kRows, lane = r % kRows;
  const int block_bytes = 32 * bits / 8;
  for (int blk = 0; blk < blocks; blk++) {
    for (int v = 0; v < vectors(bits); v++) {
      std::memcpy(row_w + static_cast<size_t>(blk) * block_bytes + 4 * v,
                  w + at(panel, blocks, blk, bits, v) + lane * 4, 4);
    }
  }
  for (int g = 0; g < groups; g++) {
    const size_t sg = (static_cast<size_t>(panel) * groups + g) * kRows + lane;
    row_scales[g] = scales[sg];
    row_biases[g] = biases[sg];
  }
}

void rows(const Product& p, int p0, int p1) {
#if defined(__x86_64__)
  if (available()) {
    if (p.bits == 4) return rows_bits<4>(p, p0, p1);
    return rows_bits<8>(p, p0, p1);
  }
#endif
  rows_portable(p, p0, p1);
}

} // namespace thinkwire::panels
