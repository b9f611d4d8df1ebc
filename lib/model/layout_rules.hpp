#pragma once
// The rules a layout must follow to be costed: the model's, the system's and the runtime's, in
// one table. Each rule is a named check returning its reason; the table is read three ways:
// validate_layout and validate_runtime_layout refuse one layout with the first broken rule's
// reason (estimate, evaluate), and choice_refusal tells a search or `configs` which values of an
// option list a strategy, runtime and system cannot run (check_runtime_choices drops them with a
// note each, or refuses when none is left).
#include <cstdint>
#include <span>
#include <string>

#include "core/error.hpp"
#include "model/plan.hpp"
#include "model/runtime.hpp"

namespace perfsweep {

// What a rule reads. A rule of an option (RuleSubject other than Layout) reads the system, the
// runtime and the layout's strategy and options only, never the model (null in a choice).
struct RuleInputs {
  const System* system = nullptr;
  const Transformer* model = nullptr;
  const Runtime* runtime = nullptr;  // null: the runtime's rules are not asked
  const Layout* layout = nullptr;
  std::int64_t global_batch = 0;
  // The mechanisms the layout runs under (its stage partition, its FP8 recipe); null: the
  // runtime's, or the reference's without one.
  const Mechanisms* mechanisms = nullptr;
};

// What a rule is about: one option's value (decided without the model and the other degrees:
// a search's lists are filtered by it), or the whole layout.
enum class RuleSubject : std::uint8_t {
  Layout,
  Strategy,
  Zero,
  SequenceParallel,
  ContextParallel,
  CpComm,
  Offload,
  Precision,
  Recompute,
  TpCommOverlap
};
// Whose limit a rule states: the model's (what perfsweep models), the system's (what its
// hardware has), or the runtime's (what its framework runs).
enum class RuleOwner : std::uint8_t { Model, System, Runtime };

struct LayoutRule {
  const char* name;
  RuleSubject subject;
  RuleOwner owner;
  std::string (*reason)(const RuleInputs&);  // "" where the layout keeps to the rule
};
// Every rule, in the order a layout is checked.
std::span<const LayoutRule> layout_rules();

// The refusal of one layout by a rule (validate_layout, validate_runtime_layout): the rule's
// reason, and which rule of layout_rules() gave it (for counts of what each rule refused).
class RuleError : public ConfigError {
 public:
  RuleError(std::size_t rule, const std::string& reason) : ConfigError(reason), rule_(rule) {}
  std::size_t rule() const { return rule_; }

 private:
  std::size_t rule_;
};

// The reason the first rule of `subject` gives for the layout (the runtime's rules first, where
// a runtime is given), or "" where every rule of it holds.
std::string choice_refusal(RuleSubject subject, const RuleInputs& in);

// Checks the layout against the model (divisibility, NVLink sizes), throwing ConfigError with a
// readable reason when the reference could not express it; under the runtime's mechanisms (its
// stage partition, its FP8 recipe; the reference's by default) where they decide.
void validate_layout(const System& s, const Transformer& m, const Layout& layout, std::int64_t global_batch,
                     const Mechanisms& mechanisms = Mechanisms{});

// The runtime's checks of a layout (strategies and ZeRO stages it runs), ConfigError otherwise.
void validate_runtime_layout(const Runtime& rt, const Layout& layout);

}  // namespace perfsweep
