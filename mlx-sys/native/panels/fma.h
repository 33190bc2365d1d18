/* f32 activations against 4-bit panels (panels/int8_panels.h) with AVX-512
 * FMAs: the default precision's kernel for decode steps (up to 8 rows of
 * x, one per sequence) when the weights are in panels for the AMX tiles,
 * which keep prompts.
 *
 * A tile product costs the same for 3 stacked rows as for 16, so a decode
 * step leaves most of each TDPBF16PS empty and pays the 4-bit to bf16
 * unpack and a tile store per group for it: measured here ~1.25x the FMA
 * kernels' time at one row. These FMAs run over the panel's 16 weight rows
 * in the lanes (as the int8 panels' VNNI does), so each nibble becomes a
 * float once for every row of x (a vpermps lookup) and no horizontal sum is
 * left at the end:
 *     y = sum_groups(scale * sum(q * x) + bias * sum(x)),
 * the sums in one fixed order per row whatever m is: each row of y is
 * bit-identical to that x row alone. Measured against the tiles: faster
 * up to 5 rows, even at 6 to 8. Its rounding differs from the tiles' (up
 * to f32 rounding, as the tiles' differs from BLAS's), so a prompt's rows
 * round alike whenever they are 9 or more, alone or batched.
 *
 * 8-bit panels (a GGUF Q8_0 output layer: ~30% of a step's bytes at one
 * row, the largest product at eight) take the same loop with a byte per
 * lane instead of a nibble (shift, mask, convert) at every m: the tiles
 * are 4-bit only, and an output layer's prompt rows are one per sequence.
 * On MLX's layout the 8-bit kernel keeps one accumulator per (weight row,
 * x row) and a horizontal sum per output; here 16 outputs share each
 * instruction. */
#ifndef THINKWIRE_PANEL_FMA_H
#define THINKWIRE_PANEL_FMA_H

#include <cstdint>

namespace thinkwire::panel_fma {

/** Rows of x this kernel takes of 4-bit weights (the default
 * --max-batch); more go to the tiles. 8-bit weights: any number. */
constexpr int kMaxRows = 8;

/** y = x . W^T for rows of f32 x and 4- or 8-bit panel weights. */
struct Product {
  const float* x;     // [m, k]
  const float* fours; // x's rows in fours: interleave_fours
  const float* xsum;  // [groups, m]: group_sums
  const uint8_t* w;   // panels
  const float* scales;
  const float* biases;
  float* y;  // [m, n]
  int m, n, k, group_size;
  int xsum_stride;  // m of the whole product
  int bits;         // 4 or 8
};

/** x's f32 group sums into out ([groups, m]). */
void group_sums(const float* x, int m, int k, int group_size, float* out);

/** Each whole four of x's rows, from row r0, as [k][4] at out + r0 * k
 * (out holds m * k floats; rows past the last four are not written): the
 * four rows' elements of one column side by side, so the kernel reaches
 * every x it broadcasts from one pointer with constant offsets. */
void interleave_fours(const float* x, int m, int k, float* out);

/** Panels [p0, p1) against every row of x. Needs AVX-512 (every CPU with
 * the tiles has it). */
void rows(const Product& p, int p0, int p1);

} // namespace thinkwire::panel_fma

#endif
