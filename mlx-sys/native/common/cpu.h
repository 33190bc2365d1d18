/* What the CPU offers thinkwire's kernels, and how far THINKWIRE_KERNEL_ISA
 * lets them use it. Every kernel family asks here; nothing else reads the
 * variable.
 *
 * THINKWIRE_KERNEL_ISA caps the instruction sets, for tests and benchmarks
 * of the paths other CPUs take (read once per process):
 *
 *   portable  the portable loops only (no AVX2 anywhere, attention included)
 *   avx2      AVX2+FMA at most: no AVX-512, no VNNI of either kind, no AMX
 *   avx512    AVX-512 at most (VNNI included, AVX-VNNI too): no AMX
 *   unset, empty or anything else: whatever the CPU has.
 *
 * Each level allows the ones below it; a kernel also needs the CPU to
 * have its instructions, which the functions below check at run time. */
#ifndef THINKWIRE_COMMON_CPU_H
#define THINKWIRE_COMMON_CPU_H

namespace thinkwire::cpu {

/** The cap THINKWIRE_KERNEL_ISA sets, lowest first. */
enum class Cap { portable, avx2, avx512, native };

/** The cap of this process (the variable parsed once, by the rule above). */
Cap cap();

/** Whether the cap lets kernels use the instructions of `level`. */
inline bool allows(Cap level) {
  return cap() >= level;
}

} // namespace thinkwire::cpu

namespace thinkwire {

/** Whether this CPU runs the AVX2+FMA kernels (affine f32 and int8, MXFP4)
 * and the cap allows them (=portable says no, so tests can check the
 * portable loops on machines that have AVX2). Always false off x86-64. */
bool have_avx2();

/** Whether this CPU has AVX-512 F/BW/VL/DQ and FMA (the f32 AVX-512
 * kernels: affine, MXFP4, swiglu, attention) and the cap allows them
 * (=portable or =avx2 says no). Always false off x86-64. */
bool have_avx512();

} // namespace thinkwire

#endif
