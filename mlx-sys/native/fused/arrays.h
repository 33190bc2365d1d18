// What the fused CPU operations (norm_rope_swiglu.cpp, attention.cpp)
// share: a strided view of an input, dense copies and argument checks; the
// primitive base class and the error slot are common/'s.
#ifndef THINKWIRE_FUSED_ARRAYS_H
#define THINKWIRE_FUSED_ARRAYS_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/primitive.h"
#include "mlx/array.h"

namespace thinkwire::fused {

using thinkwire::guarded;
using thinkwire::last_error;
using mlx::core::array;
using mlx::core::float32;

// Element offsets of a row-major walk over `a` (its strides in elements):
// row-contiguous inputs are read directly, views through this.
struct Strided {
  const float* data;
  std::vector<int> shape;
  std::vector<int64_t> strides;
  explicit Strided(const array& a)
      : data(a.data<float>()), shape(a.shape().begin(), a.shape().end()),
        strides(a.strides().begin(), a.strides().end()) {}
  // Element at a 4-d index (the arrays here are 3- or 4-d; 3-d uses i0 = 0).
  float at(int i0, int i1, int i2, int i3) const {
    return *ptr(i0, i1, i2, i3);
  }
  const float* ptr(int i0, int i1, int i2, int i3) const {
    const size_t d = shape.size();
    int64_t off = static_cast<int64_t>(i3) * strides[d - 1] + static_cast<int64_t>(i2) * strides[d - 2] +
                  static_cast<int64_t>(i1) * strides[d - 3];
    if (d == 4) off += static_cast<int64_t>(i0) * strides[0];
    return data + off;
  }
};

// A 4-d array's elements in row order into dense `out` (of its dtype).
template <typename T>
void copy_dense(const array& a, T* out) {
  const T* data = a.data<T>();
  const auto& st = a.strides();
  for (int i = 0; i < a.shape(0); i++) {
    for (int h = 0; h < a.shape(1); h++) {
      for (int j = 0; j < a.shape(2); j++) {
        const T* row = data + i * st[0] + h * st[1] + j * st[2];
        for (int d = 0; d < a.shape(3); d++) *out++ = row[d * st[3]];
      }
    }
  }
}

inline void need(bool ok, const char* op, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + what);
}

inline std::string shape_text(const array& a) {
  std::string s = "[";
  for (int i = 0; i < a.ndim(); i++) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}

} // namespace thinkwire::fused

#endif
