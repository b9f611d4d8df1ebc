#pragma once
// The execution options as flags give them: `--recompute none,selective,full --sp off,on
// --zero 0,1 --interleave 1,2,4 --layout megatron --ep 1,8` (lists for `sweep` and `configs`, one
// value each for `estimate`), checked once with the flag and value in every message.
#include <array>
#include <string>
#include <string_view>

#include "model/execution_options.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"
#include "model/transformer.hpp"

namespace perfsweep {

struct ExecutionFlags {
  // Each searched option's text by its index in kExecutionOptions ("none,full"; the default's
  // name where not given); the stages' blocks are the fields below.
  std::array<std::string, kExecutionOptions.size()> lists;
  // --cp N (1d's context-parallel degree; docs/context_parallel.md): a degree of the tensor split.
  std::string cp = "1";
  // --first-stage-blocks N|auto, --last-stage-blocks N|auto (`estimate`, `configs`): "" not
  // given (the even split, or the balanced one where pp does not split the depth evenly under a
  // runtime that runs uneven stages: balances_where_uneven); "0" an even share; "auto" the
  // partition balanced_stages chooses.
  std::string first_stage_blocks;
  std::string last_stage_blocks;
  // --runtime NAME|FILE (runtimes/); "" for the default (config/runtime_file.hpp).
  std::string runtime;
  ExecutionFlags();
  // The text of the option whose flag is `flag` ("--zero"), or nullptr.
  std::string* list(std::string_view flag);
};

// Each list parsed, without repeats; InputError naming the flag and the value otherwise.
ExecutionChoices parse_execution_choices(const ExecutionFlags& flags);

// The choices that the model cannot take: InputError naming the flag, e.g. --ep with a value above
// 1 for a dense model, or one not dividing a mixture-of-experts model's experts.
void check_execution_for_model(const ExecutionChoices& choices, const Transformer& model);

// One value per option (estimate): InputError if a flag lists several; an option the flags leave to
// the runtime (ExecutionOption::runtime_default: rank_order) takes `rt`'s value. A stage's blocks
// given as "auto" read 0 here (balances_stages says so).
Execution parse_execution(const ExecutionFlags& flags, const Runtime& rt = reference_runtime());
// --cp's one value (estimate): a degree of the tensor split, not of the execution.
std::int64_t parse_context_parallel(const ExecutionFlags& flags);

// Whether --first-stage-blocks or --last-stage-blocks was given (a number or auto).
bool stage_blocks_given(const ExecutionFlags& flags);

// The reference's execution with the end stages' blocks of --first-stage-blocks and
// --last-stage-blocks (0: not given, and "auto" reads 0; balances_stages says so).
Execution parse_stage_blocks(const ExecutionFlags& flags);

// configs' lists: every pair of --first-stage-blocks and --last-stage-blocks values ("6,7,8";
// each list in its order, first-stage values outermost), as parse_stage_blocks reads one pair; a
// value repeated in a list is an InputError. "auto" (alone) reads one pair of 0s.
std::vector<Execution> parse_stage_block_choices(const ExecutionFlags& flags);

// The flags that parse_execution reads back to `exec`'s searched options: "--recompute full --sp
// off --zero 0 --interleave 1 --layout megatron --ep 1" (and the end stages' blocks where given). The framework's
// mechanisms (p2p_scatter_gather, sp_backward_gather, fused_elementwise, dp_after_backward, ...) are
// no part of an execution and have no flag: the runtime's file sets them (Runtime::mechanisms).
std::string execution_arguments(const Execution& exec);

// Whether --first-stage-blocks or --last-stage-blocks is "auto" (then the other must be too, or
// not given): the partition is balanced_stages', chosen for each layout (model/step.hpp:
// with_balanced_stages).
bool balances_stages(const ExecutionFlags& flags);

// "recompute=none,full sp=on zero=1 interleave=1 layout=reference" (and " ep=1,8" unless ep is 1
// alone): for fingerprints and logs.
std::string execution_choices_text(const ExecutionChoices& choices);

}  // namespace perfsweep
