#include "config/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "model/plan.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

// Longer than any layout of a model perfsweep reads (a chunk a block, each of a few layers).
constexpr std::size_t kMaxExpanded = 1u << 20;

[[noreturn]] void refuse(std::string_view flag, std::string_view text, const std::string& why) {
  throw ConfigError(std::string(flag) + " '" + std::string(text) + "': " + why);
}

// The digits at `at` as a repetition count; `end` past them. False where none.
bool count_at(std::string_view s, std::size_t at, std::size_t& end, std::size_t& n) {
  end = at;
  n = 0;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) != 0) {
    n = std::min<std::size_t>(n * 10 + static_cast<std::size_t>(s[end] - '0'), kMaxExpanded + 1);
    ++end;
  }
  return end > at;
}

void append_repeated(std::string& out, std::string_view part, std::size_t n, std::string_view flag,
                     std::string_view text) {
  if (n > kMaxExpanded || out.size() + part.size() * n > kMaxExpanded) {
    refuse(flag, text, "its repetitions unroll to more than " + std::to_string(kMaxExpanded) + " characters");
  }
  for (std::size_t k = 0; k < n; ++k) out += part;
}

// Megatron-Core's two substitutions in order: r'\(([^)]+)\)\*(\d+)', then r'(.)\*(\d+)', each
// scanning left to right as re.sub does.
std::string unroll(std::string_view text, std::string_view flag) {
  std::string s;
  for (const char ch : text) {
    if (ch != ',') s += ch;
  }
  std::string groups;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      std::size_t end = 0, n = 0;
      if (close != std::string::npos && close > i + 1 && close + 1 < s.size() && s[close + 1] == '*' &&
          count_at(s, close + 2, end, n)) {
        append_repeated(groups, std::string_view(s).substr(i + 1, close - i - 1), n, flag, text);
        i = end;
        continue;
      }
    }
    groups += s[i++];
  }
  std::string out;
  for (std::size_t i = 0; i < groups.size();) {
    std::size_t end = 0, n = 0;
    if (i + 1 < groups.size() && groups[i + 1] == '*' && count_at(groups, i + 2, end, n)) {
      append_repeated(out, std::string_view(groups).substr(i, 1), n, flag, text);
      i = end;
      continue;
    }
    out += groups[i++];
  }
  return out;
}

std::string list(const std::vector<I>& v) {
  std::string out;
  for (const I x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}
}  // namespace

std::vector<LayoutChunk> parse_pipeline_layout(std::string_view text, std::string_view flag) {
  const std::string s = unroll(text, flag);
  std::vector<LayoutChunk> chunks(1);
  bool mtp_seen = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    LayoutChunk& c = chunks.back();
    const bool starts = i == 0 || s[i - 1] == '|', ends = i + 1 == s.size() || s[i + 1] == '|';
    if (ch == '|') {
      chunks.emplace_back();
      continue;
    }
    std::int64_t* count = ch == 't'   ? &c.blocks
                          : ch == 'm' ? &c.mtp
                          : ch == 'E' ? &c.embeddings
                          : ch == 'L' ? &c.losses
                                      : nullptr;
    if (count == nullptr) {
      refuse(flag, text,
             std::string("invalid layer character '") + ch +
                 "' (known: E the embedding, t a decoder block, m an MTP layer, L the loss; | ends a chunk, "
                 "x*N and (...)*N repeat)");
    }
    ++*count;
    c.block_after_mtp = c.block_after_mtp || (ch == 't' && mtp_seen);
    mtp_seen = mtp_seen || ch == 'm';
    c.embedding_first = c.embedding_first || (ch == 'E' && starts);
    c.loss_last = c.loss_last || (ch == 'L' && ends);
  }
  return chunks;
}

PipelineLayoutStages pipeline_layout_stages(std::string_view text, std::string_view flag, I pp, I interleave,
                                            const Transformer& model) {
  const std::vector<LayoutChunk> chunks = parse_pipeline_layout(text, flag);
  const I n = static_cast<I>(chunks.size());
  const auto why = [&](const std::string& what) { refuse(flag, text, what); };
  if (pp < 1 || interleave < 1 || n != pp * interleave) {
    why("it has " + std::to_string(n) + " chunks, not pp x interleave = " + std::to_string(pp) + " x " +
        std::to_string(interleave) + " (Megatron-Core reads the virtual stages as chunks / pp)");
  }
  I embeddings = 0, losses = 0, blocks = 0, mtp = 0;
  for (const LayoutChunk& c : chunks) {
    embeddings += c.embeddings;
    losses += c.losses;
    blocks += c.blocks;
    mtp += c.mtp;
  }
  if (embeddings != 1 || losses != 1) {
    why("the embedding (E) and the loss (L) must each be given once, got " + std::to_string(embeddings) + " and " +
        std::to_string(losses));
  }
  if (!chunks.front().embedding_first) why("the first layer must be the embedding (E), in the first chunk");
  if (!chunks.back().loss_last) why("the last layer must be the loss (L), in the last chunk");
  if (blocks != model.depth) {
    why("it holds " + std::to_string(blocks) + " decoder blocks (t), the model " + std::to_string(model.depth));
  }
  if (mtp != model.mtp_layers) {
    why("it holds " + std::to_string(mtp) + " MTP layers (m), the model " + std::to_string(model.mtp_layers) +
        " (its multi-token prediction depth)");
  }
  if (mtp > 0) {
    // Megatron-Core: decoder blocks before the MTP layers, all of them in one chunk; perfsweep costs
    // them on the last stage (model/block.hpp's stage ends)
    const auto holds = std::find_if(chunks.begin(), chunks.end(), [](const LayoutChunk& c) { return c.mtp > 0; });
    if (holds->mtp != mtp) why("all MTP layers (m) must be in one chunk");
    if (std::any_of(chunks.begin(), chunks.end(), [](const LayoutChunk& c) { return c.block_after_mtp; })) {
      why("the decoder blocks (t) must come before the MTP layers (m)");
    }
    const I at = holds - chunks.begin();
    if (at % pp != pp - 1 || at / pp != interleave - 1) {
      why("the MTP layers (m) must be in the last stage's last chunk, where perfsweep costs them");
    }
  }
  PipelineLayoutStages out;
  out.stage_totals.assign(static_cast<std::size_t>(pp), 0);
  for (I i = 0; i < n; ++i) out.stage_totals[static_cast<std::size_t>(i % pp)] += chunks[static_cast<std::size_t>(i)].blocks;
  const std::vector<I>& t = out.stage_totals;
  if (std::any_of(t.begin(), t.end(), [](I b) { return b == 0; })) {
    why("a stage holds no decoder block (stages " + list(t) + "), which is not modelled");
  }
  if (pp > 2 && std::any_of(t.begin() + 1, t.end() - 1, [&](I b) { return b != t[1]; })) {
    why("the middle stages hold different numbers of blocks (" + list(t) +
        "): perfsweep costs one middle stage for all of them");
  }
  const I first = t.front(), last = t.back();
  const bool even = std::all_of(t.begin(), t.end(), [&](I b) { return b == first; });
  if (!even) {
    out.first_stage_blocks = first;
    out.last_stage_blocks = last;
  }
  if (interleave > 1 && pp > 1) {
    Execution x;
    x.first_stage_blocks = out.first_stage_blocks;
    x.last_stage_blocks = out.last_stage_blocks;
    const StageBlocks b = stage_blocks(model, pp, x);
    const InterleavedChunks cut = interleaved_chunks(b, pp, interleave);
    bool same = cut.valid;
    for (I i = 0; i < n && same; ++i) {
      const I size = chunk_blocks(b, cut, pp, interleave, i % pp, i / pp);
      same = size == chunks[static_cast<std::size_t>(i)].blocks;
    }
    if (!same) {
      // every chunk but the first stage's first (chunk 0) and the last stage's last (chunk n - 1)
      const I chunk = chunks[1].blocks;
      for (I i = 1; i + 1 < n; ++i) {
        if (chunks[static_cast<std::size_t>(i)].blocks != chunk) {
          why("its chunks other than the first and the last hold different numbers of blocks (" +
              std::to_string(chunk) + " and " + std::to_string(chunks[static_cast<std::size_t>(i)].blocks) +
              "): perfsweep cuts a stage's blocks into regular chunks but for those two");
        }
      }
      if (chunk == 0) why("its chunks other than the first and the last hold no block");
      out.layout_chunk_blocks = chunk;
    }
  }
  return out;
}

}  // namespace perfsweep
