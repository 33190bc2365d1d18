/* The quantized products whose weights are in 16-row panels
 * (panels/int8_panels.h), as quantized_matmul_f32 calls them: int8
 * activations on VNNI (and AMX-INT8 for prompts), f32 activations on
 * AMX-BF16 tiles (panels/bf16_tiles.h) and FMAs over the panels
 * (panels/fma.h). y[m, n] = x[m, k] . W^T. */
#ifndef THINKWIRE_PANEL_PRODUCTS_H
#define THINKWIRE_PANEL_PRODUCTS_H

#include <cstdint>

namespace thinkwire {

/** x quantized to 8 bits per block of 32 against panel weights. */
void product_panels(const float* x, int m, int k, const uint8_t* w, const float* scales,
                    const float* biases, int n, int group_size, int bits, float* y);

/** x as it is against panel weights: 4-bit on AMX-BF16 tiles (prompts)
 * or FMAs (decode steps), 8-bit on FMAs; throws std::invalid_argument or
 * std::runtime_error where they cannot run. */
void product_tiles(const float* x, int m, int k, const uint8_t* w, const float* scales,
                   const float* biases, int n, int group_size, int bits, float* y);

} // namespace thinkwire

#endif
