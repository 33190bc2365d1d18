// f32 x against 4- and 8-bit panels with AVX-512 FMAs; see panels/fma.h.

#include "panels/fma.h"

#include "panels/int8_panels.h"

#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire::panel_fma {

#if defined(__x86_64__)

namespace {

#define TW_FMA __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

// P panels from pn against R rows of x. A 4-bit panel block is four
// 64-byte slices; lane j of slice i holds weight row j's bytes 4i..4i+3 of
// the block, whose low nibbles are its elements 8i + 2t and high nibbles
// 8i + 2t + 1 (t the byte); an 8-bit block is eight slices, byte t of
// slice i element 4i + t. Per row and panel two accumulators (low and
// high nibbles; even and odd bytes) take a block's products, the blocks
// add up to the group's sum, then the group's float step. Four rows read
// x interleaved (interleave_fours): one pointer with constant offsets per
// block, where four row pointers plus offsets took more registers than
// there are and the spills cost ~1.4x at 8 rows (noinline keeps each
// variant's registers its own).
template <int Bits, int R, int P>
TW_FMA __attribute__((noinline)) void panels(const Product& p, int pn) {
  static_assert(R == 4 ? P == 1 : R <= 2, "fours one panel at a time, pairs and ones in twos");
  // A block of 32 columns: Bits 64-byte slices of 16 rows x 4 bytes.
  constexpr int kSlices = Bits;
  const int k = p.k, groups = k / p.group_size, per = p.group_size / 32, blocks = k / 32;
  // vpermps reads the low 4 bits of each lane: a shifted slice looks its
  // nibble up in 0..15 as floats without a mask or a conversion.
  const __m512 values = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i bytes = _mm512_set1_epi32(0xff);
  __m512 y[P][R];
  #pragma GCC unroll 4
  for (int a = 0; a < P; a++) {
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) y[a][r] = _mm512_setzero_ps();
  }
  for (int g = 0; g < groups; g++) {
    __m512 dot[P][R];
    #pragma GCC unroll 4
    for (int a = 0; a < P; a++) {
      #pragma GCC unroll 4
      for (int r = 0; r < R; r++) dot[a][r] = _mm512_setzero_ps();
    }
    for (int blk = g * per; blk < (g + 1) * per; blk++) {
      const float* fours = p.fours + static_cast<size_t>(blk) * 32 * 4; // R == 4
      __m512 acc[P][R][2];
      #pragma GCC unroll 4
      for (int a = 0; a < P; a++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[a][r][0] = acc[a][r][1] = _mm512_setzero_ps();
      }
      #pragma GCC unroll 8
      for (int i = 0; i < kSlices; i++) {
        __m512i v[P];
        #pragma GCC unroll 4
        for (int a = 0; a < P; a++) {
          v[a] = _mm512_loadu_si512(p.w + ((static_cast<size_t>(pn + a) * blocks + blk) * kSlices + i) * 64);
        }
        // 4 bits: byte t's nibbles are columns 8i + 2t and 8i + 2t + 1;
        // 8 bits: bytes t and t + 1 are columns 4i + t and 4i + t + 1.
        #pragma GCC unroll 4
        for (int t = 0; t < 4; t += Bits == 4 ? 1 : 2) {
          const int c = Bits == 4 ? 8 * i + 2 * t : 4 * i + t; // in the block
          #pragma GCC unroll 4
          for (int a = 0; a < P; a++) {
            __m512 lo, hi;
            if constexpr (Bits == 4) {
              lo = _mm512_permutexvar_ps(_mm512_srli_epi32(v[a], 8 * t), values);
              hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v[a], 8 * t + 4), values);
            } else {
              lo = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(v[a], 8 * t), bytes));
              hi = _mm512_cvtepi32_ps(t + 1 == 3 ? _mm512_srli_epi32(v[a], 24)
                                                 : _mm512_and_si512(_mm512_srli_epi32(v[a], 8 * t + 8), bytes));
            }
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
              const float* x = R == 4 ? fours + c * 4 + r
                                      : p.x + static_cast<size_t>(r) * k + blk * 32 + c;
              const int next = R == 4 ? 4 : 1;
              acc[a][r][0] = _mm512_fmadd_ps(lo, _mm512_set1_ps(x[0]), acc[a][r][0]);
              acc[a][r][1] = _mm512_fmadd_ps(hi, _mm512_set1_ps(x[next]), acc[a][r][1]);
            }
          }
        }
      }
      // A block's 16 + 16 products into the group's sum: no accumulator
      // takes more than 16 in a row (a group of 128 in one would round
      // ~4x more than the tiles do).
      #pragma GCC unroll 4
      for (int a = 0; a < P; a++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
          dot[a][r] = _mm512_add_ps(dot[a][r], _mm512_add_ps(acc[a][r][0], acc[a][r][1]));
        }
      }
    }
    #pragma GCC unroll 4
    for (int a = 0; a < P; a++) {
      const size_t sg = (static_cast<size_t>(pn + a) * groups + g) * panels::kRows;
      const __m512 scale = _mm512_loadu_ps(p.scales + sg);
      const __m512 bias = _mm512_loadu_ps(p.biases + sg);
      #pragma GCC unroll 4
      for (int r = 0; r < R; r++) {
        y[a][r] = _mm512_fmadd_ps(scale, dot[a][r], y[a][r]);
        y[a][r] = _mm512_fmadd_ps(bias, _mm512_set1_ps(p.xsum[static_cast<size_t>(g) * p.xsum_stride + r]),
                                  y[a][r]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int a = 0; a < P; a++) {
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      _mm512_storeu_ps(p.y + static_cast<size_t>(r) * p.n + (pn + a) * panels::kRows, y[a][r]);
    }
  }
}

template <int Bits, int R>
TW_FMA void rows_of(const Product& p, int p0, int p1) {
  int pn = p0;
  // Two panels at a time for one or two rows (more independent sums in
  // flight); four rows fill the registers with one.
  if constexpr (R <= 2) {
    for (; pn + 2 <= p1; pn += 2) panels<Bits, R, 2>(p, pn);
  }
  for (; pn < p1; pn++) panels<Bits, R, 1>(p, pn);
}

// Rows in fours, then a pair, then a lone one: the same operations per row
// either way.
template <int Bits>
TW_FMA void rows_bits(const Product& p, int p0, int p1) {
  int r = 0;
  auto at = [&](int row) {
    Product part = p;
    part.x = p.x + static_cast<size_t>(row) * p.k;
    part.fours = p.fours + static_cast<size_t>(row) * p.k;
    part.xsum = p.xsum + row;
    part.y = p.y + static_cast<size_t>(row) * p.n;
    return part;
  };
  for (; r + 4 <= p.m; r += 4) rows_of<Bits, 4>(at(r), p0, p1);
  if (r + 2 <= p.m) {
    rows_of<Bits, 2>(at(r), p0, p1);
    r += 2;
  }
  if (r < p.m) rows_of<Bits, 1>(at(r), p0, p1);
}

TW_FMA void sums(const float* x, int m, int k, int group_size, float* out) {
  const int groups = k / group_size;
  for (int i = 0; i < m; i++) {
    const float* xi = x + static_cast<size_t>(i) * k;
    for (int g = 0; g < groups; g++) {
      __m512 s = _mm512_setzero_ps();
      for (int c = g * group_size; c < (g + 1) * group_size; c += 16) {
        s = _mm512_add_ps(s, _mm512_loadu_ps(xi + c));
      }
      out[static_cast<size_t>(g) * m + i] = _mm512_reduce_add_ps(s);
    }
  }
}

// Four rows at a time, 16 columns at a time: a 4x4 transpose in each
// 128-bit lane leaves column 4l + j of the four rows in lane l of u[j].
TW_FMA void fours(const float* x, int m, int k, float* out) {
  for (int r0 = 0; r0 + 4 <= m; r0 += 4) {
    const float* a = x + static_cast<size_t>(r0) * k;
    float* o = out + static_cast<size_t>(r0) * k;
    int c = 0;
    for (; c + 16 <= k; c += 16) {
      const __m512 r[4] = {_mm512_loadu_ps(a + c), _mm512_loadu_ps(a + k + c),
                           _mm512_loadu_ps(a + 2 * k + c), _mm512_loadu_ps(a + 3 * k + c)};
      const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
      const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
      const __m512 u[4] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xee),
                           _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xee)};
      // Lanes back in column order: output vector l holds columns 4l..4l+3.
      const __m512 v01lo = _mm512_shuffle_f32x4(u[0], u[1], 0x44); // u0.l0 u0.l1 u1.l0 u1.l1
      const __m512 v23lo = _mm512_shuffle_f32x4(u[2], u[3], 0x44);
      const __m512 v01hi = _mm512_shuffle_f32x4(u[0], u[1], 0xee); // u0.l2 u0.l3 u1.l2 u1.l3
      const __m512 v23hi = _mm512_shuffle_f32x4(u[2], u[3], 0xee);
      float* oc = o + static_cast<size_t>(c) * 4;
      _mm512_storeu_ps(oc, _mm512_shuffle_f32x4(v01lo, v23lo, 0x88));      // l0 of u0..u3
      _mm512_storeu_ps(oc + 16, _mm512_shuffle_f32x4(v01lo, v23lo, 0xdd)); // l1
      _mm512_storeu_ps(oc + 32, _mm512_shuffle_f32x4(v01hi, v23hi, 0x88)); // l2
      _mm512_storeu_ps(oc + 48, _mm512_shuffle_f32x4(v01hi, v23hi, 0xdd)); // l3
    }
    for (; c < k; c++) {
      for (int j = 0; j < 4; j++) o[c * 4 + j] = a[static_cast<size_t>(j) * k + c];
    }
  }
}

} // namespace

void group_sums(const float* x, int m, int k, int group_size, float* out) {
  sums(x, m, k, group_size, out);
}

void interleave_fours(const float* x, int m, int k, float* out) {
  fours(x, m, k, out);
}

void rows(const Product& p, int p0, int p1) {
  if (p.bits == 8) return rows_bits<8>(p, p0, p1);
  rows_bits<4>(p, p0, p1);
}

#else

void group_sums(const float*, int, int, int, float*) {}

void interleave_fours(const float*, int, int, float*) {}

void rows(const Product&, int, int) {}

#endif

} // namespace thinkwire::panel_fma
