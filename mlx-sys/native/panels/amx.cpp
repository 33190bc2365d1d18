// AMX availability and tile configuration; see panels/amx.h.

#include "panels/amx.h"

#include "common/cpu.h"


#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace thinkwire::amx {

#if defined(__x86_64__) && defined(__linux__)

namespace {

// Linux's arch_prctl request for an extended state component, and the
// component of the tile data (asm/prctl.h, the XSAVE feature numbering).
constexpr int kReqXcompPerm = 0x1023;
constexpr int kXfeatureTileData = 18;

bool cpu_has_amx_int8() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
  return tile && int8;
}

} // namespace

bool available() {
  static const bool yes = [] {
    if (!cpu::allows(cpu::Cap::native)) return false;
    if (!cpu_has_amx_int8()) return false;
    // Granted once for the whole process (every thread, present and future).
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
  }();
  return yes;
}

__attribute__((target("amx-tile"))) void Config::load() const {
  _tile_loadconfig(this);
}

__attribute__((target("amx-tile"))) void release() {
  _tile_release();
}

#else

bool available() {
  return false;
}

void Config::load() const {}

void release() {}

#endif

} // namespace thinkwire::amx
