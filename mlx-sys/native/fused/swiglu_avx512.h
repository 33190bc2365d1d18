/* SwiGLU's element-wise step, g * sigmoid(g) * u, 16 floats at a time on
 * AVX-512 CPUs with the bits of MLX's scalar sigmoid (the fused swiglu in
 * fused/norm_rope_swiglu.cpp runs the tail and other CPUs through MLX's own code). */
#ifndef THINKWIRE_SWIGLU_VECTORS_H
#define THINKWIRE_SWIGLU_VECTORS_H

namespace thinkwire {

/** o[j] = g[j] * sigmoid(g[j]) * u[j] for j from j0 in whole 16-float
 * vectors; returns where it stopped (j0 on CPUs without AVX-512, or under
 * THINKWIRE_KERNEL_ISA=avx2|portable). */
int swiglu_vectors(const float* g, const float* u, float* o, int j0, int j1);

} // namespace thinkwire

#endif
