#pragma once
// Device buffers between the GPU processes of a cluster (one GPU each), over one NCCL
// communicator: a pipeline stage's rows to the next stage (send, receive) and MoE dispatch
// and combine among expert-parallel ranks (all_to_all_v). The ranks come from the
// cluster's rank map: rank 0 makes the communicator's id (new_id), the control plane
// carries its bytes to the other ranks, and every rank joins with it (create).
//
// Transfers are stream-ordered: a call enqueues its work on the caller's CUDA stream and
// returns, and wait() says when the stream is through. NCCL pairs the transfers between
// two ranks by their order, so no step id travels with the bytes: a stage that enqueues
// step N's sends to a peer before step N+1's, on one stream, and a peer that enqueues its
// receives in the same order, pair step N with step N. A send waits on the GPU for its
// receive, so two ranks that each send to the other before receiving from it, on one
// stream each, wait on each other until wait() gives up: one of them receives first, or
// they use all_to_all_v, which runs both directions together.
//
// Nothing waits for ever. The communicator is NCCL's non-blocking kind: NCCL does its
// host-side work on a thread of its own and a call may return before that work is done
// (ncclInProgress). Joining, and handing a transfer to its stream (the first transfer with
// a peer connects to the peer, which waits for the peer's matching call), take at most
// the timeout given to create; wait() takes at most its own. When one runs out, or NCCL
// reports a failure (a lost connection), this rank aborts the communicator, which also
// stops its kernels still waiting on a peer, and the error says what was waited for and
// how long. From then on every call fails: the cluster makes a new communicator (a new
// id, which every rank joins).
//
// One thread at a time uses an object (NCCL's rule for a communicator), with the rank's
// device current (create makes it current in its thread).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "base/result.hpp"

namespace troupe {

class nccl_transport {
 public:
  // A new communicator's id: the bytes of an ncclUniqueId. Make it in rank 0's process:
  // NCCL's bootstrap root, which the ranks reach over TCP while they join, runs there.
  static result<std::vector<uint8_t>> new_id();

  // Joins communicator `id` of `ranks` ranks as `rank`, on CUDA device `device`. Fails
  // when the ranks have not all joined within `timeout`, which also bounds how long any
  // later call may take to hand its transfers to the stream.
  static result<std::unique_ptr<nccl_transport>> create(const std::vector<uint8_t>& id, int rank, int ranks, int device,
                                                        std::chrono::milliseconds timeout);

  // Aborts the communicator, which waits for no peer: wait for every transfer first.
  ~nccl_transport();
  nccl_transport(const nccl_transport&) = delete;
  nccl_transport& operator=(const nccl_transport&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  // `bytes` bytes of device memory to `peer`, which receives them with a receive of as
  // many bytes. Zero bytes are no transfer, on both sides alike.
  status send(int peer, const void* device_bytes, size_t bytes, cudaStream_t stream);
  status receive(int peer, void* device_bytes, size_t bytes, cudaStream_t stream);

  // MoE dispatch and combine: send_bytes[r] bytes go to rank r and recv_bytes[r] bytes come
  // from it, each rank's part at the sum of the parts before it in its buffer. Every rank
  // calls it, with counts that agree (what q sends r is what r receives from q); this
  // rank's own part is a device copy.
  status all_to_all_v(const void* send_buffer, const std::vector<size_t>& send_bytes, void* recv_buffer,
                      const std::vector<size_t>& recv_bytes, cudaStream_t stream);

  // Point-to-point transfers with several peers at once, as one NCCL group: none waits for
  // another, so a rank may send to and receive from the same peer in one call. A peer
  // matches it with an exchange (or sends and receives) of the same sizes in the same order.
  struct transfer {
    int peer = -1;
    void* device_bytes = nullptr;  // read for a send
    size_t bytes = 0;              // zero: no transfer, on both sides alike
  };
  status exchange(const std::vector<transfer>& sends, const std::vector<transfer>& receives, cudaStream_t stream);

  // False once aborted (a failed wait or call): every call fails from then on.
  bool usable() const { return comm_ != nullptr; }

  // Waits until all of `stream`'s work is done, this communicator's transfers and whatever
  // else it holds. After `timeout` the communicator is aborted: a peer died or stalls.
  status wait(cudaStream_t stream, std::chrono::milliseconds timeout);

 private:
  // A transfer, for the error that names what was waited for.
  struct operation {
    enum kind_t { none, joining, sending, receiving, all_to_all, exchanging } kind = none;
    int peer = -1;
    size_t bytes = 0;
  };

  nccl_transport(ncclComm_t comm, int rank, int ranks, std::chrono::milliseconds timeout)
      : comm_(comm), rank_(rank), ranks_(ranks), timeout_(timeout) {}
  void check_peer(int peer) const;
  status settle(ncclResult_t r, const operation& op);
  std::string describe(const operation& op) const;
  std::string nccl_failure(ncclResult_t r) const;
  error abort(const std::string& why);
  error refuse() const;

  ncclComm_t comm_;  // null once aborted
  const int rank_, ranks_;
  const std::chrono::milliseconds timeout_;
  operation last_;
  std::string failure_;  // why it was aborted
};

}  // namespace troupe
