// gpt-oss's gated activation, (clip(up, +-limit) + 1) * g * sigmoid(alpha * g)
// with g = min(gate, limit), as one function compiled by MLX: on a GPU one
// fused kernel where the operations launch eight per expert layer (mlx-lm
// compiles its own for the same reason). limit and alpha arrive as scalar
// arrays in the step's type, so one compiled graph serves every model.
// Why compiled on a GPU only, and why the lock: compiled/swiglu.cpp.

#include "mlx/c/thinkwire.h"

#include <mutex>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "mlx/c/private/mlx.h"
#include "mlx/compile.h"
#include "mlx/ops.h"

namespace {

namespace mx = mlx::core;
using mx::array;

// in: gate, up, limit, alpha; the model's plain path in the same order.
std::vector<array> clamped(const std::vector<array>& in) {
  const array& limit = in[2];
  const array g = mx::minimum(in[0], limit);
  const array u = mx::clip(in[1], mx::negative(limit), limit);
  const array s = mx::sigmoid(mx::multiply(g, in[3]));
  return {mx::multiply(mx::add(u, mx::ones_like(limit)), mx::multiply(g, s))};
}

}  // namespace

extern "C" int thinkwire_compiled_clamped_swiglu(mlx_array* res, const mlx_array gate,
                                                 const mlx_array up, float limit, float alpha) {
  return thinkwire::guarded([&] {
    const array& g = mlx_array_get_(gate);
    const array& u = mlx_array_get_(up);
    if (g.shape() != u.shape() || g.dtype() != u.dtype()) {
      throw std::invalid_argument(
          "thinkwire_compiled_clamped_swiglu: gate and up must have one shape and type");
    }
    const array l = mx::astype(array(limit), g.dtype());
    const array a = mx::astype(array(alpha), g.dtype());
    static const auto fused = mx::compile(clamped, /*shapeless=*/true);
    static std::mutex lock;
    std::vector<array> out;
    {
      std::lock_guard<std::mutex> hold(lock);
      out = fused({g, u, l, a});
    }
    mlx_array_set_(*res, out.at(0));
  });
}
