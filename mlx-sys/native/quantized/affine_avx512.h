/* The f32-activation kernels on AVX-512 CPUs (quantized/affine_avx512.cpp).
 *
 * The AVX2 kernels compute a row per group as scale * sum(q * x) + bias *
 * sum(x): one multiply per weight, but per group and row of x a scale
 * step and a bias term, which at a batch of 8 rows costs as much as the
 * products themselves (MLX groups of 32 hold a single 32-weight chunk).
 * These dequantize in registers instead: 16 weights at a time become
 * floats (scale * q + bias, one FMA), and each row of x then takes one FMA
 * per 16 weights into a single accumulator, with nothing to do per group.
 * Two weight rows share the loads of x, up to 8 rows of x share each
 * dequantized vector.
 *
 * On a CPU that has them they serve every f32 product through the kernels,
 * one row of x or many, so a row's result is the same whatever its batch
 * (the arithmetic differs from the AVX2 kernels' by float rounding). */
#ifndef THINKWIRE_QUANTIZED_AVX512_H
#define THINKWIRE_QUANTIZED_AVX512_H

#include <cstdint>

namespace thinkwire {
namespace avx512 {

/* Called only where have_avx512() (common/cpu.h) said yes. */

/** y = x . W^T over weight rows [r0, r1); x as in the AVX2 path's
 * permute_for_4bit order for 4 bits (plain rows for 8). */
struct Product {
  const float* x;       // [m, k]
  const uint8_t* w;     // [n, k * bits / 8]
  const float* scales;  // [n, k / group_size]
  const float* biases;  // [n, k / group_size]
  float* y;             // [m, n]
  int m, n, k, group_size, bits;
};

void rows(const Product& p, int r0, int r1);

} // namespace avx512
} // namespace thinkwire

#endif
