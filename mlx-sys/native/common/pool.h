/* The kernels' threads (a fixed pool the quantized products and the fused
 * operations share); internal to thinkwire's native code. */
#ifndef THINKWIRE_COMMON_POOL_H
#define THINKWIRE_COMMON_POOL_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace thinkwire {

// Set once the quantized kernels have run in this process. Until then the
// pool's workers (woken by the fused operations only) sleep as soon as
// they are idle: a dense model's matmuls run on BLAS's own threads, and
// workers spinning beside them took the cores those threads needed (f32
// decoding of the default model ran 2.7x slower).
inline std::atomic<bool> kernels_in_use{false};

// ---------------------------------------------------------------- threads

// Runs one job split into parts on a fixed set of threads. The decode loop
// calls it about 120 times per token with MLX's other operations between
// the calls, so idle workers spin for a while (THINKWIRE_KERNEL_SPIN_US)
// before sleeping: waking a sleeping thread costs more than a small matvec,
// and on a 2-core machine the wake-ups and the sleeping caller's spin-wait
// took ~20 % of a decode step. A prefill product sends them to sleep
// before it hands the cores to BLAS (`nap`).
class Pool {
 public:
  using Fn = void (*)(const void* ctx, int part, int parts);

  static Pool& get() {
    static Pool* pool = new Pool(configured_threads()); // never destroyed
    return *pool;
  }

  int size() const {
    return static_cast<int>(workers_.size()) + 1;
  }

  // Idle workers stop spinning and sleep now (BLAS is about to use every
  // core).
  void nap() {
    nap_.store(true, std::memory_order_release);
  }

  void run(Fn fn, const void* ctx, int parts) {
    parts = std::min(parts, size());
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (parts <= 1 || !busy.owns_lock()) {
      // Alone, or another stream is using the workers: run inline.
      for (int p = 0; p < parts; p++) fn(ctx, p, parts);
      return;
    }
    fn_ = fn;
    ctx_ = ctx;
    parts_ = parts;
    nap_.store(false, std::memory_order_relaxed);
    remaining_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
    }
    wake_.notify_all();
    fn(ctx, 0, parts);
    while (remaining_.load(std::memory_order_acquire) != 0) relax();
  }

 private:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; i++) {
      try {
        workers_.emplace_back([this, i] { work(i); });
      } catch (const std::system_error&) {
        break; // a thread limit: run with the workers we have
      }
      workers_.back().detach();
    }
  }

  static int configured_threads() {
    if (const char* v = std::getenv("THINKWIRE_KERNEL_THREADS")) {
      int n = std::atoi(v);
      if (n >= 1) return std::min(n, 64);
    }
    int n = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    return std::clamp(n, 1, 16);
  }

  static void relax() {
#if defined(__x86_64__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
  }

  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      seen = wait_for(seen);
      if (index < parts_) fn_(ctx_, index, parts_);
      remaining_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  // How long an idle worker spins before sleeping
  // (THINKWIRE_KERNEL_SPIN_US, default 2000: engine/README.md has the
  // measurements; 10 µs, the former default, let workers fall asleep
  // between every two products of a decode step).
  static std::chrono::microseconds spin_time() {
    static const std::chrono::microseconds t = [] {
      const char* v = std::getenv("THINKWIRE_KERNEL_SPIN_US");
      return std::chrono::microseconds(v != nullptr ? std::max(0, std::atoi(v)) : 2000);
    }();
    return t;
  }

  // Returns the next generation after `seen`: spin a while (until a nap),
  // then sleep.
  uint64_t wait_for(uint64_t seen) {
    const auto start = std::chrono::steady_clock::now();
    const auto spin = kernels_in_use.load(std::memory_order_relaxed) ? spin_time()
                                                                       : std::chrono::microseconds(0);
    for (int i = 1;; i++) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      if (g != seen) return g;
      relax();
      if (nap_.load(std::memory_order_acquire)) break;
      if ((i & 255) == 0 && std::chrono::steady_clock::now() - start > spin) break;
    }
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    return generation_.load(std::memory_order_acquire);
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> nap_{false}; // set by nap(), cleared by run()
  // Written by run() before the generation is published.
  Fn fn_ = nullptr;
  const void* ctx_ = nullptr;
  int parts_ = 0;
};

// Parts for a product over n x k weights of `bits`: below ~64 KB of
// weights a second thread costs more than it saves.
inline int parts_for(int n, int k, int bits) {
  const size_t bytes = static_cast<size_t>(n) * k * bits / 8;
  return bytes < (64u << 10) ? 1 : Pool::get().size();
}

// Part `part` of `parts` of a product's weight rows, for the pool: split on
// multiples of 8 rows so parts do not share cache lines of y.
template <class P, void (*Rows)(const P&, int, int)>
void rows_part(const void* ctx, int part, int parts) {
  const P& p = *static_cast<const P*>(ctx);
  const int blocks = (p.n + 7) / 8;
  const int b0 = static_cast<int>(static_cast<int64_t>(blocks) * part / parts);
  const int b1 = static_cast<int>(static_cast<int64_t>(blocks) * (part + 1) / parts);
  Rows(p, std::min(b0 * 8, p.n), std::min(b1 * 8, p.n));
}

/** Worker threads the kernels use (the caller's thread included). */
inline int kernel_threads() {
  return Pool::get().size();
}

/** Runs fn(ctx, part, parts) for every part in [0, parts) on the kernels'
 * threads, the caller's included, and returns when all are done; with
 * more parts than threads, parts is cut to the thread count. For the fused
 * operations, so they share the kernels' awake workers. */
inline void parallel_parts(void (*fn)(const void* ctx, int part, int parts), const void* ctx,
                           int parts) {
  Pool::get().run(fn, ctx, std::max(1, std::min(parts, Pool::get().size())));
}

} // namespace thinkwire

#endif
