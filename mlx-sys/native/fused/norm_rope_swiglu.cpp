// Fused MLX operations for a decode step on the CPU (thinkwire.h): each
// replaces a chain of small built-in operations with one primitive, since
// at one token per sequence the graph's per-operation cost (building the
// node, scheduling, allocating) outweighs the arithmetic.
//
// - rms_norm and add_rms_norm: MLX's RMS norm (a sequential sum of
//   squares times 1/n, plus eps, 1/sqrt, x times that, times the weight:
//   the same bits as `fast::rms_norm` on the CPU), the second after a
//   residual add whose sum it returns too.
// - swiglu: silu(gate) * up from the fused gate/up product, computed with
//   MLX's own sigmoid in the same order as `g * sigmoid(g) * u`, so the
//   numbers are those of the operations it replaces (16 lanes at a time on
//   AVX-512 CPUs: fused/swiglu_avx512.cpp).
// - rope_split: the fused q/k/v product split into heads-first q, k, v with
//   q and k rotated by the step's rows of the cos/sin tables; the same
//   products and sum as `x * cos + rotate_half(x) * sin`.
//
// The attention operations (attend, attend_cached) are in fused/attention.cpp;
// what both files share is in fused/arrays.h.

// The products and sums below must stay separately rounded, as MLX's
// element-wise operations round them, not be contracted into FMAs.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif
// The 8-float vectors below only live inside inlined helpers.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "mlx/c/thinkwire.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/backend/cpu/unary_ops.h"
#include "mlx/c/private/mlx.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "fused/arrays.h"
#include "common/pool.h"
#include "fused/swiglu_avx512.h"

using namespace thinkwire::fused;

namespace {

using mlx::core::array;
using mlx::core::float32;

// ------------------------------------------------------------------ swiglu

// On x86-64 Linux with GCC, an FMA copy (chosen at load time) with
// MLX's sigmoid inlined, so its std::fma calls become FMA instructions
// (the same exactly rounded result as libm's fmaf, without the calls).
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define TW_FMA_CLONE __attribute__((target_clones("fma", "default"), flatten))
#else
#define TW_FMA_CLONE
#endif

struct SwiGluTask {
  const float* in;  // [rows, 2 ffn], row-contiguous
  float* out;       // [rows, ffn]
  int64_t rows;
  int ffn;
};

// Elements [e0, e1) of the output, in row-major order.
TW_FMA_CLONE void swiglu_span(const SwiGluTask& t, int64_t e0, int64_t e1) {
  mlx::core::detail::Sigmoid sigmoid; // its operator() is not const
  for (int64_t e = e0; e < e1;) {
    const int64_t r = e / t.ffn;
    const int j0 = static_cast<int>(e - r * t.ffn);
    const int j1 = static_cast<int>(std::min<int64_t>(t.ffn, j0 + (e1 - e)));
    const float* g = t.in + r * 2 * t.ffn;
    const float* u = g + t.ffn;
    float* o = t.out + r * t.ffn;
    // Whole 16-float vectors where the CPU has them, the rest here.
    int j = thinkwire::swiglu_vectors(g, u, o, j0, j1);
    for (; j < j1; j++) {
      const float s = g[j] * sigmoid(g[j]);
      o[j] = s * u[j];
    }
    e += j1 - j0;
  }
}

void swiglu_part(const void* ctx, int part, int parts) {
  const SwiGluTask& t = *static_cast<const SwiGluTask*>(ctx);
  const int64_t n = t.rows * t.ffn;
  swiglu_span(t, n * part / parts, n * (part + 1) / parts);
}

class SwiGlu : public thinkwire::Primitive {
 public:
  SwiGlu(mlx::core::Stream s, int ffn) : Primitive(s), ffn_(ffn) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    auto& encoder = encoder_for(inputs, outputs);
    const array& gu = inputs[0];
    const int ffn = ffn_;
    const int64_t rows = static_cast<int64_t>(gu.size() / (2 * static_cast<size_t>(ffn)));
    encoder.dispatch([in = Strided(gu), out = outputs[0].data<float>(), rows, ffn,
                      contiguous = gu.flags().row_contiguous]() {
      if (contiguous) {
        // Rows over the kernels' threads once there is enough to share.
        const SwiGluTask task{in.data, out, rows, ffn};
        const int parts = rows * ffn < 4096 ? 1 : 64;
        thinkwire::parallel_parts(swiglu_part, &task, parts);
        return;
      }
      mlx::core::detail::Sigmoid sigmoid; // its operator() is not const
      for (int64_t r = 0; r < rows; r++) {
        float* o = out + r * ffn;
        {
          // [..., rows', 2F] as a 3-d view: row r is (r / rows', r % rows').
          const int inner = in.shape[in.shape.size() - 2];
          const int i1 = static_cast<int>(r / inner), i2 = static_cast<int>(r % inner);
          for (int j = 0; j < ffn; j++) {
            const float g = in.at(0, i1, i2, j);
            const float s = g * sigmoid(g);
            o[j] = s * in.at(0, i1, i2, ffn + j);
          }
        }
      }
    });
  }
  const char* name() const override {
    return "ThinkwireSwiGlu";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const SwiGlu*>(&other);
    return o != nullptr && o->ffn_ == ffn_;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    auto shape = inputs[0].shape();
    shape.back() = ffn_;
    return {shape};
  }

 private:
  int ffn_;
};

// ---------------------------------------------------------------- rms_norm

// out = w * (x * (1 / sqrt(sum(x * x) * (1 / n) + eps))) per row of n: the
// operations and order of MLX's RMS norm on the CPU.
void rms_norm_row(const float* x, const float* w, int n, float eps, float* out) {
  float acc = 0.0f;
  for (int j = 0; j < n; j++) {
    const float sq = x[j] * x[j];
    acc += sq;
  }
  const float mean = acc * (1.0f / static_cast<float>(n));
  const float inv = 1.0f / std::sqrt(mean + eps);
  for (int j = 0; j < n; j++) {
    const float y = x[j] * inv;
    out[j] = w[j] * y;
  }
}

// Row r of a [B, T, n] array into `row` (a copy only for views).
const float* row_of(const Strided& a, bool contiguous, int64_t r, int n, float* row) {
  if (contiguous) return a.data + r * n;
  const int t_len = a.shape[1];
  const int b = static_cast<int>(r / t_len), t = static_cast<int>(r % t_len);
  for (int j = 0; j < n; j++) row[j] = a.at(0, b, t, j);
  return row;
}

// With one input, its RMS norm; with two, their sum and its RMS norm.
// Rows of an RMS norm (with the residual add first when `add`); rows are
// independent, so they are shared out over the kernels' threads.
struct RmsNormTask {
  Strided x, y;
  bool xc, yc;
  const float* w;
  float* sum;
  float* normed;
  int n;
  int64_t rows;
  bool add;
  float eps;
};

void rms_norm_part(const void* ctx, int part, int parts) {
  const RmsNormTask& t = *static_cast<const RmsNormTask*>(ctx);
  const int64_t r0 = t.rows * part / parts, r1 = t.rows * (part + 1) / parts;
  std::vector<float> xrow(t.n), yrow(t.n);
  for (int64_t r = r0; r < r1; r++) {
    const float* xr = row_of(t.x, t.xc, r, t.n, xrow.data());
    if (t.add) {
      const float* yr = row_of(t.y, t.yc, r, t.n, yrow.data());
      float* s = t.sum + r * t.n;
      for (int j = 0; j < t.n; j++) s[j] = xr[j] + yr[j];
      xr = s;
    }
    rms_norm_row(xr, t.w, t.n, t.eps, t.normed + r * t.n);
  }
}

class RmsNorm : public thinkwire::Primitive {
 public:
  RmsNorm(mlx::core::Stream s, float eps, bool add) : Primitive(s), eps_(eps), add_(add) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    if (!inputs.back().flags().row_contiguous) {
      throw std::runtime_error("thinkwire_rms_norm: the weight must be row-contiguous");
    }
    auto& encoder = encoder_for(inputs, outputs);
    const array& x = inputs[0];
    const int n = x.shape(-1);
    const int64_t rows = static_cast<int64_t>(x.size() / n);
    const bool add = add_;
    const RmsNormTask task{Strided(x),
                           Strided(inputs[add ? 1 : 0]),
                           x.flags().row_contiguous,
                           inputs[add ? 1 : 0].flags().row_contiguous,
                           inputs.back().data<float>(),
                           outputs[0].data<float>(),
                           outputs[add ? 1 : 0].data<float>(),
                           n,
                           rows,
                           add,
                           eps_};
    encoder.dispatch([task]() {
      // A lone row (a single sequence's step) stays on this thread.
      const int parts = task.rows < 2 || task.rows * task.n < 2048 ? 1 : static_cast<int>(task.rows);
      thinkwire::parallel_parts(rms_norm_part, &task, parts);
    });
  }
  const char* name() const override {
    return "ThinkwireRmsNorm";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const RmsNorm*>(&other);
    return o != nullptr && o->eps_ == eps_ && o->add_ == add_;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    if (add_) return {inputs[0].shape(), inputs[0].shape()};
    return {inputs[0].shape()};
  }

 private:
  float eps_;
  bool add_;
};

// -------------------------------------------------------------- rope_split

class RopeSplit : public thinkwire::Primitive {
 public:
  RopeSplit(mlx::core::Stream s, int heads, int kv_heads, int head_dim)
      : Primitive(s), heads_(heads), kv_heads_(kv_heads), head_dim_(head_dim) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    auto& encoder = encoder_for(inputs, outputs);
    const int t_len = inputs[0].shape(1);
    encoder.dispatch([qkv = Strided(inputs[0]), cos = Strided(inputs[1]), sin = Strided(inputs[2]),
                      q = outputs[0].data<float>(), k = outputs[1].data<float>(),
                      v = outputs[2].data<float>(), nq = heads_, nkv = kv_heads_,
                      hd = head_dim_, t_len]() {
      const int half = hd / 2;
      // Rows are read through pointers where the last axis is dense (the
      // model's case), element by element through the strides otherwise.
      const bool dense = qkv.strides.back() == 1 && cos.strides.back() == 1 &&
                         sin.strides.back() == 1;
      std::vector<float> x(hd), c(hd), sn(hd);
      for (int t = 0; t < t_len; t++) {
        const float* cos_row = dense ? cos.ptr(0, t, 0, 0) : nullptr;
        const float* sin_row = dense ? sin.ptr(0, t, 0, 0) : nullptr;
        if (!dense) {
          for (int d = 0; d < hd; d++) c[d] = cos.at(0, t, 0, d), sn[d] = sin.at(0, t, 0, d);
          cos_row = c.data();
          sin_row = sn.data();
        }
        for (int h = 0; h < nq + 2 * nkv; h++) {
          // The head's slice of the fused product: [1, T, heads * hd].
          const float* xr;
          if (dense) {
            xr = qkv.ptr(0, 0, t, h * hd);
          } else {
            for (int d = 0; d < hd; d++) x[d] = qkv.at(0, 0, t, h * hd + d);
            xr = x.data();
          }
          float* dst;
          if (h < nq) {
            dst = q + (static_cast<int64_t>(h) * t_len + t) * hd;
          } else if (h < nq + nkv) {
            dst = k + (static_cast<int64_t>(h - nq) * t_len + t) * hd;
          } else {
            dst = v + (static_cast<int64_t>(h - nq - nkv) * t_len + t) * hd;
            std::copy(xr, xr + hd, dst);
            continue;
          }
          for (int d = 0; d < half; d++) {
            dst[d] = xr[d] * cos_row[d] + xr[d + half] * sin_row[d];
          }
          for (int d = half; d < hd; d++) {
            dst[d] = xr[d] * cos_row[d] + xr[d - half] * sin_row[d];
          }
        }
      }
    });
  }
  const char* name() const override {
    return "ThinkwireRopeSplit";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const RopeSplit*>(&other);
    return o != nullptr && o->heads_ == heads_ && o->kv_heads_ == kv_heads_ &&
           o->head_dim_ == head_dim_;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    const int t = inputs[0].shape(1);
    return {{1, heads_, t, head_dim_}, {1, kv_heads_, t, head_dim_}, {1, kv_heads_, t, head_dim_}};
  }

 private:
  int heads_, kv_heads_, head_dim_;
};

} // namespace

namespace {
void check_norm_inputs(const char* op, const array& x, const array* y, const array& w) {
  need(x.dtype() == float32 && w.dtype() == float32 && (y == nullptr || y->dtype() == float32),
       op, "inputs must be float32");
  need(x.ndim() == 3, op, "x must be [B, T, n], got " + shape_text(x));
  need(y == nullptr || y->shape() == x.shape(), op, "x and y must have one shape");
  need(w.ndim() == 1 && w.shape(0) == x.shape(2) && x.shape(2) > 0, op,
       "the weight must be [n] for x " + shape_text(x) + ", got " + shape_text(w));
}
} // namespace

extern "C" int thinkwire_rms_norm(mlx_array* res, const mlx_array x, const mlx_array weight,
                                  float eps, const mlx_stream s) {
  return guarded([&] {
    const array& xa = mlx_array_get_(x);
    const array& wa = mlx_array_get_(weight);
    check_norm_inputs("thinkwire_rms_norm", xa, nullptr, wa);
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, "thinkwire_rms_norm",
         "the stream must be a CPU stream");
    mlx_array_set_(*res, array(xa.shape(), float32, std::make_shared<RmsNorm>(stream, eps, false),
                               {xa, wa}));
  });
}

extern "C" int thinkwire_add_rms_norm(mlx_array* sum, mlx_array* normed, const mlx_array x,
                                      const mlx_array y, const mlx_array weight, float eps,
                                      const mlx_stream s) {
  return guarded([&] {
    const array& xa = mlx_array_get_(x);
    const array& ya = mlx_array_get_(y);
    const array& wa = mlx_array_get_(weight);
    check_norm_inputs("thinkwire_add_rms_norm", xa, &ya, wa);
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, "thinkwire_add_rms_norm",
         "the stream must be a CPU stream");
    auto outs = array::make_arrays({xa.shape(), xa.shape()}, {float32, float32},
                                   std::make_shared<RmsNorm>(stream, eps, true), {xa, ya, wa});
    mlx_array_set_(*sum, outs[0]);
    mlx_array_set_(*normed, outs[1]);
  });
}

extern "C" int thinkwire_swiglu(mlx_array* res, const mlx_array gate_up, const mlx_stream s) {
  return guarded([&] {
    const array& gu = mlx_array_get_(gate_up);
    const char* op = "thinkwire_swiglu";
    need(gu.dtype() == float32, op, "gate_up must be float32");
    need(gu.ndim() == 3, op, "gate_up must be [B, T, 2 ffn], got " + shape_text(gu));
    need(gu.shape(-1) > 0 && gu.shape(-1) % 2 == 0, op,
         "the last axis must hold gate and up, got " + shape_text(gu));
    auto shape = gu.shape();
    shape.back() /= 2;
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, op, "the stream must be a CPU stream");
    mlx_array_set_(*res, array(std::move(shape), float32,
                               std::make_shared<SwiGlu>(stream, gu.shape(-1) / 2), {gu}));
  });
}

extern "C" int thinkwire_rope_split(mlx_array* q, mlx_array* k, mlx_array* v, const mlx_array qkv,
                                    const mlx_array cos, const mlx_array sin, int heads,
                                    int kv_heads, int head_dim, const mlx_stream s) {
  return guarded([&] {
    const array& x = mlx_array_get_(qkv);
    const array& c = mlx_array_get_(cos);
    const array& sn = mlx_array_get_(sin);
    const char* op = "thinkwire_rope_split";
    need(x.dtype() == float32 && c.dtype() == float32 && sn.dtype() == float32, op,
         "qkv, cos and sin must be float32");
    need(heads > 0 && kv_heads > 0 && head_dim > 0 && head_dim % 2 == 0, op,
         "heads, kv_heads and an even head_dim must be positive");
    need(static_cast<int64_t>(heads + 2LL * kv_heads) * head_dim <= (1LL << 30), op,
         "heads, kv_heads and head_dim are too large");
    need(x.ndim() == 3 && x.shape(0) == 1 &&
             x.shape(2) == (heads + 2 * kv_heads) * head_dim,
         op, "qkv must be [1, T, (heads + 2 kv_heads) head_dim], got " + shape_text(x));
    const int t = x.shape(1);
    need(c.ndim() == 3 && c.shape() == sn.shape() && c.shape(0) == t && c.shape(1) == 1 &&
             c.shape(2) == head_dim,
         op, "cos and sin must be [T, 1, head_dim], got " + shape_text(c));
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, op, "the stream must be a CPU stream");
    auto outs = array::make_arrays(
        {{1, heads, t, head_dim}, {1, kv_heads, t, head_dim}, {1, kv_heads, t, head_dim}},
        {float32, float32, float32},
        std::make_shared<RopeSplit>(stream, heads, kv_heads, head_dim), {x, c, sn});
    mlx_array_set_(*q, outs[0]);
    mlx_array_set_(*k, outs[1]);
    mlx_array_set_(*v, outs[2]);
  });
}

