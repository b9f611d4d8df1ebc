#pragma once
// A step's data- and pipeline-parallel communication (the reference's DataParallel and
// PipelineParallel layers) and the end stages' collectives.
#include <cstdint>

#include "model/block_summary.hpp"

namespace perfsweep {

// Weight all-gather (forward) and gradient reduce-scatter (backward) across the data-parallel
// group, overlapped with the compute of the other layers of a stage: one collective is exposed,
// and the rest only by what they exceed one layer's compute.
// What the data-parallel group moves per block, relative to the block's weights in the
// reference's element size: parameters gathered (forward; with ZeRO-3 again in the backward)
// and gradients reduced (backward).
// With ep > 1 the routed experts' weights (BlockSummary::expert_weights_gb) are gathered and
// reduced over the expert-data-parallel group (expert_group GPUs, expert_fast of them in a
// domain) after the other weights' collective over the data-parallel group.
struct DataParallelTraffic {
  double gather_scale = 1;
  double reduce_scale = 1;
  bool gather_in_backward = false;  // ZeRO-3: the backward gathers the parameters again
  std::int64_t expert_group = 0;    // 0: the experts' weights move with the others
  std::int64_t expert_fast = 1;
  // NVLink domains between consecutive domains of the group and of the expert group (network
  // tiers: model/collective.hpp network_path).
  std::int64_t stride = 1;
  std::int64_t expert_stride = 1;
  // How many times a step runs each (the runtime's cadence: FSDP and DeepSpeed ZeRO-3 gather and
  // reduce for every micro-batch).
  std::int64_t gather_repeats = 1;
  std::int64_t reduce_repeats = 1;
  // Megatron-Core's interleaved schedule (DpOverlap::Chunk): the stage's layers in `chunks`
  // virtual chunks, whose collectives run behind the schedule's other chunks, `chunk_steps`
  // micro-batch steps of a chunk apart (the pipeline's depth); 1: the reference's window.
  std::int64_t chunks = 1;
  std::int64_t chunk_steps = 0;
};
DataParallelTraffic data_parallel_traffic(const Execution& exec);
// With a runtime: its bytes per parameter set the volumes (the gradients' and weights' dtypes
// relative to the reference's 2 bytes) and its cadence the repeats over `micro_batches`.
DataParallelTraffic data_parallel_traffic(const Runtime& rt, const Execution& exec, std::int64_t micro_batches);

// Seconds the data-parallel collectives of a stage's `layers` layers stay exposed, each `comm_s`
// long and one layer's compute of one micro-batch `compute_s`: the reference's window (one
// collective exposed, the others by what they exceed a layer's compute) with one chunk; with
// traffic.chunks > 1, Megatron-Core's interleaved schedule (DpOverlap::Chunk): the reductions
// queued behind the backward of the chunks finishing later, the gathers of chunks after the first
// behind the forward of those before them.
double exposed_dp_seconds(CommType type, double comm_s, double compute_s, std::int64_t layers,
                          const DataParallelTraffic& traffic);

LayerResult data_parallel(const System& s, const BlockSummary& block, std::int64_t layers_per_stage,
                          std::int64_t group, std::int64_t fast_domain, bool overlap = true,
                          const DataParallelTraffic& traffic = {});

// Point-to-point activation transfers between pipeline stages, for every micro-batch. Links inside
// the NVLink domain are fast; the reference times the others as free (its quirk, kept with
// `slow_links_free`; a framework's runtime times them over the network). Always
// the analytical model: nccl-tests calibrations cover allreduce, allgather and reducescatter.
// With V virtual stages per GPU (interleaved 1F1B) every micro-batch crosses V times as many
// stage boundaries. With network tiers, a link between stages in different domains (fast_domain
// 1) crosses the tiers between its two domains, consecutive stages `stride` domains apart: the
// links' mean time (model/collective.hpp link_path).
LayerResult pipeline_parallel(const System& s, const BlockSummary& block, std::int64_t micro_batches,
                              std::int64_t pp, std::int64_t fast_domain, bool slow_links_free = true,
                              std::int64_t interleave = 1, std::int64_t stride = 1);

// The data-parallel all-gather and reduce-scatter of a stage's extra weights (embedding, LM
// head). The embedding's gradient is the last of the backward on the first stage, so nothing
// hides it: counted exposed on both stages.
double extra_dp_seconds(const System& s, double weights_gb, std::int64_t group, std::int64_t fast,
                        const DataParallelTraffic& traffic);

// Megatron's embedding group: with tied embeddings on several stages, the first and last stage
// all-reduce the embedding's gradient (`gradient_gb` per tensor-parallel shard) after the
// backward, over NVLink when the two share a domain (every stage in one, nv_pp = pp), else the
// network. Nothing follows it to hide it. Timed as the ring runs it: a reduce-scatter and an
// all-gather.
double embedding_group_seconds(const System& s, double gradient_gb, std::int64_t pp, std::int64_t nv_pp,
                               std::int64_t stage_stride);

}  // namespace perfsweep
