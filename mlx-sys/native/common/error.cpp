// The error slot of thinkwire's C API; see error.h.

#include "mlx/c/thinkwire.h"

#include "common/error.h"

std::string& thinkwire::last_error() {
  thread_local std::string message;
  return message;
}

extern "C" const char* thinkwire_last_error(void) {
  return thinkwire::last_error().c_str();
}
