// The C API of the quantized products (thinkwire.h): the MLX primitives
// (primitives.cpp), the raw products on plain buffers, the panels' repacking,
// and MLX's own MXFP4 operations with errors in thinkwire_last_error.

#include "mlx/c/thinkwire.h"

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "common/error.h"
#include "common/pool.h"
#include "matmul/matmul.h"
#include "matmul/primitives.h"
#include "mlx/c/private/mlx.h"
#include "mlx/ops.h"
#include "panels/bf16_tiles.h"
#include "panels/int8_panels.h"
#include "quantized/int8.h"

using thinkwire::guarded;
namespace matmul = thinkwire::matmul;

namespace {

// The raw entry points' checks of what the caller chose.
thinkwire::QuantizedPath raw_path(int path, int m, int n) {
  if (path < 0 || path > 3) throw std::invalid_argument("path must be 0..3");
  if (m < 0 || n < 0) throw std::invalid_argument("m and n must not be negative");
  return static_cast<thinkwire::QuantizedPath>(path);
}

} // namespace

extern "C" bool thinkwire_quantized_supported(int group_size, int bits) {
  return thinkwire::quantized_supported(group_size, bits); // cannot throw
}

extern "C" int thinkwire_kernel_threads(void) {
  try {
    return thinkwire::kernel_threads();
  } catch (std::exception& e) {
    thinkwire::last_error() = e.what();
    return 1;
  }
}

extern "C" int thinkwire_quantized_matmul(mlx_array* res, const mlx_array x, const mlx_array w,
                                          const mlx_array scales, const mlx_array biases,
                                          int group_size, int bits, int activations,
                                          const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, matmul::quantized_matmul(mlx_array_get_(x), mlx_array_get_(w),
                                          mlx_array_get_(scales), &mlx_array_get_(biases),
                                          group_size, bits, matmul::to_activations(activations),
                                          mlx_stream_get_(s)));
  });
}

extern "C" int thinkwire_gather_quantized_matmul(mlx_array* res, const mlx_array x,
                                                 const mlx_array indices, const mlx_array w,
                                                 const mlx_array scales, const mlx_array biases,
                                                 int group_size, int bits, int activations,
                                                 const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, matmul::gather_quantized_matmul(
                             mlx_array_get_(x), mlx_array_get_(indices), mlx_array_get_(w),
                             mlx_array_get_(scales), &mlx_array_get_(biases), group_size, bits,
                             matmul::to_activations(activations), mlx_stream_get_(s)));
  });
}

extern "C" bool thinkwire_f32_tiles_available(void) {
  return thinkwire::tiles::available(); // cannot throw
}

extern "C" bool thinkwire_int8_panels_available(void) {
  return thinkwire::panels::available(); // cannot throw
}

extern "C" int thinkwire_int8_panels_repack(const uint8_t* w, const float* scales,
                                            const float* biases, int n, int k, int group_size,
                                            int bits, uint8_t* pw, float* ps, float* pb) {
  return guarded([&] {
    thinkwire::panels::repack(w, scales, biases, n, k, group_size, bits, pw, ps, pb);
  });
}

extern "C" int thinkwire_kernel_max_rows(void) {
  return thinkwire::kMaxKernelRows;
}

extern "C" int thinkwire_quantized_matmul_raw(const float* x, int m, int k, const uint8_t* w,
                                              const float* scales, const float* biases, int n,
                                              int group_size, int bits, float* y, int path,
                                              int activations) {
  return guarded([&] {
    thinkwire::quantized_matmul_f32(x, m, k, w, scales, biases, n, group_size, bits, y,
                                    raw_path(path, m, n), matmul::to_activations(activations));
  });
}

extern "C" int thinkwire_mxfp4_matmul(mlx_array* res, const mlx_array x, const mlx_array w,
                                      const mlx_array scales, const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, matmul::quantized_matmul(mlx_array_get_(x), mlx_array_get_(w),
                                          mlx_array_get_(scales), nullptr, 32, 4,
                                          thinkwire::Activations::f32, mlx_stream_get_(s)));
  });
}

extern "C" int thinkwire_gather_mxfp4_matmul(mlx_array* res, const mlx_array x,
                                             const mlx_array indices, const mlx_array w,
                                             const mlx_array scales, const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, matmul::gather_quantized_matmul(mlx_array_get_(x), mlx_array_get_(indices),
                                                 mlx_array_get_(w), mlx_array_get_(scales),
                                                 nullptr, 32, 4, thinkwire::Activations::f32,
                                                 mlx_stream_get_(s)));
  });
}

extern "C" int thinkwire_mxfp4_matmul_raw(const float* x, int m, int k, const uint8_t* w,
                                          const uint8_t* scales, int n, float* y, int path) {
  return guarded([&] {
    thinkwire::mxfp4_matmul_f32(x, m, k, w, scales, n, y, raw_path(path, m, n));
  });
}

// MLX's own MXFP4 operations (mlx-c has them, but reports errors only to
// mlx-rs's private handler); for `--precision keep` and GPUs.
extern "C" int thinkwire_mlx_mxfp4_matmul(mlx_array* res, const mlx_array x, const mlx_array w,
                                          const mlx_array scales, const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, mlx::core::quantized_matmul(mlx_array_get_(x), mlx_array_get_(w),
                                                     mlx_array_get_(scales), std::nullopt, true,
                                                     32, 4, "mxfp4", mlx_stream_get_(s)));
  });
}

extern "C" int thinkwire_mlx_mxfp4_gather(mlx_array* res, const mlx_array x, const mlx_array w,
                                          const mlx_array scales, const mlx_array indices,
                                          bool sorted, const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, mlx::core::gather_qmm(mlx_array_get_(x), mlx_array_get_(w),
                                               mlx_array_get_(scales), std::nullopt, std::nullopt,
                                               mlx_array_get_(indices), true, 32, 4, "mxfp4",
                                               std::nullopt, sorted, mlx_stream_get_(s)));
  });
}

extern "C" int thinkwire_mlx_mxfp4_dequantize(mlx_array* res, const mlx_array w,
                                              const mlx_array scales, const mlx_stream s) {
  return guarded([&] {
    mlx_array_set_(*res, mlx::core::dequantize(mlx_array_get_(w), mlx_array_get_(scales),
                                               std::nullopt, 32, 4, "mxfp4", std::nullopt,
                                               mlx::core::float32, mlx_stream_get_(s)));
  });
}

extern "C" void thinkwire_kernel_time(uint64_t* ns, uint64_t* calls) {
  matmul::kernel_time(ns, calls);
}

extern "C" const char* thinkwire_int8_isa(void) {
  return thinkwire::int8::isa_name(); // cannot throw
}
