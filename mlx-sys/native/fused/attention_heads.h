/* Attention of a few query rows against one key/value head's cache, the
 * arithmetic behind thinkwire_attend and thinkwire_attend_cached
 * (fused/attention.cpp). The query heads that share a key/value head (grouped
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
  const void* k;       // key row j at k + j * k_stride elements
  int64_t k_stride;
  const void* v;       // value row j at v + j * v_stride elements
  int64_t v_stride;
  int seen, hd, vd;
  float* out;          // head h's [vd] at out + h * out_stride
  int64_t out_stride;
  float* scratch;      // room for heads * (seen + 8) floats
  bool f16 = false;    // keys and values are IEEE halves, else floats
};

/** A head's result depends only on its own query, the rows it sees and
 * the dimensions (never on `heads` or the other heads), so one sequence's
 * attention is the same alone or batched. With AVX2 and FMA (and F16C for
 * halves) on a CPU that has them. Halves are widened exactly, so a cache
 * of halves gives the result its widened floats would. */
void attend_heads(const AttendHeads& a);

} // namespace thinkwire

#endif
