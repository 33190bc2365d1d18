// f32 activations against 4-bit panels on AMX-BF16 tiles; see
// panels/bf16_tiles.h for the arithmetic and why.

#include "panels/bf16_tiles.h"

#include "panels/amx.h"
#include "panels/int8_panels.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace thinkwire::tiles {

int tile_rows(int m) {
  // As few tiles as 16 rows allow, as even as they can be (a product costs
  // less the fewer its rows: m = 8 takes two of 12, not 16 and 8 of zeros).
  const int stacked = 3 * m, tiles = (stacked + 15) / 16;
  return tiles == 0 ? 0 : (stacked + tiles - 1) / tiles;
}

int padded_rows(int m) {
  const int r = tile_rows(m);
  return r == 0 ? 0 : (3 * m + r - 1) / r * r;
}

#if defined(__x86_64__)

namespace {

#define TW_TILES __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

bool cpu_has_bf16_tiles() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool amx_bf16 = (d >> 22) & 1, avx512bw = (b >> 30) & 1;
  __cpuid_count(7, 1, a, b, c, d);
  const bool avx512_bf16 = (a >> 5) & 1;
  return amx_bf16 && avx512bw && avx512_bf16;
}

// The bits of a bf16 as the low half of a float's.
TW_TILES inline __m512 widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

TW_TILES inline __m256i to_bf16(__m512 v) {
  return (__m256i)_mm512_cvtneps_pbh(v);
}

// Rows [i0, i1): each 16 values of a block reordered as the panels pair
// them ([0, 4, 2, 6, 1, 5, 3, 7] per eight), split hi, mid, lo; then the
// group sums, 16 lanes at a time and the lanes in a fixed tree.
TW_TILES void prepare_rows(const float* x, const Prepared& out, int i0, int i1) {
  const __m512i order = _mm512_setr_epi32(0, 4, 2, 6, 1, 5, 3, 7, 8, 12, 10, 14, 9, 13, 11, 15);
  const int k = out.k, groups = k / out.group_size;
  for (int i = i0; i < i1; i++) {
    const float* xi = x + static_cast<size_t>(i) * k;
    uint16_t* parts[3];
    for (int p = 0; p < 3; p++) parts[p] = out.parts + (static_cast<size_t>(p) * out.m + i) * k;
    for (int c = 0; c < k; c += 16) {
      const __m512 v = _mm512_permutexvar_ps(order, _mm512_loadu_ps(xi + c));
      const __m256i hi = to_bf16(v);
      const __m512 r1 = _mm512_sub_ps(v, widen(hi));
      const __m256i mid = to_bf16(r1);
      const __m256i lo = to_bf16(_mm512_sub_ps(r1, widen(mid)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(parts[0] + c), hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(parts[1] + c), mid);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(parts[2] + c), lo);
    }
    for (int g = 0; g < groups; g++) {
      __m512 s = _mm512_setzero_ps();
      for (int c = g * out.group_size; c < (g + 1) * out.group_size; c += 16) {
        s = _mm512_add_ps(s, _mm512_loadu_ps(xi + c));
      }
      out.sums[static_cast<size_t>(g) * out.m + i] = _mm512_reduce_add_ps(s);
    }
  }
}

// A panel's 4-bit blocks as bf16 tiles: per block 16 rows of 16 pairs, row
// 4v + s from slice vector v (panels/int8_panels.h), each lane's pair two of
// its nibbles: s = 0 the low nibbles of bytes 0 and 2, 1 of bytes 1 and 3,
// 2 and 3 the high nibbles of the same. A vpermw looks each nibble up in a
// table of bf16(0..15) (twice over: it reads 5 bits of the index).
TW_TILES void unpack_panel(const Product& p, int panel, uint16_t* out) {
  alignas(64) uint16_t table[32];
  for (int e = 0; e < 32; e++) {
    const float f = static_cast<float>(e & 15);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    table[e] = static_cast<uint16_t>(bits >> 16);
  }
  const __m512i t = _mm512_load_si512(table);
  const int blocks = p.x.k / 32;
  for (int blk = 0; blk < blocks; blk++) {
    const uint8_t* wb = p.w + (static_cast<size_t>(panel) * blocks + blk) * 4 * 64;
    uint16_t* o = out + static_cast<size_t>(blk) * 512;
    #pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
      const __m512i w = _mm512_loadu_si512(wb + v * 64);
      _mm512_store_si512(o + (4 * v + 0) * 32, _mm512_permutexvar_epi16(w, t));
      _mm512_store_si512(o + (4 * v + 1) * 32, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 8), t));
      _mm512_store_si512(o + (4 * v + 2) * 32, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 4), t));
      _mm512_store_si512(o + (4 * v + 3) * 32, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 12), t));
    }
  }
}

// Two panels (a, b) and two groups of stacked rows (0, 1) at a time, so
// four products per block are independent of each other (a product's
// latency is several times its issue interval): tiles 0..3 the sums (a0,
// b0, a1, b1; rows by the panel's 16 weight rows, f32), 4 and 5 a block of
// each group of rows (32 bf16 each), 6 and 7 the block's weights of each
// panel (16 rows of 16 pairs).
amx::Config config(int rows) {
  amx::Config c;
  for (int t = 0; t < 6; t++) c.shape(t, rows, 64);
  c.shape(6, 16, 64);
  c.shape(7, 16, 64);
  return c;
}

// Where one pass of a group leaves its sums: per panel, per stacked row,
// 16 floats.
struct Pass {
  const uint16_t* x;  // stacked rows, row r at x + r * k
  const uint16_t* b[2];  // the panels' unpacked blocks (b[1] null: one panel)
  float* sums[2];
  int k, per, rows;
};

// The products of group g for stacked rows [r0, r0 + rows) and, if `two`,
// [r0 + rows, r0 + 2 rows), with panel a's blocks and, if b is given, b's.
TW_TILES void group_sums(const Pass& s, int g, int r0, bool two) {
  const int64_t stride = static_cast<int64_t>(s.k) * 2;  // bytes per stacked row
  const bool pb = s.b[1] != nullptr;
  const uint16_t* x0 = s.x + static_cast<size_t>(r0) * s.k;
  const uint16_t* x1 = x0 + static_cast<size_t>(s.rows) * s.k;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int blk = g * s.per; blk < (g + 1) * s.per; blk++) {
    _tile_loadd(6, s.b[0] + static_cast<size_t>(blk) * 512, 64);
    _tile_loadd(4, x0 + blk * 32, stride);
    _tile_dpbf16ps(0, 4, 6);
    if (pb) {
      _tile_loadd(7, s.b[1] + static_cast<size_t>(blk) * 512, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (two) {
      _tile_loadd(5, x1 + blk * 32, stride);
      _tile_dpbf16ps(2, 5, 6);
      if (pb) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, s.sums[0] + static_cast<size_t>(r0) * 16, 64);
  if (pb) _tile_stored(1, s.sums[1] + static_cast<size_t>(r0) * 16, 64);
  if (two) {
    _tile_stored(2, s.sums[0] + static_cast<size_t>(r0 + s.rows) * 16, 64);
    if (pb) _tile_stored(3, s.sums[1] + static_cast<size_t>(r0 + s.rows) * 16, 64);
  }
}

// Panel pn's outputs for group g from its stacked sums: each row's three
// parts added, times the group's scales, plus its biases times x's sums.
TW_TILES void group_outputs(const Product& p, int pn, int g, const float* sums, float* totals) {
  const int m = p.x.m, groups = p.x.k / p.x.group_size;
  const size_t sg = (static_cast<size_t>(pn) * groups + g) * panels::kRows;
  const __m512 scale = _mm512_loadu_ps(p.scales + sg);
  const __m512 bias = _mm512_loadu_ps(p.biases + sg);
  for (int i = 0; i < m; i++) {
    const __m512 dot = _mm512_add_ps(
        _mm512_add_ps(_mm512_load_ps(sums + 16 * i), _mm512_load_ps(sums + 16 * (m + i))),
        _mm512_load_ps(sums + 16 * (2 * m + i)));
    const float xs = p.x.sums[static_cast<size_t>(g) * m + i];
    __m512 t = _mm512_load_ps(totals + 16 * i);
    t = _mm512_fmadd_ps(scale, dot, t);
    t = _mm512_fmadd_ps(bias, _mm512_set1_ps(xs), t);
    _mm512_store_ps(totals + 16 * i, t);
  }
}

// Panels a and, if b >= 0, b against every row of x; their weights
// unpacked at ua and ub. `sums[j]` holds the stacked rows' 16 sums each,
// `totals[j]` each row's 16 running outputs.
TW_TILES void panels_pair(const Product& p, int a, int b, const uint16_t* ua, const uint16_t* ub,
                          float* const (&sums)[2], float* const (&totals)[2]) {
  const int m = p.x.m, groups = p.x.k / p.x.group_size;
  const int rows = tile_rows(m);
  const Pass s{p.x.parts, {ua, b >= 0 ? ub : nullptr}, {sums[0], sums[1]}, p.x.k,
               p.x.group_size / 32, rows};
  const int npanels = b >= 0 ? 2 : 1;
  for (int j = 0; j < npanels; j++) std::fill(totals[j], totals[j] + static_cast<size_t>(m) * 16, 0.0f);
  for (int g = 0; g < groups; g++) {
    for (int r0 = 0; r0 < p.x.rows; r0 += 2 * rows) group_sums(s, g, r0, r0 + rows < p.x.rows);
    group_outputs(p, a, g, sums[0], totals[0]);
    if (b >= 0) group_outputs(p, b, g, sums[1], totals[1]);
  }
  for (int j = 0; j < npanels; j++) {
    const int pn = j == 0 ? a : b;
    for (int i = 0; i < m; i++) {
      _mm512_storeu_ps(p.y + static_cast<size_t>(i) * p.n + pn * panels::kRows,
                       _mm512_load_ps(totals[j] + 16 * i));
    }
  }
}

// A buffer of at least `n` elements aligned to 64 bytes.
template <typename T>
T* aligned(std::vector<T>& v, size_t n) {
  v.resize(n + 64 / sizeof(T));
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(v.data()) + 63) &
                              ~static_cast<uintptr_t>(63));
}

TW_TILES void rows_tiles(const Product& p, int p0, int p1) {
  thread_local std::vector<uint16_t> unpacked[2];
  thread_local std::vector<float> sums[2], totals[2];
  uint16_t* u[2];
  float* s[2];
  float* t[2];
  for (int j = 0; j < 2; j++) {
    u[j] = aligned(unpacked[j], static_cast<size_t>(p.x.k / 32) * 512);
    s[j] = aligned(sums[j], static_cast<size_t>(p.x.rows + tile_rows(p.x.m)) * 16);
    t[j] = aligned(totals[j], static_cast<size_t>(p.x.m) * 16);
  }
  config(tile_rows(p.x.m)).load();
  for (int a = p0; a < p1; a += 2) {
    const int b = a + 1 < p1 ? a + 1 : -1;
    unpack_panel(p, a, u[0]);
    if (b >= 0) unpack_panel(p, b, u[1]);
    panels_pair(p, a, b, u[0], u[1], s, t);
  }
  amx::release();
}

} // namespace

bool available() {
  static const bool yes = amx::available() && cpu_has_bf16_tiles();
  return yes;
}

void prepare(const float* x, const Prepared& out, int i0, int i1) {
  prepare_rows(x, out, i0, i1);
}

void rows(const Product& p, int p0, int p1) {
  rows_tiles(p, p0, p1);
}

#else

bool available() {
  return false;
}

void prepare(const float*, const Prepared&, int, int) {}

void rows(const Product&, int, int) {}

#endif

} // namespace thinkwire::tiles
