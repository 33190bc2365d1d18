/* The base class of every thinkwire MLX primitive (the quantized products,
 * the fused operations): CPU only, outputs allocated as the task is
 * encoded. Inputs are evaluated when eval_cpu runs; a task reads them
 * later, on the stream's thread (MLX keeps their buffers alive until then). */
#ifndef THINKWIRE_COMMON_PRIMITIVE_H
#define THINKWIRE_COMMON_PRIMITIVE_H

#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/primitives.h"

namespace thinkwire {

class Primitive : public mlx::core::Primitive {
 public:
  using mlx::core::Primitive::Primitive;
  void eval_gpu(const std::vector<mlx::core::array>&, std::vector<mlx::core::array>&) override {
    throw std::runtime_error(std::string(name()) + " runs on the CPU only" + gpu_hint());
  }

 protected:
  /** Appended to eval_gpu's message: what to use on a GPU instead. */
  virtual const char* gpu_hint() const {
    return "";
  }

  /** The stream's encoder with the inputs registered and every output
   * allocated and registered. */
  mlx::core::cpu::CommandEncoder& encoder_for(const std::vector<mlx::core::array>& inputs,
                                              std::vector<mlx::core::array>& outputs) {
    auto& encoder = mlx::core::cpu::get_command_encoder(stream());
    for (const auto& a : inputs) encoder.set_input_array(a);
    for (auto& o : outputs) {
      o.set_data(mlx::core::allocator::malloc(o.nbytes()));
      encoder.set_output_array(o);
    }
    return encoder;
  }
};

} // namespace thinkwire

#endif
