// SwiGLU, silu(gate) * up, as one function compiled by MLX. Where MLX
// compiles for a GPU it fuses the function's element-wise operations into
// one kernel, so a layer launches one where `g * sigmoid(g) * u` launches
// three (mlx-lm compiles its `swiglu` for the same reason); on the CPU it
// is one generated loop instead of three passes over the rows.
//
// The function is compiled once, by address, for any shape (shapeless), so
// each call only looks its graph up in MLX's compile cache. That cache is
// process-wide and unguarded, hence the lock around the call.

#include "mlx/c/thinkwire.h"

#include <mutex>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "mlx/c/private/mlx.h"
#include "mlx/compile.h"
#include "mlx/ops.h"

namespace {

using mlx::core::array;

// The same operations, in the same order, as the model's plain path.
std::vector<array> swiglu(const std::vector<array>& in) {
  const array& gate = in[0];
  return {mlx::core::multiply(mlx::core::multiply(gate, mlx::core::sigmoid(gate)), in[1])};
}

}  // namespace

extern "C" int thinkwire_compiled_swiglu(mlx_array* res, const mlx_array gate,
                                         const mlx_array up) {
  return thinkwire::guarded([&] {
    const array& g = mlx_array_get_(gate);
    const array& u = mlx_array_get_(up);
    if (g.shape() != u.shape() || g.dtype() != u.dtype()) {
      throw std::invalid_argument(
          "thinkwire_compiled_swiglu: gate and up must have one shape and type");
    }
    static const auto compiled = mlx::core::compile(swiglu, /*shapeless=*/true);
    static std::mutex lock;
    std::vector<array> out;
    {
      std::lock_guard<std::mutex> hold(lock);
      out = compiled({g, u});
    }
    mlx_array_set_(*res, out.at(0));
  });
}
