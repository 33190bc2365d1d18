/* Intel AMX (Advanced Matrix Extensions) on the CPU: eight tile registers
 * of up to 16 rows x 64 bytes and one instruction that multiplies two of
 * them into a third (16 x 16 int32 sums of 64 byte products, or of 32 bf16
 * products). One TDPBSUD makes 16 x 16 x 32 products at K = 32 in about the
 * time AVX-512 VNNI makes 64 x 8: a prompt's rows through the int8 panels
 * (panels/int8_panels.h) take the tiles 16 rows at a time.
 *
 * Linux hands out the tile state only to a process that asks for it
 * (arch_prctl ARCH_REQ_XCOMP_PERM); available() asks once. Each thread loads
 * its tile shapes before using them (Config::load) and releases them after
 * (release), so a thread that is switched out between kernels has no tile
 * state to save. */
#ifndef THINKWIRE_AMX_TILES_H
#define THINKWIRE_AMX_TILES_H

#include <cstdint>

namespace thinkwire::amx {

/** Whether this CPU has AMX-TILE and AMX-INT8, the kernel granted this
 * process their state, and THINKWIRE_KERNEL_ISA does not cap the kernels
 * below AMX (portable, avx2 or avx512 do). */
bool available();

/** The 64-byte tile configuration LDTILECFG reads (palette 1). */
struct alignas(64) Config {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t
  uint8_t rows[16] = {};    // rows of tile t

  /** Tile t as `rows` x `bytes`. */
  void shape(int t, int tile_rows, int bytes) {
    rows[t] = static_cast<uint8_t>(tile_rows);
    colsb[t] = static_cast<uint16_t>(bytes);
  }
  /** Loads the shapes into this thread's tile registers. */
  void load() const;
};

/** Frees this thread's tile state (TILERELEASE). */
void release();

} // namespace thinkwire::amx

#endif
