#include "engine/speculative_options.h"

#include <algorithm>

#include "engine/draft_model_proposer.h"
#include "engine/mtp_proposer.h"
#include "engine/ngram_proposer.h"

namespace folio {

namespace {
constexpr int kSpecMaxDraft = 64;
constexpr int kSpecMaxNgram = 64;
}  // namespace

Status SpeculativeOptions::validate() const {
  if (ngram_min < 1 || ngram_min > kSpecMaxNgram)
    return invalid_argument("--spec-ngram-n-min must be in [1, {}], got {}", kSpecMaxNgram, ngram_min);
  if (ngram_max < ngram_min || ngram_max > kSpecMaxNgram) {
    return invalid_argument("--spec-ngram-n-max must be in [--spec-ngram-n-min = {}, {}], got {}",
                            ngram_min, kSpecMaxNgram, ngram_max);
  }
  if (draft_max < 1 || draft_max > kSpecMaxDraft)
    return invalid_argument("--draft-max must be in [1, {}], got {}", kSpecMaxDraft, draft_max);
  if (draft_min < 0 || draft_min > draft_max) {
    return invalid_argument("--draft-min must be in [0, --draft-max = {}], got {}", draft_max,
                            draft_min);
  }
  if (max_batch < 1) return invalid_argument("--spec-max-batch must be >= 1, got {}", max_batch);
  if (!(min_accept >= 0.0 && min_accept <= 1.0))
    return invalid_argument("--spec-min-accept must be in [0, 1], got {}", min_accept);
  if (!(draft_p_min >= 0.0f && draft_p_min <= 1.0f))
    return invalid_argument("--draft-p-min must be in [0, 1], got {}", draft_p_min);
  return Status();
}

Result<SpecType> parse_spec_type(std::string_view name) {
  if (name == "none") return SpecType::kNone;
  if (name == "ngram") return SpecType::kNgram;
  if (name == "draft") return SpecType::kDraft;
  if (name == "mtp") return SpecType::kMtp;
  return invalid_argument("unknown speculative decoding type '{}' (none, ngram, draft, mtp)", name);
}

const char* spec_type_name(SpecType type) {
  switch (type) {
    case SpecType::kNone: return "none";
    case SpecType::kNgram: return "ngram";
    case SpecType::kDraft: return "draft";
    case SpecType::kMtp: return "mtp";
  }
  return "?";
}

Result<std::unique_ptr<DraftProposer>> make_proposer(const SpeculativeOptions& options) {
  if (options.make && options.enabled()) return options.make();
  switch (options.type) {
    case SpecType::kNone: return std::unique_ptr<DraftProposer>();
    case SpecType::kNgram:
      return std::unique_ptr<DraftProposer>(
          std::make_unique<NgramProposer>(options.ngram_min, options.ngram_max));
    case SpecType::kDraft: {
      const DraftModelRef& d = options.draft;
      if (d.model == nullptr || d.cache == nullptr || d.ctx == nullptr)
        return invalid_argument("speculative decoding with a draft model needs one (-md FILE)");
      if (d.max_batch_tokens < 1)
        return invalid_argument("draft model: max_batch_tokens must be >= 1, got {}",
                                d.max_batch_tokens);
      return std::unique_ptr<DraftProposer>(
          std::make_unique<DraftModelProposer>(d, options.draft_p_min));
    }
    case SpecType::kMtp: {
      const MtpRef& m = options.mtp;
      if (m.head == nullptr || m.cache == nullptr || m.ctx == nullptr || m.hidden == nullptr)
        return invalid_argument("speculative decoding with MTP needs the model's MTP head");
      if (m.max_batch_tokens < 1)
        return invalid_argument("MTP: max_batch_tokens must be >= 1, got {}", m.max_batch_tokens);
      return std::unique_ptr<DraftProposer>(std::make_unique<MtpProposer>(m, options.draft_p_min));
    }
  }
  return std::unique_ptr<DraftProposer>();
}

void SpeculationTracker::record(int drafted, int accepted, double min_accept) {
  if (drafted <= 0) return;
  drafted_ += drafted;
  accepted_ += accepted;
  constexpr double kSpecRateWeight = 0.3;  // weight of the newest verification
  rate_ = (1.0 - kSpecRateWeight) * rate_ +
          kSpecRateWeight * static_cast<double>(accepted) / static_cast<double>(drafted);
  if (++verifications_ >= kWarmup && rate_ < min_accept) {
    pause_left_ = next_pause_;
    next_pause_ = std::min(2 * next_pause_, kMaxPause);
    verifications_ = 0;
    rate_ = 1.0;
  }
}

bool SpeculationTracker::take_step() {
  if (pause_left_ == 0) return true;
  --pause_left_;
  return false;
}

void SpeculationCounts::record(int drafted, int accepted) {
  if (drafted <= 0) return;
  ++drafts;
  draft_tokens += static_cast<uint64_t>(drafted);
  accepted_tokens += static_cast<uint64_t>(accepted);
  if (accepted_per_pos.size() < static_cast<size_t>(drafted))
    accepted_per_pos.resize(static_cast<size_t>(drafted), 0);
  for (int i = 0; i < accepted; ++i) ++accepted_per_pos[static_cast<size_t>(i)];
}

}  // namespace folio
