// The products over 16-row panels (panels/products.h): x prepared on the
// pool's threads, then the panels shared out in chunks.

#include "panels/products.h"

#include "common/pool.h"
#include "panels/fma.h"
#include "quantized/int8.h"
#include "panels/int8_panels.h"
#include "panels/bf16_tiles.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace thinkwire {
namespace {

// A product over panels shared out in chunks: each thread takes the next
// chunk until none is left, so a worker that starts late (or a core
// another process holds) does less and nobody waits for it.
template <class P, void (*Rows)(const P&, int, int)>
struct Chunks {
  P p;
  int chunk; // panels per chunk
  std::atomic<int> next{0};

  static void part(const void* ctx, int, int) {
    auto& t = *static_cast<Chunks*>(const_cast<void*>(ctx));
    const int np = t.p.n / panels::kRows;
    for (;;) {
      const int c = t.next.fetch_add(1, std::memory_order_relaxed);
      const int p0 = c * t.chunk;
      if (p0 >= np) return;
      Rows(t.p, p0, std::min(np, p0 + t.chunk));
    }
  }
};

// x prepared for the AMX tiles, a share of its rows per thread.
struct PrepareTiles {
  const float* x;
  tiles::Prepared out;
};

void prepare_tiles_part(const void* ctx, int part, int parts) {
  const PrepareTiles& t = *static_cast<const PrepareTiles*>(ctx);
  const int i0 = static_cast<int>(static_cast<int64_t>(t.out.m) * part / parts);
  const int i1 = static_cast<int>(static_cast<int64_t>(t.out.m) * (part + 1) / parts);
  tiles::prepare(t.x, t.out, i0, i1);
}

} // namespace

// f32 x against 4- or 8-bit panels: the AMX tiles (panels/bf16_tiles.h) or
// FMAs (panels/fma.h).
void product_tiles(const float* x, int m, int k, const uint8_t* w, const float* scales,
                   const float* biases, int n, int group_size, int bits, float* y) {
  if (n % panels::kRows != 0 || (bits != 4 && bits != 8) || group_size % 32 != 0) {
    throw std::invalid_argument("thinkwire f32 tiles: need 4- or 8-bit weights in whole panels of 16 "
                                "rows and groups of 32s (got " + std::to_string(n) + " rows, " +
                                std::to_string(bits) + " bits, groups of " +
                                std::to_string(group_size) + ")");
  }
  if (!tiles::available()) {
    throw std::runtime_error("thinkwire f32 tiles: this CPU or process has no AMX-BF16 tiles");
  }
  // Decode steps (up to 8 rows): FMAs over the panels (panels/fma.h);
  // prompts: the tiles, which take 4-bit weights only (8-bit ones, an
  // output layer whose prompt rows are one per sequence, stay on FMAs).
  if (m <= panel_fma::kMaxRows || bits == 8) {
    // Grown only: a step's products alternate between sizes, and a resize
    // up would zero-fill what is about to be overwritten every time.
    thread_local std::vector<float> xsum, fours;
    const auto at_least = [](std::vector<float>& v, size_t n) {
      if (v.size() < n) v.resize(n);
    };
    at_least(xsum, static_cast<size_t>(k / group_size) * m);
    panel_fma::group_sums(x, m, k, group_size, xsum.data());
    at_least(fours, static_cast<size_t>(m) * k);
    panel_fma::interleave_fours(x, m, k, fours.data()); // nothing below 4 rows
    Chunks<panel_fma::Product, panel_fma::rows> chunks{
        {x, fours.data(), xsum.data(), w, scales, biases, y, m, n, k, group_size, m, bits},
        std::max(1, n / panels::kRows / 16)};
    Pool::get().run(decltype(chunks)::part, &chunks, parts_for(n, k, bits));
    return;
  }
  const int rows = tiles::padded_rows(m);
  thread_local std::vector<uint16_t> parts;
  thread_local std::vector<float> sums;
  // Every row is written but the padding after the 3m stacked ones.
  parts.resize(static_cast<size_t>(rows) * k);
  std::fill(parts.begin() + static_cast<size_t>(3 * m) * k, parts.end(), 0);
  sums.resize(static_cast<size_t>(k / group_size) * m);
  const tiles::Prepared prepared{parts.data(), sums.data(), m, rows, k, group_size};
  const PrepareTiles prep{x, prepared};
  Pool::get().run(prepare_tiles_part, &prep, m >= 32 ? Pool::get().size() : 1);
  Chunks<tiles::Product, tiles::rows> chunks{{prepared, w, scales, biases, y, n},
                                             std::max(1, n / panels::kRows / 16)};
  Pool::get().run(decltype(chunks)::part, &chunks, parts_for(n, k, bits));
}

namespace {

// x's rows quantized for the int8 kernels, with their group sums.
struct Quantize {
  const float* x;
  int m, k, bits, group_size;
  int8_t* q;
  float* d;
  float* xsum; // [groups, m]
};

// Rows [part * m / parts, ...) of a Quantize, for the pool.
void quantize_part(const void* ctx, int part, int parts) {
  const Quantize& t = *static_cast<const Quantize*>(ctx);
  const int i0 = static_cast<int>(static_cast<int64_t>(t.m) * part / parts);
  const int i1 = static_cast<int>(static_cast<int64_t>(t.m) * (part + 1) / parts);
  if (i0 == i1) return;
  const size_t q0 = static_cast<size_t>(i0) * t.k, d0 = static_cast<size_t>(i0) * (t.k / 32);
  int8::quantize_rows(t.x + q0, i1 - i0, t.k, t.bits, t.q + q0, t.d + d0);
  int8::group_sums(int8::Activations{t.q + q0, t.d + d0}, i1 - i0, t.k, t.group_size, t.m,
                   t.xsum + i0);
}

} // namespace

// int8::product for weights in panels (panels/int8_panels.h); x's rows are
// quantized on the pool's threads too.
void product_panels(const float* x, int m, int k, const uint8_t* w, const float* scales,
                    const float* biases, int n, int group_size, int bits, float* y) {
  if (n % panels::kRows != 0) {
    throw std::invalid_argument("thinkwire int8 panels: " + std::to_string(n) +
                                " rows are not whole panels of 16");
  }
  const int groups = k / group_size;
  const size_t table = static_cast<size_t>(groups) * m;
  thread_local std::vector<float> scratch;
  thread_local std::vector<int8_t> q;
  scratch.resize(table + static_cast<size_t>(m) * (k / 32));
  q.resize(static_cast<size_t>(m) * k);
  float* xsum = scratch.data();
  float* d = xsum + table;
  const Quantize prep{x, m, k, bits, group_size, q.data(), d, xsum};
  Pool::get().run(quantize_part, &prep, m);
  const int8::Activations xa{q.data(), d};
  Chunks<panels::Product, panels::rows> chunks{
      {xa, xsum, m, w, scales, biases, y, m, n, k, group_size, bits},
      std::max(1, n / panels::kRows / 16)};
  Pool::get().run(decltype(chunks)::part, &chunks, parts_for(n, k, bits));
}

} // namespace thinkwire
