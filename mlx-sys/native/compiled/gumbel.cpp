// Gumbel noise for drawing sampled tokens on the device: for each row's
// 32-bit key and each token id, -log(-log(u)) with u in (0, 1) from a hash
// of the two. A row's noise depends on its key and nothing else (not on
// the batch it runs in, not on MLX's random state), so a seeded sequence
// draws the same tokens alone or batched, and the draw is one argmax over
// logits plus noise (the Gumbel-max trick), with only the token ids
// crossing to the host.
//
// The hash is an xor-shift-multiply mixer (the "lowbias32" constants of
// Chris Wellons' hash-prospector): the key is mixed, xored into the token
// id, and the result mixed again; u takes its top 23 bits, centred in
// their interval, so neither 0 nor 1 occurs and every u is exact in f32
// (with 24 bits the top interval's centre, 1 - 2^-25, rounds to 1, whose
// noise is +inf: about one row in a hundred of a 150k vocabulary then drew
// a token at random). The noise lies in [-2.82, 16.64]. On a GPU it is compiled (one
// fused kernel over rows x vocabulary); on the CPU it runs as operations
// (see compiled/swiglu.cpp for why).

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

array mix(array x) {
  const auto u32 = [](uint32_t v) { return array(v, mx::uint32); };
  x = mx::bitwise_xor(x, mx::right_shift(x, u32(16)));
  x = mx::multiply(x, u32(0x7feb352du));
  x = mx::bitwise_xor(x, mx::right_shift(x, u32(15)));
  x = mx::multiply(x, u32(0x846ca68bu));
  return mx::bitwise_xor(x, mx::right_shift(x, u32(16)));
}

// in[0]: keys uint32 [rows, 1]; in[1]: token ids uint32 [1, vocab].
std::vector<array> noise(const std::vector<array>& in) {
  const array bits = mix(mx::bitwise_xor(in[1], mix(in[0])));
  const array top = mx::astype(mx::right_shift(bits, array(9u, mx::uint32)), mx::float32);
  const array u = mx::multiply(mx::add(top, array(0.5f)), array(1.0f / 8388608.0f));
  return {mx::negative(mx::log(mx::negative(mx::log(u))))};
}

}  // namespace

extern "C" int thinkwire_gumbel_noise(mlx_array* res, const mlx_array keys, int vocab,
                                      bool compiled) {
  return thinkwire::guarded([&] {
    const array& k = mlx_array_get_(keys);
    if (k.dtype() != mx::uint32 || k.ndim() != 2 || k.shape(1) != 1) {
      throw std::invalid_argument("thinkwire_gumbel_noise: keys must be uint32 [rows, 1]");
    }
    if (vocab <= 0) {
      throw std::invalid_argument("thinkwire_gumbel_noise: vocab must be positive");
    }
    const array ids = mx::reshape(mx::arange(0, vocab, mx::uint32), {1, vocab});
    std::vector<array> out;
    if (compiled) {
      static const auto fused = mx::compile(noise, /*shapeless=*/true);
      static std::mutex lock;
      std::lock_guard<std::mutex> hold(lock);
      out = fused({k, ids});
    } else {
      out = noise({k, ids});
    }
    mlx_array_set_(*res, out.at(0));
  });
}
