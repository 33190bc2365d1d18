/* thinkwire's quantized products as the MLX primitives and the C API call
 * them (dispatch.cpp): the weights' format (affine 4/8-bit in MLX's layout
 * or in 16-row panels, MXFP4), the activations, and how a product runs
 * (the format's kernels for decode-sized inputs, dequantized tiles and
 * BLAS for longer ones). The layouts are those of quantized/affine.h,
 * panels/int8_panels.h and mxfp4/mxfp4.h. */
#ifndef THINKWIRE_MATMUL_MATMUL_H
#define THINKWIRE_MATMUL_MATMUL_H

#include <cstddef>
#include <cstdint>

namespace thinkwire {

/** Whether `bits` and `group_size` have a kernel here. */
bool quantized_supported(int group_size, int bits);

/** Up to this many rows of x, the kernels read the packed weights once for
 * all rows; longer inputs dequantize tiles for BLAS. Measured on the default
 * model's matrices (engine/README.md): the kernels take a whole forward pass
 * in 1.3-2.8x less time than BLAS at 16 rows, about the same at 32. Int8
 * panels take any number of rows: integer products outrun f32 BLAS at
 * every prompt length measured (a 51-token prompt prefills 1.9x faster). */
constexpr int kMaxKernelRows = 16;

/** How quantized_matmul_f32 computes (all but `automatic` for benchmarks). */
enum class QuantizedPath {
  automatic,   // the kernels up to kMaxKernelRows rows of x (int8 panels: all), else BLAS
  kernel,      // the kernels, one pass over the weights for all rows
  row_by_row,  // the kernels, one pass over the weights per row of x
  blas,        // dequantize tiles + BLAS sgemm
};

/** What the kernels multiply the weights with (quantized/int8.h). */
enum class Activations {
  f32,   // x as it is: the product of the dequantized weights, up to rounding
  int8,  // x quantized to 8 bits per block of 32, integer dot products
  int8_panels,  // as int8, the weights repacked in panels of 16 rows
                // (panels/int8_panels.h; scales and biases too)
  f32_tiles,    // x as it is, 4-bit weights in those panels, on AMX-BF16
                // tiles (panels/bf16_tiles.h) from 9 rows, on FMAs over
                // the panels (panels/fma.h) up to 8; 8-bit weights on
                // those FMAs at any m
};

/** y[m, n] = x[m, k] . W^T for the quantized W described above; every
 * pointer row-contiguous. `activations` applies where the kernels run
 * (decode-sized inputs); prefill through BLAS is f32 either way. Through the kernels (every path but `blas`), each
 * row of y is bit-identical to what x's row alone gives; for f32_tiles,
 * whose decode steps (up to 8 rows) run on FMAs (panels/fma.h) and prompts
 * (9 or more) on the tiles, to what it gives in any batch on the same side. Throws
 * std::invalid_argument on an unsupported format or a k that is not a
 * multiple of the group size. */
void quantized_matmul_f32(const float* x, int m, int k, const uint8_t* w,
                          const float* scales, const float* biases, int n,
                          int group_size, int bits, float* y,
                          QuantizedPath path = QuantizedPath::automatic,
                          Activations activations = Activations::f32);

/** y[m, n] = x[m, k] . W^T for MXFP4 W (mxfp4/mxfp4.h: w [n, k / 2]
 * bytes, scales [n, k / 32] e8m0 bytes). Decode-sized inputs go through
 * the MXFP4 kernels (each row of y bit-identical to its x row alone), longer
 * ones through dequantized tiles and BLAS, as above; x is always f32. Throws
 * std::invalid_argument when k is not a multiple of 32. */
void mxfp4_matmul_f32(const float* x, int m, int k, const uint8_t* w, const uint8_t* scales, int n,
                      float* y, QuantizedPath path = QuantizedPath::automatic);

} // namespace thinkwire

#endif
