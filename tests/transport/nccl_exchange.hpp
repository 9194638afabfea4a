#pragma once
// The exchanges of the NCCL transport test, run alike by its two ranks: test_nccl_transport
// is rank 0 on device 0, and nccl_peer rank 1 on device 1, in a process of its own that the
// test can kill. The test writes the peer commands on its standard input, one a line, and
// the peer answers each with one line on its standard output, "ok" or "error: why" (what
// NCCL and CUDA print goes to its standard error):
//
//   join ID TIMEOUT_MS            joins communicator ID (hex) of two ranks
//   transfer SEED SIZE...         exchanges one message of each size each way (transfer)
//   all_to_all SEED C00 C01 C10 C11   one all_to_all_v, rank i sending Cij bytes to rank j
//   quit                          ends the process
//
// The bytes of every message follow from the command, so each rank checks byte for byte
// what it receives.
#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"
#include "tests/transport/byte_pattern.hpp"
#include "transport/nccl_transport.hpp"

namespace troupe::test {

inline constexpr int nccl_peer_rank = 1;
inline constexpr int nccl_peer_device = 1;

// What a receive buffer holds before the bytes arrive.
inline constexpr uint8_t unwritten = 0xee;

// Device memory holding `host`'s bytes (cudaMalloc wants one byte at least).
class device_bytes {
 public:
  explicit device_bytes(const std::vector<uint8_t>& host) : size_(host.size()) {
    TROUPE_CUDA_CHECK(cudaMalloc(&ptr_, std::max<size_t>(size_, 1)));
    TROUPE_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), size_, cudaMemcpyHostToDevice));
  }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  ~device_bytes() { cudaFree(ptr_); }
  uint8_t* get() { return ptr_; }
  // After the stream that wrote it is through.
  std::vector<uint8_t> to_host() const {
    std::vector<uint8_t> host(size_);
    TROUPE_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, size_, cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  uint8_t* ptr_ = nullptr;
  size_t size_;
};

// The bytes rank `from` sends rank `to` as message `index` of a command with `seed`.
inline std::vector<uint8_t> message_bytes(size_t n, uint32_t seed, int from, int to, size_t index) {
  return byte_pattern(n, seed * 1000 + uint32_t(index) * 4 + uint32_t(from) * 2 + uint32_t(to));
}

// "" when `got` is `want`, else where they first differ.
inline std::string difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " bytes instead of " + std::to_string(want.size());
  const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin());
  if (g == got.end()) return "";
  return "byte " + std::to_string(g - got.begin()) + " of " + std::to_string(got.size()) + " is " + std::to_string(*g) +
         " instead of " + std::to_string(*w);
}

// `transfer SEED SIZE...` at rank `t.rank()` of two: one message of each size to the other
// rank, in order, and one of each size from it, on one stream. Rank 0 enqueues its sends
// first and rank 1 its receives, so neither stream waits on the other. "" when every
// message came byte for byte, else what went wrong.
inline std::string transfer(nccl_transport& t, uint32_t seed, const std::vector<size_t>& sizes, cudaStream_t stream,
                            std::chrono::milliseconds timeout) {
  const int me = t.rank(), other = 1 - me;
  std::deque<device_bytes> outgoing, incoming;
  auto send_all = [&]() -> status {
    for (size_t i = 0; i < sizes.size(); ++i) {
      outgoing.emplace_back(message_bytes(sizes[i], seed, me, other, i));
      if (auto s = t.send(other, outgoing.back().get(), sizes[i], stream); !s) return s;
    }
    return ok();
  };
  auto receive_all = [&]() -> status {
    for (size_t size : sizes) {
      incoming.emplace_back(std::vector<uint8_t>(size, unwritten));
      if (auto s = t.receive(other, incoming.back().get(), size, stream); !s) return s;
    }
    return ok();
  };
  status s = me == 0 ? send_all() : receive_all();
  if (s) s = me == 0 ? receive_all() : send_all();
  if (s) s = t.wait(stream, timeout);
  if (!s) return s.err().message;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (auto d = difference(incoming[i].to_host(), message_bytes(sizes[i], seed, other, me, i)); !d.empty())
      return "message " + std::to_string(i) + " of " + std::to_string(sizes.size()) + " (" + std::to_string(sizes[i]) +
             " bytes) from rank " + std::to_string(other) + ": " + d;
  return "";
}

// counts[i][j]: the bytes rank i sends rank j in one all_to_all_v.
using two_rank_counts = std::array<std::array<size_t, 2>, 2>;

// `all_to_all SEED C00 C01 C10 C11` at rank `t.rank()`: "" when every part came byte for
// byte, else what went wrong.
inline std::string all_to_all(nccl_transport& t, uint32_t seed, const two_rank_counts& counts, cudaStream_t stream,
                              std::chrono::milliseconds timeout) {
  const int me = t.rank();
  std::vector<uint8_t> sent;
  for (int to = 0; to < 2; ++to) {
    const auto part = message_bytes(counts[me][to], seed, me, to, 0);
    sent.insert(sent.end(), part.begin(), part.end());
  }
  const std::vector<size_t> send_bytes = {counts[me][0], counts[me][1]};
  const std::vector<size_t> recv_bytes = {counts[0][me], counts[1][me]};
  device_bytes from(sent), to(std::vector<uint8_t>(recv_bytes[0] + recv_bytes[1], unwritten));
  status s = t.all_to_all_v(from.get(), send_bytes, to.get(), recv_bytes, stream);
  if (s) s = t.wait(stream, timeout);
  if (!s) return s.err().message;
  const auto received = to.to_host();
  size_t at = 0;
  for (int from_rank = 0; from_rank < 2; ++from_rank) {
    const size_t n = recv_bytes[size_t(from_rank)];
    const std::vector<uint8_t> part(received.begin() + long(at), received.begin() + long(at + n));
    if (auto d = difference(part, message_bytes(n, seed, from_rank, me, 0)); !d.empty())
      return "the part from rank " + std::to_string(from_rank) + " (" + std::to_string(n) + " bytes): " + d;
    at += n;
  }
  return "";
}

}  // namespace troupe::test
