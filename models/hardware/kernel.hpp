// Kernel descriptors: what a GPU kernel computes (kind, shape, dtype), with its exact useful
// FLOPs and compulsory memory traffic. A CostModel (cost.hpp) turns one into a duration.
//   Kernel g = Kernel::gemm(4096, 4096, 4096, DType::bf16);
//   Kernel a = Kernel::attention(Pass::forward, {4096, 512, 100}, /*heads=*/32, /*kv_heads=*/8,
//                                /*head_dim=*/128, /*causal=*/true, DType::bf16);
//   Kernel n = Kernel::memory_bound(KernelKind::norm, sim::Bytes(64e6), DType::bf16);
//   flops(g) == sim::Flops(2.0 * 4096 * 4096 * 4096)
#pragma once

#include "models/hardware/hardware.hpp"
#include "sim/unit_parse.hpp"
#include "sim/units.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::models {

enum class KernelKind : std::uint8_t {
  gemm,
  grouped_gemm,
  attention_fwd,
  attention_bwd,
  elementwise,
  norm,
  softmax,
  rope,
  embedding,
  cross_entropy,
  optimizer,
  copy,
  quantize,  // a cast to a low precision with its scales (FP8, MXFP8, NVFP4)
};
inline constexpr std::size_t kKernelKindCount = 13;
std::string_view to_string(KernelKind);
std::optional<KernelKind> parse_kernel_kind(std::string_view);
std::vector<std::string> kernel_kind_names();
// Kinds costed by their bytes alone (elementwise ... cross_entropy, copy, quantize, and the optimizer step).
bool is_memory_bound(KernelKind);

enum class Pass : std::uint8_t { forward, backward };

struct Kernel {
  KernelKind kind = KernelKind::gemm;
  DType dtype = DType::bf16;
  // gemm: `batch` independent products C[m,n] = A[m,k] B[k,n]. grouped_gemm: one product per
  // group, group g with group_m[g] rows, all sharing n and k (MoE experts).
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::vector<std::int64_t> group_m;
  // attention: self-attention over documents of the given lengths (varlen: no attention across
  // documents), `heads` query heads sharing `kv_heads` key/value heads (GQA), head dims for
  // query/key and for value, causal mask or not.
  std::vector<std::int64_t> doc_lens;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0, head_dim_v = 0;
  bool causal = false;
  // causal attention over a sliding window: a query sees its last `window` keys (itself
  // included); 0 = all earlier keys.
  std::int64_t window = 0;
  // block-sparse (non-causal) attention, as DSV's kernels (arXiv 2502.07590): each query tile
  // visits only this fraction of its document's key tiles (at least one); 1 = dense. Set it on a
  // Kernel::attention; the FLOPs and the executed tiles scale by it, the bytes do not.
  double kept = 1;
  // memory-bound kinds: bytes read plus bytes written.
  double bytes = 0;
  // optimizer: parameters updated.
  std::int64_t params = 0;
  // grouped_gemm, and gemm with batch > 1: the products run as one kernel (false), or as one GEMM
  // launched each, four at a time on Transformer Engine's compute streams (its grouped linear
  // layer: te_general_grouped_gemm -> nvte_multi_stream_cublas_gemm, num_streams = 4), so that a
  // launch gap is paid per four products.
  bool launch_per_product = false;

  static Kernel gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, std::int64_t batch = 1);
  static Kernel grouped_gemm(std::vector<std::int64_t> group_m, std::int64_t n, std::int64_t k, DType dtype);
  // head_dim_v = 0 means head_dim_v = head_dim.
  static Kernel attention(Pass pass, std::vector<std::int64_t> doc_lens, std::int64_t heads, std::int64_t kv_heads,
                          std::int64_t head_dim, bool causal, DType dtype, std::int64_t head_dim_v = 0, std::int64_t window = 0);
  static Kernel memory_bound(KernelKind kind, sim::Bytes bytes, DType dtype);
  // One Adam step over `params` parameters held as fp32 master weights with fp32 moments and a
  // bf16 working copy (mixed-precision training as in Megatron-LM).
  static Kernel optimizer(std::int64_t params);
};

// Bytes one Adam step moves per parameter: reads master weight, gradient, both moments (4 x 4 B),
// writes master weight and moments (3 x 4 B) and the bf16 copy (2 B).
inline constexpr double kAdamBytesPerParam = 30;

// Useful floating-point operations, exact: GEMMs 2mnk; attention 2(d_qk + d_v) per query-key
// pair and head forward, 2(3 d_qk + 2 d_v) backward (recompute QK^T, then dV, dP, dQ, dK), a
// causal document of length l having l(l+1)/2 pairs (with a window w < l: w(w+1)/2 + (l-w)w);
// a block-sparse one (kept < 1) kept x l^2. Memory-bound kinds count 0.
sim::Flops flops(const Kernel&);
// Compulsory HBM traffic: every operand read once and every result written once.
sim::Bytes min_bytes(const Kernel&);
// The kernels the host launches for it: one per product under launch_per_product, else one.
std::int64_t launches(const Kernel&);
// Sum of the documents' lengths (attention), and of their squares.
std::int64_t tokens(const Kernel&);
double sum_squares(const Kernel&);
// "gemm m=4096 n=4096 k=4096 bf16", for messages and reports.
std::string describe(const Kernel&);

// Parses "kind:key=value,..." as in the CLI's --kernel:
//   gemm:m=4096,n=4096,k=4096[,batch=1][,dtype=bf16]
//   grouped_gemm:m=512/640/300,n=...,k=...
//   attention_fwd:seqlen=4096[,batch=2] or docs=4096/512/100, heads=32[,kv_heads=8],head_dim=128[,head_dim_v=..][,causal=1]
//   norm:bytes=64MB (any memory-bound kind)   optimizer:params=1e9
// Errors name `at` and the offending key.
Kernel parse_kernel(std::string_view spec, sim::InputLocation at);
// Checks the shape is consistent (positive sizes, heads divisible by kv_heads, ...).
void validate_kernel(const Kernel&, sim::InputLocation at);

}  // namespace orrery::models
