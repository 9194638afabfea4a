#pragma once
// Invariant checks: a broken invariant is a bug, so it stops the process loudly with the
// file, line and condition. Recoverable failures use troupe::result instead.
#include <cstdio>
#include <cstdlib>

#define TROUPE_CHECK(cond, msg)                                                                         \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      std::fprintf(stderr, "troupe: check failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, msg); \
      std::abort();                                                                                     \
    }                                                                                                   \
  } while (0)
