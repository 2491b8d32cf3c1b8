// Model loading: config, then every tensor of for_each_tensor() checked and
// placed (see model.h). Errors name the tensor and what was expected.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "model/model.h"
#include "model/arch/arch.h"
#include "model/progress.h"

namespace folio::model {

namespace {

std::string shape_str(const std::array<int64_t, kMaxDims>& ne) {
  int n = kMaxDims;
  while (n > 1 && ne[static_cast<size_t>(n) - 1] == 1) --n;
  std::string s = fmt::format("[{}", ne[0]);
  for (int i = 1; i < n; ++i) s += fmt::format(", {}", ne[static_cast<size_t>(i)]);
  return s + "]";
}

// Ops that read weights in any (supported) dtype; the others need F32.
bool reads_any_dtype(OpKind k) {
  return k == OpKind::kMulMat || k == OpKind::kMulMatId || k == OpKind::kGetRows;
}

// A layer tensor the file holds and folio does not read, which llama.cpp
// would apply: a bias (`blk.N.ffn_up.bias`, ...) or a per-tensor scale of a
// projection's output or input (`blk.N.attn_q.scale`, `.input_scale`: the
// generic scales llama.cpp loads for every architecture). Ignoring one would
// compute other logits than llama.cpp's, so the file is refused, naming it.
// Tensors of blocks past n_layer (MTP blocks) are not run by either in
// the main forward (their biases load with them: LoadOptions::load_mtp).
Status check_unread_tensors(const gguf::GgufFile& file, const ModelConfig& cfg,
                            const std::set<std::string>& read) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (read.count(t.name) != 0) continue;
    if (t.name == "output.bias") {
      return unsupported("model: tensor '{}' is not supported for {}: llama.cpp applies it and "
                         "folio would compute without it",
                         t.name, cfg.arch);
    }
    if (t.name.rfind("blk.", 0) != 0) continue;
    const size_t dot = t.name.find('.', 4);
    if (dot == std::string::npos) continue;
    const int layer = std::atoi(t.name.c_str() + 4);
    if (layer >= cfg.n_layer) continue;
    for (const char* suffix : {".bias", ".scale", ".input_scale"}) {
      const std::string_view n(t.name), s(suffix);
      if (n.size() > s.size() && n.substr(n.size() - s.size()) == s) {
        return unsupported(
            "model: tensor '{}' is not supported for {}: llama.cpp applies it and folio "
            "would compute without it",
            t.name, cfg.arch);
      }
    }
  }
  return Status();
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Reads one byte per page so the mapping is resident.
void prefault(std::span<const uint8_t> bytes) {
  const volatile uint8_t* p = bytes.data();
  uint8_t sink = 0;
  for (size_t off = 0; off < bytes.size(); off += 4096) sink ^= p[off];
  (void)sink;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadOptions& options) {
  Result<gguf::GgufFile> file = gguf::GgufFile::open(path, options.file);
  if (!file.ok()) return file.status();
  Result<std::unique_ptr<Model>> m = from_gguf(std::move(file).value(), options);
  if (!m.ok()) return m.status().with_context(path);
  return m;
}

Result<std::unique_ptr<Model>> Model::from_gguf(gguf::GgufFile file, const LoadOptions& options) {
  auto m = std::unique_ptr<Model>(new Model(std::move(file)));
  FOLIO_ASSIGN_OR_RETURN(m->config_, ModelConfig::from_gguf(m->file_));
  NextnConfig& nextn = m->config_.nextn;
  nextn.loaded = options.load_mtp && nextn.n_layer > 0 && m->config_.family->mtp_layer != nullptr;
  FOLIO_RETURN_IF_ERROR(m->load_weights(options));
  return m;
}

namespace {

// Is tensor `name` offloaded (LoadOptions::offload_layers)?
bool offloaded(const std::string& name, int n_layer, int offload_layers) {
  if (offload_layers == 0) return false;
  const int first = offload_layers < 0 ? 0 : std::max(0, n_layer - offload_layers);
  const bool head = offload_layers < 0 || offload_layers > n_layer;
  if (name.rfind("blk.", 0) == 0) {
    const int il = std::atoi(name.c_str() + 4);
    return il >= first;
  }
  if (name.rfind("token_embd", 0) == 0) return false;
  return head;
}

}  // namespace

Status Model::load_weights(const LoadOptions& options) {
  std::vector<const BufferType*> priority = options.buffer_types;
  if (priority.empty()) priority.push_back(&host_buffer_type());
  std::vector<const BufferType*> offload_priority = priority;
  if (options.offload_type != nullptr) {
    offload_priority.insert(offload_priority.begin(), options.offload_type);
  }

  auto source_of = [this](const TensorSpec& spec) -> const gguf::TensorInfo* {
    const gguf::TensorInfo* info = file_.find_tensor(spec.name);
    if (info == nullptr && spec.fallback != nullptr) info = file_.find_tensor(spec.fallback);
    return info;
  };
  // Progress counts each file tensor once (a tied output shares its bytes).
  uint64_t total = 0;
  {
    ModelWeights scratch;
    std::set<std::string> seen;
    FOLIO_RETURN_IF_ERROR(for_each_tensor(config_, scratch, [&](const TensorSpec& spec) {
      const gguf::TensorInfo* info = source_of(spec);
      if (info != nullptr && seen.insert(info->name).second) total += info->nbytes;
      return Status();
    }));
  }

  const std::string label =
      "loading " + (file_.path().empty() ? config_.arch : base_name(file_.path()));
  ProgressBar bar(options.log, label, total);
  std::set<std::string> used;
  std::vector<std::string> declined;  // offloaded tensors the device type did not take
  std::map<const void*, StoredWeight> stored;  // copied weights by their data (join_weights)
  uint64_t done = 0;
  FOLIO_RETURN_IF_ERROR(for_each_tensor(config_, weights_, [&](const TensorSpec& spec) -> Status {
    const gguf::TensorInfo* info = source_of(spec);
    if (info == nullptr) {
      if (!spec.required) return Status();
      return not_found("model: missing required tensor '{}' ({} model)", spec.name, config_.arch);
    }
    const bool first_use = used.insert(info->name).second;
    FOLIO_ASSIGN_OR_RETURN(DType dtype, dtype_for_tensor(info->type_id, info->name));
    if (info->ne != spec.ne) {
      return invalid_argument("model: tensor '{}' has shape {}, expected {}", info->name,
                              shape_str(info->ne), shape_str(spec.ne));
    }
    if (!reads_any_dtype(spec.consumer) && dtype != DType::F32) {
      return unsupported("model: tensor '{}' has type {}, expected f32 (read by {})", info->name,
                         dtype_name(dtype), op_kind_name(spec.consumer));
    }
    const WeightUse use{info->name, dtype, spec.ne, spec.consumer};
    const bool offload = options.offload_type != nullptr &&
                         offloaded(spec.name, config_.n_layer, options.offload_layers);
    FOLIO_ASSIGN_OR_RETURN(const BufferType* type,
                           place_weight(offload ? offload_priority : priority, use));
    if (offload && type != options.offload_type) {
      declined.push_back(fmt::format("{} ({} [{}, {}], read by {})", info->name, dtype_name(dtype),
                                     spec.ne[0], spec.ne[1], op_kind_name(spec.consumer)));
    }
    TensorPlacement pl{spec.name, info->name, type, false, dtype, 0};
    const std::span<const uint8_t> bytes = file_.tensor_bytes(*info);
    if (type->can_map_weights()) {
      FOLIO_ASSIGN_OR_RETURN(*spec.view, file_.tensor_view(info->name));
      if (options.prefault) prefault(bytes);
      pl.mapped = true;
      pl.bytes = bytes.size();
    } else {
      const size_t size = type->weight_bytes(use);
      Result<std::unique_ptr<Buffer>> buf = type->alloc(size);
      if (!buf.ok()) {
        return resource_exhausted("model: cannot allocate {} bytes of {} for tensor '{}': {}", size,
                                  type->name(), info->name, buf.status().message());
      }
      FOLIO_RETURN_IF_ERROR(type->store_weight(use, bytes.data(), bytes.size(), (*buf)->data()));
      *spec.view = type->weight_view(use, (*buf)->data());
      stored[spec.view->data] = {type, info, use};
      buffers_.push_back(std::move(buf).value());
      pl.bytes = size;
    }
    placements_.push_back(std::move(pl));
    if (first_use) done += info->nbytes;
    bar.update(done);
    return Status();
  }));
  bar.finish();
  FOLIO_RETURN_IF_ERROR(check_unread_tensors(file_, config_, used));
  unused_tensors_ = file_.tensors().size() - used.size();
  for (LayerWeights& l : weights_.layers) {
    FOLIO_RETURN_IF_ERROR(join_weights({&l.wq, &l.wk, &l.wv}, stored, &l.qkv_joint));
    FOLIO_RETURN_IF_ERROR(join_weights({&l.ffn_gate, &l.ffn_up}, stored, &l.gate_up_joint));
    FOLIO_RETURN_IF_ERROR(
        join_weights({&l.ffn_gate_shexp, &l.ffn_up_shexp}, stored, &l.gate_up_shexp_joint));
    FOLIO_RETURN_IF_ERROR(join_weights({&l.ssm_qkv, &l.ssm_gate, &l.ssm_beta, &l.ssm_alpha},
                                       stored, &l.ssm_proj_joint));
    FOLIO_RETURN_IF_ERROR(
        join_weights({&l.ssm_qkv, &l.ssm_gate, &l.ssm_ba}, stored, &l.ssm_proj_joint));
  }

  if (options.log != nullptr) {
    std::fprintf(options.log, "model: %s\n", config_.summary().c_str());
    for (const std::string& line : buffer_summary())
      std::fprintf(options.log, "model: %s\n", line.c_str());
    if (!declined.empty()) {
      std::fprintf(options.log,
                   "model: %zu offloaded tensor(s) stay in %s: %s has no kernel for them or they "
                   "exceed its largest buffer; the ops reading them run on the CPU:\n",
                   declined.size(), priority.front()->name().c_str(),
                   options.offload_type->name().c_str());
      for (const std::string& d : declined) std::fprintf(options.log, "model:   %s\n", d.c_str());
    }
    if (unused_tensors_ > 0) {
      std::fprintf(options.log, "model: %zu tensor(s) in the file are not used by %s\n",
                   unused_tensors_, config_.arch.c_str());
    }
    std::fflush(options.log);
  }
  return Status();
}

Status Model::join_weights(std::initializer_list<TensorView*> parts,
                           const std::map<const void*, StoredWeight>& stored, TensorView* joint) {
  // Joinable: every part copied (not mapped) into one device buffer type in
  // the file's layout (the view the type gives is plain rows of the file's
  // dtype), 2-D, all of one dtype and row length.
  const StoredWeight* first = nullptr;
  int64_t rows = 0;
  size_t total = 0;
  for (const TensorView* t : parts) {
    const auto it = t->empty() ? stored.end() : stored.find(t->data);
    if (it == stored.end()) return Status();
    const StoredWeight& s = it->second;
    if (s.type->is_host() || t->dtype != s.use.dtype || t->ne[2] != 1 || t->ne[3] != 1 ||
        t->nb[1] != t->ne[0] / block_size(t->dtype) * type_size(t->dtype) ||
        s.type->weight_bytes(s.use) != s.info->nbytes) {
      return Status();
    }
    if (first == nullptr) {
      first = &s;
    } else if (s.type != first->type || t->dtype != first->use.dtype ||
               t->ne[0] != first->use.ne[0]) {
      return Status();
    }
    rows += t->ne[1];
    total += s.info->nbytes;
  }
  Result<std::unique_ptr<Buffer>> buf = first->type->alloc(total);
  if (!buf.ok()) return Status();  // no room for the joined copy: the parts stay apart
  char* base = static_cast<char*>((*buf)->data());
  size_t off = 0;
  std::vector<void*> old;
  for (TensorView* t : parts) {
    const StoredWeight& s = stored.at(t->data);
    const std::span<const uint8_t> bytes = file_.tensor_bytes(*s.info);
    FOLIO_RETURN_IF_ERROR(s.type->store_weight(s.use, bytes.data(), bytes.size(), base + off));
    old.push_back(t->data);
    *t = s.type->weight_view(s.use, base + off);
    off += bytes.size();
  }
  WeightUse whole = first->use;
  whole.name += " (joined)";
  whole.ne[1] = rows;
  *joint = first->type->weight_view(whole, base);
  std::erase_if(buffers_, [&](const std::unique_ptr<Buffer>& b) {
    return std::find(old.begin(), old.end(), b->data()) != old.end();
  });
  buffers_.push_back(std::move(buf).value());
  return Status();
}

std::vector<std::string> Model::buffer_summary() const {
  struct Group {
    size_t tensors = 0;
    size_t bytes = 0;
  };
  std::map<std::string, Group> groups;
  std::set<std::string> mapped_sources;  // a tied tensor is mapped once
  for (const TensorPlacement& p : placements_) {
    const std::string key = p.type->name() + (p.mapped ? " (mapped)" : "");
    Group& g = groups[key];
    ++g.tensors;
    if (!p.mapped || mapped_sources.insert(p.source).second) g.bytes += p.bytes;
  }
  std::vector<std::string> lines;
  for (const auto& [name, g] : groups) {
    lines.push_back(fmt::format("{} buffer: {} tensors, {:.2f} MiB", name, g.tensors,
                                static_cast<double>(g.bytes) / (1 << 20)));
  }
  return lines;
}

}  // namespace folio::model
