// THINKWIRE_KERNEL_ISA's one parser and the CPU checks the kernel families
// share; see cpu.h for the rule.

#include "common/cpu.h"

#include <cstdlib>
#include <string>

namespace thinkwire::cpu {

namespace {

Cap parse(const char* value) {
  if (value == nullptr) return Cap::native;
  const std::string v(value);
  if (v == "portable") return Cap::portable;
  if (v == "avx2") return Cap::avx2;
  if (v == "avx512") return Cap::avx512;
  return Cap::native;
}

} // namespace

Cap cap() {
  static const Cap c = parse(std::getenv("THINKWIRE_KERNEL_ISA"));
  return c;
}

} // namespace thinkwire::cpu

namespace thinkwire {

#if defined(__x86_64__)

bool have_avx2() {
  static const bool yes = cpu::allows(cpu::Cap::avx2) && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
}

bool have_avx512() {
  static const bool yes = cpu::allows(cpu::Cap::avx512) && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
  return yes;
}

#else

bool have_avx2() {
  return false;
}

bool have_avx512() {
  return false;
}

#endif

} // namespace thinkwire
