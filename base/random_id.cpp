#include "base/random_id.hpp"

#include <random>

namespace troupe {

std::string random_id(std::string_view prefix, int length) {
  static constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 gen{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string id(prefix);
  for (int i = 0; i < length; ++i) id += alphabet[pick(gen)];
  return id;
}

}  // namespace troupe
