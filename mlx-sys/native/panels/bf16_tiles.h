/* f32 activations against 4-bit panels on AMX-BF16 tiles (the default
 * precision on CPUs with AMX).
 *
 * The f32 kernels (quantized/affine_avx512.h) make one FMA per weight and row of
 * x, so a batch of 8 costs ~3.5x a single row: the FMA units, not the
 * weights' bytes, bound it. A TDPBF16PS makes 16 x 16 x 32 products in
 * about the time of ten FMAs, whatever the rows up to 16. For it the weights
 * stay in int8's panels of 16 rows (panels/int8_panels.h), unpacked block by
 * block into bf16 pairs (a 4-bit value is exact in bf16), and x is split
 * into three bf16 parts, x = hi + mid + lo exactly (8 significant bits
 * each, 24 in all), so every product q * part is exact in f32 and a row's
 * result is the f32 sum
 *     sum_groups(scale * sum(q * x) + bias * sum(x))
 * of the exact products, in one fixed order per row whatever the batch:
 * each row of y is bit-identical to that x row in any other batch. Decode
 * steps (up to 8 rows) would leave most of a tile empty: product_tiles
 * gives them to panels/fma.h instead. Its rounding differs
 * from the FMA kernels' (which round each dequantized weight first), as
 * theirs differs from BLAS's. */
#ifndef THINKWIRE_QUANTIZED_TILES_H
#define THINKWIRE_QUANTIZED_TILES_H

#include <cstddef>
#include <cstdint>

namespace thinkwire::tiles {

/** Whether the tiles run here: AMX-BF16 granted (panels/amx.h) and
 * AVX512-BF16 for splitting x. */
bool available();

/** x prepared for the tiles: its three parts stacked as rows, part p
 * (0 hi, 1 mid, 2 lo) of row i at row p * m + i, k bf16 values each at
 * parts + row * k, every block of 32 in the order the unpacked panels pair
 * them; `rows` is 3m rounded up to the tile height (zeros after row 3m -
 * 1). A decode step's few rows thus share one tile: m = 1 takes one
 * product per block, not three. sums: x's f32 group sums, [groups, m]. */
struct Prepared {
  uint16_t* parts;
  float* sums;
  int m, rows, k, group_size;
};

/** The tile height for m rows of x (3m in tiles of at most 16, as even as
 * they can be) and the stacked rows
 * Prepared holds (3m rounded up to it). */
int tile_rows(int m);
int padded_rows(int m);

/** Rows [i0, i1) of x (row-major [m, k]) into `out`. */
void prepare(const float* x, const Prepared& out, int i0, int i1);

/** y = x . W^T for prepared x and 4-bit panel weights. */
struct Product {
  Prepared x;
  const uint8_t* w;  // panels (panels/int8_panels.h)
  const float* scales;
  const float* biases;
  float* y;  // [m, n]
  int n;
};

/** Panels [p0, p1) against every row of x. */
void rows(const Product& p, int p0, int p1);

} // namespace thinkwire::tiles

#endif
