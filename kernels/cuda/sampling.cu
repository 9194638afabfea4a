#include "kernels/cuda/sampling.cuh"

#include <climits>
#include <cmath>
#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 512;
static constexpr int warps = block_size / 32;
static constexpr int per_lane = 16;                      // loads a lane has in flight in a sweep
static constexpr int chunk = 32 * per_lane;              // consecutive ids a warp takes at once
static constexpr int max_vocab = block_size * chunk;     // the scan gives each thread one chunk
static constexpr int slice_len = block_size * per_lane;  // ids of sweep_kernel's block: at most block_size slices
static constexpr int radix_bits = 4;
static constexpr int buckets = 1 << radix_bits;
static constexpr int list_capacity = 2048;
static constexpr int max_top = sampling_max_top_logprobs;
static constexpr unsigned full_mask = 0xffffffffu;
static_assert(buckets == warps, "one warp totals each bucket");

// The radix histograms keep a column per thread: no atomics, so no contention when the
// keys crowd into a few buckets (they do: the top digits are the float's exponent).
static constexpr size_t dynamic_shared = size_t(buckets) * block_size * (sizeof(double) + sizeof(int)) +
                                         size_t(list_capacity) * (sizeof(uint32_t) + sizeof(float));

struct radix_memory {
  double* mass;        // [buckets, block_size]
  int* count;          // [buckets, block_size]
  uint32_t* list_key;  // [list_capacity]: the candidates once few remain
  float* list_mass;
};

// Block-wide values, each written by one thread between barriers.
struct row_shared {
  uint32_t prefix, mask;  // radix select: the cut's key bits found so far
  int above;              // tokens ranked above every candidate, and their mass
  double above_mass;
  int candidates;  // tokens whose key has the prefix
  int listed;      // candidates in the list; -1 while they are read from the row
  int filled;
  double limit;  // the mass top-p asks for
  int bucket_count[buckets];
  double bucket_mass[buckets];
  double chunk_sums[block_size];  // first_crossing
  int found_chunk, last_chunk, result;
  double found_before;
  int collected;  // top log-probs
  int top_id[max_top];
  float top_lp[max_top];
};

// Unsigned keys in the order of the floats; -0 is +0 (the CPU ranks them equal).
static __device__ uint32_t order_key(float x) {
  const uint32_t b = __float_as_uint(x == 0.0f ? 0.0f : x);
  return b >> 31 ? ~b : b | 0x80000000u;
}

static __device__ float key_value(uint32_t key) { return __uint_as_float(key >> 31 ? key & 0x7fffffffu : ~key); }

// exp(d / T) relative to the top token (d = score - top score): the unnormalised probability.
static __device__ float mass_of(float d, float temperature) { return expf(__fdiv_rn(d, temperature)); }

// Keeps the tokens ranked at or above it: key > key, or key == key and id < id_end.
struct cut {
  uint32_t key;
  int id_end;
  __device__ bool keeps(uint32_t k, int id) const { return k > key || (k == key && id < id_end); }
};

static __device__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(full_mask, v, offset);
  return v;
}

static __device__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(full_mask, v, offset);
  return v;
}

struct arg_max {
  float value;
  int id;
};

static __device__ arg_max better(arg_max a, arg_max b) {
  return b.value > a.value || (b.value == a.value && b.id < a.id) ? b : a;
}

// A block-wide fold of one value per thread: each warp's lanes first (from_lane(v, offset)
// is lane ^ offset's v), then the warps' results in warp order.
template <class T, class FromLane, class Merge>
static __device__ T block_fold(T v, FromLane from_lane, Merge merge) {
  __shared__ T partial[warps];
  for (int offset = 16; offset > 0; offset /= 2) v = merge(v, from_lane(v, offset));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < warps; ++w) v = merge(v, partial[w]);
  __syncthreads();  // partial is free for the next call
  return v;
}

static __device__ arg_max block_arg_max(arg_max m) {
  return block_fold(
      m,
      [](arg_max v, int offset) {
        return arg_max{__shfl_xor_sync(full_mask, v.value, offset), __shfl_xor_sync(full_mask, v.id, offset)};
      },
      better);
}

// sum of exp(x - max) over the values seen, rescaled (in fp64) only when the max moves.
struct log_sum {
  float max;
  double sum;
};

static __device__ void add(log_sum& s, float x) {
  if (x > s.max) {
    s.sum = s.sum * exp(double(s.max) - double(x)) + 1.0;
    s.max = x;
  } else if (s.max != -INFINITY) {
    s.sum += expf(x - s.max);
  }
}

static __device__ log_sum merge(log_sum a, log_sum b) {
  if (b.max > a.max) {
    const log_sum s = a;
    a = b;
    b = s;
  }
  if (b.max == -INFINITY) return a;
  return {a.max, a.sum + b.sum * exp(double(b.max) - double(a.max))};
}

static __device__ log_sum block_log_sum(log_sum s) {
  return block_fold(
      s,
      [](log_sum v, int offset) {
        return log_sum{__shfl_xor_sync(full_mask, v.max, offset), __shfl_xor_sync(full_mask, v.sum, offset)};
      },
      merge);
}

// Thread t's share of a sum in thread order: [before, after). The ranges tile [0, total)
// exactly (each bound is computed once and shared by its neighbours), so a target below
// total falls in exactly one thread's range.
struct scan_result {
  double before, after, total;
};

static __device__ scan_result block_scan(double v) {
  __shared__ double partial[warps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  double inclusive = v;
  for (int offset = 1; offset < 32; offset *= 2) {
    const double other = __shfl_up_sync(full_mask, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  const double exclusive = __shfl_up_sync(full_mask, inclusive, 1);
  if (lane == 31) partial[warp] = inclusive;
  __syncthreads();
  double offset = 0.0, total = 0.0;
  for (int w = 0; w < warps; ++w) {
    if (w == warp) offset = total;
    total += partial[w];
  }
  __syncthreads();
  return {lane > 0 ? offset + exclusive : offset, offset + inclusive, total};
}

// Warp w takes chunks w, w + warps, ... of `chunk` ids; lane l holds ids first + l + 32 j
// (j < per_lane), loaded together. Values past vocab are 0 and must be skipped.
template <class F>
static __device__ void for_each_chunk(const float* x, int vocab, F f) {
  const int lane = threadIdx.x % 32;
  for (int first = threadIdx.x / 32 * chunk; first < vocab; first += block_size * per_lane) {
    float v[per_lane];
#pragma unroll
    for (int j = 0; j < per_lane; ++j) {
      const int i = first + lane + 32 * j;
      v[j] = i < vocab ? x[i] : 0.0f;
    }
    f(first, v);
  }
}

template <class F>
static __device__ void for_each_token(const float* x, int vocab, F f) {
  const int lane = threadIdx.x % 32;
  for_each_chunk(x, vocab, [&](int first, const float(&v)[per_lane]) {
#pragma unroll
    for (int j = 0; j < per_lane; ++j)
      if (first + lane + 32 * j < vocab) f(first + lane + 32 * j, v[j]);
  });
}

// The first id, ascending, at which the running sum of weight(id, x[id]) >= 0 exceeds
// u * (the row's sum), or the last id of positive weight where rounding leaves none. The
// row's sum must be positive. Chunk sums, a block scan over them for the chunk that holds
// the crossing, then one warp walks that chunk.
template <class Weight>
static __device__ int first_crossing(const float* x, int vocab, double u, Weight weight, row_shared& sh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) sh.found_chunk = sh.last_chunk = -1;
  for_each_chunk(x, vocab, [&](int first, const float(&v)[per_lane]) {
    double sum = 0.0;
#pragma unroll
    for (int j = 0; j < per_lane; ++j)
      if (first + lane + 32 * j < vocab) sum += weight(first + lane + 32 * j, v[j]);
    sum = warp_sum(sum);
    if (lane == 0) sh.chunk_sums[first / chunk] = sum;
  });
  __syncthreads();
  const int chunks = (vocab + chunk - 1) / chunk;
  const double mine = int(threadIdx.x) < chunks ? sh.chunk_sums[threadIdx.x] : 0.0;
  const scan_result s = block_scan(mine);
  const double target = u * s.total;
  if (s.before <= target && target < s.after) {
    sh.found_chunk = threadIdx.x;
    sh.found_before = s.before;
  }
  if (mine > 0.0) atomicMax(&sh.last_chunk, int(threadIdx.x));
  __syncthreads();
  if (warp == 0) {
    const bool found = sh.found_chunk >= 0;
    const int first = (found ? sh.found_chunk : sh.last_chunk) * chunk;
    double before = found ? sh.found_before : -INFINITY;  // -inf: never crosses
    int crossing = -1, last = -1;
    for (int j = 0; j < per_lane && crossing < 0; ++j) {
      const int i = first + lane + 32 * j;
      const double w = i < vocab ? weight(i, x[i]) : 0.0;
      double inclusive = w;
      for (int offset = 1; offset < 32; offset *= 2) {
        const double other = __shfl_up_sync(full_mask, inclusive, offset);
        if (lane >= offset) inclusive += other;
      }
      const unsigned crossed = __ballot_sync(full_mask, w > 0.0 && before + inclusive > target);
      const unsigned positive = __ballot_sync(full_mask, w > 0.0);
      if (crossed != 0) crossing = first + 32 * j + __ffs(int(crossed)) - 1;
      if (positive != 0) last = first + 32 * j + 31 - __clz(int(positive));
      before += __shfl_sync(full_mask, inclusive, 31);
    }
    if (lane == 0) sh.result = crossing >= 0 ? crossing : last;
  }
  __syncthreads();
  return sh.result;
}

// Thread 0, after a radix pass: the bucket holding the cut, highest digit first. The
// first with enough tokens or mass above and in it; the lowest non-empty one when the
// mass, summed in another order than in the pass before, falls just short.
static __device__ void choose_bucket(row_shared& sh, int shift, int k, double p, bool by_mass) {
  if (shift == 32 - radix_bits) {  // the first pass saw every token
    double total = 0.0;
    for (int b = 0; b < buckets; ++b) total += sh.bucket_mass[b];
    sh.limit = p * total;
  }
  int lowest = 0;
  while (sh.bucket_count[lowest] == 0) ++lowest;
  int chosen = lowest;
  for (int b = buckets - 1; b > lowest; --b) {
    if (sh.bucket_count[b] == 0) continue;
    if (sh.above + sh.bucket_count[b] >= k || (by_mass && sh.above_mass + sh.bucket_mass[b] >= sh.limit)) {
      chosen = b;
      break;
    }
    sh.above += sh.bucket_count[b];
    sh.above_mass += sh.bucket_mass[b];
  }
  if (sh.listed < 0 && sh.candidates <= list_capacity) sh.listed = sh.filled;
  sh.prefix |= uint32_t(chosen) << shift;
  sh.mask |= uint32_t(buckets - 1) << shift;
  sh.candidates = sh.bucket_count[chosen];
}

// The cut after the first k >= 1 tokens in rank order (key of d = x - offset descending,
// then id ascending), or, when p < 1, after the shortest prefix whose mass
// (mass_of(d, temperature)) reaches p times the row's, whichever comes first. A radix
// select over the keys, 4 bits a pass from the top; once few candidates remain, they are
// listed in shared memory and later passes read only the list.
static __device__ cut find_cut(const float* x, int vocab, float offset, float temperature, int k, double p,
                               row_shared& sh, const radix_memory& mem) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool by_mass = p < 1.0;
  if (threadIdx.x == 0) {
    sh.prefix = sh.mask = 0;
    sh.above = 0;
    sh.above_mass = 0.0;
    sh.candidates = vocab;
    sh.listed = -1;
    sh.filled = 0;
  }
  __syncthreads();
  int* count = mem.count + threadIdx.x;  // this thread's column
  double* mass = mem.mass + threadIdx.x;
  for (int shift = 32 - radix_bits; shift >= 0; shift -= radix_bits) {
    for (int b = 0; b < buckets; ++b) {
      count[b * block_size] = 0;
      mass[b * block_size] = 0.0;
    }
    const uint32_t prefix = sh.prefix, mask = sh.mask;
    auto add = [&](uint32_t key, float m) {
      const int b = int(key >> shift) & (buckets - 1);
      ++count[b * block_size];
      if (by_mass) mass[b * block_size] += m;
    };
    const int listed = sh.listed;
    if (listed >= 0) {
      for (int i = threadIdx.x; i < listed; i += block_size)
        if ((mem.list_key[i] & mask) == prefix) add(mem.list_key[i], mem.list_mass[i]);
    } else {
      const bool fill = sh.candidates <= list_capacity;
      for_each_token(x, vocab, [&](int, float v) {
        const float d = v - offset;
        const uint32_t key = order_key(d);
        if ((key & mask) != prefix) return;
        const float m = by_mass ? mass_of(d, temperature) : 0.0f;
        add(key, m);
        if (fill) {
          const int slot = atomicAdd(&sh.filled, 1);
          mem.list_key[slot] = key;
          mem.list_mass[slot] = m;
        }
      });
    }
    __syncthreads();
    int n = 0;
    double m = 0.0;
    for (int t = lane; t < block_size; t += 32) {
      n += mem.count[warp * block_size + t];
      m += mem.mass[warp * block_size + t];
    }
    n = warp_sum(n);
    m = warp_sum(m);
    if (lane == 0) {
      sh.bucket_count[warp] = n;
      sh.bucket_mass[warp] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0) choose_bucket(sh, shift, k, p, by_mass);
    __syncthreads();
  }

  // Every candidate now has the cut's key: keep the first of them, in id order, that the
  // count and the mass still ask for.
  const uint32_t key = sh.prefix;
  const int ties = sh.candidates;
  int keep = min(ties, k - sh.above);
  if (by_mass) {
    const double need = (sh.limit - sh.above_mass) / double(mass_of(key_value(key), temperature));
    if (need < keep) keep = need <= 1.0 ? 1 : int(ceil(need));
  }
  if (keep == ties) return {key, INT_MAX};
  const int last = first_crossing(
      x, vocab, (keep - 0.5) / ties, [=](int, float v) { return order_key(v - offset) == key ? 1.0 : 0.0; }, sh);
  return {key, last + 1};
}

// What a row's scores are, beyond its raw logits: penalties of its history, and the mask of
// its constraint (null for none).
struct row_rewrite {
  bool penalised;
  const uint64_t* mask;
  __device__ bool rewritten() const { return penalised || mask != nullptr; }
};

static __device__ row_rewrite rewrite_of(const sampling_rows& params, int r) {
  return {params.history_offsets[r + 1] > params.history_offsets[r],
          params.mask_rows[r] < 0 ? nullptr : params.allowed + size_t(params.mask_rows[r]) * params.mask_words};
}

// One slice's part of a row's first sweep.
struct slice_result {
  arg_max best;
  log_sum sum;
};

// The first sweep of the raw rows, a block per slice of slice_len ids (one pass of its
// threads): the slice's arg-max and log-sum-exp, and its part of the masked copy that a
// rewritten row's penalties change. A block per row took 32 us at batch 1 on the H200 for
// the 152k logits of Qwen3, one SM reading them all.
static __global__ void __launch_bounds__(block_size)
    sweep_kernel(const float* logits, int vocab, sampling_rows params, float* copies, slice_result* slices) {
  begin_dependent();
  const int r = blockIdx.y, first = blockIdx.x * slice_len, len = min(slice_len, vocab - first);
  const float* raw = logits + size_t(r) * vocab + first;
  float* copy = copies + size_t(r) * vocab + first;
  const row_rewrite rw = rewrite_of(params, r);
  arg_max best{-INFINITY, INT_MAX};
  log_sum sum{-INFINITY, 0.0};
  for_each_token(raw, len, [&](int i, float v) {
    best = better(best, {v, first + i});
    add(sum, v);
    if (rw.rewritten())
      copy[i] = rw.mask == nullptr || (rw.mask[(first + i) / 64] >> ((first + i) % 64) & 1u) != 0 ? v : -INFINITY;
  });
  best = block_arg_max(best);
  sum = block_log_sum(sum);
  if (threadIdx.x == 0) slices[size_t(r) * gridDim.x + blockIdx.x] = {best, sum};
}

// One block per row: the slices' sweep merged (arg-max, log-sum-exp), the penalties and
// the penalised arg-max, then for a draw the top-k / top-p cut (radix select) and the
// kept mass's prefix sum in id order; the top log-probs are another radix select over the
// raw log-probs. Every pass reads the row from L2 or memory.
static __global__ void __launch_bounds__(block_size)
    sample_kernel(const float* logits, int vocab, sampling_rows params, float* workspace, const slice_result* slices,
                  int* tokens, float* logprob, int* top_ids, float* top_logprobs) {
  extern __shared__ double dynamic[];
  __shared__ row_shared sh;
  begin_dependent();
  const radix_memory mem = [&] {
    int* count = reinterpret_cast<int*>(dynamic + buckets * block_size);
    uint32_t* list_key = reinterpret_cast<uint32_t*>(count + buckets * block_size);
    return radix_memory{dynamic, count, list_key, reinterpret_cast<float*>(list_key + list_capacity)};
  }();
  const int r = blockIdx.x;
  const float* raw = logits + size_t(r) * vocab;
  float* copy = workspace + size_t(r) * vocab;
  const float temperature = params.temperature[r];
  const float repetition = params.repetition_penalty[r], frequency = params.frequency_penalty[r],
              presence = params.presence_penalty[r];
  const int history_begin = params.history_offsets[r], history_end = params.history_offsets[r + 1];
  const row_rewrite rw = rewrite_of(params, r);
  const bool penalised = rw.penalised, rewritten = rw.rewritten();  // the scores live in the copy
  const int n_top = min(params.top_logprobs[r], max_top);

  // The raw row's arg-max and log-sum-exp, from its slices.
  const int n_slices = (vocab + slice_len - 1) / slice_len;
  const slice_result mine = threadIdx.x < n_slices ? slices[size_t(r) * n_slices + threadIdx.x]
                                                   : slice_result{{-INFINITY, INT_MAX}, {-INFINITY, 0.0}};
  arg_max best = block_arg_max(mine.best);
  float log_total = 0.0f;
  if (n_top >= 0) {
    const log_sum raw_sum = block_log_sum(mine.sum);
    log_total = float(log(raw_sum.sum)) + raw_sum.max;
  }

  // The CPU's logit bias and penalties, rounded alike (no contraction but its explicit fma).
  const float* scores = raw;
  if (rewritten) {
    for (int h = history_begin + threadIdx.x; penalised && h < history_end; h += block_size) {
      const int t = params.history_tokens[h];
      float l = __fadd_rn(copy[t], params.history_bias[h]);  // -inf stays -inf
      if (repetition != 1.0f && params.history_seen[h] > 0)
        l = l > 0.0f ? __fdiv_rn(l, repetition) : __fmul_rn(l, repetition);
      if ((frequency != 0.0f || presence != 0.0f) && params.history_generated[h] > 0)
        l = __fsub_rn(l, __fmaf_rn(frequency, float(params.history_generated[h]), presence));
      copy[t] = l;
    }
    __syncthreads();
    best = {-INFINITY, INT_MAX};
    for_each_token(copy, vocab, [&](int i, float v) { best = better(best, {v, i}); });
    best = block_arg_max(best);
    scores = copy;
  }

  int chosen = best.id;
  if (temperature > 0.0f) {
    const float top = best.value;
    const int top_k = params.top_k[r];
    const float top_p = params.top_p[r], min_p = params.min_p[r];
    const bool by_count = top_k > 0 && top_k < vocab;
    cut kept{0u, INT_MAX};
    if (by_count || top_p < 1.0f)
      kept = find_cut(scores, vocab, top, temperature, by_count ? top_k : INT_MAX, top_p, sh, mem);
    // prob >= min_p * top prob, as a bound on d = score - top score.
    const double min_d = min_p > 0.0f ? double(temperature) * log(double(fminf(min_p, 1.0f))) : -INFINITY;
    chosen = first_crossing(
        scores, vocab, params.uniform[r],
        [=](int i, float v) {
          const float d = v - top;
          const bool keeps = kept.keeps(order_key(d), i) && double(d) >= min_d;
          return keeps ? double(mass_of(d, temperature)) : 0.0;
        },
        sh);
  }
  if (threadIdx.x == 0) tokens[r] = chosen;
  if (n_top < 0) return;

  const int n = min(n_top, vocab);
  if (n > 0) {
    const cut top = find_cut(raw, vocab, log_total, 1.0f, n, 1.0, sh, mem);
    if (threadIdx.x == 0) sh.collected = 0;
    __syncthreads();
    for_each_token(raw, vocab, [&](int i, float v) {
      const float lp = v - log_total;
      if (top.keeps(order_key(lp), i)) {
        const int slot = atomicAdd(&sh.collected, 1);
        sh.top_id[slot] = i;
        sh.top_lp[slot] = lp;
      }
    });
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    logprob[r] = raw[chosen] - log_total;
    for (int a = 1; a < n; ++a)  // insertion sort: log-prob descending, then id ascending
      for (int b = a; b > 0 && (sh.top_lp[b] > sh.top_lp[b - 1] ||
                                (sh.top_lp[b] == sh.top_lp[b - 1] && sh.top_id[b] < sh.top_id[b - 1]));
           --b) {
        const int id = sh.top_id[b];
        const float lp = sh.top_lp[b];
        sh.top_id[b] = sh.top_id[b - 1];
        sh.top_lp[b] = sh.top_lp[b - 1];
        sh.top_id[b - 1] = id;
        sh.top_lp[b - 1] = lp;
      }
    for (int j = 0; j < max_top; ++j) {
      top_ids[size_t(r) * max_top + j] = j < n ? sh.top_id[j] : -1;
      top_logprobs[size_t(r) * max_top + j] = j < n ? sh.top_lp[j] : 0.0f;
    }
  }
}

// The workspace: the rows' copies, then their slices' results (8-byte aligned: an even
// number of floats before them).
static size_t copy_floats(int rows, int vocab) { return (size_t(rows) * size_t(vocab) + 1) / 2 * 2; }

static slice_result* slices_of(float* workspace, int rows, int vocab) {
  return reinterpret_cast<slice_result*>(workspace + copy_floats(rows, vocab));
}

static void launch(const float* logits, int rows, int vocab, const sampling_rows& params, float* workspace, int* tokens,
                   float* logprob, int* top_ids, float* top_logprobs, cudaStream_t stream) {
  slice_result* slices = slices_of(workspace, rows, vocab);
  launch_dependent(sweep_kernel, dim3((vocab + slice_len - 1) / slice_len, rows), block_size, 0, stream, logits, vocab,
                   params, workspace, slices);
  // Per call rather than once: the attribute is per device.
  TROUPE_CUDA_CHECK(
      cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic_shared)));
  launch_dependent(sample_kernel, rows, block_size, dynamic_shared, stream, logits, vocab, params, workspace, slices,
                   tokens, logprob, top_ids, top_logprobs);
}

size_t sampling_workspace_bytes(int rows, int vocab) {
  return sizeof(float) * copy_floats(rows, vocab) +
         sizeof(slice_result) * size_t(rows) * size_t((vocab + slice_len - 1) / slice_len);
}

void sample_tokens(const float* logits, int rows, int vocab, const sampling_rows& params, void* workspace, int* tokens,
                   float* logprob, int* top_ids, float* top_logprobs, cudaStream_t stream) {
  TROUPE_CHECK(rows >= 0 && vocab > 0, "bad shape");
  TROUPE_CHECK(vocab <= max_vocab, "vocabulary too large for one block's scan");
  TROUPE_CHECK(logits != nullptr && workspace != nullptr && tokens != nullptr && logprob != nullptr &&
                   top_ids != nullptr && top_logprobs != nullptr,
               "null pointer");
  if (rows == 0) return;
  launch(logits, rows, vocab, params, static_cast<float*>(workspace), tokens, logprob, top_ids, top_logprobs, stream);
}

}  // namespace troupe::cuda
