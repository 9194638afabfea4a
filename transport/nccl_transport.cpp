#include "transport/nccl_transport.hpp"

#include <cctype>
#include <cstring>
#include <thread>

#include "base/check.hpp"

namespace troupe {
namespace {

using steady_clock = std::chrono::steady_clock;

// A waiting call yields its core for this long first, within which a transfer between the
// GPUs of one host usually ends, and then sleeps between polls, leaving the core to others.
constexpr auto spin_time = std::chrono::microseconds(200);
constexpr auto poll_interval = std::chrono::microseconds(100);

void rest(steady_clock::time_point started) {
  if (steady_clock::now() - started < spin_time)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(poll_interval);
}

std::string in_ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

}  // namespace

result<std::vector<uint8_t>> nccl_transport::new_id() {
  ncclUniqueId id;
  if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
    return error{std::string("ncclGetUniqueId: ") + ncclGetErrorString(r)};
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  return std::vector<uint8_t>(bytes, bytes + sizeof id.internal);
}

result<std::unique_ptr<nccl_transport>> nccl_transport::create(const std::vector<uint8_t>& id, int rank, int ranks,
                                                               int device, std::chrono::milliseconds timeout) {
  ncclUniqueId unique;
  if (id.size() != sizeof unique.internal)
    return error{"an NCCL communicator id has " + std::to_string(sizeof unique.internal) + " bytes, not " +
                 std::to_string(id.size())};
  std::memcpy(unique.internal, id.data(), sizeof unique.internal);
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    return error{"NCCL rank " + std::to_string(rank) + ": CUDA device " + std::to_string(device) + ": " +
                 cudaGetErrorString(e)};

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, ranks, unique, rank, &config);
  std::unique_ptr<nccl_transport> t(new nccl_transport(comm, rank, ranks, timeout));
  if (auto s = t->settle(r, {operation::joining}); !s) return s.err();
  return t;
}

nccl_transport::~nccl_transport() {
  if (comm_) ncclCommAbort(comm_);
}

void nccl_transport::check_peer(int peer) const {
  TROUPE_CHECK(peer >= 0 && peer < ranks_ && peer != rank_, "an NCCL peer is another rank of the communicator");
}

status nccl_transport::send(int peer, const void* device_bytes, size_t bytes, cudaStream_t stream) {
  check_peer(peer);
  if (!comm_) return refuse();
  if (bytes == 0) return ok();
  last_ = {operation::sending, peer, bytes};
  return settle(ncclSend(device_bytes, bytes, ncclUint8, peer, comm_, stream), last_);
}

status nccl_transport::receive(int peer, void* device_bytes, size_t bytes, cudaStream_t stream) {
  check_peer(peer);
  if (!comm_) return refuse();
  if (bytes == 0) return ok();
  last_ = {operation::receiving, peer, bytes};
  return settle(ncclRecv(device_bytes, bytes, ncclUint8, peer, comm_, stream), last_);
}

status nccl_transport::all_to_all_v(const void* send_buffer, const std::vector<size_t>& send_bytes, void* recv_buffer,
                                    const std::vector<size_t>& recv_bytes, cudaStream_t stream) {
  TROUPE_CHECK(send_bytes.size() == size_t(ranks_) && recv_bytes.size() == size_t(ranks_),
               "all_to_all_v takes a byte count for every rank");
  TROUPE_CHECK(send_bytes[size_t(rank_)] == recv_bytes[size_t(rank_)],
               "all_to_all_v: a rank receives from itself what it sends itself");
  if (!comm_) return refuse();
  const auto* from = static_cast<const uint8_t*>(send_buffer);
  auto* to = static_cast<uint8_t*>(recv_buffer);
  std::vector<size_t> send_at(size_t(ranks_), 0), recv_at(size_t(ranks_), 0);
  for (size_t r = 1; r < size_t(ranks_); ++r) {
    send_at[r] = send_at[r - 1] + send_bytes[r - 1];
    recv_at[r] = recv_at[r - 1] + recv_bytes[r - 1];
  }
  last_ = {operation::all_to_all, -1, send_at.back() + send_bytes.back()};

  const size_t self = size_t(rank_);
  if (send_bytes[self] != 0) {
    const cudaError_t e =
        cudaMemcpyAsync(to + recv_at[self], from + send_at[self], send_bytes[self], cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return error{describe(last_) + ": copying its own part: " + cudaGetErrorString(e)};
  }
  // In one group the sends and receives run together, so none waits for another.
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return abort(describe(last_) + ": " + nccl_failure(r));
  for (int peer = 0; peer < ranks_ && r == ncclSuccess; ++peer) {
    const size_t p = size_t(peer);
    if (peer == rank_) continue;
    if (send_bytes[p] != 0) r = ncclSend(from + send_at[p], send_bytes[p], ncclUint8, peer, comm_, stream);
    if (r == ncclSuccess && recv_bytes[p] != 0)
      r = ncclRecv(to + recv_at[p], recv_bytes[p], ncclUint8, peer, comm_, stream);
  }
  const ncclResult_t ended = ncclGroupEnd();
  return settle(r == ncclSuccess ? ended : r, last_);
}

status nccl_transport::exchange(const std::vector<transfer>& sends, const std::vector<transfer>& receives,
                                cudaStream_t stream) {
  for (const auto* list : {&sends, &receives})
    for (const transfer& t : *list) check_peer(t.peer);
  if (!comm_) return refuse();
  size_t bytes = 0;
  for (const transfer& t : sends) bytes += t.bytes;
  last_ = {operation::exchanging, -1, bytes};
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return abort(describe(last_) + ": " + nccl_failure(r));
  for (const transfer& t : sends)
    if (r == ncclSuccess && t.bytes != 0) r = ncclSend(t.device_bytes, t.bytes, ncclUint8, t.peer, comm_, stream);
  for (const transfer& t : receives)
    if (r == ncclSuccess && t.bytes != 0) r = ncclRecv(t.device_bytes, t.bytes, ncclUint8, t.peer, comm_, stream);
  const ncclResult_t ended = ncclGroupEnd();
  return settle(r == ncclSuccess ? ended : r, last_);
}

status nccl_transport::wait(cudaStream_t stream, std::chrono::milliseconds timeout) {
  if (!comm_) return refuse();
  const auto started = steady_clock::now();
  for (;;) {
    // NCCL's failures first: a stream that ran through a failed transfer holds no data.
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t r = ncclCommGetAsyncError(comm_, &state); r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress)
      return abort("waiting for its stream, the last transfer " + describe(last_) + ": " + nccl_failure(state));
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess && state == ncclSuccess) return ok();
    if (e != cudaSuccess && e != cudaErrorNotReady)
      return abort("waiting for its stream, the last transfer " + describe(last_) + ": " + cudaGetErrorString(e));
    if (steady_clock::now() - started >= timeout)
      return abort("its stream was not through within " + in_ms(timeout) + " (a peer died or stalls); the last " +
                   "transfer enqueued was " + describe(last_));
    rest(started);
  }
}

// What a call returned: ncclInProgress while NCCL's thread still does the call's work
// (joins, connects, enqueues the kernels), which ends with the communicator's state
// ncclSuccess, the state NCCL wants before the next call.
status nccl_transport::settle(ncclResult_t r, const operation& op) {
  const auto started = steady_clock::now();
  while (r == ncclInProgress) {
    if (steady_clock::now() - started >= timeout_)
      return abort(describe(op) + " was not done within " + in_ms(timeout_));
    rest(started);
    if (const ncclResult_t polled = ncclCommGetAsyncError(comm_, &r); polled != ncclSuccess) r = polled;
  }
  if (r != ncclSuccess) return abort(describe(op) + ": " + nccl_failure(r));
  return ok();
}

std::string nccl_transport::describe(const operation& op) const {
  const std::string bytes = std::to_string(op.bytes) + " bytes";
  switch (op.kind) {
    case operation::joining:
      return "joining a communicator of " + std::to_string(ranks_) + " ranks";
    case operation::sending:
      return "sending " + bytes + " to rank " + std::to_string(op.peer);
    case operation::receiving:
      return "receiving " + bytes + " from rank " + std::to_string(op.peer);
    case operation::all_to_all:
      return "all_to_all_v sending " + bytes + " among " + std::to_string(ranks_) + " ranks";
    case operation::exchanging:
      return "an exchange sending " + bytes;
    case operation::none:
      break;
  }
  return "none";
}

// NCCL's own account too (which peer's connection failed, say), when it has one.
std::string nccl_transport::nccl_failure(ncclResult_t r) const {
  std::string text = ncclGetErrorString(r);
  const char* reported = ncclGetLastError(comm_);
  std::string last = reported ? reported : "";
  while (!last.empty() && std::isspace(static_cast<unsigned char>(last.back()))) last.pop_back();
  if (!last.empty()) text += " (" + last + ")";
  return text;
}

error nccl_transport::abort(const std::string& why) {
  ncclCommAbort(comm_);
  comm_ = nullptr;
  failure_ = why;
  return error{"NCCL rank " + std::to_string(rank_) + ": " + why + "; its communicator is aborted"};
}

error nccl_transport::refuse() const {
  return error{"NCCL rank " + std::to_string(rank_) + ": its communicator was aborted (" + failure_ + ")"};
}

}  // namespace troupe
