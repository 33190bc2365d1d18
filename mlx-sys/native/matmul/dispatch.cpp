// How a quantized product runs (matmul.h): decode-sized inputs on the
// kernels of their format (quantized/, panels/, mxfp4/), prefill through
// dequantized row tiles and the BLAS that libmlx loaded.

#include "matmul/matmul.h"

#include "common/pool.h"
#include "mxfp4/mxfp4.h"
#include "panels/int8_panels.h"
#include "panels/products.h"
#include "quantized/affine.h"
#include "quantized/int8.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace thinkwire {
namespace {

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
      affine::dequantize_rows(row_w.data(), row_sb.data(), row_sb.data() + groups, d.k,
                              d.group_size, d.bits, 0, 1,
                              d.out + static_cast<size_t>(r - d.r0) * d.k);
    }
    return;
  }
  affine::dequantize_rows(d.w, d.scales, d.biases, d.k, d.group_size, d.bits, a, b,
                          d.out + static_cast<size_t>(a - d.r0) * d.k);
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
    affine::permute_for_4bit(x + static_cast<size_t>(i) * k, k,
                             permuted.data() + static_cast<size_t>(i) * k);
  }
  mxfp4::Product p{permuted.data(), w, scales, y, m, n, k};
  Pool::get().run(rows_part<mxfp4::Product, mxfp4::rows>, &p, parts_for(n, k, 4));
}

} // namespace

bool quantized_supported(int group_size, int bits) {
  return (bits == 4 || bits == 8) && (group_size == 32 || group_size == 64 || group_size == 128);
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
                       : activations == Activations::int8     ? int8::product
                       : activations == Activations::f32_tiles ? product_tiles
                                                              : affine::product;
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
