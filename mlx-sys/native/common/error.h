/* The one error slot of thinkwire's C API (thinkwire_last_error): every
 * entry point that can fail runs its body through guarded(), which turns a
 * C++ exception into status 1 and the exception's message here (C callers
 * cannot take C++ exceptions). */
#ifndef THINKWIRE_COMMON_ERROR_H
#define THINKWIRE_COMMON_ERROR_H

#include <exception>
#include <string>

namespace thinkwire {

/** This thread's last error message (what thinkwire_last_error returns). */
std::string& last_error();

/** Runs f: 0 on success, 1 with the exception's message in last_error(). */
template <class F>
int guarded(F&& f) {
  try {
    f();
  } catch (std::exception& e) {
    last_error() = e.what();
    return 1;
  }
  return 0;
}

} // namespace thinkwire

#endif
