// Device kernels of the CUDA harness, behind a host interface that needs only the CUDA runtime
// header: the harness's host code (harness.cpp) is plain C++.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace orrery::calibration::cuda {

// cudaSuccess when this build holds code the current device can run (its kernels were compiled
// for the device's architecture, or for PTX the driver can compile for it).
cudaError_t kernels_runnable();

// Fills n bf16 (or fp8 e4m3 when fp8 is set) values with uniform randoms in [-1, 1) from `seed`.
cudaError_t fill_random(void* data, std::int64_t n, bool fp8, std::uint64_t seed, cudaStream_t stream);
// y = a * x + b over n bf16 values (2 reads, 1 write).
cudaError_t elementwise(const void* x, const void* b, void* y, std::int64_t n, cudaStream_t stream);
// A layer norm over `rows` rows of `cols` bf16 values (fp32 statistics), with a gain.
cudaError_t layernorm(const void* x, const void* gain, void* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// Fused varlen attention, FlashAttention-style (tiles of keys in shared memory, online softmax,
// no S matrix in memory), bf16 in and out, fp32 accumulation, on CUDA cores: a reference for
// the shape of the cost, not a tensor-core kernel. Layout: [tokens, heads, head_dim] for Q and
// O, [tokens, kv_heads, head_dim] for K and V; documents given by cu_seqlens (ndocs + 1
// offsets, device memory); head_dim 64 or 128. lse: [heads, tokens] fp32.
struct AttentionShape {
  const std::int32_t* cu_seqlens = nullptr;  // device
  std::int32_t docs = 0;
  std::int32_t max_len = 0;
  std::int32_t tokens = 0;
  std::int32_t heads = 0;
  std::int32_t kv_heads = 0;
  std::int32_t head_dim = 0;
  bool causal = false;
};
cudaError_t attention_forward(const AttentionShape& s, const void* q, const void* k, const void* v, void* o, float* lse,
                              cudaStream_t stream);
// Backward: dQ, dK, dV from dO (and O, lse of the forward). delta: [heads, tokens] fp32
// scratch. dK and dV are per query head ([tokens, heads, head_dim]); GQA sums them per group.
cudaError_t attention_backward(const AttentionShape& s, const void* q, const void* k, const void* v, const void* o, const void* d_o,
                               const float* lse, float* delta, void* dq, void* dk, void* dv, cudaStream_t stream);

}  // namespace orrery::calibration::cuda
