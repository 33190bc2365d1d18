/* Attention of a few query rows against one key/value head's cache, the
 * arithmetic behind thinkwire_attend and thinkwire_attend_cached
 * (fused_ops.cpp). The query heads that share a key/value head (grouped
 * query attention) go together, so each key and value row is read once
 * for all of them. */
#ifndef THINKWIRE_ATTENTION_KERNELS_H
#define THINKWIRE_ATTENTION_KERNELS_H

#include <cstdint>

namespace thinkwire {

/** out_h = softmax(q_h . K^T) V over the first `seen` rows, for h in
 * [0, heads). */
struct AttendHeads {
  const float* q;      // [heads, hd], already scaled
  int heads;
  const float* k;      // key row j at k + j * k_stride
  int64_t k_stride;
  const float* v;      // value row j at v + j * v_stride
  int64_t v_stride;
  int seen, hd, vd;
  float* out;          // head h's [vd] at out + h * out_stride
  int64_t out_stride;
  float* scratch;      // room for heads * (seen + 8) floats
};

/** A head's result depends only on its own query, the rows it sees and
 * the dimensions (never on `heads` or the other heads), so one sequence's
 * attention is the same alone or batched. With AVX2 and FMA on a CPU that
 * has them. */
void attend_heads(const AttendHeads& a);

} // namespace thinkwire

#endif
