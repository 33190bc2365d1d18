/* The 8-bit-activation path of thinkwire's quantized kernels
 * (quantized/affine.h has the weight layout).
 *
 * The f32 path widens every packed weight to a float and multiplies it with
 * x: about one weight per cycle per core, which on a CPU with AVX2 is slower
 * than memory. Here x is quantized once per product to signed bytes in
 * blocks of 32 (scale = max|x| / 127, as llama.cpp's Q8 activations), and
 * each weight chunk meets it in integer dot products (AVX2 `maddubs`, or
 * VNNI `dpbusd` where the CPU has it): 32 weights per instruction pair, no
 * widening. A group of weights then costs
 *     scale * sum_blocks(d_x * isum(q_w * q_x)) + bias * sum_blocks(d_x * sum(q_x))
 * (the bias term from the quantized x too: see group_sums). The result differs from the exact
 * product by x's rounding to 8 bits (relative error ~0.5 % per block); the
 * engine offers it as a precision mode, not as the exact path. */
#ifndef THINKWIRE_QUANTIZED_INT8_H
#define THINKWIRE_QUANTIZED_INT8_H

#include <cstddef>
#include <cstdint>

namespace thinkwire::int8 {

/** x quantized for the kernels: row i's bytes at q + i * k (for 4 bits each
 * 32-element block reordered to its even then its odd elements: the low and
 * high nibbles of the packed bytes), its block scales at d + i * (k / 32). */
struct Activations {
  const int8_t* q;
  const float* d;
};

/** One product y = x . W^T for m rows of x. */
struct Product {
  Activations x;
  const float* xsum;  // [groups, xsum_stride]: group_sums of x, row i in column i
  const float* corr;  // 8 bits without VNNI: [groups, xsum_stride], 128 * xsum
  int xsum_stride;    // m rounded up to 4 (zeros after row m - 1)
  const uint8_t* w;   // [n, k * bits / 8]
  const float* scales;
  const float* biases;
  float* y;           // [m, n]
  int m, n, k, group_size, bits;
};

/** Quantizes m rows of x (row-major [m, k], k a multiple of 32) into q
 * ([m, k] bytes) and d ([m, k / 32]) in the order the kernels for `bits`
 * read. */
void quantize_rows(const float* x, int m, int k, int bits, int8_t* q, float* d);

/** Whether this build and CPU need Product::corr (8 bits on plain AVX2,
 * whose byte products are signed: weights are shifted by 128). */
bool needs_corr(int bits);

/** x's group sums as the kernels see x: for each group and row, the sum
 * over the group's blocks of d * (the block's sum of q), row i in column i
 * of a [groups, stride] table. The bias term uses these, not x's exact
 * sums, so that it carries the same rounding as the dot products: the
 * error is then that of (s * q_w + b) . (x - x_q), as with float weights,
 * not of s * q_w . (x - x_q), whose unsigned q_w (0..15, 0..255) nearly
 * double it. For Product::corr, multiply by 128. */
void group_sums(const Activations& x, int m, int k, int group_size, int stride, float* sums);

/** Rows [r0, r1) of W against every row of x. Each (x row, W row) pair is
 * computed with the same operations in the same order whatever m is, so a
 * row's result does not depend on its batch. */
void rows(const Product& p, int r0, int r1);

/** y[m, n] = x[m, k] . W^T for MLX's affine layout (quantized/affine.h),
 * x quantized here per block of 32, on the kernels' threads. */
void product(const float* x, int m, int k, const uint8_t* w, const float* scales,
             const float* biases, int n, int group_size, int bits, float* y);

/** The instruction set the kernels use: "avx512-vnni", "avx-vnni", "avx2"
 * or "portable" (THINKWIRE_KERNEL_ISA=portable|avx2 caps it). */
const char* isa_name();

} // namespace thinkwire::int8

#endif
