/* thinkwire's CPU kernels for MXFP4 weights (mxfp4/mxfp4.cpp).
 *
 * MXFP4 (the OCP microscaling format; MLX's `mxfp4` mode, GGUF's MXFP4
 * type, how gpt-oss ships its experts) stores a block of 32 weights as 32
 * four-bit e2m1 floats and one e8m0 scale byte: weight = E2M1[q] * 2^(e-127),
 * with E2M1 = {0, .5, 1, 1.5, 2, 3, 4, 6} and bit 3 of q the sign. The
 * values are not evenly spaced, so the affine kernels' `scale * q + bias`
 * cannot hold them; these look each nibble up in a table of the 16 values
 * already multiplied by the block's scale (one permute per 16 weights on
 * AVX-512, a byte shuffle on AVX2), 4.25 bits a weight read once.
 *
 * Layout is MLX's: `w` is [n, k / 2] bytes, element i of a row in nibble
 * i % 2 of byte i / 2; `scales` is [n, k / 32] e8m0 bytes. x is in the
 * affine 4-bit kernels' order (permute_for_4bit: a chunk's even elements,
 * then its odd ones), so byte b's low nibble meets x[b] and its high nibble
 * x[16 + b].
 *
 * As for the affine kernels, each (x row, weight row) pair is computed
 * with the same operations in the same order whatever the number of rows,
 * so a sequence's result does not depend on its batch. */
#ifndef THINKWIRE_QUANTIZED_MXFP4_H
#define THINKWIRE_QUANTIZED_MXFP4_H

#include <cstdint>

namespace thinkwire {
namespace mxfp4 {

/** Weights per scale. */
constexpr int kBlock = 32;

/** The scale an e8m0 byte stands for, as MLX reads it: 2^(e-127), with
 * e = 0 the subnormal 2^-127 and e = 255 NaN. */
float scale_of(uint8_t e);

/** y = x . W^T over weight rows [r0, r1). */
struct Product {
  const float* x;         // [m, k], permuted per chunk as described above
  const uint8_t* w;       // [n, k / 2]
  const uint8_t* scales;  // [n, k / 32]
  float* y;               // [m, n]
  int m, n, k;
};

void rows(const Product& p, int r0, int r1);

/** Rows [r0, r1) of W as f32, row-major into out ([r1 - r0, k]), elements
 * in their natural order. */
void dequantize_rows(const uint8_t* w, const uint8_t* scales, int k, int r0, int r1, float* out);

} // namespace mxfp4
} // namespace thinkwire

#endif
