/* The MLX operations behind thinkwire_quantized_matmul and its gather form
 * (primitives.cpp), for the C API (c_api.cpp). */
#ifndef THINKWIRE_MATMUL_PRIMITIVES_H
#define THINKWIRE_MATMUL_PRIMITIVES_H

#include <cstdint>

#include "matmul/matmul.h"
#include "mlx/array.h"
#include "mlx/stream.h"

namespace thinkwire::matmul {

/** x . dequantize(W)^T as a node of MLX's graph, evaluated on the kernels.
 * No biases means MXFP4 (groups of 32 4-bit values, e8m0 scales). Throws
 * std::invalid_argument on inputs the kernels cannot take. */
mlx::core::array quantized_matmul(const mlx::core::array& x, const mlx::core::array& w,
                                  const mlx::core::array& scales, const mlx::core::array* biases,
                                  int group_size, int bits, Activations activations,
                                  mlx::core::Stream s);

/** The mixture-of-experts form: row i of x times the experts indices[i]
 * picks. */
mlx::core::array gather_quantized_matmul(const mlx::core::array& x,
                                         const mlx::core::array& indices,
                                         const mlx::core::array& w,
                                         const mlx::core::array& scales,
                                         const mlx::core::array* biases, int group_size, int bits,
                                         Activations activations, mlx::core::Stream s);

/** The C API's activations code (0..3) as Activations; throws
 * std::invalid_argument on any other. */
Activations to_activations(int activations);

/** Time the MLX operations spent in the kernels, and their count. */
void kernel_time(uint64_t* ns, uint64_t* calls);

} // namespace thinkwire::matmul

#endif
