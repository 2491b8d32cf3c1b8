// The Vulkan command stream's hazard tracker (backend/vulkan/vk_hazards.h)
// against a fake stream that logs what the backend would record: "D" for a
// command, "B" for a barrier before it. Addresses are plain numbers: the
// tracker never dereferences them.
#include "backend/vulkan/vk_hazards.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/vulkan/vk_pipelines.h"

namespace folio::vulkan {
namespace vulkan_hazards_test {

AccessRange rd(uintptr_t begin, uintptr_t end) { return {begin, end, false}; }
AccessRange wr(uintptr_t begin, uintptr_t end) { return {begin, end, true}; }

// Records commands through HazardTracker::order as the backend does.
class FakeStream {
 public:
  void command(std::initializer_list<AccessRange> ranges, bool reads_errors = false) {
    const std::vector<AccessRange> r(ranges);
    if (tracker_.order(CommandAccess{r, reads_errors})) log_ += 'B';
    log_ += 'D';
  }
  void host_wait() { tracker_.mark_all(); }
  const std::string& log() const { return log_; }
  HazardTracker& tracker() { return tracker_; }

 private:
  HazardTracker tracker_;
  std::string log_;
};

TEST(VulkanHazards, ReadAfterWriteWaits) {
  FakeStream s;
  s.command({rd(0, 64), wr(1000, 1064)});
  s.command({rd(1000, 1064), wr(2000, 2064)});
  EXPECT_EQ(s.log(), "DBD");
}

TEST(VulkanHazards, WriteAfterReadWaits) {
  FakeStream s;
  s.command({rd(0, 64), wr(1000, 1064)});
  s.command({rd(5000, 5064), wr(32, 48)});  // overwrites part of what the first reads
  EXPECT_EQ(s.log(), "DBD");
}

TEST(VulkanHazards, WriteAfterWriteWaits) {
  FakeStream s;
  s.command({wr(1000, 1064)});
  s.command({wr(1048, 1100)});
  EXPECT_EQ(s.log(), "DBD");
}

TEST(VulkanHazards, IndependentCommandsShareAStage) {
  // Q, K, V: three matmuls reading one normed input and the weights, each
  // writing its own output; then a rope reading Q waits once for all three.
  FakeStream s;
  s.command({rd(0, 512), rd(10000, 20000), wr(100000, 100512)});
  s.command({rd(0, 512), rd(20000, 30000), wr(100512, 100768)});
  s.command({rd(0, 512), rd(30000, 40000), wr(100768, 101024)});
  s.command({rd(100000, 100512), wr(200000, 200512)});
  s.command({rd(100512, 100768), wr(200512, 200768)});
  EXPECT_EQ(s.log(), "DDDBDD");
}

TEST(VulkanHazards, RangesThatOnlyTouchDoNotOverlap) {
  FakeStream s;
  s.command({wr(0, 1024)});
  s.command({rd(1024, 2048), wr(4096, 8192)});  // starts where the write ended
  s.command({wr(2048, 4096)});                  // between a read and a write
  EXPECT_EQ(s.log(), "DDD");
  s.command({rd(4095, 4097)});  // one byte into the second command's write
  EXPECT_EQ(s.log(), "DDDBD");
}

TEST(VulkanHazards, ReadsNeverWaitForReads) {
  FakeStream s;
  for (int i = 0; i < 5; ++i) s.command({rd(0, 4096)});
  EXPECT_EQ(s.log(), "DDDDD");
}

TEST(VulkanHazards, ABarrierClearsEverythingBeforeIt) {
  FakeStream s;
  s.command({wr(0, 64)});
  s.command({rd(0, 64), wr(64, 128)});  // waits for the first
  s.command({rd(0, 64)});               // its writer is behind the barrier: no wait
  s.command({wr(128, 192)});
  s.command({rd(64, 128)});             // the second command is unsynchronised again
  EXPECT_EQ(s.log(), "DBDDDBD");
}

TEST(VulkanHazards, ReadWriteBindingConflictsBothWays) {
  // A binding that is read and written (an in-place update) is a write.
  FakeStream s;
  s.command({rd(0, 64)});
  s.command({wr(0, 64)});  // WAR on the read
  s.command({rd(0, 64)});  // RAW on the write
  EXPECT_EQ(s.log(), "DBDBD");
}

TEST(VulkanHazards, ErrorWordReadersWaitForEveryEarlierCommand) {
  FakeStream s;
  s.command({rd(0, 64), wr(64, 128)}, /*reads_errors=*/true);  // first: nothing to wait for
  s.command({rd(0, 64), wr(1000, 1064)});                     // a slot check, say
  s.command({rd(0, 64), wr(2000, 2064)}, /*reads_errors=*/true);  // disjoint, still waits
  EXPECT_EQ(s.log(), "DDBD");
}

TEST(VulkanHazards, AfterAHostWaitTheFirstCommandWaits) {
  FakeStream s;
  s.command({wr(0, 64)});
  s.host_wait();
  s.command({rd(5000, 5064)});  // disjoint, but the tracker no longer knows
  s.command({rd(6000, 6064)});
  EXPECT_EQ(s.log(), "DBDD");
}

TEST(VulkanHazards, EmptyRangesTouchNothing) {
  FakeStream s;
  s.command({wr(0, 64)});
  s.command({rd(32, 32), wr(10, 10)});
  EXPECT_EQ(s.log(), "DD");
}

TEST(VulkanHazards, ManyDisjointRangesAreAllKept) {
  // More ranges than the lists reserve: none may be forgotten.
  FakeStream s;
  for (uintptr_t i = 0; i < 300; ++i) s.command({wr(i * 1024, i * 1024 + 16)});
  EXPECT_EQ(s.log(), std::string(300, 'D'));
  EXPECT_EQ(s.tracker().unsynced(), 300u);
  s.command({rd(150 * 1024 + 8, 150 * 1024 + 12)});
  EXPECT_EQ(s.log().substr(300), "BD");
}

TEST(VulkanHazards, AdjacentWritesMergeWithoutLosingCoverage) {
  FakeStream s;
  s.command({wr(0, 64), wr(64, 128), wr(100, 256)});  // one merged range [0, 256)
  s.command({rd(300, 400)});
  s.command({rd(255, 256)});
  EXPECT_EQ(s.log(), "DDBD");
}

TEST(VulkanHazards, AccessRangeWidensToTheGranule) {
  const AccessRange a = access_range(reinterpret_cast<const void*>(uintptr_t{1000}), 5, true);
  EXPECT_EQ(a.begin, 992u);
  EXPECT_EQ(a.end, 1008u);
  EXPECT_TRUE(a.write);
  const AccessRange none = access_range(nullptr, 64, false);
  EXPECT_EQ(none.begin, none.end);
  // Two tensors in one granule are ordered as one range.
  FakeStream s;
  s.command({access_range(reinterpret_cast<const void*>(uintptr_t{4096}), 4, true)});
  s.command({access_range(reinterpret_cast<const void*>(uintptr_t{4100}), 4, false)});
  EXPECT_EQ(s.log(), "DBD");
}

// The columns of a joined product [960, T] (q: bytes [0, 2304) of each
// 3840-byte column, k: [2304, 3072), v: [3072, 3840)): writes to q and to k
// share a stage; a read of q after a write of q waits, as does anything
// against a solid range over the same bytes.
AccessRange part(uintptr_t base, uint64_t off, uint64_t len, uint64_t count, bool write) {
  return strided_access_range(reinterpret_cast<const void*>(base + off), len, 3840, count, write);
}

TEST(VulkanHazards, ColumnPartsOfOneTensorDoNotOverlap) {
  constexpr uintptr_t kBase = 1 << 20;
  const AccessRange q = part(kBase, 0, 2304, 64, true), k = part(kBase, 2304, 768, 64, true),
                    v = part(kBase, 3072, 768, 64, false);
  EXPECT_EQ(q.period, 3840u);
  EXPECT_EQ(q.len, 2304u);
  EXPECT_EQ(q.end - q.begin, 63u * 3840 + 2304);
  EXPECT_FALSE(ranges_overlap(q, k));
  EXPECT_FALSE(ranges_overlap(k, q));
  EXPECT_FALSE(ranges_overlap(k, v));
  EXPECT_FALSE(ranges_overlap(v, q));
  EXPECT_TRUE(ranges_overlap(q, part(kBase, 2288, 32, 64, false)));   // straddles q's end
  EXPECT_TRUE(ranges_overlap(v, part(kBase, 3840, 16, 1, true)));     // column 1's first bytes
  EXPECT_TRUE(ranges_overlap(q, part(kBase, 3072, 1024, 8, false)));  // wraps into the next q
  EXPECT_FALSE(ranges_overlap(q, part(kBase + 64 * 3840, 0, 2304, 4, false)));  // past its extent
  // Another period or a solid range: overlap wherever the extents meet.
  EXPECT_TRUE(ranges_overlap(
      k, strided_access_range(reinterpret_cast<const void*>(kBase), 16, 7680, 32, false)));
  EXPECT_TRUE(ranges_overlap(k, access_range(reinterpret_cast<const void*>(kBase), 2320, false)));
  EXPECT_FALSE(ranges_overlap(k, access_range(reinterpret_cast<const void*>(kBase), 2304, false)));
  FakeStream s;
  s.command({q});
  s.command({k});                                   // the other heads: same stage
  s.command({part(kBase, 0, 2304, 64, false), v});  // reads q: waits
  EXPECT_EQ(s.log(), "DDBD");
}

TEST(VulkanHazards, StridedRangesFallBackToSolid) {
  const void* p = reinterpret_cast<const void*>(uintptr_t{4096});
  // Blocks that fill their period once widened, a period off the granule,
  // one block: the plain span.
  for (const AccessRange& r :
       {strided_access_range(p, 40, 48, 10, true), strided_access_range(p, 16, 40, 10, true),
        strided_access_range(p, 64, 4096, 1, true)}) {
    EXPECT_EQ(r.period, 0u);
    EXPECT_EQ(r.begin, 4096u);
  }
  // An unaligned block widens outwards at both ends.
  const AccessRange u =
      strided_access_range(reinterpret_cast<const void*>(uintptr_t{4100}), 20, 64, 3, false);
  EXPECT_EQ(u.begin, 4096u);
  EXPECT_EQ(u.len, 32u);
  EXPECT_EQ(u.period, 64u);
  EXPECT_EQ(u.end, 4096u + 128 + 32);
}

// Which bindings the stream may treat as read-only comes from the SPIR-V:
// for every embedded shader, of the tensor bindings (2 and up) exactly those
// whose every declaration in the GLSL source says `readonly`. (Bindings 0
// and 1, parameters and the error word, are not tensors; the optimiser drops
// binding 1 from shaders that never report.)
constexpr uint32_t kTensorBindings = ~3u;
std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::filesystem::path kShaderDir =
    std::filesystem::path(FOLIO_SOURCE_DIR) / "src/backend/vulkan/shaders";

// A shader's source with its #include "..." lines replaced by the included
// files (recursively, each file once: common.glsl names itself in a
// comment), then preprocessed: declarations may sit in an included file,
// and mul_mat_vec.glsl serves two modules with #ifdef MUL_MAT_VEC_Q8.
std::string shader_source(const std::filesystem::path& p, std::set<std::string>& seen) {
  if (!seen.insert(p.filename().string()).second) return "";
  const std::regex inc(R"re(#include\s+"([^"]+)")re");
  const std::string text = read_text(p);
  std::string out;
  size_t at = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), inc), end; it != end; ++it) {
    out += text.substr(at, static_cast<size_t>(it->position()) - at);
    out += shader_source(kShaderDir / (*it)[1].str(), seen);
    at = static_cast<size_t>(it->position() + it->length());
  }
  return out + text.substr(at);
}

// The lines of `text` that the preprocessor keeps: #ifdef / #ifndef /
// #else / #endif against the names #define'd so far (the shaders use no
// other conditionals).
std::string preprocessed(const std::string& text) {
  std::set<std::string> defined;
  std::vector<bool> active = {true};  // one entry per open conditional, and the file
  std::istringstream in(text);
  std::string out, line;
  const std::regex directive(R"re(^\s*#\s*(define|ifdef|ifndef|else|endif)\b\s*(\w*))re");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, directive)) {
      if (active.back()) out += line + "\n";
      continue;
    }
    const std::string what = m[1].str(), name = m[2].str();
    const bool outer = active.size() < 2 || active[active.size() - 2];
    if (what == "define") {
      if (active.back()) defined.insert(name);
    } else if (what == "ifdef" || what == "ifndef") {
      const bool is_defined = defined.count(name) != 0;
      active.push_back(active.back() && (what == "ifdef") == is_defined);
    } else if (what == "else") {
      active.back() = outer && !active.back();
    } else if (active.size() > 1) {
      active.pop_back();
    }
  }
  return out;
}

std::string shader_source(const std::filesystem::path& p) {
  std::set<std::string> seen;
  return preprocessed(shader_source(p, seen));
}

TEST(VulkanHazards, WritableBindingsFromSpirvMatchTheShaderSources) {
  const std::regex decl(
      R"(binding\s*=\s*(\d+)\s*\)\s*(?:coherent\s+)?(readonly|writeonly)?\s*(restrict\s+)?buffer)");
  ASSERT_FALSE(embedded_shaders().empty());
  for (const EmbeddedShader& sh : embedded_shaders()) {
    const std::filesystem::path src = kShaderDir / (std::string(sh.name) + ".comp");
    ASSERT_TRUE(std::filesystem::exists(src)) << src;
    const std::string text = shader_source(src);
    std::map<uint32_t, bool> writable;  // binding -> some declaration lacks readonly
    for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it) {
      const auto b = static_cast<uint32_t>(std::stoul((*it)[1]));
      writable[b] = writable[b] || (*it)[2] != "readonly";
    }
    uint32_t want = 0;
    for (const auto& [b, w] : writable) {
      if (w) want |= 1u << b;
    }
    const uint32_t got = spirv_writable_bindings({sh.words, sh.n_words});
    EXPECT_EQ(got & kTensorBindings, want & kTensorBindings) << sh.name;
    EXPECT_EQ(got & 1u, 0u) << sh.name << ": the parameters are readonly";
  }
}

TEST(VulkanHazards, WritableBindingsOfKnownShaders) {
  std::map<std::string, uint32_t> got;
  for (const EmbeddedShader& sh : embedded_shaders()) {
    got[sh.name] = spirv_writable_bindings({sh.words, sh.n_words}) & kTensorBindings;
  }
  EXPECT_EQ(got.at("add"), 1u << 4);
  EXPECT_EQ(got.at("mul_mat_vec"), 1u << 4);
  EXPECT_EQ(got.at("mul_mat"), 1u << 4);
  EXPECT_EQ(got.at("add_rms_norm"), (1u << 6) | (1u << 7));  // binding 5: an unread placeholder
  EXPECT_EQ(got.at("set_rows"), 1u << 4);
  EXPECT_EQ(got.at("flash_attn"), (1u << 10) | (1u << 11) | (1u << 12));  // 12: QOUT's blocks
  // The int8 matvec's output (read back by its tail), its tail's blocks and count.
  EXPECT_EQ(got.at("mul_mat_vec_q8"), (1u << 4) | (1u << 8) | (1u << 9));
  EXPECT_EQ(got.at("gated_delta_net"), (1u << 10) | (1u << 11));
}

TEST(VulkanHazards, ErrorWordReadersMatchTheShaderSources) {
  const std::regex reads(R"(err_code\s*[!=]=)");
  int readers = 0;
  for (const EmbeddedShader& sh : embedded_shaders()) {
    const std::string text = shader_source(kShaderDir / (std::string(sh.name) + ".comp"));
    const bool want = std::regex_search(text, reads);
    EXPECT_EQ(shader_reads_errors(sh.name), want) << sh.name;
    readers += want ? 1 : 0;
  }
  EXPECT_EQ(readers, 3);
}

}  // namespace vulkan_hazards_test
}  // namespace folio::vulkan
