// The MLX operation behind thinkwire_quantized_matmul (thinkwire.h): a
// primitive whose CPU evaluation calls thinkwire's quantized kernels, so it
// takes part in MLX's lazy graphs, async evaluation and memory accounting
// like any built-in operation.

#include <atomic>
#include <chrono>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "common/primitive.h"
#include "matmul/matmul.h"
#include "matmul/primitives.h"

namespace {

using mlx::core::array;

// Copies a strided view into row-major order.
void gather(const float* src, const std::vector<int>& shape, const std::vector<int64_t>& strides,
            float* dst) {
  const size_t dims = shape.size();
  std::vector<int> index(dims, 0);
  size_t total = 1;
  for (int d : shape) total *= static_cast<size_t>(d);
  for (size_t i = 0; i < total; i++) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims; d++) offset += index[d] * strides[d];
    dst[i] = src[offset];
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// Time spent in the kernels by MLX operations, for the per-step breakdown
// (`thinkwire_kernel_time`): two relaxed atomics per call, about 121 calls
// per decoded token on the default model.
std::atomic<uint64_t> kernel_ns{0};
std::atomic<uint64_t> kernel_calls{0};

// Adds the time `f` takes to the kernels' counters (thinkwire_kernel_time).
template <class F>
void timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto spent = std::chrono::steady_clock::now() - start;
  kernel_ns.fetch_add(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()),
      std::memory_order_relaxed);
  kernel_calls.fetch_add(1, std::memory_order_relaxed);
}

// What the two kernel primitives share: the format and the activations.
class KernelPrimitive : public thinkwire::Primitive {
 public:
  KernelPrimitive(mlx::core::Stream stream, int group_size, int bits,
                  thinkwire::Activations activations, bool mxfp4)
      : Primitive(stream),
        group_size_(group_size),
        bits_(bits),
        activations_(activations),
        mxfp4_(mxfp4) {}

  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const KernelPrimitive*>(&other);
    return o != nullptr && typeid(*o) == typeid(*this) && o->group_size_ == group_size_ &&
           o->bits_ == bits_ && o->activations_ == activations_ && o->mxfp4_ == mxfp4_;
  }

 protected:
  const char* gpu_hint() const override {
    return "; use MLX's quantized operations on a GPU";
  }

  // The scales' data, f32 (affine) or e8m0 bytes (MXFP4), as bytes.
  const uint8_t* scale_bytes(const array& scales) const {
    return mxfp4_ ? scales.data<uint8_t>() : reinterpret_cast<const uint8_t*>(scales.data<float>());
  }

  int group_size_;
  int bits_;
  thinkwire::Activations activations_;
  bool mxfp4_; // MXFP4 weights: e8m0 scales, no biases input
};

// One product on the kernels, affine (f32 scales and biases) or MXFP4 (e8m0
// scales, no biases).
void kernel_matmul(bool mxfp4, const float* x, int m, int k, const uint8_t* w,
                   const uint8_t* scales, const float* biases, int n, int group_size, int bits,
                   float* y, thinkwire::Activations act) {
  if (mxfp4) return thinkwire::mxfp4_matmul_f32(x, m, k, w, scales, n, y);
  thinkwire::quantized_matmul_f32(x, m, k, w, reinterpret_cast<const float*>(scales), biases, n,
                                  group_size, bits, y, thinkwire::QuantizedPath::automatic, act);
}

class QuantizedMatmul : public KernelPrimitive {
 public:
  using KernelPrimitive::KernelPrimitive;

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    const array& x = inputs[0];
    const array& w = inputs[1];
    const array& scales = inputs[2];
    array& out = outputs[0];
    for (size_t i = 1; i < inputs.size(); i++) {
      const array* a = &inputs[i];
      if (!a->flags().row_contiguous) {
        throw std::runtime_error("thinkwire quantized matmul: weights must be row-contiguous");
      }
    }
    // x may be a view (a slice or transpose); the task gathers it then.
    std::vector<int> shape;
    std::vector<int64_t> strides;
    if (!x.flags().row_contiguous) {
      shape.assign(x.shape().begin(), x.shape().end());
      strides.assign(x.strides().begin(), x.strides().end());
    }
    out.set_data(mlx::core::allocator::malloc(out.nbytes()));
    const int k = x.shape(-1);
    const int m = static_cast<int>(x.size() / k);
    const int n = w.shape(0);
    auto& encoder = mlx::core::cpu::get_command_encoder(stream());
    for (const auto& a : inputs) encoder.set_input_array(a);
    encoder.set_output_array(out);
    // MLX keeps the input buffers alive until the stream has run this task.
    encoder.dispatch([xp = x.data<float>(), wp = w.data<uint8_t>(), sp = scale_bytes(scales),
                      bp = mxfp4_ ? nullptr : inputs[3].data<float>(), yp = out.data<float>(), m,
                      k, n, gs = group_size_, bits = bits_, act = activations_, fp4 = mxfp4_,
                      shape = std::move(shape), strides = std::move(strides)]() {
      timed([&] {
        if (shape.empty()) {
          kernel_matmul(fp4, xp, m, k, wp, sp, bp, n, gs, bits, yp, act);
        } else {
          std::vector<float> dense(static_cast<size_t>(m) * k);
          gather(xp, shape, strides, dense.data());
          kernel_matmul(fp4, dense.data(), m, k, wp, sp, bp, n, gs, bits, yp, act);
        }
      });
    });
  }


  const char* name() const override {
    return "ThinkwireQuantizedMatmul";
  }


  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    auto shape = inputs[0].shape();
    shape.back() = inputs[1].shape(0);
    return {shape};
  }

};

// Mixture-of-experts products on the kernels: row r of x times the experts
// indices[r, j] picks, for every j. Each expert used by the step runs once,
// over all the rows routed to it (read once for them, as a batch is), and
// an expert nobody picked is not read at all.
class GatherQuantizedMatmul : public KernelPrimitive {
 public:
  using KernelPrimitive::KernelPrimitive;

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    const array& x = inputs[0];
    const array& idx = inputs[1];
    array& out = outputs[0];
    std::vector<int> shape;
    std::vector<int64_t> strides;
    if (!x.flags().row_contiguous) {
      shape.assign(x.shape().begin(), x.shape().end());
      strides.assign(x.strides().begin(), x.strides().end());
    }
    out.set_data(mlx::core::allocator::malloc(out.nbytes()));
    auto& encoder = mlx::core::cpu::get_command_encoder(stream());
    for (const auto& a : inputs) encoder.set_input_array(a);
    encoder.set_output_array(out);
    const array& w = inputs[2];
    encoder.dispatch([xp = x.data<float>(), ip = idx.data<uint32_t>(), wp = w.data<uint8_t>(),
                      sp = scale_bytes(inputs[3]), bp = mxfp4_ ? nullptr : inputs[4].data<float>(),
                      yp = out.data<float>(), rows = idx.shape(0), k = idx.shape(1),
                      in = x.shape(-1), n = w.shape(1), experts = w.shape(0), gs = group_size_,
                      bits = bits_, act = activations_, fp4 = mxfp4_, shape = std::move(shape),
                      strides = std::move(strides)]() {
      timed([&] {
        std::vector<float> dense;
        const float* xr = xp;
        if (!shape.empty()) {
          dense.resize(static_cast<size_t>(rows) * in);
          gather(xp, shape, strides, dense.data());
          xr = dense.data();
        }
        const size_t w_bytes = static_cast<size_t>(n) * in * bits / 8;
        const size_t groups = static_cast<size_t>(n) * (in / gs);
        const size_t scale_size = fp4 ? 1 : sizeof(float);
        std::vector<std::vector<int>> routed(experts);
        for (int r = 0; r < rows; r++) {
          for (int j = 0; j < k; j++) {
            const uint32_t e = ip[static_cast<size_t>(r) * k + j];
            if (e < static_cast<uint32_t>(experts)) {
              routed[e].push_back(r * k + j);
            } else {
              // Not a router's index: NaN, not a silent zero.
              float* y = yp + (static_cast<size_t>(r) * k + j) * n;
              std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
            }
          }
        }
        std::vector<float> xe, ye;
        for (int e = 0; e < experts; e++) {
          const auto& slots = routed[e];
          if (slots.empty()) continue;
          const int m = static_cast<int>(slots.size());
          xe.resize(static_cast<size_t>(m) * in);
          ye.resize(static_cast<size_t>(m) * n);
          for (int i = 0; i < m; i++) {
            const float* src = xr + static_cast<size_t>(slots[i] / k) * in;
            std::copy(src, src + in, xe.data() + static_cast<size_t>(i) * in);
          }
          kernel_matmul(fp4, xe.data(), m, in, wp + e * w_bytes, sp + e * groups * scale_size,
                        fp4 ? nullptr : bp + e * groups, n, gs, bits, ye.data(), act);
          for (int i = 0; i < m; i++) {
            std::copy(ye.data() + static_cast<size_t>(i) * n, ye.data() + static_cast<size_t>(i + 1) * n,
                      yp + static_cast<size_t>(slots[i]) * n);
          }
        }
      });
    });
  }


  const char* name() const override {
    return "ThinkwireGatherQuantizedMatmul";
  }


  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    return {{inputs[1].shape(0), inputs[1].shape(1), inputs[2].shape(1)}};
  }

};

std::string shape_text(const array& a) {
  std::string s = "[";
  for (int i = 0; i < a.ndim(); i++) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}

// The checks both kernel operations make before building their node:
// a format with a kernel, a CPU stream, f32 activations and scales, MLX's
// uint32 packing. Throws std::invalid_argument prefixed with `op`.
// No biases means MXFP4 (groups of 32 4-bit values, e8m0 scales).
void check_kernel_inputs(const char* op, const array& x, const array& w, const array& scales,
                         const array* biases, int group_size, int bits, mlx::core::Stream s) {
  using mlx::core::float32;
  auto fail = [&](const std::string& what) { throw std::invalid_argument(op + (": " + what)); };
  if (biases == nullptr ? group_size != 32 || bits != 4
                        : !thinkwire::quantized_supported(group_size, bits)) {
    fail("no kernel for " + std::to_string(bits) + "-bit weights in groups of " +
         std::to_string(group_size));
  }
  if (s.device != mlx::core::Device::cpu) fail("the stream must be a CPU stream");
  if (biases == nullptr) {
    if (x.dtype() != float32 || scales.dtype() != mlx::core::uint8) {
      fail("x must be float32 and the MXFP4 scales uint8 (e8m0)");
    }
  } else if (x.dtype() != float32 || scales.dtype() != float32 || biases->dtype() != float32) {
    fail("x, scales and biases must be float32");
  }
  if (w.dtype() != mlx::core::uint32) fail("w must be uint32 (MLX's packing)");
}

} // namespace

namespace thinkwire::matmul {

array quantized_matmul(const array& x, const array& w, const array& scales, const array* biases,
                       int group_size, int bits, thinkwire::Activations activations,
                       mlx::core::Stream s) {
  using mlx::core::float32;
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("thinkwire_quantized_matmul: " + what);
  };
  check_kernel_inputs("thinkwire_quantized_matmul", x, w, scales, biases, group_size, bits, s);
  if (x.ndim() < 1 || w.ndim() != 2 || scales.ndim() != 2 ||
      (biases != nullptr && biases->shape() != scales.shape())) {
    fail("expected x [..., k], w [n, k * bits / 32], scales and biases [n, k / group_size]");
  }
  const int k = x.shape(-1);
  const int n = w.shape(0);
  if (k <= 0 || n <= 0) fail("x and w must not be empty, got x " + shape_text(x) + ", w " + shape_text(w));
  if (k % group_size != 0 || static_cast<int64_t>(w.shape(1)) * 32 != static_cast<int64_t>(k) * bits ||
      scales.shape(0) != n || scales.shape(1) != k / group_size) {
    fail("shapes do not match: x " + shape_text(x) + ", w " + shape_text(w) + ", scales " +
         shape_text(scales) + " for " + std::to_string(bits) + "-bit groups of " +
         std::to_string(group_size));
  }
  auto out_shape = x.shape();
  out_shape.back() = n;
  // Weights are evaluated once at load and then already row-major; anything
  // else gets a copy in the graph.
  auto row_major = [&](const array& a) {
    return a.is_available() && a.flags().row_contiguous ? a : mlx::core::contiguous(a, false, s);
  };
  std::vector<array> inputs = {x, row_major(w), row_major(scales)};
  if (biases != nullptr) inputs.push_back(row_major(*biases));
  return array(std::move(out_shape), float32,
               std::make_shared<QuantizedMatmul>(s, group_size, bits, activations, biases == nullptr),
               std::move(inputs));
}

array gather_quantized_matmul(const array& x, const array& indices, const array& w,
                              const array& scales, const array* biases, int group_size, int bits,
                              thinkwire::Activations activations, mlx::core::Stream s) {
  using mlx::core::float32;
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("thinkwire_gather_quantized_matmul: " + what);
  };
  check_kernel_inputs("thinkwire_gather_quantized_matmul", x, w, scales, biases, group_size, bits,
                      s);
  if (indices.dtype() != mlx::core::uint32) fail("indices must be uint32");
  if (x.ndim() != 2 || indices.ndim() != 2 || w.ndim() != 3 || scales.ndim() != 3 ||
      (biases != nullptr && biases->shape() != scales.shape())) {
    fail("expected x [rows, k], indices [rows, per_row], w [experts, n, k * bits / 32], "
         "scales and biases [experts, n, k / group_size]");
  }
  const int k = x.shape(1);
  const int n = w.shape(1);
  if (k <= 0 || n <= 0 || x.shape(0) != indices.shape(0) || w.shape(0) <= 0 ||
      k % group_size != 0 || static_cast<int64_t>(w.shape(2)) * 32 != static_cast<int64_t>(k) * bits ||
      scales.shape(0) != w.shape(0) || scales.shape(1) != n || scales.shape(2) != k / group_size) {
    fail("shapes do not match: x " + shape_text(x) + ", indices " + shape_text(indices) + ", w " +
         shape_text(w) + ", scales " + shape_text(scales));
  }
  auto row_major = [&](const array& a) {
    return a.is_available() && a.flags().row_contiguous ? a : mlx::core::contiguous(a, false, s);
  };
  std::vector<array> inputs = {x, row_major(indices), row_major(w), row_major(scales)};
  if (biases != nullptr) inputs.push_back(row_major(*biases));
  return array({indices.shape(0), indices.shape(1), n}, float32,
               std::make_shared<GatherQuantizedMatmul>(s, group_size, bits, activations,
                                                       biases == nullptr),
               std::move(inputs));
}

thinkwire::Activations to_activations(int activations) {
  switch (activations) {
    case 0: return thinkwire::Activations::f32;
    case 1: return thinkwire::Activations::int8;
    case 2: return thinkwire::Activations::int8_panels;
    case 3: return thinkwire::Activations::f32_tiles;
    default:
      throw std::invalid_argument(
          "activations must be 0 (f32), 1 (int8), 2 (int8 panels) or 3 (f32 tiles)");
  }
}

void kernel_time(uint64_t* ns, uint64_t* calls) {
  *ns = kernel_ns.load(std::memory_order_relaxed);
  *calls = kernel_calls.load(std::memory_order_relaxed);
}

} // namespace thinkwire::matmul
