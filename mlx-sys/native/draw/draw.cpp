// The next token of each row of a step's logits, drawn in one operation on
// the CPU (thinkwire.h, thinkwire_draw): what engine/src/mlx/scheduler/draw.rs
// builds from MLX's operations on a GPU (scale by 1/temperature, top-k, top-p
// over what top-k kept, min-p, then the argmax of the kept logits plus
// Gumbel noise), where the CPU's sort and a dozen passes over the vocabulary
// cost more than the step they let the host queue ahead.
//
// Per row it keeps the same tokens as those operations: top-k's threshold is
// the k-th largest logit (ties with it kept); top-p counts, in descending
// order within top-k, the tokens whose softmax mass before them is under p
// and keeps those at or above the last one's logit; min-p keeps the logits
// within ln(min_p) of the best. Only the head top-p reaches is sorted (it
// widens fourfold while its mass is under p). The noise is compiled/gumbel.cpp's
// hash, bit for bit, and it is computed only for tokens that could still win:
// noise lies in [-2.82, 16.64], so a kept logit more than 17.5 below the best
// noisy value so far cannot reach it. NaN logits count as -inf. Rows with 1/temperature 0 take the
// argmax of their logits, the lowest id on ties, as MLX's argmax does.

// The noise's sums and products round as MLX's element-wise operations do.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "mlx/c/thinkwire.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "common/pool.h"
#include "fused/arrays.h"
#include "mlx/c/private/mlx.h"

using namespace thinkwire::fused;

namespace {

using mlx::core::array;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Above the largest noise a 23-bit u gives, -log(-log(1 - 2^-24)) = 16.64.
constexpr float kNoiseCeiling = 17.5f;

// lowbias32's mixer (compiled/gumbel.cpp's `mix`).
inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

// -log(-log(u)) for token `id` of the row keyed `mixed_key` (= mix(key)).
inline float noise(uint32_t mixed_key, uint32_t id) {
  const uint32_t bits = mix(id ^ mixed_key);
  const float top = static_cast<float>(bits >> 9);
  const float u = (top + 0.5f) * (1.0f / 8388608.0f);
  return -std::log(-std::log(u));
}

// One row's filters: 1/temperature (0: greedy), top-k (0: off), top-p (1:
// off), min-p (0: off).
struct RowParams {
  float inv_temperature;
  int top_k;
  float top_p;
  float min_p;
};

// The lowest scaled logit top-k and top-p keep, from `scaled` (n values)
// whose largest is `best`; `scratch` is a buffer of n floats.
float kept_floor(const float* scaled, int n, float best, const RowParams& p,
                 std::vector<float>& scratch) {
  const int k = p.top_k > 0 ? std::min(p.top_k, n) : n;
  scratch.assign(scaled, scaled + n);
  auto desc = std::greater<float>();
  if (k < n) std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), desc);
  if (p.top_p >= 1.0f) {
    return k < n ? scratch[k - 1] : *std::min_element(scratch.begin(), scratch.end());
  }
  // Top-p over the k largest (now scratch[0, k)): softmax mass in
  // descending order, counting the tokens whose mass before them is under p.
  double total = 0.0;
  for (int i = 0; i < k; i++) total += std::exp(static_cast<double>(scratch[i] - best));
  int head = std::min(64, k);
  for (;;) {
    if (head < k) std::nth_element(scratch.begin(), scratch.begin() + (head - 1), scratch.begin() + k, desc);
    std::sort(scratch.begin(), scratch.begin() + head, desc);
    double before = 0.0;
    for (int i = 0; i < head; i++) {
      if (before >= p.top_p) return scratch[std::max(i, 1) - 1];
      before += std::exp(static_cast<double>(scratch[i] - best)) / total;
    }
    if (head == k) return scratch[k - 1];
    head = std::min(head * 4, k);
  }
}

// The token row `r` picks: its argmax, or the draw its parameters ask for.
int32_t pick_row(const float* logits, int64_t stride, int n, const RowParams& p, uint32_t key,
                 std::vector<float>& scaled, std::vector<float>& scratch) {
  auto at = [&](int i) { return logits[static_cast<int64_t>(i) * stride]; };
  if (p.inv_temperature == 0.0f) {
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (at(i) > at(best)) best = i;
    }
    return best;
  }
  scaled.resize(n);
  int argmax = 0;
  for (int i = 0; i < n; i++) {
    const float s = at(i) * p.inv_temperature;
    // NaN would break the sorts' ordering (and 1/temperature can be inf).
    scaled[i] = std::isnan(s) ? kNegInf : s;
    if (scaled[i] > scaled[argmax]) argmax = i;
  }
  const float best = scaled[argmax];
  const float floor = p.top_k > 0 || p.top_p < 1.0f ? kept_floor(scaled.data(), n, best, p, scratch)
                                                    : kNegInf;
  const float likely = p.min_p > 0.0f ? std::log(p.min_p) : kNegInf;
  const uint32_t mixed = mix(key);
  // The best logit is always kept; its noisy value bounds what can win.
  int winner = argmax;
  float top = best + noise(mixed, static_cast<uint32_t>(argmax));
  for (int i = 0; i < n; i++) {
    const float s = scaled[i];
    if (!(s >= floor) || !(s - best >= likely) || s + kNoiseCeiling < top) continue;
    const float v = s + noise(mixed, static_cast<uint32_t>(i));
    if (v > top || (v == top && i < winner)) {
      winner = i;
      top = v;
    }
  }
  return winner;
}

struct DrawTask {
  const float* logits;
  int64_t row_stride, col_stride;
  int vocab;
  int64_t rows;
  const float* params;  // [rows, 4], read through its strides
  int64_t param_row, param_col;
  const uint32_t* keys; // [rows, 1]
  int64_t key_row;
  int32_t* out;
};

// Rows [rows * part / parts, rows * (part + 1) / parts) of the step.
void draw_part(const void* ctx, int part, int parts) {
  const DrawTask& t = *static_cast<const DrawTask*>(ctx);
  std::vector<float> scaled, scratch;
  for (int64_t r = t.rows * part / parts; r < t.rows * (part + 1) / parts; r++) {
    const float* q = t.params + r * t.param_row;
    const int64_t c = t.param_col;
    const RowParams p{q[0], static_cast<int>(q[c]), q[2 * c], q[3 * c]};
    t.out[r] = pick_row(t.logits + r * t.row_stride, t.col_stride, t.vocab, p,
                        t.keys[r * t.key_row], scaled, scratch);
  }
}

class Draw : public thinkwire::Primitive {
 public:
  using Primitive::Primitive;

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    auto& encoder = encoder_for(inputs, outputs);
    const array& logits = inputs[0];
    const array& params = inputs[1];
    const array& keys = inputs[2];
    const int rows = logits.shape(0);
    encoder.dispatch([task = DrawTask{logits.data<float>(), logits.strides()[0],
                                      logits.strides()[1], logits.shape(1), rows,
                                      params.data<float>(), params.strides()[0],
                                      params.strides()[1], keys.data<uint32_t>(),
                                      keys.strides()[0], outputs[0].data<int32_t>()}]() {
      // Rows over the kernels' threads (one to a few dozen a step).
      thinkwire::parallel_parts(draw_part, &task, static_cast<int>(task.rows));
    });
  }
  const char* name() const override {
    return "ThinkwireDraw";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    return dynamic_cast<const Draw*>(&other) != nullptr;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    return {{inputs[0].shape(0), 1}};
  }

 protected:
  const char* gpu_hint() const override {
    return " (on a GPU the draw is built from MLX's operations)";
  }
};

}  // namespace

extern "C" int thinkwire_draw(mlx_array* res, const mlx_array logits, const mlx_array params,
                              const mlx_array keys, const mlx_stream s) {
  return guarded([&] {
    const array& l = mlx_array_get_(logits);
    const array& p = mlx_array_get_(params);
    const array& k = mlx_array_get_(keys);
    const char* op = "thinkwire_draw";
    need(l.dtype() == float32 && l.ndim() == 2 && l.shape(0) > 0 && l.shape(1) > 0, op,
         "logits must be float32 [rows, vocab], got " + shape_text(l));
    const int rows = l.shape(0);
    need(p.dtype() == float32 && p.ndim() == 2 && p.shape(0) == rows && p.shape(1) == 4, op,
         "params must be float32 [rows, 4], got " + shape_text(p));
    need(k.dtype() == mlx::core::uint32 && k.ndim() == 2 && k.shape(0) == rows && k.shape(1) == 1,
         op, "keys must be uint32 [rows, 1], got " + shape_text(k));
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, op, "the stream must be a CPU stream");
    // Every input is read through its strides: no copy into dense rows.
    mlx_array_set_(*res, array({rows, 1}, mlx::core::int32, std::make_shared<Draw>(stream),
                               {l, p, k}));
  });
}
