// The fused attention operations on the CPU (thinkwire.h), over the
// kernels of fused/attention_heads.h:
//
// - attend: softmax(q k^T * scale) v per head against a sequence's cache
//   (grouped-query heads share a key/value head), causal within the step,
//   for a decode row or a prompt's rows; keys and values floats or halves
//   (read exactly). Its sums run in another order than MLX's BLAS-backed
//   fallback, so it matches that to float rounding, not bit for bit.
// - attend_cached: a decode step's attention for every sequence at once:
//   each row's key/value written into its sequence's cache (in place when
//   MLX can donate the buffer) and its query attended against that cache,
//   in the order attend uses. One operation per layer instead of ~8 per
//   sequence (slices, cache updates, views, attend). The caches may hold
//   halves (rows rounded as MLX rounds them, read back exactly).

#include "mlx/c/thinkwire.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mlx/c/private/mlx.h"
#include "mlx/ops.h"
#include "fused/attention_heads.h"
#include "fused/arrays.h"
#include "common/pool.h"

using namespace thinkwire::fused;

namespace {

using mlx::core::float32;

// ------------------------------------------------------------------ attend

// Every query row of one Attend task: (row, key/value head) items, each
// with the query heads that share that key/value head. Parts take every
// `parts`-th item, so under a causal prompt's triangle (later rows see more)
// they get even shares.
struct AttendTask {
  Strided q, keys, values;
  float* out;
  float scale;
  bool f16;  // keys and values are halves (a cache kept at half the bytes)
};

void attend_part(const void* ctx, int part, int parts) {
  const AttendTask& a = *static_cast<const AttendTask*>(ctx);
  const int nq = a.q.shape[1], t_len = a.q.shape[2], hd = a.q.shape[3];
  const int nkv = a.keys.shape[1], len = a.keys.shape[2], vd = a.values.shape[3];
  const int group = nq / nkv;
  const int items = t_len * nkv;
  std::vector<float> qs(static_cast<size_t>(group) * hd),
      scratch(static_cast<size_t>(group) * (len + 8));
  // Strided's pointers are typed as floats; halves are addressed by bytes.
  const int64_t bytes = a.f16 ? 2 : 4;
  const char* keys = reinterpret_cast<const char*>(a.keys.data);
  const char* values = reinterpret_cast<const char*>(a.values.data);
  for (int item = part; item < items; item += parts) {
    const int t = item / nkv, g = item % nkv;
    for (int h = 0; h < group; h++) {
      for (int d = 0; d < hd; d++) qs[h * hd + d] = a.scale * a.q.at(0, g * group + h, t, d);
    }
    // Query t sees the cache up to its own position. Output
    // [1, T, heads * vd]: the layout the output projection takes.
    thinkwire::attend_heads(thinkwire::AttendHeads{
        qs.data(), group, keys + g * a.keys.strides[1] * bytes, a.keys.strides[2],
        values + g * a.values.strides[1] * bytes, a.values.strides[2], len - t_len + t + 1, hd,
        vd, a.out + (static_cast<int64_t>(t) * nq + g * group) * vd, vd, scratch.data(), a.f16});
  }
}

class Attend : public thinkwire::Primitive {
 public:
  Attend(mlx::core::Stream s, float scale) : Primitive(s), scale_(scale) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    for (const auto& a : inputs) {
      if (a.strides().back() != 1) {
        throw std::runtime_error("thinkwire_attend: the last axis of every input must be dense");
      }
    }
    auto& encoder = encoder_for(inputs, outputs);
    encoder.dispatch([task = AttendTask{Strided(inputs[0]), Strided(inputs[1]), Strided(inputs[2]),
                                        outputs[0].data<float>(), scale_,
                                        inputs[1].dtype() == mlx::core::float16}]() {
      // Heads over the kernels' threads once there is enough to share
      // (below ~32 K multiply-adds a hand-off costs more than it saves).
      const int64_t work = static_cast<int64_t>(task.q.shape[1]) * task.q.shape[2] *
                           task.keys.shape[2] * (task.q.shape[3] + task.values.shape[3]);
      const int parts = work < (32 << 10) ? 1 : task.q.shape[2] * task.keys.shape[1];
      thinkwire::parallel_parts(attend_part, &task, parts);
    });
  }
  const char* name() const override {
    return "ThinkwireAttend";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const Attend*>(&other);
    return o != nullptr && o->scale_ == scale_;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    return {{1, inputs[0].shape(2), inputs[0].shape(1) * inputs[2].shape(3)}};
  }

 private:
  float scale_;
};

// ----------------------------------------------------------- attend_cached

struct AttendCachedTask {
  Strided q, k, v;
  std::vector<void*> dst;         // the caches written (keys, values per sequence)
  std::vector<std::pair<int, array>> views;  // caches to copy into dst first
  bool f16;                       // the caches hold halves, else floats
  std::vector<int> capacity;      // per sequence
  std::vector<int> offsets;       // per sequence
  float* out;
  float scale;
};

// Items are (sequence, key/value head) pairs, each with the query heads
// that share that key/value head; parts take ranges of them.
void attend_cached_part(const void* ctx, int part, int parts) {
  const AttendCachedTask& a = *static_cast<const AttendCachedTask*>(ctx);
  const int nq = a.q.shape[1], seqs = a.q.shape[2], hd = a.q.shape[3];
  const int nkv = a.k.shape[1], vd = a.v.shape[3];
  const int group = nq / nkv;
  const int items = seqs * nkv;
  const int i0 = static_cast<int>(static_cast<int64_t>(items) * part / parts);
  const int i1 = static_cast<int>(static_cast<int64_t>(items) * (part + 1) / parts);
  std::vector<float> qs(static_cast<size_t>(group) * hd), scratch;
  for (int item = i0; item < i1; item++) {
    const int t = item / nkv, g = item % nkv;
    const int seen = a.offsets[t] + 1;
    const int64_t cap = a.capacity[t];
    scratch.resize(static_cast<size_t>(group) * (seen + 8));
    for (int h = 0; h < group; h++) {
      for (int d = 0; d < hd; d++) qs[h * hd + d] = a.scale * a.q.at(0, g * group + h, t, d);
    }
    const size_t bytes = a.f16 ? 2 : 4;
    thinkwire::attend_heads(thinkwire::AttendHeads{
        qs.data(), group, static_cast<char*>(a.dst[2 * t]) + g * cap * hd * bytes, hd,
        static_cast<char*>(a.dst[2 * t + 1]) + g * cap * vd * bytes, vd, seen, hd, vd,
        a.out + (static_cast<int64_t>(t) * nq + g * group) * vd, vd, scratch.data(), a.f16});
  }
}

class AttendCached : public thinkwire::Primitive {
 public:
  AttendCached(mlx::core::Stream s, float scale, std::vector<int> offsets)
      : Primitive(s), scale_(scale), offsets_(std::move(offsets)) {}

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    auto& encoder = mlx::core::cpu::get_command_encoder(stream());
    for (const auto& a : inputs) encoder.set_input_array(a);
    const int seqs = static_cast<int>(offsets_.size());
    AttendCachedTask task{Strided(inputs[0]), Strided(inputs[1]), Strided(inputs[2]), {}, {},
                          inputs[3].dtype() == mlx::core::float16, {}, offsets_, nullptr, scale_};
    outputs[0].set_data(mlx::core::allocator::malloc(outputs[0].nbytes()));
    encoder.set_output_array(outputs[0]);
    task.out = outputs[0].data<float>();
    for (int c = 0; c < 2 * seqs; c++) {
      const array& in = inputs[3 + c];
      array& o = outputs[1 + c];
      // In place: the caller (the engine's KvCache) is the buffers' only
      // user, and the positions written are past every earlier reader's
      // view. MLX could not donate them here: the previous step's task
      // holds its outputs' buffers until it has run, which a pipelined
      // step does not wait for. A buffer that is not dense is copied.
      if (in.flags().row_contiguous && in.data_size() == in.size()) {
        o.copy_shared_buffer(in);
      } else {
        o.set_data(mlx::core::allocator::malloc(o.nbytes()));
        task.views.emplace_back(c, in);
      }
      encoder.set_output_array(o);
      task.dst.push_back(o.data<void>());
      if (c % 2 == 0) task.capacity.push_back(in.shape(2));
    }
    encoder.dispatch([task = std::move(task)]() {
      const int nq = task.q.shape[1], seqs = task.q.shape[2], hd = task.q.shape[3];
      const int nkv = task.k.shape[1], vd = task.v.shape[3];
      for (const auto& [c, view] : task.views) {
        if (task.f16) {
          copy_dense(view, static_cast<mlx::core::float16_t*>(task.dst[c]));
        } else {
          copy_dense(view, static_cast<float*>(task.dst[c]));
        }
      }
      // Each row into its sequence's cache; halves round to nearest even,
      // as MLX's own conversion (a prompt's rows) rounds them.
      for (int t = 0; t < seqs; t++) {
        const int64_t cap = task.capacity[t], pos = task.offsets[t];
        for (int h = 0; h < nkv; h++) {
          const int64_t kr = (h * cap + pos) * hd, vr = (h * cap + pos) * vd;
          if (task.f16) {
            auto* keys = static_cast<mlx::core::float16_t*>(task.dst[2 * t]) + kr;
            auto* values = static_cast<mlx::core::float16_t*>(task.dst[2 * t + 1]) + vr;
            for (int d = 0; d < hd; d++) keys[d] = mlx::core::float16_t(task.k.at(0, h, t, d));
            for (int d = 0; d < vd; d++) values[d] = mlx::core::float16_t(task.v.at(0, h, t, d));
          } else {
            float* keys = static_cast<float*>(task.dst[2 * t]) + kr;
            float* values = static_cast<float*>(task.dst[2 * t + 1]) + vr;
            for (int d = 0; d < hd; d++) keys[d] = task.k.at(0, h, t, d);
            for (int d = 0; d < vd; d++) values[d] = task.v.at(0, h, t, d);
          }
        }
      }
      int64_t work = 0;
      for (int t = 0; t < seqs; t++) work += static_cast<int64_t>(task.offsets[t] + 1) * nq * (hd + vd);
      const int parts = work < (32 << 10) ? 1 : seqs * nkv;
      thinkwire::parallel_parts(attend_cached_part, &task, parts);
    });
  }
  const char* name() const override {
    return "ThinkwireAttendCached";
  }
  bool is_equivalent(const mlx::core::Primitive& other) const override {
    auto* o = dynamic_cast<const AttendCached*>(&other);
    return o != nullptr && o->scale_ == scale_ && o->offsets_ == offsets_;
  }
  std::vector<mlx::core::Shape> output_shapes(const std::vector<array>& inputs) override {
    std::vector<mlx::core::Shape> shapes{
        {1, inputs[0].shape(2), inputs[0].shape(1) * inputs[2].shape(3)}};
    for (size_t c = 3; c < inputs.size(); c++) shapes.push_back(inputs[c].shape());
    return shapes;
  }

 private:
  float scale_;
  std::vector<int> offsets_;
};

} // namespace

extern "C" int thinkwire_attend(mlx_array* res, const mlx_array q, const mlx_array keys,
                                const mlx_array values, float scale, const mlx_stream s) {
  return guarded([&] {
    const array& qa = mlx_array_get_(q);
    const array& ka = mlx_array_get_(keys);
    const array& va = mlx_array_get_(values);
    const char* op = "thinkwire_attend";
    need(qa.dtype() == float32 && ka.dtype() == va.dtype() &&
             (ka.dtype() == float32 || ka.dtype() == mlx::core::float16),
         op, "q must be float32, keys and values both float32 or both float16");
    need(qa.ndim() == 4 && ka.ndim() == 4 && va.ndim() == 4 && qa.shape(0) == 1 &&
             ka.shape(0) == 1 && va.shape(0) == 1,
         op, "q, keys and values must be [1, heads, T, dim]");
    need(ka.shape(1) > 0 && qa.shape(1) % ka.shape(1) == 0 && va.shape(1) == ka.shape(1), op,
         "query heads must be a multiple of the key/value heads, got q " + shape_text(qa) +
             ", keys " + shape_text(ka));
    need(qa.shape(3) == ka.shape(3) && va.shape(2) == ka.shape(2) && ka.shape(2) >= qa.shape(2),
         op, "shapes do not match: q " + shape_text(qa) + ", keys " + shape_text(ka) +
                 ", values " + shape_text(va));
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, op, "the stream must be a CPU stream");
    mlx_array_set_(*res, array({1, qa.shape(2), qa.shape(1) * va.shape(3)}, float32,
                               std::make_shared<Attend>(stream, scale), {qa, ka, va}));
  });
}

extern "C" int thinkwire_attend_cached(mlx_array* res, mlx_array* caches_out, const mlx_array q,
                                       const mlx_array k, const mlx_array v,
                                       const mlx_array* caches, const int* offsets, int seqs,
                                       float scale, const mlx_stream s) {
  return guarded([&] {
    const array& qa = mlx_array_get_(q);
    const array& ka = mlx_array_get_(k);
    const array& va = mlx_array_get_(v);
    const char* op = "thinkwire_attend_cached";
    need(seqs > 0, op, "no sequences");
    need(qa.dtype() == float32 && ka.dtype() == float32 && va.dtype() == float32, op,
         "q, k and v must be float32");
    need(qa.ndim() == 4 && ka.ndim() == 4 && va.ndim() == 4 && qa.shape(0) == 1 &&
             ka.shape(0) == 1 && va.shape(0) == 1 && qa.shape(2) == seqs &&
             ka.shape(2) == seqs && va.shape(2) == seqs,
         op, "q, k and v must be [1, heads, sequences, dim] with one row per sequence, got q " +
                 shape_text(qa) + ", k " + shape_text(ka) + ", v " + shape_text(va));
    need(ka.shape(1) > 0 && qa.shape(1) % ka.shape(1) == 0 && va.shape(1) == ka.shape(1) &&
             qa.shape(3) == ka.shape(3),
         op, "query heads must be a multiple of the key/value heads, got q " + shape_text(qa) +
                 ", k " + shape_text(ka));
    std::vector<array> inputs{qa, ka, va};
    std::vector<mlx::core::Shape> shapes{{1, seqs, qa.shape(1) * va.shape(3)}};
    std::vector<int> offs(offsets, offsets + seqs);
    const auto cache_dtype = mlx_array_get_(caches[0]).dtype();
    need(cache_dtype == float32 || cache_dtype == mlx::core::float16, op,
         "caches must be float32 or float16");
    for (int t = 0; t < seqs; t++) {
      const array& kc = mlx_array_get_(caches[2 * t]);
      const array& vc = mlx_array_get_(caches[2 * t + 1]);
      need(kc.dtype() == cache_dtype && vc.dtype() == cache_dtype, op,
           "every cache must have the first one's dtype");
      need(kc.ndim() == 4 && vc.ndim() == 4 && kc.shape(0) == 1 && vc.shape(0) == 1 &&
               kc.shape(1) == ka.shape(1) && vc.shape(1) == ka.shape(1) &&
               kc.shape(3) == ka.shape(3) && vc.shape(3) == va.shape(3) &&
               kc.shape(2) == vc.shape(2),
           op, "sequence " + std::to_string(t) + "'s cache does not match k/v: keys " +
                   shape_text(kc) + ", values " + shape_text(vc) + ", k " + shape_text(ka));
      need(offs[t] >= 0 && offs[t] < kc.shape(2), op,
           "sequence " + std::to_string(t) + "'s offset " + std::to_string(offs[t]) +
               " is outside its cache " + shape_text(kc));
      inputs.push_back(kc);
      inputs.push_back(vc);
      shapes.push_back(kc.shape());
      shapes.push_back(vc.shape());
    }
    auto stream = mlx_stream_get_(s);
    need(stream.device == mlx::core::Device::cpu, op, "the stream must be a CPU stream");
    std::vector<mlx::core::Dtype> dtypes(shapes.size(), cache_dtype);
    dtypes[0] = float32;
    auto outs = array::make_arrays(std::move(shapes), dtypes,
                                   std::make_shared<AttendCached>(stream, scale, std::move(offs)),
                                   std::move(inputs));
    mlx_array_set_(*res, outs[0]);
    for (size_t c = 1; c < outs.size(); c++) mlx_array_set_(caches_out[c - 1], outs[c]);
  });
}
