#include "kernels/cuda/gated_delta_rule_chunked.cuh"

#include "base/check.hpp"
#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/delta_rule_gates.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps = 8, block_size = 32 * warps;
static constexpr int slice = 32;  // value columns of one block

// Shared memory of one block, in floats: the chunk's normalised keys and queries (rows of
// key_dim + 1, so that threads on different rows of one column hit different banks), A
// and the masked decayed q . k, both [chunk][chunk + 1], the corrections u and the decayed
// Q S0 [chunk][slice] (the latter reused for e^(G_last - G) u), the state's columns
// [key_dim][slice], the chunk's G and beta; with staged loads, then the next chunk's q, k
// and v columns as they come, bf16.
struct chunk_layout {
  int chunk, key_stride;
  bool staged;
  __host__ __device__ int keys() const { return 0; }
  __host__ __device__ int queries() const { return chunk * key_stride; }
  __host__ __device__ int a() const { return 2 * chunk * key_stride; }
  __host__ __device__ int p() const { return a() + chunk * (chunk + 1); }
  __host__ __device__ int u() const { return p() + chunk * (chunk + 1); }
  __host__ __device__ int qs() const { return u() + chunk * slice; }
  __host__ __device__ int state() const { return qs() + chunk * slice; }
  __host__ __device__ int gamma(int key_dim) const { return state() + key_dim * slice; }
  __host__ __device__ int beta(int key_dim) const { return gamma(key_dim) + chunk; }
  __host__ __device__ int raw(int key_dim) const { return beta(key_dim) + chunk; }
  __host__ __device__ int floats(int key_dim) const {
    return raw(key_dim) + (staged ? (2 * chunk * key_dim + chunk * slice + 1) / 2 : 0);
  }
};

// Chunks a sequence has: of `chunk` tokens for key_dim up to 128, of 32 beyond.
static int chunk_of(int key_dim) { return key_dim <= 128 ? 64 : 32; }

// L2-normalises the n rows (key_stride apart) of Q (scaled by q_scale) and K, a warp a row.
__device__ inline void normalise_rows(float* Q, float* K, int n, int dk, int key_stride, float q_scale) {
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  for (int t = warp; t < n; t += warps) {
    float qq = 0.0f, kk = 0.0f;
    for (int i = lane; i < dk; i += 32) {
      const float q = Q[t * key_stride + i], k = K[t * key_stride + i];
      qq += q * q, kk += k * k;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      qq += __shfl_xor_sync(0xffffffffu, qq, offset);
      kk += __shfl_xor_sync(0xffffffffu, kk, offset);
    }
    const float q_norm = 1.0f / sqrtf(qq + 1e-6f) * q_scale, k_norm = 1.0f / sqrtf(kk + 1e-6f);
    for (int i = lane; i < dk; i += 32) Q[t * key_stride + i] *= q_norm, K[t * key_stride + i] *= k_norm;
  }
}

// Rows [row0, row0 + n) of key head `key_head`'s q and k in fp32, key_stride apart.
__device__ inline void load_rows(const delta_rule_inputs& in, int row0, int n, int dk, int key_head, int key_stride,
                                 float* Q, float* K) {
  for (int x = int(threadIdx.x); x < n * dk; x += block_size) {
    const int t = x / dk, i = x % dk;
    const size_t row = size_t(row0 + t) * in.qkv_stride + size_t(key_head) * dk + i;
    Q[t * key_stride + i] = __bfloat162float(in.q[row]);
    K[t * key_stride + i] = __bfloat162float(in.k[row]);
  }
}

// k . v_r and q . v_r over dk elements for `count` vectors v_r, element e of v_r at
// v[r * r_stride + e * e_stride]: a thread's products of its row with the others' (or
// with the state's columns), the reads of v broadcasts among the threads of a warp.
template <int count>
__device__ inline void dot_both(const float* k, const float* q, const float* v, int r_stride, int e_stride, int dk,
                                float (&kv)[count], float (&qv)[count]) {
#pragma unroll
  for (int r = 0; r < count; ++r) kv[r] = qv[r] = 0.0f;
  for (int e = 0; e < dk; ++e) {
    const float k_e = k[e], q_e = q[e];
#pragma unroll
    for (int r = 0; r < count; ++r) {
      const float other = v[r * r_stride + e * e_stride];
      kv[r] += k_e * other, qv[r] += q_e * other;
    }
  }
}

// The chunk's state-free sums, which every block of a key head (its value heads times
// their column slices) would otherwise compute alike: for row t of a chunk and each i of
// the part of the chunk a thread owns (the scan kernel's parts, so that a part wholly
// above row t is skipped), k_t . k_i and q_t . k_i of the normalised keys and queries, at
// sums + (token of t * key_heads + key head) * 2 * chunk: k.k in the first `chunk`
// floats, q.k in the next. Grid (blocks a sequence, key heads, sequences), a block a chunk
// at a time.
template <int chunk>
static __global__ void __launch_bounds__(block_size)
    chunk_sums_kernel(delta_rule_inputs in, delta_rule_heads d, state_sequences seqs, float* sums) {
  constexpr int per_row = block_size / chunk, pairs = chunk / per_row, warps_a_part = warps / per_row;
  static_assert(chunk == 32 * warps_a_part, "a chunk's rows are the lanes of a part's warps");
  extern __shared__ float smem[];
  begin_dependent();
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int key_head = int(blockIdx.y), s = int(blockIdx.z), dk = d.key_dim, key_stride = dk + 1;
  const int first = seqs.query_starts[s], len = seqs.query_starts[s + 1] - first;
  if (len < delta_rule_chunked_from || seqs.slots[s] < 0) return;
  float *K = smem, *Q = smem + chunk * key_stride;
  const int t_pair = (warp % warps_a_part) * 32 + lane, part_pair = warp / warps_a_part;
  for (int c0 = int(blockIdx.x) * chunk; c0 < len; c0 += int(gridDim.x) * chunk) {
    const int n = min(chunk, len - c0);
    load_rows(in, first + c0, n, dk, key_head, key_stride, Q, K);
    __syncthreads();
    normalise_rows(Q, K, n, dk, key_stride, 1.0f / sqrtf(float(dk)));
    __syncthreads();
    if (t_pair < n && part_pair * pairs <= t_pair) {
      float kk[pairs], qk[pairs];
      dot_both(K + t_pair * key_stride, Q + t_pair * key_stride, K + part_pair * pairs * key_stride, key_stride, 1, dk,
               kk, qk);
      float* out = sums + (size_t(first + c0 + t_pair) * d.key_heads + key_head) * 2 * chunk + part_pair * pairs;
#pragma unroll
      for (int r = 0; r < pairs; ++r) out[r] = kk[r], out[chunk + r] = qk[r];
    }
    __syncthreads();  // the next chunk overwrites K and Q
  }
}

// Block: `slice` value columns of one value head of one sequence, grid (slices, value
// heads, sequences), as the recurrent kernel; it walks the sequence a chunk at a time with
// its state's columns in shared memory. Most phases give a thread the rows t of the chunk
// it owns (row t = tid / per_row, its part tid % per_row of the other dimension), so the
// shared reads of the other operand are broadcasts. Staged (where rows and dims allow
// 4-byte copies), the next chunk's inputs are copied in (cp.async) while a chunk is
// computed, and its gates' inputs loaded into registers: otherwise each chunk would wait
// on memory before its first sum.
template <int chunk, bool staged>
static __global__ void __launch_bounds__(block_size)
    gated_delta_rule_chunked_kernel(delta_rule_inputs in, delta_rule_heads d, state_sequences seqs, float* states,
                                    const float* sums, __nv_bfloat16* out) {
  constexpr int per_row = block_size / chunk, pairs = chunk / per_row, columns = slice / per_row;
  extern __shared__ float smem[];
  begin_dependent();
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int h = int(blockIdx.y), s = int(blockIdx.z), j0 = int(blockIdx.x) * slice;
  const int dk = d.key_dim, dv = d.value_dim, key_head = h / (d.value_heads / d.key_heads);
  const chunk_layout at{chunk, dk + 1, staged};
  float *K = smem + at.keys(), *Q = smem + at.queries(), *A = smem + at.a(), *P = smem + at.p(), *U = smem + at.u(),
        *QS = smem + at.qs(), *S = smem + at.state(), *G = smem + at.gamma(dk), *B = smem + at.beta(dk);
  __nv_bfloat16* Qr = reinterpret_cast<__nv_bfloat16*>(smem + at.raw(dk));
  __nv_bfloat16 *Kr = Qr + chunk * dk, *Vr = Kr + chunk * dk;
  const int first = seqs.query_starts[s], len = seqs.query_starts[s + 1] - first;
  if (len < delta_rule_chunked_from) return;  // the recurrent kernel's
  const int slot = seqs.slots[s];
  if (slot < 0) {  // a padding sequence: zero rows, no state
    for (int x = tid; x < len * slice; x += block_size)
      if (j0 + x % slice < dv)
        out[(size_t(first + x / slice) * d.value_heads + h) * dv + j0 + x % slice] = __float2bfloat16(0.0f);
    return;
  }
  float* state = states + (size_t(slot) * d.value_heads + h) * dk * dv + j0;
  const bool fresh = seqs.positions_start[s] == 0;
  for (int x = tid; x < dk * slice; x += block_size) {
    const int i = x / slice, jj = x % slice;
    S[x] = !fresh && j0 + jj < dv ? state[size_t(i) * dv + jj] : 0.0f;
  }
  const float q_scale = 1.0f / sqrtf(float(dk));
  const int t_own = tid / per_row, part = tid % per_row;
  // Copies chunk c0's q, k and v columns into Qr, Kr and Vr, two elements a copy.
  auto stage = [&](int c0) {
    const int n = min(chunk, len - c0), pairs_a_row = dk / 2;
    for (int x = tid; x < n * pairs_a_row; x += block_size) {
      const int t = x / pairs_a_row, i = 2 * (x % pairs_a_row);
      const size_t row = size_t(first + c0 + t) * in.qkv_stride + size_t(key_head) * dk + i;
      copy_4(Qr + t * dk + i, in.q + row);
      copy_4(Kr + t * dk + i, in.k + row);
    }
    for (int x = tid; x < n * slice / 2; x += block_size) {
      const int t = x / (slice / 2), jj = 2 * (x % (slice / 2));
      if (j0 + jj < dv)
        copy_4(Vr + t * slice + jj, in.v + size_t(first + c0 + t) * in.qkv_stride + size_t(h) * dv + j0 + jj);
    }
    commit_copies();
  };
  if constexpr (staged) stage(0);
  float2 gate_inputs = tid < min(chunk, len) ? delta_rule_gate_inputs(in, first + tid, h) : float2{};

  for (int c0 = 0; c0 < len; c0 += chunk) {
    const int n = min(chunk, len - c0);
    // q, k and v's columns in fp32, and the gates.
    if constexpr (staged) {
      wait_copies<0>();
      __syncthreads();
      for (int x = tid; x < n * dk; x += block_size) {
        const int t = x / dk, i = x % dk;
        Q[t * at.key_stride + i] = __bfloat162float(Qr[x]);
        K[t * at.key_stride + i] = __bfloat162float(Kr[x]);
      }
      for (int x = tid; x < n * slice; x += block_size) U[x] = j0 + x % slice < dv ? __bfloat162float(Vr[x]) : 0.0f;
    } else {
      load_rows(in, first + c0, n, dk, key_head, at.key_stride, Q, K);
      for (int x = tid; x < n * slice; x += block_size) {
        const int t = x / slice, jj = x % slice;
        U[x] = j0 + jj < dv ? __bfloat162float(in.v[size_t(first + c0 + t) * in.qkv_stride + size_t(h) * dv + j0 + jj])
                            : 0.0f;
      }
    }
    if (tid < n) {
      const float2 gate = delta_rule_gates(in, gate_inputs, h);
      G[tid] = gate.x;
      B[tid] = gate.y;
    }
    __syncthreads();  // the staging buffers are free: the next chunk's inputs go on their way
    if (c0 + chunk < len) {
      if constexpr (staged) stage(c0 + chunk);
      if (tid < min(chunk, len - c0 - chunk)) gate_inputs = delta_rule_gate_inputs(in, first + c0 + chunk + tid, h);
    }
    // L2-normalise each token's q (scaled by 1/sqrt(key_dim)) and k, as chunk_sums_kernel
    // did; the cumulative log decay.
    normalise_rows(Q, K, n, dk, at.key_stride, q_scale);
    if (tid == 0)
      for (int t = 1; t < n; ++t) G[t] += G[t - 1];
    __syncthreads();
    // A[t][i] = beta_t e^(G_t - G_i) k_t . k_i for i < t, P[t][i] = e^(G_t - G_i) q_t . k_i
    // for i <= t (what lies above the diagonal is never read), from chunk_sums_kernel's
    // sums: a lane a row t, a warp one part of `pairs` i; a part wholly above its row skipped.
    constexpr int warps_a_part = warps / per_row;
    const int t_pair = (warp % warps_a_part) * 32 + lane, part_pair = warp / warps_a_part;
    if (t_pair < n && part_pair * pairs <= t_pair) {
      const float* row = sums + (size_t(first + c0 + t_pair) * d.key_heads + key_head) * 2 * chunk + part_pair * pairs;
#pragma unroll
      for (int r = 0; r < pairs; ++r) {
        const int i = part_pair * pairs + r;
        const float decay = i <= t_pair ? expf(G[t_pair] - G[i]) : 0.0f;
        A[t_pair * (chunk + 1) + i] = i < t_pair ? B[t_pair] * decay * row[r] : 0.0f;
        P[t_pair * (chunk + 1) + i] = decay * row[chunk + r];
      }
    }
    // K S0 and Q S0 for this thread's row and columns; u starts as beta (v - e^G K S0).
    if (t_own < n) {
      float ks[columns], qs[columns];
      dot_both(K + t_own * at.key_stride, Q + t_own * at.key_stride, S + part * columns, 1, slice, dk, ks, qs);
      const float start = expf(G[t_own]);
#pragma unroll
      for (int c = 0; c < columns; ++c) {
        float& u = U[t_own * slice + part * columns + c];
        u = B[t_own] * (u - start * ks[c]);
        QS[t_own * slice + part * columns + c] = start * qs[c];
      }
    }
    __syncthreads();
    // Forward substitution, u_t -= sum_(i<t) A[t][i] u_i, by one warp, a lane a column
    // with its u in registers (the loops unrolled to the chunk), the reads of A broadcasts:
    // one dependent chain of registers, where a column shared among lanes waited on
    // shuffles and shared memory at each of the chunk's steps. Rows from n on are garbage
    // and unused: a row depends on the rows before it only.
    static_assert(slice == 32, "a lane a column");
    if (warp == 0) {
      float u[chunk];
#pragma unroll
      for (int t = 0; t < chunk; ++t) u[t] = U[t * slice + lane];
#pragma unroll
      for (int t = 1; t < chunk; ++t) {
        float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = 0; i < t; ++i) sum[i % 4] += A[t * (chunk + 1) + i] * u[i];
        u[t] -= (sum[0] + sum[1]) + (sum[2] + sum[3]);
      }
#pragma unroll
      for (int t = 0; t < chunk; ++t) U[t * slice + lane] = u[t];
    }
    __syncthreads();
    // o_t = e^G_t q_t S0 + sum_(i<=t) P[t][i] u_i.
    if (t_own < n) {
      float o[columns];
#pragma unroll
      for (int c = 0; c < columns; ++c) o[c] = QS[t_own * slice + part * columns + c];
      for (int i = 0; i <= t_own; ++i) {
        const float p = P[t_own * (chunk + 1) + i];
#pragma unroll
        for (int c = 0; c < columns; ++c) o[c] += p * U[i * slice + part * columns + c];
      }
      const size_t row = (size_t(first + c0 + t_own) * d.value_heads + h) * dv + j0 + part * columns;
#pragma unroll
      for (int c = 0; c < columns; ++c)
        if (j0 + part * columns + c < dv) out[row + c] = __float2bfloat16(o[c]);
    }
    __syncthreads();  // QS read: it takes e^(G_last - G_i) u_i
    const float last = G[n - 1];
    for (int x = tid; x < n * slice; x += block_size) QS[x] = expf(last - G[x / slice]) * U[x];
    __syncthreads();
    // S = e^G_last S + K^T (e^(G_last - G) u): a thread half of a key row's columns.
    const float carry = expf(last);
    constexpr int half = slice / 2;
    for (int x = tid; x < 2 * dk; x += block_size) {
      const int i = x / 2, c0 = (x % 2) * half;
      float acc[half];
#pragma unroll
      for (int c = 0; c < half; ++c) acc[c] = carry * S[i * slice + c0 + c];
      for (int t = 0; t < n; ++t) {
        const float k = K[t * at.key_stride + i];
#pragma unroll
        for (int c = 0; c < half; ++c) acc[c] += k * QS[t * slice + c0 + c];
      }
#pragma unroll
      for (int c = 0; c < half; ++c) S[i * slice + c0 + c] = acc[c];
    }
    __syncthreads();  // the next chunk overwrites K, Q and u
  }
  for (int x = tid; x < dk * slice; x += block_size) {
    const int i = x / slice, jj = x % slice;
    if (j0 + jj < dv) state[size_t(i) * dv + jj] = S[x];
  }
}

size_t gated_delta_rule_chunked_workspace_floats(int tokens, const delta_rule_heads& d) {
  return size_t(tokens) * size_t(d.key_heads) * 2 * size_t(chunk_of(d.key_dim));
}

void gated_delta_rule_chunked(const delta_rule_inputs& in, const delta_rule_heads& d, const state_sequences& seqs,
                              float* states, float* workspace, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(d.key_heads > 0 && d.value_heads > 0 && d.value_heads % d.key_heads == 0,
               "value heads must be a multiple of key heads");
  TROUPE_CHECK(d.key_dim > 0 && d.key_dim <= delta_rule_max_key_dim && d.value_dim > 0, "key_dim must be 1 to 256");
  TROUPE_CHECK(in.qkv_stride > 0 && in.gate_stride >= d.value_heads, "bad row stride");
  TROUPE_CHECK(seqs.seqs >= 0 && seqs.seqs <= 65535 && d.value_heads <= 65535, "too many sequences or heads");
  TROUPE_CHECK(seqs.query_starts != nullptr && seqs.positions_start != nullptr && seqs.slots != nullptr,
               "prompts need their starts and slots");
  TROUPE_CHECK(in.q != nullptr && in.k != nullptr && in.v != nullptr && in.a != nullptr && in.b != nullptr &&
                   in.neg_decay_rate != nullptr && in.dt_bias != nullptr && states != nullptr && workspace != nullptr &&
                   out != nullptr,
               "null pointer");
  if (seqs.seqs == 0) return;
  const dim3 grid((d.value_dim + slice - 1) / slice, d.value_heads, seqs.seqs);
  // Staged loads copy two elements at once from 4-byte aligned addresses.
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; };
  const bool staged = in.qkv_stride % 2 == 0 && d.key_dim % 2 == 0 && d.value_dim % 2 == 0 && aligned(in.q) &&
                      aligned(in.k) && aligned(in.v);
  // A sequence's chunks spread over this many blocks of each key head for the sums.
  constexpr unsigned sum_blocks = 32;
  auto launch = [&](auto sums_kernel, auto kernel, int chunk) {
    const size_t sums_bytes = size_t(2 * chunk * (d.key_dim + 1)) * sizeof(float);
    TROUPE_CUDA_CHECK(cudaFuncSetAttribute(sums_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sums_bytes)));
    launch_dependent(sums_kernel, dim3(sum_blocks, d.key_heads, seqs.seqs), block_size, sums_bytes, stream, in, d, seqs,
                     workspace);
    const size_t bytes = size_t(chunk_layout{chunk, d.key_dim + 1, staged}.floats(d.key_dim)) * sizeof(float);
    TROUPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    launch_dependent(kernel, grid, block_size, bytes, stream, in, d, seqs, states, static_cast<const float*>(workspace),
                     out);
  };
  if (chunk_of(d.key_dim) == 64)
    staged ? launch(chunk_sums_kernel<64>, gated_delta_rule_chunked_kernel<64, true>, 64)
           : launch(chunk_sums_kernel<64>, gated_delta_rule_chunked_kernel<64, false>, 64);
  else
    staged ? launch(chunk_sums_kernel<32>, gated_delta_rule_chunked_kernel<32, true>, 32)
           : launch(chunk_sums_kernel<32>, gated_delta_rule_chunked_kernel<32, false>, 32);
}

}  // namespace troupe::cuda
