/* The 8-bit-activation path for batches, on CPUs with AVX-512 VNNI.
 *
 * quantized/int8.h's kernels give each (weight row, x row) pair its own
 * 256-bit dot product and a float step per block of 32: at 8 rows of x that
 * is as many instructions per weight as the f32 kernels' FMAs, so batches
 * gain nothing from the integer arithmetic. Here the lanes of a vector run
 * over 16 weight rows instead: `vpdpbusd` multiplies 4 bytes of each of 16
 * rows by the same 4 bytes of x (broadcast) and adds them into 16 per-row
 * sums, 64 products per instruction, and the float steps (x's block scale,
 * the group's scale and bias) are taken for 16 rows at once. For that the
 * weights are repacked at load into panels of 16 rows:
 *
 *   for each panel, each block of 32 columns, each 4-byte column slice i of
 *   the block (4 for 4 bits, 8 for 8 bits): rows 0..15's bytes
 *   [4i, 4i + 4) of that block, one 64-byte vector;
 *   scales and biases: [panels, groups, 16] floats.
 *
 * Nothing else moves: a 4-bit slice's low nibbles are x's permuted positions
 * 4i..4i+3 and its high nibbles positions 16+4i.. (quantized/int8.h's
 * order), so the same quantized x serves both layouts. A row's result is
 * the arithmetic of quantized/int8.h,
 *     scale * sum_blocks(d_x * isum) + bias * group_sum(x),
 * with the float sums taken in one fixed order per row whatever the batch:
 * each row of y is bit-identical to that x row alone. */
#ifndef THINKWIRE_QUANTIZED_PANELS_H
#define THINKWIRE_QUANTIZED_PANELS_H

#include <cstddef>
#include <cstdint>

#include "quantized/int8.h"

namespace thinkwire::panels {

/** Weight rows per panel; n must be a multiple. */
constexpr int kRows = 16;

/** Whether the panel kernels run here (AVX-512 VNNI; THINKWIRE_KERNEL_ISA
 * below avx512 says no). Panels computed elsewhere still work, through
 * portable loops. */
bool available();

/** Repacks MLX's layout (quantized/affine.h: w [n, k * bits / 8], scales
 * and biases [n, k / group_size]) into panels of the same sizes. Throws
 * std::invalid_argument unless n % 16 == 0, k % group_size == 0, bits is 4
 * or 8 and group_size a multiple of 32. */
void repack(const uint8_t* w, const float* scales, const float* biases, int n, int k,
            int group_size, int bits, uint8_t* pw, float* ps, float* pb);

/** One product y = x . W^T for m rows of quantized x and panel weights. */
struct Product {
  int8::Activations x;
  const float* xsum; // [groups, xsum_stride]: int8::group_sums, row i in column i
  int xsum_stride;
  const uint8_t* w; // panels
  const float* scales;
  const float* biases;
  float* y; // [m, n]
  int m, n, k, group_size, bits;
};

/** Panels [p0, p1) against every row of x. */
void rows(const Product& p, int p0, int p1);

/** Weight row r back in MLX's layout (w: k * bits / 8 bytes, scales and
 * biases: k / group_size floats), for the prefill tiles' dequantization. */
void unpack_row(const uint8_t* w, const float* scales, const float* biases, int k, int group_size,
                int bits, int r, uint8_t* row_w, float* row_scales, float* row_biases);

} // namespace thinkwire::panels

#endif
