/* thinkwire's CPU kernels for MLX's affine-quantized weights.
 *
 * MLX's CPU backend runs quantized matmuls in generic loops that are slower
 * than reading the same weights dequantized to f32 through BLAS, so a
 * quantized model costs more per token than its f32 copy even though it is
 * 4-8x fewer bytes. These kernels make the small format the fast one:
 * decode steps (one row of activations, or one per sequence of a batch)
 * read the packed weights once, in parallel, with AVX-512 or AVX2 when the
 * CPU has it (affine_avx512.h); longer inputs dequantize row tiles and
 * hand them to BLAS (matmul/dispatch.cpp).
 *
 * Layout is MLX's: `w` is [n, k * bits / 8] bytes (the uint32 words of MLX,
 * little-endian; element i of a row is nibble i % 2 of byte i / 2 for 4 bits,
 * byte i for 8 bits), `scales` and `biases` are [n, k / group_size] f32, and
 * a weight is `scale * q + bias`. */
#ifndef THINKWIRE_QUANTIZED_AFFINE_H
#define THINKWIRE_QUANTIZED_AFFINE_H

#include <cstddef>
#include <cstdint>

namespace thinkwire::affine {

/** y[m, n] = x[m, k] . W^T with x as it is (f32), reading the packed
 * weights once for all m rows on the kernels' threads: AVX-512 where
 * have_avx512(), else AVX2+FMA where have_avx2(), else portable loops.
 * Each row of y is bit-identical to what x's row alone gives. */
void product(const float* x, int m, int k, const uint8_t* w, const float* scales,
             const float* biases, int n, int group_size, int bits, float* y);

/** Rows [r0, r1) of W as f32 (scale * q + bias), row-major into out
 * ([r1 - r0, k], elements in their natural order), for the prefill tiles. */
void dequantize_rows(const uint8_t* w, const float* scales, const float* biases, int k,
                     int group_size, int bits, int r0, int r1, float* out);

/** One row of x (k a multiple of 32) in the order the 4-bit kernels read
 * it, chunk by chunk: elements [0,2,..,14 | 16,18,..,30 | 1,3,..,15 |
 * 17,..,31], the low then the high nibbles of the packed bytes (the MXFP4
 * kernels read x in this order too). */
void permute_for_4bit(const float* x, int k, float* out);

} // namespace thinkwire::affine

#endif
