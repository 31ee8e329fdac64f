#include "kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace orrery::calibration::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kTile = 64;  // query rows per block, and keys per shared-memory tile

__device__ float uniform(std::uint64_t seed, std::int64_t i) {
  // SplitMix64 of (seed, i): independent values without per-thread generator state.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f;
}

__global__ void fill_bf16(__nv_bfloat16* d, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    d[i] = __float2bfloat16(uniform(seed, i));
  }
}

__global__ void fill_fp8(__nv_fp8_e4m3* d, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    d[i] = __nv_fp8_e4m3(uniform(seed, i));
  }
}

__global__ void axpb(const __nv_bfloat16* x, const __nv_bfloat16* b, __nv_bfloat16* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] = __float2bfloat16(1.5f * __bfloat162float(x[i]) + __bfloat162float(b[i]));
  }
}

// One block per row: mean and variance by a block reduction, then the normalised row.
__global__ void layernorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* gain, __nv_bfloat16* y, std::int64_t cols) {
  __shared__ float partial[2][kThreads];
  const __nv_bfloat16* in = x + blockIdx.x * cols;
  float sum = 0, sq = 0;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(in[c]);
    sum += v;
    sq += v * v;
  }
  partial[0][threadIdx.x] = sum;
  partial[1][threadIdx.x] = sq;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      partial[0][threadIdx.x] += partial[0][threadIdx.x + s];
      partial[1][threadIdx.x] += partial[1][threadIdx.x + s];
    }
    __syncthreads();
  }
  const float mean = partial[0][0] / static_cast<float>(cols);
  const float inv = rsqrtf(partial[1][0] / static_cast<float>(cols) - mean * mean + 1e-5f);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    y[blockIdx.x * cols + c] = __float2bfloat16((__bfloat162float(in[c]) - mean) * inv * __bfloat162float(gain[c]));
  }
}

// Stages the keys and values [start, start + kTile) of a document (zeros past its end) in shared
// memory, between two barriers.
template <int D>
__device__ void load_kv_tile(const AttentionShape& s, const __nv_bfloat16* k, const __nv_bfloat16* v, int begin, int len, int start, int kv_head,
                             __nv_bfloat16 (*ks)[D], __nv_bfloat16 (*vs)[D]) {
  __syncthreads();
  for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
    const int j = start + i / D, d = i % D;
    const std::int64_t at = (static_cast<std::int64_t>(begin + j) * s.kv_heads + kv_head) * D + d;
    ks[i / D][d] = j < len ? k[at] : __float2bfloat16(0.0f);
    vs[i / D][d] = j < len ? v[at] : __float2bfloat16(0.0f);
  }
  __syncthreads();
}

// Grid: (query tiles of the longest document, docs, heads). A thread owns one query row.
template <int D>
__global__ void attention_fwd_kernel(AttentionShape s, const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                     __nv_bfloat16* o, float* lse) {
  __shared__ __nv_bfloat16 ks[kTile][D];
  __shared__ __nv_bfloat16 vs[kTile][D];
  const int doc = blockIdx.y, head = blockIdx.z, kv_head = head / (s.heads / s.kv_heads);
  const int begin = s.cu_seqlens[doc], len = s.cu_seqlens[doc + 1] - begin;
  const int row = blockIdx.x * kTile + threadIdx.x;
  if (blockIdx.x * kTile >= len) return;
  const bool active = row < len;
  const float scale = rsqrtf(static_cast<float>(D));
  float qr[D], acc[D];
  float m = -INFINITY, l = 0;
  for (int d = 0; d < D; ++d) {
    qr[d] = active ? __bfloat162float(q[(static_cast<std::int64_t>(begin + row) * s.heads + head) * D + d]) * scale : 0.0f;
    acc[d] = 0;
  }
  const int last_key = s.causal ? min(len, (blockIdx.x + 1) * kTile) : len;
  for (int start = 0; start < last_key; start += kTile) {
    load_kv_tile<D>(s, k, v, begin, len, start, kv_head, ks, vs);
    if (!active) continue;
    const int stop = min(kTile, (s.causal ? row + 1 : len) - start);
    for (int j = 0; j < stop; ++j) {
      float dot = 0;
      for (int d = 0; d < D; ++d) dot += qr[d] * __bfloat162float(ks[j][d]);
      const float m_new = fmaxf(m, dot);
      const float correction = __expf(m - m_new), p = __expf(dot - m_new);
      l = l * correction + p;
      for (int d = 0; d < D; ++d) acc[d] = acc[d] * correction + p * __bfloat162float(vs[j][d]);
      m = m_new;
    }
  }
  if (!active) return;
  for (int d = 0; d < D; ++d) o[(static_cast<std::int64_t>(begin + row) * s.heads + head) * D + d] = __float2bfloat16(acc[d] / l);
  lse[static_cast<std::int64_t>(head) * s.tokens + begin + row] = m + __logf(l);
}

// delta_i = sum_d dO_i,d * O_i,d (per query row and head).
template <int D>
__global__ void attention_delta_kernel(AttentionShape s, const __nv_bfloat16* o, const __nv_bfloat16* d_o, float* delta) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::int64_t>(s.tokens) * s.heads) return;
  const std::int64_t token = i / s.heads, head = i % s.heads;
  float sum = 0;
  for (int d = 0; d < D; ++d) sum += __bfloat162float(o[i * D + d]) * __bfloat162float(d_o[i * D + d]);
  delta[head * s.tokens + token] = sum;
}

// dQ: a thread owns one query row and walks the keys (like the forward).
template <int D>
__global__ void attention_dq_kernel(AttentionShape s, const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                    const __nv_bfloat16* d_o, const float* lse, const float* delta, __nv_bfloat16* dq) {
  __shared__ __nv_bfloat16 ks[kTile][D];
  __shared__ __nv_bfloat16 vs[kTile][D];
  const int doc = blockIdx.y, head = blockIdx.z, kv_head = head / (s.heads / s.kv_heads);
  const int begin = s.cu_seqlens[doc], len = s.cu_seqlens[doc + 1] - begin;
  const int row = blockIdx.x * kTile + threadIdx.x;
  if (blockIdx.x * kTile >= len) return;
  const bool active = row < len;
  const float scale = rsqrtf(static_cast<float>(D));
  const std::int64_t at = (static_cast<std::int64_t>(begin + row) * s.heads + head) * D;
  float qr[D], dor[D], acc[D];
  for (int d = 0; d < D; ++d) {
    qr[d] = active ? __bfloat162float(q[at + d]) * scale : 0.0f;
    dor[d] = active ? __bfloat162float(d_o[at + d]) : 0.0f;
    acc[d] = 0;
  }
  const float lse_i = active ? lse[static_cast<std::int64_t>(head) * s.tokens + begin + row] : 0.0f;
  const float delta_i = active ? delta[static_cast<std::int64_t>(head) * s.tokens + begin + row] : 0.0f;
  const int last_key = s.causal ? min(len, (blockIdx.x + 1) * kTile) : len;
  for (int start = 0; start < last_key; start += kTile) {
    load_kv_tile<D>(s, k, v, begin, len, start, kv_head, ks, vs);
    if (!active) continue;
    const int stop = min(kTile, (s.causal ? row + 1 : len) - start);
    for (int j = 0; j < stop; ++j) {
      float dot = 0, dp = 0;
      for (int d = 0; d < D; ++d) {
        dot += qr[d] * __bfloat162float(ks[j][d]);
        dp += dor[d] * __bfloat162float(vs[j][d]);
      }
      const float ds = __expf(dot - lse_i) * (dp - delta_i) * scale;
      for (int d = 0; d < D; ++d) acc[d] += ds * __bfloat162float(ks[j][d]);
    }
  }
  if (!active) return;
  for (int d = 0; d < D; ++d) dq[at + d] = __float2bfloat16(acc[d]);
}

// dK, dV: a thread owns one key row (per query head) and walks the queries.
template <int D>
__global__ void attention_dkdv_kernel(AttentionShape s, const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                      const __nv_bfloat16* d_o, const float* lse, const float* delta, __nv_bfloat16* dk,
                                      __nv_bfloat16* dv) {
  __shared__ __nv_bfloat16 qs[kTile][D];
  __shared__ __nv_bfloat16 dos[kTile][D];
  __shared__ float lses[kTile];
  __shared__ float deltas[kTile];
  const int doc = blockIdx.y, head = blockIdx.z, kv_head = head / (s.heads / s.kv_heads);
  const int begin = s.cu_seqlens[doc], len = s.cu_seqlens[doc + 1] - begin;
  const int key = blockIdx.x * kTile + threadIdx.x;
  if (blockIdx.x * kTile >= len) return;
  const bool active = key < len;
  const float scale = rsqrtf(static_cast<float>(D));
  const std::int64_t kat = (static_cast<std::int64_t>(begin + key) * s.kv_heads + kv_head) * D;
  float kr[D], vr[D], dk_acc[D], dv_acc[D];
  for (int d = 0; d < D; ++d) {
    kr[d] = active ? __bfloat162float(k[kat + d]) : 0.0f;
    vr[d] = active ? __bfloat162float(v[kat + d]) : 0.0f;
    dk_acc[d] = dv_acc[d] = 0;
  }
  const int first_query = s.causal ? blockIdx.x * kTile : 0;
  for (int start = first_query; start < len; start += kTile) {
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * D; i += blockDim.x) {
      const int r = start + i / D, d = i % D;
      const std::int64_t qat = (static_cast<std::int64_t>(begin + r) * s.heads + head) * D + d;
      qs[i / D][d] = r < len ? q[qat] : __float2bfloat16(0.0f);
      dos[i / D][d] = r < len ? d_o[qat] : __float2bfloat16(0.0f);
    }
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
      const int r = start + i;
      lses[i] = r < len ? lse[static_cast<std::int64_t>(head) * s.tokens + begin + r] : 0.0f;
      deltas[i] = r < len ? delta[static_cast<std::int64_t>(head) * s.tokens + begin + r] : 0.0f;
    }
    __syncthreads();
    if (!active) continue;
    const int stop = min(kTile, len - start);
    for (int r = s.causal ? max(0, key - start) : 0; r < stop; ++r) {
      float dot = 0, dp = 0;
      for (int d = 0; d < D; ++d) {
        dot += __bfloat162float(qs[r][d]) * kr[d];
        dp += __bfloat162float(dos[r][d]) * vr[d];
      }
      const float p = __expf(dot * scale - lses[r]);
      const float ds = p * (dp - deltas[r]) * scale;
      for (int d = 0; d < D; ++d) {
        dv_acc[d] += p * __bfloat162float(dos[r][d]);
        dk_acc[d] += ds * __bfloat162float(qs[r][d]);
      }
    }
  }
  if (!active) return;
  const std::int64_t out = (static_cast<std::int64_t>(begin + key) * s.heads + head) * D;
  for (int d = 0; d < D; ++d) {
    dk[out + d] = __float2bfloat16(dk_acc[d]);
    dv[out + d] = __float2bfloat16(dv_acc[d]);
  }
}

int blocks_for(std::int64_t n) { return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535)); }

dim3 attention_grid(const AttentionShape& s) {
  return dim3(static_cast<unsigned>((s.max_len + kTile - 1) / kTile), static_cast<unsigned>(s.docs), static_cast<unsigned>(s.heads));
}

bool valid(const AttentionShape& s) {
  return (s.head_dim == 64 || s.head_dim == 128) && s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0 && s.docs > 0;
}

}  // namespace

cudaError_t kernels_runnable() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, fill_bf16);
}

cudaError_t fill_random(void* data, std::int64_t n, bool fp8, std::uint64_t seed, cudaStream_t stream) {
  if (fp8) {
    fill_fp8<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), n, seed);
  } else {
    fill_bf16<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, seed);
  }
  return cudaGetLastError();
}

cudaError_t elementwise(const void* x, const void* b, void* y, std::int64_t n, cudaStream_t stream) {
  axpb<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(b),
                                               static_cast<__nv_bfloat16*>(y), n);
  return cudaGetLastError();
}

cudaError_t layernorm(const void* x, const void* gain, void* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  layernorm_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x),
                                                                       static_cast<const __nv_bfloat16*>(gain),
                                                                       static_cast<__nv_bfloat16*>(y), cols);
  return cudaGetLastError();
}

cudaError_t attention_forward(const AttentionShape& s, const void* q, const void* k, const void* v, void* o, float* lse,
                              cudaStream_t stream) {
  if (!valid(s)) return cudaErrorInvalidValue;
  const auto* qb = static_cast<const __nv_bfloat16*>(q);
  const auto* kb = static_cast<const __nv_bfloat16*>(k);
  const auto* vb = static_cast<const __nv_bfloat16*>(v);
  auto* ob = static_cast<__nv_bfloat16*>(o);
  if (s.head_dim == 64) {
    attention_fwd_kernel<64><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, ob, lse);
  } else {
    attention_fwd_kernel<128><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, ob, lse);
  }
  return cudaGetLastError();
}

cudaError_t attention_backward(const AttentionShape& s, const void* q, const void* k, const void* v, const void* o, const void* d_o,
                               const float* lse, float* delta, void* dq, void* dk, void* dv, cudaStream_t stream) {
  if (!valid(s)) return cudaErrorInvalidValue;
  const auto* qb = static_cast<const __nv_bfloat16*>(q);
  const auto* kb = static_cast<const __nv_bfloat16*>(k);
  const auto* vb = static_cast<const __nv_bfloat16*>(v);
  const auto* ob = static_cast<const __nv_bfloat16*>(o);
  const auto* dob = static_cast<const __nv_bfloat16*>(d_o);
  auto* dqb = static_cast<__nv_bfloat16*>(dq);
  auto* dkb = static_cast<__nv_bfloat16*>(dk);
  auto* dvb = static_cast<__nv_bfloat16*>(dv);
  const int rows = blocks_for(static_cast<std::int64_t>(s.tokens) * s.heads);
  if (s.head_dim == 64) {
    attention_delta_kernel<64><<<rows, kThreads, 0, stream>>>(s, ob, dob, delta);
    attention_dq_kernel<64><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, dob, lse, delta, dqb);
    attention_dkdv_kernel<64><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, dob, lse, delta, dkb, dvb);
  } else {
    attention_delta_kernel<128><<<rows, kThreads, 0, stream>>>(s, ob, dob, delta);
    attention_dq_kernel<128><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, dob, lse, delta, dqb);
    attention_dkdv_kernel<128><<<attention_grid(s), kTile, 0, stream>>>(s, qb, kb, vb, dob, lse, delta, dkb, dvb);
  }
  return cudaGetLastError();
}

}  // namespace orrery::calibration::cuda
