/* thinkwire's additions to the mlx-c API (mlx-sys/native/).
 *
 * `scripts/setup-mlx` compiles them into libmlxc next to mlx-c and copies
 * this header beside mlx-c's, so the mlx-sys build generates their bindings
 * with the rest. Like mlx-c they return results through `res` and 0 on
 * success; on failure they return 1 and keep the message for
 * `thinkwire_last_error` (mlx-c's error handler belongs to mlx-rs). */
#ifndef THINKWIRE_MLX_C_H
#define THINKWIRE_MLX_C_H

#include "mlx/c/array.h"
#include "mlx/c/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether thinkwire has a CPU kernel for this affine quantization. */
bool thinkwire_quantized_supported(int group_size, int bits);

/* res = x . dequantize(w, scales, biases)^T as one lazy MLX operation on the
 * CPU, computed by thinkwire's kernels (quantized/affine.h): x float32
 * [..., k]; w uint32 [n, k * bits / 32]; scales and biases float32
 * [n, k / group_size]. activations: 0 multiplies x as it is (exact up to
 * rounding), 1 quantizes it to 8 bits per block of 32 for integer dot
 * products (quantized/int8.h; faster, ~0.5 % relative error) where the
 * kernels run, 2 does the same for weights, scales and biases repacked by
 * thinkwire_int8_panels_repack (panels/int8_panels.h); 3 multiplies x as it
 * is against 4-bit weights so repacked, on AMX-BF16 tiles (panels/bf16_tiles.h;
 * exact products, f32 sums). Inputs longer than thinkwire_kernel_max_rows
 * go through BLAS in f32 for 0 and 1; 2 and 3 take any length. */
int thinkwire_quantized_matmul(
    mlx_array* res,
    const mlx_array x,
    const mlx_array w,
    const mlx_array scales,
    const mlx_array biases,
    int group_size,
    int bits,
    int activations,
    const mlx_stream s);

/* Whether this CPU and process run the f32 tiles (activations 3: AMX-BF16
 * and AVX512-BF16, the tile state granted by Linux). */
bool thinkwire_f32_tiles_available(void);

/* Whether this CPU runs the int8 panel kernels (AVX-512 VNNI), which
 * multiply batches of 8-bit activations 16 weight rows per instruction. */
bool thinkwire_int8_panels_available(void);

/* Repacks 4- or 8-bit weights w [n, k * bits / 8] bytes, scales and biases
 * [n, k / group_size] f32 into the panel layout of the same sizes (pw, ps,
 * pb), for activations 2. n must be a multiple of 16 and group_size of 32. */
int thinkwire_int8_panels_repack(
    const uint8_t* w,
    const float* scales,
    const float* biases,
    int n,
    int k,
    int group_size,
    int bits,
    uint8_t* pw,
    float* ps,
    float* pb);

/* Up to this many rows of x, thinkwire_quantized_matmul reads the packed
 * weights once for all rows and each output row is bit-identical to what
 * its x row alone gives; longer inputs go through BLAS. */
int thinkwire_kernel_max_rows(void);

/* y[m, n] = x[m, k] . dequantize(w, scales, biases)^T on raw row-major
 * buffers, now, by a chosen path: 0 the default, 1 the kernels reading the
 * weights once for all rows, 2 the kernels once per row of x, 3 dequantized
 * tiles through BLAS; activations as for thinkwire_quantized_matmul. For
 * tests and benchmarks; w is [n, k * bits / 8] bytes. */
int thinkwire_quantized_matmul_raw(
    const float* x,
    int m,
    int k,
    const uint8_t* w,
    const float* scales,
    const float* biases,
    int n,
    int group_size,
    int bits,
    float* y,
    int path,
    int activations);

/* Mixture-of-experts products on thinkwire's kernels: res[r, j] =
 * x[r] . W[indices[r, j]]^T for x float32 [rows, k], indices uint32
 * [rows, per_row] and experts w [experts, n, k * bits / 32] with scales and
 * biases float32 [experts, n, k / group_size]; res is [rows, per_row, n].
 * Each expert the indices name is read once for all rows routed to it. An
 * index past the experts gives NaN rows. */
int thinkwire_gather_quantized_matmul(
    mlx_array* res,
    const mlx_array x,
    const mlx_array indices,
    const mlx_array w,
    const mlx_array scales,
    const mlx_array biases,
    int group_size,
    int bits,
    int activations,
    const mlx_stream s);

/* thinkwire_quantized_matmul for MXFP4 weights (mxfp4/mxfp4.h): w uint32
 * [n, k / 8] (MLX's `mxfp4` packing), scales uint8 [n, k / 32] (e8m0), no
 * biases; x float32 [..., k] multiplied as it is. */
int thinkwire_mxfp4_matmul(
    mlx_array* res,
    const mlx_array x,
    const mlx_array w,
    const mlx_array scales,
    const mlx_stream s);

/* thinkwire_gather_quantized_matmul for MXFP4 experts: w uint32
 * [experts, n, k / 8], scales uint8 [experts, n, k / 32]. */
int thinkwire_gather_mxfp4_matmul(
    mlx_array* res,
    const mlx_array x,
    const mlx_array indices,
    const mlx_array w,
    const mlx_array scales,
    const mlx_stream s);

/* thinkwire_quantized_matmul_raw for MXFP4 weights (w [n, k / 2] bytes,
 * scales [n, k / 32] e8m0 bytes). For tests and benchmarks. */
int thinkwire_mxfp4_matmul_raw(
    const float* x,
    int m,
    int k,
    const uint8_t* w,
    const uint8_t* scales,
    int n,
    float* y,
    int path);

/* MLX's own MXFP4 operations, with errors in thinkwire_last_error: x .
 * dequantize(w, scales)^T; the gather of experts `indices` ([..]) as
 * mlx.core.gather_qmm with rhs_indices; and the weights dequantized to
 * float32. */
int thinkwire_mlx_mxfp4_matmul(
    mlx_array* res,
    const mlx_array x,
    const mlx_array w,
    const mlx_array scales,
    const mlx_stream s);
int thinkwire_mlx_mxfp4_gather(
    mlx_array* res,
    const mlx_array x,
    const mlx_array w,
    const mlx_array scales,
    const mlx_array indices,
    bool sorted,
    const mlx_stream s);
int thinkwire_mlx_mxfp4_dequantize(
    mlx_array* res,
    const mlx_array w,
    const mlx_array scales,
    const mlx_stream s);

/* The instruction set the int8-activation kernels use on this CPU:
 * "avx512-vnni", "avx-vnni", "avx2" or "portable". */
const char* thinkwire_int8_isa(void);

/* Nanoseconds the MLX operation of thinkwire_quantized_matmul has spent in
 * the kernels since the process started, and how many times it ran (for
 * the per-step breakdown of `thinkwire bench`). */
void thinkwire_kernel_time(uint64_t* ns, uint64_t* calls);

/* Fused operations for a decode step on the CPU (fused/norm_rope_swiglu.cpp,
 * fused/attention.cpp); each is one lazy MLX operation. On failure they
 * return 1 and thinkwire_last_error() tells why. */

/* res = MLX's RMS norm of x float32 [B, T, n] with weight [n] (the same
 * bits as fast::rms_norm on the CPU). */
int thinkwire_rms_norm(
    mlx_array* res,
    const mlx_array x,
    const mlx_array weight,
    float eps,
    const mlx_stream s);

/* sum = x + y and normed = its RMS norm, for x and y float32 [B, T, n]. */
int thinkwire_add_rms_norm(
    mlx_array* sum,
    mlx_array* normed,
    const mlx_array x,
    const mlx_array y,
    const mlx_array weight,
    float eps,
    const mlx_stream s);

/* res = silu(gate) * up for gate_up float32 [B, T, 2F] (gate first): the
 * numbers of MLX's `g * sigmoid(g) * u`. */
int thinkwire_swiglu(mlx_array* res, const mlx_array gate_up, const mlx_stream s);

/* The fused q/k/v product qkv float32 [1, T, (heads + 2 kv_heads) head_dim]
 * split into heads-first q [1, heads, T, head_dim], k and v [1, kv_heads,
 * T, head_dim], q and k rotated by the step's table rows cos and sin
 * [T, 1, head_dim] (sin signed for the first half): x * cos +
 * rotate_half(x) * sin, rounded as MLX's operations round it. */
int thinkwire_rope_split(
    mlx_array* q,
    mlx_array* k,
    mlx_array* v,
    const mlx_array qkv,
    const mlx_array cos,
    const mlx_array sin,
    int heads,
    int kv_heads,
    int head_dim,
    const mlx_stream s);

/* softmax(q keys^T * scale) values per head for q [1, heads, T, d] against
 * keys [1, kv_heads, L, d] and values [1, kv_heads, L, dv] (views allowed;
 * query t sees the first L - T + t + 1 positions), as [1, T, heads * dv]. */
int thinkwire_attend(
    mlx_array* res,
    const mlx_array q,
    const mlx_array keys,
    const mlx_array values,
    float scale,
    const mlx_stream s);

/* One decode token per sequence against each sequence's own cache: row t
 * of q [1, heads, S, d], k [1, kv_heads, S, d], v [1, kv_heads, S, dv] is
 * sequence t's token. Its k/v row is written at position offsets[t] of
 * caches[2t] (keys, [1, kv_heads, capacity_t, d]) and caches[2t + 1]
 * (values), returned as caches_out[2t], caches_out[2t + 1]. Dense
 * caches are written in place (caches_out shares their memory): the
 * caller must be their only user. Its query attends over
 * positions [0, offsets[t]] as thinkwire_attend would. res is
 * [1, S, heads * dv]. One operation for every sequence of a step. */
int thinkwire_attend_cached(
    mlx_array* res,
    mlx_array* caches_out,
    const mlx_array q,
    const mlx_array k,
    const mlx_array v,
    const mlx_array* caches,
    const int* offsets,
    int seqs,
    float scale,
    const mlx_stream s);

/* The message of the calling thread's last failed thinkwire_* call (one
 * slot for every entry point: the products, the fused operations). */
const char* thinkwire_last_error(void);

/* Threads the kernels run on (THINKWIRE_KERNEL_THREADS, else the CPUs this
 * process may use, at most 16). */
int thinkwire_kernel_threads(void);

/* res = silu(gate) * up (the operations of `gate * sigmoid(gate) * up`) as
 * one function compiled by MLX (compiled/swiglu.cpp), for gate and up of
 * one shape and type on MLX's default stream: one fused kernel on a GPU. */
int thinkwire_compiled_swiglu(mlx_array* res, const mlx_array gate, const mlx_array up);

/* res = Gumbel noise float32 [rows, vocab] for drawing tokens
 * (compiled/gumbel.cpp): at (r, t), -log(-log(u)) with u in (0, 1) a hash
 * of keys[r] and t, so a row's noise depends on its key alone. keys is
 * uint32 [rows, 1]. compiled: as one function compiled by MLX (a GPU). */
int thinkwire_gumbel_noise(mlx_array* res, const mlx_array keys, int vocab, bool compiled);

/* res = the next token of each row of logits float32 [rows, vocab], int32
 * [rows, 1], in one operation on the CPU (draw/draw.cpp): per row, params
 * float32 [rows, 4] holds 1/temperature (0: the argmax), top_k (0: off),
 * top_p (1: off) and min_p (0: off); the kept logits plus the Gumbel noise
 * of thinkwire_gumbel_noise for keys uint32 [rows, 1] give the argmax. */
int thinkwire_draw(
    mlx_array* res,
    const mlx_array logits,
    const mlx_array params,
    const mlx_array keys,
    const mlx_stream s);

/* res = gpt-oss's (clip(up, +-limit) + 1) * g * sigmoid(alpha * g) with
 * g = min(gate, limit), limit and alpha in gate's type, as one function
 * compiled by MLX (compiled/clamped_swiglu.cpp); gate and up of one shape
 * and type. */
int thinkwire_compiled_clamped_swiglu(
    mlx_array* res,
    const mlx_array gate,
    const mlx_array up,
    float limit,
    float alpha);

#ifdef __cplusplus
}
#endif

#endif
